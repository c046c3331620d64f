"""Out-of-cycle emergency requests: filed mid-week, two approvals, placed beside the published plan at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan, AllocationWindow, PlanExplanation
from committee import selectors, services
from committee.models import EmergencyRequest, Notification, ReviewCycle
from committee.services import emergency as emergencies
from core.errors import StateConflict
from tests.clock import FIXED_NOW
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request

WEEK = "2026-W49"  # the week FIXED_NOW falls in


@pytest.fixture
def running_week(world, clock):
    """Week 2026-W49, published a week ago through the real review: team B's 40 GPUs of a100 run from
    Monday for 100 h (started), team A's 6 GPUs from Thursday for 24 h (not started yet).

    a100 has 64 GPUs: 12 in the burst reserve, 6 in the cold standby, 46 standard. On Wednesday 10:00
    the emergency finds 64 - 6 - 40 = 18 GPUs outside the standby, and 24 with it.
    """
    clock.move_to(FIXED_NOW - timedelta(days=7), tick=False)
    next_week = world.cycle
    world.cycle = cycle = services.cycle_create(week=WEEK)
    cycle.intake_closes_at = FIXED_NOW - timedelta(days=5)
    cycle.review_at = FIXED_NOW - timedelta(days=5)
    cycle.save()
    start = cycle.starts_at
    big = file_request(world, team=world.team_b, title="Search index", gpu_count=40, min_gpu_count=40,
                       duration_hours=100, earliest_start=start + timedelta(hours=8),
                       latest_end=start + timedelta(hours=167))
    small = file_request(world, title="Ranker", gpu_count=6, min_gpu_count=6, duration_hours=24,
                         earliest_start=start + timedelta(hours=72), latest_end=start + timedelta(hours=167))
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, big, 9, 8, 9)
        score(member, small, 6, 6, 5)
    decide(world, big)
    decide(world, small)
    services.cycle_finalize(cycle=cycle, actor=world.chair)
    services.cycle_publish(actor=world.chair, cycle=cycle)
    clock.move_to(FIXED_NOW, tick=False)
    world.cycle = next_week
    return ReviewCycle.objects.get(week=WEEK)


def _plan() -> AllocationPlan:
    plan = allocation_selectors.plan_for_week(week=WEEK)
    assert plan is not None
    return plan


def _file(world, **overrides):
    fields = {"actor": world.lead_a, "team": world.team_a, "pool": world.a100, "title": "Fraud model hotfix",
              "gpu_count": 16, "duration_hours": 10, "justification": "A fraud wave: the new model must ship today."}
    fields.update(overrides)
    return emergencies.emergency_request_file(**fields)


def _approve(member, emergency, **extra):
    return emergencies.emergency_request_decide(actor=member, emergency=emergency, approve=True, **extra)


def test_a_team_files_an_emergency_mid_week_on_a_published_week_with_next_weeks_intake_closed(world, running_week):
    services.cycle_close_intake(cycle=world.cycle, actor=world.chair)
    emergency = _file(world)
    request = emergency.request
    assert (request.cycle.week, request.cycle.status, request.is_emergency) == (WEEK, "published", True)
    assert (emergency.status, emergency.review_cycle.week) == ("pending", world.cycle.week)
    assert request.earliest_start == FIXED_NOW and request.latest_end == running_week.ends_at
    assert Notification.objects.filter(kind="emergency", recipient=world.chair).exists()
    assert not Notification.objects.filter(kind="emergency", recipient=world.lead_a).exists()


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"justification": "  "}, "justification"),
        ({"title": ""}, "title"),
        ({"gpu_count": 65}, "gpu_count"),
        ({"gpu_count": 8, "min_gpu_count": 9}, "min_gpu_count"),
        ({"duration_hours": 200}, "duration_hours"),
    ],
)
def test_bad_emergency_requests_are_refused_naming_the_field_and_nothing_is_filed(world, running_week, overrides,
                                                                                  field):
    with pytest.raises(ValidationError) as excinfo:
        _file(world, **overrides)
    assert field in excinfo.value.message_dict
    assert not EmergencyRequest.objects.exists()


def test_only_the_teams_members_file_its_emergencies(world, running_week):
    with pytest.raises(PermissionDenied):
        _file(world, actor=world.member_b)
    assert not EmergencyRequest.objects.exists()


def test_two_approvals_chair_and_one_other_place_it_in_the_burst_reserve_as_a_new_plan_version(world, running_week):
    emergency = _file(world)
    before = {w.pk: (w.start, w.gpu_count) for w in AllocationWindow.objects.all()}
    _approve(world.chair, emergency)
    emergency.refresh_from_db()
    assert emergency.status == "pending"  # one approval is not enough
    assert _plan().version == 1
    _approve(world.reviewer, emergency)
    emergency.refresh_from_db()
    plan = _plan()
    assert (emergency.status, emergency.plan, plan.version) == ("placed", plan, 2)
    windows = list(allocation_selectors.plan_window_list(plan=plan))
    # Every window published before, started or not, is kept as it was (same rows).
    assert {w.pk: (w.start, w.gpu_count) for w in windows if w.request_ref != emergency.request_id} == before
    (window,) = [w for w in windows if w.request_ref == emergency.request_id]
    assert (window.tier, window.gpu_count, window.start) == ("preemptible", 16, FIXED_NOW)
    assert window.end == FIXED_NOW + timedelta(hours=10)
    assert (emergency.standby_gpu_count, window.standby_gpu_count) == (0, 0)
    for hour in range(168):  # never into the standby: at most 64 - 6 GPUs at any hour
        at = running_week.starts_at + timedelta(hours=hour)
        assert sum(w.gpu_count for w in windows if w.start <= at < w.end) <= 58
    decision = emergency.request.decision
    assert (decision.outcome, decision.granted_gpu_count) == ("grant", 16)
    assert "Chair and Reviewer" in decision.rationale
    assert Notification.objects.filter(kind="emergency", recipient=world.lead_a, key__endswith=":placed").exists()


def test_the_chair_is_one_of_the_two_approvals(world, running_week):
    emergency = _file(world)
    _approve(world.reviewer, emergency)
    _approve(world.finance, emergency)
    emergency.refresh_from_db()
    assert emergency.status == "pending" and _plan().version == 1
    _approve(world.chair, emergency)
    emergency.refresh_from_db()
    assert emergency.status == "placed"


def test_the_teams_own_member_cannot_approve(world, running_week):
    emergency = _file(world, actor=world.member_b, team=world.team_b)
    with pytest.raises(PermissionDenied, match="Team B"):
        _approve(world.tech, emergency)  # tech lead, also in team B
    with pytest.raises(PermissionDenied):
        _approve(world.member_b, emergency)  # no seat
    assert not emergency.approvals.exists()


def test_one_verdict_per_member_and_the_standby_is_the_chairs_call(world, running_week):
    emergency = _file(world)
    _approve(world.reviewer, emergency)
    with pytest.raises(StateConflict):
        _approve(world.reviewer, emergency)
    with pytest.raises(ValidationError) as excinfo:
        _approve(world.finance, emergency, use_standby=True)
    assert "use_standby" in excinfo.value.message_dict
    assert emergency.approvals.count() == 1


def test_refused_when_no_room_with_a_clear_message_and_nothing_changes(world, running_week):
    emergency = _file(world, gpu_count=20)
    _approve(world.reviewer, emergency)
    with pytest.raises(ValidationError) as excinfo:
        _approve(world.chair, emergency)
    message = excinfo.value.message_dict["gpu_count"][0]
    assert "at most 18 GPUs free in the burst reserve" in message and "Nothing was approved" in message
    emergency.refresh_from_db()
    assert emergency.status == "pending" and emergency.approvals.count() == 1
    assert AllocationPlan.objects.filter(week=WEEK).count() == 1


def test_the_chair_wakes_the_standby_for_what_the_burst_reserve_cannot_hold(world, running_week):
    emergency = _file(world, gpu_count=20)
    _approve(world.reviewer, emergency)
    _approve(world.chair, emergency, use_standby=True)
    emergency.refresh_from_db()
    (window,) = [w for w in allocation_selectors.plan_window_list(plan=emergency.plan)
                 if w.request_ref == emergency.request_id]
    assert (window.gpu_count, window.tier, emergency.standby_gpu_count) == (20, "preemptible", 2)
    assert window.standby_gpu_count == 2  # the windows API tells the scheduler (its `standby_gpus`)
    assert "2 from the cold standby" in emergency.plan.note


def test_either_approver_can_reject_with_a_reason(world, running_week):
    emergency = _file(world)
    with pytest.raises(ValidationError) as excinfo:
        emergencies.emergency_request_decide(actor=world.finance, emergency=emergency, approve=False)
    assert "note" in excinfo.value.message_dict
    emergencies.emergency_request_decide(actor=world.finance, emergency=emergency, approve=False,
                                         note="Use the burst queue of orion.")
    emergency.refresh_from_db()
    assert emergency.status == "rejected" and emergency.request.decision.outcome == "reject"
    with pytest.raises(StateConflict):
        _approve(world.chair, emergency)
    assert AllocationPlan.objects.filter(week=WEEK).count() == 1


def test_a_later_correction_keeps_the_emergency_window(world, running_week):
    emergency = _file(world)
    _approve(world.chair, emergency)
    _approve(world.reviewer, emergency)
    emergency.refresh_from_db()
    (placed,) = AllocationWindow.objects.filter(request_ref=emergency.request_id)
    plan = services.cycle_publish(actor=world.chair, cycle=running_week, reason="Fix a typo in a rationale.")
    assert plan.version == 3
    assert [w.pk for w in allocation_selectors.plan_window_list(plan=plan) if w.request_ref == emergency.request_id] \
        == [placed.pk]


def test_it_is_shown_at_the_next_review_and_the_chair_decides_after_the_fact(world, running_week, client):
    emergency = _file(world)
    _approve(world.chair, emergency)
    _approve(world.reviewer, emergency)
    client.force_login(world.finance)
    page = client.get(f"/review/{world.cycle.week}/").content.decode()
    assert "Emergency requests since the last review" in page and "Fraud model hotfix" in page
    assert "Fraud model hotfix" not in client.get(f"/review/{WEEK}/").content.decode()
    emergencies.emergency_review_record(actor=world.chair, emergency=emergency, outcome="endorsed")
    emergency.refresh_from_db()
    assert emergency.posthoc_outcome == "endorsed"
    assert "Endorsed" in client.get(f"/review/{world.cycle.week}/").content.decode()


def test_the_pages_file_approve_and_show_the_placement(world, running_week, client):
    client.force_login(world.lead_a)
    refused = client.post("/emergencies/new/", {"team": world.team_a.pk, "pool": world.a100.pk, "title": "Hotfix",
                                                "gpu_count": 8, "duration_hours": 6, "justification": ""})
    assert refused.status_code == 400 and not EmergencyRequest.objects.exists()
    filed = client.post("/emergencies/new/", {"team": world.team_a.pk, "pool": world.a100.pk, "title": "Hotfix",
                                              "gpu_count": 8, "duration_hours": 6, "justification": "Fraud wave."})
    emergency = EmergencyRequest.objects.get()
    assert filed.status_code == 302 and filed["Location"] == f"/emergencies/{emergency.pk}/"
    client.force_login(world.outsider)
    assert client.get(f"/emergencies/{emergency.pk}/").status_code == 404
    for member in (world.chair, world.reviewer):
        client.force_login(member)
        assert "Give my verdict" in client.get(f"/emergencies/{emergency.pk}/").content.decode()
        client.post(f"/emergencies/{emergency.pk}/decide/", {"verdict": "approve", "note": ""})
    client.force_login(world.lead_a)
    page = client.get(f"/emergencies/{emergency.pk}/").content.decode()
    assert "Approved and placed" in page and "8 A100, Wed 10:00" in page and "preemptible" in page
    assert "Give my verdict" not in page


def test_the_digest_lines_say_what_happened(world, running_week):
    from committee.services.notifications import notification_text

    emergency = _file(world)
    filed = Notification.objects.get(kind="emergency", recipient=world.finance, key__endswith=":filed")
    assert notification_text(filed) == (
        "Team A filed an emergency request, “Fraud model hotfix” (16 GPUs, week 2026-W49): it waits for the chair "
        "and one other member to approve it."
    )
    _approve(world.chair, emergency)
    _approve(world.reviewer, emergency)
    placed = Notification.objects.get(kind="emergency", recipient=world.lead_a, key__endswith=":placed")
    assert notification_text(placed) == (
        "Team A's emergency request “Fraud model hotfix” is approved and placed (week 2026-W49, a new plan version)."
    )


def test_the_admin_shows_emergencies_read_only(world, running_week, client):
    from django.contrib.auth import get_user_model

    emergency = _file(world)
    _approve(world.reviewer, emergency)
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
    assert "Fraud model hotfix" in client.get("/admin/committee/emergencyrequest/").content.decode()
    page = client.get(f"/admin/committee/emergencyrequest/{emergency.pk}/change/")
    assert page.status_code == 200 and "Reviewer" in page.content.decode()
    assert client.post(f"/admin/committee/emergencyrequest/{emergency.pk}/change/", {}).status_code == 403


def test_an_emergency_placed_before_its_week_is_published_is_kept_by_the_first_publish(world, clock):
    # The running week is still in review (its review ran late): the emergency is placed as version 1.
    next_week = world.cycle
    world.cycle = cycle = services.cycle_create(week=WEEK)
    cycle.intake_closes_at = FIXED_NOW + timedelta(hours=1)
    cycle.review_at = FIXED_NOW + timedelta(hours=2)
    cycle.save()
    late = file_request(world, team=world.team_b, title="Search index", gpu_count=16, min_gpu_count=8,
                        duration_hours=24, earliest_start=FIXED_NOW + timedelta(hours=4),
                        latest_end=cycle.ends_at)
    close(world)
    world.cycle = next_week
    emergency = _file(world)
    _approve(world.chair, emergency)
    _approve(world.reviewer, emergency)
    assert _plan().version == 1
    (placed,) = AllocationWindow.objects.filter(request_ref=emergency.request_id)
    world.cycle = cycle
    for member in (world.chair, world.reviewer, world.finance):
        score(member, late, 8, 8, 8)
    decide(world, late)
    # The review's preview already counts the emergency's window, as publishing will.
    preview = selectors.cycle_placement(cycle=cycle).by_request[late.pk]
    services.cycle_finalize(cycle=cycle, actor=world.chair)
    published_at = timezone.now()
    plan = services.cycle_publish(actor=world.chair, cycle=cycle, now=published_at)
    windows = {w.request_ref: w for w in allocation_selectors.plan_window_list(plan=plan)}
    assert plan.version == 2 and windows[emergency.request_id].pk == placed.pk and late.pk in windows
    assert preview.window is not None
    assert (preview.window.start, preview.window.gpu_count) == (windows[late.pk].start, windows[late.pk].gpu_count)
    kept = PlanExplanation.objects.get(plan=plan, request_ref=emergency.request_id).text
    if placed.start > published_at:  # an approved emergency not running yet is not said to be running
        assert kept.startswith("kept as published: an approved emergency, from ")
    else:
        assert kept.startswith("kept as published: running since ")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_forms_error_box_lists_every_field_error_linked_to_its_field(world, running_week, client, language):
    client.force_login(world.lead_a)
    client.post("/i18n/setlang/", {"language": language, "next": "/"})
    refused = client.post("/emergencies/new/", {"team": world.team_a.pk, "pool": "", "title": "", "gpu_count": "x",
                                                "duration_hours": "", "justification": ""})
    assert refused.status_code == 400 and not EmergencyRequest.objects.exists()
    form = refused.context["form"]
    assert sorted(form.errors) == ["duration_hours", "gpu_count", "justification", "pool", "title"]
    html = refused.content.decode()
    box = html[html.index('id="error-summary"'):html.index("</article>", html.index('id="error-summary"'))]
    for name in form.errors:
        field = form[name]
        assert f'<a href="#{field.id_for_label}"><strong>{field.label}</strong></a>: {form.errors[name][0]}' in box
    assert ("5 things to correct." if language == "en" else "5 处需要更正。") in box


# --- what Docket writes about an emergency reads in the reader's language -------------------------------------


def _read_as(client, user, language, url):
    client.force_login(user)
    client.post("/i18n/setlang/", {"language": language, "next": "/"})
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def test_the_plan_note_history_and_decision_of_a_placed_emergency_read_in_each_language(world, running_week, client):
    emergency = _file(world)
    _approve(world.chair, emergency)
    _approve(world.reviewer, emergency)
    plan = _plan()
    # Stored as written now (English here: the API and the archive show it) and as a code for every reader.
    assert plan.note == ("Emergency “Fraud model hotfix” of Team A, approved by Chair and Reviewer: 16 GPUs, "
                         "preemptible.")
    assert plan.note_text["code"] == "emergency_placed"
    windows = f"/windows/?week={WEEK}"
    assert plan.note in _read_as(client, world.lead_a, "en", windows)
    assert ("Team A 的紧急申请“Fraud model hotfix”，由 Chair和Reviewer 批准：16 块 GPU，可抢占。"
            in _read_as(client, world.lead_a, "zh-hans", windows))
    request_page = f"/requests/{emergency.request_id}/"
    english = _read_as(client, world.lead_a, "en", request_page)
    assert "Emergency, approved by Chair and Reviewer: A fraud wave: the new model must ship today." in english
    assert ("published (plan version 2: placed Wed 10:00–Wed 20:00 on 16 A100, preemptible (in the burst reserve))"
            in english)
    chinese = _read_as(client, world.lead_a, "zh-hans", request_page)
    # The generated words are Chinese; what the team typed stays as typed.
    assert "紧急申请，由 Chair和Reviewer 批准：A fraud wave: the new model must ship today." in chinese
    assert "(方案版本 2：" in chinese
    assert "plan version 2" not in chinese and "Emergency, approved by" not in chinese


def test_a_rejection_and_the_reviews_decision_read_in_each_language(world, running_week, client):
    emergency = _file(world)
    emergencies.emergency_request_decide(actor=world.chair, emergency=emergency, approve=False,
                                         note="Wait for Friday.")
    request_page = f"/requests/{emergency.request_id}/"
    assert "Emergency request rejected by Chair: Wait for Friday." in _read_as(client, world.lead_a, "en", request_page)
    assert "紧急申请被 Chair 驳回：Wait for Friday." in _read_as(client, world.lead_a, "zh-hans", request_page)


def test_rows_written_before_texts_had_codes_still_read_as_written(world, running_week, client):
    emergency = _file(world)
    _approve(world.chair, emergency)
    _approve(world.reviewer, emergency)
    plan, decision = _plan(), emergency.request.decision
    event = emergency.request.events.get(action="published")
    # An older row: free text only (the column as earlier versions wrote it), or a code this version does not know.
    AllocationPlan.objects.filter(pk=plan.pk).update(note="Emergency placed by hand.", note_text={})
    type(decision).objects.filter(pk=decision.pk).update(rationale="Approved in the hallway.",
                                                         rationale_text={"code": "gone", "params": {}})
    type(event).objects.filter(pk=event.pk).update(detail="plan version 2: by hand", detail_text={})
    for language in ("en", "zh-hans"):
        assert "Emergency placed by hand." in _read_as(client, world.lead_a, language, f"/windows/?week={WEEK}")
        page = _read_as(client, world.lead_a, language, f"/requests/{emergency.request_id}/")
        assert "Approved in the hallway." in page and "(plan version 2: by hand)" in page

