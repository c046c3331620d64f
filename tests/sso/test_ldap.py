"""LDAP sign-in through the sign-in form, against a private slapd the test starts."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client, override_settings

from committee.models import (
    CommitteeSeat,
    MembershipRole,
    PersonalToken,
    ReportingLine,
    SeatRole,
    SsoGroupMapping,
    TeamMembership,
)
from committee.services import personal_token_create
from tests.conftest import World, make_user
from tests.processes import free_port
from tests.sso.servers import LDAP_SUFFIX, Directory, private_slapd

pytestmark = [pytest.mark.sso, pytest.mark.django_db]


@pytest.fixture(scope="session")
def slapd() -> Iterator[Directory]:
    """One slapd per session (per xdist worker), stopped by its pid at the end; each test empties it first."""
    with private_slapd() as running:
        yield running


@pytest.fixture
def directory(world: World, slapd: Directory) -> Iterator[Directory]:
    SsoGroupMapping.objects.create(group="team-a", team=world.team_a)
    SsoGroupMapping.objects.create(group="team-b-leads", team=world.team_b, team_role=MembershipRole.LEAD)
    SsoGroupMapping.objects.create(group="finance", seat_role=SeatRole.FINANCE)
    slapd.clear()
    erin = slapd.add_person("erin", password="erin-ldap-pw", email="erin@example.com", given="Erin", family="Vance",
                            manager=f"uid=frank,ou=people,{LDAP_SUFFIX}")
    slapd.set_group("team-a", [erin])
    slapd.set_group("finance", [erin])
    slapd.set_group("team-b-leads", [])
    with override_settings(**slapd.settings(), DOCKET_LOCAL_LOGIN=False):
        yield slapd


def sign_in(username: str, password: str) -> Any:
    return Client().post("/accounts/login/", {"username": username, "password": password})


def grants(username: str) -> tuple[set[tuple[str, str, str]], set[str]]:
    user = User.objects.get(username=username)
    teams = {(m.team.slug, m.role, m.source) for m in TeamMembership.objects.filter(user=user).select_related("team")}
    return teams, set(CommitteeSeat.objects.active().filter(user=user).values_list("role", flat=True))


def test_an_ldap_person_signs_in_with_their_directory_password_and_gets_their_groups(directory):
    page = Client().get("/accounts/login/").content.decode()
    assert 'name="password"' in page  # with local passwords off, the form stays for LDAP

    answer = sign_in("erin", "erin-ldap-pw")
    assert answer.status_code == 302 and answer["Location"] == "/"
    erin = User.objects.get(username="erin")
    assert (erin.email, erin.first_name, erin.last_name, erin.has_usable_password()) == (
        "erin@example.com", "Erin", "Vance", False)
    assert grants("erin") == ({("team-a", "member", "sso")}, {"finance"})
    # The manager attribute (a DN) gives her reporting line: the chain of docs/conflicts.md.
    assert ReportingLine.objects.filter(person=erin).values_list("manager_username", "source").get() == ("frank", "sso")
    portal = answer.client.get("/requests/")
    assert "Team A" in portal.content.decode()

    # The directory moves Erin from team A to leading team B: the next sign-in follows.
    erin_dn = "uid=erin,ou=people,dc=lab,dc=test"
    directory.set_group("team-a", [])
    directory.set_group("finance", [])
    directory.set_group("team-b-leads", [erin_dn])
    directory.set_manager(erin_dn, "")  # and she reports to nobody now
    assert sign_in("erin", "erin-ldap-pw").status_code == 302
    assert grants("erin") == ({("team-b", "lead", "sso")}, set())
    assert not ReportingLine.objects.filter(person=erin).exists()


ERIN_DN = "uid=erin,ou=people,dc=lab,dc=test"


def test_a_wrong_ldap_password_or_an_unknown_person_is_refused(directory):
    for username, password in (("erin", "not-her-password"), ("nobody", "erin-ldap-pw")):
        answer = sign_in(username, password)
        assert answer.status_code == 200
        assert "_auth_user_id" not in answer.client.session
        assert "Please enter a correct username and password" in answer.content.decode()
    assert not User.objects.filter(username__in=["erin", "nobody"]).exists()


def test_a_local_superuser_cannot_be_taken_over_through_the_directory(directory):
    make_user("erin", is_superuser=True, is_staff=True)  # a local break-glass account with the same name
    answer = sign_in("erin", "erin-ldap-pw")
    assert answer.status_code == 200 and "_auth_user_id" not in answer.client.session
    assert sign_in("erin", "pw").status_code == 302  # the local password still opens it
    assert User.objects.get(username="erin").email == "erin@example.com"  # make_user's, not rewritten by LDAP


def signed_in_as_erin() -> Client:
    client = Client()
    assert client.post("/accounts/login/", {"username": "erin", "password": "erin-ldap-pw"}).status_code == 302
    assert client.get("/requests/").status_code == 200  # the session's first page: checked at sign-in
    return client


def test_a_person_removed_from_the_directory_is_signed_out_at_the_next_check_and_loses_tokens_and_groups(
    directory, clock
):
    client = signed_in_as_erin()
    erin = User.objects.get(username="erin")
    personal_token_create(user=erin, name="laptop")
    directory.remove(ERIN_DN)

    clock.shift(timedelta(seconds=settings.DOCKET_LDAP_RECHECK_SECONDS - 60))
    assert client.get("/requests/").status_code == 200  # not asked again yet

    clock.shift(timedelta(seconds=120))
    answer = client.get("/requests/", follow=True)
    assert answer.redirect_chain == [("/accounts/login/", 302)]
    assert "your account is no longer in the company directory" in answer.content.decode()
    assert "_auth_user_id" not in client.session
    assert not PersonalToken.objects.filter(user=erin).exists()
    assert grants("erin") == (set(), set())
    assert sign_in("erin", "erin-ldap-pw").status_code == 200  # and cannot sign in again


def test_an_htmx_request_of_a_removed_person_is_sent_to_the_sign_in_page(directory, clock):
    client = signed_in_as_erin()
    directory.remove(ERIN_DN)
    clock.shift(timedelta(seconds=settings.DOCKET_LDAP_RECHECK_SECONDS + 1))
    answer = client.get("/requests/", headers={"HX-Request": "true"})
    assert (answer.status_code, answer["HX-Redirect"]) == (200, "/accounts/login/")


def test_the_directorys_group_changes_reach_a_session_at_the_next_check(directory, clock):
    client = signed_in_as_erin()
    directory.set_group("team-a", [])
    directory.set_group("team-b-leads", [ERIN_DN])
    clock.shift(timedelta(seconds=settings.DOCKET_LDAP_RECHECK_SECONDS + 1))
    assert client.get("/requests/").status_code == 200
    assert grants("erin") == ({("team-b", "lead", "sso")}, {"finance"})


def test_a_directory_that_does_not_answer_leaves_the_session_as_it_is_and_is_asked_again_later(directory, clock):
    client = signed_in_as_erin()
    erin = User.objects.get(username="erin")
    personal_token_create(user=erin, name="laptop")
    clock.shift(timedelta(seconds=settings.DOCKET_LDAP_RECHECK_SECONDS + 1))
    with override_settings(AUTH_LDAP_SERVER_URI=f"ldap://127.0.0.1:{free_port()}"):  # nothing listens there
        assert client.get("/requests/").status_code == 200
    assert PersonalToken.objects.filter(user=erin).count() == 1
    assert grants("erin") == ({("team-a", "member", "sso")}, {"finance"})
    # A minute later it answers again, and no longer knows Erin.
    directory.remove(ERIN_DN)
    clock.shift(timedelta(seconds=61))
    assert client.get("/requests/")["Location"] == "/accounts/login/"
