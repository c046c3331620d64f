from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path, register_converter
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from committee.views import portal as portal_views
from committee.views.auth import ThrottledLoginView
from core.favicon import favicon
from core.isoweek import WeekConverter
from sso import views as sso_views

# Before the apps' URLs are read: every `<week:week>` is an ISO week that exists (else 404).
register_converter(WeekConverter, "week")

api_v1: list[URLPattern | URLResolver] = [
    path("", include("allocations.api.urls")),
    path("", include("committee.api.urls")),
    path("", include("reports.api.urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start script as a file, so the page runs under the CSP (no inline script).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]

urlpatterns = [
    path("", portal_views.home, name="home"),
    # Browsers ask for /favicon.ico whatever the page links: send them to the SVG icon base.html names.
    path("favicon.ico", favicon, name="favicon"),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    # Signs out of the provider too after an OpenID Connect sign-in (sso.views.SignOutView).
    path("accounts/logout/", sso_views.SignOutView.as_view(), name="logout"),
    # OpenID Connect: /oidc/authenticate/ starts a sign-in, /oidc/callback/ is the redirect URI (sso/).
    path("oidc/", include("sso.urls")),
    path("", include("committee.urls")),
    path("", include("allocations.urls")),
    path("archive/", include("reports.urls")),
    path("policy/", include("policy.urls")),
    # The footer's language switch posts to /i18n/setlang/ (django.views.i18n.set_language).
    path("i18n/", include("django.conf.urls.i18n")),
    path("api/v1/", include(api_v1)),
    # The admin signs in through the same page, so its attempts are counted and serialized the same way.
    path("admin/login/", RedirectView.as_view(pattern_name="login", query_string=True)),
    path("admin/", admin.site.urls),
]

handler400 = "core.errors.bad_request"
handler403 = "core.errors.permission_denied"
handler404 = "core.errors.page_not_found"
handler500 = "core.errors.server_error"
