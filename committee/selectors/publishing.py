"""What the engine is given when a week is published: demands and the windows already running."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q, prefetch_related_objects

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.commitments import commitment_demand, commitment_order, demands_with_commitments
from allocations.models import GpuPool
from allocations.selectors import Continuation, committed_week
from committee.models import (
    PLACING_OUTCOMES,
    CycleStatus,
    Decision,
    DecisionOutcome,
    GpuRequest,
    ReviewCycle,
)
from committee.selectors.requests import pool_options_prefetch
from committee.selectors.review import decision_list_granted
from committee.selectors.runs import week_continuations


def decision_demand(*, decision: Decision) -> engine.Demand:
    """The engine's demand for one grant or partial grant: the review's preview and publishing both build it here.

    A grant asks for the GPUs requested; a partial grant for the GPUs granted, and a grant of the
    cheaper alternative for its GPU-hours over the request's duration (`granted_gpu_count`, see
    docs/alternatives.md); the minimum is capped at that count. Over the request's duration and
    window. Uses `decision.request` (select it with the decision).
    A grant of several weeks of a run (`Decision.weeks_granted`) places its first week's window at the end of its
    window (it continues into the next week without a gap, docs/multi-week-runs.md), never preemptible.
    """
    request = decision.request
    if decision.outcome in (DecisionOutcome.PARTIAL, DecisionOutcome.ALTERNATIVE):
        count = decision.granted_gpu_count or 0
    else:
        count = decision.requested_gpu_count
    earliest_start, preemptible_ok = request.earliest_start, request.preemptible_ok
    alternatives: tuple[engine.PoolOption, ...] = ()
    if decision.weeks_granted > 1:
        earliest_start = max(earliest_start, request.latest_end - timedelta(hours=request.duration_hours))
        preemptible_ok = False
    elif count > 0:
        alternatives = pool_options_demanded(request=request, count=count)
    return engine.Demand(
        ref=request.pk,
        pool=request.pool.key,
        gpu_count=count,
        min_gpu_count=min(request.min_gpu_count, count),
        duration_hours=request.duration_hours,
        earliest_start=earliest_start,
        latest_end=request.latest_end,
        preemptible_ok=preemptible_ok,
        alternatives=alternatives,
    )


def pool_options_demanded(*, request: GpuRequest, count: int) -> tuple[engine.PoolOption, ...]:
    """The other pools a grant of `count` GPUs may go to (docs/engine.md, "Either pool"), each converted as the
    team asked and scaled as the grant is (a partial grant of half the GPUs asks for half there, rounded up). Reads
    `request.pool_options` (prefetch them with `pool_options_prefetch` for many). A run over several weeks stays
    on its own pool: its later weeks are committed there."""
    asked = request.gpu_count
    options = []
    for option in request.pool_options.all():
        gpus = max(1, min(option.gpu_count, -(-option.gpu_count * count // asked)))
        minimum = max(1, min(gpus, -(-option.min_gpu_count * count // asked)))
        options.append(engine.PoolOption(pool=option.pool.key, gpu_count=gpus, min_gpu_count=minimum,
                                         duration_hours=option.duration_hours))
    return tuple(options)


def demand_priority(*, rank: int | None, decision: Decision) -> tuple[bool, int, int]:
    """The order the engine is given grants in: by rank, then unranked decisions by id.

    Publishing passes the rank frozen at finalize; the review's preview the live rank, which
    finalize freezes, so both order the same decisions the same way.
    """
    return (rank is None, rank or 0, decision.pk)


def cycle_demands(
    *, cycle: ReviewCycle, pools: Mapping[str, GpuPool] | None = None
) -> list[tuple[engine.Demand, Decision]]:
    """The engine's demands for a cycle, highest priority first, each with its decision (its request and team
    selected, and its request's pool: the one of `pools`, the engine's, when given).

    Grants and partial grants (`decision_demand`); deferrals and rejections ask for nothing.
    Order (`demand_priority`): the priority rank frozen at finalize, then unranked decisions by
    id (a decision taken on a request that missed quorum still gets placed, after every ranked one).
    """
    granted = decision_list_granted(cycle=cycle).prefetch_related(pool_options_prefetch())
    if pools:
        granted = granted.select_related(None).select_related("request__team")
    decisions = sorted(granted, key=lambda d: demand_priority(rank=d.priority_rank, decision=d))
    if pools:
        by_id = {pool.pk: pool for pool in pools.values()}
        for decision in decisions:
            request = decision.request
            if request.pool_id in by_id:  # the week's pools are all of them: a request's is among them
                request.pool = by_id[request.pool_id]
    return [(decision_demand(decision=decision), decision) for decision in decisions]


def engine_pools(*, week: str) -> dict[str, GpuPool]:
    """Every pool by key (`GpuPool.key`), with its cluster and the reserves in force in `week` (governed): what the
    engine places on. Two queries."""
    pools = allocation_selectors.pool_reserves_for_week(week=week, pools=GpuPool.objects.select_related("cluster"))
    return {pool.key: pool for pool in pools}


def cycle_allocate(
    *,
    cycle: ReviewCycle,
    pools: dict[str, GpuPool],
    demands: Sequence[engine.Demand],
    fixed: Sequence[engine.EngineWindow] = (),
) -> engine.AllocationResult:
    """Run the engine on a cycle's week: the one call the review's preview and publishing share.

    Pure given its arguments (no query): every pool's capacity over the cycle's hours, the
    demands in the order given (`cycle_demands` or the preview's live ranking), `fixed` the
    windows a correction keeps.
    """
    return engine.allocate(
        week_start=cycle.starts_at,
        pools=[allocation_selectors.pool_capacity(pool=pool) for _key, pool in sorted(pools.items())],
        demands=list(demands),
        hours=cycle.hours,
        fixed=list(fixed),
    )


@dataclass(frozen=True)
class PublishPlacement:
    """What publishing a cycle now would give the engine and get back (nothing is written).

    `demands` are every grant with its decision, in priority order; `started` the current plan's
    windows that have started (a correction keeps them; empty for a first publish); `result` the
    engine's answer for the other demands, with `started` among its windows. `continuations` are the week's
    commitments (later weeks of runs begun earlier) with their evidence: those that continue were placed first.
    """

    pools: dict[str, GpuPool]
    demands: list[tuple[engine.Demand, Decision]]
    started: list[engine.EngineWindow]
    result: engine.AllocationResult
    left: frozenset[int] = frozenset()  # refs whose windows a correction left in place without their having started
    replaced: frozenset[int] = frozenset()  # refs whose windows a release gave in a new shape (`replace`)
    continuations: tuple[Continuation, ...] = ()

    @property
    def committed_refs(self) -> frozenset[int]:
        """The runs whose commitment this placement placed first."""
        return frozenset(c.commitment.request_ref for c in self.continuations if c.placed)


def cycle_publish_placement(
    *,
    cycle: ReviewCycle,
    now: datetime,
    decisions: Sequence[Decision] | None = None,
    keep: Collection[int] = (),
    replace: Mapping[int, Sequence[engine.EngineWindow]] | None = None,
) -> PublishPlacement:
    """The one placement of a week: what `cycle_publish` writes, what the chair confirms before publishing or
    correcting, and what the review's preview shows while the committee decides.

    `decisions` are the week's decisions in priority order (default: the cycle's, by the rank frozen at finalize,
    `cycle_demands`); the review's preview passes them in its live ranking, a correction's preview with the
    corrected decision in place. Every outcome in PLACING_OUTCOMES places; the others ask for nothing.
    A published cycle is a correction: the windows started by `now` stay fixed, and so do those of the
    requests in `keep` (a correction that leaves other teams' windows in place). A first publish
    finds a plan only when an emergency was placed in the week before it: its window stays too.
    `replace` gives requests' windows a new shape that stays fixed in place of their current ones, and those
    requests are not placed again (a team that gives GPUs back, committee/services/release.py); an empty list
    withdraws them.
    """
    pools = engine_pools(week=cycle.week)
    if decisions is None:
        demands = cycle_demands(cycle=cycle, pools=pools)
    else:
        granted = [d for d in decisions if d.outcome in PLACING_OUTCOMES]
        prefetch_related_objects(granted, pool_options_prefetch())
        demands = [(decision_demand(decision=d), d) for d in granted]
    replace = replace or {}
    started = [w for w in started_windows(week=cycle.week, now=now, keep=keep) if w.ref not in replace]
    started += [window for windows in replace.values() for window in windows]
    kept_refs = {window.ref for window in started} | set(replace)
    placing = [demand for demand, _decision in demands if demand.ref not in kept_refs]
    if cycle.status == CycleStatus.PUBLISHED:
        # A correction places what is not running yet from now on: a new window never starts in the past.
        placing = [
            dataclasses.replace(demand, earliest_start=max(demand.earliest_start, now)) for demand in placing
        ]
    # The later weeks of runs begun earlier go first, where they stand (docs/multi-week-runs.md); one that is
    # running already is among the started windows.
    continuations = tuple(week_continuations(week=cycle.week))
    committed = [
        committed_week(commitment=c.commitment) for c in continuations
        if c.placed and c.commitment.request_ref not in kept_refs
    ]
    placing = demands_with_commitments(commitments=committed, demands=placing)
    result = cycle_allocate(cycle=cycle, pools=pools, demands=placing, fixed=started)
    left = frozenset(w.ref for w in started if w.ref in keep and w.start > now)
    return PublishPlacement(pools=pools, demands=demands, started=started, result=result, left=left,
                            replaced=frozenset(replace), continuations=continuations)


def committed_demands(*, placement: PublishPlacement) -> list[tuple[engine.Demand, GpuRequest]]:
    """The commitments a placement placed first, each as the engine's demand with its run's request (of an earlier
    week; team and pool selected): what the preview and the publish confirmation list before the week's grants.
    One query."""
    placed = [c for c in placement.continuations if c.placed]
    runs = GpuRequest.objects.select_related("team", "pool__cluster").in_bulk(
        [c.commitment.request_ref for c in placed])
    return [
        (commitment_demand(committed_week(commitment=c.commitment)), runs[c.commitment.request_ref])
        for c in sorted(placed, key=lambda c: commitment_order(committed_week(commitment=c.commitment)))
        if c.commitment.request_ref in runs
    ]


def kept_explanations(
    started: Sequence[engine.EngineWindow], *, now: datetime | None = None, left: Collection[int] = (),
    fast_lane: Collection[int] | None = None,
) -> list[engine.Explanation]:
    """The explanation of each window a new plan version keeps: one that has started by `now`, an approved
    emergency's (kept started or not; `started` says which), or one a correction `left` in place. Without `now`,
    every window counts as started. A fast-lane grant's says so (the refs in `fast_lane`, else read: one query;
    docs/fast-lane.md)."""
    if fast_lane is None:
        fast_lane = set(GpuRequest.objects.filter(pk__in=[w.ref for w in started], is_fast_lane=True)
                        .values_list("pk", flat=True)) if started else set()
    return [
        engine.Explanation(
            ref=window.ref,
            placed=True,
            shortened=False,
            reasons=(
                engine.Reason(
                    "kept",
                    {
                        "start": engine.instant_param(window.start),
                        "gpu_count": window.gpu_count,
                        "started": now is None or window.start <= now,
                        **({"left": True} if window.ref in left and now is not None and window.start > now else {}),
                        **({"fast_lane": True} if window.ref in fast_lane else {}),
                    },
                ),
            ),
        )
        for window in started
    ]


def started_windows(*, week: str, now: datetime, keep: Collection[int] = ()) -> list[engine.EngineWindow]:
    """The current plan's windows of `week` that have started by `now`: a correction keeps them.

    A running job's reservation must not move under it, so these go to the engine as fixed
    windows and come out of the new version unchanged (same row, same id). An approved
    emergency's window is kept too, started or not: the engine would not place it again; so is a fast-lane grant's
    (docs/fast-lane.md).
    """
    plan = allocation_selectors.plan_for_week(week=week)
    if plan is None:
        return []
    windows = list(allocation_selectors.plan_window_list(plan=plan).select_related("pool__cluster"))
    refs = [w.request_ref for w in windows]
    emergencies = set(GpuRequest.objects.filter(Q(is_emergency=True) | Q(is_fast_lane=True), pk__in=refs)
                      .values_list("pk", flat=True))
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
        if window.request_ref is not None
        and (window.start <= now or window.request_ref in emergencies or window.request_ref in keep)
    ]
