"""Data for the dashboard tests: two weeks of windows (one corrected), usage, requests, scores, a frozen fair share.

Everything is made row by row so the tests can sum it back up their own way.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

from allocations.models import UsageRecord
from committee import services, weeks
from committee.models import (
    CycleStatus,
    Decision,
    FairShareSnapshot,
    GpuRequest,
    RequestStatus,
    Score,
)
from tests.allocations.plans import W, publish

WEEK_1, WEEK_2 = "2026-W40", "2026-W41"


def _request(world: Any, cycle: Any, team: Any, pool: Any, title: str, gpus: int, hours: int, status: str) -> Any:
    start = cycle.starts_at
    return GpuRequest.objects.create(
        team=team, cycle=cycle, pool=pool, title=title, gpu_count=gpus, min_gpu_count=1, duration_hours=hours,
        earliest_start=start, latest_end=start + timedelta(hours=168), status=status, created_by=world.lead_a,
        submitted_at=None if status in (RequestStatus.DRAFT, RequestStatus.WITHDRAWN) else start - timedelta(days=3),
    )


def build(world: Any) -> SimpleNamespace:
    a100, h100, team_a, team_b = world.a100, world.h100, world.team_a, world.team_b
    publish([W(a100, team_a, 16, 0, 48, 1), W(h100, team_b, 8, 10, 34, 2), W(a100, team_b, 4, 0, 24, 3)],
            week=WEEK_1, refs_are_requests=False, explanations=[])
    publish([W(a100, team_a, 8, 0, 24, 1)], week=WEEK_2, refs_are_requests=False, explanations=[])
    # The correction withdraws the 24-hour window and places a 48-hour one: only the latter counts.
    publish([W(a100, team_a, 8, 0, 48, 1), W(h100, team_a, 2, 100, 130, 2)], week=WEEK_2, refs_are_requests=False,
            explanations=[], note="correction")

    # Usage: every 7 hours from ten days before week 1 to a few hours after week 2, alternating teams and pools.
    start = weeks.week_bounds(WEEK_1)[0] - timedelta(days=10, hours=5)  # some before week 1's intake closed
    end = weeks.week_bounds(WEEK_2)[1] + timedelta(hours=5)
    moment, index = start, 0
    while moment < end:
        team = (team_a, team_b)[index % 2]
        pool = (a100, h100, a100)[index % 3]
        UsageRecord.objects.create(
            pool=pool, team=team, period_start=moment, period_end=moment + timedelta(hours=7),
            gpu_hours_used=Decimal(3 + (index * 7) % 23) + Decimal("0.25"),
            mean_utilization_pct=Decimal(40 + (index * 13) % 60),
            mean_queue_wait_minutes=Decimal(index % 17) + Decimal("0.5"),
            idempotency_key=f"dash-{index}",
        )
        moment += timedelta(hours=7)
        index += 1
    # A report with no GPU-hours: it counts once in a queue wait only where no other report has GPU-hours.
    UsageRecord.objects.create(
        pool=h100, team=team_b, period_start=weeks.week_bounds(WEEK_2)[0] + timedelta(hours=1),
        period_end=weeks.week_bounds(WEEK_2)[0] + timedelta(hours=2), gpu_hours_used=0,
        mean_utilization_pct=0, mean_queue_wait_minutes=Decimal(60), idempotency_key="dash-idle",
    )

    cycle_1 = services.cycle_create(week=WEEK_1, status=CycleStatus.PUBLISHED)
    cycle_2 = services.cycle_create(week=WEEK_2, status=CycleStatus.PUBLISHED)
    requests = [
        _request(world, cycle_1, team_a, a100, "A big", 32, 50, RequestStatus.DECIDED),
        _request(world, cycle_1, team_b, a100, "B small", 4, 10, RequestStatus.DECIDED),
        _request(world, cycle_1, team_b, h100, "B h100", 8, 24, RequestStatus.SUBMITTED),
        _request(world, cycle_1, team_a, h100, "A draft", 16, 99, RequestStatus.DRAFT),
        _request(world, cycle_2, team_a, a100, "A again", 8, 48, RequestStatus.DECIDED),
        _request(world, cycle_2, team_a, h100, "A withdrawn", 30, 30, RequestStatus.WITHDRAWN),
        _request(world, cycle_2, team_b, h100, "B rejected", 16, 20, RequestStatus.DECIDED),
    ]
    Decision.objects.create(
        request=requests[6], cycle=cycle_2, outcome="reject", requested_gpu_count=16, rationale="No.",
        decided_by_name="Chair", team_name=team_b.name, request_title="B rejected", cycle_week=WEEK_2,
    )
    values = {("chair", 0): (7, 3, 9), ("reviewer", 0): (7, 4, 2), ("chair", 1): (2, 2, 10), ("finance", 4): (5, 5, 5),
              ("reviewer", 6): (0, 10, 7)}
    for (member, request_index), triple in values.items():
        for criterion, value in zip(("business_impact", "feasibility", "urgency"), triple, strict=True):
            user = getattr(world, member)
            Score.objects.create(request=requests[request_index], member=user, member_name=member,
                                 criterion=criterion, value=value)
    # Week 2's review froze its fair shares when intake closed.
    for team, used, weight in ((team_a, "300.00", 2), (team_b, "100.00", 1)):
        FairShareSnapshot.objects.create(
            cycle=cycle_2, team=team, team_name=team.name, weight=weight, total_weight=3,
            decayed_gpu_hours=Decimal(used), total_decayed_gpu_hours=Decimal("400.00"),
            as_of=cycle_2.intake_closes_at,
        )
    return SimpleNamespace(world=world, requests=requests, cycles=(cycle_1, cycle_2))
