"""Helpers for the tests of corrections and appeals: a finalized week, published at a known instant."""

from __future__ import annotations

from typing import Any

from committee import services
from committee.models import GpuRequest
from reports.models import Page, PageRevision
from tests.committee.reviewing import close, decide, score
from tests.conftest import committed
from tests.factories import file_request


def finalize_week(world: Any) -> tuple[GpuRequest, GpuRequest, GpuRequest]:
    """Team A's 16-GPU a100 request granted (ranked first); team B's a100 request partly granted (8 of 24);
    team B's h100 request deferred. The week is finalized, not published."""
    first = file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    second = file_request(world, team=world.team_b, title="Vision model", gpu_count=24, min_gpu_count=8)
    third = file_request(world, team=world.team_b, pool=world.h100, title="Speech", gpu_count=8, min_gpu_count=4)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, first, 9, 8, 9)
        score(member, second, 6, 6, 5)
        score(member, third, 3, 3, 3)
    decide(world, first, rationale="Top of the ranking.")
    decide(world, second, outcome="partial", granted_gpu_count=8, rationale="Half now.")
    decide(world, third, outcome="defer", rationale="Next week.")
    world.cycle = committed(services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    return first, second, third


def publish(world: Any) -> Any:
    plan = committed(services.cycle_publish, actor=world.chair, cycle=world.cycle)
    world.cycle.refresh_from_db()
    return plan


def record_revisions(world: Any) -> list[PageRevision]:
    """The week's decision record, oldest revision first."""
    page = Page.objects.get(source_key=f"cycle:{world.cycle.week}")
    return list(page.revisions.order_by("number"))
