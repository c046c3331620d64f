"""The weekly clock's state: what is due now, what ran last (the chair's clock page, /readyz)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max, Q
from django.utils import timezone

from committee import calendar
from committee.models import ClockRun, CycleStatus, ReviewCycle


def clock_due(*, now: datetime, jobs: set[str] | None = None) -> list[calendar.Due]:
    """The runs the clock owes at `now` (committee/calendar.py), from the cycles and the recorded runs.

    Two queries. `jobs` limits the answer to those jobs (a tick re-checks one job under its lock).
    """
    names = jobs or set(calendar.JOB_BY_NAME)
    cycles = [
        calendar.CycleState(week, status == CycleStatus.OPEN, closes)
        for week, status, closes in ReviewCycle.objects.filter(
            # the open ones (to close) and the week teams file into now (to open)
            Q(status=CycleStatus.OPEN) | Q(week=calendar.intake_week(now))
        ).values_list("week", "status", "intake_closes_at")
    ]
    slots = {job: calendar.latest_slot(calendar.JOB_BY_NAME[job], now).period for job in names
             if calendar.JOB_BY_NAME[job].every != "state"}
    done = set(ClockRun.objects.filter(job__in=list(slots), period__in=set(slots.values()))
               .values_list("job", "period"))
    return [due for due in calendar.jobs_due(now=now, cycles=cycles, done=done) if due.job in names]


def clock_overdue_after() -> timedelta:
    """A run still owed this long after it was due means the clock is not running (two ticks, at least 2 min)."""
    return max(timedelta(seconds=2 * settings.DOCKET_CLOCK_TICK_SECONDS), timedelta(minutes=2))


@dataclass(frozen=True)
class ClockJobStatus:
    job: calendar.ClockJob
    due: list[calendar.Due]
    overdue: bool
    last_run: ClockRun | None


@dataclass(frozen=True)
class ClockStatus:
    now: datetime
    last_tick: datetime | None
    jobs: list[ClockJobStatus]

    @property
    def overdue(self) -> list[calendar.Due]:
        return [due for row in self.jobs if row.overdue for due in row.due]

    @property
    def ticking(self) -> bool:
        """The tick ran within the overdue allowance."""
        return self.last_tick is not None and self.now - self.last_tick <= clock_overdue_after()


def clock_status(*, now: datetime | None = None) -> ClockStatus:
    """Each job of the clock with what it owes now, whether that is overdue, and its last recorded run."""
    now = now or timezone.now()
    due = clock_due(now=now)
    late = now - clock_overdue_after()
    latest = ClockRun.objects.values("job").annotate(last=Max("ran_at")).values_list("job", "last")
    matches = Q(pk__in=[])
    for name, last in latest:
        matches |= Q(job=name, ran_at=last)
    last_runs = {run.job: run for run in ClockRun.objects.filter(matches)}
    rows = []
    for job in calendar.JOBS:
        owed = [d for d in due if d.job == job.name]
        rows.append(ClockJobStatus(job, owed, any(d.due_at <= late for d in owed), last_runs.get(job.name)))
    tick = last_runs.get(ClockRun.TICK)
    return ClockStatus(now=now, last_tick=tick.ran_at if tick else None, jobs=rows)


def clock_readiness() -> dict[str, object]:
    """The clock's part of /readyz's details (core/health.py, DOCKET_READINESS_DETAILS): informative only, a
    clock that is behind does not take the site out of rotation."""
    status = clock_status()
    return {
        "last_tick": status.last_tick.isoformat() if status.last_tick else None,
        "ticking": status.ticking,
        "due": [{"job": d.job, "period": d.period, "due_at": d.due_at.isoformat()}
                for row in status.jobs for d in row.due],
        "overdue": [{"job": d.job, "period": d.period} for d in status.overdue],
    }
