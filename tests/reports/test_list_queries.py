"""The archive index and the dashboards cost the same number of queries for 1 row as for 50."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from allocations.models import Team, UsageRecord
from committee.models import TeamMembership
from tests.allocations.plans import W, publish
from tests.committee.reviewing import bulk_requests
from tests.reports.conftest import make_page


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False):
        yield


def queries(client, url: str, params: dict[str, str] | None = None) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, params or {})
    assert response.status_code == 200
    return response.content.decode(), len(captured)


@pytest.mark.parametrize("who", ["member_a", "chair"])
def test_archive_index_runs_the_same_queries_for_1_and_50_pages(client, world, who):
    make_page(world, slug="page-0", title="Page 0")
    client.force_login(getattr(world, who))
    client.get(reverse("reports:index"))  # the session row and the content types, once
    body, one = queries(client, reverse("reports:index"))
    assert "Page 0" in body
    for i in range(1, 50):
        make_page(world, slug=f"page-{i}", title=f"Page {i}")
    body, fifty = queries(client, reverse("reports:index"))
    assert "Page 49" in body
    assert fifty == one


def add_teams(world, count: int, *, offset: int) -> None:
    """`count` teams lead_a belongs to, each with two requests, a window and a usage record this week."""
    teams = Team.objects.bulk_create(
        [Team(name=f"Bulk team {offset + i:03d}", slug=f"bulk-{offset + i:03d}") for i in range(count)]
    )
    TeamMembership.objects.bulk_create(TeamMembership(user=world.lead_a, team=team) for team in teams)
    bulk_requests(world, teams, scored_by=(world.chair, world.reviewer))
    start = world.cycle.starts_at
    publish([W(world.a100, team, 1, 0, 24, ref=offset + i + 1) for i, team in enumerate(teams)],
            week=world.cycle.week, refs_are_requests=False, explanations=[], source_ref=f"bulk-{offset}")
    UsageRecord.objects.bulk_create(
        UsageRecord(pool=world.a100, team=team, period_start=start, period_end=start + timedelta(hours=24),
                    gpu_hours_used=20, mean_utilization_pct=80, idempotency_key=f"usage-{team.slug}")
        for team in teams
    )


@pytest.mark.parametrize("who", ["lead_a", "chair"])
def test_dashboards_run_the_same_queries_for_1_and_50_teams(client, world, who):
    week = world.cycle.week
    params = {"first_week": week, "last_week": week}
    add_teams(world, 1, offset=0)
    client.force_login(getattr(world, who))
    client.get(reverse("reports:dashboards"), params)  # the session row and the content types, once
    body, one = queries(client, reverse("reports:dashboards"), params)
    assert "Bulk team 000" in body
    add_teams(world, 49, offset=1)
    body, fifty = queries(client, reverse("reports:dashboards"), params)
    assert "Bulk team 049" in body
    assert fifty == one
