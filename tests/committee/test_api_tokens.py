"""Personal tokens for the committee's REST API: printed once, revocable, unique per user."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from committee.models import PersonalToken
from tests.committee.review_api import API


def test_personal_token_is_printed_once_and_authenticates_as_its_user(world, capsys):
    call_command("personal_token", "--user", "reviewer", "--name", "weekly script")
    token = capsys.readouterr().out.strip()
    assert token.startswith("dkt_")
    row = PersonalToken.objects.get()
    assert row.token_hash != token and token not in row.token_hash  # only a hash is stored
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = client.get(f"{API}/cycles/")
    assert response.status_code == 200
    row.refresh_from_db()
    assert row.last_used_at is not None
    # A token acts with exactly its user's permissions: the reviewer is not the chair.
    assert client.post(f"{API}/cycles/{world.cycle.week}/close-intake/").status_code == 403


def test_unknown_or_revoked_token_is_refused(world, capsys):
    call_command("personal_token", "--user", "reviewer", "--name", "old")
    token = capsys.readouterr().out.strip()
    call_command("personal_token", "--user", "reviewer", "--name", "old", "--revoke")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get(f"{API}/cycles/").status_code == 401
    client.credentials(HTTP_AUTHORIZATION="Token dkt_nope")
    assert client.get(f"{API}/cycles/").status_code == 401


def test_token_names_are_unique_per_user(world):
    call_command("personal_token", "--user", "chair", "--name", "ci")
    with pytest.raises(Exception, match="already have a token"):
        call_command("personal_token", "--user", "chair", "--name", "ci")


def test_anonymous_is_refused(api, world):
    for path in ("/cycles/", "/requests/", "/rubric/", f"/cycles/{world.cycle.week}/ranking/"):
        assert api.get(API + path).status_code == 401


def test_session_auth_works_for_the_browser(client, world):
    client.force_login(world.member_a)
    assert client.get(f"{API}/rubric/").status_code == 200
