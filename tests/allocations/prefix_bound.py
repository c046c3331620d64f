"""A bound on the strict-priority optimum that holds at any size: per rank, the most GPU-hours the
demands ranked 1..r can hold together in any plan (a transportation relaxation, one min-cost flow).

Independent of the engine's code (the oracle's hour rounding, its own model). Each pool's week is
cut into elementary intervals (between the ends of the demands' windows and the changes of its
capacity); a demand's GPU-hours flow into the intervals of its window, at most its GPUs × an
interval's length into each, and at most ``d × g`` in all, where ``d`` is its duration and ``g``
the most GPUs any ``d`` hours of its window have on the empty pool (at most its count); an
interval takes at most its capacity × its length, and the demands that may not be preemptible
at most the standard capacity. A plan places each window on one pool, at most ``g`` GPUs for
``d`` hours inside its window, so it is such a flow: the flow's value bounds the plan's
GPU-hours. A demand that names other pools (``Demand.alternatives``) flows into any of them, in
each one's units, at most the largest of its options' ``d × g`` in all (it runs on one).

The most flow from the first r demands is a polymatroid's rank function; with a cost on each
demand's flow that falls strictly with its rank, a min-cost flow reaches the greedy vertex of
that polymatroid, whose prefix sums are the most flow of every prefix at once (Edmonds' greedy
algorithm). So one solve gives the bound at every rank.

Used by bench/bench_engine_quality.py ``--large`` and tests/allocations/test_prefix_bound.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from allocations.engine import TIER_PREEMPTIBLE, Demand, EngineWindow, PoolCapacity
from tests.allocations.oracle import _bounds

_HOUR = timedelta(hours=1)


def _capacity(
    week_start: datetime, hours: int, pool: PoolCapacity, fixed: Sequence[EngineWindow]
) -> tuple[list[int], list[int]]:
    """Per hour, the GPUs a plan may place on the pool: in all, and for windows that may not be preemptible."""
    burst = pool.burst_reserve_pct * pool.gpu_count // 100
    standby = pool.standby_pct * pool.gpu_count // 100
    total = [pool.gpu_count - standby] * hours
    standard = [pool.gpu_count - standby - burst] * hours
    for window in fixed:
        if window.pool != pool.key:
            continue
        first = max(0, min(hours, (window.start - week_start) // _HOUR))
        last = max(0, min(hours, (window.end - week_start) // _HOUR))
        for h in range(first, last):
            total[h] -= window.gpu_count
            if window.tier != TIER_PREEMPTIBLE:
                standard[h] -= window.gpu_count
    return [max(0, t) for t in total], [max(0, min(t, s)) for t, s in zip(total, standard, strict=True)]


def _most_gpus(free: list[int], lo: int, hi: int, d: int) -> int:
    """The most GPUs free for ``d`` consecutive hours in [lo, hi)."""
    if min(free[lo:hi]) == max(free[lo:hi]):
        return free[lo]
    return max(min(free[s : s + d]) for s in range(lo, hi - d + 1))


def prefix_upper_bounds(
    *,
    week_start: datetime,
    pools: Sequence[PoolCapacity],
    demands: Sequence[Demand],
    hours: int = 168,
    fixed: Sequence[EngineWindow] = (),
) -> list[int]:
    """Per rank r (demands in priority order), an upper bound on the GPU-hours demands 1..r hold together in
    any plan, hence in the strict-priority optimum: non-decreasing, the last one a bound on the whole week."""
    from ortools.graph.python import min_cost_flow

    week_start = week_start.astimezone(UTC)
    capacity = {pool.key: _capacity(week_start, hours, pool, fixed) for pool in pools}
    # each demand's options that can be placed at all: (pool, lo, hi, GPUs at most, duration, preemptible)
    options: list[list[tuple[str, int, int, int, int, bool]]] = []
    for demand in demands:
        mine = []
        for option in demand.options():
            bounds = _bounds(week_start, hours, option) if option.pool in capacity else None
            if bounds is None:
                continue
            lo, hi = bounds
            total, standard = capacity[option.pool]
            free = total if option.preemptible_ok else standard
            gpus = min(option.gpu_count, _most_gpus(free, lo, hi, option.duration_hours))
            if gpus >= max(1, option.min_gpu_count):
                mine.append((option.pool, lo, hi, gpus, option.duration_hours, option.preemptible_ok))
        options.append(mine)

    # the elementary intervals of each pool: its capacity is constant in each, and every window covers it or not
    cuts: dict[str, set[int]] = {key: {0, hours} for key in capacity}
    for key, (total, standard) in capacity.items():
        cuts[key].update(h for h in range(1, hours) if (total[h], standard[h]) != (total[h - 1], standard[h - 1]))
    for mine in options:
        for key, lo, hi, *_ in mine:
            cuts[key].update((lo, hi))

    flow = min_cost_flow.SimpleMinCostFlow()
    source, sink = 0, 1
    node = 2 + len(demands)  # nodes 2.. are the demands
    tails: list[int] = []
    heads: list[int] = []
    capacities: list[int] = []
    costs: list[int] = []

    def arc(tail: int, head: int, cap: int, cost: int = 0) -> None:
        tails.append(tail)
        heads.append(head)
        capacities.append(cap)
        costs.append(cost)

    # per pool, sorted cut points and for each interval its two nodes: standard (→ total) and total (→ sink)
    starts: dict[str, list[int]] = {}
    nodes: dict[str, int] = {}
    for key, (total, standard) in capacity.items():
        points = sorted(cuts[key])
        starts[key] = points
        nodes[key] = node
        for k in range(len(points) - 1):
            a, b = points[k], points[k + 1]
            arc(node + 2 * k, node + 2 * k + 1, standard[a] * (b - a))
            arc(node + 2 * k + 1, sink, total[a] * (b - a))
        node += 2 * (len(points) - 1)

    supply = 0
    own: dict[int, int] = {}  # rank: its arc from the source
    for rank, mine in enumerate(options):
        if not mine:
            continue
        most = max(gpus * d for _, _, _, gpus, d, _ in mine)
        supply += most
        own[rank] = len(tails)
        arc(source, 2 + rank, most, rank - len(demands))  # the higher the rank, the cheaper its flow
        for key, lo, hi, gpus, _, preemptible_ok in mine:
            points = starts[key]
            first = points.index(lo)
            for k in range(first, first + points[first:].index(hi)):
                arc(2 + rank, nodes[key] + 2 * k + (1 if preemptible_ok else 0), gpus * (points[k + 1] - points[k]))
    arc(source, sink, supply)  # what no interval takes
    flow.add_arcs_with_capacity_and_unit_cost(tails, heads, capacities, costs)
    flow.set_node_supply(source, supply)
    flow.set_node_supply(sink, -supply)
    status = flow.solve()
    if status != flow.OPTIMAL:
        raise RuntimeError(f"prefix bound: min-cost flow ended with status {status}")

    result, running = [], 0
    for rank in range(len(demands)):
        running += flow.flow(own[rank]) if rank in own else 0
        result.append(running)
    return result
