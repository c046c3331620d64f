"""The engine at scale: a pool cut into independent time blocks, the budget, and the per-rank bound.

``place_pool`` places each time block of a pool (the connected components of the jobs'
overlapping bounds) on its own, with its own budget. These tests check that cutting changes
nothing a user sees on weeks the budget covers (the same windows as one whole solve), that a
spent budget never leaves a rank worse off than the greedy, that the same input always gives
the same plan, and that the bound the quality benchmark compares the engine with
(``rank_upper_bounds``) is exact where the oracle can check it. The week starts Monday
2024-01-01 00:00 UTC.
"""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta

import pytest

from allocations import solver
from allocations.engine import Demand, PoolCapacity, allocate
from allocations.solver import Capacity, Job, PoolStats, greedy_pool, place_pool, time_blocks
from tests.allocations.oracle import lexicographic_optimum, rank_upper_bounds

WEEK = datetime(2024, 1, 1, tzinfo=UTC)


def job(lo: int, hi: int, duration: int, count: int, minimum: int = 1, preemptible_ok: bool = False) -> Job:
    return Job(lo=lo, hi=hi, duration=duration, count=count, minimum=minimum, preemptible_ok=preemptible_ok)


def test_time_blocks_join_overlapping_bounds_and_keep_touching_ones_apart() -> None:
    jobs = [
        job(10, 20, 2, 1),  # 0: joined to 2 through 1
        job(0, 5, 2, 1),  # 1: touches 3 at hour 5, which shares no hour with it
        job(4, 12, 2, 1),  # 2: overlaps 0 and 1
        job(5, 8, 2, 1),  # 3
        None,  # 4: cannot be placed, in no block
        job(30, 40, 2, 1),  # 5: alone
        job(20, 30, 2, 1),  # 6: touches 0 and 5, overlaps neither
    ]
    assert time_blocks(jobs, [0, 1, 2, 3, 5, 6]) == [[0, 1, 2, 3], [5], [6]]
    assert time_blocks(jobs, [0, 1, 5]) == [[0], [1], [5]]  # without 2 and 3, 0 and 1 are apart


def random_pool(seed: int) -> tuple[list[Job | None], dict[str, object]]:
    """A pool of 24–60 GPUs over 3–4 separate stretches of 24–40 hours (sometimes one demand
    bridges two), 6–9 contended demands a stretch: several blocks, each needing the solver."""
    rng = random.Random(seed)
    total = rng.randint(24, 60)
    standard = total - rng.choice([0, total // 5])
    jobs: list[Job | None] = []
    edges = [0]
    for _ in range(rng.randint(3, 4)):
        edges.append(edges[-1] + rng.randint(24, 40))
    hours = edges[-1]
    for a, b in itertools.pairwise(edges):
        for _ in range(rng.randint(6, 9)):
            duration = rng.randint(2, min(16, b - a))
            lo = rng.randint(a, b - duration)
            hi = min(b, lo + duration + rng.randint(0, 16))
            gpus = rng.randint(2, total)
            jobs.append(job(lo, hi, duration, gpus, rng.choice([gpus, rng.randint(1, gpus)]), rng.random() < 0.3))
    if rng.random() < 0.5:  # a bridge joins the first two stretches into one block
        jobs.insert(rng.randint(0, len(jobs)), job(edges[1] - 6, edges[1] + 6, 4, rng.randint(1, total)))
    rng.shuffle(jobs)  # ranks interleave the blocks
    jobs.insert(rng.randint(0, len(jobs)), None)
    limits = {"hours": hours, "standard_limit": standard, "total_limit": total}
    return jobs, {**limits, "fixed_standard": [0] * hours, "fixed_total": [0] * hours}


@pytest.mark.parametrize("first_seed", range(0, 60, 20))
def test_a_pool_placed_block_by_block_gets_the_same_windows_as_placed_whole(first_seed: int) -> None:
    several = 0
    for seed in range(first_seed, first_seed + 20):
        jobs, kwargs = random_pool(seed)
        stats = PoolStats()
        cut = place_pool(jobs, stats=stats, **kwargs)  # type: ignore[arg-type]
        whole = place_pool(jobs, decompose=False, **kwargs)  # type: ignore[arg-type]
        assert cut == whole, seed
        assert stats.skipped_budget == 0 and stats.limit_hit == 0  # both are the optimum
        several += stats.blocks > 1
    assert several >= 15  # the weeks really are cut


def test_each_block_has_its_own_budget_and_a_spent_one_is_never_worse_than_the_greedy() -> None:
    """With a budget that runs out, the cut pool still solves ranks in later blocks, and every
    plan stays lexicographically at least the greedy's, rank by rank."""
    more_solved = 0
    for seed in range(30):
        jobs, kwargs = random_pool(seed)
        greedy = greedy_pool(jobs, Capacity(kwargs["hours"], kwargs["standard_limit"], kwargs["total_limit"]))  # type: ignore[arg-type]
        cut_stats, whole_stats = PoolStats(), PoolStats()
        cut = place_pool(jobs, budget=40, repair_budget=0, stats=cut_stats, **kwargs)  # type: ignore[arg-type]
        whole = place_pool(jobs, budget=40, repair_budget=0, stats=whole_stats, decompose=False, **kwargs)  # type: ignore[arg-type]
        counts = [[0 if p is None else p[1] for p in plan] for plan in (greedy, cut, whole)]
        assert counts[0] <= counts[1] and counts[0] <= counts[2], seed
        assert cut_stats.solves >= whole_stats.solves
        more_solved += cut_stats.solves > whole_stats.solves
    assert more_solved >= 5


def assert_feasible(
    jobs: list[Job | None], plan: list[tuple[int, int, bool] | None], kwargs: dict[str, object]
) -> None:
    """Every window inside its bounds with a count in [minimum, count], and no hour over capacity."""
    hours, standard_limit, total_limit = kwargs["hours"], kwargs["standard_limit"], kwargs["total_limit"]
    standard, total = [0] * hours, [0] * hours  # type: ignore[operator]
    for item, placement in zip(jobs, plan, strict=True):
        if placement is None:
            continue
        assert item is not None
        start, count, preemptible = placement
        assert item.lo <= start <= item.hi - item.duration and item.minimum <= count <= item.count
        assert item.preemptible_ok or not preemptible
        for hour in range(start, start + item.duration):
            total[hour] += count
            standard[hour] += 0 if preemptible else count
    assert max(total) <= total_limit and max(standard) <= standard_limit  # type: ignore[operator]


def test_past_the_budget_a_repair_moves_the_windows_in_the_way_and_keeps_every_higher_rank() -> None:
    """With the budget spent at once, repairs (moving only the higher windows in a rank's bounds)
    give ranks more than their greedy fit on some weeks, never less to any rank above, and the
    plan stays within capacity and bounds; the full budget is still at least as good."""
    gained = 0
    for seed in range(30):
        jobs, kwargs = random_pool(seed)
        plain = place_pool(jobs, budget=0, repair_budget=0, **kwargs)  # type: ignore[arg-type]
        stats = PoolStats()
        repaired = place_pool(jobs, budget=0, stats=stats, **kwargs)  # type: ignore[arg-type]
        full = place_pool(jobs, **kwargs)  # type: ignore[arg-type]
        assert_feasible(jobs, repaired, kwargs)
        counts = [[0 if p is None else p[1] for p in plan] for plan in (plain, repaired, full)]
        assert counts[0] <= counts[1] <= counts[2], seed  # lexicographic, rank by rank
        assert place_pool(jobs, budget=0, **kwargs) == repaired  # type: ignore[arg-type]
        gained += counts[1] > counts[0]
        assert stats.repairs > 0, seed
    assert gained >= 10


def bench_like_week(seed: int, n: int) -> tuple[list[PoolCapacity], list[Demand]]:
    """bench/bench_engine.py's contended week, smaller: 4 pools, windows over the whole week."""
    rng = random.Random(seed)
    pools = [PoolCapacity(key=f"p{i}", gpu_count=rng.choice([8, 16, 32, 64])) for i in range(4)]
    demands = []
    for ref in range(1, n + 1):
        gpus = rng.choice([1, 2, 4, 8, 16, 32])
        duration = rng.choice([2, 4, 8, 24, 48, 96])
        start = rng.randint(-12, 168 - duration)
        demands.append(
            Demand(
                ref=ref,
                pool=rng.choice(pools).key,
                gpu_count=gpus,
                min_gpu_count=rng.randint(1, gpus),
                duration_hours=duration,
                earliest_start=WEEK + timedelta(hours=start),
                latest_end=WEEK + timedelta(hours=start + duration + rng.randint(0, 72)),
                preemptible_ok=rng.random() < 0.3,
            )
        )
    return pools, demands


def test_the_same_week_gives_the_same_plan_every_time_and_in_any_pool_order() -> None:
    pools, demands = bench_like_week(7, 160)
    first = allocate(week_start=WEEK, pools=pools, demands=demands)
    again = allocate(week_start=WEEK, pools=pools, demands=demands)
    reordered = allocate(week_start=WEEK, pools=list(reversed(pools)), demands=demands)
    assert first == again
    assert set(first.windows) == set(reordered.windows)
    assert first.explanations == reordered.explanations
    assert len(first.windows) > 60


def test_the_per_rank_bound_equals_the_exact_optimum_where_the_engine_reaches_it() -> None:
    """The benchmark's bound: given the engine's plan, each rank's bound is at least what it
    got, and on small weeks (where the engine is exact) it is the strict-priority optimum; in
    its lexicographic mode it finds that optimum without the engine's plan."""
    for seed in range(6):
        rng = random.Random(seed)
        pools = [PoolCapacity(key="p", gpu_count=rng.randint(12, 40))]
        demands = []
        for ref in range(1, 10):
            gpus, duration = rng.randint(2, 16), rng.randint(4, 20)
            start = rng.randint(0, 48 - duration)
            demands.append(
                Demand(
                    ref=ref,
                    pool="p",
                    gpu_count=gpus,
                    min_gpu_count=rng.randint(1, gpus),
                    duration_hours=duration,
                    earliest_start=WEEK + timedelta(hours=start),
                    latest_end=WEEK + timedelta(hours=min(48, start + duration + rng.randint(0, 20))),
                    preemptible_ok=rng.random() < 0.3,
                )
            )
        kwargs = {"week_start": WEEK, "pools": pools, "demands": demands, "hours": 48}
        result = allocate(**kwargs)  # type: ignore[arg-type]
        stats: dict[str, int] = {}
        bounds = rank_upper_bounds(windows=result.windows, stats=stats, **kwargs)  # type: ignore[arg-type]
        optimum = lexicographic_optimum(**kwargs)  # type: ignore[arg-type]
        assert bounds == optimum, seed
        assert stats["better"] == 0
        # held at its own optimum instead of the engine's plan, it is the strict optimum itself
        assert rank_upper_bounds(windows=(), lexicographic=True, **kwargs) == optimum, seed  # type: ignore[arg-type]


def test_a_large_pool_with_many_ranks_gets_more_budget_and_no_rank_above_pays_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A block of more than ``EXTRA_RANKS`` ranks on a pool of 461 GPUs gets two more budgets: more ranks are
    solved, the plan is rank by rank at least the one budget's and feasible; a block of fewer ranks is placed as
    with one budget."""
    rng = random.Random(7)
    jobs: list[Job | None] = []
    for _ in range(300):
        duration = rng.choice([2, 4, 8, 12, 24, 48])
        lo = rng.randint(0, 168 - duration)
        count = rng.choice([4, 8, 16, 32, 64])
        jobs.append(job(lo, min(168, lo + duration + rng.randint(0, 48)), duration, count, rng.randint(1, count)))
    kwargs: dict[str, object] = {
        "hours": 168,
        "standard_limit": 359,
        "total_limit": 461,
        "fixed_standard": [0] * 168,
        "fixed_total": [0] * 168,
    }
    budgets = {"budget": 40, "repair_budget": 0}
    more, one = PoolStats(), PoolStats()

    larger = place_pool(jobs, stats=more, **budgets, **kwargs)  # type: ignore[arg-type]
    fewer = place_pool(jobs[:200], **budgets, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(solver, "BUDGET_SCALE_MAX", 1)
    single = place_pool(jobs, stats=one, **budgets, **kwargs)  # type: ignore[arg-type]

    assert more.solves > one.solves
    assert [0 if p is None else p[1] for p in larger] >= [0 if p is None else p[1] for p in single]
    assert_feasible(jobs, larger, kwargs)
    assert place_pool(jobs[:200], **budgets, **kwargs) == fewer  # type: ignore[arg-type]
