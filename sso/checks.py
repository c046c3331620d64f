"""System checks for the sign-in set-up: a site nobody can sign in to is caught by `check --deploy`."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

from sso.oidc import ldap_enabled, oidc_enabled


@checks.register(checks.Tags.security, deploy=True)
def sign_in_possible(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if settings.DOCKET_LOCAL_LOGIN or oidc_enabled() or ldap_enabled():
        return []
    return [
        checks.Warning(
            "DOCKET_LOCAL_LOGIN is off and neither OpenID Connect (OIDC_ISSUER) nor LDAP (LDAP_SERVER_URI) is "
            "configured: only a superuser's local password can sign in.",
            hint="Configure a provider (docs/deploy.md) or set DOCKET_LOCAL_LOGIN=1.",
            id="docket.W101",
        )
    ]
