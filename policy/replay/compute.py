"""The replay itself: archived weeks in, what each team would have got under the overrides out. Pure.

Its inputs and outputs are the plain data of `policy.replay.data`.

Per week, twice — the baseline (no overrides) and the proposal (the overrides on top of that week's own
parameters) — the same steps the week went through:

1. Fair share. The baseline ranks with the factors frozen when the week's intake closed (its
   FairShareSnapshot rows). With `fairshare.*` overridden, the factors are recomputed
   (committee.scoring.decayed_usage, fair_shares) from the usage reported by that moment, over the
   trailing weeks before it, with each team's weight as it was then.
2. Ranking: committee.scoring.rank_requests with the week's rubric weights (or the proposed ones)
   and the quorum.
3. Decisions stay as decided (the current decision, after any correction). Rules where the ranking
   matters: a grant whose request falls below the proposed quorum is dropped (nothing decided, nothing
   placed: `request_decide` refuses a grant without a quorum of scores); a request deferred
   automatically for missing quorum that the proposed quorum ranks stays deferred (the committee never
   decided on it). Grants go to the engine in the replayed rank order (`demand_priority`).
4. Placement: allocations.engine.allocate on the pools as they were when the week was placed (their
   history), with the proposed reserves; no fixed windows, as a first publish. The later weeks of runs over
   several weeks go first, as the live engine places them (`_carried`): those the replay itself placed in an
   earlier replayed week, and those of runs begun before the replayed weeks as archived.

Besides the two replays, `actual` is what happened: the archived ranks and the week's current plan,
with the differences noted (a correction, an emergency, a later plan version).

Measures, per request and summed per team and pool:

- decided GPU-hours: the GPUs the engine is asked for × duration (0 when deferred, rejected, dropped);
- placed GPU-hours: the window's GPUs × duration;
- unplaced value: the impact forecast's value × the share of the decided GPU-hours not placed (the
  whole value when nothing was decided), per unit of the forecast ("USD/week"): units are never added;
- a pool's idle GPU-hours: Σ over the week's hours of the GPUs it can place (all but the cold standby)
  that no window holds; its contended hours: hours in which a grant of the pool that did not get all
  its GPUs could have run (inside its bounds) but the pool had fewer free GPUs than it still needed.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from zoneinfo import ZoneInfo

from allocations import engine
from allocations.commitments import (
    CommittedWeek,
    commitment_order,
    demands_with_commitments,
    run_week_gpu_counts,
)
from committee import scoring
from policy.replay.data import (
    ActualWindow,
    Measure,
    Note,
    PoolRow,
    PoolRun,
    ReplayInputs,
    ReplayRequest,
    ReplayResult,
    RequestRun,
    TeamRow,
    UsageRow,
    WeekInputs,
    WeekReplay,
    WeekRun,
)
from policy.replay.overrides import Overrides

_HOUR = timedelta(hours=1)
TWO_PLACES = Decimal("0.01")


# ---------------------------------------------------------------------------------------------
# The replay


def replay(*, inputs: ReplayInputs, overrides: Overrides) -> ReplayResult:
    """Replay every week of `inputs` without and with `overrides`; compare with what happened. Pure."""
    details: list[WeekReplay] = []
    notes: list[Note] = []
    # The later weeks of the runs each replay placed, by week: carried into those weeks as the live publish carries
    # them (committee.services.runs.run_commitments_publish), so a run the proposal no longer places holds nothing.
    carried_baseline: dict[str, list[CommittedWeek]] = {}
    carried_proposed: dict[str, list[CommittedWeek]] = {}
    replayed = frozenset(w.week for w in inputs.weeks)
    for week in inputs.weeks:
        memo = _Memo()
        baseline, later = _run(week=week, inputs=inputs, overrides=Overrides(), memo=memo,
                               carried=_carried(week=week, replayed=replayed, derived=carried_baseline))
        _carry(later, into=carried_baseline)
        if overrides.empty:
            proposed = baseline
        else:
            proposed, later = _run(week=week, inputs=inputs, overrides=overrides, memo=memo,
                                   carried=_carried(week=week, replayed=replayed, derived=carried_proposed))
        _carry(later, into=carried_proposed)
        actual = _actual_placed(week)
        details.append(WeekReplay(week=week.week, baseline=baseline, proposed=proposed, actual_placed=actual))
        notes.extend(_notes(week=week, baseline=baseline, proposed=proposed))
    for key in overrides.not_replayed:
        notes.append(Note(week="", code="not_replayed", params={"key": key}))
    return ReplayResult(
        weeks=tuple(w.week for w in inputs.weeks),
        overrides=overrides.given,
        teams=_team_rows(inputs=inputs, details=details),
        pools=_pool_rows(details),
        detail=tuple(details),
        notes=tuple(notes),
    )


class _Memo:
    """What the baseline computed, for the proposal to reuse where its inputs are the same (one week).

    The ranking depends only on weights, quorum and fair shares; the engine places each pool on its own
    (allocations.solver.place_pool), so a pool whose capacity and demands in order are unchanged gets the
    same windows. Only which window is the week's first "priority" one crosses pools: `_place` sets it.
    """

    def __init__(self) -> None:
        self.rankings: dict[object, list[scoring.RequestResult]] = {}
        self.pools: dict[object, tuple[engine.EngineWindow, ...]] = {}


def _rank(
    *, sheets: list[scoring.ScoreSheet], weights: dict[str, int], quorum: int, shares_key: object, memo: _Memo
) -> list[scoring.RequestResult]:
    key = (tuple(sorted(weights.items())), quorum, shares_key)
    if key not in memo.rankings:
        memo.rankings[key] = scoring.rank_requests(sheets=sheets, weights=weights, quorum=quorum)
    return memo.rankings[key]


def _place(
    *, week: WeekInputs, pools: Sequence[engine.PoolCapacity], demands: Sequence[engine.Demand], memo: _Memo
) -> tuple[engine.EngineWindow, ...]:
    """allocations.engine.allocate, pool by pool (memoized), with the tiers it gives: the first window placed
    outside the burst reserve, in priority order across every pool, is "priority", the others "standard"."""
    by_pool: dict[str, list[engine.Demand]] = {}
    for demand in demands:
        by_pool.setdefault(demand.pool, []).append(demand)
    placed: dict[int, engine.EngineWindow] = {}
    if any(demand.alternatives for demand in demands):
        # A request that names other pools ties them together (docs/engine.md, "Either pool"): the week is placed
        # whole, as the live engine places it.
        whole = (tuple(pools), tuple(demands))
        if whole not in memo.pools:
            memo.pools[whole] = engine.allocate(
                week_start=week.starts_at, pools=list(pools), demands=list(demands), hours=week.hours
            ).windows
        placed = {window.ref: window for window in memo.pools[whole]}
        pools = ()
    for pool in pools:
        pool_demands = tuple(by_pool.get(pool.key, ()))
        if not pool_demands:
            continue
        key = (pool, pool_demands)
        if key not in memo.pools:
            memo.pools[key] = engine.allocate(
                week_start=week.starts_at, pools=[pool], demands=list(pool_demands), hours=week.hours
            ).windows
        for pool_window in memo.pools[key]:
            placed[pool_window.ref] = pool_window
    windows = []
    priority_given = False
    for demand in demands:  # a demand on a pool the week did not have is placed nowhere, as the engine says
        found = placed.get(demand.ref)
        if found is None:
            continue
        window = found
        if window.tier != engine.TIER_PREEMPTIBLE:
            tier = engine.TIER_STANDARD if priority_given else engine.TIER_PRIORITY
            priority_given = True
            if window.tier != tier:
                window = replace(window, tier=tier)
        windows.append(window)
    return tuple(windows)


def _carried(
    *, week: WeekInputs, replayed: frozenset[str], derived: Mapping[str, Sequence[CommittedWeek]]
) -> list[CommittedWeek]:
    """The commitments a replayed week places first, as the live engine does: those of runs that began before the
    replayed weeks as archived (placed when committed or confirmed); those of runs the replay itself placed in an
    earlier replayed week as it placed them, unless the week withheld the run's continuation or the committee
    released it (the evidence and the committee's word are archived, not replayed)."""
    archived = {c.week.ref: c for c in week.commitments}
    before = [c.week for c in week.commitments if c.week.first_week not in replayed and c.placed]
    mine = [
        c for c in derived.get(week.week, ())
        if (held := archived.get(c.ref)) is None or held.placed or not held.settled
    ]
    return sorted([*before, *mine], key=commitment_order)


def _carry(later: Sequence[tuple[str, CommittedWeek]], *, into: dict[str, list[CommittedWeek]]) -> None:
    for label, committed in later:
        into.setdefault(label, []).append(committed)


def _later_weeks(
    *, week: WeekInputs, demands: Sequence[engine.Demand], windows: Mapping[int, engine.EngineWindow],
    filed: Mapping[int, ReplayRequest],
) -> list[tuple[str, CommittedWeek]]:
    """The later weeks of the runs a week's replay placed, as the live publish records them: the window's pool, the
    run's GPUs for each week (allocations.commitments.run_week_gpu_counts), the run's place among the week's grants
    (1 for the first) and the week's bounds."""
    later: list[tuple[str, CommittedWeek]] = []
    for position, demand in enumerate(demands, start=1):
        request, window = filed.get(demand.ref), windows.get(demand.ref)
        if request is None or window is None or not request.later_weeks:
            continue
        asked = request.run_gpu_counts or (demand.gpu_count,) * (len(request.later_weeks) + 1)
        counts = run_week_gpu_counts(asked=asked, placed_first=window.gpu_count,
                                     weeks_granted=len(request.later_weeks) + 1)
        for run_week, gpus in zip(request.later_weeks, counts, strict=True):
            later.append((run_week.week, CommittedWeek(
                ref=demand.ref, pool=window.pool, gpu_count=gpus, start=run_week.start, end=run_week.end,
                first_week=week.week, position=position)))
    return later


def _run(
    *, week: WeekInputs, inputs: ReplayInputs, overrides: Overrides, memo: _Memo, carried: Sequence[CommittedWeek] = ()
) -> tuple[WeekRun, list[tuple[str, CommittedWeek]]]:
    """One replay of one week, and the later weeks of the runs it placed (to carry into those weeks)."""
    weights = dict(overrides.weights or week.weights)
    quorum = next(q for q in (overrides.quorum, week.quorum, inputs.quorum) if q is not None)
    shares = _fair_shares(week=week, inputs=inputs, overrides=overrides)
    shares_key = "frozen" if shares is week.fair_shares else (overrides.half_life_weeks, overrides.trailing_weeks)
    sheets = [
        scoring.ScoreSheet(
            request_id=r.request_id,
            submitted_at=r.submitted_at,
            member_scores={c: list(v) for c, v in r.member_scores.items()},
            computed_scores={scoring.FAIRNESS: shares[r.team_id].score} if r.team_id in shares else {},
        )
        for r in week.requests
    ]
    results = _rank(sheets=sheets, weights=weights, quorum=quorum, shares_key=shares_key, memo=memo)
    by_id = {r.request_id: r for r in week.requests}
    demands: list[engine.Demand] = []
    for result in results:  # rank order: the engine's order (demand_priority)
        request = by_id[result.request_id]
        if request.demand is not None and result.rank is not None:
            demands.append(request.demand)
    pools = _pools(week=week, overrides=overrides)
    placing = demands_with_commitments(commitments=carried, demands=demands)
    placed_windows = _place(week=week, pools=pools, demands=placing, memo=memo)
    windows = {w.ref: w for w in placed_windows}
    carried_refs = {c.ref for c in carried}
    runs: list[RequestRun] = []
    for result in results:
        request = by_id[result.request_id]
        kept = request.demand is not None and result.rank is not None
        window = windows.get(request.request_id) if kept else None
        decided = request.demand.gpu_count * request.duration_hours if kept and request.demand else 0
        placed_hours = window.gpu_count * ((window.end - window.start) // _HOUR) if window is not None else 0
        runs.append(
            RequestRun(
                request_id=request.request_id,
                team_id=request.team_id,
                pool=request.pool,
                rank=result.rank,
                total=result.total,
                fairness=shares[request.team_id].score if request.team_id in shares else None,
                decided_gpu_hours=decided,
                placed_gpu_hours=placed_hours,
                unplaced_value=_unplaced_value(request.impact_value, decided, placed_hours),
                dropped=request.demand is not None and result.rank is None,
                window=(
                    None
                    if window is None
                    else (
                        window.pool,
                        window.gpu_count,
                        engine.instant_param(window.start),
                        engine.instant_param(window.end),
                        window.tier,
                    )
                ),
            )
        )
    return WeekRun(
        requests=tuple(runs),
        pools=_pool_runs(week=week, pools=pools, demands=placing, windows=placed_windows),
        fairness={team_id: share.score for team_id, share in sorted(shares.items())},
        carried=tuple((w.ref, _window_key(w)) for w in placed_windows if w.ref in carried_refs),
    ), _later_weeks(week=week, demands=demands, windows=windows, filed=by_id)


def _unplaced_value(value: Decimal | None, decided: int, placed: int) -> Decimal | None:
    if value is None:
        return None
    if decided <= 0:
        return value.quantize(TWO_PLACES)
    share = Fraction(max(decided - placed, 0), decided)
    return scoring.rounded(Fraction(value) * share)


def _pools(*, week: WeekInputs, overrides: Overrides) -> list[engine.PoolCapacity]:
    pools = []
    for pool in week.pools:
        changed = overrides.pools.get(pool.key, {})
        pools.append(
            replace(
                pool,
                burst_reserve_pct=changed.get("burst_reserve_pct", pool.burst_reserve_pct),
                standby_pct=changed.get("standby_pct", pool.standby_pct),
            )
        )
    return pools


def weekly_usage(
    *, usage: Sequence[UsageRow], as_of: datetime, weeks: int, time_zone: str
) -> list[dict[int, Decimal]]:
    """GPU-hours per team in each of the `weeks` weeks before `as_of`, latest first, counting only what was
    reported by `as_of`: allocations.selectors.usage_gpu_hours_by_team_per_week, as it answered then."""
    local = as_of.astimezone(ZoneInfo(time_zone))
    bounds = [(local - timedelta(weeks=k)).astimezone(UTC) for k in range(weeks, -1, -1)]
    buckets: list[dict[int, Decimal]] = [{} for _week in range(weeks)]
    for row in usage:
        if row.reported_at > as_of or not bounds[0] <= row.period_start < bounds[-1]:
            continue
        bucket = buckets[weeks - bisect.bisect_right(bounds, row.period_start)]
        bucket[row.team_id] = bucket.get(row.team_id, Decimal(0)) + row.gpu_hours
    return buckets


def _fair_shares(
    *, week: WeekInputs, inputs: ReplayInputs, overrides: Overrides
) -> Mapping[int, scoring.FairShare]:
    if week.fair_shares and not overrides.fairshare_changed:
        return week.fair_shares
    half_life = next(h for h in (overrides.half_life_weeks, week.half_life_weeks, inputs.half_life_weeks)
                     if h is not None)
    trailing = next(t for t in (overrides.trailing_weeks, week.trailing_weeks, inputs.trailing_weeks) if t is not None)
    weekly = weekly_usage(usage=inputs.usage, as_of=week.fair_share_as_of, weeks=trailing, time_zone=inputs.time_zone)
    decayed = scoring.decayed_usage(weekly_usage=weekly, half_life_weeks=half_life)
    return scoring.fair_shares(decayed=decayed, weights=week.team_weights, departments=week.team_departments)


def _hour_bounds(demand: engine.Demand, start: datetime, hours: int) -> tuple[int, int]:
    first = -((start - demand.earliest_start) // _HOUR)
    last = (demand.latest_end - start) // _HOUR
    return max(0, min(first, hours)), max(0, min(last, hours))


def _pool_runs(
    *,
    week: WeekInputs,
    pools: Sequence[engine.PoolCapacity],
    demands: Sequence[engine.Demand],
    windows: Sequence[engine.EngineWindow],
) -> tuple[PoolRun, ...]:
    hours = week.hours
    placed_by_ref = {w.ref: w for w in windows}
    runs = []
    for pool in sorted(pools, key=lambda p: p.key):
        burst, standby = engine.reserved_gpus(pool)
        total_limit = pool.gpu_count - standby
        standard_limit = total_limit - burst
        total = [0] * hours
        standard = [0] * hours
        placed = 0
        for w in windows:
            if w.pool != pool.key:
                continue
            first = max(0, min((w.start - week.starts_at) // _HOUR, hours))
            last = max(0, min((w.end - week.starts_at) // _HOUR, hours))
            for h in range(first, last):
                total[h] += w.gpu_count
                if w.tier != engine.TIER_PREEMPTIBLE:
                    standard[h] += w.gpu_count
            placed += w.gpu_count * (last - first)
        contended = [False] * hours
        for asked in demands:
            window = placed_by_ref.get(asked.ref)
            demand = asked.on(window.pool) if window is not None else asked  # where it went, as converted there
            if demand.pool != pool.key:
                continue
            missing = demand.gpu_count - (window.gpu_count if window is not None else 0)
            if missing <= 0:
                continue
            lo, hi = _hour_bounds(demand, week.starts_at, hours)
            for h in range(lo, hi):
                free = (
                    total_limit - total[h] if demand.preemptible_ok else standard_limit - standard[h]
                )
                if free < missing:
                    contended[h] = True
        runs.append(
            PoolRun(
                pool=pool.key,
                placeable_gpu_hours=total_limit * hours,
                placed_gpu_hours=placed,
                idle_gpu_hours=sum(max(total_limit - used, 0) for used in total),
                contended_hours=sum(contended),
            )
        )
    return tuple(runs)


def _actual_placed(week: WeekInputs) -> dict[int, int]:
    placed: dict[int, int] = {}
    for w in week.current_plan:
        if w.ref is not None and not w.emergency:
            placed[w.ref] = placed.get(w.ref, 0) + w.gpu_hours
    return placed


def _window_key(w: ActualWindow | engine.EngineWindow) -> tuple[str, int, str, str, str]:
    return (w.pool, w.gpu_count, engine.instant_param(w.start), engine.instant_param(w.end), w.tier)


def _notes(*, week: WeekInputs, baseline: WeekRun, proposed: WeekRun) -> list[Note]:
    notes: list[Note] = []
    label = week.week
    if not week.first_plan and week.plan_version is None:
        notes.append(Note(label, "not_published", {}))
    if week.plan_version is not None and week.plan_version > 1:
        notes.append(Note(label, "later_version", {"version": week.plan_version}))
    corrected = sorted(r.request_id for r in week.requests if r.corrected)
    if corrected:
        notes.append(Note(label, "corrected", {"requests": corrected}))
    emergencies = [w for w in week.current_plan if w.emergency]
    if emergencies:
        notes.append(
            Note(
                label,
                "emergency",
                {"windows": len(emergencies), "gpu_hours": sum(w.gpu_hours for w in emergencies)},
            )
        )
    by_id = {r.request_id: r for r in week.requests}
    rank_differs = sorted(
        run.request_id for run in baseline.requests if run.rank != by_id[run.request_id].archived_rank
    )
    if rank_differs:
        notes.append(Note(label, "baseline_rank_differs", {"requests": rank_differs}))
    if week.plan_version is not None:
        first = {w.ref: _window_key(w) for w in week.first_plan if w.ref is not None and not w.emergency}
        replayed = {run.request_id: run.window for run in baseline.requests if run.window is not None}
        differs = sorted(
            ref for ref in set(first) | set(replayed)
            if ref not in corrected and first.get(ref) != replayed.get(ref)
        )
        if differs:
            notes.append(Note(label, "baseline_plan_differs", {"requests": differs}))
    dropped = sorted(run.request_id for run in proposed.requests if run.dropped)
    if dropped:
        notes.append(Note(label, "dropped_below_quorum", {"requests": dropped}))
    newly_ranked = sorted(
        run.request_id for run in proposed.requests if run.rank is not None and by_id[run.request_id].auto_deferred
    )
    if newly_ranked:
        notes.append(Note(label, "ranked_kept_deferred", {"requests": newly_ranked}))
    return notes


def _measure(baseline: Decimal | int, proposed: Decimal | int, actual: Decimal | int | None = None) -> Measure:
    return Measure(
        baseline=Decimal(baseline), proposed=Decimal(proposed), actual=None if actual is None else Decimal(actual)
    )


@dataclass
class _Tally:
    ranks: list[int] = field(default_factory=list)
    decided: int = 0
    placed: int = 0
    value: dict[str, Decimal] = field(default_factory=dict)


def _mean(ranks: list[int]) -> Decimal:
    return scoring.rounded(Fraction(sum(ranks), len(ranks))) if ranks else Decimal(0)


def _team_rows(*, inputs: ReplayInputs, details: Sequence[WeekReplay]) -> tuple[TeamRow, ...]:
    names: dict[int, str] = {}
    units: dict[int, str] = {}
    tallies: dict[str, dict[int, _Tally]] = {"baseline": {}, "proposed": {}, "actual": {}}
    requests = {r.request_id: r for w in inputs.weeks for r in w.requests}
    for week, detail in zip(inputs.weeks, details, strict=True):
        for r in week.requests:
            names[r.team_id] = r.team_name
            units[r.request_id] = r.impact_unit
            actual = tallies["actual"].setdefault(r.team_id, _Tally())
            if r.archived_rank is not None:
                actual.ranks.append(r.archived_rank)
            if r.demand is not None:
                actual.decided += r.demand.gpu_count * r.duration_hours
            actual.placed += detail.actual_placed.get(r.request_id, 0)
        for kind, run in (("baseline", detail.baseline), ("proposed", detail.proposed)):
            for req in run.requests:
                tally = tallies[kind].setdefault(req.team_id, _Tally())
                if req.rank is not None:
                    tally.ranks.append(req.rank)
                tally.decided += req.decided_gpu_hours
                tally.placed += req.placed_gpu_hours
                if req.unplaced_value is not None:
                    unit = requests[req.request_id].impact_unit
                    tally.value[unit] = tally.value.get(unit, Decimal(0)) + req.unplaced_value
    rows = []
    for team_id, name in sorted(names.items(), key=lambda item: (item[1], item[0])):
        b, p, a = (tallies[k].get(team_id, _Tally()) for k in ("baseline", "proposed", "actual"))
        rows.append(
            TeamRow(
                team_id=team_id,
                team_name=name,
                mean_rank=_measure(_mean(b.ranks), _mean(p.ranks), _mean(a.ranks)),
                ranked=_measure(len(b.ranks), len(p.ranks), len(a.ranks)),
                decided_gpu_hours=_measure(b.decided, p.decided, a.decided),
                placed_gpu_hours=_measure(b.placed, p.placed, a.placed),
                unplaced_value={
                    unit: _measure(b.value.get(unit, Decimal(0)), p.value.get(unit, Decimal(0)))
                    for unit in sorted(set(b.value) | set(p.value))
                },
            )
        )
    return tuple(rows)


def _pool_rows(details: Sequence[WeekReplay]) -> tuple[PoolRow, ...]:
    sums: dict[str, dict[str, list[int]]] = {}
    for detail in details:
        for index, run in enumerate((detail.baseline, detail.proposed)):
            for pool in run.pools:
                entry = sums.setdefault(
                    pool.pool, {k: [0, 0] for k in ("placeable", "placed", "idle", "contended")}
                )
                entry["placeable"][index] += pool.placeable_gpu_hours
                entry["placed"][index] += pool.placed_gpu_hours
                entry["idle"][index] += pool.idle_gpu_hours
                entry["contended"][index] += pool.contended_hours
    return tuple(
        PoolRow(
            pool=key,
            placeable_gpu_hours=_measure(*entry["placeable"]),
            placed_gpu_hours=_measure(*entry["placed"]),
            idle_gpu_hours=_measure(*entry["idle"]),
            contended_hours=_measure(*entry["contended"]),
        )
        for key, entry in sorted(sums.items())
    )
