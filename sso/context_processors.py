"""What the sign-in page offers: the provider's button, and whether the username and password form shows."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

from sso.oidc import ldap_enabled, oidc_enabled


def sign_in(request: HttpRequest) -> dict[str, object]:
    oidc = oidc_enabled()
    # The form is for local passwords and for LDAP; with both off it is the break-glass way in,
    # shown on /accounts/login/?local=1 only (a superuser knows to ask for it).
    break_glass = request.GET.get("local") == "1" or request.method == "POST"
    return {
        "sso_oidc": oidc,
        "sso_provider_name": settings.OIDC_PROVIDER_NAME if oidc else "",
        "sso_password_form": bool(settings.DOCKET_LOCAL_LOGIN or ldap_enabled() or break_glass or not oidc),
    }
