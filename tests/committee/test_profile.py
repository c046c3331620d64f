"""The profile page: each person chooses which kinds of notification their daily digest carries."""

from __future__ import annotations

from django.urls import reverse
from django.utils.html import escape

from committee.models import NotificationKind, NotificationOptOut
from committee.selectors import TEAM_KINDS

URL = "/profile/"


def test_the_profile_needs_a_sign_in(client, world):
    response = client.get(URL)
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_a_team_member_sees_the_team_kinds_all_ticked(client, world):
    client.force_login(world.member_a)
    body = client.get(URL).content.decode()
    assert reverse("committee:profile") == URL
    assert "member_a@example.com" in body
    for kind in (NotificationKind.INTAKE_CLOSING, NotificationKind.REQUEST_SUBMITTED,
                 NotificationKind.DECISION_PUBLISHED, NotificationKind.EMERGENCY):
        assert f'value="{kind.value}"' in body and escape(str(kind.label)) in body
    assert body.count("checked") == len(TEAM_KINDS)  # with "decision corrected" and "appeal decided"
    assert f'value="{NotificationKind.INTAKE_CLOSED.value}"' not in body  # a committee kind


def test_a_committee_member_in_a_team_sees_both(client, world):
    client.force_login(world.tech)
    body = client.get(URL).content.decode()
    assert f'value="{NotificationKind.INTAKE_CLOSED.value}"' in body
    assert f'value="{NotificationKind.DECISION_PUBLISHED.value}"' in body


def test_unticking_a_kind_opts_out_and_ticking_it_opts_back_in(client, world):
    client.force_login(world.member_a)
    receive = [k for k in TEAM_KINDS if k != NotificationKind.REQUEST_SUBMITTED]
    response = client.post(URL, {"receive": receive}, follow=True)
    assert "Your notification settings are saved." in response.content.decode()
    assert list(NotificationOptOut.objects.filter(user=world.member_a).values_list("kind", flat=True)) == [
        NotificationKind.REQUEST_SUBMITTED]
    assert response.content.decode().count("checked") == len(TEAM_KINDS) - 1
    client.post(URL, {"receive": list(TEAM_KINDS)})
    assert not NotificationOptOut.objects.filter(user=world.member_a).exists()


def test_nothing_ticked_opts_out_of_everything_shown_and_nobody_elses_settings_change(client, world):
    NotificationOptOut.objects.create(user=world.lead_a, kind=NotificationKind.DECISION_PUBLISHED)
    client.force_login(world.member_a)
    client.post(URL, {})
    assert NotificationOptOut.objects.filter(user=world.member_a).count() == len(TEAM_KINDS)
    assert list(NotificationOptOut.objects.filter(user=world.lead_a).values_list("kind", flat=True)) == [
        NotificationKind.DECISION_PUBLISHED]


def test_a_kind_not_offered_is_refused_and_nothing_changes(client, world):
    client.force_login(world.member_a)
    response = client.post(URL, {"receive": [NotificationKind.INTAKE_CLOSED]})
    assert response.status_code == 200 and "is not one of the available choices" in response.content.decode()
    assert not NotificationOptOut.objects.exists()


def test_someone_without_team_or_seat_is_told_there_is_nothing(client, world):
    client.force_login(world.outsider)
    body = client.get(URL).content.decode()
    assert "nothing to tell you" in body and 'type="checkbox"' not in body


def test_every_page_links_to_the_profile(client, world):
    client.force_login(world.member_b)
    body = client.get(reverse("committee:portal")).content.decode()
    assert f'href="{URL}"' in body
