"""Placing one out-of-cycle emergency demand beside a published plan: a pure function, like engine.py.

``allocate()`` places a week's demands on the standard capacity and the burst reserve and never
touches the cold standby; an emergency is different on both counts. It must never move or shrink
a published window (every window of the current plan is fixed here), it goes to the preemptible
tier, and the chair may wake the standby for it. Hence this small function instead of the engine.

The room an emergency may use, per hour, is what the engine gives preemptible work: the pool's
GPUs minus the standby minus every window at that hour (so the burst reserve, and any standard
capacity no window holds); with the standby woken, the standby GPUs too. See docs/emergencies.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from allocations.engine import TIER_PREEMPTIBLE, EngineWindow, PoolCapacity, reserved_gpus

_HOUR = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class EmergencyPlacement:
    """The emergency's window, and how many of its GPUs come out of the cold standby (0 unless woken)."""

    window: EngineWindow
    standby_gpu_count: int


@dataclass(frozen=True, slots=True)
class EmergencyRoom:
    """Why nothing fits: the most GPUs free for the duration at any start, and the hours searched."""

    most_gpus_free: int
    first_start: datetime | None
    last_end: datetime


def emergency_place(
    *,
    pool: PoolCapacity,
    week_start: datetime,
    hours: int,
    fixed: Sequence[EngineWindow],
    ref: int,
    gpu_count: int,
    min_gpu_count: int,
    duration_hours: int,
    earliest_start: datetime,
    latest_end: datetime,
    use_standby: bool,
) -> EmergencyPlacement | EmergencyRoom:
    """Place ``ref`` on ``pool`` as early as possible, beside the ``fixed`` windows, on the preemptible tier.

    The hours are the week's grid [week_start, +hours): the start is ``earliest_start`` rounded up
    to a whole hour, the end at most ``latest_end`` rounded down. The earliest start where at least
    ``min_gpu_count`` GPUs are free for ``duration_hours`` wins (an emergency wants GPUs now), with
    as many GPUs up to ``gpu_count`` as are free there for the whole duration. ``fixed`` windows of
    other pools are ignored. Returns the placement, or an ``EmergencyRoom`` saying what was free.
    """
    if min(gpu_count, min_gpu_count, duration_hours, hours) < 1 or min_gpu_count > gpu_count:
        raise ValueError("counts and hours must be at least 1, and the minimum at most the count")
    week_start = week_start.astimezone(UTC)
    _burst, standby = reserved_gpus(pool)
    outside_standby = pool.gpu_count - standby
    used = [0] * hours
    for window in fixed:
        if window.pool != pool.key:
            continue
        first = max(0, _hours_between(week_start, window.start, up=False))
        last = min(hours, _hours_between(week_start, window.end, up=True))
        for hour in range(first, last):
            used[hour] += window.gpu_count
    limit = pool.gpu_count if use_standby else outside_standby
    free = [limit - u for u in used]
    lo = max(0, _hours_between(week_start, earliest_start, up=True))
    hi = min(hours, _hours_between(week_start, latest_end, up=False))
    most = 0
    for start in range(lo, hi - duration_hours + 1):
        room = min(free[start : start + duration_hours])
        most = max(most, room)
        if room >= min_gpu_count:
            count = min(gpu_count, room)
            beyond = max(0, count - min(outside_standby - u for u in used[start : start + duration_hours]))
            window = EngineWindow(
                ref=ref,
                pool=pool.key,
                gpu_count=count,
                start=week_start + start * _HOUR,
                end=week_start + (start + duration_hours) * _HOUR,
                tier=TIER_PREEMPTIBLE,
            )
            return EmergencyPlacement(window=window, standby_gpu_count=min(count, beyond))
    return EmergencyRoom(
        most_gpus_free=max(0, most),
        first_start=week_start + lo * _HOUR if lo < hours else None,
        last_end=week_start + max(lo, hi) * _HOUR,
    )


def _hours_between(week_start: datetime, instant: datetime, *, up: bool) -> int:
    """Whole hours from ``week_start`` to ``instant``, rounded up or down."""
    seconds = (instant - week_start).total_seconds()
    whole = int(seconds // 3600)
    return whole + 1 if up and seconds > whole * 3600 else whole
