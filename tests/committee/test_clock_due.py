"""What the weekly clock owes at an instant (committee/calendar.py), from plain data: no database, no beat.

A tick every five minutes is simulated over whole weeks: each job is owed from its instant in the committee's
zone until a tick records it, so it runs once at the first tick at or after the instant, and a tick that comes
late (the broker was down across the instant) still owes it. The weekly instants where code breaks have their
cases: Friday's intake close, Monday 00:00, ISO week 53 and the year boundary, both changes of summer time.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from committee import calendar, weeks
from committee.calendar import CycleState, Due

BERLIN = ZoneInfo("Europe/Berlin")
HOURLY = {"chat_intake_closing", "elastic_evaluate"}


@pytest.fixture(autouse=True)
def berlin(settings: pytest.FixtureRequest) -> None:
    settings.TIME_ZONE = "Europe/Berlin"  # type: ignore[attr-defined]


class Simulation:
    """The clock's state as plain data, ticked by the test: cycles opened and closed, runs recorded."""

    def __init__(self, start: datetime, cycles: dict[str, CycleState] | None = None) -> None:
        self.cycles = dict(cycles or {})
        # In steady state every slot before the start was done: only what falls due from the start on is owed.
        self.done = {(slot.job, slot.period) for job in calendar.JOBS if job.every != "state"
                     for slot in [calendar.latest_slot(job, start)]}
        self.runs: list[tuple[datetime, Due]] = []

    def tick(self, now: datetime) -> list[Due]:
        owed = calendar.jobs_due(now=now, cycles=self.cycles.values(), done=self.done)
        for due in owed:
            if due.job == calendar.OPEN_CYCLE:
                closes = weeks.cycle_schedule(due.period)["intake_closes_at"]
                self.cycles[due.period] = CycleState(due.period, True, closes)
            elif due.job == calendar.CLOSE_INTAKE:
                self.cycles[due.period] = CycleState(due.period, False, self.cycles[due.period].intake_closes_at)
            self.done.add((due.job, due.period))
            self.runs.append((now, due))
        return owed

    def run_through(self, start: datetime, end: datetime, step: timedelta = timedelta(minutes=5)) -> None:
        for now in _ticks(start, end, step):
            self.tick(now)

    def of(self, job: str) -> list[tuple[datetime, Due]]:
        return [(now, due) for now, due in self.runs if due.job == job]


def _ticks(start: datetime, end: datetime, step: timedelta) -> Iterator[datetime]:
    now = start.astimezone(UTC)
    while now <= end:
        yield now
        now += step


def _local(now: datetime) -> tuple[int, int, int]:
    local = now.astimezone(BERLIN)
    return local.weekday(), local.hour, local.minute


def test_a_week_of_ticks_does_each_job_once_at_its_instant_in_the_committees_zone() -> None:
    start = datetime(2027, 2, 28, 23, 55, tzinfo=BERLIN)  # Sunday before 2027-W09's Monday; nothing open yet
    sim = Simulation(start)
    sim.run_through(start, start + timedelta(days=7))
    assert [(_local(now), due.period) for now, due in sim.of("open_cycle")] == [((0, 0, 0), "2027-W10")]
    assert [(_local(now), due.period) for now, due in sim.of("remind_teams")] == [((3, 10, 0), "2027-W09")]
    assert [(_local(now), due.period) for now, due in sim.of("close_intake")] == [((4, 18, 0), "2027-W10")]
    assert [(_local(now), due.period) for now, due in sim.of("remind_committee")] == [((0, 6, 0), "2027-W09")]
    digests = sim.of("send_digests")
    assert [_local(now)[1:] for now, _due in digests] == [(7, 0)] * 7
    assert [due.period for _now, due in digests] == [f"2027-03-0{d}" for d in range(1, 8)]
    for job in HOURLY:
        runs = sim.of(job)
        assert len(runs) == 7 * 24, job
        minute = calendar.JOB_BY_NAME[job].at.minute
        assert {now.astimezone(UTC).minute for now, _due in runs} == {minute}  # at :05 and :15 of each hour


def test_friday_close_is_owed_from_18_00_and_not_a_minute_before() -> None:
    closes = datetime(2027, 3, 5, 18, 0, tzinfo=BERLIN)
    cycles = [CycleState("2027-W10", True, closes)]
    before = calendar.jobs_due(now=closes - timedelta(seconds=1), cycles=cycles, done=set())
    at = calendar.jobs_due(now=closes, cycles=cycles, done=set())
    assert calendar.CLOSE_INTAKE not in {d.job for d in before}
    assert Due(calendar.CLOSE_INTAKE, "2027-W10", closes) in at
    assert closes.astimezone(UTC).hour == 17  # committee time, not UTC


def test_a_tick_that_comes_late_still_owes_the_close_and_the_open_close_first() -> None:
    """Broker down from Friday 17:59:30 to Monday 00:02 (no tick at all meanwhile): one tick does both."""
    closes = datetime(2027, 3, 5, 18, 0, tzinfo=BERLIN)
    sim = Simulation(closes - timedelta(seconds=30), {"2027-W10": CycleState("2027-W10", True, closes)})
    assert not sim.tick(closes - timedelta(seconds=30))
    late = datetime(2027, 3, 8, 0, 2, tzinfo=BERLIN)
    owed = [(d.job, d.period, d.due_at) for d in sim.tick(late)]
    assert owed[:2] == [(calendar.CLOSE_INTAKE, "2027-W10", closes),
                        (calendar.OPEN_CYCLE, "2027-W11", datetime(2027, 3, 8, 0, 0, tzinfo=BERLIN))]
    # The digests missed on Saturday and Sunday are one run, for the latest slot (Sunday's).
    assert ("send_digests", "2027-03-07") in {(job, period) for job, period, _at in owed}
    assert not sim.tick(late + timedelta(minutes=1))  # once


def test_a_week_whose_intake_is_over_is_not_opened_on_saturday_but_the_next_is_on_monday() -> None:
    saturday = datetime(2027, 3, 6, 12, 0, tzinfo=BERLIN)  # 2027-W10's intake is over and it never opened
    assert calendar.OPEN_CYCLE not in {d.job for d in calendar.jobs_due(now=saturday, cycles=[], done=set())}
    monday = datetime(2027, 3, 8, 0, 0, tzinfo=BERLIN)
    assert [d.period for d in calendar.jobs_due(now=monday, cycles=[], done=set())
            if d.job == calendar.OPEN_CYCLE] == ["2027-W11"]


def test_iso_week_53_and_the_year_boundary() -> None:
    start = datetime(2026, 12, 20, 23, 55, tzinfo=BERLIN)  # Sunday before 2026-W52
    sim = Simulation(start)
    sim.run_through(start, start + timedelta(days=14), step=timedelta(minutes=15))
    assert [(now.astimezone(BERLIN).date().isoformat(), due.period) for now, due in sim.of("open_cycle")] == [
        ("2026-12-21", "2026-W53"), ("2026-12-28", "2027-W01")]
    assert [due.period for _now, due in sim.of("close_intake")] == ["2026-W53", "2027-W01"]
    assert [due.period for _now, due in sim.of("remind_teams")] == ["2026-W52", "2026-W53"]
    days = [due.period for _now, due in sim.of("send_digests")]
    assert days[10:13] == ["2026-12-31", "2027-01-01", "2027-01-02"] and len(days) == 14


def test_summer_time_starts_digests_at_07_00_local_and_the_close_at_18_00_local() -> None:
    start = datetime(2027, 3, 21, 23, 55, tzinfo=BERLIN)  # the week summer time starts (Sunday 28 March)
    sim = Simulation(start, {"2027-W13": CycleState("2027-W13", True, datetime(2027, 3, 26, 18, tzinfo=BERLIN))})
    sim.run_through(start, start + timedelta(days=7))
    sunday = [now for now, due in sim.of("send_digests") if due.period == "2027-03-28"]
    assert [(now.astimezone(BERLIN).hour, now.astimezone(UTC).hour) for now in sunday] == [(7, 5)]
    ((closed_at, _due),) = sim.of("close_intake")
    assert closed_at.astimezone(UTC) == datetime(2027, 3, 26, 17, 0, tzinfo=UTC)
    assert len(sim.of("elastic_evaluate")) == 7 * 24 - 1  # the week has 167 hours


def test_summer_time_ends_monday_00_00_opens_once_and_the_long_sunday_has_25_hourly_runs() -> None:
    start = datetime(2027, 10, 30, 23, 55, tzinfo=BERLIN)  # Saturday; Sunday 31 October has 25 hours
    sim = Simulation(start, {"2027-W44": CycleState("2027-W44", False, datetime(2027, 10, 29, 18, tzinfo=BERLIN))})
    sim.run_through(start, start + timedelta(days=2))
    ((opened_at, due),) = sim.of("open_cycle")
    assert (due.period, _local(opened_at), opened_at.astimezone(UTC).hour) == ("2027-W45", (0, 0, 0), 23)
    sunday = [now for now, _due in sim.of("elastic_evaluate") if now.astimezone(BERLIN).date().day == 31]
    assert len(sunday) == 25
    assert [due.period for _now, due in sim.of("send_digests")] == ["2027-10-31", "2027-11-01"]
