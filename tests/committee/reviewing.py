"""Helpers for the review tests: put requests in review and score them through the services."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from committee import services
from committee.models import GpuRequest, ReviewCycle
from tests.factories import file_request

CRITERIA = ("business_impact", "feasibility", "urgency")


def close(world: Any) -> ReviewCycle:
    world.cycle = services.cycle_close_intake(cycle=world.cycle, actor=world.chair)
    return world.cycle


def score(member: Any, gpu_request: GpuRequest, impact: int, feasibility: int, urgency: int) -> None:
    services.scores_record(actor=member, gpu_request=gpu_request,
                           values=dict(zip(CRITERIA, (impact, feasibility, urgency), strict=True)))


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
    services.cycle_ranking_changed(cycle=world.cycle)  # written past the services: move the ranking's version too
    return rows


def team_with_lead(world: Any, name: str) -> tuple[Any, Any]:
    from django.contrib.auth import get_user_model

    from allocations.models import Team
    from committee.models import MembershipRole, TeamMembership

    team = Team.objects.create(name=name, slug=name.lower().replace(" ", "-"), fair_share_weight=1)
    lead = get_user_model().objects.create_user(username=f"lead-{team.slug}", password="pw")
    TeamMembership.objects.create(user=lead, team=team, role=MembershipRole.LEAD)
    return team, lead


def contended(world: Any) -> dict[str, GpuRequest]:
    """Four grants on atlas/a100 (64 GPUs: 46 standard, 12 burst, 6 standby), all pinned to the same 48 hours.

    In ranking order: "Ranker" 32 GPUs fits; "Search" 24 (minimum 8) gets the 14 standard GPUs
    left; "Vision" 16 (minimum 8, preemptible is fine) gets the 12 of the burst reserve, as
    preemptible; "Speech" 8 (minimum 4) gets nothing. Strict priority leaves no other answer.
    """
    start = world.cycle.starts_at + timedelta(hours=8)
    window = {"earliest_start": start, "latest_end": start + timedelta(hours=48), "duration_hours": 48}
    team_c, lead_c = team_with_lead(world, "Team C")
    team_d, lead_d = team_with_lead(world, "Team D")
    requests = {
        "ranker": file_request(world, title="Ranker", gpu_count=32, min_gpu_count=16, **window),
        "search": file_request(world, team=world.team_b, title="Search", gpu_count=24, min_gpu_count=8, **window),
        "vision": file_request(world, team=team_c, actor=lead_c, title="Vision", gpu_count=16, min_gpu_count=8,
                               preemptible_ok=True, **window),
        "speech": file_request(world, team=team_d, actor=lead_d, title="Speech", gpu_count=8, min_gpu_count=4,
                               **window),
    }
    close(world)
    for impact, gpu_request in zip((10, 8, 6, 4), requests.values(), strict=True):
        for member in (world.chair, world.reviewer):
            score(member, gpu_request, impact, 5, 5)
    for gpu_request in requests.values():
        decide(world, gpu_request)
    return requests
