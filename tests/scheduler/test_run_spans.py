"""A run over several weeks, held without a gap or a double booking, in parts (pure: no scheduler, no Docket).

`base.run_spans` joins a run's windows that meet and the weeks it is committed to; the Slurm sync's `reconcile` holds
each span as one reservation (the lab test, tests/allocations/test_slurm_sync_boundary.py, runs a job across the
boundary); `base.continued_windows` carries a run's quota over its committed weeks for the Kueue sync (and the Slurm
QOS tiers). Instants are Sunday-to-Monday boundaries in Europe/Berlin, one of them in a week of 167 hours.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from docket_scheduler.base import (
    DesiredCommitment,
    DesiredWindow,
    WindowFormatError,
    continued_windows,
    parse_commitments,
    run_spans,
    unpublished_commitments,
)
from docket_scheduler.kueue import render
from docket_scheduler.slurm_reservations import Carry, Create, Delete, Keep, Report, Reservation, Update, reconcile
from tests.allocations.test_kueue import validate

BERLIN = ZoneInfo("Europe/Berlin")
HOUR = timedelta(hours=1)
# Monday 00:00 in Berlin: 2026-W50 starts (a 168-hour week follows); 2027-W13 starts after the 167-hour W12.
MONDAY = datetime(2026, 12, 7, tzinfo=BERLIN).astimezone(UTC)
NEXT_MONDAY = datetime(2026, 12, 14, tzinfo=BERLIN).astimezone(UTC)
SPRING_MONDAY = datetime(2027, 3, 29, tzinfo=BERLIN).astimezone(UTC)
RUN = 204


def window(window_id: int, start: datetime, end: datetime, gpus: int = 16, *, tier: str = "priority",
           request: int | None = RUN) -> DesiredWindow:
    return DesiredWindow(id=window_id, plan_version=1, cluster="atlas", pool="a100", gpu_model="A100",
                         scheduler_label="a100", gpu_count=gpus, gpus_per_node=8, start=start, end=end, team="search",
                         account="search", tier=tier, request_id=request)


def commitment(commitment_id: int, start: datetime, state: str = "committed", gpus: int = 16,
               **fields: Any) -> DesiredCommitment:
    end = (start.astimezone(BERLIN) + timedelta(days=7)).astimezone(UTC)  # the next Monday 00:00 in Berlin
    data = {"id": commitment_id, "week": "2026-W50", "cluster": "atlas", "pool": "a100", "gpu_count": gpus,
            "start": start.isoformat(), "end": end.isoformat(), "team": "search", "account": "search",
            "state": state, "request_id": RUN, "week_of_run": 2, "run_weeks": 3, **fields}
    [parsed] = parse_commitments([data])
    return parsed


def reservation(name: str, start: datetime, end: datetime, nodes: int = 2) -> Reservation:
    return Reservation(name, start, end, nodes, features="a100", accounts=frozenset({"search"}))


FIRST = window(1, MONDAY - 4 * HOUR, MONDAY)  # Sunday 20:00 to Monday 00:00 in Berlin
WEEK2, WEEK3 = commitment(7, MONDAY), commitment(8, NEXT_MONDAY)


def test_a_run_and_its_committed_weeks_are_one_reservation_to_its_last_hour() -> None:
    now = MONDAY - 10 * HOUR
    [create] = reconcile([FIRST], [], now, commitments=[WEEK2, WEEK3])
    assert isinstance(create, Create) and create.name == "docket-w1"
    assert "StartTime=2026-12-06T19:00:00" in create.argv()
    assert f"EndTime={WEEK3.end:%Y-%m-%dT%H:%M:%S}" in create.argv()
    assert WEEK3.end == datetime(2026, 12, 20, 23, tzinfo=UTC)
    # Applied, the next pass keeps it; a withheld or released week does not continue the run.
    held = reservation("docket-w1", FIRST.start, WEEK3.end)
    assert [type(a) for a in reconcile([FIRST], [held], now, commitments=[WEEK2, WEEK3])] == [Keep]
    [update] = reconcile([FIRST], [held], now, commitments=[WEEK2, commitment(8, NEXT_MONDAY, "withheld")])
    assert isinstance(update, Update) and ("EndTime", f"{WEEK2.end:%Y-%m-%dT%H:%M:%S}") in update.changes
    [update] = reconcile([FIRST], [held], now, commitments=[commitment(7, MONDAY, "released"), WEEK3])
    assert isinstance(update, Update) and ("EndTime", "2026-12-06T23:00:00") in update.changes


def test_the_167_hour_week_ends_at_its_own_monday() -> None:
    first = window(1, SPRING_MONDAY - 4 * HOUR, SPRING_MONDAY)
    assert datetime(2027, 3, 28, 22, tzinfo=UTC) == SPRING_MONDAY  # 23:00 UTC the Monday before: 167 hours
    [span] = run_spans([first], [commitment(7, SPRING_MONDAY)])
    assert [s.start for s in span.segments] == [first.start, SPRING_MONDAY]
    assert span.end == datetime(2027, 4, 4, 22, tzinfo=UTC)


def test_a_published_week_stands_for_its_commitment_never_twice() -> None:
    second = window(2, MONDAY, NEXT_MONDAY)
    [span] = run_spans([FIRST, second], [WEEK2, WEEK3])
    assert [(s.start, s.window.id if s.window else None) for s in span.segments] == [
        (FIRST.start, 1), (MONDAY, 2), (NEXT_MONDAY, None)]
    # Held by the first window's reservation: the second week's window joins it.
    held = reservation("docket-w1", FIRST.start, WEEK3.end)
    [keep] = reconcile([FIRST, second], [held], MONDAY - HOUR, commitments=[WEEK2, WEEK3])
    assert isinstance(keep, Keep) and [w.id for w in keep.span.windows] == [1, 2]


def test_once_last_weeks_window_has_ended_its_reservation_goes_on_with_the_run() -> None:
    now = MONDAY + 5 * HOUR
    held = reservation("docket-w1", FIRST.start, WEEK3.end)
    second = window(2, MONDAY, NEXT_MONDAY)
    # Docket no longer lists window 1; what it was the window of, Docket says (`lineage`).
    [keep] = reconcile([second], [held], now, commitments=[WEEK2, WEEK3], lineage={1: RUN})
    assert isinstance(keep, Keep) and keep.reservation.name == "docket-w1"
    # Week 2 not published yet: the reservation is carried on by the commitment, untouched.
    [carry] = reconcile([], [held], now, commitments=[WEEK2, WEEK3], lineage={1: RUN})
    assert isinstance(carry, Carry) and carry.changes == ()
    # A run that grows at the boundary (8 GPUs last week, 16 in week 2): the same reservation holds week 2's nodes,
    # as the node size of its last window's pool says (`node_sizes`, from the window's own endpoint).
    small = reservation("docket-w1", FIRST.start, WEEK3.end, nodes=1)
    [carry] = reconcile([], [small], now, commitments=[WEEK2, WEEK3], lineage={1: RUN}, node_sizes={1: 8})
    assert isinstance(carry, Carry) and carry.changes == (("NodeCnt", "2"),) and carry.name == "docket-w1"
    # Listed but ended (Docket's clock behind the scheduler's): reported ended, its reservation not deleted.
    carry, report = reconcile([FIRST], [held], now, commitments=[WEEK2, WEEK3])
    assert isinstance(carry, Carry) and isinstance(report, Report)
    assert "goes on in reservation docket-w1" in report.message
    actions = reconcile([FIRST, second], [held], now, commitments=[WEEK2, WEEK3])
    assert not any(isinstance(a, (Delete, Create)) for a in actions)
    # Another run's reservation is not taken over.
    other = reconcile([second], [held], now, commitments=[WEEK2, WEEK3], lineage={1: 999})
    assert [type(a) for a in other] == [Delete, Create] and other[0].dropped  # type: ignore[union-attr]


def test_a_release_shortens_a_live_reservation_at_its_hour_never_earlier() -> None:
    now = MONDAY + 5 * HOUR
    hour = MONDAY + 8 * HOUR
    held = reservation("docket-w2", MONDAY, NEXT_MONDAY)
    # A new plan version splits the running window at the hour: 8 of 16 GPUs given back from then.
    kept, rest = window(3, MONDAY, hour), window(4, hour, NEXT_MONDAY, gpus=8)
    lineage = {2: RUN}
    [keep] = reconcile([kept, rest], [held], now, lineage=lineage)
    assert isinstance(keep, Keep)  # both nodes until the hour
    [span] = run_spans([kept, rest])
    assert span.next_change(now) == hour
    update, report = reconcile([kept, rest], [held], hour, lineage=lineage)
    assert isinstance(report, Report) and report.window.id == 3  # the part before the hour has ended
    assert isinstance(update, Update) and update.changes == (("NodeCnt", "1"),) and update.name == "docket-w2"
    # All of them from the hour: the reservation ends there (Slurm removes it then); it is not deleted now.
    [update] = reconcile([kept], [held], now, lineage=lineage)
    assert isinstance(update, Update) and update.changes == (("EndTime", f"{hour:%Y-%m-%dT%H:%M:%S}"),)
    # Past the hour the window has ended: nothing is left to hold, and Slurm has removed the reservation.
    [report] = reconcile([kept], [], hour, lineage=lineage)
    assert isinstance(report, Report)


def test_kueue_quota_continues_across_the_boundary_published_or_not() -> None:
    standard = window(1, MONDAY - 4 * HOUR, MONDAY, tier="standard")
    [carried] = continued_windows([standard], [WEEK2, WEEK3])
    assert (carried.start, carried.end) == (standard.start, WEEK3.end)
    before = render([carried], at=MONDAY - HOUR, cluster="atlas")
    after = render([carried], at=MONDAY + HOUR, cluster="atlas")
    assert before == after  # the same quota on both sides of Monday 00:00
    for obj in after:
        validate(obj)
    queue = next(o for o in after if o["kind"] == "ClusterQueue")
    assert queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 16
    # Once week 2 is published, its window holds that week: counted once, not twice.
    second = window(2, MONDAY, NEXT_MONDAY, tier="standard")
    both = continued_windows([standard, second], [WEEK2, WEEK3])
    assert [(w.id, w.end) for w in both] == [(1, MONDAY), (2, WEEK3.end)]
    queue = next(o for o in render(both, at=MONDAY + HOUR, cluster="atlas") if o["kind"] == "ClusterQueue")
    assert queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 16


def test_a_malformed_commitment_is_refused_whole() -> None:
    # All or nothing, as windows are: a run half understood could be cut at the boundary.
    for bad, words in (({"request_id": None}, "request_id must be an integer"),
                       ({"end": MONDAY.isoformat()}, "end after its start"),
                       ({"gpu_count": 0}, "needs GPUs"), ({"state": None}, "state must be a non-empty string")):
        with pytest.raises(WindowFormatError, match=words):
            commitment(7, MONDAY, **bad)


def test_a_week_published_in_another_tier_is_held_once() -> None:
    # Week 2 of a priority run published as a standard window (a QOS quota): the run's reservation ends at Monday
    # 00:00 and the quota holds the week; the commitment adds nothing to either side.
    second = window(2, MONDAY, NEXT_MONDAY, tier="standard")
    left = unpublished_commitments([FIRST, second], [WEEK2, WEEK3])
    assert left == [WEEK3]
    [span] = run_spans([FIRST], left)
    assert span.end == MONDAY
