"""The elastic policy as a pure function: its rules, span boundaries, nights (DST included) and no measurement."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, time, timedelta, tzinfo
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from allocations.elastic.evaluate import (
    Action,
    ActionKind,
    ElasticPolicy,
    PoolInput,
    UsageInput,
    WindowInput,
    evaluate,
    in_night,
    measure,
    policy_errors,
    replay,
    unused_gpus,
)
from tests.clock import FIXED_NOW

H = timedelta(hours=1)
UTC_TZ = UTC
BERLIN = ZoneInfo("Europe/Berlin")
POOL = PoolInput(id=1, gpu_count=64, burst_reserve_gpus=12)
POLICY = ElasticPolicy(idle_span_minutes=240, recent_span_minutes=60)  # version 1: the spans of before, in minutes
# 10:00 UTC on a Wednesday: daytime in UTC and in Berlin.
NOW = FIXED_NOW


def window(wid: int = 7, *, team: int = 3, tier: str = "standard", gpus: int = 8,
           start: datetime = NOW - 24 * H, end: datetime = NOW + 24 * H) -> WindowInput:
    return WindowInput(id=wid, team_id=team, tier=tier, gpu_count=gpus, start=start, end=end)


def hourly(*, window_id: int | None = 7, team: int = 3, util: float | list[float], until: datetime = NOW,
           hours: int = 4, wait: float = 0, gpu_hours: float = 8) -> list[UsageInput]:
    """One record per hour of [until − hours, until), oldest first."""
    utils = util if isinstance(util, list) else [util] * hours
    return [
        UsageInput(
            team_id=team, window_id=window_id, period_start=until - (hours - i) * H,
            period_end=until - (hours - i - 1) * H, gpu_hours_used=Decimal(str(gpu_hours)),
            mean_utilization_pct=Decimal(str(u)), mean_queue_wait_minutes=Decimal(str(wait)),
        )
        for i, u in enumerate(utils)
    ]


def run(windows: list[WindowInput], usage: list[UsageInput], *, now: datetime = NOW,
        policy: ElasticPolicy = POLICY, tz: tzinfo = UTC_TZ, pool: PoolInput = POOL) -> list[Action]:
    return evaluate(policy=policy, pool=pool, windows=windows, usage=usage, now=now, tz=tz)


# --- IDLE --------------------------------------------------------------------------------------


def test_a_window_under_the_threshold_for_the_whole_span_is_idle_and_offers_its_unused_gpus() -> None:
    [action] = run([window()], hourly(util=[10, 20, 20, 10]))
    assert action.kind is ActionKind.IDLE
    assert (action.window_id, action.team_id) == (7, 3)
    assert action.utilization_pct == Decimal("15.0")
    assert action.gpus == 6  # 8 × (1 − 0.15) = 6.8, rounded down
    assert (action.span_start, action.span_end) == (NOW - 4 * H, NOW)


def test_one_hour_at_the_threshold_is_not_idle() -> None:
    assert run([window()], hourly(util=[10, 25, 10, 10])) == []


def test_a_span_one_hour_short_of_measurement_is_not_idle() -> None:
    """Not measured is not idle: records for three of the four hours."""
    assert run([window()], hourly(util=5, hours=3, until=NOW)) == []
    assert run([window()], hourly(util=5, hours=3, until=NOW - H)) == []


def test_a_gap_inside_the_span_is_not_idle() -> None:
    records = hourly(util=5)
    assert run([window()], records[:1] + records[2:]) == []


def test_no_records_at_all_flags_nothing() -> None:
    assert run([window(tier="priority"), window(8, tier="standard")], []) == []


def test_records_without_the_window_do_not_make_it_idle() -> None:
    assert run([window()], hourly(window_id=None, util=5)) == []


def test_the_span_ends_at_the_last_whole_hour() -> None:
    """At 10:59 the span is still 06:00–10:00; at 11:00 it needs the hour 10:00–11:00 too."""
    records = hourly(util=5)
    assert [a.kind for a in run([window()], records, now=NOW + timedelta(minutes=59))] == [ActionKind.IDLE]
    assert run([window()], records, now=NOW + H) == []
    assert [a.kind for a in run([window()], records + hourly(util=5, hours=1, until=NOW + H), now=NOW + H)] == [
        ActionKind.IDLE
    ]


def test_a_window_younger_than_the_idle_span_is_not_idle() -> None:
    assert run([window(start=NOW - 3 * H)], hourly(util=5, hours=3)) == []
    assert [a.kind for a in run([window(start=NOW - 4 * H)], hourly(util=5))] == [ActionKind.IDLE]


def test_a_window_not_active_now_is_ignored() -> None:
    assert run([window(start=NOW - 8 * H, end=NOW)], hourly(util=5)) == []


def test_preemptible_windows_are_never_granted_but_idle() -> None:
    assert run([window(tier="preemptible")], hourly(util=0)) == []


def test_a_policy_that_does_not_offer_only_flags() -> None:
    [action] = run([window(tier="priority")], hourly(util=0), policy=replace(POLICY, offer_idle_to_preemptible=False))
    assert (action.kind, action.gpus) == (ActionKind.IDLE, 0)


def test_a_longer_idle_span_needs_longer_measurement() -> None:
    policy = replace(POLICY, idle_span_minutes=8 * 60)
    assert run([window()], hourly(util=5), policy=policy) == []
    assert len(run([window()], hourly(util=5, hours=8), policy=policy)) == 1


def test_unused_gpus_round_down() -> None:
    assert unused_gpus(8, Decimal("25.0")) == 6
    assert unused_gpus(8, Decimal("24.9")) == 6
    assert unused_gpus(3, Decimal("0")) == 3
    assert unused_gpus(1, Decimal("0.1")) == 0


# --- PROMOTE -----------------------------------------------------------------------------------


def busy_pool(*, util: float = 90, wait: float = 45) -> tuple[list[WindowInput], list[UsageInput]]:
    windows = [window(1, team=1, tier="priority", gpus=16), window(2, team=2, tier="standard", gpus=32)]
    usage = hourly(window_id=1, team=1, util=util, wait=wait, hours=1, gpu_hours=16) + hourly(
        window_id=2, team=2, util=util, wait=wait / 3, hours=1, gpu_hours=32
    )
    return windows, usage


def test_a_busy_pool_with_waiting_priority_work_promotes_the_burst_reserve() -> None:
    windows, usage = busy_pool(wait=90)  # team 1 waits 90 min, team 2 30: the pool's mean is 60
    [action] = run(windows, usage)
    assert action.kind is ActionKind.PROMOTE
    assert (action.window_id, action.team_id, action.gpus) == (None, 1, 12)
    assert action.utilization_pct == Decimal("90.0")
    assert action.queue_wait_minutes == Decimal("90.0")
    assert action.pool_queue_wait_minutes == Decimal("60.0")


@pytest.mark.parametrize(("util", "wait"), [(80, 90), (95, 30)])
def test_no_promotion_at_the_thresholds(util: float, wait: float) -> None:
    windows, usage = busy_pool(util=util, wait=wait)
    if wait == 30:  # every team waits exactly 30 minutes
        usage = [replace(r, mean_queue_wait_minutes=Decimal(30)) for r in usage]
    assert run(windows, usage) == []


def test_no_promotion_without_measurement_or_burst_reserve() -> None:
    windows, usage = busy_pool(wait=90)
    assert run(windows, []) == []
    assert run(windows, usage, pool=replace(POOL, burst_reserve_gpus=0)) == []


def test_waiting_preemptible_work_alone_promotes_nothing() -> None:
    windows = [window(1, team=1, tier="preemptible", gpus=16)]
    assert run(windows, hourly(window_id=1, team=1, util=95, wait=120, hours=1, gpu_hours=16)) == []


# --- NIGHT_OPEN --------------------------------------------------------------------------------


def night_case(now: datetime, tz: tzinfo = UTC_TZ) -> list[ActionKind]:
    end = now.replace(minute=0, second=0, microsecond=0)
    w = window(start=now - 24 * H, end=now + 24 * H)
    # Busy earlier (not idle), quiet in the last hour.
    return [a.kind for a in run([w], hourly(util=[40, 40, 40, 20], until=end), now=now, tz=tz)]


def test_at_night_a_quiet_standard_window_opens_its_spare_gpus() -> None:
    night = NOW.replace(hour=23)
    w = window(start=night - 24 * H, end=night + 24 * H)
    [action] = run([w], hourly(util=20, hours=1, until=night), now=night)
    assert (action.kind, action.gpus, action.utilization_pct) == (ActionKind.NIGHT_OPEN, 6, Decimal("20.0"))
    assert (action.span_start, action.span_end) == (night - H, night)


def test_the_night_crosses_midnight_start_inclusive_end_exclusive() -> None:
    day = NOW.replace(hour=0)
    assert night_case(day.replace(hour=21, minute=59)) == []
    assert night_case(day.replace(hour=22)) == [ActionKind.NIGHT_OPEN]
    assert night_case(day.replace(hour=0, minute=30)) == [ActionKind.NIGHT_OPEN]
    assert night_case(day.replace(hour=5, minute=59)) == [ActionKind.NIGHT_OPEN]
    assert night_case(day.replace(hour=6)) == []


def test_a_night_inside_one_day() -> None:
    policy = replace(POLICY, night_start=time(1), night_end=time(5))
    assert in_night(NOW.replace(hour=1), policy=policy, tz=UTC)
    assert not in_night(NOW.replace(hour=5), policy=policy, tz=UTC)
    assert not in_night(NOW.replace(hour=23), policy=policy, tz=UTC)


def test_the_night_is_in_committee_time() -> None:
    """22:00 in Berlin is 21:00 UTC in winter."""
    assert night_case(NOW.replace(hour=21, minute=30), BERLIN) == [ActionKind.NIGHT_OPEN]
    assert night_case(NOW.replace(hour=21, minute=30), UTC) == []


def test_the_spring_forward_night_in_berlin_is_one_hour_shorter() -> None:
    """28 March 2027: 02:00 CET jumps to 03:00 CEST; 06:00 CEST is 04:00 UTC (05:00 UTC the morning before)."""
    assert night_case(datetime(2027, 3, 27, 21, 0, tzinfo=UTC), BERLIN) == [ActionKind.NIGHT_OPEN]  # 22:00 CET
    assert night_case(datetime(2027, 3, 28, 1, 30, tzinfo=UTC), BERLIN) == [ActionKind.NIGHT_OPEN]  # 03:30 CEST
    assert night_case(datetime(2027, 3, 28, 3, 59, tzinfo=UTC), BERLIN) == [ActionKind.NIGHT_OPEN]  # 05:59 CEST
    assert night_case(datetime(2027, 3, 28, 4, 0, tzinfo=UTC), BERLIN) == []  # 06:00 CEST
    assert night_case(datetime(2027, 3, 27, 4, 30, tzinfo=UTC), BERLIN) == [ActionKind.NIGHT_OPEN]  # 05:30 CET


def test_the_fall_back_night_in_berlin_is_one_hour_longer() -> None:
    """25 October 2026: 03:00 CEST falls back to 02:00 CET; the night runs 20:00–05:00 UTC, nine hours."""
    assert night_case(datetime(2026, 10, 24, 19, 59, tzinfo=UTC), BERLIN) == []  # 21:59 CEST
    assert night_case(datetime(2026, 10, 24, 20, 0, tzinfo=UTC), BERLIN) == [ActionKind.NIGHT_OPEN]  # 22:00 CEST
    assert night_case(datetime(2026, 10, 25, 0, 30, tzinfo=UTC), BERLIN) == [ActionKind.NIGHT_OPEN]  # 02:30 CEST
    assert night_case(datetime(2026, 10, 25, 1, 30, tzinfo=UTC), BERLIN) == [ActionKind.NIGHT_OPEN]  # 02:30 CET
    assert night_case(datetime(2026, 10, 25, 4, 59, tzinfo=UTC), BERLIN) == [ActionKind.NIGHT_OPEN]  # 05:59 CET
    assert night_case(datetime(2026, 10, 25, 5, 0, tzinfo=UTC), BERLIN) == []  # 06:00 CET


def test_at_night_priority_windows_and_unmeasured_windows_stay_closed() -> None:
    night = NOW.replace(hour=23)
    assert run([window(tier="priority", start=night - 24 * H)], hourly(util=0, hours=1, until=night), now=night) == []
    assert run([window(start=night - 24 * H)], [], now=night) == []


def test_a_window_offering_as_idle_is_not_opened_twice_at_night() -> None:
    night = NOW.replace(hour=23)
    actions = run([window(start=night - 24 * H)], hourly(util=5, until=night), now=night)
    assert [a.kind for a in actions] == [ActionKind.IDLE]
    flag_only = replace(POLICY, offer_idle_to_preemptible=False)
    actions = run([window(start=night - 24 * H)], hourly(util=5, until=night), now=night, policy=flag_only)
    assert [(a.kind, a.gpus) for a in actions] == [(ActionKind.IDLE, 0), (ActionKind.NIGHT_OPEN, 7)]


# --- measurement and validation ----------------------------------------------------------------


def test_measure_weights_by_time_and_clips_to_the_span() -> None:
    records = [
        UsageInput(team_id=1, window_id=1, period_start=NOW - 4 * H, period_end=NOW - H,
                   gpu_hours_used=Decimal(1), mean_utilization_pct=Decimal(10), mean_queue_wait_minutes=Decimal(0)),
        UsageInput(team_id=1, window_id=1, period_start=NOW - H, period_end=NOW + H,
                   gpu_hours_used=Decimal(1), mean_utilization_pct=Decimal(50), mean_queue_wait_minutes=Decimal(8)),
    ]
    found = measure(records, start=NOW - 2 * H, end=NOW)
    assert found is not None
    assert (found.utilization_pct, found.max_utilization_pct, found.queue_wait_minutes) == (
        Decimal("30.0"), Decimal(50), Decimal("4.0")
    )
    assert measure(records, start=NOW - 5 * H, end=NOW) is None


def test_the_seed_defaults_are_valid() -> None:
    assert policy_errors(POLICY) == {}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"idle_threshold_pct": 101}, "idle_threshold_pct"),
        ({"promote_utilization_pct": -1}, "promote_utilization_pct"),
        ({"night_utilization_pct": 100.5}, "night_utilization_pct"),
        ({"idle_span_minutes": 0}, "idle_span_minutes"),
        ({"recent_span_minutes": 10_081}, "recent_span_minutes"),
        ({"promote_queue_wait_minutes": -5}, "promote_queue_wait_minutes"),
        ({"night_start": time(6), "night_end": time(6)}, "night_end"),
    ],
)
def test_invalid_policies_name_the_field(change: dict[str, object], field: str) -> None:
    assert list(policy_errors(replace(POLICY, **change))) == [field]  # type: ignore[arg-type]


def test_a_replay_evaluates_every_hour_and_sums_what_was_moved() -> None:
    """Idle from 06:00: the evaluations at 10:15, 11:15 and 12:15 find it (three hours, 6 GPUs each)."""
    records = hourly(util=[10, 20, 20, 10, 10, 10], until=NOW + 2 * H, hours=6)
    totals = replay(policy=POLICY, pools=[(POOL, [window()], records)], since=NOW - 6 * H, until=NOW + 3 * H,
                    tz=UTC)
    assert totals.action_hours[ActionKind.IDLE] == 3 and totals.windows[ActionKind.IDLE] == 1
    assert totals.gpu_hours[ActionKind.IDLE] == 6 + 6 + 7  # means 15%, 15%, 12.5%: 8 × 0.85 → 6, 8 × 0.875 → 7
    assert totals.action_hours[ActionKind.PROMOTE] == totals.action_hours[ActionKind.NIGHT_OPEN] == 0
