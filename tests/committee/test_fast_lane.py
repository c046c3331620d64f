"""The fast lane: a small request of the running week granted on submission, or told why it goes to the review."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan, AllocationWindow, Department, GpuPool, PlanExplanation, UsageRecord
from committee import selectors, services
from committee.models import ConflictDeclaration, FastLaneRequest, GpuRequest, Notification, RequestStatus, ReviewCycle
from committee.selectors.budgets import department_charges
from committee.selectors.publishing import cycle_publish_placement
from committee.services import fastlane
from core.errors import StateConflict
from governed.models import ChangeSource
from governed.services import policy_change_record
from tests.allocations.plans import W, publish
from tests.clock import FIXED_NOW
from tests.committee.review_api import API, as_user
from tests.factories import file_request
from tests.governed.version_one import pool_prices_set, version_1_set
from tests.readable import assert_readable

pytestmark = pytest.mark.django_db

WEEK = "2026-W49"  # the week FIXED_NOW (Wednesday 2 December 2026, 10:00 UTC) falls in
FAST = "pool.atlas/a100.fast_lane_pct"


@pytest.fixture
def running_week(world: Any, clock: Any) -> ReviewCycle:
    """Week 2026-W49 published: team B's 40 standard GPUs of a100 (64: 12 burst, 6 standby, 6 fast lane at 10 %)
    from Monday 08:00 for 100 h. Next week's intake (world.cycle) is open."""
    version_1_set({FAST: "10", "fast_lane.max_gpu_hours": "96"})
    next_week = world.cycle
    clock.move_to(FIXED_NOW - timedelta(days=7), tick=False)
    world.cycle = cycle = services.cycle_create(week=WEEK)
    big = file_request(world, team=world.team_b, title="Search index", gpu_count=40, min_gpu_count=40,
                       duration_hours=100, earliest_start=cycle.starts_at, latest_end=cycle.ends_at)
    clock.move_to(FIXED_NOW, tick=False)
    publish([W(world.a100, world.team_b, 40, 8, 108, ref=big.pk)], week=WEEK)
    world.cycle = next_week
    return cycle


def _file(world: Any, **overrides: Any) -> FastLaneRequest:
    fields: dict[str, Any] = {"actor": world.lead_a, "team": world.team_a, "pool": world.a100,
                              "title": "Eval of the ranker", "gpu_count": 4, "duration_hours": 24}
    fields.update(overrides)
    return fastlane.fast_lane_request_file(**fields)


def _windows() -> list[tuple[int | None, int, Any, Any, str]]:
    plan = allocation_selectors.plan_for_week(week=WEEK)
    assert plan is not None
    return sorted((w.request_ref, w.gpu_count, w.start, w.end, w.tier) for w in
                  allocation_selectors.plan_window_list(plan=plan))


def _nothing_granted(before: list[Any], fast: FastLaneRequest) -> None:
    assert _windows() == before
    assert AllocationPlan.objects.filter(week=WEEK).count() == 1
    assert not hasattr(fast.request, "decision") or fast.request.decision is None


def test_a_small_request_is_granted_on_submission_as_a_new_plan_version_and_nothing_else_moves(world, running_week):
    before = _windows()
    fast = _file(world)
    request = fast.request
    assert fast.status == "granted" and request.cycle == running_week and request.status == RequestStatus.DECIDED
    plan = allocation_selectors.plan_for_week(week=WEEK)
    assert plan is not None and plan.version == 2 and fast.plan == plan
    after = _windows()
    start = running_week.starts_at + timedelta(hours=58)  # Wednesday 10:00, the next whole hour: now
    assert after == sorted([*before, (request.pk, 4, start, start + timedelta(hours=24), "standard")])
    outcome = selectors.request_outcome_get(gpu_request=request)
    assert outcome.decided_text == "Grant, 4 GPUs (96 GPU-hours), granted in the fast lane"
    assert "granted in the fast lane" in outcome.summary
    assert fast.review_cycle == world.cycle  # listed at the next review
    (note,) = Notification.objects.filter(recipient=world.member_a, kind="decision_published")
    assert note.params["fast_lane"] is True


@pytest.mark.parametrize(("setup", "check", "words"), [
    ("ceiling", "ceiling", "Above the fast lane's ceiling: 8 GPUs × 24 h = 192 GPU-hours, more than the 96"),
    ("budget", "budget", "Over budget: it would charge Research USD 240.00, and USD 100.00 is left"),
    ("fair_share", "fair_share", "Above its fair share: Team A used"),
    ("room", "room", "has at most 4 free for 12 h before the week ends, fewer than the 5 asked"),
    ("no_reserve", "room", "No fast lane on atlas/a100"),
])
def test_each_check_refuses_with_its_reason_grants_nothing_and_sends_it_to_the_review(
        world, running_week, setup, check, words):
    gpus, hours = 4, 24
    if setup == "ceiling":
        gpus = 8
    elif setup == "budget":
        research = Department.objects.create(name="Research", slug="research")
        world.team_a.department = research
        world.team_a.save()
        pool_prices_set({world.a100: "2.50"})
        services.department_budget_set(actor=world.finance, department=research, quarter="2026-Q4",
                                       quarterly=Decimal("100"), carry_over_pct=0, reason="FY plan.", now=FIXED_NOW)
    elif setup == "fair_share":
        UsageRecord.objects.create(pool=world.a100, team=world.team_a, period_start=FIXED_NOW - timedelta(days=3),
                                   period_end=FIXED_NOW - timedelta(days=3, hours=-1), gpu_hours_used=Decimal(500),
                                   mean_utilization_pct=90, idempotency_key="a")
    elif setup == "room":
        version_1_set({"fast_lane.max_gpu_hours": "1000"})
        _file(world, team=world.team_b, actor=world.member_b, gpu_count=2, duration_hours=110,
              title="Small eval")  # 2 of the 6 taken to the week's end
        gpus, hours = 5, 12
    elif setup == "no_reserve":
        version_1_set({FAST: "0"})
    before = _windows()
    versions = AllocationPlan.objects.filter(week=WEEK).count()
    fast = _file(world, gpu_count=gpus, duration_hours=hours)
    assert (fast.status, fast.failed_check) == ("refused", check)
    assert words in fast.reason_display
    assert _windows() == before and AllocationPlan.objects.filter(week=WEEK).count() == versions
    request = GpuRequest.objects.get(pk=fast.request_id)
    # It goes to the next weekly review as a normal request of next week.
    assert (request.cycle, request.status, request.is_fast_lane) == (world.cycle, RequestStatus.DRAFT, False)
    assert request.earliest_start == world.cycle.starts_at and not hasattr(request, "decision")


def test_bad_input_is_refused_naming_the_field_and_files_nothing(world, running_week):
    count = GpuRequest.objects.count()
    hours_left = int((running_week.ends_at - FIXED_NOW).total_seconds() // 3600)  # 110: to Sunday 24:00
    cases: list[tuple[dict[str, Any], str]] = [
        ({"title": " "}, "title"), ({"gpu_count": 0}, "gpu_count"), ({"gpu_count": 65}, "gpu_count"),
        ({"duration_hours": hours_left + 1}, "duration_hours"), ({"duration_hours": 0}, "duration_hours"),
        ({"earliest_start": running_week.ends_at}, "earliest_start"),
    ]
    for overrides, field in cases:
        with pytest.raises(ValidationError) as refused:
            _file(world, **overrides)
        assert field in refused.value.message_dict, overrides
    with pytest.raises(ValidationError) as refused:
        _file(world, duration_hours=hours_left + 1)
    assert "ends by the end of week 2026-W49" in refused.value.message_dict["duration_hours"][0]
    with pytest.raises(PermissionDenied):
        _file(world, actor=world.member_b)
    assert GpuRequest.objects.count() == count


def test_up_to_the_last_hour_of_the_week_and_from_monday_0000(world, running_week, clock):
    version_1_set({"fast_lane.max_gpu_hours": "1000"})
    hours_left = int((running_week.ends_at - FIXED_NOW).total_seconds() // 3600)
    fast = _file(world, gpu_count=1, duration_hours=hours_left)  # ends exactly Sunday 24:00
    assert fast.status == "granted"
    window = AllocationWindow.objects.get(request_ref=fast.request_id)
    assert window.end == running_week.ends_at
    # Monday 00:00 of the next week: the fast lane files into that week (all 168 hours of it), not the one that
    # just ended.
    clock.move_to(running_week.ends_at, tick=False)
    monday = _file(world, team=world.team_b, actor=world.member_b, gpu_count=1, duration_hours=168)
    assert (monday.status, monday.request.cycle) == ("granted", world.cycle)
    window = AllocationWindow.objects.get(request_ref=monday.request_id)
    assert (window.start, window.end) == (world.cycle.starts_at, world.cycle.ends_at)


def test_the_weekly_engine_leaves_the_fast_lane_reserve_free():
    pool = engine.PoolCapacity(key="p", gpu_count=64, burst_reserve_pct=20, standby_pct=10, fast_lane_pct=10)
    assert engine.fast_lane_gpus(pool) == 6
    assert engine.week_capacity(pool, hours=168).standard_gpu_hours == (64 - 12 - 6 - 6) * 168
    start = FIXED_NOW.replace(hour=0) - timedelta(days=2)
    demands = [engine.Demand(ref=i, pool="p", gpu_count=64, min_gpu_count=1, duration_hours=168, earliest_start=start,
                             latest_end=start + timedelta(hours=168), preemptible_ok=i == 2) for i in (1, 2)]
    result = engine.allocate(week_start=start, pools=[pool], demands=demands)
    assert sum(w.gpu_count for w in result.windows) == 64 - 6 - 6  # standard 40 + burst 12, never the fast lane's 6
    assert [(w.gpu_count, w.tier) for w in result.windows] == [(40, "priority"), (12, "preemptible")]


def test_the_reserves_together_stay_below_100_percent(world):
    with pytest.raises(ValidationError) as refused:
        policy_change_record(actor=None, changes={FAST: "70"}, effective_week="2026-W50", reason="More fast lane.",
                             source=ChangeSource.LAB)
    assert "plus fast-lane reserve 70 % must stay below 100 %" in str(refused.value)
    policy_change_record(actor=None, changes={FAST: "15"}, effective_week="2026-W50", reason="A fast lane.",
                         source=ChangeSource.LAB)
    (pool,) = allocation_selectors.pool_reserves_for_week(week="2026-W50", pools=GpuPool.objects.filter(
        pk=world.a100.pk).select_related("cluster"))
    assert pool.fast_lane_pct == 15


def test_the_chair_revokes_a_grant_not_yet_started_and_not_a_started_one(world, running_week, clock):
    later = _file(world, earliest_start=FIXED_NOW + timedelta(hours=5))
    with pytest.raises(PermissionDenied):
        fastlane.fast_lane_revoke(actor=world.reviewer, fast=later, reason="Not small.")
    with pytest.raises(ValidationError):
        fastlane.fast_lane_revoke(actor=world.chair, fast=later, reason=" ")
    plan = fastlane.fast_lane_revoke(actor=world.chair, fast=later, reason="The ranker team must wait for Monday.")
    assert plan.version == 3 and not AllocationWindow.objects.filter(plan=plan, request_ref=later.request_id).exists()
    later.refresh_from_db()
    assert later.status == "revoked"
    outcome = selectors.request_outcome_get(gpu_request=later.request)
    assert (outcome.decided_text, outcome.status) == ("Reject", "not_granted")
    assert outcome.decided is not None
    assert outcome.decided.rationale.endswith("revoked by the review: The ranker team must wait for Monday.")
    explanation = PlanExplanation.objects.get(plan=plan, request_ref=later.request_id)
    assert explanation.reasons[0]["code"] == "revoked" and not explanation.placed
    # A later placement of the week (a correction) does not place it again.
    assert later.request_id not in {w.ref for w in cycle_publish_placement(
        cycle=running_week, now=FIXED_NOW).result.windows}
    started = _file(world, team=world.team_b, actor=world.member_b, title="Now")
    clock.move_to(FIXED_NOW + timedelta(hours=1), tick=False)
    with pytest.raises(StateConflict, match="started"):
        fastlane.fast_lane_revoke(actor=world.chair, fast=started, reason="Too late.")
    final = allocation_selectors.plan_for_week(week=WEEK)
    assert final is not None and final.version == 4


def test_fast_lane_windows_count_for_charges_and_fair_share_like_any_grant(world, running_week):
    research = Department.objects.create(name="Research", slug="research")
    world.team_a.department = research
    world.team_a.save()
    pool_prices_set({world.a100: "2.50"})
    assert department_charges(quarter="2026-Q4").get(research.pk, Decimal(0)) == Decimal(0)
    _file(world)
    assert department_charges(quarter="2026-Q4")[research.pk] == Decimal("240.00")  # 96 GPU-hours × 2.50
    window = AllocationWindow.objects.get(request_ref=FastLaneRequest.objects.get().request_id)
    before = selectors.fair_share_live(as_of=FIXED_NOW)[world.team_a.pk].decayed_gpu_hours
    UsageRecord.objects.create(pool=world.a100, team=world.team_a, period_start=window.start,
                               period_end=window.start + timedelta(hours=1), gpu_hours_used=Decimal(4),
                               mean_utilization_pct=100, idempotency_key="fl", window=window)
    assert selectors.fair_share_live(as_of=FIXED_NOW + timedelta(hours=2))[world.team_a.pk].decayed_gpu_hours > before


def test_the_api_grants_or_says_which_check_refused_and_bad_input_files_nothing(api, world, running_week):
    url = f"{API}/teams/{world.team_a.slug}/fast-lane/"
    as_user(api, world.member_a)
    body: dict[str, Any] = {"pool": "atlas/a100", "title": "Eval of the ranker", "gpu_count": 4, "duration_hours": 24}
    count = GpuRequest.objects.count()
    bad_bodies: list[tuple[dict[str, Any], str]] = [
        ({"duration_hours": 111}, "duration_hours"), ({"pool": "atlas/nope"}, "pool"),
        ({"gpu_count": "4"}, "gpu_count"), ({"title": " "}, "title"), ({"tier": "x"}, "tier"),
    ]
    for bad, field in bad_bodies:
        response = api.post(url, {**body, **bad}, format="json")
        assert response.status_code == 400 and field in response.json(), (bad, response.json())
    assert GpuRequest.objects.count() == count
    as_user(api, world.member_b)
    assert api.post(url, body, format="json").status_code == 403
    as_user(api, world.member_a)
    granted = api.post(url, body, format="json")
    assert granted.status_code == 201, granted.json()
    assert {k: granted.json()[k] for k in ("status", "failed_check", "cycle", "plan_version")} == {
        "status": "granted", "failed_check": "", "cycle": WEEK, "plan_version": 2}
    detail = api.get(f"{API}/requests/{granted.json()['request']}/").json()
    assert detail["placement"]["summary"].endswith("granted in the fast lane")
    refused = api.post(url, {**body, "gpu_count": 8}, format="json").json()
    assert (refused["status"], refused["failed_check"], refused["cycle"], refused["plan_version"]) == (
        "refused", "ceiling", world.cycle.week, None)
    assert refused["reason"].startswith("Above the fast lane's ceiling")


def test_the_pages_file_show_the_reason_list_it_at_the_review_and_the_chair_revokes(client, world, running_week,
                                                                                     clock):
    clock.move_to(FIXED_NOW + timedelta(minutes=20), tick=False)  # granted from 11:00, revocable until then
    client.force_login(world.lead_a)
    page = client.get(reverse("committee:fast-lane-create"))
    assert "Ceiling: 96 GPU-hours" in page.content.decode() and "atlas/a100: 6 GPUs (10 %)" in page.content.decode()
    form = {"team": world.team_a.pk, "pool": world.a100.pk, "title": "Eval of the ranker", "gpu_count": "4",
            "duration_hours": "24"}
    response = client.post(reverse("committee:fast-lane-create"), {**form, "duration_hours": "200"})
    assert response.status_code == 400 and "a fast-lane request ends by the end of week" in response.content.decode()
    response = client.post(reverse("committee:fast-lane-create"), {**form, "gpu_count": "8"}, follow=True)
    text = response.content.decode()
    assert "Not granted in the fast lane" in text and "Above the fast lane&#x27;s ceiling" in text
    assert f"It is now a draft of week {world.cycle.week}'s intake, for the weekly review" in text
    response = client.post(reverse("committee:fast-lane-create"), form, follow=True)
    assert "Granted in the fast lane" in response.content.decode()
    assert_readable(response.content.decode())
    fast = FastLaneRequest.objects.get(status="granted")
    client.force_login(world.chair)
    review = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    assert "Granted in the fast lane since the last review" in review and f'id="fast-lane-{fast.pk}"' in review
    response = client.post(reverse("committee:fast-lane-revoke", args=[fast.pk]), {"reason": "Wait for Monday."})
    assert response.status_code == 302
    fast.refresh_from_db()
    assert fast.status == "revoked"
    review = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    assert "Revoked by the review" in review and "Wait for Monday." in review


def test_revoking_asks_the_decide_guard_a_recused_chair_is_kept_out_and_another_member_revokes(world, running_week):
    fast = _file(world, earliest_start=FIXED_NOW + timedelta(hours=5))
    ConflictDeclaration.objects.create(request=fast.request, member=world.chair, member_name="chair",
                                       declared_at=FIXED_NOW)
    with pytest.raises(PermissionDenied):
        fastlane.fast_lane_revoke(actor=world.chair, fast=fast, reason="Mine to revoke?")
    with pytest.raises(PermissionDenied):
        fastlane.fast_lane_revoke(actor=world.member_a, fast=fast, reason="Our own.")
    fastlane.fast_lane_revoke(actor=world.reviewer, fast=fast, reason="The chair is recused; the review revokes it.")
    fast.refresh_from_db()
    assert fast.status == "revoked" and fast.revoked_by_name
