"""The OpenID Connect views: start a sign-in at the provider, and take its answer at /oidc/callback/."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from sso.oidc import oidc_enabled, oidc_setting


class SignInStartView(OIDCAuthenticationRequestView):
    """Redirect to the provider's authorization endpoint (state, nonce and a PKCE challenge in the session)."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)  # endpoints are read when used

    @property
    def OIDC_OP_AUTH_ENDPOINT(self) -> str:
        return str(oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT"))

    @property
    def OIDC_RP_CLIENT_ID(self) -> str:
        return str(settings.OIDC_RP_CLIENT_ID)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not oidc_enabled():
            raise Http404(_("Single sign-on is not configured."))
        return super().get(request)


class SignInCallbackView(OIDCAuthenticationCallbackView):
    """The provider's answer. Anything but a valid code for an active person signs nobody in."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not oidc_enabled():
            raise Http404(_("Single sign-on is not configured."))
        return super().get(request)

    def login_failure(self) -> HttpResponse:
        error = self.request.GET.get("error", "")
        if error in {"login_required", "interaction_required", "consent_required"}:
            # A session check (SessionRefresh) that the provider no longer vouches for.
            text = _("Your session at %(provider)s has ended; sign in again.")
        else:
            text = _("%(provider)s did not sign you in.")
        messages.error(self.request, text % {"provider": settings.OIDC_PROVIDER_NAME})
        return HttpResponseRedirect(reverse("login"))
