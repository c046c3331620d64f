"""appeal_file and appeal_decide: a team appeals a published outcome in time; the committee outside it answers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import override_settings

from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan
from committee import services
from committee.models import (
    Appeal,
    AppealStatus,
    Decision,
    DecisionCorrection,
    Notification,
    NotificationKind,
    OutboxMessage,
    RequestEvent,
)
from committee.services.notifications import notification_text
from core.errors import StateConflict
from tests.clock import FIXED_NOW
from tests.committee.appealing import finalize_week, publish, record_revisions
from tests.conftest import committed

WINDOW = timedelta(hours=48)


@pytest.fixture
def published(world, clock):
    """The week finalized and published at FIXED_NOW exactly (the clock stands still)."""
    clock.move_to(FIXED_NOW, tick=False)
    requests = finalize_week(world)
    plan = publish(world)
    assert plan.published_at == FIXED_NOW
    return requests


def appeal(world, gpu_request, *, actor=None, statement="We need all 24 GPUs: the model does not fit on 8.", **kw):
    return committed(services.appeal_file, actor=actor or world.member_b, gpu_request=gpu_request,
                     statement=statement, **kw)


def test_an_appeal_within_the_window_is_accepted(world, published):
    _first, second, _third = published
    filed = appeal(world, second, now=FIXED_NOW + WINDOW - timedelta(minutes=1))  # 47:59 after publishing
    assert (filed.status, filed.filed_by_name, filed.team_name) == (AppealStatus.OPEN, "Member_B", "Team B")
    event = RequestEvent.objects.get(request=second, action="appealed")
    assert event.detail == "We need all 24 GPUs: the model does not fit on 8."
    latest = record_revisions(world)[-1]
    assert latest.summary == "Updated — appeal filed by Team B on “Vision model”"
    assert latest.data["appeals"][0]["status"] == "open"
    assert "We need all 24 GPUs" in latest.body
    assert OutboxMessage.objects.get(key=f"notify:appeal-filed:{filed.pk}").done_at is not None  # after commit
    assert Notification.objects.filter(kind=NotificationKind.APPEAL_FILED).count() == 3  # chair, reviewer, finance
    assert services.notifications_deliver(
        kind=NotificationKind.APPEAL_FILED, arguments={"appeal_id": filed.pk}
    ) == 0  # once
    assert world.tech.pk not in set(
        Notification.objects.filter(kind=NotificationKind.APPEAL_FILED).values_list("recipient_id", flat=True)
    )


def test_an_appeal_after_the_window_is_refused_with_a_clear_message(world, published):
    _first, second, _third = published
    revisions = len(record_revisions(world))
    with pytest.raises(StateConflict) as refused:
        appeal(world, second, now=FIXED_NOW + WINDOW + timedelta(minutes=1))  # 48:01 after publishing
    closes = "Fri 4 Dec 2026, 10:00 UTC"  # FIXED_NOW + 48 h, as every page writes a time
    assert refused.value.messages == [
        f"The appeal window for week {world.cycle.week} closed on {closes}, 48 hours after the plan was published."
    ]
    assert not Appeal.objects.exists() and len(record_revisions(world)) == revisions


@override_settings(DOCKET_APPEAL_WINDOW_HOURS=2)
def test_the_window_is_a_setting(world, published):
    _first, second, _third = published
    with pytest.raises(StateConflict):
        appeal(world, second, now=FIXED_NOW + timedelta(hours=2, minutes=1))
    assert appeal(world, second, now=FIXED_NOW + timedelta(hours=1, minutes=59)).status == AppealStatus.OPEN


def test_the_window_runs_from_the_first_publication_not_from_a_correction(world, published):
    first, second, _third = published
    services.decision_correct(
        actor=world.chair, gpu_request=first, outcome="partial", granted_gpu_count=8, rationale="Eight.",
        reason="The team asked for fewer.", now=FIXED_NOW + timedelta(hours=40),
    )
    with pytest.raises(StateConflict):
        appeal(world, second, now=FIXED_NOW + WINDOW + timedelta(minutes=1))


def test_an_appeal_by_another_team_is_refused(world, published):
    _first, second, _third = published
    for persona in ("member_a", "lead_a", "chair", "outsider"):
        with pytest.raises(PermissionDenied):
            appeal(world, second, actor=getattr(world, persona))
    assert not Appeal.objects.exists()


def test_an_appeal_needs_a_statement_and_a_published_week(world, clock):
    clock.move_to(FIXED_NOW, tick=False)
    _first, second, _third = finalize_week(world)
    with pytest.raises(StateConflict):
        appeal(world, second)  # finalized, not published
    publish(world)
    with pytest.raises(ValidationError) as empty:
        appeal(world, second, statement="  ")
    assert set(empty.value.message_dict) == {"statement"}
    assert not Appeal.objects.exists()


def test_one_open_appeal_per_request(world, published):
    _first, second, _third = published
    appeal(world, second)
    with pytest.raises(StateConflict):
        appeal(world, second, actor=world.tech, statement="Again.")
    assert Appeal.objects.count() == 1


def test_a_member_of_the_appealing_team_cannot_decide_it(world, published):
    _first, second, _third = published
    filed = appeal(world, second)
    with pytest.raises(PermissionDenied):  # tech has a committee seat and is in team B
        services.appeal_decide(actor=world.tech, appeal=filed, decision="uphold", reason="Fine as it is.")
    with pytest.raises(PermissionDenied):  # no seat
        services.appeal_decide(actor=world.member_a, appeal=filed, decision="uphold", reason="Fine as it is.")
    filed.refresh_from_db()
    assert filed.status == AppealStatus.OPEN


def test_uphold_records_the_reason_in_the_archive_and_tells_the_team(world, published):
    _first, second, _third = published
    filed = appeal(world, second)
    decided = committed(
        services.appeal_decide, actor=world.reviewer, appeal=filed, decision="uphold",
        reason="Eight GPUs run the distilled model.",
    )
    assert (decided.status, decided.decided_by_name) == (AppealStatus.UPHELD, "Reviewer")
    decision = Decision.objects.get(request=second)
    assert (decision.outcome, decision.granted_gpu_count) == ("partial", 8)
    assert AllocationPlan.objects.count() == 1 and not DecisionCorrection.objects.exists()
    latest = record_revisions(world)[-1]
    assert latest.summary == (
        "Updated — appeal by Team B on “Vision model” upheld: Eight GPUs run the distilled model."
    )
    assert latest.data["appeals"][0]["status_label"] == "Decision upheld"
    assert RequestEvent.objects.filter(request=second, action="appeal upheld").exists()
    assert Notification.objects.filter(kind=NotificationKind.APPEAL_DECIDED).count() == 2  # after commit
    note = Notification.objects.filter(kind=NotificationKind.APPEAL_DECIDED).first()
    assert note is not None
    assert notification_text(note) == (
        f"Team B: on your appeal of “Vision model” (week {world.cycle.week}), Reviewer upheld the decision: it stays "
        "Partial grant, 8 GPUs. Reason: Eight GPUs run the distilled model."
    )
    with pytest.raises(StateConflict):  # decided once
        services.appeal_decide(actor=world.finance, appeal=filed, decision="uphold", reason="Again.")


def test_amend_is_a_correction_with_a_new_plan_version_and_archive_revision(world, published):
    _first, second, _third = published
    filed = appeal(world, second)
    revisions = len(record_revisions(world))
    decided = committed(  # the chair: decisions are the chair's (DOCKET_DECISIONS_RECORDED_BY)
        services.appeal_decide, actor=world.chair, appeal=filed, decision="amend",
        reason="The model does not fit on 8 GPUs.",
        outcome="partial", granted_gpu_count=16, rationale="Sixteen: the smallest size the model fits.",
    )
    assert decided.status == AppealStatus.AMENDED
    correction = DecisionCorrection.objects.get(appeal=decided)
    assert (correction.previous_outcome, correction.previous_granted_gpu_count) == ("partial", 8)
    assert (correction.outcome, correction.granted_gpu_count, correction.plan_version) == ("partial", 16, 2)
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None and plan.version == 2
    assert {w.request_ref: w.gpu_count for w in allocation_selectors.plan_window_list(plan=plan)}[second.pk] == 16
    all_revisions = record_revisions(world)
    assert len(all_revisions) == revisions + 1
    latest = all_revisions[-1]
    assert latest.summary.startswith("Updated: plan version 2 published — ")
    assert "The model does not fit on 8 GPUs." in latest.summary
    assert latest.data["appeals"][0]["status"] == "amended" and latest.data["appeals"][0]["plan_version"] == 2
    assert latest.data["corrections"][0]["from_appeal"] is True
    # The team hears the appeal's answer (not a second "decision corrected" line).
    assert OutboxMessage.objects.filter(key=f"notify:appeal-decided:{decided.pk}").exists()
    assert not OutboxMessage.objects.filter(kwargs__kind=NotificationKind.DECISION_CORRECTED).exists()
    services.notifications_deliver(kind=NotificationKind.APPEAL_DECIDED, arguments={"appeal_id": decided.pk})
    note = Notification.objects.filter(kind=NotificationKind.APPEAL_DECIDED).first()
    assert note is not None and "amended the decision to Partial grant, 16 GPUs, published as plan version 2" in (
        notification_text(note)
    )


def test_amend_without_a_valid_new_decision_changes_nothing(world, published):
    _first, second, _third = published
    filed = appeal(world, second)
    with pytest.raises(ValidationError) as refused:
        services.appeal_decide(actor=world.chair, appeal=filed, decision="amend", reason="More.", outcome="partial",
                               granted_gpu_count=40, rationale="Forty.")
    assert "granted_gpu_count" in refused.value.message_dict
    with pytest.raises(ValidationError) as no_reason:
        services.appeal_decide(actor=world.finance, appeal=filed, decision="uphold", reason="")
    assert set(no_reason.value.message_dict) == {"reason"}
    filed.refresh_from_db()
    assert filed.status == AppealStatus.OPEN and not DecisionCorrection.objects.exists()
    assert AllocationPlan.objects.count() == 1


def test_the_team_appeals_on_the_request_page_and_the_committee_answers_there(world, published, client):
    _first, second, _third = published
    client.force_login(world.member_b)
    page = client.get(f"/requests/{second.pk}/").content.decode()
    assert 'id="appeal-form"' in page and "You can appeal until" in page
    response = client.post(f"/requests/{second.pk}/appeal/", {"statement": ""})
    assert response.status_code == 400 and "Say what the committee should reconsider" in response.content.decode()
    response = client.post(f"/requests/{second.pk}/appeal/", {"statement": "Eight GPUs are too few."})
    assert response.status_code == 302
    page = client.get(f"/requests/{second.pk}/").content.decode()
    assert "appeal is open: a committee member outside your team" in page and 'id="appeal-form"' not in page

    client.force_login(world.tech)  # committee seat, but in team B
    page = client.get(f"/requests/{second.pk}/").content.decode()
    assert 'id="appeal-decision-form"' not in page
    client.force_login(world.reviewer)
    listing = client.get(f"/review/{world.cycle.week}/appeals/").content.decode()
    assert "Eight GPUs are too few." in listing and "Answer it" in listing
    page = client.get(f"/requests/{second.pk}/").content.decode()
    assert 'id="appeal-decision-form"' in page
    filed = Appeal.objects.get()
    response = client.post(f"/appeals/{filed.pk}/decide/", {"decision": "uphold", "reason": "Eight is enough."})
    assert response.status_code == 302
    page = client.get(f"/requests/{second.pk}/").content.decode()
    assert "Decision upheld" in page and "Eight is enough." in page


def test_the_appeal_form_is_gone_after_the_window(world, published, client, clock):
    _first, second, _third = published
    clock.move_to(FIXED_NOW + WINDOW + timedelta(minutes=1), tick=False)
    client.force_login(world.member_b)
    page = client.get(f"/requests/{second.pk}/").content.decode()
    assert 'id="appeal-form"' not in page and "The appeal window closed on" in page
    response = client.post(f"/requests/{second.pk}/appeal/", {"statement": "Late."})
    assert response.status_code == 400 and "closed on" in response.content.decode()
    assert not Appeal.objects.exists()


def test_other_teams_and_the_committee_cannot_use_the_appeal_form(world, published, client):
    _first, second, _third = published
    client.force_login(world.member_a)
    assert client.post(f"/requests/{second.pk}/appeal/", {"statement": "Not ours."}).status_code == 404
    client.force_login(world.reviewer)
    assert client.post(f"/requests/{second.pk}/appeal/", {"statement": "Not ours."}).status_code == 403
    client.force_login(world.member_b)
    assert client.get(f"/review/{world.cycle.week}/appeals/").status_code == 403
    assert not Appeal.objects.exists()
