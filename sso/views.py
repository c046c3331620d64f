"""The OpenID Connect views: start a sign-in at the provider, take its answer at /oidc/callback/, and sign out."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.views import LogoutView
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from sso.oidc import oidc_enabled, oidc_setting

logger = logging.getLogger(__name__)
OIDC_BACKEND = "sso.backends.DocketOIDCBackend"


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


def provider_sign_out_url(request: HttpRequest) -> str | None:
    """Where to send a person signing out so the provider ends its session too; None when there is nowhere.

    Only for a session signed in through OpenID Connect whose ID token is kept, and only when the provider
    has an end-session endpoint (OIDC_OP_LOGOUT_ENDPOINT, or end_session_endpoint in its discovery document).
    """
    id_token = request.session.get("oidc_id_token")
    if not (oidc_enabled() and settings.OIDC_END_PROVIDER_SESSION and id_token
            and request.session.get(BACKEND_SESSION_KEY) == OIDC_BACKEND):
        return None
    try:
        endpoint = oidc_setting("OIDC_OP_LOGOUT_ENDPOINT")
    except (ImproperlyConfigured, requests.RequestException) as error:
        logger.warning("sso: signed out of Docket only; the provider's end-session endpoint is unknown: %s", error)
        return None
    if not endpoint:
        return None  # no issuer to discover it from, and none configured
    query = urlencode({
        "id_token_hint": id_token,
        "client_id": settings.OIDC_RP_CLIENT_ID,
        "post_logout_redirect_uri": request.build_absolute_uri(reverse("login")),
    })
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


class SignOutView(LogoutView):
    """Sign out of Docket (POST only) and say so; after an OpenID Connect sign-in, of the provider too."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        at_provider = provider_sign_out_url(request)  # read before the session is flushed
        signed_in = request.user.is_authenticated
        response = super().post(request, *args, **kwargs)
        if at_provider:
            # A page of Docket's own that moves on to the provider: the CSP lets forms post only to Docket, and
            # Chromium applies form-action to the redirect after a post too.
            return render(request, "registration/signing_out.html",
                          {"provider_url": at_provider, "provider": settings.OIDC_PROVIDER_NAME})
        if signed_in:
            messages.info(request, _("You are signed out of Docket."))
        return response
