"""Three ticks at the same moment (beat's tick beside an operator's `clock_tick` and a redelivered one): each owed
run happens once.

On PostgreSQL (the advisory lock per job is what is tested). The first tick to take the close-intake lock holds it
until the other two are seen waiting on it (tests/races.py), so they certainly wait, then find the run done.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from committee import calendar, services
from committee.models import ClockRun, CycleStatus, FairShareSnapshot, OutboxMessage, ReviewCycle
from tests.conftest import require
from tests.factories import file_request
from tests.races import RaceWindow
from tests.reports.conftest import on_postgresql

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BERLIN = ZoneInfo("Europe/Berlin")


def test_three_simultaneous_ticks_close_intake_once_and_record_each_run_once(
    world: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    settings.TIME_ZONE = "Europe/Berlin"
    file_request(world, title="Ranker retrain")
    cycle = world.cycle
    closes = cycle.intake_closes_at
    now = closes + timedelta(minutes=2)  # the broker was down at the close; three ticks arrive at once
    real_close = services.CLOCK_RUNNERS[calendar.CLOSE_INTAKE]
    race = RaceWindow(parties=3)

    def slow_close(due: calendar.Due, at: datetime) -> str:
        race.hold()  # inside the lock: stay until the other ticks are seen waiting on it
        return real_close(due, at)

    monkeypatch.setitem(services.CLOCK_RUNNERS, calendar.CLOSE_INTAKE, slow_close)
    results, waited = race.run([lambda: services.clock_tick(now=now)] * 3)
    assert waited == 2  # both other ticks waited on the close's lock
    done = sorted((run.job, run.period) for runs in results for run in runs)
    locked = [run for run in done if run[0] not in services.OWN_TRANSACTIONS]  # the others are safe twice at once
    assert len(locked) == len(set(locked))  # no run under a lock by two ticks
    assert ("close_intake", cycle.week) in done
    assert sorted(ClockRun.objects.exclude(job=ClockRun.TICK).values_list("job", "period")) == sorted(set(done))
    cycle.refresh_from_db()
    assert cycle.status == CycleStatus.IN_REVIEW and cycle.intake_closed_at == closes
    assert FairShareSnapshot.objects.filter(cycle=cycle).count() == 2
    assert OutboxMessage.objects.filter(key=f"notify:intake-closed:{cycle.pk}").count() == 1
    assert ReviewCycle.objects.filter(status=CycleStatus.OPEN).count() == 0
    assert services.clock_tick(now=now + timedelta(minutes=1)) == []
