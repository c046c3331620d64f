"""Helpers for the review tests: put requests in review and score them through the services."""

from __future__ import annotations

from typing import Any

from committee import services
from committee.models import GpuRequest, ReviewCycle
from tests.factories import file_request

CRITERIA = ("business_impact", "feasibility", "urgency")


def close(world: Any) -> ReviewCycle:
    world.cycle = services.cycle_close_intake(cycle=world.cycle, actor=world.chair)
    return world.cycle


def score(member: Any, gpu_request: GpuRequest, impact: int, feasibility: int, urgency: int) -> None:
    for criterion, value in zip(CRITERIA, (impact, feasibility, urgency), strict=True):
        services.score_record(actor=member, gpu_request=gpu_request, criterion=criterion, value=value)


def two_requests_in_review(world: Any) -> tuple[GpuRequest, GpuRequest]:
    """Team A's a100 request and team B's h100 request, submitted and in review, nobody scored yet."""
    a = file_request(world, title="Ranker retrain")
    b = file_request(world, team=world.team_b, pool=world.h100, title="Vision model", gpu_count=8, min_gpu_count=4)
    close(world)
    return a, b


def decide(world: Any, gpu_request: GpuRequest, outcome: str = "grant", **extra: Any) -> Any:
    return services.request_decide(
        actor=world.chair, gpu_request=gpu_request, outcome=outcome, rationale=extra.pop("rationale", "Worth it."),
        **extra,
    )


def bulk_teams(count: int) -> list[Any]:
    from allocations.models import Team

    return Team.objects.bulk_create(
        [Team(name=f"Bulk team {i:03d}", slug=f"bulk-{i:03d}", fair_share_weight=1 + i % 3) for i in range(count)]
    )


def bulk_evidence(rows: list[GpuRequest]) -> None:
    """The same evidence for every request, in three queries: last week's usage, a forecast, an alternative."""
    from decimal import Decimal

    from committee.models import Alternative, ImpactForecast, UsageReport

    UsageReport.objects.bulk_create(
        UsageReport(request=r, gpu_hours_granted=Decimal(100), gpu_hours_used=Decimal(80),
                    mean_utilization_pct=Decimal(80)) for r in rows
    )
    ImpactForecast.objects.bulk_create(
        ImpactForecast(request=r, kind="revenue", estimated_value=Decimal(1000), value_unit="USD/week",
                       confidence="medium", narrative="More revenue.") for r in rows
    )
    Alternative.objects.bulk_create(
        Alternative(request=r, description="Distilled", gpu_hours=100, feasible=True) for r in rows
    )


def bulk_requests(world: Any, teams: list[Any], *, scored_by: tuple[Any, ...] = ()) -> list[GpuRequest]:
    """Two submitted requests per team (one per pool) with full evidence, scores and some decisions, in bulk."""
    from datetime import timedelta

    from django.utils import timezone

    from committee.models import Decision, RequestStatus, Score

    start = world.cycle.starts_at + timedelta(hours=8)
    now = timezone.now()
    rows = GpuRequest.objects.bulk_create(
        [
            GpuRequest(
                team=team, cycle=world.cycle, pool=pool, title=f"{team.name} on {pool.slug}", gpu_count=8,
                min_gpu_count=4, duration_hours=24 + 6 * (index % 7), earliest_start=start,
                latest_end=start + timedelta(hours=96), deadline=start + timedelta(days=index % 30),
                baseline_gpu_hours=400 if index % 3 == 0 else None, status=RequestStatus.SUBMITTED,
                created_by=world.lead_a, submitted_by=world.lead_a, submitted_at=now - timedelta(minutes=index),
            )
            for index, (team, pool) in enumerate((t, p) for t in teams for p in (world.a100, world.h100))
        ]
    )
    bulk_evidence(rows)
    Score.objects.bulk_create(
        Score(request=r, member=member, member_name=member.get_full_name(), criterion=criterion,
              value=(r.pk + len(criterion)) % 11)
        for r in rows for member in scored_by for criterion in CRITERIA
    )
    Decision.objects.bulk_create(
        Decision(request=r, cycle=world.cycle, outcome="reject", requested_gpu_count=r.gpu_count,
                 rationale="Not this week.", decided_by=world.chair, decided_by_name="Chair", team_name=r.team.name,
                 request_title=r.title, cycle_week=world.cycle.week)
        for r in rows[::2]
    )
    return rows
