"""Benchmark the allocation engine's speed: ``.venv/bin/python bench/bench_engine.py``.

Generates reproducible random demands (fixed seed) over 20 pools, times ``allocate()`` (the
strict-priority optimizer) and ``allocate_greedy()`` (the first-fit greedy it replaced) side by
side with ``time.perf_counter`` best-of-N, compares what they place, and prints a Markdown
table for docs/benchmarks.md. Targets: a realistic week (300 demands, 20 pools, 168 h) in at
most 2 s; 10,000 demands in at most 5 s, never worse than the greedy (by rank, strict
priority: the first demand where they differ gets more from the engine). How close the engine
gets to the exact optimum: bench/bench_engine_quality.py.

Three scenarios, so that every path of the engine is timed:

* ``contended``: pools of 8 to 512 GPUs, far more demand than capacity; most demands are
  refused, which exercises the explanations (full period, next fit).
* ``roomy``: the same demands on pools 16 times larger; most demands are placed.
* ``either``: ``contended`` with every tenth demand naming a second pool (docs/engine.md, "Either pool").
* ``fragmented``: the worst case found so far. Short random windows chop every pool's
  timeline into many distinct free counts, then every demand asks for more GPUs than the
  pool has, so each one runs the full sliding-window search for its best reduced count.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from allocations.engine import AllocationResult, Demand, PoolCapacity, PoolOption, allocate, allocate_greedy

WEEK_START = datetime(2024, 1, 1, tzinfo=UTC)  # a Monday
HOURS = 168
N_POOLS = 20
POOL_SIZES = (8, 16, 32, 64, 128, 256, 512)
MODELS = ("A100", "H100", "L40S", "V100")
GPU_COUNTS = (1, 2, 4, 8, 8, 16, 16, 32, 64)
DURATIONS = (2, 4, 8, 12, 24, 24, 48, 72, 96, 168)
TARGETS = {300: 2.0, 10_000: 5.0}  # demands: seconds

Scenario = Callable[[random.Random, int], tuple[list[PoolCapacity], list[Demand]]]


def at_hour(hour: int) -> datetime:
    return WEEK_START + timedelta(hours=hour)


def make_pools(rng: random.Random, scale: int = 1) -> list[PoolCapacity]:
    """20 pools of mixed sizes and models, default reserves."""
    return [
        PoolCapacity(key=f"pool-{i:02d}", gpu_count=rng.choice(POOL_SIZES) * scale, gpu_model=rng.choice(MODELS))
        for i in range(N_POOLS)
    ]


def make_demands(rng: random.Random, pools: list[PoolCapacity], n: int) -> list[Demand]:
    """``n`` demands spread over ``pools``; about a third accept preemptible capacity.

    Windows start anywhere in the week (a few before it), slack is 0 to 3 days, and 1% name
    an unknown pool, so the refusal paths run too.
    """
    demands = []
    for ref in range(1, n + 1):
        key = rng.choice(pools).key if rng.random() > 0.01 else "no-such-pool"
        gpu_count = rng.choice(GPU_COUNTS)
        duration_hours = rng.choice(DURATIONS)
        start_hour = rng.randint(-12, HOURS - duration_hours)
        demands.append(
            Demand(
                ref=ref,
                pool=key,
                gpu_count=gpu_count,
                min_gpu_count=rng.randint(1, gpu_count),
                duration_hours=duration_hours,
                earliest_start=at_hour(start_hour),
                latest_end=at_hour(start_hour + duration_hours + rng.randint(0, 72)),
                preemptible_ok=rng.random() < 0.3,
            )
        )
    return demands


def contended(rng: random.Random, n: int) -> tuple[list[PoolCapacity], list[Demand]]:
    pools = make_pools(rng)
    return pools, make_demands(rng, pools, n)


def roomy(rng: random.Random, n: int) -> tuple[list[PoolCapacity], list[Demand]]:
    pools = make_pools(rng, scale=16)
    return pools, make_demands(rng, pools, n)


def fragmented(rng: random.Random, n: int) -> tuple[list[PoolCapacity], list[Demand]]:
    pools = [PoolCapacity(key=f"pool-{i:02d}", gpu_count=2000, gpu_model="H100") for i in range(N_POOLS)]
    demands = []
    for ref in range(1, n + 1):
        pool = pools[ref % N_POOLS].key
        if ref <= n * 3 // 10:  # short windows of random size: a jagged timeline
            start_hour = rng.randint(0, HOURS - 3)
            demands.append(
                Demand(
                    ref=ref,
                    pool=pool,
                    gpu_count=rng.randint(1, 60),
                    min_gpu_count=1,
                    duration_hours=rng.randint(1, 3),
                    earliest_start=at_hour(start_hour),
                    latest_end=at_hour(start_hour + 3),
                )
            )
        else:  # more than any pool has, over the whole week: the full reduced-count search
            demands.append(
                Demand(
                    ref=ref,
                    pool=pool,
                    gpu_count=5000,
                    min_gpu_count=1,
                    duration_hours=rng.randint(2, 120),
                    earliest_start=WEEK_START,
                    latest_end=at_hour(HOURS),
                    preemptible_ok=rng.random() < 0.3,
                )
            )
    return pools, demands


def either(rng: random.Random, n: int) -> tuple[list[PoolCapacity], list[Demand]]:
    """``contended``, with every tenth demand naming the next pool too, same GPUs and hours (either pool)."""
    pools, demands = contended(rng, n)
    keys = [pool.key for pool in pools]
    return pools, [
        replace(d, alternatives=(PoolOption(keys[(keys.index(d.pool) + 1) % len(keys)], d.gpu_count,
                                            d.min_gpu_count, d.duration_hours),))
        if i % 10 == 0 and d.pool in keys else d
        for i, d in enumerate(demands)
    ]


SCENARIOS: dict[str, Scenario] = {
    "contended": contended, "roomy": roomy, "fragmented": fragmented, "either": either,
}


def gpu_hours(result: AllocationResult, demands: list[Demand]) -> list[int]:
    by_ref = {w.ref: w for w in result.windows}
    return [by_ref[d.ref].gpu_count * ((by_ref[d.ref].end - by_ref[d.ref].start) // timedelta(hours=1))
            if d.ref in by_ref else 0 for d in demands]


def run(scenario: str, n_demands: int, repeat: int, seed: int) -> dict[str, Any]:
    """Time ``allocate()`` and ``allocate_greedy()`` ``repeat`` times each on one generated
    input, taking turns; return one table row."""
    pools, demands = SCENARIOS[scenario](random.Random(seed), n_demands)
    timings: dict[str, list[float]] = {"engine": [], "greedy": []}
    cpu: dict[str, list[float]] = {"engine": [], "greedy": []}
    results: dict[str, AllocationResult] = {}
    for _ in range(repeat):
        for name, function in (("engine", allocate), ("greedy", allocate_greedy)):
            started, cpu_started = time.perf_counter(), time.process_time()
            results[name] = function(week_start=WEEK_START, pools=pools, demands=demands, hours=HOURS)
            timings[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
    result = results["engine"]
    engine, greedy = gpu_hours(result, demands), gpu_hours(results["greedy"], demands)
    explanations = result.explanations
    return {
        "scenario": scenario,
        "demands": n_demands,
        "pools": len(pools),
        "placed": sum(e.placed for e in explanations),
        "greedy placed": sum(e.placed for e in results["greedy"].explanations),
        "shortened": sum(e.shortened for e in explanations),
        "preemptible": sum(w.tier == "preemptible" for w in result.windows),
        "gpu-hours ratio": sum(engine) / max(1, sum(greedy)),
        "not worse": engine >= greedy,  # lexicographic, in priority order
        "best": min(timings["engine"]),
        "median": statistics.median(timings["engine"]),
        "greedy best": min(timings["greedy"]),
        "cpu": min(cpu["engine"]),
        "greedy cpu": min(cpu["greedy"]),
        "repeat": repeat,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark allocations.engine.allocate() against the greedy.")
    parser.add_argument("--repeat", type=int, default=5, help="runs per row (best-of-N)")
    parser.add_argument("--seed", type=int, default=20240101)
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 1_000, 10_000], help="demand counts")
    parser.add_argument("--scenarios", nargs="+", choices=sorted(SCENARIOS), default=list(SCENARIOS))
    args = parser.parse_args(argv)

    rows = [run(scenario, n, args.repeat, args.seed) for scenario in args.scenarios for n in args.sizes]
    print(
        "| scenario | demands | pools | placed (greedy) | shortened | preemptible | GPU-hours vs greedy "
        "| never worse by rank | engine best (ms) | engine median (ms) | engine CPU (ms) | greedy best (ms) "
        "| greedy CPU (ms) | runs |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['scenario']} | {row['demands']:,} | {row['pools']} | {row['placed']:,} ({row['greedy placed']:,}) "
            f"| {row['shortened']:,} | {row['preemptible']:,} | {row['gpu-hours ratio']:.3f} "
            f"| {'yes' if row['not worse'] else 'NO'} | {row['best'] * 1000:.0f} | {row['median'] * 1000:.0f} "
            f"| {row['cpu'] * 1000:.0f} | {row['greedy best'] * 1000:.0f} | {row['greedy cpu'] * 1000:.0f} "
            f"| {row['repeat']} |"
        )
    ok = all(row["not worse"] for row in rows)
    for size, target in TARGETS.items():
        at_size = [row for row in rows if row["demands"] == size]
        if at_size:
            slowest = max(at_size, key=lambda row: row["best"])
            meets = slowest["best"] <= target
            ok = ok and meets
            print(
                f"slowest {size:,}-demand row ({slowest['scenario']}): best {slowest['best']:.3f} s, "
                f"{'meets' if meets else 'MISSES'} the {target:g} s target"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
