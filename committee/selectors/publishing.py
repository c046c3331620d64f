"""What the engine is given when a week is published: demands and the windows already running."""

from __future__ import annotations

from datetime import datetime

from allocations import engine
from allocations import selectors as allocation_selectors
from committee.models import (
    Decision,
    DecisionOutcome,
    GpuRequest,
    ReviewCycle,
)
from committee.selectors.review import decision_list_granted


def cycle_demands(*, cycle: ReviewCycle) -> list[tuple[engine.Demand, Decision]]:
    """The engine's demands for a cycle, highest priority first, each with its decision.

    Grants ask for the GPUs requested, partial grants and alternatives granted for the GPUs
    granted (their minimum capped at that count); deferrals and rejections ask for nothing. Order: the priority rank
    frozen at finalize, then unranked decisions by id (a decision taken on a request that
    missed quorum still gets placed, after every ranked one).
    """
    decisions = sorted(
        decision_list_granted(cycle=cycle),
        key=lambda d: (d.priority_rank is None, d.priority_rank or 0, d.pk),
    )
    demands = []
    for decision in decisions:
        request = decision.request
        if decision.outcome in (DecisionOutcome.PARTIAL, DecisionOutcome.ALTERNATIVE):
            # An alternative granted: its GPU-hours over the request's duration (alternative_gpus).
            count = decision.granted_gpu_count or 0
        else:
            count = decision.requested_gpu_count
        demands.append(
            (
                engine.Demand(
                    ref=request.pk,
                    pool=request.pool.key,
                    gpu_count=count,
                    min_gpu_count=min(request.min_gpu_count, count),
                    duration_hours=request.duration_hours,
                    earliest_start=request.earliest_start,
                    latest_end=request.latest_end,
                    preemptible_ok=request.preemptible_ok,
                ),
                decision,
            )
        )
    return demands


def started_windows(*, week: str, now: datetime) -> list[engine.EngineWindow]:
    """The current plan's windows of `week` that have started by `now`: a correction keeps them.

    A running job's reservation must not move under it, so these go to the engine as fixed
    windows and come out of the new version unchanged (same row, same id). An approved
    emergency's window is kept too, started or not: the engine would not place it again.
    """
    plan = allocation_selectors.plan_for_week(week=week)
    if plan is None:
        return []
    windows = list(allocation_selectors.plan_window_list(plan=plan).select_related("pool__cluster"))
    refs = [w.request_ref for w in windows]
    emergencies = set(GpuRequest.objects.filter(pk__in=refs, is_emergency=True).values_list("pk", flat=True))
    return [
        engine.EngineWindow(
            ref=window.request_ref,
            pool=window.pool.key,
            gpu_count=window.gpu_count,
            start=window.start,
            end=window.end,
            tier=window.tier,
        )
        for window in windows
        if window.request_ref is not None and (window.start <= now or window.request_ref in emergencies)
    ]
