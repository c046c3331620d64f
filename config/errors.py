"""Error answers of the whole site: the API answers in JSON even where no API view was reached."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext as _
from django.views import defaults

API_PREFIX = "/api/"


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404: JSON under /api/ (a path that matches no endpoint, e.g. /api/v1/requests/abc/), the page elsewhere."""
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": _("Not found.")}, status=404)
    return defaults.page_not_found(request, exception)
