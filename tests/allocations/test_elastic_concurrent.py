"""Two elastic evaluations of the same hour at once (a beat catch-up beside an operator's run): one action.

Runs against PostgreSQL (the pool row's lock is what is tested). The first evaluation to take the lock
holds it until the second is seen waiting on it (tests/races.py), so the second is certainly waiting when
the first commits; it then finds the action in force and keeps it.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from allocations.elastic import services
from allocations.models import ElasticAction, UsageRecord
from tests.allocations.plans import W, publish
from tests.clock import FIXED_NOW
from tests.conftest import require
from tests.races import RaceWindow
from tests.reports.conftest import on_postgresql

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_two_simultaneous_evaluations_record_one_action(world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    window = publish([W(world.a100, world.team_a, 8, 0, 100, ref=1, tier="priority")]).windows.get()
    for hour in range(4):
        start = FIXED_NOW - timedelta(hours=4 - hour)
        UsageRecord.objects.create(
            pool=world.a100, team=world.team_a, window=window, period_start=start,
            period_end=start + timedelta(hours=1), gpu_hours_used=Decimal(1), mean_utilization_pct=Decimal(5),
            idempotency_key=f"c{hour}",
        )
    real_lock = services._lock_pool
    race = RaceWindow(parties=2)

    def slow_lock(pool_id: int) -> None:
        real_lock(pool_id)
        race.hold()  # hold the pool's lock until the other evaluation is seen waiting on it

    monkeypatch.setattr(services, "_lock_pool", slow_lock)
    results, waited = race.run([lambda: services.elastic_evaluate(now=FIXED_NOW + timedelta(minutes=15))] * 2)
    assert sorted((r.started, r.kept) for r in results) == [(0, 1), (1, 0)]
    assert ElasticAction.objects.count() == 1
    assert waited == 1  # the second evaluation waited on the pool's lock
