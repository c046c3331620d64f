"""Groups from the identity provider kept in step with memberships and seats; inactive people keep no access."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from committee.models import (
    CommitteeSeat,
    GrantSource,
    MembershipRole,
    PersonalToken,
    SeatRole,
    SsoGroupMapping,
    TeamMembership,
)
from committee.services import personal_token_create, sso_memberships_sync
from tests.conftest import World, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def mappings(world: World) -> None:
    SsoGroupMapping.objects.create(group="team-a", team=world.team_a)
    SsoGroupMapping.objects.create(group="team-a-leads", team=world.team_a, team_role=MembershipRole.LEAD)
    SsoGroupMapping.objects.create(group="team-b", team=world.team_b)
    SsoGroupMapping.objects.create(group="gpu-committee-chair", seat_role=SeatRole.CHAIR)
    SsoGroupMapping.objects.create(group="finance", seat_role=SeatRole.FINANCE)


def memberships(user) -> set[tuple[str, str, str]]:
    return {(m.team.slug, m.role, m.source) for m in TeamMembership.objects.filter(user=user).select_related("team")}


def seats(user) -> set[tuple[str, str]]:
    return {(s.role, s.source) for s in CommitteeSeat.objects.active().filter(user=user)}


def test_groups_give_memberships_and_seats_and_a_later_sync_removes_what_they_no_longer_give(world, mappings):
    dana = make_user("dana")
    result = sso_memberships_sync(user=dana, groups=["team-a", "gpu-committee-chair", "unmapped-group"])
    assert memberships(dana) == {("team-a", "member", "sso")}
    assert seats(dana) == {("chair", "sso")}
    assert result.teams_added == ["team-a"] and result.seats_opened == ["chair"]

    sso_memberships_sync(user=dana, groups=["team-a", "team-a-leads", "team-b"])
    assert memberships(dana) == {("team-a", "lead", "sso"), ("team-b", "member", "sso")}
    assert seats(dana) == set()  # a chair seat opened today and ended today is gone, not left dangling

    sso_memberships_sync(user=dana, groups=[])
    assert memberships(dana) == set()


def test_a_seat_that_served_ends_yesterday_and_stays_in_the_record(world, mappings, clock):
    dana = make_user("dana")
    sso_memberships_sync(user=dana, groups=["finance"])
    clock.move_to(timezone.now() + timedelta(days=10), tick=False)
    sso_memberships_sync(user=dana, groups=[])
    seat = CommitteeSeat.objects.get(user=dana)
    assert seat.active_to == timezone.localdate() - timedelta(days=1)
    assert seats(dana) == set()


def test_memberships_and_seats_made_by_hand_are_never_changed_or_removed(world, mappings):
    # lead_a leads team A by hand; member_b is in team B by hand; the reviewer's seat is by hand.
    sso_memberships_sync(user=world.lead_a, groups=["team-a"])  # the group says member: the hand-made lead stays
    assert memberships(world.lead_a) == {("team-a", "lead", "manual")}
    sso_memberships_sync(user=world.member_b, groups=[])
    assert memberships(world.member_b) == {("team-b", "member", "manual")}
    before = seats(world.reviewer)
    sso_memberships_sync(user=world.reviewer, groups=["finance"])
    sso_memberships_sync(user=world.reviewer, groups=[])
    assert seats(world.reviewer) == before
    assert all(source == GrantSource.MANUAL for _role, source in before)


def test_a_seat_held_by_hand_is_not_doubled(world, mappings):
    sso_memberships_sync(user=world.chair, groups=["gpu-committee-chair"])
    assert CommitteeSeat.objects.active().filter(user=world.chair, role=SeatRole.CHAIR).count() == 1


def test_turning_a_person_inactive_ends_their_session_and_deletes_their_tokens(world):
    _row, token = personal_token_create(user=world.member_a, name="laptop")
    browser = Client()
    browser.force_login(world.member_a, backend="sso.backends.LocalPasswordBackend")
    assert browser.get("/requests/").status_code == 200
    assert Client().get("/api/v1/cycles/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 200

    world.member_a.is_active = False
    world.member_a.save()

    page = browser.get("/requests/")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    assert Client().get("/api/v1/cycles/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401
    assert not PersonalToken.objects.filter(user=world.member_a).exists()


@pytest.mark.parametrize("backend", ["sso.backends.DocketOIDCBackend", "sso.backends.DocketLDAPBackend"])
def test_an_sso_session_of_an_inactive_person_is_refused(world, backend):
    browser = Client()
    browser.force_login(world.member_a, backend=backend)
    world.member_a.is_active = False
    world.member_a.save()
    assert browser.get("/requests/").status_code == 302


def test_with_local_login_off_only_a_superuser_password_signs_in(world):
    make_user("root", is_superuser=True, is_staff=True)
    with override_settings(DOCKET_LOCAL_LOGIN=False):
        refused = Client().post("/accounts/login/", {"username": "member_a", "password": "pw"})
        assert refused.status_code == 200 and "_auth_user_id" not in refused.client.session
        signed_in = Client().post("/accounts/login/", {"username": "root", "password": "pw"})
        assert signed_in.status_code == 302


def test_login_page_offers_the_provider_and_hides_the_form_when_local_login_is_off(world):
    oidc = {"OIDC_ISSUER": "https://id.example.com/realms/company", "OIDC_RP_CLIENT_ID": "docket",
            "OIDC_RP_CLIENT_SECRET": "s", "OIDC_PROVIDER_NAME": "Keycloak"}
    plain = Client().get("/accounts/login/").content.decode()
    assert "Sign in with" not in plain and 'name="password"' in plain
    with override_settings(**oidc):
        both = Client().get("/accounts/login/?next=/review/").content.decode()
        assert "Sign in with Keycloak" in both and 'name="password"' in both
        assert 'href="/oidc/authenticate/?next=/review/"' in both
    with override_settings(**oidc, DOCKET_LOCAL_LOGIN=False):
        only_sso = Client().get("/accounts/login/").content.decode()
        assert "Sign in with Keycloak" in only_sso and 'name="password"' not in only_sso
        break_glass = Client().get("/accounts/login/?local=1").content.decode()
        assert 'name="password"' in break_glass
    with override_settings(**oidc, DOCKET_LOCAL_LOGIN=False, AUTH_LDAP_SERVER_URI="ldap://127.0.0.1:1"):
        assert 'name="password"' in Client().get("/accounts/login/").content.decode()  # LDAP passwords


def test_openid_views_answer_404_when_single_sign_on_is_not_configured(world):
    assert Client().get("/oidc/authenticate/").status_code == 404
    assert Client().get("/oidc/callback/?code=x&state=y").status_code == 404


def test_a_password_form_posted_with_code_and_state_never_reaches_the_openid_backend(world):
    oidc = {"OIDC_OP_AUTHORIZATION_ENDPOINT": "http://127.0.0.1:1/auth", "OIDC_OP_TOKEN_ENDPOINT":
            "http://127.0.0.1:1/token", "OIDC_RP_CLIENT_ID": "docket", "OIDC_RP_CLIENT_SECRET": "s"}
    with override_settings(**oidc):
        answer = Client().post("/accounts/login/?code=abc&state=xyz", {"username": "member_a", "password": "bad"})
    assert answer.status_code == 200  # the form again: no request to the (unreachable) token endpoint was made


def test_check_deploy_warns_when_nobody_but_a_superuser_could_sign_in(world):
    from django.core import checks

    with override_settings(DOCKET_LOCAL_LOGIN=False):
        ids = [message.id for message in checks.run_checks(include_deployment_checks=True)]
    assert "docket.W101" in ids
    with override_settings(DOCKET_LOCAL_LOGIN=False, AUTH_LDAP_SERVER_URI="ldaps://ldap.example.com"):
        assert "docket.W101" not in [m.id for m in checks.run_checks(include_deployment_checks=True)]


def test_the_openid_backend_refuses_an_unverified_email_username_a_bad_username_and_a_superuser(world):
    from django.core.exceptions import SuspiciousOperation

    from sso.backends import DocketOIDCBackend

    backend = DocketOIDCBackend()
    with override_settings(OIDC_USERNAME_CLAIM="email"):
        assert backend.verify_claims({"email": "dana@example.com", "email_verified": True})
        assert not backend.verify_claims({"email": "dana@example.com", "email_verified": False})
    for claims in ({}, {"preferred_username": ""}, {"preferred_username": "dana ortiz"},
                   {"preferred_username": "x" * 151}):
        with pytest.raises(SuspiciousOperation):
            backend.verify_claims(claims)
    make_user("root", is_superuser=True)
    with pytest.raises(SuspiciousOperation, match="superuser"):
        backend.filter_users_by_claims({"preferred_username": "root"})
    assert list(backend.filter_users_by_claims({"preferred_username": "member_a"})) == [world.member_a]
