"""GET /api/v1/cycles/ costs the same number of queries for 1 cycle as for 50."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from committee.models import ReviewCycle
from committee.services import cycle_create


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False):
        yield


def listed(api) -> tuple[list[str], int]:
    with CaptureQueriesContext(connection) as queries:
        response = api.get("/api/v1/cycles/")
    assert response.status_code == 200
    return [row["week"] for row in response.json()["results"]], len(queries)


def test_cycle_list_runs_the_same_queries_for_1_and_50_cycles(world):
    api = APIClient()
    api.force_authenticate(user=world.member_b)
    weeks, one = listed(api)
    assert weeks == [world.cycle.week]
    for number in range(1, 50):
        cycle_create(week=f"2025-W{number:02d}")
    weeks, fifty = listed(api)
    assert len(weeks) == ReviewCycle.objects.count() == 50
    assert weeks[0] == world.cycle.week and weeks[-1] == "2025-W01"
    assert fifty == one
