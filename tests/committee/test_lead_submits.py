"""A team's "members draft, the lead submits": a member's submit is refused and the lead hears a draft awaits."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from committee import services
from committee.models import Notification, NotificationKind, RequestStatus, TeamFiling
from committee.services.notifications import notification_text
from core.errors import StateConflict
from tests.committee.review_api import API, as_user
from tests.factories import file_request


def _lead_submits(world, on=True):
    services.team_filing_set(actor=world.lead_a, team=world.team_a, lead_submits=on)


def test_off_by_default_a_member_submits(world):
    draft = file_request(world, actor=world.member_a, submit=False)
    submitted = services.request_submit(actor=world.member_a, gpu_request=draft)
    assert submitted.status == RequestStatus.SUBMITTED


def test_when_on_a_member_is_refused_and_the_lead_is_told(client, world):
    _lead_submits(world)
    draft = file_request(world, actor=world.member_a, submit=False, title="Vision retrain")
    client.force_login(world.member_a)
    body = client.post(reverse("committee:request-submit", args=[draft.pk]), follow=True).content.decode()
    assert "In Team A the lead submits. The draft is saved and Lead_A has been told it awaits." in body
    draft.refresh_from_db()
    assert draft.status == RequestStatus.DRAFT and draft.submitted_at is None
    told = Notification.objects.get(kind=NotificationKind.DRAFT_AWAITS_LEAD)
    assert told.recipient == world.lead_a
    assert told.params["title"] == "Vision retrain" and told.params["by"] == "Member_A"
    assert draft.events.filter(action="awaiting lead").count() == 1
    assert "Ask the lead to submit" in body  # the member's button says what it does
    assert "asked the team&#x27;s lead to submit" in body or "asked the team's lead to submit" in body


def test_the_lead_submits_the_member_s_draft(client, world):
    _lead_submits(world)
    draft = file_request(world, actor=world.member_a, submit=False)
    client.force_login(world.lead_a)
    page = client.get(reverse("committee:request-detail", args=[draft.pk])).content.decode()
    assert "members draft and the lead submits" in page and "Send it back to its author" in page
    body = client.post(reverse("committee:request-submit", args=[draft.pk]), follow=True).content.decode()
    assert "Submitted to the committee." in body
    draft.refresh_from_db()
    assert draft.status == RequestStatus.SUBMITTED and draft.submitted_by == world.lead_a


def test_the_lead_sends_a_draft_back_with_a_note(client, world):
    _lead_submits(world)
    draft = file_request(world, actor=world.member_a, submit=False)
    client.force_login(world.lead_a)
    url = reverse("committee:request-return", args=[draft.pk])
    body = client.post(url, {"note": "  "}, follow=True).content.decode()
    assert "Say what the draft needs" in body
    assert not draft.events.filter(action="returned").exists()
    assert not Notification.objects.filter(kind=NotificationKind.DRAFT_RETURNED).exists()
    body = client.post(url, {"note": "Add the baseline plan."}, follow=True).content.decode()
    assert "Sent back to its author" in body and "Add the baseline plan." in body
    draft.refresh_from_db()
    assert draft.status == RequestStatus.DRAFT
    told = Notification.objects.get(kind=NotificationKind.DRAFT_RETURNED)
    assert told.recipient == world.member_a and told.params["note"] == "Add the baseline plan."
    assert notification_text(told) == (
        "Team A: Lead_A sent your draft “Ranker retrain” (week 2026-W50) back: Add the baseline plan.")


def test_a_member_cannot_send_back_or_change_the_setting(client, world):
    _lead_submits(world)
    draft = file_request(world, actor=world.member_a, submit=False)
    with pytest.raises(PermissionDenied):
        services.request_return(actor=world.member_a, gpu_request=draft, note="No.")
    client.force_login(world.member_a)
    response = client.post(reverse("committee:team-filing", args=[world.team_a.slug]), {"lead_submits": ""})
    assert response.status_code == 403
    assert TeamFiling.objects.get(team=world.team_a).lead_submits is True
    assert "members draft, the lead submits" not in client.get(reverse("committee:portal")).content.decode()


def test_the_lead_turns_it_on_and_off_on_the_portal(client, world):
    client.force_login(world.lead_a)
    assert "Team A: members draft, the lead submits" in client.get(reverse("committee:portal")).content.decode()
    client.post(reverse("committee:team-filing", args=[world.team_a.slug]), {"lead_submits": "on"})
    assert TeamFiling.objects.get(team=world.team_a).lead_submits is True
    client.post(reverse("committee:team-filing", args=[world.team_a.slug]), {})
    assert TeamFiling.objects.get(team=world.team_a).lead_submits is False
    draft = file_request(world, actor=world.member_a, submit=False)
    assert services.request_submit(actor=world.member_a, gpu_request=draft).status == RequestStatus.SUBMITTED


def test_the_api_refuses_a_member_s_submit_with_409(api, world):
    _lead_submits(world)
    draft = file_request(world, actor=world.member_a, submit=False)
    response = as_user(api, world.member_a).post(f"{API}/requests/{draft.pk}/submit/")
    assert response.status_code == 409
    assert "the lead submits" in str(response.json())
    draft.refresh_from_db()
    assert draft.status == RequestStatus.DRAFT


def test_only_a_draft_is_sent_back(world):
    _lead_submits(world)
    submitted = file_request(world, actor=world.lead_a)
    with pytest.raises(StateConflict):
        services.request_return(actor=world.lead_a, gpu_request=submitted, note="Too late.")
    with pytest.raises(ValidationError):
        services.request_return(actor=world.lead_a, gpu_request=file_request(
            world, pool=world.h100, actor=world.member_a, submit=False), note="")
