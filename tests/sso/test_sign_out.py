"""Signing out: the person is told; after an OpenID Connect sign-in, Docket moves on to the provider's sign-out.

The whole round trip through a real provider is in test_oidc_browser.py; these are the other paths.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY
from django.test import override_settings
from django.urls import reverse

pytestmark = pytest.mark.django_db

OIDC = {
    "OIDC_RP_CLIENT_ID": "docket", "OIDC_RP_CLIENT_SECRET": "s", "OIDC_ISSUER": "",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "https://sso.example.com/authorize",
    "OIDC_PROVIDER_NAME": "Company SSO",
}


def signed_in_through_openid(client, user, *, id_token: str | None = "header.payload.signature") -> None:
    client.force_login(user, backend="sso.backends.DocketOIDCBackend")
    session = client.session
    if id_token:
        session["oidc_id_token"] = id_token
    session.save()


def test_a_local_sign_out_says_so_and_ends_the_session(client, world):
    client.force_login(world.member_a)
    response = client.post(reverse("logout"), follow=True)
    assert "You are signed out of Docket." in response.content.decode()
    assert client.get(reverse("committee:portal")).status_code == 302


@override_settings(**OIDC, OIDC_OP_LOGOUT_ENDPOINT="https://sso.example.com/logout?realm=company")
def test_after_an_openid_sign_in_docket_moves_on_to_the_providers_sign_out_with_the_id_token(client, world):
    signed_in_through_openid(client, world.member_a)
    response = client.post(reverse("logout"))
    page = response.content.decode()
    assert response.status_code == 200 and "You are signed out of Docket" in page
    (url,) = set(re.findall(r'href="([^"]+logout[^"]*)"', page))
    parts = urlsplit(url.replace("&amp;", "&"))
    query = parse_qs(parts.query)
    assert (parts.netloc, parts.path, query["realm"], query["id_token_hint"], query["client_id"]) == (
        "sso.example.com", "/logout", ["company"], ["header.payload.signature"], ["docket"])
    assert query["post_logout_redirect_uri"] == ["http://testserver/accounts/login/"]
    assert f'content="0;url={url}"' in page  # the page moves on by itself
    assert BACKEND_SESSION_KEY not in client.session  # and Docket's session is already over
    assert client.get(reverse("committee:portal")).status_code == 302


@pytest.mark.parametrize(
    ("settings_", "id_token"),
    [
        ({**OIDC, "OIDC_OP_LOGOUT_ENDPOINT": ""}, "t"),  # the provider has no end-session endpoint
        ({**OIDC, "OIDC_OP_LOGOUT_ENDPOINT": "https://sso.example.com/logout", "OIDC_END_PROVIDER_SESSION": False},
         "t"),  # turned off
        ({**OIDC, "OIDC_OP_LOGOUT_ENDPOINT": "https://sso.example.com/logout"}, None),  # no ID token kept
    ],
    ids=["no-endpoint", "turned-off", "no-id-token"],
)
def test_without_a_provider_sign_out_docket_signs_out_alone_and_says_so(client, world, settings_, id_token):
    with override_settings(**settings_):
        signed_in_through_openid(client, world.member_a, id_token=id_token)
        response = client.post(reverse("logout"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("login")
    assert "You are signed out of Docket." in response.content.decode()


@override_settings(**OIDC, OIDC_OP_LOGOUT_ENDPOINT="https://sso.example.com/logout")
def test_a_password_sign_in_never_goes_to_the_provider(client, world):
    client.force_login(world.member_a, backend="sso.backends.LocalPasswordBackend")
    response = client.post(reverse("logout"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("login")
