"""Placement on one pool's hour grid: today's greedy, and the strict-priority optimizer on top.

Pure numbers, no datetimes: ``allocations.engine`` turns demands into ``Job``s (bounds as hour
indices) and windows back into instants, and explains the outcome. See docs/engine.md.

``place_pool`` finds, for the jobs of one pool in priority order, the lexicographic optimum by
rank: rank 1 gets as many GPU-hours as it can, rank 2 as many as it can while rank 1 keeps
exactly its optimum, and so on. Higher ranks may move (start, tier) but never lose GPU-hours.
For each rank it tries cheap things first:

1. the greedy fit of that job on what the higher ranks hold now (the most GPUs it can get
   without moving anyone), and today's greedy (``greedy_pool``) when that gives more, so the
   result is never lexicographically worse than the greedy;
2. an upper bound from the higher ranks' *compulsory parts* (the hours a window covers
   wherever it starts in its bounds) and the GPU-hours left in the job's bounds: when the
   greedy fit reaches it, or there are no higher ranks its bounds can touch, it is optimal;
3. only then OR-Tools CP-SAT, on the higher ranks whose bounds connect to the job's, with
   the fit of step 1 as the hint: optional fixed-size intervals, one cumulative for the
   total (all but standby) and one for the standard capacity, maximise the job's GPUs
   while every higher rank keeps its count. One worker, a fixed seed and a deterministic
   time limit only, so the answer does not depend on the machine or its load; when the
   limit is hit the better of the solver's and step 1's answer is kept;
4. past the pool's budget (or when step 3's model would be too large), a repair: the same
   model on the job and only the higher windows in its way now, each moved at most a day,
   everything else held; it finds room without proving an optimum, under a budget of its own.

A final pass makes the placement canonical: in rank order, each job takes the most GPUs it
can beside all other windows (only a job whose optimum was not proven can gain here), then
the earliest start on standard capacity, else the earliest start in the burst reserve;
repeated until nothing moves.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, groupby
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ortools.sat.python import cp_model as cp_model_types

__all__ = [
    "MAX_MODEL_JOBS",
    "MAX_REPAIR_JOBS",
    "POOL_SOLVER_BUDGET",
    "REPAIR_BUDGET",
    "SOLVE_LIMIT",
    "Job",
    "Placement",
    "PoolStats",
    "best_fit",
    "blocked_span",
    "first_run",
    "greedy_pool",
    "place_pool",
    "time_blocks",
]

# Limits, all deterministic (independent of the machine's speed and load):
SOLVE_LIMIT = 0.5  # CP-SAT deterministic time per rank (its own work units, not seconds)
# Work per pool, in model size: a solve costs SOLVE_COST plus one per interval of its model.
# Once a pool has spent its budget, its remaining ranks keep their greedy fit.
POOL_SOLVER_BUDGET = 1000
SOLVE_COST = 10
MAX_MODEL_JOBS = 120  # a rank whose bounds connect to more higher ranks keeps its greedy fit
# Past the budget, or when its bounds connect to too many higher ranks, a rank below its bound
# gets a repair: CP-SAT moves only the higher windows that lie in its bounds now (else around
# its fit), everything else held as it is. It finds room, it proves nothing. Its own budget.
REPAIR_BUDGET = 3000
# A large pool holds most of the week's GPU-hours and its models cost no more than a small pool's:
# in a block of more than EXTRA_RANKS ranks (where one budget reaches only the top few), each full
# BUDGET_GPUS of the pool's total capacity past the first adds one POOL_SOLVER_BUDGET (at most
# BUDGET_SCALE_MAX budgets a block), whose solves stop at EXTRA_LIMIT: they find more, rarely prove.
EXTRA_RANKS = 250
BUDGET_GPUS = 128
BUDGET_SCALE_MAX = 3
EXTRA_LIMIT = 0.002
MAX_REPAIR_JOBS = 24
REPAIR_LIMIT = 0.02
REPAIR_REACH = 24  # hours a repair may move a window either way (keeps its model short)
_POLISH_ROUNDS = 4


@dataclass(frozen=True, slots=True)
class Job:
    """A demand on the hour grid: a window of ``duration`` hours inside [lo, hi)."""

    lo: int
    hi: int
    duration: int
    count: int
    minimum: int
    preemptible_ok: bool


# (start hour, GPU count, preemptible) or None when not placed
Placement = tuple[int, int, bool] | None


@dataclass(slots=True)
class PoolStats:
    """What the optimizer did on one pool (for the benchmark and the tests)."""

    solves: int = 0
    proven: int = 0  # solves that ended optimal
    limit_hit: int = 0  # solves stopped by their deterministic limit
    improved: int = 0  # ranks where the solver beat the greedy fit
    deterministic_time: float = 0.0  # CP-SAT's, summed
    # ranks below their full count left to their fit because the budgets were spent (once both are, whatever
    # their bounds would say: they are not computed), or too connected for a repair
    skipped_budget: int = 0
    blocks: int = 0  # independent time blocks the pool was cut into
    repairs: int = 0  # ranks past the budget sent to a repair (counted in solves too)


# --- free-capacity searches on an hourly array ------------------------------------------


def _no_run(free: Sequence[int], lo: int, hi: int, need: int, hours: int) -> bool:
    """True when the sample says no ``hours`` consecutive hours of [lo, hi) all have ``need`` free:
    every such run holds one of the hours lo + hours - 1, lo + 2 × hours - 1, ..., so when none
    of those has ``need``, none fits. A C-level slice, before the full scan; False proves nothing."""
    return max(free[lo + hours - 1 : hi : hours], default=need - 1) < need


def first_run(free: Sequence[int], lo: int, hi: int, need: int, hours: int) -> int:
    """Earliest s in [lo, hi - hours] with ``free[h] >= need`` for all h in [s, s + hours)."""
    if _no_run(free, lo, hi, need, hours):
        return -1
    ok = bytes([v >= need for v in free[lo:hi]])
    found = ok.find(b"\x01" * hours)
    return -1 if found < 0 else lo + found


def blocked_span(free: Sequence[int], lo: int, hi: int, need: int) -> tuple[int, int]:
    """First and last-plus-one hour in [lo, hi) with fewer than ``need`` GPUs free."""
    ok = bytes([v >= need for v in free[lo:hi]])
    return lo + ok.find(b"\x00"), lo + ok.rfind(b"\x00") + 1


def best_fit(free: Sequence[int], lo: int, hi: int, hours: int, count: int, minimum: int) -> tuple[int, int] | None:
    """The (start, GPU count) to place, or None when not even ``minimum`` fits.

    Full count at the earliest start first; otherwise the largest count in
    [minimum, count) that fits for ``hours`` somewhere in [lo, hi), at its earliest start.
    Ties therefore break towards more GPUs, then towards earlier hours.

    One pass of a sliding-window minimum over [lo, hi): the deque holds the hours of the
    current window whose free counts increase from front to back, so its front is the
    window's minimum. O(hi - lo); C-level shortcuts answer the common cases first.
    Requires ``hi - lo >= hours``.
    """
    if min(free[lo : lo + hours]) >= count:  # fits at the earliest start
        return lo, count
    if _no_run(free, lo, hi, minimum, hours):  # not even the minimum fits: a sample of the hours says so
        return None
    if bytes([v >= minimum for v in free[lo:hi]]).find(b"\x01" * hours) < 0:  # not even the minimum fits
        return None
    window: deque[int] = deque()
    push, pop, popleft = window.append, window.pop, window.popleft
    for hour in range(lo, lo + hours - 1):  # fill the first window but one hour
        value = free[hour]
        while window and free[window[-1]] >= value:
            pop()
        push(hour)
    best_start, best_count = -1, minimum - 1
    start = lo
    for hour in range(lo + hours - 1, hi):  # hour is the last of [start, start + hours)
        value = free[hour]
        while window and free[window[-1]] >= value:
            pop()
        push(hour)
        if window[0] < start:
            popleft()
        smallest = free[window[0]]
        if smallest > best_count:  # strictly more GPUs: earlier starts win ties
            if smallest >= count:
                return start, count
            best_start, best_count = start, smallest
        start += 1
    return None if best_start < 0 else (best_start, best_count)


# --- one pool's capacity ----------------------------------------------------------------


class Capacity:
    """Free GPUs of one pool per hour: ``standard`` (standard capacity less standard windows),
    ``total`` (all but standby, less every window) and ``view``, what a standard window may
    use: ``min(standard, total)`` at each hour, kept up to date."""

    __slots__ = ("standard", "standard_limit", "total", "total_limit", "view")

    def __init__(
        self,
        hours: int,
        standard_limit: int,
        total_limit: int,
        fixed_standard: Sequence[int] | None = None,
        fixed_total: Sequence[int] | None = None,
    ) -> None:
        self.standard_limit = standard_limit
        self.total_limit = total_limit
        self.standard = [standard_limit] * hours
        self.total = [total_limit] * hours
        if fixed_standard is not None:
            self.standard = [standard_limit - v for v in fixed_standard]
        if fixed_total is not None:
            self.total = [total_limit - v for v in fixed_total]
        self.view = [s if s < t else t for s, t in zip(self.standard, self.total, strict=True)]

    def copy(self) -> Capacity:
        other = Capacity(0, self.standard_limit, self.total_limit)
        other.standard = list(self.standard)
        other.total = list(self.total)
        other.view = list(self.view)
        return other

    def take(self, start: int, end: int, count: int, preemptible: bool) -> None:
        self.total[start:end] = [v - count for v in self.total[start:end]]
        if preemptible:
            self.view[start:end] = [
                s if s < t else t for s, t in zip(self.standard[start:end], self.total[start:end], strict=True)
            ]
        else:
            self.standard[start:end] = [v - count for v in self.standard[start:end]]
            self.view[start:end] = [v - count for v in self.view[start:end]]

    def free(self, lo: int, hi: int, preemptible: bool) -> list[int]:
        """Free GPUs over [lo, hi) for a window of that tier."""
        return (self.total if preemptible else self.view)[lo:hi]

    def fit(self, job: Job, preemptible: bool) -> tuple[int, int] | None:
        limit = self.total_limit if preemptible else self.standard_limit
        if job.minimum > limit:
            return None
        return best_fit(self.total if preemptible else self.view, job.lo, job.hi, job.duration, job.count, job.minimum)


def _book(cap: Capacity, job: Job, placement: Placement, sign: int = 1) -> None:
    if placement is not None:
        start, count, preemptible = placement
        cap.take(start, start + job.duration, sign * count, preemptible)


def _unbook(cap: Capacity, job: Job, placement: Placement, changes: _Changes) -> None:
    """Take a window out of ``cap``, recording the hours it leaves."""
    _book(cap, job, placement, -1)
    if placement is not None:
        changes.record(placement[0], placement[0] + job.duration)


class _Changes:
    """The move that last freed or took each hour of a pool, by a running count of moves: a job
    whose answer reads only the hours of its bounds gives the same answer while no move since
    touched them."""

    __slots__ = ("at", "count")

    def __init__(self, hours: int) -> None:
        self.at = [0] * hours
        self.count = 0

    def record(self, start: int, end: int) -> None:
        self.count += 1
        self.at[start:end] = [self.count] * (end - start)

    def since(self, lo: int, hi: int, moves: int) -> bool:
        """Whether a move after the first ``moves`` freed or took an hour of [lo, hi)."""
        return max(self.at[lo:hi]) > moves


def _placeable(job: Job, cap: Capacity) -> bool:
    return job.hi - job.lo >= job.duration and job.minimum <= job.count


def greedy_pool(jobs: Sequence[Job | None], cap: Capacity) -> list[Placement]:
    """Today's greedy, in rank order: standard first, the burst reserve only when no count in
    [minimum, count] fits on standard capacity. Books ``cap``. ``None`` jobs are skipped."""
    return [_greedy_fit(job, cap) for job in jobs]


def _greedy_fit(job: Job | None, cap: Capacity) -> Placement:
    """Today's greedy for one job beside what ``cap`` holds, booked in ``cap``."""
    placement: Placement = None
    if job is not None and _placeable(job, cap):
        fit = cap.fit(job, False)
        preemptible = False
        if fit is None and job.preemptible_ok:
            fit, preemptible = cap.fit(job, True), True
        if fit is not None:
            placement = (fit[0], fit[1], preemptible)
            _book(cap, job, placement)
    return placement


def _fit_now(job: Job, cap: Capacity) -> Placement:
    """The most GPUs ``job`` gets beside what ``cap`` holds, without moving anything.

    A preemptible demand may take standard or burst capacity, so its best is on the total;
    the final pass moves it to standard capacity when the same count fits there."""
    if not _placeable(job, cap):
        return None
    fit = cap.fit(job, job.preemptible_ok)
    return None if fit is None else (fit[0], fit[1], job.preemptible_ok)


# --- the optimizer ----------------------------------------------------------------------


def place_pool(
    jobs: Sequence[Job | None],
    *,
    hours: int,
    standard_limit: int,
    total_limit: int,
    fixed_standard: Sequence[int],
    fixed_total: Sequence[int],
    budget: int = POOL_SOLVER_BUDGET,
    repair_budget: int = REPAIR_BUDGET,
    stats: PoolStats | None = None,
    decompose: bool = True,
) -> list[Placement]:
    """Place one pool's jobs (rank order; ``None`` for demands that cannot be placed at all)
    at the lexicographic optimum by rank, as far as the deterministic budget reaches.

    ``fixed_standard`` / ``fixed_total`` are the GPUs fixed windows hold per hour on the
    standard and the total capacity. The pool is first cut into independent time blocks
    (``time_blocks``): each is placed on its own, with its own ``budget`` (more for a block of
    more than ``EXTRA_RANKS`` ranks on a pool of ``BUDGET_GPUS`` × 2 and more, its solves at
    ``EXTRA_LIMIT``; and ``repair_budget`` for the repairs past it); ``decompose=False`` places
    the pool as one block (the tests compare the two)."""
    stats = stats if stats is not None else PoolStats()
    base = Capacity(hours, standard_limit, total_limit, fixed_standard, fixed_total)
    cap = base.copy()
    placements: list[Placement] = [None] * len(jobs)
    values = [0] * len(jobs)
    # The capacity less the placed higher ranks' compulsory parts (the GPUs a window holds at an
    # hour wherever it starts), kept up to date as ranks are placed, and the base capacity's free
    # GPU-hours from hour 0 (total, standard): what the bounds of step 2 read.
    room = base.copy()
    energy = (_positive_sums(base.total), _positive_sums(base.standard))
    placeable = [j for j, job in enumerate(jobs) if job is not None and _placeable(job, cap)]
    blocks = time_blocks(jobs, placeable) if decompose else [placeable]
    stats.blocks += len(blocks)
    extra = budget * (min(BUDGET_SCALE_MAX, max(1, total_limit // BUDGET_GPUS)) - 1)
    changes = _Changes(hours)
    settled = [-1] * len(jobs)  # for a rank the loop left without a window: the moves before its fit found none
    for block in blocks:  # blocks share no hour: each sees only its own windows in ``cap``
        budgets = (budget, extra if len(block) > EXTRA_RANKS else 0, repair_budget)
        _place_block(jobs, block, placements, values, base, cap, (room, energy), budgets, stats, changes, settled)
    _polish(jobs, placements, cap, changes, settled)
    return placements


def time_blocks(jobs: Sequence[Job | None], ranks: Sequence[int]) -> list[list[int]]:
    """``ranks`` (indices into ``jobs``) cut into independent time blocks: the connected
    components of their overlapping bounds [lo, hi). No window of one block can touch an hour
    of another, so the blocks can be placed one by one. Each block lists its ranks in order;
    blocks come in order of their first rank."""
    spans = sorted((jobs[j].lo, jobs[j].hi, j) for j in ranks)  # type: ignore[union-attr]
    blocks: list[list[int]] = []
    end = -1
    for lo, hi, j in spans:
        if not blocks or lo >= end:
            blocks.append([])
        blocks[-1].append(j)
        end = max(end, hi)
    for block in blocks:
        block.sort()
    blocks.sort()
    return blocks


def _place_block(
    jobs: Sequence[Job | None],
    block: list[int],
    placements: list[Placement],
    values: list[int],
    base: Capacity,
    cap: Capacity,
    bounds: tuple[Capacity, tuple[list[int], list[int]]],
    budgets: tuple[int, int, int],
    stats: PoolStats,
    changes: _Changes,
    settled: list[int],
) -> None:
    """The rank loop (greedy fit, bounds, CP-SAT, repairs) over one block's ranks, in rank order.
    Records in ``changes`` the hours a moved window leaves, and in ``settled`` the moves before the
    fit of each rank left without a window (``_polish`` reads both)."""
    budget, extra, repair_budget = budgets
    room, energy = bounds
    tracking_greedy = True  # every rank of the block so far got exactly what the greedy gave it
    # Today's greedy on the block's ranks (blocks share no hour: the same as on the whole pool), run only as
    # far as the block follows it.
    greedy: dict[int, Placement] = {}
    greedy_cap = base.copy()
    greedy_value = 0
    spent = 0
    repair_spent = 0
    # The placed ranks above: their GPUs by (lo, hi, duration, preemptible_ok), and their bounds by connection.
    held: dict[tuple[int, int, int, bool], int] = {}
    connected = _Connected()
    for position, k in enumerate(block):
        job = jobs[k]
        assert job is not None
        moves_before = changes.count
        best = _fit_now(job, cap)
        best_value = 0 if best is None else best[1]
        if tracking_greedy:
            greedy[k] = _greedy_fit(job, greedy_cap)
            greedy_value = 0 if greedy[k] is None else greedy[k][1]  # type: ignore[index]
        if tracking_greedy and greedy_value > best_value:
            for j in block[:position]:  # today's greedy placement of the ranks above has the same values
                _unbook(cap, jobs[j], placements[j], changes)  # type: ignore[arg-type]
                placements[j] = greedy[j]
                _book(cap, jobs[j], placements[j])  # type: ignore[arg-type]
            best, best_value = greedy[k], greedy_value

        if best_value < job.count and spent >= budget + extra and repair_spent >= repair_budget:
            stats.skipped_budget += 1  # no solve or repair is left to the block: its fit stands, bounds or not
        elif best_value < job.count:
            bound = _upper_bound(job, room)
            if best_value < bound:
                bound = _energy_bound(job, energy, held, bound)
            if best_value < bound:
                linked = connected.count(job.lo, job.hi)  # the placed higher ranks whose bounds connect to k's
                if linked == 0:
                    pass  # nothing above it can move out of its way: the fit is optimal
                else:
                    solved: tuple[int, dict[int, Placement], int] = (-1, {}, 0)
                    if spent < budget + extra and linked < MAX_MODEL_JOBS:
                        component = sorted([k, *connected.ranks(job.lo, job.hi)])
                        limit = SOLVE_LIMIT if spent < budget else EXTRA_LIMIT
                        solved = _solve_rank(jobs, values, placements, best, k, component, base, limit, stats)
                        spent += solved[2]
                    elif repair_spent < repair_budget:
                        # Past the budget (or too connected to model whole): a repair, not a proof.
                        members = _blocking(jobs, placements, k, block[:position], job.lo, job.hi)
                        if len(members) > MAX_REPAIR_JOBS and best is not None:  # only around its window
                            members = _blocking(jobs, placements, k, block[:position], best[0], best[0] + job.duration)
                        if 1 < len(members) <= MAX_REPAIR_JOBS:
                            background = cap.copy()
                            for j in members:
                                if j != k:
                                    _book(background, jobs[j], placements[j], -1)  # type: ignore[arg-type]
                            solved = _solve_rank(
                                jobs,
                                values,
                                placements,
                                best,
                                k,
                                members,
                                background,
                                REPAIR_LIMIT,
                                stats,
                                REPAIR_REACH,
                            )
                            repair_spent += solved[2]
                            stats.repairs += 1
                        else:
                            stats.skipped_budget += 1
                    else:
                        stats.skipped_budget += 1
                    if solved[0] > best_value:
                        stats.improved += 1
                        for j, placement in solved[1].items():
                            if j != k:
                                _unbook(cap, jobs[j], placements[j], changes)  # type: ignore[arg-type]
                                placements[j] = placement
                                _book(cap, jobs[j], placement)  # type: ignore[arg-type]
                        best, best_value = solved[1][k], solved[0]

        if tracking_greedy and best_value != greedy_value:
            tracking_greedy = False
        placements[k] = best
        if best is None:
            settled[k] = moves_before
        values[k] = best_value
        if best is not None:
            _book(cap, job, best)
            key = (job.lo, job.hi, job.duration, job.preemptible_ok)
            held[key] = held.get(key, 0) + best_value
            connected.add(job.lo, job.hi, k)
            first, last = job.hi - job.duration, job.lo + job.duration
            if first < last:
                room.take(first, last, best_value, job.preemptible_ok)


def _upper_bound(job: Job, room: Capacity) -> int:
    """A count ``job`` cannot exceed whatever the higher ranks do: what ``room`` (the capacity less
    their compulsory parts) leaves, for its whole duration at some start, and in GPU-hours over its bounds."""
    lo, hi = job.lo, job.hi
    free = room.total if job.preemptible_ok else room.view
    found = best_fit(free, lo, hi, job.duration, job.count, job.minimum)
    if found is None:
        return 0
    part = free[lo:hi]
    gpu_hours = sum(part) if min(part) >= 0 else sum(v for v in part if v > 0)
    bound = min(found[1], gpu_hours // job.duration)
    return bound if bound >= job.minimum else 0


def _positive_sums(free: Sequence[int]) -> list[int]:
    """Free GPU-hours before each hour (hours short of capacity count as 0): [lo, hi) holds
    ``sums[hi] - sums[lo]``."""
    return list(accumulate((max(0, v) for v in free), initial=0))


def _energy_bound(
    job: Job, energy: tuple[list[int], list[int]], held: dict[tuple[int, int, int, bool], int], bound: int
) -> int:
    """``bound`` lowered by energy: the GPU-hours the capacity has over the job's bounds
    [lo, hi) (``energy``: the base capacity's ``_positive_sums``, total and standard), less what
    the placed higher ranks (``held``: their GPUs by lo, hi, duration, preemptible_ok) must spend
    inside them wherever they start (their least overlap with [lo, hi)), divided by the job's
    duration; on the total capacity, and for a job that may not be preemptible on the standard
    capacity too (which preemptible ranks need not use)."""
    lo, hi, duration = job.lo, job.hi, job.duration
    span = hi - lo
    total_sums, standard_sums = energy
    total = total_sums[hi] - total_sums[lo]
    standard = 0 if job.preemptible_ok else standard_sums[hi] - standard_sums[lo]
    for (a, b, d, preemptible_ok), gpus in held.items():
        if a < hi and b > lo:
            least = min(d, span, a + d - lo, hi - b + d)
            if least > 0:
                total -= gpus * least
                if not preemptible_ok:
                    standard -= gpus * least
    gpu_hours = total if job.preemptible_ok else min(total, standard)
    bound = min(bound, max(0, gpu_hours) // duration)
    return bound if bound >= job.minimum else 0


class _Connected:
    """Spans [lo, hi) of hours, grouped into the connected components of their overlaps (spans
    that share an hour, directly or through others): each component's hull, in hour order, and
    its members. Adding a span merges the components it touches; a query touches only the
    components whose hull shares an hour with it (bisect on the hulls)."""

    __slots__ = ("ends", "members", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.members: list[list[int]] = []

    def _touching(self, lo: int, hi: int) -> range:
        """The components whose hull shares an hour with [lo, hi); hulls are disjoint, so
        both their starts and their ends are sorted."""
        return range(bisect_right(self.ends, lo), bisect_left(self.starts, hi))

    def add(self, lo: int, hi: int, member: int) -> None:
        touching = self._touching(lo, hi)
        first, last = touching.start, touching.stop
        groups = self.members[first:last]
        merged = max(groups, key=len, default=[])  # extend the largest: merging stays cheap
        for group in groups:
            if group is not merged:
                merged.extend(group)
        merged.append(member)
        if groups:
            lo, hi = min(lo, self.starts[first]), max(hi, self.ends[last - 1])
        self.starts[first:last] = [lo]
        self.ends[first:last] = [hi]
        self.members[first:last] = [merged]

    def count(self, lo: int, hi: int) -> int:
        """How many spans connect to [lo, hi): those of the components it touches."""
        return sum(len(self.members[i]) for i in self._touching(lo, hi))

    def ranks(self, lo: int, hi: int) -> list[int]:
        """The spans that connect to [lo, hi) (unordered)."""
        return [member for i in self._touching(lo, hi) for member in self.members[i]]


def _blocking(
    jobs: Sequence[Job | None], placements: list[Placement], k: int, higher: Sequence[int], lo: int, hi: int
) -> list[int]:
    """Rank k and the placed higher ranks whose windows overlap the hours [lo, hi) now."""
    members = [k]
    for j in higher:
        placement = placements[j]
        if placement is not None:
            start = placement[0]
            if start < hi and start + jobs[j].duration > lo:  # type: ignore[union-attr]
                members.append(j)
    return sorted(members)


def _solve_rank(
    jobs: Sequence[Job | None],
    values: list[int],
    placements: list[Placement],
    hint: Placement,
    k: int,
    component: list[int],
    base: Capacity,
    limit: float,
    stats: PoolStats,
    reach: int | None = None,
) -> tuple[int, dict[int, Placement], int]:
    """CP-SAT: the most GPUs for rank k while every other member keeps its count.

    Returns (value, placements of the members, work spent in model size)."""
    from ortools.sat.python import cp_model

    model = _model()
    starts = {}
    total_items: list[tuple[object, object]] = []
    standard_items: list[tuple[object, object]] = []
    lo_all, hi_all = len(base.total), 0  # the hours any member may cover
    count_k = None
    present_k = None
    for j in component:
        job = jobs[j]
        assert job is not None
        first, last = job.lo, job.hi - job.duration  # its first and last start
        placement = hint if j == k else placements[j]
        if reach is not None and placement is not None:  # a repair moves windows a little only
            first, last = max(first, placement[0] - reach), min(last, placement[0] + reach)
        lo_all, hi_all = min(lo_all, first), max(hi_all, last + job.duration)
        start = model.new_int_var(first, last, f"s{j}")
        starts[j] = start
        if j == k:
            present_k = model.new_bool_var("p")
            count_k = model.new_int_var(0, job.count, "c")
            model.add(count_k >= job.minimum * present_k)
            model.add(count_k <= job.count * present_k)
            interval = model.new_optional_fixed_size_interval_var(start, job.duration, present_k, f"i{j}")
            demand: object = count_k
        else:
            interval = model.new_fixed_size_interval_var(start, job.duration, f"i{j}")
            demand = values[j]
        total_items.append((interval, demand))
        if not job.preemptible_ok:
            standard_items.append((interval, demand))
    assert count_k is not None and present_k is not None

    def cumulative(items: list[tuple[object, object]], free: list[int]) -> None:
        if not items:
            return
        # free capacity varies by hour (fixed windows): a constant capacity and blocks
        capacity = max(0, max(free[lo_all:hi_all]))
        intervals = [i for i, _ in items]
        demands = [d for _, d in items]
        hour = lo_all
        for free_gpus, run in groupby([v if v > 0 else 0 for v in free[lo_all:hi_all]]):  # runs of equal blocks
            length = len(list(run))
            if free_gpus < capacity:
                intervals.append(model.new_fixed_size_interval_var(hour, length, f"b{hour}"))
                demands.append(capacity - free_gpus)
            hour += length
        model.add_cumulative(intervals, demands, capacity)  # type: ignore[arg-type]

    cumulative(total_items, base.total)
    cumulative(standard_items, base.standard)
    model.maximize(count_k)
    # The hints as add_hint() writes them, in one call rather than two per variable.
    hinted = [(starts[j], placements[j] if j != k else hint) for j in component]
    hints = [(start.index, placement[0]) for start, placement in hinted if placement is not None]
    hints += [(present_k.index, int(hint is not None)), (count_k.index, 0 if hint is None else hint[1])]
    model.proto.solution_hint.vars.extend([var for var, _ in hints])
    model.proto.solution_hint.values.extend([value for _, value in hints])

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 12
    solver.parameters.max_deterministic_time = limit
    solver.parameters.cp_model_presolve = False  # tiny models: presolve costs more than it saves
    solver.parameters.linearization_level = 0
    status = solver.solve(model)
    spent = SOLVE_COST + len(model.proto.constraints)
    stats.solves += 1
    stats.deterministic_time += solver.response_proto.deterministic_time
    if status == cp_model.OPTIMAL:
        stats.proven += 1
    else:
        stats.limit_hit += 1
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return -1, {}, spent
    solution = list(solver.response_proto.solution)  # every variable's value, by index: one call, not one each
    value = solution[count_k.index]
    result: dict[int, Placement] = {}
    for j in component:
        job = jobs[j]
        assert job is not None
        if j == k and value == 0:
            result[j] = None
        else:
            result[j] = (solution[starts[j].index], value if j == k else values[j], job.preemptible_ok)
    return value, result, spent


_MODEL_CLASS: type | None = None


def _model() -> cp_model_types.CpModel:
    """A fresh CP-SAT model, without the aliases OR-Tools adds for its pre-PEP 8 method names
    (``AddCumulative`` beside ``add_cumulative``...): building those by scanning ``dir()`` cost
    about 1.6 ms a model, more than most of the solves here."""
    global _MODEL_CLASS
    if _MODEL_CLASS is None:
        from ortools.sat.python import cp_model

        class Model(cp_model.CpModel):
            def _add_pre_pep8_methods(self) -> None:
                pass

        _MODEL_CLASS = Model
    return _MODEL_CLASS()


def _polish(
    jobs: Sequence[Job | None], placements: list[Placement], cap: Capacity, changes: _Changes, settled: list[int]
) -> None:
    """Make the placement canonical, in rank order, until nothing moves: the most GPUs each
    job can get beside all other windows, then the earliest start on standard capacity,
    else the earliest start in the burst reserve. No job ever loses GPUs.

    A job is looked at again only when a move since it was last looked at (``settled``: the
    moves before; -1 for not yet) freed or took an hour of its bounds: its answer reads only
    those hours, so it would stay where it is. The rank loop's moves count too: a job that got
    no window there finds none while no window has left its bounds, since the windows placed
    since (lower ranks) only take capacity."""
    for _ in range(_POLISH_ROUNDS):
        moved = False
        for k, job in enumerate(jobs):
            if job is None or not _placeable(job, cap):
                continue
            current = placements[k]
            if current is not None and current[1] == job.count and not _may_move(job, current):
                continue
            if settled[k] >= 0 and not changes.since(job.lo, job.hi, settled[k]):
                continue
            _book(cap, job, current, -1)
            count = 0 if current is None else current[1]
            grown = _fit_now(job, cap)
            if grown is not None and grown[1] > count:
                count = grown[1]
            new: Placement = None
            if count > 0:
                new = _earliest(job, cap, count)
                assert new is not None
            _book(cap, job, new)
            if new != current:
                placements[k] = new
                moved = True
                for window in (current, new):
                    if window is not None:
                        changes.record(window[0], window[0] + job.duration)
            settled[k] = changes.count
        if not moved:
            return


def _may_move(job: Job, placement: tuple[int, int, bool]) -> bool:
    return placement[0] > job.lo or placement[2]


def _earliest(job: Job, cap: Capacity, count: int) -> Placement:
    """The canonical window of ``count`` GPUs: earliest start on standard capacity, else (a
    preemptible demand) the earliest start on the total."""
    tiers = (False, True) if job.preemptible_ok else (False,)
    for preemptible in tiers:
        limit = cap.total_limit if preemptible else cap.standard_limit
        if count > limit:
            continue
        start = first_run(cap.total if preemptible else cap.view, job.lo, job.hi, count, job.duration)
        if start >= 0:
            return (start, count, preemptible)
    return None
