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
    return services.decision_record(
        actor=world.chair, gpu_request=gpu_request, outcome=outcome, rationale=extra.pop("rationale", "Worth it."),
        **extra,
    )
