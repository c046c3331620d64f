"""The allocation engine: place prioritized GPU demands on pool capacity timelines.

A pure function, no Django and no database: ``allocate()`` takes the pools of a week, the
reserves held back in each pool and the decided demands in priority order, and returns one
window per placed demand plus one explanation per demand: reason codes with parameters, which
``allocations.explanations`` renders as text in the reader's language. See docs/engine.md.

Invariants of every result (the property tests check them):

* Standby GPUs are never allocated: at every hour of every pool, the GPUs of all windows
  sum to at most ``gpu_count - standby``.
* Windows of tier ``priority`` and ``standard`` sum to at most
  ``gpu_count - burst - standby``; only ``preemptible`` windows use the burst reserve.
* A window lies inside the week and inside its demand's bounds (earliest start rounded up,
  latest end rounded down to whole hours of the week's grid), lasts exactly
  ``duration_hours`` and holds between ``min_gpu_count`` and ``gpu_count`` GPUs.
* Equal input gives equal output; the order of ``pools`` does not matter.
* Bad demands (unknown pool, minimum above the count, a window too short) are "not placed"
  with a reason; only nonsensical input (naive datetimes, non-positive counts or hours,
  duplicate keys or refs, reserve percentages out of range) raises ``ValueError``.

Complexity: O(P·H + D·H) for P pools, D demands and H hours: a demand costs one
sliding-window-minimum pass over its own hours (often cut short by a C-level ``min`` or
``max`` over a slice), plus C-level ``bytes.find`` scans when its explanation needs them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "TIER_PREEMPTIBLE",
    "TIER_PRIORITY",
    "TIER_STANDARD",
    "AllocationResult",
    "Demand",
    "EngineWindow",
    "Explanation",
    "PoolCapacity",
    "Reason",
    "WeekCapacity",
    "allocate",
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


@dataclass(frozen=True, slots=True)
class Demand:
    """A decided request, as the engine sees it. Demands are passed in priority order."""

    ref: int  # request id, echoed back
    pool: str  # PoolCapacity.key
    gpu_count: int  # GPUs wanted (the granted count for a partial grant)
    min_gpu_count: int
    duration_hours: int
    earliest_start: datetime  # tz-aware
    latest_end: datetime  # tz-aware
    preemptible_ok: bool = False


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
        standard_gpu_hours=(pool.gpu_count - burst - standby) * hours,
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

    Each demand is placed on its pool's hourly timeline at the earliest start where its full
    GPU count fits for the whole duration; failing that, with the largest count down to its
    minimum that fits anywhere in its bounds (at the earliest start for that count). Standard
    windows use ``gpu_count - burst - standby``; a ``preemptible_ok`` demand that fits there
    at no count in [minimum, count] is tried again on ``gpu_count - standby``, as tier
    ``preemptible``. The first demand placed outside the burst reserve gets tier
    ``priority``, later ones ``standard``. Earlier demands' windows are never moved.

    Raises ``ValueError`` for nonsensical input; see the module docstring for the
    invariants the result keeps.
    """
    if isinstance(hours, bool) or not isinstance(hours, int) or hours <= 0:
        raise ValueError(f"hours must be a positive whole number, got {hours!r}")
    _check_aware("week_start", week_start)
    week_start = week_start.astimezone(UTC)

    timelines: dict[str, _Timeline] = {}
    for pool in pools:
        _check_pool(pool)
        if pool.key in timelines:
            raise ValueError(f"pool key {pool.key!r} appears twice")
        timelines[pool.key] = _Timeline(pool, hours)

    seen_refs: set[int] = set()
    for demand in demands:
        _check_demand(demand)
        if demand.ref in seen_refs:
            raise ValueError(f"demand ref {demand.ref!r} appears twice")
        seen_refs.add(demand.ref)

    week = _Week(week_start, hours)
    windows: list[EngineWindow] = []
    explanations: list[Explanation] = []
    priority_given = False
    for window in fixed:
        if window.ref in seen_refs:
            raise ValueError(f"ref {window.ref!r} is both a fixed window and a demand")
        timeline = timelines.get(window.pool)
        if timeline is None:
            raise ValueError(f"fixed window {window.ref!r} names an unknown pool {window.pool!r}")
        _check_aware(f"fixed window {window.ref!r}: start", window.start)
        _check_aware(f"fixed window {window.ref!r}: end", window.end)
        first, last = week.hour_index(window.start), week.hour_index(window.end)
        if first < last:
            timeline.take(first, last, window.gpu_count, window.tier == TIER_PREEMPTIBLE)
        priority_given = priority_given or window.tier == TIER_PRIORITY
        windows.append(window)
    for demand in demands:
        placement, explanation = _place(demand, timelines.get(demand.pool), week)
        explanations.append(explanation)
        if placement is None:
            continue
        start, count, preemptible = placement
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
                end=week.instants[start + demand.duration_hours],
                tier=tier,
            )
        )
    return AllocationResult(windows=tuple(windows), explanations=tuple(explanations))


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
    for name in ("burst_reserve_pct", "standby_pct"):
        pct = getattr(pool, name)
        if not _is_int(pct) or not 0 <= pct <= 100:
            raise ValueError(f"pool {pool.key!r}: {name} must be 0 to 100, got {pct!r}")
    if pool.burst_reserve_pct + pool.standby_pct > 100:
        raise ValueError(
            f"pool {pool.key!r}: burst_reserve_pct + standby_pct must be at most 100, "
            f"got {pool.burst_reserve_pct} + {pool.standby_pct}"
        )


def _check_demand(demand: Demand) -> None:
    for name in ("gpu_count", "min_gpu_count", "duration_hours"):
        value = getattr(demand, name)
        if not _is_int(value) or value < 1:
            raise ValueError(f"demand {demand.ref!r}: {name} must be at least 1, got {value!r}")
    _check_aware(f"demand {demand.ref!r}: earliest_start", demand.earliest_start)
    _check_aware(f"demand {demand.ref!r}: latest_end", demand.latest_end)


# --- the capacity timeline ----------------------------------------------------------------


class _Timeline:
    """Free GPUs of one pool, per hour of the week.

    ``standard_only`` is the standard capacity minus standard windows, ``total`` the
    allocatable capacity (all but standby) minus all windows, and ``standard`` the free GPUs a
    standard window may take: ``min(standard_only, total)`` at every hour, kept up to date.
    """

    __slots__ = (
        "pool",
        "standard",
        "standard_limit",
        "standard_only",
        "total",
        "total_limit",
    )

    def __init__(self, pool: PoolCapacity, hours: int) -> None:
        burst, standby = reserved_gpus(pool)
        self.pool = pool
        self.total_limit = pool.gpu_count - standby
        self.standard_limit = self.total_limit - burst
        self.standard_only = [self.standard_limit] * hours
        self.total = [self.total_limit] * hours
        self.standard = [self.standard_limit] * hours

    def take(self, start: int, end: int, count: int, preemptible: bool) -> None:
        """Book ``count`` GPUs over hours [start, end) on the standard or burst capacity."""
        self.total[start:end] = [v - count for v in self.total[start:end]]
        if preemptible:
            # A preemptible window may sit on standard capacity too; what is left for
            # standard windows is bounded by what is left in total.
            self.standard[start:end] = list(map(min, self.standard_only[start:end], self.total[start:end]))
        else:
            self.standard_only[start:end] = [v - count for v in self.standard_only[start:end]]
            self.standard[start:end] = [v - count for v in self.standard[start:end]]


def _first_run(free: list[int], lo: int, hi: int, need: int, hours: int) -> int:
    """Earliest s in [lo, hi - hours] with ``free[h] >= need`` for all h in [s, s + hours)."""
    ok = bytes([v >= need for v in free[lo:hi]])
    found = ok.find(b"\x01" * hours)
    return -1 if found < 0 else lo + found


def _blocked_span(free: list[int], lo: int, hi: int, need: int) -> tuple[int, int]:
    """First and last-plus-one hour in [lo, hi) with fewer than ``need`` GPUs free."""
    ok = bytes([v >= need for v in free[lo:hi]])
    return lo + ok.find(b"\x00"), lo + ok.rfind(b"\x00") + 1


def _best_fit(free: list[int], lo: int, hi: int, hours: int, count: int, minimum: int) -> tuple[int, int] | None:
    """The (start, GPU count) to place, or None when not even ``minimum`` fits.

    Full count at the earliest start first; otherwise the largest count in
    [minimum, count) that fits for ``hours`` somewhere in [lo, hi), at its earliest start.
    Ties therefore break towards more GPUs, then towards earlier hours.

    One pass of a sliding-window minimum over [lo, hi): the deque holds the hours of the
    current window whose free counts increase from front to back, so its front is the
    window's minimum. O(hi - lo); two C-level shortcuts answer the common cases first.
    Requires ``hi - lo >= hours``.
    """
    if min(free[lo : lo + hours]) >= count:  # fits at the earliest start
        return lo, count
    if max(free[lo:hi]) < minimum:  # no single hour has room
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


def _place(demand: Demand, timeline: _Timeline | None, week: _Week) -> tuple[tuple[int, int, bool] | None, Explanation]:
    """Place one demand on its timeline (booking it) and explain the outcome.

    Returns ((start hour, GPU count, preemptible) or None, explanation).
    """

    def refuse(code: str, **params: Any) -> tuple[None, Explanation]:
        reason = Reason(code, params)
        return None, Explanation(demand.ref, placed=False, shortened=False, reasons=(reason,))

    if timeline is None:
        return refuse("unknown_pool", pool=demand.pool)
    count, minimum, duration = demand.gpu_count, demand.min_gpu_count, demand.duration_hours
    if minimum > count:
        return refuse("minimum_above_count", min_gpu_count=minimum, gpu_count=count)
    lo, hi = week.bounds(demand)
    if hi - lo < duration:
        if demand.latest_end <= week.start or demand.earliest_start >= week.instants[-1]:
            return refuse(
                "outside_week",
                earliest_start=instant_param(demand.earliest_start),
                latest_end=instant_param(demand.latest_end),
                week_start=week.param(0),
                week_end=week.param(week.hours),
            )
        if hi > lo:
            return refuse("window_too_short", start=week.param(lo), end=week.param(hi), duration_hours=duration)
        return refuse(
            "window_without_whole_hour",
            earliest_start=instant_param(demand.earliest_start),
            latest_end=instant_param(demand.latest_end),
            duration_hours=duration,
        )

    pool = timeline.pool
    preemptible = False
    free = timeline.standard
    fit = None
    if minimum <= timeline.standard_limit:
        fit = _best_fit(free, lo, hi, duration, count, minimum)
    if fit is None and demand.preemptible_ok:
        preemptible = True
        free = timeline.total
        if minimum <= timeline.total_limit:
            fit = _best_fit(free, lo, hi, duration, count, minimum)

    if fit is None:
        limit = timeline.total_limit if demand.preemptible_ok else timeline.standard_limit
        if minimum > limit:
            return refuse(
                "pool_too_small",
                pool=pool.key,
                min_gpu_count=minimum,
                available_gpus=limit,
                capacity="total" if demand.preemptible_ok else "standard",
            )
        full_from, full_to = _blocked_span(free, lo, hi, minimum)
        later = _first_run(free, lo, week.hours, minimum, duration)
        next_fit = None
        if later >= 0:
            next_fit = {
                "start": week.param(later),
                "end": week.param(later + duration),
                "gpu_count": min(count, min(free[later : later + duration])),
                "gpu_model": pool.gpu_model,
            }
        return refuse(
            "pool_full",
            pool=pool.key,
            full_from=week.param(full_from),
            full_to=week.param(full_to),
            min_gpu_count=minimum,
            duration_hours=duration,
            latest_end=week.param(hi),
            next_fit=next_fit,
        )

    start, placed = fit
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
        full_from, full_to = _blocked_span(free, lo, start, placed)
        reasons.append(
            Reason("queued", {"pool": pool.key, "full_from": week.param(full_from), "full_to": week.param(full_to)})
        )
    timeline.take(start, start + duration, placed, preemptible)
    explanation = Explanation(demand.ref, placed=True, shortened=placed < count, reasons=tuple(reasons))
    return (start, placed, preemptible), explanation
