"""An exact strict-priority oracle for the allocation engine: time-indexed MILPs solved by HiGHS.

Independent of the engine's code (its own hour rounding, its own model): for each pool and each
demand ``i`` in priority order, a binary ``x[i, s]`` per possible start ``s`` and an integer
``g[i, s]`` GPUs, ``min·x ≤ g ≤ count·x``, at most one start per demand, and per hour the GPUs of
the windows covering it at most the total (all but standby, less fixed windows); the windows of
demands that may not be preemptible also at most the standard capacity. A preemptible window
may sit anywhere within the total, so a preemptible demand needs only that constraint.

``lexicographic_optimum`` maximises rank 1's GPUs, fixes it, maximises rank 2's, and so on:
the GPU-hours per demand of the strict-priority optimum. ``unrestricted_optimum`` maximises
the week's total GPU-hours, ignoring priority. Meant for small instances (tests, benchmark).
Used by tests/allocations/test_engine_oracle.py and bench/bench_engine_quality.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
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
