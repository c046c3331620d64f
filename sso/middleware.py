"""Sessions checked again with the company's sign-in: OpenID Connect's provider, or the LDAP directory.

- OpenID Connect (mozilla-django-oidc's SessionRefresh): after OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS, the
  next page a person opens goes through the provider with prompt=none: a person the provider still knows
  comes straight back; one it removed, disabled or signed out is answered `login_required` and signed out
  of Docket (sso.views.SignInCallbackView). An htmx request is told to reload the page instead (it could not
  follow a redirect to the provider). Never for the API (tokens, not sessions).
- LDAP: every DOCKET_LDAP_RECHECK_SECONDS the directory is asked (with the service bind) whether the person
  is still there. Found: their groups set their memberships again. Not found: they are signed out, their
  personal tokens are deleted and their single sign-on memberships and seats end. A directory that does not
  answer changes nothing (asked again a minute later).
Each does nothing unless its sign-in is configured and the session came from it.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import BACKEND_SESSION_KEY, logout
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.deprecation import MiddlewareMixin
from django.utils.translation import gettext as _
from mozilla_django_oidc.middleware import SessionRefresh

from committee.services import personal_token_revoke_all, sso_memberships_sync
from sso.backends import DirectoryAnswer, DocketLDAPBackend
from sso.oidc import ldap_enabled, oidc_enabled, oidc_setting

logger = logging.getLogger(__name__)

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
        response = super().process_request(request)
        if response is not None and request.headers.get("HX-Request") == "true":
            # htmx would follow the redirect to the provider inside an XMLHttpRequest, which cannot work:
            # the page reloads instead, and that load goes through the provider and back to the same page.
            return _htmx_reload()
        return response


def _htmx_reload() -> HttpResponse:
    response = HttpResponse(status=200)
    response["HX-Refresh"] = "true"
    return response


LDAP_BACKEND = "sso.backends.DocketLDAPBackend"
LDAP_CHECKED_AT = "docket_ldap_checked_at"
LDAP_RETRY_SECONDS = 60  # after a directory that did not answer


class LdapSessionRecheck:
    """Ask the directory again, every DOCKET_LDAP_RECHECK_SECONDS, whether an LDAP session's person is still there."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.check(request) or self.get_response(request)

    def check(self, request: HttpRequest) -> HttpResponse | None:
        if not (ldap_enabled() and request.user.is_authenticated
                and request.session.get(BACKEND_SESSION_KEY) == LDAP_BACKEND):
            return None
        now = time.time()
        checked = request.session.get(LDAP_CHECKED_AT)
        if checked is None:  # the sign-in itself asked the directory
            request.session[LDAP_CHECKED_AT] = now
            return None
        interval = settings.DOCKET_LDAP_RECHECK_SECONDS
        if now - checked < interval:
            return None
        user = request.user
        answer = DocketLDAPBackend().recheck(user)
        if answer is DirectoryAnswer.UNKNOWN:
            request.session[LDAP_CHECKED_AT] = now - interval + LDAP_RETRY_SECONDS
            return None
        if answer is DirectoryAnswer.PRESENT:
            request.session[LDAP_CHECKED_AT] = now
            return None
        with transaction.atomic():
            tokens = personal_token_revoke_all(user=user)
            sso_memberships_sync(user=user, groups=[])
        logger.warning("sso: %s is no longer in the directory: signed out, %d personal token(s) deleted", user, tokens)
        logout(request)
        messages.warning(request, _("You are signed out: your account is no longer in the company directory."))
        if request.path.startswith("/api/"):
            return None  # on as nobody: the API answers as it does to anyone signed out
        if request.headers.get("HX-Request") == "true":
            response = HttpResponse(status=200)
            response["HX-Redirect"] = reverse("login")
            return response
        return HttpResponseRedirect(reverse("login"))
