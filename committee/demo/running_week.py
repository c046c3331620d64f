"""The week in force: its plan published with what the Slurm sync reported, a grant measured idle (the elastic
evaluation flags it), an out-of-cycle emergency placed beside the plan, a fast-lane grant and a request refused the
fast lane, a release that fed the waitlist and an
extension approved."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from allocations import selectors as allocation_selectors
from allocations import services as allocation_services
from allocations.elastic import evaluate as elastic_evaluate
from allocations.elastic import services as elastic_services
from allocations.models import (
    AllocationPlan,
    AllocationWindow,
    GpuPool,
    SchedulerClient,
    Team,
    UsageRecord,
)
from committee import selectors as committee_selectors
from committee import weeks
from committee.models import (
    CycleStatus,
    EmergencyRequest,
    FastLaneRequest,
    GpuRequest,
    MembershipRole,
    RequestEvent,
    ReviewCycle,
    TeamMembership,
)
from committee.selectors import PlacementStatus
from committee.services import cycle_publish, grant_extension_file, window_release
from committee.services.emergency import emergency_request_decide, emergency_request_file
from committee.services.fastlane import fast_lane_request_file
from core.errors import StateConflict
from governed.models import ChangeSource
from governed.services import policy_change_record


def seed_published_week(*, now: datetime) -> None:
    """Publish the current week once it is finalized, so its windows are active now."""
    cycle = ReviewCycle.objects.filter(week=weeks.current_week_label(now)).first()
    if cycle is None or cycle.status != CycleStatus.FINALIZED:
        return
    chair = get_user_model().objects.get(username="chair")
    plan = cycle_publish(actor=chair, cycle=cycle)
    # What the Slurm sync on atlas reported after its first pass: all held but one node short.
    sync = SchedulerClient.objects.get(cluster__slug="atlas", name="demo-sync")
    statuses = []
    for index, window in enumerate(plan.windows.filter(cluster=sync.cluster).select_related("pool").order_by("id")):
        nodes = -(-window.gpu_count // window.pool.gpus_per_node)
        short = index == 1 and nodes > 1
        statuses.append({
            "window": window.pk,
            "state": "short" if short else "in_sync",
            "nodes_requested": nodes,
            "nodes_reserved": nodes - 1 if short else nodes,
            "message": f"short by 1 node: gpu07 is drained (reserved {nodes - 1} of {nodes})" if short
            else f"reserved {window.gpu_count} GPUs on {nodes} nodes ({nodes * window.pool.gpus_per_node} GPUs)",
        })
    allocation_services.sync_status_record(client=sync, statuses=statuses)


IDLE_DEMO_UTILIZATION = [Decimal("12.0"), Decimal("8.0"), Decimal("15.0"), Decimal("10.0")]


def seed_idle_grant(*, now: datetime) -> None:
    """A granted window on atlas that the demo scheduler measured idle for the last four hours, and the elastic
    evaluation that flags it and offers its unused GPUs (docs/elastic.md). Once: nothing when the demo has run."""
    if UsageRecord.objects.filter(idempotency_key__startswith="demo-idle:").exists():
        return
    span_end = elastic_evaluate.span_end_of(now)
    span_start = span_end - timedelta(hours=len(IDLE_DEMO_UTILIZATION))
    window = (
        AllocationWindow.objects.filter(
            cluster__slug="atlas", tier__in=elastic_evaluate.GRANTED_TIERS, start__lte=span_start, end__gt=now,
            withdrawal__isnull=True,
        )
        .select_related("pool", "team")
        .order_by("id")
        .first()
    )
    if window is None:
        return  # no grant has been running long enough at this moment of the week
    for hour, utilization in enumerate(IDLE_DEMO_UTILIZATION):
        start = span_start + timedelta(hours=hour)
        UsageRecord.objects.create(
            pool=window.pool, team=window.team, window=window, period_start=start,
            period_end=start + timedelta(hours=1),
            gpu_hours_used=(window.gpu_count * utilization / 100).quantize(Decimal("0.01")),
            mean_utilization_pct=utilization, mean_queue_wait_minutes=Decimal(0),
            idempotency_key=f"demo-idle:{window.pk}:{start:%Y-%m-%dT%H}", reported_by="demo-sync",
        )
    elastic_services.elastic_evaluate(now=now)


EMERGENCY_TITLE = "Hotfix: fraud-detection model for a live attack"
EMERGENCY_JUSTIFICATION = (
    "A card-testing attack started this morning; the current model misses the new pattern. A retrain on "
    "today's labels needs 8 GPUs for 6 hours, now: every hour costs about USD 40,000 in chargebacks."
)


def seed_emergency(*, pools: dict[str, GpuPool], now: datetime) -> None:
    """An out-of-cycle emergency in the running week: Ads files it, the product lead and the chair approve
    (the chair wakes the cold standby), and it is placed at once as the week's next plan version.
    Idempotent: seeded once."""
    if EmergencyRequest.objects.filter(request__title=EMERGENCY_TITLE).exists():
        return
    current = ReviewCycle.objects.filter(week=weeks.current_week_label(now), status=CycleStatus.PUBLISHED).first()
    if current is None or (current.ends_at - now) < timedelta(hours=8):
        return  # nothing published to place it beside, or too little of the week left for the demo
    users = get_user_model().objects
    emergency = emergency_request_file(
        actor=users.get(username="ads-lead"), team=Team.objects.get(slug="ads"), pool=pools["a100"],
        title=EMERGENCY_TITLE, gpu_count=8, min_gpu_count=4, duration_hours=6,
        justification=EMERGENCY_JUSTIFICATION, now=now,
    )
    emergency_request_decide(actor=users.get(username="product"), emergency=emergency, approve=True,
                             note="Chargebacks outweigh a day of anyone's training.", now=now)
    emergency_request_decide(actor=users.get(username="chair"), emergency=emergency, approve=True,
                             use_standby=True, note="Approved; use the standby if the burst reserve is short.",
                             now=now)


FAST_LANE_TITLE = "Evaluate the new ranker on last week's traffic"
FAST_LANE_REFUSED_TITLE = "Re-embed the whole product catalogue"
FAST_LANE_REASON = "A fast lane for small requests: a tenth of each pool, granted on submission (issue 30)."


def seed_fast_lane(*, pools: dict[str, GpuPool], now: datetime) -> None:
    """The fast lane (docs/fast-lane.md): from the running week each pool holds a tenth of its GPUs back for it; a
    four-GPU, one-day evaluation is granted on submission, and a bigger request is told it is above the ceiling and
    goes to the next review. Idempotent: seeded once, and only with a day of the week left."""
    if FastLaneRequest.objects.filter(request__title=FAST_LANE_TITLE).exists():
        return
    current = ReviewCycle.objects.filter(week=weeks.current_week_label(now), status=CycleStatus.PUBLISHED).first()
    if current is None or (current.ends_at - now) < timedelta(hours=25):
        return
    policy_change_record(
        actor=None, changes={f"pool.{pool.key}.fast_lane_pct": 10 for pool in pools.values()},
        effective_week=current.week, reason=FAST_LANE_REASON, source=ChangeSource.COMMAND,
        exempt_reason="The demo's fast lane: GPUs no window of this week holds yet.", author_name="Docket demo",
    )
    users = get_user_model().objects
    # Vision is below its fair share. The refused one is Ads': it goes to the next review, or is withdrawn when Ads
    # has a request on that pool there already (Search's pools at the next review stay free: the README's first steps
    # copy last week's request there).
    fast_lane_request_file(actor=users.get(username="vision-lead"), team=Team.objects.get(slug="vision"),
                           pool=pools["a100"], title=FAST_LANE_TITLE, gpu_count=4, duration_hours=24, now=now,
                           justification="Offline evaluation before Monday's review.")
    fast_lane_request_file(actor=users.get(username="ads-lead"), team=Team.objects.get(slug="ads"),
                           pool=pools["h100"], title=FAST_LANE_REFUSED_TITLE, gpu_count=8, duration_hours=48,
                           now=now)


RELEASE_REASON = "The sweep converged early: half the GPUs are enough for the last runs."
EXTENSION_JUSTIFICATION = "The final evaluation needs a few more hours on the same GPUs; the checkpoint is ready."


def _placed_gpu_hours(plan: AllocationPlan) -> dict[int, float]:
    placed: dict[int, float] = {}
    for window in allocation_selectors.plan_window_list(plan=plan):
        if window.request_ref is not None:
            placed[window.request_ref] = placed.get(window.request_ref, 0) + window.gpu_hours
    return placed


def seed_release(*, now: datetime) -> None:
    """A team's lead gives half of a running or coming window back, and the week's waitlist (a grant the plan
    shortened or could not place) gets the GPUs in the next plan version (docs/release.md). The demo is seeded at
    any instant of the week: it tries the week's windows in turn and keeps the first release that feeds the waitlist,
    else none. Once: nothing when the demo has a release."""
    cycle = ReviewCycle.objects.filter(week=weeks.current_week_label(now), status=CycleStatus.PUBLISHED).first()
    if cycle is None or RequestEvent.objects.filter(request__cycle=cycle, action="released").exists():
        return
    plan = allocation_selectors.plan_for_week(week=cycle.week)
    if plan is None:
        return
    before = _placed_gpu_hours(plan)
    requests = {r.pk: r for r in GpuRequest.objects.filter(cycle=cycle).select_related("team")}
    outcomes = committee_selectors.request_outcome_map(requests=list(requests.values()))
    windows = list(allocation_selectors.plan_window_list(plan=plan))
    # The waitlist that can still grow: grants shortened or not placed whose window has not started (a running job
    # does not move), each with the span it may be placed in from now on.
    waiting: dict[int, tuple[int, datetime, datetime]] = {}
    for ref, outcome in outcomes.items():
        if outcome.status not in (PlacementStatus.SHORTENED, PlacementStatus.NOT_PLACED):
            continue
        own = [w for w in windows if w.request_ref == ref]
        if any(w.start <= now for w in own):
            continue
        waiting[ref] = (requests[ref].pool_id, max(now, requests[ref].earliest_start), requests[ref].latest_end)
    candidates = [
        w for w in windows
        if w.request_ref in requests and w.request_ref not in waiting and w.tier != "preemptible" and w.gpu_count >= 2
        and w.end - max(now, w.start) >= timedelta(hours=4)
        and any(pool == w.pool_id and w.start < end and start < w.end for pool, start, end in waiting.values())
    ]
    for window in candidates[:6]:
        gpu_request = requests[window.request_ref or 0]
        lead = TeamMembership.objects.filter(team=gpu_request.team, role=MembershipRole.LEAD).select_related(
            "user").first()
        if lead is None:
            continue
        try:
            with transaction.atomic():
                release = window_release(actor=lead.user, gpu_request=gpu_request, gpu_count=window.gpu_count // 2,
                                         reason=RELEASE_REASON, now=now)
                after = _placed_gpu_hours(release.plan)
                if any(after.get(ref, 0) > hours for ref, hours in before.items() if ref != gpu_request.pk) or any(
                        ref not in before for ref in after):
                    return  # the waitlist got GPU-hours: keep it
                raise _NotFed
        except (_NotFed, ValidationError, StateConflict):
            continue


class _NotFed(Exception):
    """The release fed nobody: the demo rolls it back and tries another window."""


def seed_extension(*, now: datetime) -> None:
    """A team asks for a few more hours of a running window and the product lead and the chair approve it from the
    burst reserve (docs/release.md, "More hours"). The first running window with room after it; none at an instant
    when no window runs. Once: nothing when the demo has an extension."""
    cycle = ReviewCycle.objects.filter(week=weeks.current_week_label(now), status=CycleStatus.PUBLISHED).first()
    if cycle is None or EmergencyRequest.objects.filter(extends__cycle=cycle).exists():
        return
    plan = allocation_selectors.plan_for_week(week=cycle.week)
    if plan is None:
        return
    users = get_user_model().objects
    running = [w for w in allocation_selectors.plan_window_list(plan=plan)
               if w.request_ref is not None and w.start <= now < w.end and cycle.ends_at - w.end >= timedelta(hours=4)]
    for window in running:
        ref = window.request_ref
        gpu_request = GpuRequest.objects.filter(pk=ref, cycle=cycle).select_related("team").first() if ref else None
        member = TeamMembership.objects.filter(team_id=window.team_id).select_related("user").first()
        if gpu_request is None or member is None or gpu_request.team.slug == "research":  # the tech lead's team
            continue
        try:
            with transaction.atomic():
                emergency = grant_extension_file(actor=member.user, gpu_request=gpu_request, hours=4,
                                                 justification=EXTENSION_JUSTIFICATION, now=now)
                emergency_request_decide(actor=users.get(username="product"), emergency=emergency, approve=True,
                                         note="A few hours from the reserve; the run is nearly done.", now=now)
                emergency_request_decide(actor=users.get(username="chair"), emergency=emergency, approve=True,
                                         note="Approved from the burst reserve.", now=now)
            return
        except (ValidationError, StateConflict, PermissionDenied):
            continue
