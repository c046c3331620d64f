"""emergency_place: one emergency beside fixed windows, preemptible, never into the standby unless woken."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from allocations.emergency import EmergencyPlacement, EmergencyRoom, emergency_place
from allocations.engine import EngineWindow, PoolCapacity

MONDAY = datetime(2026, 11, 30, tzinfo=UTC)
POOL = PoolCapacity(key="atlas/a100", gpu_count=64, gpu_model="A100", burst_reserve_pct=20, standby_pct=10)


def _hours(n: int) -> timedelta:
    return timedelta(hours=n)


def _place(fixed=(), **overrides):
    args = {"pool": POOL, "week_start": MONDAY, "hours": 168, "fixed": fixed, "ref": 99, "gpu_count": 16,
            "min_gpu_count": 16, "duration_hours": 10, "earliest_start": MONDAY + _hours(50),
            "latest_end": MONDAY + _hours(61), "use_standby": False}
    args.update(overrides)
    return emergency_place(**args)


def _window(ref, count, start, end, tier="standard", pool="atlas/a100"):
    return EngineWindow(ref=ref, pool=pool, gpu_count=count, start=MONDAY + _hours(start), end=MONDAY + _hours(end),
                        tier=tier)


def test_an_empty_pool_places_it_at_once_on_the_preemptible_tier():
    placed = _place()
    assert isinstance(placed, EmergencyPlacement)
    assert placed.window == EngineWindow(ref=99, pool="atlas/a100", gpu_count=16, start=MONDAY + _hours(50),
                                         end=MONDAY + _hours(60), tier="preemptible")
    assert placed.standby_gpu_count == 0


def test_it_uses_only_what_the_fixed_windows_leave_outside_the_standby():
    fixed = [_window(1, 46, 0, 100), _window(2, 4, 40, 70, tier="preemptible"), _window(3, 30, 0, 168, pool="x/y")]
    placed = _place(fixed, gpu_count=16, min_gpu_count=4)
    assert isinstance(placed, EmergencyPlacement)
    assert placed.window.gpu_count == 8  # 64 - 6 standby - 46 - 4; another pool's window does not count
    room = _place(fixed, gpu_count=16, min_gpu_count=9)
    assert room == EmergencyRoom(most_gpus_free=8, first_start=MONDAY + _hours(50), last_end=MONDAY + _hours(61))


def test_the_standby_when_woken_and_how_many_gpus_come_from_it():
    fixed = [_window(1, 46, 0, 100), _window(2, 4, 40, 70, tier="preemptible")]
    placed = _place(fixed, gpu_count=12, use_standby=True, min_gpu_count=12)
    assert isinstance(placed, EmergencyPlacement)
    assert (placed.window.gpu_count, placed.standby_gpu_count) == (12, 4)


def test_it_starts_on_the_next_whole_hour_and_as_early_as_the_minimum_fits():
    fixed = [_window(1, 58, 50, 52)]
    placed = _place(fixed, earliest_start=MONDAY + _hours(49) + timedelta(minutes=20), latest_end=MONDAY + _hours(70))
    assert isinstance(placed, EmergencyPlacement)
    assert placed.window.start == MONDAY + _hours(52)


def test_nonsense_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        _place(gpu_count=4, min_gpu_count=5)
