"""decision_correct: the chair changes a decision after finalize or publish, with a reason; nothing is lost."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import translation

from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan, AllocationWindow
from committee import services
from committee.models import (
    CycleStatus,
    Decision,
    DecisionCorrection,
    Notification,
    NotificationKind,
    OutboxMessage,
    RequestEvent,
)
from committee.services.notifications import notification_text
from core.errors import StateConflict
from tests.committee.appealing import finalize_week, publish, record_revisions
from tests.committee.reviewing import close
from tests.conftest import committed
from tests.factories import file_request


@pytest.fixture
def week(world):
    return finalize_week(world)


def test_correction_after_publish_publishes_the_next_plan_version_and_keeps_started_windows(world, week):
    first, second, third = week
    publish(world)
    before = {w.request_ref: w for w in AllocationWindow.objects.all()}
    assert set(before) == {first.pk, second.pk}
    running = before[first.pk]
    now = running.start + (running.end - running.start) / 2  # the a100 jobs are running

    correction = services.decision_correct(
        actor=world.chair, gpu_request=third, outcome="grant", rationale="Speech can run on orion now.",
        reason="A team released its orion reservation.", now=now,
    )

    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None and plan.version == 2 and correction.plan_version == 2
    assert "A team released its orion reservation." in plan.note
    live = {w.request_ref: w for w in allocation_selectors.plan_window_list(plan=plan)}
    for ref in (first.pk, second.pk):  # started: kept exactly as published
        kept, old = live[ref], before[ref]
        assert (kept.pk, kept.start, kept.end, kept.gpu_count) == (old.pk, old.start, old.end, old.gpu_count)
    assert live[third.pk].gpu_count == 8  # placed with the corrected grant
    assert live[third.pk].start >= now  # from now on, never in the past
    decision = Decision.objects.get(request=third)
    assert (decision.outcome, decision.granted_gpu_count) == ("grant", 8)
    assert decision.rationale == "Speech can run on orion now."


def test_correction_before_any_window_starts_places_the_corrected_grant(world, week):
    _first, second, _third = week
    publish(world)
    services.decision_correct(
        actor=world.chair, gpu_request=second, outcome="partial", granted_gpu_count=16, rationale="Sixteen.",
        reason="Finance found more budget.",
    )
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None and plan.version == 2
    assert {w.request_ref: w.gpu_count for w in allocation_selectors.plan_window_list(plan=plan)}[second.pk] == 16


def test_correction_after_publish_keeps_the_history(world, week):
    _first, second, _third = week
    publish(world)
    services.decision_correct(
        actor=world.chair, gpu_request=second, outcome="reject", rationale="Withdrawn by finance.",
        reason="The budget was cut.",
    )
    services.decision_correct(
        actor=world.chair, gpu_request=second, outcome="partial", granted_gpu_count=12, rationale="Twelve after all.",
        reason="Half the budget came back.",
    )
    history = list(DecisionCorrection.objects.filter(decision__request=second).order_by("id"))
    assert [(c.previous_outcome, c.previous_granted_gpu_count, c.outcome, c.granted_gpu_count) for c in history] == [
        ("partial", 8, "reject", None),
        ("reject", None, "partial", 12),
    ]
    assert [c.previous_rationale for c in history] == ["Half now.", "Withdrawn by finance."]
    assert [c.plan_version for c in history] == [2, 3]
    assert history[0].previous_decided_by_name == "Chair" and history[0].corrected_by_name == "Chair"
    events = list(RequestEvent.objects.filter(request=second, action="corrected").values_list("detail", flat=True))
    assert events == [
        "Partial grant (8 GPUs) → Reject: The budget was cut.",
        "Reject → Partial grant (12 GPUs): Half the budget came back.",
    ]


def test_correction_after_publish_writes_an_archive_revision_with_the_reason(world, week):
    _first, second, _third = week
    publish(world)
    revisions_before = len(record_revisions(world))
    committed(
        services.decision_correct, actor=world.chair, gpu_request=second, outcome="grant", rationale="All 24.",
        reason="The budget came through.",
    )
    revisions = record_revisions(world)
    assert len(revisions) == revisions_before + 1
    latest = revisions[-1]
    assert latest.summary.startswith("Updated: plan version 2 published — ")
    assert "The budget came through." in latest.summary
    assert latest.data["corrections"][0]["reason"] == "The budget came through."
    assert latest.data["corrections"][0]["previous_label"] == "Partial grant (8 GPUs)"
    assert latest.data["corrections"][0]["new_label"] == "Grant"
    assert "## Corrections and appeals" in latest.body
    assert "Half now." in latest.body  # the previous rationale stays readable in the record
    assert latest.data["plan"]["version"] == 2


def test_correction_notifies_the_requests_team(world, week):
    _first, second, _third = week
    publish(world)
    correction = services.decision_correct(
        actor=world.chair, gpu_request=second, outcome="grant", rationale="All 24.", reason="The budget came through.",
    )
    message = OutboxMessage.objects.get(key=f"notify:decision-corrected:{correction.pk}")
    assert (message.task_name, message.kwargs) == (
        "committee.notify", {"kind": "decision_corrected", "arguments": {"correction_id": correction.pk}}
    )
    assert services.notifications_deliver(
        kind=NotificationKind.DECISION_CORRECTED, arguments={"correction_id": correction.pk}
    ) == 2  # member_b and tech
    notes = Notification.objects.filter(kind=NotificationKind.DECISION_CORRECTED)
    assert {n.recipient for n in notes} == {world.member_b, world.tech}
    assert notification_text(notes[0]) == (
        f"Team B: the decision on “Vision model” (week {world.cycle.week}) was corrected from Partial grant, 8 GPUs "
        "to Grant, published as plan version 2. Reason: The budget came through."
    )
    assert services.notifications_deliver(
        kind=NotificationKind.DECISION_CORRECTED, arguments={"correction_id": correction.pk}
    ) == 0  # idempotent


def test_correction_after_finalize_changes_the_decision_and_rewrites_the_record(world, week):
    first, _second, _third = week
    revisions_before = len(record_revisions(world))
    correction = committed(
        services.decision_correct, actor=world.chair, gpu_request=first, outcome="partial", granted_gpu_count=8,
        rationale="Eight will do.",
        reason="The team said eight GPUs are enough.",
    )
    assert correction.plan_version is None
    assert not AllocationPlan.objects.exists()
    world.cycle.refresh_from_db()
    assert world.cycle.status == CycleStatus.FINALIZED
    assert Decision.objects.get(request=first).granted_gpu_count == 8
    revisions = record_revisions(world)
    assert len(revisions) == revisions_before + 1
    assert revisions[-1].summary == (
        "Updated — correction of “Ranker retrain” (Team A): The team said eight GPUs are enough."
    )
    assert "before the plan was published" in revisions[-1].body
    assert OutboxMessage.objects.filter(key=f"notify:decision-corrected:{correction.pk}").exists()
    # Published later, the plan uses the corrected decision.
    plan = publish(world)
    assert {w.request_ref: w.gpu_count for w in plan.windows.all()}[first.pk] == 8


@pytest.mark.parametrize("reason", ["", "   "])
def test_correction_without_a_reason_is_refused_and_changes_nothing(world, week, reason):
    _first, second, _third = week
    publish(world)
    revisions_before = len(record_revisions(world))
    with pytest.raises(ValidationError) as refused:
        services.decision_correct(
            actor=world.chair, gpu_request=second, outcome="grant", rationale="All 24.", reason=reason
        )
    assert refused.value.message_dict == {"reason": ["Say why the decision is corrected."]}
    decision = Decision.objects.get(request=second)
    assert (decision.outcome, decision.granted_gpu_count, decision.rationale) == ("partial", 8, "Half now.")
    assert AllocationPlan.objects.count() == 1 and not DecisionCorrection.objects.exists()
    assert len(record_revisions(world)) == revisions_before
    assert not OutboxMessage.objects.filter(kwargs__kind=NotificationKind.DECISION_CORRECTED).exists()


@pytest.mark.parametrize("persona", ["reviewer", "tech", "member_b", "outsider"])
def test_only_the_chair_corrects(world, week, persona):
    _first, second, _third = week
    publish(world)
    with pytest.raises(PermissionDenied):
        services.decision_correct(
            actor=getattr(world, persona), gpu_request=second, outcome="grant", rationale="All.", reason="Because."
        )
    assert not DecisionCorrection.objects.exists() and AllocationPlan.objects.count() == 1


def test_a_correction_that_changes_nothing_or_is_invalid_is_refused(world, week):
    _first, second, _third = week
    publish(world)
    with pytest.raises(ValidationError) as same:
        services.decision_correct(
            actor=world.chair, gpu_request=second, outcome="partial", granted_gpu_count=8, rationale="Half now.",
            reason="No change.",
        )
    assert "changes nothing" in same.value.message_dict["outcome"][0]
    with pytest.raises(ValidationError) as bad:
        services.decision_correct(
            actor=world.chair, gpu_request=second, outcome="partial", granted_gpu_count=30, rationale="Too many.",
            reason="Typo.",
        )
    assert set(bad.value.message_dict) == {"granted_gpu_count"}
    with pytest.raises(ValidationError) as no_rationale:
        services.decision_correct(actor=world.chair, gpu_request=second, outcome="grant", rationale=" ", reason="R.")
    assert set(no_rationale.value.message_dict) == {"rationale"}
    assert not DecisionCorrection.objects.exists() and AllocationPlan.objects.count() == 1


def test_a_week_still_in_review_is_not_corrected(world):
    request = file_request(world, title="Early")
    close(world)
    services.request_decide(actor=world.chair, gpu_request=request, outcome="defer", rationale="Later.")
    with pytest.raises(StateConflict):
        services.decision_correct(
            actor=world.chair, gpu_request=request, outcome="reject", rationale="No.", reason="Changed my mind."
        )
    assert not DecisionCorrection.objects.exists()


def test_the_chairs_correction_form_on_the_request_page(world, week, client):
    _first, second, _third = week
    publish(world)
    client.force_login(world.chair)
    page = client.get(f"/requests/{second.pk}/").content.decode()
    assert 'id="correct-decision"' in page
    body = {"outcome": "grant", "granted_gpu_count": "", "rationale": "All 24.", "reason": "Budget approved."}
    confirmation = client.post(f"/requests/{second.pk}/correct/", body)  # published: first what would move
    assert confirmation.status_code == 200 and "What plan version 2 changes" in confirmation.content.decode()
    assert Decision.objects.get(request=second).outcome == "partial"
    digest = re.search(r'name="digest" value="([0-9a-f]+)"', confirmation.content.decode())
    assert digest is not None
    response = client.post(f"/requests/{second.pk}/correct/", {**body, "confirm": "1", "digest": digest[1]})
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "plan version 2" in page
    assert "Budget approved." in page  # the history on the request page
    assert Decision.objects.get(request=second).outcome == "grant"


def test_the_correction_form_without_a_reason_shows_the_error_and_changes_nothing(world, week, client):
    _first, second, _third = week
    publish(world)
    client.force_login(world.chair)
    response = client.post(
        f"/requests/{second.pk}/correct/",
        {"outcome": "grant", "granted_gpu_count": "", "rationale": "All 24.", "reason": ""},
    )
    assert response.status_code == 400
    assert "Say why the decision is corrected." in response.content.decode()
    assert Decision.objects.get(request=second).outcome == "partial"


def test_the_correction_form_is_the_chairs_only(world, week, client):
    _first, second, _third = week
    publish(world)
    client.force_login(world.reviewer)
    assert 'id="correct-decision"' not in client.get(f"/requests/{second.pk}/").content.decode()
    response = client.post(
        f"/requests/{second.pk}/correct/", {"outcome": "grant", "rationale": "All.", "reason": "Because."}
    )
    assert response.status_code == 403
    assert Decision.objects.get(request=second).outcome == "partial"


def test_a_running_grant_corrected_to_defer_keeps_its_started_window(world, week):
    first, _second, _third = week
    publish(world)
    running = AllocationWindow.objects.get(request_ref=first.pk)
    now = running.start + (running.end - running.start) / 2
    services.decision_correct(
        actor=world.chair, gpu_request=first, outcome="defer", rationale="Next week.", reason="Budget freeze.", now=now,
    )
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None and plan.version == 2
    kept = {w.request_ref: w for w in allocation_selectors.plan_window_list(plan=plan)}[first.pk]
    assert (kept.pk, kept.gpu_count) == (running.pk, 16)  # a running job is not pulled from under the team


def test_a_corrections_line_in_the_history_reads_in_the_readers_language(world, week, client):
    _first, second, _third = week
    publish(world)
    services.decision_correct(
        actor=world.chair, gpu_request=second, outcome="reject", rationale="Withdrawn by finance.",
        reason="The budget was cut.",
    )
    event = RequestEvent.objects.get(request=second, action="corrected")
    assert event.detail_text["code"] == "decision_corrected"  # a code, and the text as written (English) beside it
    client.force_login(world.chair)
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    page = client.get(f"/requests/{second.pk}/").content.decode()
    assert "(部分批准（8 块 GPU） → 驳回：The budget was cut.)" in page  # the reason as the chair typed it
    assert "Partial grant (8 GPUs) → Reject" not in page


def test_the_histories_lines_and_the_corrected_plans_note_read_in_the_readers_language(world, week, client):
    _first, second, _third = week
    publish(world)
    services.decision_correct(
        actor=world.chair, gpu_request=second, outcome="grant", rationale="All of it.", reason="Budget found.",
    )
    codes = dict(RequestEvent.objects.filter(request=second).values_list("action", "detail_text__code"))
    assert (codes["decided"], codes["published"]) == ("request_decided", "request_placed")
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None and plan.note_text["code"] == "plan_corrected"
    assert plan.note == "correction of “Vision model” (Team B): Budget found."  # as written, beside the code
    with translation.override("zh-hans"):
        assert plan.note_display == "更正“Vision model”（Team B）：Budget found."
    client.force_login(world.chair)
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    page = client.get(f"/requests/{second.pk}/").content.decode()
    assert "部分批准（8 块 GPU）" in page and "方案版本 1：" in page and "方案版本 2：" in page
    assert "Partial grant (8 GPUs)" not in page and "plan version 1:" not in page
