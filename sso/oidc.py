"""OpenID Connect settings, read when they are used (so tests and deployments can change them).

With `OIDC_ISSUER` set, the provider's endpoints come from its discovery document
(`<issuer>/.well-known/openid-configuration`), fetched on the first sign-in and kept for an hour;
an endpoint set explicitly (`OIDC_OP_TOKEN_ENDPOINT`, ...) wins over the document. Nothing is
fetched at start-up, so a provider that is down never stops Docket from starting, and local or
LDAP sign-in keeps working while it is down.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from mozilla_django_oidc.utils import import_from_settings

# Setting name -> its key in the discovery document.
DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_LOGOUT_ENDPOINT": "end_session_endpoint",  # optional: not every provider has one
}
DISCOVERY_MAX_AGE_SECONDS = 3600

_lock = threading.Lock()
_documents: dict[str, tuple[float, dict[str, Any]]] = {}


def oidc_enabled() -> bool:
    """OpenID Connect sign-in is offered: a client id and an issuer (or an authorization endpoint) are set."""
    return bool(
        getattr(settings, "OIDC_RP_CLIENT_ID", "")
        and (getattr(settings, "OIDC_ISSUER", "") or getattr(settings, "OIDC_OP_AUTHORIZATION_ENDPOINT", ""))
    )


def ldap_enabled() -> bool:
    return bool(getattr(settings, "AUTH_LDAP_SERVER_URI", ""))


def discovery_document(issuer: str) -> dict[str, Any]:
    """The provider's discovery document, fetched at most once an hour per issuer."""
    issuer = issuer.rstrip("/")
    now = time.monotonic()
    with _lock:
        cached = _documents.get(issuer)
        if cached is not None and now - cached[0] < DISCOVERY_MAX_AGE_SECONDS:
            return cached[1]
    response = requests.get(
        f"{issuer}/.well-known/openid-configuration",
        timeout=settings.OIDC_TIMEOUT,
        verify=settings.OIDC_VERIFY_SSL,
    )
    response.raise_for_status()
    document = response.json()
    if not isinstance(document, dict) or str(document.get("issuer", "")).rstrip("/") != issuer:
        raise ImproperlyConfigured(
            f"OIDC_ISSUER is {issuer!r} but its discovery document names the issuer "
            f"{document.get('issuer') if isinstance(document, dict) else None!r}"
        )
    with _lock:
        _documents[issuer] = (now, document)
    return document


def discovery_forget() -> None:
    """Drop every fetched document (a test that starts a new provider on a new port calls this)."""
    with _lock:
        _documents.clear()


def oidc_setting(name: str, *default: Any) -> Any:
    """A mozilla-django-oidc setting; an endpoint left empty comes from the issuer's discovery document."""
    issuer = str(getattr(settings, "OIDC_ISSUER", None) or "")
    if name in DISCOVERED and not getattr(settings, name, None) and issuer:
        value = discovery_document(issuer).get(DISCOVERED[name])
        if not value:
            raise ImproperlyConfigured(f"The discovery document of {issuer} has no {DISCOVERED[name]}")
        return value
    return import_from_settings(name, *default)


def claim_groups(claims: dict[str, Any]) -> list[str] | None:
    """The groups in `claims` (OIDC_GROUPS_CLAIM); None when the provider did not send the claim at all.

    A list of names, or one name as a string. A missing claim is not "no groups": memberships are
    then left as they are (the provider may simply not be sending the claim to this client).
    """
    value = claims.get(settings.OIDC_GROUPS_CLAIM)
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return []


def manager_username(value: object) -> str:
    """The username a manager value names: a username as is, or an LDAP distinguished name's first value
    ("uid=ada,ou=people,dc=example,dc=com" → "ada"); "" for anything else."""
    if not isinstance(value, str):
        return ""
    value = value.strip()
    first, _sep, _rest = value.partition(",")
    if "=" in first and _sep:
        value = first.partition("=")[2].strip()
    return value if 0 < len(value) <= 150 else ""


def claim_manager(claims: dict[str, Any]) -> str | None:
    """The manager's username in `claims` (OIDC_MANAGER_CLAIM): None when the claim is off or the provider did not
    send it (the reporting line is then left as it is), "" when it sent no manager (the line made by single
    sign-on is cleared)."""
    name = settings.OIDC_MANAGER_CLAIM
    if not name or name not in claims:
        return None
    return manager_username(claims[name])
