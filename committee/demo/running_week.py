"""The week in force: its plan published with what the Slurm sync reported, a grant measured idle (the elastic
evaluation flags it) and an out-of-cycle emergency placed beside the plan."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model

from allocations import services as allocation_services
from allocations.elastic import evaluate as elastic_evaluate
from allocations.elastic import services as elastic_services
from allocations.models import (
    AllocationWindow,
    GpuPool,
    SchedulerClient,
    Team,
    UsageRecord,
)
from committee import weeks
from committee.models import (
    CycleStatus,
    EmergencyRequest,
    ReviewCycle,
)
from committee.services import cycle_publish
from committee.services.emergency import emergency_request_decide, emergency_request_file


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
