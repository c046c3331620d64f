"""One way to change the running week's published plan between reviews: an emergency, a fast-lane grant, a revoke.

`running_week_of` reads the week's current plan (every window fixed: nothing published moves or shrinks) and its
pools with the reserves in force that week; the caller places its one window beside them with a pure function
(allocations.emergency, allocations.fastlane); `running_week_publish` publishes the week's next plan version with
that window added (or one not started taken out), the earlier explanations kept, in the caller's transaction.
See docs/emergencies.md and docs/fast-lane.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.utils.translation import gettext as _

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan, AllocationWindow, GpuPool, Team
from allocations.services import plan_publish
from committee.models import CycleStatus, GpuRequest, ReviewCycle
from committee.services.requests import actor_name
from core.errors import StateConflict


@dataclass(frozen=True)
class RunningWeek:
    """The running week's current plan as fixed windows, with its pools (reserves of the week) by key."""

    cycle: ReviewCycle
    current: AllocationPlan | None
    windows: list[AllocationWindow]
    fixed: list[engine.EngineWindow]
    pools: dict[str, GpuPool]

    def capacity(self, pool_key: str) -> engine.PoolCapacity:
        return allocation_selectors.pool_capacity(pool=self.pools[pool_key])


def running_cycle(*, now: datetime, refused: str) -> ReviewCycle:
    """The week running at `now`, or StateConflict(`refused`): what a grant between reviews is placed in."""
    cycle = ReviewCycle.objects.filter(starts_at__lte=now, ends_at__gt=now).first()
    if cycle is None:
        raise StateConflict(refused)
    return cycle


def next_review(*, now: datetime) -> ReviewCycle | None:
    """The next weekly review: the earliest cycle of a week still to come that is not yet finalized."""
    return (
        ReviewCycle.objects.filter(status__in=[CycleStatus.OPEN, CycleStatus.IN_REVIEW], starts_at__gt=now)
        .order_by("starts_at")
        .first()
    )


def running_week_of(*, cycle: ReviewCycle) -> RunningWeek:
    """`cycle`'s week as a change between reviews sees it. StateConflict when a window of its plan belongs to no
    request (nothing could carry it over)."""
    current = allocation_selectors.plan_for_week(week=cycle.week)
    windows = list(allocation_selectors.plan_window_list(plan=current).select_related("pool__cluster", "team")) \
        if current else []
    if any(w.request_ref is None for w in windows):
        raise StateConflict(_("Week %(week)s's plan has windows of no request; it cannot take an emergency.")
                            % {"week": cycle.week})
    fixed = [
        engine.EngineWindow(ref=w.request_ref, pool=w.pool.key, gpu_count=w.gpu_count, start=w.start, end=w.end,
                            tier=w.tier)
        for w in windows
        if w.request_ref is not None
    ]
    pools = {pool.key: pool for pool in allocation_selectors.pool_reserves_for_week(
        week=cycle.week, pools=GpuPool.objects.select_related("cluster"))}
    return RunningWeek(cycle=cycle, current=current, windows=windows, fixed=fixed, pools=pools)


def _explanation_of(row: Any) -> engine.Explanation:
    return engine.Explanation(
        ref=row.request_ref,
        placed=row.placed,
        shortened=row.shortened,
        reasons=tuple(engine.Reason(r["code"], r.get("params") or {}) for r in row.reasons),
    )


def running_week_publish(
    *,
    week: RunningWeek,
    actor: User,
    source_ref: str,
    note_text: dict[str, Any],
    gpu_request: GpuRequest,
    explanation: engine.Explanation,
    window: engine.EngineWindow | None = None,
    remove: bool = False,
    standby_gpus: Mapping[int, int] | None = None,
) -> AllocationPlan:
    """Publish the running week's next plan version: every window of `week` carried over with its id, plus `window`
    (placed for `gpu_request`), or without `gpu_request`'s window when `remove`; the earlier explanations kept and
    `gpu_request`'s replaced by `explanation`. In the caller's transaction (allocations.services.plan_publish)."""
    cycle = week.cycle
    fixed = [w for w in week.fixed if not (remove and w.ref == gpu_request.pk)]
    previous = allocation_selectors.plan_explanation_map(plan=week.current).values() if week.current else []
    explanations = [*(_explanation_of(row) for row in previous if row.request_ref != gpu_request.pk), explanation]
    teams: dict[int, Team] = {w.request_ref: w.team for w in week.windows if w.request_ref is not None}
    teams[gpu_request.pk] = gpu_request.team
    unplaced = [e.ref for e in explanations if e.ref not in teams]  # explained, no window: still a team
    teams.update({r.pk: r.team for r in GpuRequest.objects.filter(pk__in=unplaced).select_related("team")})
    return plan_publish(
        week=cycle.week,
        week_starts_at=cycle.starts_at,
        week_ends_at=cycle.ends_at,
        source_ref=source_ref,
        windows=[*fixed, *([window] if window is not None else [])],
        explanations=explanations,
        pools=week.pools,
        teams=teams,
        published_by_name=actor_name(actor),
        standby_gpus=dict(standby_gpus or {}),
        note_text=note_text,
    )
