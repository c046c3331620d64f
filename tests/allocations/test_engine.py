"""Tests of the allocation engine: a pure function, no Django and no database.

Its explanations are reason codes; the tests read them as codes where that is clearer, and as
the English that allocations.explanations renders from them (in the active language, English
here) where a reader sees the words.

The week starts Monday 2024-01-01 00:00 UTC. The "a100" pool has 20 GPUs with the default
reserves: 4 burst (20%) and 2 standby (10%), so standard windows share 14 GPUs and
preemptible windows may bring the total to 18.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allocations.engine import (
    AllocationResult,
    Demand,
    EngineWindow,
    Explanation,
    PoolCapacity,
    Reason,
    allocate,
    allocate_greedy,
    reserved_gpus,
)
from allocations.explanations import explanation_text

WEEK = datetime(2024, 1, 1, tzinfo=UTC)  # a Monday
HOUR = timedelta(hours=1)
A100 = PoolCapacity(key="a100", gpu_count=20, gpu_model="A100")


def at(day: int, hour: int = 0, minute: int = 0) -> datetime:
    """Day 0 is Monday of the test week."""
    return WEEK + timedelta(days=day, hours=hour, minutes=minute)


def demand(
    ref: int,
    gpus: int,
    hours: int,
    earliest: datetime = WEEK,
    latest: datetime | None = None,
    *,
    minimum: int | None = None,
    pool: str = "a100",
    preemptible_ok: bool = False,
) -> Demand:
    return Demand(
        ref=ref,
        pool=pool,
        gpu_count=gpus,
        min_gpu_count=gpus if minimum is None else minimum,
        duration_hours=hours,
        earliest_start=earliest,
        latest_end=at(7) if latest is None else latest,
        preemptible_ok=preemptible_ok,
    )


def run(*demands: Demand, pools: tuple[PoolCapacity, ...] = (A100,)) -> AllocationResult:
    return allocate(week_start=WEEK, pools=pools, demands=demands)


def texts(result: AllocationResult) -> list[str]:
    return [explanation_text(e.reasons, week_start=WEEK) for e in result.explanations]


def codes(result: AllocationResult) -> list[list[str]]:
    return [[reason.code for reason in e.reasons] for e in result.explanations]


# --- reserves -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu_count", "burst_pct", "standby_pct", "expected"),
    [
        (20, 20, 10, (4, 2)),
        (12, 20, 10, (2, 1)),  # 2.4 and 1.2 round down
        (7, 20, 10, (1, 0)),
        (0, 20, 10, (0, 0)),
        (100, 0, 0, (0, 0)),
        (10, 50, 50, (5, 5)),
    ],
)
def test_reserved_gpus_are_floored_percentages(
    gpu_count: int, burst_pct: int, standby_pct: int, expected: tuple[int, int]
) -> None:
    pool = PoolCapacity(key="p", gpu_count=gpu_count, burst_reserve_pct=burst_pct, standby_pct=standby_pct)
    assert reserved_gpus(pool) == expected


# --- placement ----------------------------------------------------------------------------


def test_demand_fits_at_its_earliest_start() -> None:
    result = run(demand(1, 10, 48, at(1, 8)))

    assert result.windows == (EngineWindow(1, "a100", 10, at(1, 8), at(3, 8), "priority"),)
    assert result.explanations == (
        Explanation(
            1,
            placed=True,
            shortened=False,
            reasons=(
                Reason(
                    "placed",
                    {
                        "start": "2024-01-02T08:00:00Z",
                        "end": "2024-01-04T08:00:00Z",
                        "gpu_count": 10,
                        "gpu_model": "A100",
                        "preemptible": False,
                    },
                ),
            ),
        ),
    )
    assert texts(result) == ["placed Tue 08:00–Thu 08:00 on 10 A100"]


def test_demand_is_queued_later_in_the_week_when_earlier_hours_are_full() -> None:
    result = run(
        demand(1, 14, 48, at(0), at(2)),
        demand(2, 8, 24),
    )

    assert result.windows[1] == EngineWindow(2, "a100", 8, at(2), at(3), "standard")
    assert texts(result)[1] == (
        "placed Wed 00:00–Thu 00:00 on 8 A100; queued: a100 pool full from Mon 00:00 to Wed 00:00"
    )


def test_demand_is_shortened_to_the_most_gpus_free_down_to_its_minimum() -> None:
    # Free after the first two: 4 GPUs Mon–Wed, 6 from Wed on. 6 GPUs on Wed beat 4 on Mon.
    result = run(
        demand(1, 10, 48, at(0), at(2)),
        demand(2, 8, 120, at(2)),
        demand(3, 8, 24, at(0), at(6), minimum=2),
    )

    assert result.windows[2] == EngineWindow(3, "a100", 6, at(2), at(3), "standard")
    explanation = result.explanations[2]
    assert (explanation.ref, explanation.placed, explanation.shortened) == (3, True, True)
    assert explanation.reasons[0] == Reason(
        "shortened",
        {
            "gpu_count": 6,
            "duration_hours": 24,
            "earliest_start": "2024-01-01T00:00:00Z",
            "latest_end": "2024-01-07T00:00:00Z",
        },
    )
    assert codes(result)[2] == ["shortened", "placed", "queued"]
    assert texts(result)[2] == (
        "shortened to 6 GPUs: only 6 free for 24 h between Mon 00:00 and Sun 00:00; "
        "placed Wed 00:00–Thu 00:00 on 6 A100; queued: a100 pool full from Mon 00:00 to Wed 00:00"
    )


def test_shortening_stops_at_the_minimum() -> None:
    result = run(
        demand(1, 12, 168),
        demand(2, 8, 24, minimum=3),  # 2 free: below the minimum
        demand(3, 8, 24, minimum=2),
    )

    assert [w.ref for w in result.windows] == [1, 3]
    assert result.windows[1].gpu_count == 2
    assert not result.explanations[1].placed
    assert result.explanations[2].shortened


def test_deferred_demand_names_the_full_period_and_the_next_fit() -> None:
    result = run(
        demand(1, 14, 96, at(0), at(4)),
        demand(2, 4, 24, at(1), at(3)),
    )

    assert len(result.windows) == 1
    assert result.explanations[1] == Explanation(
        2,
        placed=False,
        shortened=False,
        reasons=(
            Reason(
                "pool_full",
                {
                    "pool": "a100",
                    "full_from": "2024-01-02T00:00:00Z",
                    "full_to": "2024-01-04T00:00:00Z",
                    "min_gpu_count": 4,
                    "duration_hours": 24,
                    "latest_end": "2024-01-04T00:00:00Z",
                    "next_fit": {
                        "start": "2024-01-05T00:00:00Z",
                        "end": "2024-01-06T00:00:00Z",
                        "gpu_count": 4,
                        "gpu_model": "A100",
                    },
                },
            ),
        ),
    )
    assert texts(result)[1] == (
        "not placed: a100 pool full from Tue 00:00 to Thu 00:00 (needs 4 GPUs for 24 h by Thu 00:00); "
        "next fit would be Fri 00:00–Sat 00:00 on 4 A100"
    )


def test_deferred_demand_says_no_fit_this_week_when_the_pool_stays_full() -> None:
    result = run(
        demand(1, 14, 168),
        demand(2, 4, 24, at(1), at(3)),
    )

    assert result.explanations[1].reasons[0].params["next_fit"] is None
    assert texts(result)[1] == (
        "not placed: a100 pool full from Tue 00:00 to Thu 00:00 (needs 4 GPUs for 24 h by Thu 00:00); no fit this week"
    )


def test_week_long_window_ends_next_monday() -> None:
    result = run(demand(1, 10, 168))

    assert result.windows[0].end == at(7)
    assert texts(result) == ["placed Mon 00:00–next Mon 00:00 on 10 A100"]


def test_demand_bounds_round_inward_to_whole_hours() -> None:
    result = run(
        demand(1, 2, 11, at(0, 8, 30), at(0, 20, 59)),  # 09:00 to 20:00 holds 11 h
        demand(2, 2, 12, at(0, 8, 30), at(0, 20, 59)),
    )

    assert result.windows == (EngineWindow(1, "a100", 2, at(0, 9), at(0, 20), "priority"),)
    assert texts(result)[1] == "not placed: its window Mon 09:00–Mon 20:00 cannot hold 12 h"


def test_demand_bounds_are_clamped_to_the_week() -> None:
    result = run(demand(1, 2, 24, at(-3), at(9)))

    assert (result.windows[0].start, result.windows[0].end) == (at(0), at(1))


def test_demand_outside_the_week_is_not_placed() -> None:
    result = run(demand(1, 2, 24, at(-3), at(-1)))

    assert result.windows == ()
    assert texts(result) == [
        "not placed: its window 2023-12-29 00:00–2023-12-31 00:00 UTC "
        "lies outside the week 2024-01-01 00:00–2024-01-08 00:00 UTC"
    ]


def test_unknown_pool_and_minimum_above_count_are_not_placed_with_a_reason() -> None:
    result = run(
        demand(1, 2, 24, pool="h100"),
        demand(2, 4, 24, minimum=5),
        demand(3, 4, 24),
    )

    assert [w.ref for w in result.windows] == [3]
    assert [e.reasons for e in result.explanations[:2]] == [
        (Reason("unknown_pool", {"pool": "h100"}),),
        (Reason("minimum_above_count", {"min_gpu_count": 5, "gpu_count": 4}),),
    ]
    assert texts(result)[:2] == [
        "not placed: unknown pool 'h100'",
        "not placed: minimum 5 GPUs is more than the 4 asked",
    ]


def test_pool_without_a_model_names_gpus() -> None:
    pool = PoolCapacity(key="mixed", gpu_count=10, burst_reserve_pct=0, standby_pct=0)

    result = run(demand(1, 1, 2, pool="mixed"), demand(2, 3, 2, pool="mixed"), pools=(pool,))

    assert texts(result) == ["placed Mon 00:00–Mon 02:00 on 1 GPU", "placed Mon 00:00–Mon 02:00 on 3 GPUs"]


def test_aware_input_in_another_zone_gives_utc_windows() -> None:
    plus_two = timezone(timedelta(hours=2))
    week_start = WEEK.astimezone(plus_two)
    d = demand(1, 2, 24, at(1, 8).astimezone(plus_two), at(3).astimezone(plus_two))

    result = allocate(week_start=week_start, pools=[A100], demands=[d])

    assert result.windows[0].start == at(1, 8)
    assert result.windows[0].start.utcoffset() == timedelta(0)
    assert texts(result) == ["placed Tue 08:00–Wed 08:00 on 2 A100"]


# --- reserves and tiers -------------------------------------------------------------------


def test_standard_windows_never_use_the_burst_reserve() -> None:
    result = run(
        demand(1, 14, 168),
        demand(2, 4, 24),  # 4 burst GPUs are free, but not for a standard demand
        demand(3, 15, 24),
    )

    assert [w.ref for w in result.windows] == [1]
    assert texts(result)[1].startswith("not placed: a100 pool full from Mon 00:00 to next Mon 00:00")
    assert (
        texts(result)[2]
        == "not placed: needs at least 15 GPUs, the a100 pool has 14 for standard windows; no fit this week"
    )


def test_preemptible_demand_uses_the_burst_reserve_and_moves_to_let_a_lower_rank_fit() -> None:
    result = run(
        demand(1, 10, 168),
        demand(2, 4, 24, preemptible_ok=True),  # fits in standard: stays standard
        demand(3, 8, 24, preemptible_ok=True),  # 0 standard free Mon; 4 standard + 4 burst from Tue
        demand(4, 1, 24, at(1), at(2), preemptible_ok=True),  # only Tue: fits if demand 3 starts Wed
    )

    assert result.windows[1:] == (
        EngineWindow(2, "a100", 4, at(0), at(1), "standard"),
        EngineWindow(3, "a100", 8, at(2), at(3), "preemptible"),
        EngineWindow(4, "a100", 1, at(1), at(2), "standard"),  # 4 standard GPUs are free on Tue
    )
    assert texts(result)[2] == (
        "placed Wed 00:00–Thu 00:00 on 8 A100, preemptible (in the burst reserve); "
        "moved later so that lower-ranked requests fit too: it could have started Tue 00:00"
    )
    assert texts(result)[3] == "placed Tue 00:00–Wed 00:00 on 1 A100"


def test_preemptible_demand_is_refused_when_only_standby_is_left() -> None:
    result = run(
        demand(1, 10, 168),
        demand(2, 4, 24, preemptible_ok=True),
        demand(3, 8, 24, at(1), at(2), preemptible_ok=True),  # 4 standard + 4 burst on Tue
        demand(4, 1, 24, at(1), at(2), preemptible_ok=True),  # 18 in use Tue: only standby left
    )

    assert result.windows[2] == EngineWindow(3, "a100", 8, at(1), at(2), "preemptible")
    assert texts(result)[3] == (
        "not placed: a100 pool full from Tue 00:00 to Wed 00:00 (needs 1 GPU for 24 h by Wed 00:00); "
        "next fit would be Wed 00:00–Thu 00:00 on 1 A100"
    )


def test_standby_gpus_are_never_allocated() -> None:
    result = run(demand(1, 20, 24, minimum=15, preemptible_ok=True))  # 15 > 14 standard GPUs

    assert result.windows == (EngineWindow(1, "a100", 18, at(0), at(1), "preemptible"),)
    assert result.explanations[0].shortened


def test_preemptible_windows_leave_less_for_later_standard_demands() -> None:
    result = run(
        demand(1, 10, 168),
        demand(2, 8, 24, at(0), at(1), preemptible_ok=True),  # 4 standard + 4 burst GPUs: total now 18
        demand(3, 2, 24, at(0), at(1)),
    )

    assert [w.tier for w in result.windows] == ["priority", "preemptible"]
    assert not result.explanations[2].placed


def test_higher_ranked_preemptible_window_moves_so_a_standard_demand_fits() -> None:
    result = run(
        demand(1, 10, 168),
        demand(2, 8, 24, preemptible_ok=True),  # any day: it leaves Monday to demand 3
        demand(3, 2, 24, at(0), at(1)),
    )

    assert [(w.ref, w.start, w.tier) for w in result.windows] == [
        (1, at(0), "priority"),
        (2, at(1), "preemptible"),
        (3, at(0), "standard"),
    ]


def test_top_ranked_placed_demand_gets_the_priority_tier() -> None:
    result = run(
        demand(1, 2, 24, pool="h100"),  # top-ranked, not placed
        demand(2, 15, 24, minimum=10),  # placed in standard capacity, 14 GPUs
        demand(3, 2, 24),
    )

    assert [(w.ref, w.tier) for w in result.windows] == [(2, "priority"), (3, "standard")]


def test_preemptible_window_does_not_take_the_priority_tier() -> None:
    result = run(
        demand(1, 16, 24, preemptible_ok=True),
        demand(2, 2, 24, at(1)),
    )

    assert [(w.ref, w.tier) for w in result.windows] == [(1, "preemptible"), (2, "priority")]


# --- determinism --------------------------------------------------------------------------


def _busy_week() -> tuple[list[PoolCapacity], list[Demand]]:
    rng = random.Random(7)
    pools = [PoolCapacity(key=f"pool-{i}", gpu_count=rng.choice([8, 16, 64]), gpu_model="H100") for i in range(5)]
    demands = []
    for ref in range(1, 201):
        gpus = rng.randint(1, 16)
        start = rng.randint(0, 150)
        demands.append(
            demand(
                ref,
                gpus,
                rng.randint(1, 48),
                at(0, start),
                at(0, start + rng.randint(0, 120)),
                minimum=rng.randint(1, gpus),
                pool=f"pool-{rng.randrange(5)}",
                preemptible_ok=rng.random() < 0.3,
            )
        )
    return pools, demands


def test_equal_input_gives_equal_output() -> None:
    pools, demands = _busy_week()

    first = allocate(week_start=WEEK, pools=pools, demands=demands)
    second = allocate(week_start=WEEK, pools=list(pools), demands=list(demands))

    assert first == second
    assert len(first.windows) > 20


def test_order_of_pools_does_not_change_the_output() -> None:
    pools, demands = _busy_week()
    shuffled = list(pools)
    random.Random(3).shuffle(shuffled)

    assert allocate(week_start=WEEK, pools=shuffled, demands=demands) == allocate(
        week_start=WEEK, pools=pools, demands=demands
    )


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize("hours", [0, -1, 1.5, True])
def test_non_positive_or_fractional_hours_are_refused(hours: object) -> None:
    with pytest.raises(ValueError, match="hours must be a positive whole number"):
        allocate(week_start=WEEK, pools=[A100], demands=[], hours=hours)  # type: ignore[arg-type]


def test_naive_week_start_is_refused() -> None:
    with pytest.raises(ValueError, match="week_start must be a timezone-aware datetime"):
        allocate(week_start=datetime(2024, 1, 1), pools=[A100], demands=[])


def test_naive_demand_time_is_refused() -> None:
    naive = demand(1, 2, 24, datetime(2024, 1, 1))
    with pytest.raises(ValueError, match="demand 1: earliest_start must be a timezone-aware datetime"):
        run(naive)


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        (PoolCapacity(key="p", gpu_count=-1), "gpu_count must be at least 0"),
        (PoolCapacity(key="p", gpu_count=8, burst_reserve_pct=101), "burst_reserve_pct must be 0 to 100"),
        (PoolCapacity(key="p", gpu_count=8, standby_pct=-5), "standby_pct must be 0 to 100"),
        (PoolCapacity(key="p", gpu_count=8, burst_reserve_pct=60, standby_pct=50), "must be at most 100"),
        (PoolCapacity(key="", gpu_count=8), "pool key must be a non-empty string"),
    ],
)
def test_nonsensical_pool_is_refused(pool: PoolCapacity, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        allocate(week_start=WEEK, pools=[pool], demands=[])


@pytest.mark.parametrize(
    ("field", "value"),
    [("gpu_count", 0), ("min_gpu_count", 0), ("duration_hours", 0), ("duration_hours", -3)],
)
def test_nonsensical_demand_is_refused(field: str, value: int) -> None:
    values: dict[str, Any] = {"gpu_count": 4, "min_gpu_count": 1, "duration_hours": 4, field: value}
    bad = Demand(ref=9, pool="a100", earliest_start=WEEK, latest_end=at(7), **values)
    with pytest.raises(ValueError, match=f"demand 9: {field} must be at least 1"):
        run(bad)


def test_duplicate_pool_keys_and_refs_are_refused() -> None:
    with pytest.raises(ValueError, match="pool key 'a100' appears twice"):
        allocate(week_start=WEEK, pools=[A100, A100], demands=[])
    with pytest.raises(ValueError, match="demand ref 1 appears twice"):
        run(demand(1, 2, 2), demand(1, 2, 2))


# --- properties ---------------------------------------------------------------------------


@st.composite
def weeks(draw: st.DrawFn) -> tuple[int, list[PoolCapacity], list[Demand]]:
    hours = draw(st.integers(min_value=1, max_value=60))
    pools = []
    for i in range(draw(st.integers(min_value=1, max_value=3))):
        burst = draw(st.integers(min_value=0, max_value=60))
        pools.append(
            PoolCapacity(
                key=f"p{i}",
                gpu_count=draw(st.integers(min_value=0, max_value=40)),
                gpu_model=draw(st.sampled_from(["", "A100"])),
                burst_reserve_pct=burst,
                standby_pct=draw(st.integers(min_value=0, max_value=100 - burst)),
            )
        )
    demands = []
    for ref in range(draw(st.integers(min_value=0, max_value=25))):
        gpus = draw(st.integers(min_value=1, max_value=24))
        duration = draw(
            st.integers(min_value=1, max_value=min(hours, 12)) | st.integers(min_value=1, max_value=hours + 1)
        )
        start_minutes = draw(st.integers(min_value=-120, max_value=hours * 60))
        slack_minutes = draw(st.integers(min_value=-60, max_value=hours * 60))
        demands.append(
            Demand(
                ref=ref,
                pool=draw(st.sampled_from([p.key for p in pools] * 4 + ["unknown"])),
                gpu_count=gpus,
                min_gpu_count=draw(st.integers(min_value=1, max_value=gpus) | st.just(gpus + 1)),
                duration_hours=duration,
                earliest_start=WEEK + timedelta(minutes=start_minutes),
                latest_end=WEEK + timedelta(minutes=start_minutes + duration * 60 + slack_minutes),
                preemptible_ok=draw(st.booleans()),
            )
        )
    return hours, pools, demands


def _reference_allocate(hours: int, pools: list[PoolCapacity], demands: list[Demand]) -> list[tuple]:
    """The placement rules, written out the slow and obvious way."""
    standard_free, total_free = {}, {}
    for pool in pools:
        burst, standby = reserved_gpus(pool)
        standard_free[pool.key] = [pool.gpu_count - burst - standby] * hours
        total_free[pool.key] = [pool.gpu_count - standby] * hours
    placed, priority_given = [], False
    for d in demands:
        if d.pool not in standard_free or d.min_gpu_count > d.gpu_count:
            continue
        first = max(0, -((WEEK - d.earliest_start) // HOUR))
        last = min(hours, (d.latest_end - WEEK) // HOUR)
        std, tot = standard_free[d.pool], total_free[d.pool]
        for preemptible in (False, True) if d.preemptible_ok else (False,):
            free = tot if preemptible else [min(s, t) for s, t in zip(std, tot, strict=True)]
            fit = next(
                (
                    (start, count)
                    for count in range(d.gpu_count, d.min_gpu_count - 1, -1)
                    for start in range(first, last - d.duration_hours + 1)
                    if all(free[h] >= count for h in range(start, start + d.duration_hours))
                ),
                None,
            )
            if fit is not None:
                break
        if fit is None:
            continue
        start, count = fit
        for h in range(start, start + d.duration_hours):
            tot[h] -= count
            if not preemptible:
                std[h] -= count
        tier = "preemptible" if preemptible else "standard" if priority_given else "priority"
        priority_given = priority_given or not preemptible
        placed.append((d.ref, d.pool, count, start, start + d.duration_hours, tier))
    return placed


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(weeks())
def test_windows_keep_every_invariant(week: tuple[int, list[PoolCapacity], list[Demand]]) -> None:
    hours, pools, demands = week
    result = allocate(week_start=WEEK, pools=pools, demands=demands, hours=hours)
    by_ref = {d.ref: d for d in demands}
    by_key = {p.key: p for p in pools}

    assert [e.ref for e in result.explanations] == [d.ref for d in demands]
    assert {e.ref for e in result.explanations if e.placed} == {w.ref for w in result.windows}
    assert sum(w.tier == "priority" for w in result.windows) <= 1

    standard_use = {key: [0] * hours for key in by_key}
    total_use = {key: [0] * hours for key in by_key}
    for window in result.windows:
        d = by_ref[window.ref]
        assert window.pool == d.pool
        assert WEEK <= window.start < window.end <= WEEK + hours * HOUR
        assert d.earliest_start <= window.start and window.end <= d.latest_end
        assert window.end - window.start == d.duration_hours * HOUR
        assert d.min_gpu_count <= window.gpu_count <= d.gpu_count
        assert window.tier in {"priority", "standard", "preemptible"}
        assert d.preemptible_ok or window.tier != "preemptible"
        for h in range((window.start - WEEK) // HOUR, (window.end - WEEK) // HOUR):
            total_use[window.pool][h] += window.gpu_count
            if window.tier != "preemptible":
                standard_use[window.pool][h] += window.gpu_count
    for key, pool in by_key.items():
        burst, standby = reserved_gpus(pool)
        assert max(total_use[key], default=0) <= pool.gpu_count - standby
        assert max(standard_use[key], default=0) <= pool.gpu_count - burst - standby

    for explanation in result.explanations:
        text = explanation_text(explanation.reasons, week_start=WEEK)
        assert text.startswith(("placed", "shortened", "not placed: "))
        assert explanation.shortened == text.startswith("shortened")
        assert explanation.placed == ("placed" in [reason.code for reason in explanation.reasons])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(weeks(), st.randoms(use_true_random=False))
def test_greedy_windows_match_the_rules_written_out_naively(
    week: tuple[int, list[PoolCapacity], list[Demand]], rng: random.Random
) -> None:
    hours, pools, demands = week
    shuffled = list(pools)
    rng.shuffle(shuffled)

    result = allocate_greedy(week_start=WEEK, pools=shuffled, demands=demands, hours=hours)

    assert result == allocate_greedy(week_start=WEEK, pools=pools, demands=demands, hours=hours)
    assert [
        (w.ref, w.pool, w.gpu_count, (w.start - WEEK) // HOUR, (w.end - WEEK) // HOUR, w.tier) for w in result.windows
    ] == _reference_allocate(hours, pools, demands)


# --- fixed windows (a correction keeps what has started) ---------------------------------


def test_fixed_window_is_kept_and_its_capacity_taken():
    week_start = datetime(2026, 12, 7, tzinfo=UTC)
    pool = PoolCapacity(key="a100", gpu_count=10, gpu_model="A100", burst_reserve_pct=0, standby_pct=0)
    running = EngineWindow(
        ref=1, pool="a100", gpu_count=8, start=week_start, end=week_start + timedelta(hours=24), tier="priority"
    )
    demand = Demand(
        ref=2, pool="a100", gpu_count=4, min_gpu_count=4, duration_hours=10,
        earliest_start=week_start, latest_end=week_start + timedelta(hours=168),
    )
    result = allocate(week_start=week_start, pools=[pool], demands=[demand], fixed=[running])
    assert result.windows[0] == running
    placed = result.windows[1]
    assert placed.start == week_start + timedelta(hours=24)  # only 2 GPUs free while the fixed one runs
    assert placed.tier == "standard"  # the week's priority window is the fixed one
    assert [e.ref for e in result.explanations] == [2]


def test_fixed_window_may_not_also_be_a_demand_nor_name_an_unknown_pool():
    week_start = datetime(2026, 12, 7, tzinfo=UTC)
    pool = PoolCapacity(key="a100", gpu_count=10)
    window = EngineWindow(ref=1, pool="a100", gpu_count=2, start=week_start,
                          end=week_start + timedelta(hours=2), tier="standard")
    demand = Demand(ref=1, pool="a100", gpu_count=2, min_gpu_count=2, duration_hours=2,
                    earliest_start=week_start, latest_end=week_start + timedelta(hours=10))
    with pytest.raises(ValueError, match="both a fixed window and a demand"):
        allocate(week_start=week_start, pools=[pool], demands=[demand], fixed=[window])
    with pytest.raises(ValueError, match="unknown pool"):
        allocate(week_start=week_start, pools=[pool], demands=[],
                 fixed=[EngineWindow(ref=3, pool="h100", gpu_count=1, start=week_start,
                                     end=week_start + timedelta(hours=1), tier="standard")])
