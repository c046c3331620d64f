"""A week's placement with commitments (the later weeks of runs, allocations.commitments) against the exact
strict-priority oracle (tests/allocations/oracle.py), as tests/allocations/test_engine_oracle.py does the weekly
placement: commitments come first, where they stand, and a new request never takes their GPUs."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest

from allocations import engine
from allocations.commitments import (
    CommittedWeek,
    commitment_demand,
    demands_with_commitments,
    run_week_gpu_counts,
)
from allocations.engine import PoolCapacity, allocate
from allocations.explanations import explanation_text
from tests.allocations.oracle import lexicographic_optimum
from tests.allocations.test_engine_oracle import WEEK, at, demand, gpu_hours, random_week


def committed(ref: int, gpus: int, *, pool: str = "p", hours: int = 168, first_week: str = "2023-W52",
              position: int = 1) -> CommittedWeek:
    return CommittedWeek(ref=ref, pool=pool, gpu_count=gpus, start=WEEK, end=at(hours), first_week=first_week,
                         position=position)


@pytest.mark.parametrize("first_seed", [0])
def test_engine_with_commitments_reaches_the_strict_priority_optimum(first_seed: int) -> None:
    for seed in range(first_seed, first_seed + 50):
        hours, pools, demands = random_week(seed)
        rng = random.Random(seed)
        commitments = [
            committed(1000 + i, rng.randint(1, 12), pool=rng.choice(pools).key, hours=hours,
                      first_week=rng.choice(["2023-W51", "2023-W52"]), position=rng.randint(1, 9))
            for i in range(rng.randint(1, 3))
        ]
        placing = demands_with_commitments(commitments=commitments, demands=demands)

        result = allocate(week_start=WEEK, pools=pools, demands=placing, hours=hours)

        optimum = lexicographic_optimum(week_start=WEEK, pools=pools, demands=placing, hours=hours)
        assert gpu_hours(result, placing) == optimum, f"seed {seed}"
        windows = {w.ref: w for w in result.windows}
        for commitment in commitments:  # all or nothing, and only where it stands
            window = windows.get(commitment.ref)
            if window is not None:
                assert (window.start, window.end, window.gpu_count) == (WEEK, at(hours), commitment.gpu_count)
                assert window.tier != "preemptible"


POOL = PoolCapacity(key="p", gpu_count=20, gpu_model="A100")  # 14 standard, 4 burst, 2 standby


def test_a_commitment_holds_the_start_of_the_week_ahead_of_a_higher_scored_new_request() -> None:
    new = [demand(1, 14, 24, 0, 48, minimum=4), demand(2, 6, 24, 0, 24)]
    alone = allocate(week_start=WEEK, pools=[POOL], demands=new)
    assert gpu_hours(alone, new) == [14 * 24, 6 * 24]

    placing = demands_with_commitments(commitments=[committed(9, 8)], demands=new)
    result = allocate(week_start=WEEK, pools=[POOL], demands=placing)

    # The run continues from Monday 00:00 with its 8 GPUs for the whole week; the new request ranked first gets
    # the 6 standard GPUs left beside it, and the next one still fits.
    assert (result.windows[0].ref, result.windows[0].start, result.windows[0].end) == (9, at(0), at(168))
    assert gpu_hours(result, placing) == [8 * 168, 6 * 24, 6 * 24]
    assert result.explanations[1].shortened
    held = explanation_text(result.explanations[0].reasons, week_start=WEEK)
    assert held == "placed Mon 00:00–next Mon 00:00 on 8 A100"


def test_commitments_keep_their_order_among_themselves_and_one_that_no_longer_fits_is_not_placed() -> None:
    later = committed(7, 10, first_week="2023-W52", position=1)
    earlier = committed(8, 10, first_week="2023-W51", position=5)  # began a week earlier: goes first

    placing = demands_with_commitments(commitments=[later, earlier], demands=[])
    result = allocate(week_start=WEEK, pools=[POOL], demands=placing)

    assert [d.ref for d in placing] == [8, 7]
    assert [w.ref for w in result.windows] == [8]  # 14 standard GPUs hold one run of 10, not two
    assert explanation_text(result.explanations[1].reasons, week_start=WEEK).startswith("not placed: p pool full")


def test_a_commitment_over_a_week_of_169_hours_holds_them_all() -> None:
    # Summer time ends in the committee's week (Europe/Berlin, Sunday 25 October 2026): Monday 00:00 to Monday
    # 00:00 is 169 hours; the run's week continues across it with the same GPUs.
    monday = datetime(2026, 10, 18, 22, tzinfo=UTC)  # Monday 19 October 00:00 CEST
    week = CommittedWeek(ref=5, pool="p", gpu_count=4, start=monday, end=monday + timedelta(hours=169),
                         first_week="2026-W42", position=1)

    result = allocate(week_start=monday, pools=[POOL], demands=[commitment_demand(week)], hours=169)

    assert [(w.start, w.end) for w in result.windows] == [(monday, monday + timedelta(hours=169))]


def test_a_run_is_not_both_committed_and_requested_and_a_commitment_spans_whole_hours() -> None:
    with pytest.raises(ValueError, match="both committed and requested"):
        demands_with_commitments(commitments=[committed(1, 4)], demands=[demand(1, 4, 24)])
    with pytest.raises(ValueError, match="whole hours"):
        commitment_demand(CommittedWeek(ref=2, pool="p", gpu_count=4, start=WEEK, end=at(10, 30),
                                        first_week="2023-W52", position=1))


def test_a_run_with_gpus_per_week_is_placed_with_each_weeks_count_at_the_strict_priority_optimum() -> None:
    for seed in range(700, 712):
        hours, pools, demands = random_week(seed)
        rng = random.Random(seed)
        asked = [rng.randint(2, 12) for _week in range(rng.randint(2, 4))]
        placed_first = rng.randint(1, asked[0])
        later = run_week_gpu_counts(asked=asked, placed_first=placed_first, weeks_granted=len(asked))
        assert later == [min(count, placed_first) if placed_first < asked[0] else count for count in asked[1:]]
        pool = rng.choice(pools).key
        for number, gpus in enumerate(later, start=2):  # each later week's engine run, as the week places it
            run = CommittedWeek(ref=900, pool=pool, gpu_count=gpus, start=WEEK, end=at(hours),
                                first_week="2023-W52", position=1)
            placing = demands_with_commitments(commitments=[run], demands=demands)

            result = allocate(week_start=WEEK, pools=pools, demands=placing, hours=hours)

            optimum = lexicographic_optimum(week_start=WEEK, pools=pools, demands=placing, hours=hours)
            assert gpu_hours(result, placing) == optimum, f"seed {seed}, week {number}"
            held = [w for w in result.windows if w.ref == 900]
            assert [(w.start, w.end, w.gpu_count) for w in held] in ([], [(WEEK, at(hours), gpus)])


def test_weekly_counts_that_do_not_cover_the_weeks_granted_are_refused() -> None:
    with pytest.raises(ValueError, match="2 weekly counts for a run of 3 weeks"):
        run_week_gpu_counts(asked=[4, 2], placed_first=4, weeks_granted=3)
    assert run_week_gpu_counts(asked=[8, 4, 12, 6], placed_first=8, weeks_granted=2) == [4]  # the first weeks only


@pytest.mark.parametrize(("first_monday", "hours"), [
    (datetime(2027, 3, 15), [168, 167, 168]),  # 2027-W11..W13: summer time starts Sunday 28 March (W12)
    (datetime(2026, 10, 19), [169, 168, 168]),  # 2026-W43..W45: it ends Sunday 25 October (W43)
    (datetime(2026, 12, 21), [168, 168, 168]),  # 2026-W52, W53 and 2027-W01: ISO week 53 and the year's end
])
def test_a_run_whose_gpus_change_is_two_windows_a_boundary_meeting_at_monday_midnight(
    first_monday: datetime, hours: list[int]
) -> None:
    zone = ZoneInfo("Europe/Berlin")
    mondays = [(first_monday + timedelta(days=7 * n)).replace(tzinfo=zone).astimezone(UTC) for n in range(4)]
    assert [(b - a) // timedelta(hours=1) for a, b in pairwise(mondays)] == hours
    asked = [12, 6, 9]
    first = allocate(week_start=mondays[0], pools=[POOL], hours=hours[0], demands=[engine.Demand(
        ref=1, pool="p", gpu_count=12, min_gpu_count=6, duration_hours=48,  # at the week's end (decision_demand)
        earliest_start=mondays[1] - timedelta(hours=48), latest_end=mondays[1])])
    later = run_week_gpu_counts(asked=asked, placed_first=first.windows[0].gpu_count, weeks_granted=3)
    windows = [first.windows[0]]
    for index, gpus in enumerate(later, start=1):
        week = CommittedWeek(ref=1, pool="p", gpu_count=gpus, start=mondays[index], end=mondays[index + 1],
                             first_week="2026-W01", position=1)
        placed = allocate(week_start=mondays[index], pools=[POOL], hours=hours[index],
                          demands=[commitment_demand(week)])
        windows.extend(placed.windows)

    assert [w.gpu_count for w in windows] == asked  # 12 standard GPUs and more in the pool: as asked
    for before, after in pairwise(windows):
        assert before.end == after.start  # no gap, no overlap, whatever the count
    assert [w.end for w in windows] == mondays[1:]
