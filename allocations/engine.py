"""The allocation engine: place prioritized GPU demands on pool capacity timelines.

A pure function, no Django and no database: ``allocate()`` takes the pools of a week, the
reserves held back in each pool and the decided demands in priority order, and returns one
window per placed demand plus one explanation per demand: reason codes with parameters, which
``allocations.explanations`` renders as text in the reader's language. See docs/engine.md.

Invariants of every result (the property tests check them):

* Standby GPUs are never allocated: at every hour of every pool, the GPUs of all windows
  sum to at most ``gpu_count - standby - fast_lane``.
* Windows of tier ``priority`` and ``standard`` sum to at most
  ``gpu_count - burst - standby - fast_lane``; only ``preemptible`` windows use the burst reserve.
* The fast-lane reserve (``fast_lane_gpus``, 0 unless the policy sets one) is never placed here: it is
  held for fast-lane grants between reviews (``allocations.fastlane``, docs/fast-lane.md).
* A window lies inside the week and inside its demand's bounds (earliest start rounded up,
  latest end rounded down to whole hours of the week's grid), lasts exactly
  ``duration_hours`` and holds between ``min_gpu_count`` and ``gpu_count`` GPUs.
* Equal input gives equal output; the order of ``pools`` does not matter.
* Bad demands (unknown pool, minimum above the count, a window too short) are "not placed"
  with a reason; only nonsensical input (naive datetimes, non-positive counts or hours,
  duplicate keys or refs, reserve percentages out of range) raises ``ValueError``.

Placement is strict priority, per pool: the lexicographic optimum of GPU-hours by rank
(``allocations.solver``: greedy fit, bounds, then CP-SAT with deterministic limits only;
higher-ranked windows may move but never shrink). ``allocate_greedy`` is the first-fit greedy
it replaced. Explanations are read off the final placement against the fixed windows and the
higher-ranked demands' windows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

from allocations.solver import Capacity, Job, Placement, PoolStats, blocked_span, first_run, greedy_pool, place_pool

__all__ = [
    "TIER_PREEMPTIBLE",
    "TIER_PRIORITY",
    "TIER_STANDARD",
    "AllocationResult",
    "Demand",
    "EngineWindow",
    "Explanation",
    "PoolCapacity",
    "PoolOption",
    "Reason",
    "WeekCapacity",
    "allocate",
    "allocate_greedy",
    "fast_lane_gpus",
    "instant_param",
    "reserved_gpus",
    "week_capacity",
]

TIER_PRIORITY = "priority"
TIER_STANDARD = "standard"
TIER_PREEMPTIBLE = "preemptible"

_HOUR = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class PoolCapacity:
    """A GPU pool's capacity for the week and the reserves held back from it."""

    key: str  # pool identifier (slug), used in windows
    gpu_count: int
    gpu_model: str = ""  # e.g. "A100", used in explanations
    burst_reserve_pct: int = 20
    standby_pct: int = 10
    # Held back from every window the weekly plan places: the fast lane's (docs/fast-lane.md), granted between reviews.
    fast_lane_pct: int = 0


@dataclass(frozen=True, slots=True)
class PoolOption:
    """Another pool a demand may run on, with its conversion: the GPUs and hours on that pool's model."""

    pool: str  # PoolCapacity.key, not the demand's own pool
    gpu_count: int
    min_gpu_count: int
    duration_hours: int


@dataclass(frozen=True, slots=True)
class Demand:
    """A decided request, as the engine sees it. Demands are passed in priority order.

    ``alternatives`` are the other pools it may run on, in the team's order of preference after
    ``pool``: the engine places it on the one that keeps strict priority and places the most
    (docs/engine.md, "Either pool")."""

    ref: int  # request id, echoed back
    pool: str  # PoolCapacity.key
    gpu_count: int  # GPUs wanted (the granted count for a partial grant)
    min_gpu_count: int
    duration_hours: int
    earliest_start: datetime  # tz-aware
    latest_end: datetime  # tz-aware
    preemptible_ok: bool = False
    alternatives: tuple[PoolOption, ...] = ()

    def options(self) -> tuple[Demand, ...]:
        """The demand on each pool it names, its own first, as single-pool demands."""
        return (replace(self, alternatives=()), *(
            replace(
                self,
                pool=option.pool,
                gpu_count=option.gpu_count,
                min_gpu_count=option.min_gpu_count,
                duration_hours=option.duration_hours,
                alternatives=(),
            )
            for option in self.alternatives
        ))

    def on(self, pool: str) -> Demand:
        """The demand as placed on `pool` (one it names), converted; itself for its own pool or one it does not name."""
        return next((option for option in self.options() if option.pool == pool), self)


@dataclass(frozen=True, slots=True)
class EngineWindow:
    """A placed window: ``gpu_count`` GPUs of ``pool`` over [start, end), times in UTC."""

    ref: int
    pool: str
    gpu_count: int
    start: datetime
    end: datetime
    tier: str  # "priority" | "standard" | "preemptible"


@dataclass(frozen=True, slots=True)
class Reason:
    """One part of an explanation: a code and its parameters, never pre-formatted words.

    Parameters are plain JSON values (ints, strings, booleans, ISO 8601 UTC instants, null, or
    an object of those), so a reason can be stored as it is and rendered later in any
    language. The codes and their parameters are listed in docs/engine.md.
    """

    code: str
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a demand got what it got, as reasons in reading order.

    ``shortened`` is true when placed with fewer GPUs; ``placed`` and ``shortened`` carry the
    same facts as the reasons, as flags.
    """

    ref: int
    placed: bool
    shortened: bool
    reasons: tuple[Reason, ...]


@dataclass(frozen=True, slots=True)
class AllocationResult:
    """Windows in demand order (placed demands only); one explanation per demand, in order."""

    windows: tuple[EngineWindow, ...]
    explanations: tuple[Explanation, ...]


def reserved_gpus(pool: PoolCapacity) -> tuple[int, int]:
    """Return the (burst, standby) GPU counts a pool holds back.

    Each is the floor of ``pct * gpu_count // 100``: reserves round down, so a pool of 12
    GPUs with 20% burst and 10% standby keeps 2 burst and 1 standby GPU. Because the two
    percentages sum to at most 100, the reserves never exceed the pool.
    """
    _check_pool(pool)
    burst = pool.burst_reserve_pct * pool.gpu_count // 100
    standby = pool.standby_pct * pool.gpu_count // 100
    return burst, standby


def fast_lane_gpus(pool: PoolCapacity) -> int:
    """The GPUs a pool holds back for the fast lane (``fast_lane_pct`` of its GPUs, rounded down like the other
    reserves): ``allocate()`` places no window on them, of any tier; only a fast-lane grant between reviews does
    (``allocations.fastlane``)."""
    _check_pool(pool)
    return pool.fast_lane_pct * pool.gpu_count // 100


@dataclass(frozen=True, slots=True)
class WeekCapacity:
    """The GPU-hours ``allocate()`` can place on one pool over a span of hours.

    ``standard_gpu_hours`` take priority and standard windows; ``burst_gpu_hours`` only
    preemptible ones. Standby is never placed, so it is in neither.
    """

    standard_gpu_hours: int
    burst_gpu_hours: int

    @property
    def allocatable_gpu_hours(self) -> int:
        return self.standard_gpu_hours + self.burst_gpu_hours


def week_capacity(pool: PoolCapacity, *, hours: int = 168) -> WeekCapacity:
    """What ``allocate()`` can place on ``pool`` over ``hours`` hours, by the same reserve rule.

    Reserves are whole GPUs (``reserved_gpus``), held for every hour, so a pool of 64 GPUs with
    20% burst and 10% standby keeps 12 + 6 GPUs back: 46 × 168 standard and 12 × 168 burst
    GPU-hours, not 70% and 20% of 64 × 168.
    """
    if hours < 0:
        raise ValueError(f"hours must not be negative, got {hours}")
    burst, standby = reserved_gpus(pool)
    return WeekCapacity(
        standard_gpu_hours=(pool.gpu_count - burst - standby - fast_lane_gpus(pool)) * hours,
        burst_gpu_hours=burst * hours,
    )


def allocate(
    *,
    week_start: datetime,
    pools: Sequence[PoolCapacity],
    demands: Sequence[Demand],
    hours: int = 168,
    fixed: Sequence[EngineWindow] = (),
) -> AllocationResult:
    """Place ``demands`` (highest priority first) on the pools over [week_start, +hours).

    ``fixed`` are windows already in force that must not move (a correction keeps the windows
    that have started): they are booked first, returned unchanged among the windows, and
    their refs may not appear among ``demands``. A fixed window may exceed what a pool has
    left if its capacity shrank; it is kept anyway and nothing else is placed beside it.

    Strict priority, per pool: the top-ranked demand gets as many GPU-hours as it can; each
    next one as many as it can while every higher-ranked demand keeps exactly what it got.
    Higher-ranked windows may move (start, tier) to make room, never shrink. Each demand gets
    one window of exactly ``duration_hours`` inside its bounds with a GPU count in
    [minimum, count], or nothing. Standard windows use ``gpu_count - burst - standby``; a
    ``preemptible_ok`` demand may take the burst reserve too (tier ``preemptible``) when that
    gives it more or makes room. The first demand placed outside the burst reserve gets tier
    ``priority``, later ones ``standard``. ``allocations.solver`` does the placing (greedy
    fit, bounds, then CP-SAT with deterministic limits only); docs/engine.md has the details.

    Raises ``ValueError`` for nonsensical input; see the module docstring for the
    invariants the result keeps.
    """
    return _allocate(week_start, pools, demands, hours, fixed, optimize=True)


def allocate_greedy(
    *,
    week_start: datetime,
    pools: Sequence[PoolCapacity],
    demands: Sequence[Demand],
    hours: int = 168,
    fixed: Sequence[EngineWindow] = (),
) -> AllocationResult:
    """The first-fit greedy the engine used before the optimizer, kept for comparison (the
    benchmark) and as the optimizer's warm start: each demand in turn at the earliest start
    where its full count fits, else the most GPUs down to its minimum at the earliest start
    for that count; a preemptible demand tries the burst reserve only when nothing fits on
    standard capacity. Earlier windows never move. Same input checks and explanations."""
    return _allocate(week_start, pools, demands, hours, fixed, optimize=False)


def _allocate(
    week_start: datetime,
    pools: Sequence[PoolCapacity],
    demands: Sequence[Demand],
    hours: int,
    fixed: Sequence[EngineWindow],
    *,
    optimize: bool,
    stats: dict[str, PoolStats] | None = None,
) -> AllocationResult:
    if isinstance(hours, bool) or not isinstance(hours, int) or hours <= 0:
        raise ValueError(f"hours must be a positive whole number, got {hours!r}")
    _check_aware("week_start", week_start)
    week_start = week_start.astimezone(UTC)

    by_key: dict[str, PoolCapacity] = {}
    for pool in pools:
        _check_pool(pool)
        if pool.key in by_key:
            raise ValueError(f"pool key {pool.key!r} appears twice")
        by_key[pool.key] = pool

    seen_refs: set[int] = set()
    for demand in demands:
        _check_demand(demand)
        if demand.ref in seen_refs:
            raise ValueError(f"demand ref {demand.ref!r} appears twice")
        seen_refs.add(demand.ref)

    week = _Week(week_start, hours)
    fixed_standard = {key: [0] * hours for key in by_key}
    fixed_total = {key: [0] * hours for key in by_key}
    windows: list[EngineWindow] = []
    priority_given = False
    for window in fixed:
        if window.ref in seen_refs:
            raise ValueError(f"ref {window.ref!r} is both a fixed window and a demand")
        if window.pool not in by_key:
            raise ValueError(f"fixed window {window.ref!r} names an unknown pool {window.pool!r}")
        _check_aware(f"fixed window {window.ref!r}: start", window.start)
        _check_aware(f"fixed window {window.ref!r}: end", window.end)
        first, last = week.hour_index(window.start), week.hour_index(window.end)
        for use in (fixed_total[window.pool],) if window.tier == TIER_PREEMPTIBLE else (
            fixed_total[window.pool],
            fixed_standard[window.pool],
        ):
            use[first:last] = [v + window.gpu_count for v in use[first:last]]
        priority_given = priority_given or window.tier == TIER_PRIORITY
        windows.append(window)

    limits: dict[str, tuple[int, int]] = {}
    for key in sorted(by_key):
        burst, standby = reserved_gpus(by_key[key])
        total_limit = by_key[key].gpu_count - standby - fast_lane_gpus(by_key[key])  # the fast lane's held back too
        limits[key] = (total_limit - burst, total_limit)
    choices: dict[int, _Choice] = {}
    if any(demand.alternatives for demand in demands):
        demands, choices = _choose_pools(
            demands, by_key, week, limits, fixed_standard, fixed_total, optimize=optimize
        )

    # Demands that cannot be placed at all are refused before any placing; the rest become jobs.
    refusals: list[Explanation | None] = []
    jobs: dict[str, list[Job | None]] = {key: [] for key in by_key}
    for demand in demands:
        refusal, job = _job(demand, by_key.get(demand.pool), week)
        refusals.append(refusal)
        if demand.pool in jobs:
            jobs[demand.pool].append(job)

    placements: dict[str, list[Placement]] = {}
    for key in sorted(by_key):
        standard_limit, total_limit = limits[key]
        if optimize:
            pool_stats = PoolStats()
            placements[key] = place_pool(
                jobs[key],
                hours=hours,
                standard_limit=standard_limit,
                total_limit=total_limit,
                fixed_standard=fixed_standard[key],
                fixed_total=fixed_total[key],
                stats=pool_stats,
            )
            if stats is not None:
                stats[key] = pool_stats
        else:
            capacity = _capacity(hours, limits[key], fixed_standard[key], fixed_total[key])
            placements[key] = greedy_pool(jobs[key], capacity)

    # Explain each demand against the fixed windows and the windows of higher-ranked demands.
    higher = {key: _capacity(hours, limits[key], fixed_standard[key], fixed_total[key]) for key in by_key}
    everything = {key: higher[key].copy() for key in by_key}
    for key, pool_jobs in jobs.items():
        for job, placement in zip(pool_jobs, placements[key], strict=True):
            if job is not None and placement is not None:
                everything[key].take(placement[0], placement[0] + job.duration, placement[1], placement[2])
    position = dict.fromkeys(by_key, 0)
    explanations: list[Explanation] = []
    for demand, refusal in zip(demands, refusals, strict=True):
        if refusal is not None:
            explanations.append(_with_choice(refusal, choices.get(demand.ref)))
            if demand.pool in position:
                position[demand.pool] += 1
            continue
        key = demand.pool
        job = jobs[key][position[key]]
        placement = placements[key][position[key]]
        position[key] += 1
        assert job is not None
        explanation = _explain(demand, job, placement, higher[key], everything[key], by_key[key], week)
        explanations.append(_with_choice(explanation, choices.get(demand.ref)))
        if placement is None:
            continue
        start, count, preemptible = placement
        higher[key].take(start, start + job.duration, count, preemptible)
        if preemptible:
            tier = TIER_PREEMPTIBLE
        elif not priority_given:
            tier, priority_given = TIER_PRIORITY, True
        else:
            tier = TIER_STANDARD
        windows.append(
            EngineWindow(
                ref=demand.ref,
                pool=demand.pool,
                gpu_count=count,
                start=week.instants[start],
                end=week.instants[start + job.duration],
                tier=tier,
            )
        )
    return AllocationResult(windows=tuple(windows), explanations=tuple(explanations))


@dataclass(frozen=True, slots=True)
class _Choice:
    """Where a demand with alternatives went: the pool chosen and what each pool it named would give it."""

    chosen: str
    tried: tuple[tuple[str, int, int], ...]  # (pool, GPUs it would get, GPUs asked there), the team's order


def _choose_pools(
    demands: Sequence[Demand],
    by_key: Mapping[str, PoolCapacity],
    week: _Week,
    limits: Mapping[str, tuple[int, int]],
    fixed_standard: Mapping[str, list[int]],
    fixed_total: Mapping[str, list[int]],
    *,
    optimize: bool,
) -> tuple[list[Demand], dict[int, _Choice]]:
    """Each demand with alternatives on one pool, in rank order: the pool where, beside the higher ranks
    already on it (held at their optimum, as ``place_pool`` holds them), it gets the largest share of what it
    asks there; a tie goes to the pool named first. Returns the demands as single-pool demands.

    Deciding rank by rank keeps strict priority across pools: a demand's choice never changes what a
    higher rank gets, since each higher rank's pool was chosen first and a pool places its ranks in order.
    Single-pool demands cost nothing here but their job."""
    chosen_jobs: dict[str, list[Job | None]] = {key: [] for key in by_key}
    result: list[Demand] = []
    choices: dict[int, _Choice] = {}
    for demand in demands:
        options = demand.options()
        if len(options) == 1:
            if demand.pool in by_key:
                chosen_jobs[demand.pool].append(_job(demand, by_key[demand.pool], week)[1])
            result.append(demand)
            continue
        tried: list[tuple[str, int, int]] = []
        jobs: list[Job | None] = []
        for option in options:
            job = _job(option, by_key[option.pool], week)[1] if option.pool in by_key else None
            jobs.append(job)
            got = 0
            if job is not None:
                placement = _place(chosen_jobs[option.pool] + [job], week.hours, limits[option.pool],
                                   fixed_standard[option.pool], fixed_total[option.pool], optimize=optimize)[-1]
                got = 0 if placement is None else placement[1]
            tried.append((option.pool, got, option.gpu_count))
        best = max(range(len(options)), key=lambda i: (Fraction(tried[i][1], tried[i][2]), -i))
        if options[best].pool in by_key:
            chosen_jobs[options[best].pool].append(jobs[best])
        result.append(options[best])
        choices[demand.ref] = _Choice(options[best].pool, tuple(tried))
    return result, choices


def _place(
    jobs: list[Job | None],
    hours: int,
    limits: tuple[int, int],
    fixed_standard: list[int],
    fixed_total: list[int],
    *,
    optimize: bool,
) -> list[Placement]:
    if optimize:
        return place_pool(jobs, hours=hours, standard_limit=limits[0], total_limit=limits[1],
                          fixed_standard=fixed_standard, fixed_total=fixed_total)
    return greedy_pool(jobs, _capacity(hours, limits, fixed_standard, fixed_total))


def _with_choice(explanation: Explanation, choice: _Choice | None) -> Explanation:
    """A demand with alternatives says where it went and what the pools before it would have given:
    ``pool_chosen`` after its placement (or its refusal, with every pool it named)."""
    if choice is None:
        return explanation
    params = {
        "pool": choice.chosen,
        "tried": [{"pool": pool, "gpu_count": got, "asked": asked} for pool, got, asked in choice.tried],
    }
    return replace(explanation, reasons=(*explanation.reasons, Reason("pool_chosen", params)))


def _capacity(hours: int, limits: tuple[int, int], fixed_standard: list[int], fixed_total: list[int]) -> Capacity:
    return Capacity(hours, *limits, fixed_standard, fixed_total)


# --- validation ---------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_aware(name: str, value: object) -> None:
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime (UTC), got {value!r}")


def _check_pool(pool: PoolCapacity) -> None:
    if not isinstance(pool.key, str) or not pool.key:
        raise ValueError(f"pool key must be a non-empty string, got {pool.key!r}")
    if not _is_int(pool.gpu_count) or pool.gpu_count < 0:
        raise ValueError(f"pool {pool.key!r}: gpu_count must be at least 0, got {pool.gpu_count!r}")
    for name in ("burst_reserve_pct", "standby_pct", "fast_lane_pct"):
        pct = getattr(pool, name)
        if not _is_int(pct) or not 0 <= pct <= 100:
            raise ValueError(f"pool {pool.key!r}: {name} must be 0 to 100, got {pct!r}")
    if pool.burst_reserve_pct + pool.standby_pct + pool.fast_lane_pct > 100:
        raise ValueError(
            f"pool {pool.key!r}: burst_reserve_pct + standby_pct + fast_lane_pct must be at most 100, "
            f"got {pool.burst_reserve_pct} + {pool.standby_pct} + {pool.fast_lane_pct}"
        )


def _check_demand(demand: Demand) -> None:
    for name in ("gpu_count", "min_gpu_count", "duration_hours"):
        value = getattr(demand, name)
        if not _is_int(value) or value < 1:
            raise ValueError(f"demand {demand.ref!r}: {name} must be at least 1, got {value!r}")
    pools = {demand.pool}
    for option in demand.alternatives:
        for name in ("gpu_count", "min_gpu_count", "duration_hours"):
            value = getattr(option, name)
            if not _is_int(value) or value < 1:
                raise ValueError(f"demand {demand.ref!r}: alternative {option.pool!r}: {name} must be at least 1, "
                                 f"got {value!r}")
        if option.pool in pools:
            raise ValueError(f"demand {demand.ref!r}: pool {option.pool!r} is named twice")
        pools.add(option.pool)
    _check_aware(f"demand {demand.ref!r}: earliest_start", demand.earliest_start)
    _check_aware(f"demand {demand.ref!r}: latest_end", demand.latest_end)


# --- explanations -------------------------------------------------------------------------


def instant_param(instant: datetime) -> str:
    """An instant as a reason parameter: ISO 8601 in UTC, "2024-01-02T08:00:00Z"."""
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


class _Week:
    """The hour grid of the week: its instants, in UTC, and as reason parameters."""

    __slots__ = ("_params", "hours", "instants", "start")

    def __init__(self, start: datetime, hours: int) -> None:
        self.start = start
        self.hours = hours
        self.instants = [start + h * _HOUR for h in range(hours + 1)]
        self._params: dict[int, str] = {}

    def bounds(self, demand: Demand) -> tuple[int, int]:
        """Demand bounds as hour indices: start rounded up, end rounded down, clamped."""
        first = -((self.start - demand.earliest_start) // _HOUR)  # ceiling division
        last = (demand.latest_end - self.start) // _HOUR
        return max(0, min(first, self.hours)), max(0, min(last, self.hours))

    def hour_index(self, instant: datetime) -> int:
        """The hour of the grid an instant falls in (rounded down), clamped to the week."""
        return max(0, min((instant - self.start) // _HOUR, self.hours))

    def param(self, hour: int) -> str:
        """The instant of an hour of the grid as a reason parameter."""
        text = self._params.get(hour)
        if text is None:
            text = self._params[hour] = instant_param(self.instants[hour])
        return text


def _refuse(demand: Demand, code: str, **params: Any) -> Explanation:
    return Explanation(demand.ref, placed=False, shortened=False, reasons=(Reason(code, params),))


def _job(demand: Demand, pool: PoolCapacity | None, week: _Week) -> tuple[Explanation | None, Job | None]:
    """The demand on the hour grid, or the reason it cannot be placed whatever else happens."""
    if pool is None:
        return _refuse(demand, "unknown_pool", pool=demand.pool), None
    count, minimum, duration = demand.gpu_count, demand.min_gpu_count, demand.duration_hours
    if minimum > count:
        return _refuse(demand, "minimum_above_count", min_gpu_count=minimum, gpu_count=count), None
    lo, hi = week.bounds(demand)
    if hi - lo < duration:
        if demand.latest_end <= week.start or demand.earliest_start >= week.instants[-1]:
            return _refuse(
                demand,
                "outside_week",
                earliest_start=instant_param(demand.earliest_start),
                latest_end=instant_param(demand.latest_end),
                week_start=week.param(0),
                week_end=week.param(week.hours),
            ), None
        if hi > lo:
            return _refuse(
                demand, "window_too_short", start=week.param(lo), end=week.param(hi), duration_hours=duration
            ), None
        return _refuse(
            demand,
            "window_without_whole_hour",
            earliest_start=instant_param(demand.earliest_start),
            latest_end=instant_param(demand.latest_end),
            duration_hours=duration,
        ), None
    return None, Job(lo, hi, duration, count, minimum, demand.preemptible_ok)


def _explain(
    demand: Demand,
    job: Job,
    placement: Placement,
    higher: Capacity,
    everything: Capacity,
    pool: PoolCapacity,
    week: _Week,
) -> Explanation:
    """Why the demand got ``placement``, read off the capacity the fixed windows and the
    higher-ranked demands' windows (``higher``) leave; ``everything`` holds all windows."""
    count, minimum, duration, lo, hi = demand.gpu_count, job.minimum, job.duration, job.lo, job.hi
    if placement is None:
        limit = higher.total_limit if demand.preemptible_ok else higher.standard_limit
        if minimum > limit:
            return _refuse(
                demand,
                "pool_too_small",
                pool=pool.key,
                min_gpu_count=minimum,
                available_gpus=limit,
                capacity="total" if demand.preemptible_ok else "standard",
            )
        free = _free(higher, demand.preemptible_ok)
        if first_run(free, lo, hi, minimum, duration) >= 0:
            # Room beside the higher ranks, taken by lower ones: only when an optimum was not
            # proven within the deterministic limit. Say what holds the pool now.
            span_free = _free(everything, demand.preemptible_ok)
        else:
            span_free = free
        full_from, full_to = blocked_span(span_free, lo, hi, minimum)
        later = first_run(free, lo, week.hours, minimum, duration)
        next_fit = None
        if later >= 0:
            next_fit = {
                "start": week.param(later),
                "end": week.param(later + duration),
                "gpu_count": min(count, min(free[later : later + duration])),
                "gpu_model": pool.gpu_model,
            }
        return _refuse(
            demand,
            "pool_full",
            pool=pool.key,
            full_from=week.param(full_from),
            full_to=week.param(full_to),
            min_gpu_count=minimum,
            duration_hours=duration,
            latest_end=week.param(hi),
            next_fit=next_fit,
        )

    start, placed, preemptible = placement
    reasons = []
    if placed < count:
        reasons.append(
            Reason(
                "shortened",
                {
                    "gpu_count": placed,
                    "duration_hours": duration,
                    "earliest_start": week.param(lo),
                    "latest_end": week.param(hi),
                },
            )
        )
    reasons.append(
        Reason(
            "placed",
            {
                "start": week.param(start),
                "end": week.param(start + duration),
                "gpu_count": placed,
                "gpu_model": pool.gpu_model,
                "preemptible": preemptible,
            },
        )
    )
    if start > lo:
        free = _free(higher, preemptible)
        could = first_run(free, lo, start - 1 + duration, placed, duration)
        if could >= 0:
            reasons.append(Reason("moved", {"pool": pool.key, "could_start": week.param(could)}))
        else:
            full_from, full_to = blocked_span(free, lo, start, placed)
            reasons.append(
                Reason("queued", {"pool": pool.key, "full_from": week.param(full_from), "full_to": week.param(full_to)})
            )
    return Explanation(demand.ref, placed=True, shortened=placed < count, reasons=tuple(reasons))


def _free(capacity: Capacity, preemptible: bool) -> list[int]:
    return capacity.total if preemptible else capacity.view
