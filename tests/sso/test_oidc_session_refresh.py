"""An OpenID Connect session whose ID token is old goes through the provider again; htmx is told to reload instead.

The provider's own answer (a person removed there is signed out) is tested in Chromium in test_oidc_browser.py.
"""

from __future__ import annotations

import time

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db

OIDC = {
    "OIDC_RP_CLIENT_ID": "docket", "OIDC_RP_CLIENT_SECRET": "s", "OIDC_ISSUER": "",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "https://sso.example.com/authorize",
}


def session_with_id_token(client, user, *, expires_in: float) -> None:
    client.force_login(user, backend="sso.backends.DocketOIDCBackend")
    session = client.session
    session["oidc_id_token_expiration"] = time.time() + expires_in
    session.save()


@override_settings(**OIDC)
def test_a_page_after_the_id_token_expired_goes_through_the_provider_with_prompt_none(client, world):
    session_with_id_token(client, world.member_a, expires_in=-1)
    answer = client.get("/requests/")
    assert answer.status_code == 302
    assert answer["Location"].startswith("https://sso.example.com/authorize?") and "prompt=none" in answer["Location"]


@override_settings(**OIDC)
def test_an_htmx_request_after_the_id_token_expired_reloads_the_page_instead_of_following_a_redirect(client, world):
    session_with_id_token(client, world.member_a, expires_in=-1)
    answer = client.get("/requests/", headers={"HX-Request": "true"})
    assert (answer.status_code, answer["HX-Refresh"], answer.content) == (200, "true", b"")


@override_settings(**OIDC)
def test_while_the_id_token_is_fresh_htmx_and_pages_are_answered_as_usual(client, world):
    session_with_id_token(client, world.member_a, expires_in=600)
    assert client.get("/requests/").status_code == 200
    answer = client.get("/requests/", headers={"HX-Request": "true"})
    assert answer.status_code == 200 and "HX-Refresh" not in answer
