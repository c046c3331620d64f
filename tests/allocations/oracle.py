"""An exact strict-priority oracle for the allocation engine: time-indexed MILPs solved by HiGHS.

Independent of the engine's code (its own hour rounding, its own model): for each pool and each
demand ``i`` in priority order, a binary ``x[i, s]`` per possible start ``s`` and an integer
``g[i, s]`` GPUs, ``min·x ≤ g ≤ count·x``, at most one start per demand, and per hour the GPUs of
the windows covering it at most the total (all but standby, less fixed windows); the windows of
demands that may not be preemptible also at most the standard capacity. A preemptible window
may sit anywhere within the total, so a preemptible demand needs only that constraint.

``lexicographic_optimum`` maximises rank 1's GPUs, fixes it, maximises rank 2's, and so on:
the GPU-hours per demand of the strict-priority optimum; ``either_pool_optimum`` the same when demands may
name alternative pools. ``unrestricted_optimum`` maximises
the week's total GPU-hours, ignoring priority. Meant for small instances (tests, benchmark).
Used by tests/allocations/test_engine_oracle.py and bench/bench_engine_quality.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import highspy

from allocations.engine import TIER_PREEMPTIBLE, Demand, EngineWindow, PoolCapacity

_HOUR = timedelta(hours=1)


def _bounds(week_start: datetime, hours: int, demand: Demand) -> tuple[int, int] | None:
    """Hour indices [lo, hi) a window of the demand may occupy, or None when none fits."""
    first = int((demand.earliest_start - week_start).total_seconds())
    last = int((demand.latest_end - week_start).total_seconds())
    lo = max(0, min(hours, -(-first // 3600)))  # rounded up to the hour grid
    hi = max(0, min(hours, last // 3600))  # rounded down
    if demand.min_gpu_count > demand.gpu_count or hi - lo < demand.duration_hours:
        return None
    return lo, hi


class _PoolModel:
    def __init__(
        self,
        week_start: datetime,
        hours: int,
        pool: PoolCapacity,
        demands: Sequence[Demand],
        fixed: Sequence[EngineWindow],
    ) -> None:
        burst = pool.burst_reserve_pct * pool.gpu_count // 100
        standby = pool.standby_pct * pool.gpu_count // 100
        total = [pool.gpu_count - standby] * hours
        standard = [pool.gpu_count - standby - burst] * hours
        for window in fixed:
            first = max(0, min(hours, (window.start - week_start) // _HOUR))
            last = max(0, min(hours, (window.end - week_start) // _HOUR))
            for h in range(first, last):
                total[h] -= window.gpu_count
                if window.tier != TIER_PREEMPTIBLE:
                    standard[h] -= window.gpu_count
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)
        self.h.setOptionValue("mip_rel_gap", 0.0)
        self.h.setOptionValue("mip_abs_gap", 0.0)
        self.counts: list[Any] = []  # per demand: the expression of its GPU count
        self.durations: list[int] = []
        cover_total: list[list[Any]] = [[] for _ in range(hours)]
        cover_standard: list[list[Any]] = [[] for _ in range(hours)]
        for demand in demands:
            self.durations.append(demand.duration_hours)
            bounds = _bounds(week_start, hours, demand)
            if bounds is None:
                self.counts.append(None)
                continue
            lo, hi = bounds
            xs: list[Any] = []
            gs: list[Any] = []
            for s in range(lo, hi - demand.duration_hours + 1):
                x = self.h.addBinary()
                g = self.h.addIntegral(lb=0, ub=demand.gpu_count)
                self.h.addConstr(g - demand.gpu_count * x <= 0)
                self.h.addConstr(g - demand.min_gpu_count * x >= 0)
                xs.append(x)
                gs.append(g)
                for hour in range(s, s + demand.duration_hours):
                    cover_total[hour].append(g)
                    if not demand.preemptible_ok:
                        cover_standard[hour].append(g)
            self.h.addConstr(sum(xs[1:], xs[0]) <= 1)
            self.counts.append(sum(gs[1:], gs[0]))
        for hour in range(hours):
            for cover, limit in ((cover_total[hour], total[hour]), (cover_standard[hour], standard[hour])):
                if cover:
                    self.h.addConstr(sum(cover[1:], cover[0]) <= max(0, limit))

    def maximize(self, expression: Any) -> int:
        self.h.maximize(expression)
        status = self.h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(f"oracle: HiGHS ended with {self.h.modelStatusToString(status)}")
        return round(self.h.getInfo().objective_function_value)


def _pool_demands(pools: Sequence[PoolCapacity], demands: Sequence[Demand]) -> dict[str, list[int]]:
    keys = {pool.key for pool in pools}
    by_pool: dict[str, list[int]] = {pool.key: [] for pool in pools}
    for i, demand in enumerate(demands):
        if demand.pool in keys:
            by_pool[demand.pool].append(i)
    return by_pool


def lexicographic_optimum(
    *,
    week_start: datetime,
    pools: Sequence[PoolCapacity],
    demands: Sequence[Demand],
    hours: int = 168,
    fixed: Sequence[EngineWindow] = (),
) -> list[int]:
    """GPU-hours per demand (in the order given) of the strict-priority optimum."""
    week_start = week_start.astimezone(UTC)
    result = [0] * len(demands)
    for pool in pools:
        indices = _pool_demands(pools, demands)[pool.key]
        if not indices:
            continue
        model = _PoolModel(
            week_start, hours, pool, [demands[i] for i in indices], [w for w in fixed if w.pool == pool.key]
        )
        for position, i in enumerate(indices):
            count = model.counts[position]
            if count is None:
                continue
            best = model.maximize(count)
            model.h.addConstr(count >= best)
            result[i] = best * demands[i].duration_hours
    return result


def either_pool_optimum(
    *,
    week_start: datetime,
    pools: Sequence[PoolCapacity],
    demands: Sequence[Demand],
    hours: int = 168,
) -> tuple[list[int], list[str]]:
    """The strict-priority optimum when demands may name alternative pools (``Demand.alternatives``): GPU-hours
    per demand and the pool each goes to (its own when it goes nowhere).

    Rank by rank: a demand with alternatives tries each pool it names with the exact lexicographic optimum of the
    higher ranks already on that pool and itself, and goes where it gets the largest share of what it asks there;
    a tie goes to the pool named first. Then each pool's lexicographic optimum over the demands it got."""
    keys = {pool.key for pool in pools}
    assigned: list[Demand] = []
    for demand in demands:
        options = demand.options()
        best, best_share = options[0], Fraction(-1)
        for option in options:
            got = 0
            if option.pool in keys:
                mine = [d for d in assigned if d.pool == option.pool] + [option]
                got = lexicographic_optimum(
                    week_start=week_start, pools=[p for p in pools if p.key == option.pool], demands=mine, hours=hours
                )[-1]
            share = Fraction(got, option.gpu_count * option.duration_hours)
            if share > best_share:
                best, best_share = option, share
        assigned.append(best)
    gpu_hours = lexicographic_optimum(week_start=week_start, pools=pools, demands=assigned, hours=hours)
    return gpu_hours, [d.pool for d in assigned]


def unrestricted_optimum(
    *,
    week_start: datetime,
    pools: Sequence[PoolCapacity],
    demands: Sequence[Demand],
    hours: int = 168,
    fixed: Sequence[EngineWindow] = (),
) -> int:
    """The most GPU-hours the week can hold, whatever the ranks."""
    week_start = week_start.astimezone(UTC)
    total = 0
    for pool in pools:
        indices = _pool_demands(pools, demands)[pool.key]
        model = _PoolModel(
            week_start, hours, pool, [demands[i] for i in indices], [w for w in fixed if w.pool == pool.key]
        )
        terms = [
            count * duration
            for count, duration in zip(model.counts, model.durations, strict=True)
            if count is not None
        ]
        if terms:
            total += model.maximize(sum(terms[1:], terms[0]))
    return total



def rank_upper_bounds(
    *,
    week_start: datetime,
    pools: Sequence[PoolCapacity],
    demands: Sequence[Demand],
    windows: Sequence[EngineWindow],
    hours: int = 168,
    fixed: Sequence[EngineWindow] = (),
    limit: float = 1.0,
    max_members: int = 1000,
    lexicographic: bool = False,
    stats: dict[str, int] | None = None,
) -> list[int]:
    """Per demand (in the order given), an upper bound on its GPU-hours under strict priority
    given what the higher ranks of its pool got in a plan (``windows``, the engine's): for
    large weeks, where the exact oracle is out of reach.

    Rank k's bound is the smaller of two relaxations of "the most GPUs k can get while every
    higher rank of its pool keeps exactly the GPUs the plan gave it":

    * the single-window bound: the most GPUs free for k's whole duration at some start beside
      the higher ranks' compulsory parts (the hours a window covers wherever it starts);
    * when that is above the plan, CP-SAT's proven bound on that problem (k and the placed
      higher ranks whose bounds connect to k's, as intervals; one cumulative on the total,
      one on the standard capacity), with ``limit`` of deterministic time and one worker:
      the optimum when it is proven, else ``best_objective_bound``; not tried when more than
      ``max_members`` higher ranks connect to k.

    ``lexicographic=True`` holds each rank instead at the oracle's own best (its fit beside
    the held placement, or CP-SAT's solution, which may move the higher ranks): the strict
    optimum itself, rank by rank, as far as CP-SAT proves it; ``windows`` is then not read.

    Its own model and hour rounding, independent of the engine's code. When the plan is the
    strict-priority optimum on the higher ranks, the bound is a bound on k's optimum; a plan
    equal to its bounds on every rank is that optimum. ``stats`` counts ``solved`` (CP-SAT
    runs), ``proven`` (the optimum proven), ``better`` (CP-SAT found more than the plan) and
    ``too_large`` (ranks left to the single-window bound by ``max_members``).
    """
    week_start = week_start.astimezone(UTC)
    stats = stats if stats is not None else {}
    for name in ("solved", "proven", "better", "too_large"):
        stats.setdefault(name, 0)
    plan = {w.ref: w for w in windows}
    result = [0] * len(demands)
    for pool in pools:
        indices = _pool_demands(pools, demands)[pool.key]
        if not indices:
            continue
        own = [w for w in fixed if w.pool == pool.key]
        bound = _PoolBound(week_start, hours, pool, own, limit, stats)
        bound.max_members = max_members
        bound.lexicographic = lexicographic
        for i in indices:
            result[i] = bound.next(demands[i], plan.get(demands[i].ref))
    return result


class _PoolBound:
    """One pool's ranks in order: ``next`` bounds a rank, then holds it at the plan's GPUs."""

    def __init__(
        self,
        week_start: datetime,
        hours: int,
        pool: PoolCapacity,
        fixed: Sequence[EngineWindow],
        limit: float,
        stats: dict[str, int],
    ) -> None:
        self.week_start, self.hours, self.limit, self.stats = week_start, hours, limit, stats
        self.max_members = 1000
        burst = pool.burst_reserve_pct * pool.gpu_count // 100
        standby = pool.standby_pct * pool.gpu_count // 100
        self.total = [pool.gpu_count - standby] * hours
        self.standard = [pool.gpu_count - standby - burst] * hours
        for window in fixed:
            first = max(0, min(hours, (window.start - week_start) // _HOUR))
            last = max(0, min(hours, (window.end - week_start) // _HOUR))
            for h in range(first, last):
                self.total[h] -= window.gpu_count
                if window.tier != TIER_PREEMPTIBLE:
                    self.standard[h] -= window.gpu_count
        self.compulsory_total = [0] * hours
        self.compulsory_standard = [0] * hours
        # the placed higher ranks: (lo, hi, duration, GPUs, preemptible_ok, planned start)
        self.placed: list[list[Any]] = []
        # lexicographic: hold each rank at the oracle's own optimum (its placement in ``use_*``)
        self.lexicographic = False
        self.found: EngineWindow | None = None
        self.use_total = [0] * hours
        self.use_standard = [0] * hours

    def _use(self, item: list[Any], sign: int) -> None:
        _, _, d, gpus, preemptible_ok, start = item
        for h in range(start, start + d):
            self.use_total[h] += sign * gpus
            if not preemptible_ok:
                self.use_standard[h] += sign * gpus

    def _window(self, start: int, d: int, gpus: int) -> EngineWindow:
        at = self.week_start + start * _HOUR
        return EngineWindow(ref=0, pool="", gpu_count=gpus, start=at, end=at + d * _HOUR, tier="standard")

    def _fit(self, demand: Demand, lo: int, hi: int) -> EngineWindow | None:
        """The most GPUs beside the held placement, at its earliest start."""
        d = demand.duration_hours
        free = [t - u for t, u in zip(self.total[lo:hi], self.use_total[lo:hi], strict=True)]
        if not demand.preemptible_ok:
            standard = [s - u for s, u in zip(self.standard[lo:hi], self.use_standard[lo:hi], strict=True)]
            free = list(map(min, free, standard))
        best, at = -1, 0
        for s in range(len(free) - d + 1):
            value = min(free[s : s + d])
            if value > best:
                best, at = value, s
        best = min(best, demand.gpu_count)
        return None if best < demand.min_gpu_count else self._window(lo + at, d, best)

    def next(self, demand: Demand, window: EngineWindow | None) -> int:
        bounds = _bounds(self.week_start, self.hours, demand)
        if bounds is None:
            return 0
        lo, hi = bounds
        d = demand.duration_hours
        if self.lexicographic:  # hold the oracle's own placement, not the plan's
            window = self._fit(demand, lo, hi)
        got = 0 if window is None else window.gpu_count
        free = [t - c for t, c in zip(self.total[lo:hi], self.compulsory_total[lo:hi], strict=True)]
        if not demand.preemptible_ok:
            standard = [s - c for s, c in zip(self.standard[lo:hi], self.compulsory_standard[lo:hi], strict=True)]
            free = list(map(min, free, standard))
        single = min(demand.gpu_count, max(0, max(min(free[s : s + d]) for s in range(len(free) - d + 1))))
        bound = min(single, self._energy(demand, lo, hi) // d)
        bound = bound if bound >= demand.min_gpu_count else 0
        if got < bound:
            bound = min(bound, self._solve(demand, lo, hi, window))
            if self.lexicographic and self.found is not None:
                window = self.found
                got = window.gpu_count
        if got > bound:
            raise RuntimeError(f"bound: demand {demand.ref} got {got} GPUs, above its bound {bound}")
        if window is not None:
            start = (window.start - self.week_start) // _HOUR
            self.placed.append([lo, hi, d, got, demand.preemptible_ok, start])
            self._use(self.placed[-1], 1)
            for h in range(hi - d, lo + d):
                self.compulsory_total[h] += got
                if not demand.preemptible_ok:
                    self.compulsory_standard[h] += got
        return bound * d

    def _energy(self, demand: Demand, lo: int, hi: int) -> int:
        """GPU-hours left over [lo, hi) once each placed higher rank has spent there the
        least it can, wherever it starts (on the total, and on the standard capacity unless
        the demand may be preemptible)."""
        total = sum(max(0, v) for v in self.total[lo:hi])
        standard = sum(max(0, v) for v in self.standard[lo:hi])
        for a, b, d, gpus, preemptible_ok, _ in self.placed:
            # the window [s, s + d) for s in [a, b - d] overlaps [lo, hi) least at an end
            least = max(0, min(min(a + d, hi) - max(a, lo), min(b, hi) - max(b - d, lo)))
            total -= gpus * least
            if not preemptible_ok:
                standard -= gpus * least
        return max(0, total if demand.preemptible_ok else min(total, standard))

    def _solve(self, demand: Demand, lo: int, hi: int, window: EngineWindow | None) -> int:
        from ortools.sat.python import cp_model

        # the placed higher ranks whose bounds connect to [lo, hi), directly or through others
        members = []
        changed = True
        taken = [False] * len(self.placed)
        while changed:
            changed = False
            for i, item in enumerate(self.placed):
                if not taken[i] and item[0] < hi and item[1] > lo:
                    taken[i] = changed = True
                    members.append(item)
                    lo, hi = min(lo, item[0]), max(hi, item[1])
        if len(members) > self.max_members:
            self.stats["too_large"] += 1
            self.found = None
            return demand.gpu_count
        model = cp_model.CpModel()
        present = model.new_bool_var("present")
        count = model.new_int_var(0, demand.gpu_count, "count")
        model.add(count >= demand.min_gpu_count * present)
        model.add(count <= demand.gpu_count * present)
        own_lo, own_hi = _bounds(self.week_start, self.hours, demand)  # type: ignore[misc]
        start = model.new_int_var(own_lo, own_hi - demand.duration_hours, "start")
        interval = model.new_optional_fixed_size_interval_var(start, demand.duration_hours, present, "k")
        total: list[tuple[Any, Any]] = [(interval, count)]
        standard: list[tuple[Any, Any]] = [] if demand.preemptible_ok else [(interval, count)]
        starts: list[Any] = []
        for n, (a, b, d, gpus, preemptible_ok, planned) in enumerate(members):
            s = model.new_int_var(a, b - d, f"s{n}")
            starts.append(s)
            model.add_hint(s, planned)
            held = (model.new_fixed_size_interval_var(s, d, f"i{n}"), gpus)
            total.append(held)
            if not preemptible_ok:
                standard.append(held)
        for items, capacity in ((total, self.total), (standard, self.standard)):
            if not items:
                continue
            top = max(0, max(capacity[lo:hi]))
            intervals = [i for i, _ in items]
            heights = [h for _, h in items]
            for hour in range(lo, hi):  # the capacity's dips as one-hour blocks
                if top - max(0, capacity[hour]) > 0:
                    intervals.append(model.new_fixed_size_interval_var(hour, 1, f"b{hour}"))
                    heights.append(top - max(0, capacity[hour]))
            model.add_cumulative(intervals, heights, top)
        if window is not None:
            model.add_hint(start, (window.start - self.week_start) // _HOUR)
        model.add_hint(present, window is not None)
        model.add_hint(count, 0 if window is None else window.gpu_count)
        model.maximize(count)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = 7
        solver.parameters.max_deterministic_time = self.limit
        status = solver.solve(model)
        self.stats["solved"] += 1
        if status == cp_model.OPTIMAL:
            self.stats["proven"] += 1
        got = 0 if window is None else window.gpu_count
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and solver.value(count) > got:
            self.stats["better"] += 1
        self.found = None
        if self.lexicographic and status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and solver.value(count) > got:
            for n, item in enumerate(members):  # the higher ranks move to the solution's starts
                self._use(item, -1)
                item[5] = solver.value(starts[n])
                self._use(item, 1)
            self.found = self._window(solver.value(start), demand.duration_hours, solver.value(count))
        if status == cp_model.OPTIMAL:
            return int(solver.objective_value)
        bound = int(solver.best_objective_bound + 1e-6)
        return bound if bound >= demand.min_gpu_count else 0
