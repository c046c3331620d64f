"""A URL whose view fails, for tests/test_sentry.py (only the child process it starts uses this URLconf)."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from config.urls import urlpatterns as docket_urlpatterns


def fail(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("the view failed on purpose for the Sentry test")


urlpatterns = [path("sentry-test-failure/", fail), *docket_urlpatterns]
