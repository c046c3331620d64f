"""The weekly clock's calendar: which of the clock's jobs are due at an instant, from plain data (no database).

A Celery beat "tick" (every `DOCKET_CLOCK_TICK_SECONDS`) asks `jobs_due` what is due and does it
(`committee.services.clock_tick`). Nothing depends on one beat message arriving at one instant: a run
missed because the broker, the worker or beat was down is still due at the next tick after they are back.

Two kinds of job:

- driven by the cycles' own state: *close intake* is due while an open cycle's closing time has passed;
  *open the next week* is due while the week teams file into now (the next ISO week, its intake not over)
  has no cycle. Each is done when the state says so, whoever did it (the clock or the chair).
- driven by a calendar slot: each has a recurring instant in the committee's zone (weekly, daily) or in
  UTC (hourly); its latest slot at or before `now` is due until a run for that slot is recorded
  (`ClockRun`, one per job and slot). A slot missed for longer than one period is done once, at the
  next tick, for the latest slot only: the services act on what is true at `now`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Literal

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from committee import weeks

Every = Literal["state", "week", "day", "hour"]


@dataclass(frozen=True)
class ClockJob:
    name: str
    label: str | Promise
    when: str | Promise  # the schedule, as the chair's clock page says it
    every: Every
    weekday: int | None = None  # Monday 0, for weekly jobs
    at: time = time(0, 0)  # committee time (weekly, daily); the minute of each UTC hour (hourly)


OPEN_CYCLE = "open_cycle"
CLOSE_INTAKE = "close_intake"

# The clock's jobs, in the order one tick does them (close before open: a Monday tick after a long outage
# first closes last week's intake, then opens this week's). `committee.services.clock` maps each to its service.
JOBS: tuple[ClockJob, ...] = (
    ClockJob(CLOSE_INTAKE, _("Close intake"), _("each open week at its intake close (Friday 18:00)"),
             "state", weekday=4, at=time(18, 0)),
    ClockJob(OPEN_CYCLE, _("Open the next week for intake"), _("Monday 00:00, while the week has no cycle"),
             "state", weekday=0, at=time(0, 0)),
    ClockJob("remind_teams", _("Remind teams that have not filed"), _("Thursday 10:00"),
             "week", weekday=3, at=time(10, 0)),
    ClockJob("remind_committee", _("Remind the committee of the review"), _("Monday 06:00"),
             "week", weekday=0, at=time(6, 0)),
    ClockJob("send_digests", _("Send the daily digests"), _("daily 07:00"), "day", at=time(7, 0)),
    ClockJob("chat_intake_closing", _("Announce intake closing in the chat"), _("hourly at :05 (UTC hours)"),
             "hour", at=time(0, 5)),
    ClockJob("elastic_evaluate", _("Evaluate the elastic policy"), _("hourly at :15 (UTC hours)"),
             "hour", at=time(0, 15)),
    ClockJob("lifecycle_events", _("Tell of windows that start or end soon"), _("hourly at :00 (UTC hours)"),
             "hour", at=time(0, 0)),
    ClockJob("outcome_asks", _("Ask teams for the outcomes of ended grants"), _("hourly at :00 (UTC hours)"),
             "hour", at=time(0, 0)),
    ClockJob("record_agent_actions", _("Add the elastic agents' late actions to ended weeks' records"),
             _("hourly at :30 (UTC hours)"), "hour", at=time(0, 30)),
)
JOB_BY_NAME = {job.name: job for job in JOBS}


@dataclass(frozen=True)
class Due:
    """One run the clock owes: `job` for `period` (a week, a day, an hour, or the cycle's week), due since `due_at`."""

    job: str
    period: str
    due_at: datetime


@dataclass(frozen=True)
class CycleState:
    week: str
    is_open: bool
    intake_closes_at: datetime


def latest_slot(job: ClockJob, now: datetime) -> Due:
    """The job's latest scheduled instant at or before `now`, with the period it stands for."""
    zone = weeks.committee_zone()
    local = now.astimezone(zone)
    if job.every == "hour":
        instant = now.astimezone(UTC).replace(minute=job.at.minute, second=0, microsecond=0)
        if instant > now:
            instant -= timedelta(hours=1)
        return Due(job.name, instant.strftime("%Y-%m-%dT%H:%MZ"), instant)
    if job.every == "day":
        day = local.date()
        if datetime.combine(day, job.at, tzinfo=zone) > now:
            day -= timedelta(days=1)
        return Due(job.name, day.isoformat(), datetime.combine(day, job.at, tzinfo=zone))
    assert job.weekday is not None
    day = local.date() - timedelta(days=local.weekday() - job.weekday)
    if datetime.combine(day, job.at, tzinfo=zone) > now:
        day -= timedelta(days=7)
    # Wall-clock time in the zone, so summer time keeps the hour (07:00 is 07:00 on both sides of a change).
    return Due(job.name, weeks.week_label(day), datetime.combine(day, job.at, tzinfo=zone))


def intake_week(now: datetime) -> str:
    """The week teams file into at `now`: next ISO week (committee time); its intake runs Monday 00:00 to Friday."""
    return weeks.next_week_label(now)


def jobs_due(*, now: datetime, cycles: Iterable[CycleState], done: Collection[tuple[str, str]]) -> list[Due]:
    """Every run owed at `now`, in JOBS order: the cycles' states and the (job, period) runs already recorded."""
    cycles = list(cycles)
    due: list[Due] = []
    for job in JOBS:
        if job.name == CLOSE_INTAKE:
            due += [Due(job.name, c.week, c.intake_closes_at)
                    for c in sorted(cycles, key=lambda c: c.week) if c.is_open and c.intake_closes_at <= now]
        elif job.name == OPEN_CYCLE:
            week = intake_week(now)
            schedule = weeks.cycle_schedule(week)
            if schedule["intake_closes_at"] > now and week not in {c.week for c in cycles}:
                due.append(Due(job.name, week, schedule["starts_at"] - timedelta(days=7)))
        else:
            slot = latest_slot(job, now)
            if (slot.job, slot.period) not in done:
                due.append(slot)
    return due
