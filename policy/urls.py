"""The policy lab, mounted at /policy/."""

from django.urls import URLPattern, URLResolver

app_name = "policy"

urlpatterns: list[URLPattern | URLResolver] = []
