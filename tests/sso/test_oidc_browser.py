"""OpenID Connect sign-in in Chromium against a real OpenID provider (oidc-provider on Node.js) the test starts.

The full authorization code flow with PKCE: Docket's button, the provider's own sign-in form, the
callback, the token and userinfo requests, the ID token checked against the provider's keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from committee.models import CommitteeSeat, MembershipRole, ReportingLine, SeatRole, SsoGroupMapping, TeamMembership
from sso.oidc import discovery_forget
from tests.browser import browser_page  # noqa: F401
from tests.conftest import World
from tests.sso.servers import OpenIdProvider, openid_provider

pytestmark = [pytest.mark.browser, pytest.mark.sso, pytest.mark.django_db(transaction=True)]

DANA_PASSWORD = "dana-provider-pw"
DANA: dict[str, Any] = {"password": DANA_PASSWORD, "claims": {
    "email": "dana@example.com", "email_verified": True, "given_name": "Dana", "family_name": "Ortiz",
    "groups": ["gpu-team-a", "gpu-committee-chair"], "manager": "grace",
}}


@pytest.fixture
def provider(live_server: Any, world: World) -> Iterator[OpenIdProvider]:
    SsoGroupMapping.objects.create(group="gpu-team-a", team=world.team_a)
    SsoGroupMapping.objects.create(group="gpu-team-b-leads", team=world.team_b, team_role=MembershipRole.LEAD)
    SsoGroupMapping.objects.create(group="gpu-committee-chair", seat_role=SeatRole.CHAIR)
    with openid_provider(redirect_uri=f"{live_server.url}/oidc/callback/", accounts={"dana": DANA}) as running:
        discovery_forget()
        with override_settings(**running.settings()):
            yield running
        discovery_forget()


def sign_in_at_provider(page: Any, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_role("button", name="Sign in with Test provider").click()
    page.get_by_label("Provider username").fill(username)
    page.get_by_label("Provider password").fill(password)
    page.get_by_role("button", name="Continue").click()


def sign_out_everywhere(page: Any, username: str) -> None:
    """Docket's sign-out, then the provider's own question whether to end its session too, answered yes."""
    page.get_by_role("button", name=f"Sign out {username}").click()
    page.get_by_role("button", name="Yes, sign me out").click()  # Docket's page moved on to the provider's
    page.wait_for_url("**/accounts/login/")
    assert page.get_by_role("button", name=f"Sign out {username}").count() == 0


def grants(username: str) -> tuple[set[tuple[str, str, str]], set[str]]:
    user = User.objects.get(username=username)
    teams = {(m.team.slug, m.role, m.source) for m in TeamMembership.objects.filter(user=user).select_related("team")}
    return teams, set(CommitteeSeat.objects.active().filter(user=user).values_list("role", flat=True))


def reporting_line(username: str) -> tuple[str, str] | None:
    line = ReportingLine.objects.filter(person__username=username).first()
    return None if line is None else (line.manager_username, line.source)


def test_a_person_signs_in_through_the_provider_and_lands_with_the_team_and_seat_their_groups_give(
    browser_page, provider  # noqa: F811
):
    page = browser_page
    sign_in_at_provider(page, "dana", DANA_PASSWORD)
    page.wait_for_url("**/review/**")  # the chair's seat: she lands on the week that needs the committee
    assert page.get_by_role("button", name="Sign out dana").is_visible()
    page.get_by_role("link", name="My requests").click()
    assert "Team A" in page.locator("main").inner_text()
    dana = User.objects.get(username="dana")
    assert (dana.email, dana.first_name, dana.last_name, dana.has_usable_password()) == (
        "dana@example.com", "Dana", "Ortiz", False)
    assert grants("dana") == ({("team-a", "member", "sso")}, {"chair"})
    assert reporting_line("dana") == ("grace", "sso")  # the manager claim: the chain of docs/conflicts.md

    # The provider moves Dana to lead team B, out of the committee and under another manager (a DN's first value is
    # the username): the next sign-in follows.
    provider.set_accounts({"dana": {**DANA, "claims": {**DANA["claims"], "groups": ["gpu-team-b-leads"],
                                                       "manager": "uid=hal,ou=people,dc=example,dc=com"}}})
    sign_out_everywhere(page, "dana")
    sign_in_at_provider(page, "dana", DANA_PASSWORD)
    page.wait_for_url("**/requests/")  # a team's lead now: her team's requests
    assert "Team B" in page.locator("main").inner_text()
    assert page.get_by_role("link", name="Weekly review").count() == 0
    assert grants("dana") == ({("team-b", "lead", "sso")}, set())
    assert reporting_line("dana") == ("hal", "sso")


def test_a_wrong_password_at_the_provider_or_a_cancelled_sign_in_signs_nobody_in(
    browser_page, provider  # noqa: F811
):
    page = browser_page
    sign_in_at_provider(page, "dana", "not-her-password")
    page.get_by_role("alert").filter(has_text="Wrong username or password.").wait_for()
    page.get_by_role("button", name="Cancel").click()
    page.wait_for_url("**/accounts/login/")
    page.get_by_role("alert").filter(has_text="Test provider did not sign you in.").wait_for()
    page.goto("/requests/")
    assert "/accounts/login/" in page.url
    assert not User.objects.filter(username="dana").exists()


def test_a_person_removed_at_the_provider_is_signed_out_when_the_session_is_checked_again(
    browser_page, provider, clock  # noqa: F811
):
    page = browser_page
    sign_in_at_provider(page, "dana", DANA_PASSWORD)
    page.wait_for_url("**/review/**")
    provider.set_accounts({})  # removed from the company's directory

    clock.move_to(timezone.now() + timedelta(minutes=20))  # past OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS (15 min)
    page.goto("/requests/")  # through the provider with prompt=none, which no longer vouches for Dana
    page.wait_for_url("**/accounts/login/")
    page.get_by_role("alert").filter(has_text="Your session at Test provider has ended").wait_for()
    page.goto("/requests/")
    assert "/accounts/login/" in page.url


def test_signing_out_of_docket_ends_the_session_at_the_provider_so_the_next_person_must_sign_in(
    browser_page, provider  # noqa: F811
):
    page = browser_page
    sign_in_at_provider(page, "dana", DANA_PASSWORD)
    page.wait_for_url("**/review/**")
    sign_out_everywhere(page, "dana")

    page.goto("/requests/")
    assert "/accounts/login/" in page.url  # signed out of Docket
    page.get_by_role("button", name="Sign in with Test provider").click()
    page.get_by_label("Provider username").wait_for()  # the provider asks again: its session ended too
    assert "/requests/" not in page.url
