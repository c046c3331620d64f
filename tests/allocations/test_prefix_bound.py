"""The prefix bound of tests/allocations/prefix_bound.py against the exact oracle: on small weeks, at every rank,
no plan (the strict-priority optimum, the engine's) holds more GPU-hours in its ranks 1..r than the bound says."""

from __future__ import annotations

import random
from datetime import timedelta
from itertools import accumulate

from allocations.engine import AllocationResult, Demand, EngineWindow, PoolCapacity, allocate
from tests.allocations.oracle import either_pool_optimum, lexicographic_optimum, unrestricted_optimum
from tests.allocations.prefix_bound import prefix_upper_bounds
from tests.allocations.test_engine_oracle import WEEK, at, demand, random_either_pool_week, random_week


def placed(result: AllocationResult, demands: list[Demand]) -> list[int]:
    by_ref = {w.ref: w for w in result.windows}
    return [
        by_ref[d.ref].gpu_count * ((by_ref[d.ref].end - by_ref[d.ref].start) // timedelta(hours=1))
        if d.ref in by_ref
        else 0
        for d in demands
    ]


def test_no_plan_holds_more_than_the_bound_in_any_prefix_of_the_ranks() -> None:
    for seed in range(30):
        hours, pools, demands = random_week(seed)
        rng = random.Random(seed)
        fixed = (
            [
                EngineWindow(
                    ref=1000,
                    pool=pools[0].key,
                    gpu_count=rng.randint(1, 8),
                    start=at(2),
                    end=at(hours - 2),
                    tier=rng.choice(["standard", "preemptible"]),
                )
            ]
            if seed % 3 == 0
            else []
        )
        kwargs = {"week_start": WEEK, "pools": pools, "demands": demands, "hours": hours, "fixed": fixed}

        bounds = prefix_upper_bounds(**kwargs)  # type: ignore[arg-type]

        strict = list(accumulate(lexicographic_optimum(**kwargs)))  # type: ignore[arg-type]
        engine = list(accumulate(placed(allocate(**kwargs), demands)))  # type: ignore[arg-type]
        assert all(s <= b for s, b in zip(strict, bounds, strict=True)), f"seed {seed}"
        assert all(e <= b for e, b in zip(engine, bounds, strict=True)), f"seed {seed}"
        assert bounds[-1] >= unrestricted_optimum(**kwargs), f"seed {seed}"  # type: ignore[arg-type]


def test_no_plan_holds_more_than_the_bound_when_requests_name_either_pool() -> None:
    for seed in range(1000, 1020):
        hours, pools, demands = random_either_pool_week(seed)

        bounds = prefix_upper_bounds(week_start=WEEK, pools=pools, demands=demands, hours=hours)

        optimum, _ = either_pool_optimum(week_start=WEEK, pools=pools, demands=demands, hours=hours)
        engine = placed(allocate(week_start=WEEK, pools=pools, demands=demands, hours=hours), demands)
        assert all(s <= b for s, b in zip(accumulate(optimum), bounds, strict=True)), f"seed {seed}"
        assert all(e <= b for e, b in zip(accumulate(engine), bounds, strict=True)), f"seed {seed}"


def test_the_bound_at_each_rank_is_what_its_prefix_alone_can_hold() -> None:
    for seed in range(200, 230):
        hours, pools, demands = random_week(seed)

        bounds = prefix_upper_bounds(week_start=WEEK, pools=pools, demands=demands, hours=hours)

        alone = [
            prefix_upper_bounds(week_start=WEEK, pools=pools, demands=demands[:r], hours=hours)[-1]
            for r in range(1, len(demands) + 1)
        ]
        assert bounds == alone, f"seed {seed}"


def test_a_rank_counts_only_what_the_ranks_above_leave_and_what_its_capacity_allows() -> None:
    pool = PoolCapacity(key="p", gpu_count=10, burst_reserve_pct=20, standby_pct=0)  # 8 standard GPUs, 2 burst
    demands = [
        demand(1, 10, 6, 0, 10, minimum=1),  # not preemptible: at most the 8 standard GPUs, 48 GPU-hours
        demand(2, 10, 6, 0, 10, minimum=1),  # 8 standard GPUs × 10 hours in all: 32 more
        demand(3, 4, 10, 0, 10, minimum=1, preemptible_ok=True),  # the burst reserve: 2 GPUs × 10 hours
        demand(4, 4, 4, 0, 10, minimum=1),  # nothing left
    ]

    bounds = prefix_upper_bounds(week_start=WEEK, pools=[pool], demands=demands, hours=10)

    assert bounds == [48, 80, 100, 100]
