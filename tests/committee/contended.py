"""A contended week, published: one grant placed as decided, one shortened, one not placed.

atlas/a100 has 46 standard GPUs (64 less the burst and standby reserves). Team A's 40-GPU grant,
ranked first, takes 40 of them for its whole rigid window; team B's 16-GPU grant (at least 4) in
the same hours gets the 6 left: shortened. Team A's 24-GPU grant on orion/h100 (at least 24) is
more than that pool's standard GPUs: not placed. Team B's h100 request is deferred.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from committee import services
from committee.models import GpuRequest
from tests.committee.reviewing import close, decide, score
from tests.conftest import committed
from tests.factories import file_request


@dataclass(frozen=True)
class ContendedWeek:
    placed: GpuRequest  # Team A, a100, 40 GPUs: placed as decided
    shortened: GpuRequest  # Team B, a100, 16 GPUs decided: placed 6
    unplaced: GpuRequest  # Team A, h100, 24 GPUs decided: not placed
    deferred: GpuRequest  # Team B, h100: deferred


def contended_week(world: Any, *, publish: bool = True) -> ContendedWeek:
    """File, score, decide and finalize the week (and publish it unless told not to), through the services."""
    start = world.cycle.starts_at + timedelta(hours=24)
    rigid = {"earliest_start": start, "latest_end": start + timedelta(hours=48), "duration_hours": 48}
    placed = file_request(world, title="Ranker retrain", gpu_count=40, min_gpu_count=40, **rigid)
    shortened = file_request(world, team=world.team_b, title="Vision model", gpu_count=16, min_gpu_count=4, **rigid)
    unplaced = file_request(world, pool=world.h100, title="Speech model", gpu_count=24, min_gpu_count=24, **rigid)
    deferred = file_request(world, team=world.team_b, pool=world.h100, title="Search index", gpu_count=8,
                            min_gpu_count=4, **rigid)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, placed, 9, 9, 9)
        score(member, shortened, 7, 7, 7)
        score(member, unplaced, 6, 6, 6)
        score(member, deferred, 3, 3, 3)
    decide(world, placed, rationale="Top of the ranking.")
    decide(world, shortened, rationale="Second in the ranking.")
    decide(world, unplaced, rationale="Worth a try.")
    decide(world, deferred, outcome="defer", rationale="Next week.")
    world.cycle = committed(services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    if publish:
        committed(services.cycle_publish, actor=world.chair, cycle=world.cycle)
        world.cycle.refresh_from_db()
    return ContendedWeek(
        *(GpuRequest.objects.get(pk=r.pk) for r in (placed, shortened, unplaced, deferred))
    )
