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


def test_the_archive_index_is_paged_and_a_page_costs_the_same_for_a_year_as_for_a_month(client, world):
    from reports.views import INDEX_PAGES

    for i in range(4):
        make_page(world, slug=f"week-{i:02d}", title=f"Week {i:02d}", body="x" * 5000)
    client.force_login(world.chair)
    client.get(reverse("reports:index"))
    month, month_queries = queries(client, reverse("reports:index"))
    for i in range(4, 52):
        make_page(world, slug=f"week-{i:02d}", title=f"Week {i:02d}", body="x" * 5000)
    year, year_queries = queries(client, reverse("reports:index"))
    assert year_queries == month_queries
    # The clock stands still here: every page changed at the same instant, so they follow by address.
    listed = 'href="/archive/week-{}/"'.format  # the index's own list (the recent changes link revisions)
    assert listed("03") in month and "Page 1 of" not in month
    assert listed("00") in year and listed("51") not in year and "Page 1 of 2" in year
    assert sum(listed(f"{i:02d}") in year for i in range(52)) == INDEX_PAGES
    older, _n = queries(client, reverse("reports:index"), {"page": "2"})
    assert listed("51") in older and listed("00") not in older and "None yet." not in older
    assert "x" * 100 not in year  # no text is shown
    with CaptureQueriesContext(connection) as captured:
        client.get(reverse("reports:index"))
    assert not [q["sql"] for q in captured if '"body"' in q["sql"] or '"data"' in q["sql"]]  # nor loaded
    assert client.get(reverse("reports:index"), {"page": "zz"}).status_code == 200  # a bad page number: the first


def test_the_portal_is_paged_newest_week_first(client, world, monkeypatch):
    from committee.models import GpuRequest, ReviewCycle
    from committee.services import cycle_create
    from committee.views import portal
    from tests.factories import file_request

    PORTAL_WEEKS = 6  # one request a week here: six weeks a page
    monkeypatch.setattr(portal, "PORTAL_REQUESTS", PORTAL_WEEKS)

    template = file_request(world, title="The current request")
    client.force_login(world.lead_a)
    client.get(reverse("committee:portal"))
    start = ReviewCycle.objects.get().starts_at

    def file_weeks_back(weeks: range) -> None:
        for weeks_back in weeks:
            cycle = cycle_create(week=(start - timedelta(weeks=weeks_back)).strftime("%G-W%V"))
            past = GpuRequest.objects.get(pk=template.pk)
            past.pk, past.cycle, past.title = None, cycle, f"Request {weeks_back} weeks back"
            past.save()

    # Last week's request: the page offers it to copy (a fixed number of queries, however long the history).
    file_weeks_back(range(1, 2))
    body, one_week = queries(client, reverse("committee:portal"))
    assert "The current request" in body and "Page 1 of" not in body
    file_weeks_back(range(2, 27))  # half a year of history, one request a week
    body, half_year = queries(client, reverse("committee:portal"))
    assert "The current request" in body and f"Request {PORTAL_WEEKS - 1} weeks back" in body
    assert f"Request {PORTAL_WEEKS} weeks back" not in body and "Page 1 of 5" in body
    assert half_year == one_week
    older, _n = queries(client, reverse("committee:portal"), {"page": "5"})
    assert "Request 26 weeks back" in older and "The current request" not in older


def test_the_portal_of_a_lead_of_many_teams_pages_one_week(client, world, monkeypatch):
    from committee.models import MembershipRole, TeamMembership
    from committee.views import portal
    from tests.committee.reviewing import bulk_requests, bulk_teams

    monkeypatch.setattr(portal, "PORTAL_REQUESTS", 5)  # 50 a page; 12 requests here, two a team
    teams = bulk_teams(6)
    TeamMembership.objects.bulk_create(TeamMembership(user=world.lead_a, team=t, role=MembershipRole.LEAD)
                                       for t in teams)
    client.force_login(world.lead_a)
    client.get(reverse("committee:portal"))
    bulk_requests(world, teams[:1])
    _few, few_queries = queries(client, reverse("committee:portal"))
    bulk_requests(world, teams[1:])
    first, many_queries = queries(client, reverse("committee:portal"))
    assert many_queries == few_queries and "Page 1 of 3" in first
    assert first.count("<tr><td><a href=\"/requests/") == 5 and f"Week {world.cycle.week}" in first
    last, _n = queries(client, reverse("committee:portal"), {"page": "3"})
    assert last.count("<tr><td><a href=\"/requests/") == 2 and f"Week {world.cycle.week}" in last  # the week again
