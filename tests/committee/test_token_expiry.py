"""Personal tokens expire after DOCKET_TOKEN_MAX_AGE_DAYS, and a person can revoke all of theirs at once."""

from __future__ import annotations

from datetime import timedelta

from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from committee.models import PersonalToken
from committee.services import personal_token_create
from tests.clock import FIXED_NOW

CYCLES = "/api/v1/cycles/"


def api_get(token: str):
    return APIClient().get(CYCLES, HTTP_AUTHORIZATION=f"Token {token}")


def test_a_token_expires_after_the_configured_days(world, pinned, settings):
    settings.DOCKET_TOKEN_MAX_AGE_DAYS = 30
    row, token = personal_token_create(user=world.reviewer, name="weekly")
    assert row.expires_at == FIXED_NOW + timedelta(days=30)
    pinned.move_to(FIXED_NOW + timedelta(days=30) - timedelta(seconds=1))
    assert api_get(token).status_code == 200
    pinned.move_to(FIXED_NOW + timedelta(days=30))
    response = api_get(token)
    assert response.status_code == 401
    assert response.json()["detail"] == (
        "This token expired on 2027-01-01 10:00 UTC. Create a new one (profile page or manage.py personal_token)."
    )


def test_the_default_lifetime_is_90_days_and_the_command_says_until_when(world, pinned, capsys):
    row, _token = personal_token_create(user=world.reviewer, name="weekly")
    assert row.expires_at == FIXED_NOW + timedelta(days=90)
    call_command("personal_token", "--user", "reviewer", "--name", "monthly")
    assert "working until 2027-03-02" in capsys.readouterr().err


def test_revoke_all_on_the_profile_page_stops_every_token_of_that_person_only(world):
    _row, one = personal_token_create(user=world.member_a, name="one")
    _row, two = personal_token_create(user=world.member_a, name="two")
    _row, others = personal_token_create(user=world.member_b, name="one")
    browser = Client()
    browser.force_login(world.member_a)
    page = browser.get("/profile/")
    assert b"Revoke all my tokens" in page.content and b"Expires" in page.content
    assert b"2 Mar 2027" in page.content  # 90 days after FIXED_NOW
    response = browser.post("/profile/tokens/revoke-all/", follow=True)
    assert b"All 2 of your API tokens are revoked." in response.content
    assert b"You have no API tokens." in response.content
    assert api_get(one).status_code == 401 and api_get(two).status_code == 401
    assert api_get(others).status_code == 200
    assert list(PersonalToken.objects.values_list("user__username", flat=True)) == ["member_b"]


def test_revoke_all_is_a_post_of_a_signed_in_person(world):
    browser = Client()
    assert browser.post("/profile/tokens/revoke-all/").status_code == 302  # to the sign-in page
    browser.force_login(world.member_a)
    assert browser.get("/profile/tokens/revoke-all/").status_code == 405
    response = browser.post("/profile/tokens/revoke-all/", follow=True)
    assert b"You had no API tokens." in response.content
