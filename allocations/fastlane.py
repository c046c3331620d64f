"""Placing one fast-lane request in a pool's fast-lane reserve beside a published plan: pure, like engine.py.

The weekly engine never places a window on the fast-lane reserve (``engine.fast_lane_gpus``); between reviews a
small request is placed there at once, on the standard tier, without moving any published window. Per hour, the
room is the least of three: the reserve less the fast-lane windows already in it, the standard capacity (the pool
less the burst reserve and the standby) less every priority and standard window, and the pool less the standby
less every window (an emergency in the burst reserve may have spilled over). See docs/fast-lane.md.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from allocations.engine import (
    TIER_PREEMPTIBLE,
    TIER_STANDARD,
    EngineWindow,
    PoolCapacity,
    fast_lane_gpus,
    reserved_gpus,
)

_HOUR = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class FastLaneRoom:
    """Why nothing fits: the reserve's GPUs and the most of them free for the whole duration at any start."""

    reserve_gpus: int
    most_gpus_free: int


def fast_lane_place(
    *,
    pool: PoolCapacity,
    week_start: datetime,
    hours: int,
    fixed: Sequence[EngineWindow],
    fast_lane_refs: Collection[int],
    ref: int,
    gpu_count: int,
    duration_hours: int,
    earliest_start: datetime,
) -> EngineWindow | FastLaneRoom:
    """``ref``'s standard window of ``gpu_count`` GPUs for ``duration_hours`` at the earliest start from
    ``earliest_start`` (rounded up to the week's hour grid) that ends by the week's end, in the fast-lane reserve
    beside the ``fixed`` windows (those of ``fast_lane_refs`` are in the reserve already); or what was free.
    """
    if min(gpu_count, duration_hours, hours) < 1:
        raise ValueError("counts and hours must be at least 1")
    week_start = week_start.astimezone(UTC)
    burst, standby = reserved_gpus(pool)
    reserve = fast_lane_gpus(pool)
    in_reserve, standard, every = [0] * hours, [0] * hours, [0] * hours
    for window in fixed:
        if window.pool != pool.key:
            continue
        first = max(0, _hours_between(week_start, window.start, up=False))
        last = min(hours, _hours_between(week_start, window.end, up=True))
        for hour in range(first, last):
            every[hour] += window.gpu_count
            if window.tier != TIER_PREEMPTIBLE:
                standard[hour] += window.gpu_count
            if window.ref in fast_lane_refs:
                in_reserve[hour] += window.gpu_count
    free = [
        min(reserve - in_reserve[h], pool.gpu_count - burst - standby - standard[h],
            pool.gpu_count - standby - every[h])
        for h in range(hours)
    ]
    lo = max(0, _hours_between(week_start, earliest_start, up=True))
    most = 0
    for start in range(lo, hours - duration_hours + 1):
        room = min(free[start : start + duration_hours])
        most = max(most, room)
        if room >= gpu_count:
            return EngineWindow(ref=ref, pool=pool.key, gpu_count=gpu_count, start=week_start + start * _HOUR,
                                end=week_start + (start + duration_hours) * _HOUR, tier=TIER_STANDARD)
    return FastLaneRoom(reserve_gpus=reserve, most_gpus_free=max(0, most))


def _hours_between(week_start: datetime, instant: datetime, *, up: bool) -> int:
    seconds = (instant - week_start).total_seconds()
    whole = int(seconds // 3600)
    return whole + 1 if up and seconds > whole * 3600 else whole
