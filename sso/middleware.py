"""Re-check an OpenID Connect session with the provider when its ID token is old (mozilla-django-oidc's SessionRefresh).

After OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS, the next page a person opens goes through the provider
with prompt=none: a person the provider still knows comes straight back; one it removed, disabled
or signed out is answered `login_required` and signed out of Docket (sso.views.SignInCallbackView).
Does nothing unless OpenID Connect is configured, and never for the API (tokens, not sessions).
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.deprecation import MiddlewareMixin
from mozilla_django_oidc.middleware import SessionRefresh

from sso.oidc import oidc_enabled, oidc_setting

API = re.compile(r"^/api/")


class OidcSessionRefresh(SessionRefresh):
    get_settings = staticmethod(oidc_setting)

    def __init__(self, get_response: Any) -> None:
        MiddlewareMixin.__init__(self, get_response)  # settings are read per request (see sso.oidc)

    # The parent's attributes, read when a request needs them.
    OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
    OIDC_STATE_SIZE = 32
    OIDC_NONCE_SIZE = 32
    OIDC_USE_NONCE = True

    @property
    def exempt_urls(self) -> set[str]:
        return {reverse(name) for name in ("oidc_authentication_init", "oidc_authentication_callback", "login",
                                           "logout")}

    @property
    def exempt_url_patterns(self) -> set[re.Pattern[str]]:
        return {API}

    @property
    def OIDC_OP_AUTHORIZATION_ENDPOINT(self) -> str:
        return str(oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT"))

    @property
    def OIDC_RP_CLIENT_ID(self) -> str:
        return str(settings.OIDC_RP_CLIENT_ID)

    @property
    def OIDC_RP_SCOPES(self) -> str:
        return str(settings.OIDC_RP_SCOPES)

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        if not oidc_enabled():
            return None
        return super().process_request(request)
