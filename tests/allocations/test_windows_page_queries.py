"""The windows page costs the same number of queries for a plan of 1 window as for one of 50."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from allocations import services
from allocations.models import SyncState
from tests.allocations.plans import W, publish


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False):
        yield


def page_queries(client, week: str) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/windows/", {"week": week})
    assert response.status_code == 200
    return response.content.decode(), len(queries)


def test_windows_page_runs_the_same_queries_for_1_and_50_windows(client, world):
    sync = services.scheduler_client_create(cluster=world.atlas, name="slurm-sync").client
    for week, count in (("2026-W49", 1), ("2026-W50", 50)):
        plan = publish(
            [W(world.h100 if i % 2 else world.a100, world.team_a if i % 3 else world.team_b, 1, i % 24, i % 24 + 24,
               ref=i + 1) for i in range(count)],
            week=week, refs_are_requests=False, explanations=[],
        )
        atlas_windows = plan.windows.filter(pool=world.a100)
        services.sync_status_record(client=sync, statuses=[
            {"window": w.pk, "state": SyncState.SHORT, "nodes_requested": 1, "nodes_reserved": 0,
             "message": f"short on window {w.pk}"} for w in atlas_windows])
    client.force_login(world.member_b)
    client.get("/windows/")  # the session row and the content types, once
    one_body, one = page_queries(client, "2026-W49")
    fifty_body, fifty = page_queries(client, "2026-W50")
    assert one_body.count('id="window-') == 1 and fifty_body.count('id="window-') == 50
    assert fifty_body.count('class="sync-short"') == 25  # the atlas windows, reported short
    assert fifty == one


def test_a_week_of_many_windows_is_paged_with_its_week_kept(client, world):
    plan = publish(
        [W(world.h100 if i % 2 else world.a100, world.team_a, 1, i % 24, i % 24 + 24, ref=i + 1) for i in range(150)],
        week="2026-W50", refs_are_requests=False, explanations=[],
    )
    client.force_login(world.member_b)
    client.get("/windows/")  # the session row and the content types, once
    first, first_queries = page_queries(client, "2026-W50")
    with CaptureQueriesContext(connection) as queries:
        second = client.get("/windows/", {"week": "2026-W50", "page": "2"}).content.decode()
    shown = re.findall(r'id="window-(\d+)"', first) + re.findall(r'id="window-(\d+)"', second)
    assert len(re.findall(r'id="window-', first)) == 100 and len(re.findall(r'id="window-', second)) == 50
    assert sorted(map(int, shown)) == sorted(plan.windows.values_list("pk", flat=True))  # each window once
    assert 'href="?week=2026-W50&amp;page=2" rel="next"' in first and "Page 1 of 2" in first
    assert 'href="?week=2026-W50&amp;page=1" rel="prev"' in second and 'rel="next"' not in second
    assert len(queries) == first_queries
    small, small_queries = page_queries(client, publish(
        [W(world.a100, world.team_a, 1, 0, 24, ref=1)], week="2026-W51", refs_are_requests=False, explanations=[],
    ).week)
    assert small.count('id="window-') == 1 and 'class="pager"' not in small
    assert small_queries == first_queries  # a page costs the same queries whatever the week's size


def test_a_department_filter_costs_the_same_queries_for_1_and_20_departments(client, world):
    from allocations.models import Department, Team

    publish([W(world.a100, world.team_a, 1, 0, 24, ref=1), W(world.a100, world.team_b, 1, 0, 24, ref=2)],
            week="2026-W49", refs_are_requests=False, explanations=[])
    research = Department.objects.create(name="Research", slug="research")
    Team.objects.filter(pk=world.team_a.pk).update(department=research)
    client.force_login(world.member_b)
    client.get("/windows/")  # the session row and the content types, once

    def filtered() -> tuple[str, int]:
        with CaptureQueriesContext(connection) as queries:
            body = client.get("/windows/", {"week": "2026-W49", "department": "research"}).content.decode()
        return body, len(queries)

    one_body, one = filtered()
    Department.objects.bulk_create(Department(name=f"Dept {i}", slug=f"dept-{i}") for i in range(19))
    Team.objects.filter(pk=world.team_b.pk).update(department=Department.objects.get(slug="dept-3"))
    twenty_body, twenty = filtered()
    assert one_body.count('id="window-') == twenty_body.count('id="window-') == 1
    assert "Dept 18" in twenty_body  # offered in the filter
    assert twenty == one
