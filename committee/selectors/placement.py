"""The placement preview of the weekly review: the engine's dry run on the decisions entered so far.

While the committee decides, the review page shows what each grant would get and each pool's
week, computed by publishing's own function (`cycle_publish_placement`): the same outcomes
(PLACING_OUTCOMES: grants, partial grants, alternatives granted), the same demands
(`decision_demand`), the same order (`demand_priority`, on the live rank that finalize freezes)
and the same engine call. Nothing is written. The preview reads the review's rows (already loaded by
`cycle_ranking` or `cycle_review`) and the pools: one query, whatever the number of requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.explanations import explanation_text, placement_text
from allocations.models import GpuPool
from allocations.selectors import Continuation
from committee.models import PLACING_OUTCOMES, CycleStatus, Decision, GpuRequest, ReviewCycle
from committee.selectors.publishing import (
    committed_demands,
    cycle_publish_placement,
    demand_priority,
    kept_explanations,
)
from committee.selectors.review import ReviewRow, cycle_ranking

# How a grant fares against its decision.
PLACED = "placed"  # as decided: every GPU, on standard or priority capacity
SHORTENED = "shortened"  # fewer GPUs than decided
DEMOTED = "demoted"  # every GPU, but preemptible (in the burst reserve or yielding to owners)
UNPLACED = "unplaced"  # nothing


@dataclass(frozen=True)
class RequestPlacement:
    """What one grant would get: its window (if any), in words, and why it differs from the decision."""

    request_id: int
    title: str
    team_name: str
    pool_key: str
    decided_gpu_count: int
    duration_hours: int
    window: engine.EngineWindow | None
    explanation: engine.Explanation
    status: str  # PLACED, SHORTENED, DEMOTED or UNPLACED
    text: str  # "16 A100, Wed 12:00–Fri 04:00, standard", or "" when not placed
    reason: str  # the engine's explanation in words
    # A later week of a run begun earlier, placed before the week's new requests (docs/multi-week-runs.md).
    continuation: Continuation | None = None
    own_pool_key: str = ""  # the request's own pool: another `pool_key` is one it named besides (either pool)

    @property
    def other_pool(self) -> bool:
        """Placed on another pool the request named, not its own ("placed on orion/h100: atlas/a100 was full")."""
        return bool(self.own_pool_key) and self.pool_key != self.own_pool_key

    @property
    def flagged(self) -> bool:
        """True when the grant cannot be honoured as decided."""
        return self.status != PLACED

    @property
    def decided_gpu_hours(self) -> int:
        return self.decided_gpu_count * self.duration_hours

    @property
    def placed_gpu_hours(self) -> int:
        if self.window is None:
            return 0
        return self.window.gpu_count * self.duration_hours


@dataclass(frozen=True)
class PoolPlacement:
    """One pool's week as the engine would place it: the lines it places against, and its windows."""

    pool: GpuPool
    standard_gpus: int  # priority and standard windows stay below this line
    burst_top_gpus: int  # preemptible windows may reach this line (standard + burst reserve)
    standby_gpus: int  # the cold standby, above the burst reserve, never placed
    placements: tuple[RequestPlacement, ...]  # this pool's grants in priority order

    @property
    def decided_gpu_hours(self) -> int:
        return sum(p.decided_gpu_hours for p in self.placements)

    @property
    def placed_gpu_hours(self) -> int:
        return sum(p.placed_gpu_hours for p in self.placements)

    @property
    def flagged(self) -> list[RequestPlacement]:
        return [p for p in self.placements if p.flagged]


@dataclass(frozen=True)
class CyclePlacement:
    """The week's placement preview: per grant and per pool, plus what finalize would defer by itself."""

    cycle: ReviewCycle
    by_request: dict[int, RequestPlacement]
    pools: list[PoolPlacement]
    deferred: list[ReviewRow] = field(default_factory=list)  # below quorum and undecided: deferred at finalize
    undecided: list[ReviewRow] = field(default_factory=list)  # ranked and undecided: finalize is refused
    # The week's commitments (later weeks of runs begun earlier) with the evidence they continue on.
    continuations: tuple[Continuation, ...] = ()
    run_titles: dict[int, str] = field(default_factory=dict)  # request id -> title, for the runs continuing

    @property
    def continuation_rows(self) -> list[tuple[Continuation, str]]:
        """Each run continuing into the week with its request's title ("" when it is not known)."""
        return [(c, self.run_titles.get(c.commitment.request_ref, "")) for c in self.continuations]

    @property
    def week_start(self) -> datetime:
        return self.cycle.starts_at

    @property
    def flagged(self) -> list[RequestPlacement]:
        return [p for pool in self.pools for p in pool.flagged]

    @property
    def placements(self) -> list[RequestPlacement]:
        return [p for pool in self.pools for p in pool.placements]


def _status(*, demand: engine.Demand, explanation: engine.Explanation, window: engine.EngineWindow | None) -> str:
    if window is None or not explanation.placed:
        return UNPLACED
    if window.gpu_count < demand.gpu_count or explanation.shortened:
        return SHORTENED
    if window.tier == engine.TIER_PREEMPTIBLE:
        return DEMOTED
    return PLACED


def cycle_placement(*, cycle: ReviewCycle, rows: list[ReviewRow] | None = None) -> CyclePlacement:
    """Run the engine as a dry run on the cycle's grants so far, in the live ranking order.

    `rows` are the review's rows (`cycle_ranking` or `cycle_review`), read again when omitted;
    each grant's row gets its `placement`.
    The demands are built as publishing builds them, so once the week is finalized this is
    exactly what `cycle_publish` places (its first version: no windows have started yet).
    Writes nothing; one query (the pools) beyond the rows.
    """
    if rows is None:
        rows = cycle_ranking(cycle=cycle)
    granted: list[tuple[tuple[bool, int, int], Decision]] = []
    deferred: list[ReviewRow] = []
    undecided: list[ReviewRow] = []
    for row in rows:
        decision = row.decision
        if decision is None:
            (undecided if row.result.rank is not None else deferred).append(row)
        elif decision.outcome in PLACING_OUTCOMES:
            decision.request = row.request  # the row's request, with its team and pool
            granted.append((demand_priority(rank=row.result.rank, decision=decision), decision))
    granted.sort(key=lambda item: item[0])
    now = timezone.now()
    # Publishing's own placement (cycle_publish_placement), in the live ranking: an emergency already placed in
    # this week keeps its window, a published week keeps its started windows.
    placement = cycle_publish_placement(cycle=cycle, now=now, decisions=[decision for _key, decision in granted])
    by_request, pool_placements = placements_of(
        cycle=cycle, pools=placement.pools,
        demands=[*committed_demands(placement=placement),
                 *((demand, decision.request) for demand, decision in placement.demands)],
        result=placement.result, now=now, continuations=placement.continuations,
    )
    for row in rows:
        row.placement = by_request.get(row.request.pk)
    refs = {c.commitment.request_ref for c in placement.continuations} - set(by_request)
    titles = {pk: p.title for pk, p in by_request.items()}
    if refs:  # a withheld week is no demand of the week: its run's title is read (one query, only then)
        titles.update(GpuRequest.objects.filter(pk__in=refs).values_list("pk", "title"))
    return CyclePlacement(
        cycle=cycle, by_request=by_request, pools=pool_placements, deferred=deferred, undecided=undecided,
        continuations=placement.continuations, run_titles=titles,
    )



def placements_of(
    *,
    cycle: ReviewCycle,
    pools: dict[str, GpuPool],
    demands: list[tuple[engine.Demand, GpuRequest]],
    result: engine.AllocationResult,
    now: datetime | None = None,
    continuations: Sequence[Continuation] = (),
) -> tuple[dict[int, RequestPlacement], list[PoolPlacement]]:
    """An engine result in the review's words: per grant what it gets, per pool (every pool) its week.

    `demands` are the grants in the order the engine had them, each with its request (team and
    pool selected). A demand without an explanation in `result` was a fixed window (a correction
    keeps windows that have started): it reads "kept". A demand of a run's request among `continuations` is that
    run's commitment in the week.
    """
    continuing = {c.commitment.request_ref: c for c in continuations}
    windows = {window.ref: window for window in result.windows}
    explanations = {explanation.ref: explanation for explanation in result.explanations}
    by_pool: dict[str, list[RequestPlacement]] = {}
    by_request: dict[int, RequestPlacement] = {}
    for asked, request in demands:
        window = windows.get(asked.ref)
        # A request that names other pools is placed on one of them: read it as converted for that pool.
        demand = asked.on(window.pool) if window is not None else asked
        explanation = explanations.get(demand.ref)
        if explanation is None and window is not None:
            explanation = kept_explanations([window], now=now,
                                            fast_lane={demand.ref} if request.is_fast_lane else ())[0]
        if explanation is None:  # the engine explains every demand it is given
            raise ValueError(f"no explanation for request {demand.ref}")
        text = ""
        if window is not None:
            text = placement_text(
                gpu_count=window.gpu_count,
                gpu_model=pools[window.pool].gpu_model if window.pool in pools else request.pool.gpu_model,
                start=window.start,
                end=window.end,
                tier=window.tier,
                week_start=cycle.starts_at,
            )
        placement = RequestPlacement(
            request_id=request.pk,
            title=request.title,
            team_name=request.team.name,
            pool_key=demand.pool,
            decided_gpu_count=demand.gpu_count,
            duration_hours=demand.duration_hours,
            window=window,
            explanation=explanation,
            status=_status(demand=demand, explanation=explanation, window=window),
            text=text,
            reason=explanation_text(explanation.reasons, week_start=cycle.starts_at),
            continuation=continuing.get(demand.ref),
            own_pool_key=asked.pool,
        )
        by_request[request.pk] = placement
        by_pool.setdefault(demand.pool, []).append(placement)
    pool_placements = []
    for key, pool in sorted(pools.items(), key=lambda item: (item[1].cluster.name, item[1].slug)):
        burst, standby = engine.reserved_gpus(allocation_selectors.pool_capacity(pool=pool))
        pool_placements.append(
            PoolPlacement(
                pool=pool,
                standard_gpus=pool.gpu_count - burst - standby,
                burst_top_gpus=pool.gpu_count - standby,
                standby_gpus=standby,
                placements=tuple(by_pool.get(key, ())),
            )
        )
    return by_request, pool_placements


@dataclass(frozen=True)
class PublishSummary:
    """What publishing now sends to the schedulers: the plan version and every pool's windows."""

    cycle: ReviewCycle
    version: int
    correction: bool
    by_request: dict[int, RequestPlacement]
    pools: list[PoolPlacement]

    @property
    def window_count(self) -> int:
        return sum(1 for p in self.by_request.values() if p.window is not None)

    @property
    def flagged(self) -> list[RequestPlacement]:
        return [p for pool in self.pools for p in pool.flagged]

    @property
    def kept(self) -> list[RequestPlacement]:
        return [p for p in self.by_request.values() if p.explanation.reasons[0].code == "kept"]


def publish_summary(*, cycle: ReviewCycle, now: datetime) -> PublishSummary:
    """The chair's confirmation before publishing: exactly what `cycle_publish` would place at `now`."""
    placement = cycle_publish_placement(cycle=cycle, now=now)
    by_request, pools = placements_of(
        cycle=cycle,
        pools=placement.pools,
        demands=[*committed_demands(placement=placement),
                 *((demand, decision.request) for demand, decision in placement.demands)],
        result=placement.result,
        now=now,
        continuations=placement.continuations,
    )
    current = allocation_selectors.plan_for_week(week=cycle.week)
    return PublishSummary(
        cycle=cycle,
        version=(current.version + 1) if current is not None else 1,
        correction=cycle.status == CycleStatus.PUBLISHED,
        by_request=by_request,
        pools=pools,
    )
