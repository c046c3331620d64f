"""Request lists cost the same number of queries for 1 row as for 50: who the viewer is is read once."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from committee.models import GpuRequest, RequestStatus, TeamMembership
from tests.committee.reviewing import bulk_requests, bulk_teams
from tests.factories import file_request


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False):
        yield


def fifty_for_lead_a(world) -> None:
    """49 more requests lead_a may read (team A's first is filed already), half of them decided: 50 in all.

    A team files one request per pool and week, so the others belong to 24 more teams lead_a joins.
    """
    teams = bulk_teams(24)
    TeamMembership.objects.bulk_create(TeamMembership(user=world.lead_a, team=team) for team in teams)
    bulk_requests(world, teams, scored_by=(world.chair, world.reviewer))
    file_request(world, pool=world.h100, title="The fiftieth")
    GpuRequest.objects.filter(decision__isnull=False).update(status=RequestStatus.DECIDED)
    assert GpuRequest.objects.count() == 50


def api_queries(user) -> tuple[int, int]:
    api = APIClient()
    api.force_authenticate(user=user)
    with CaptureQueriesContext(connection) as queries:
        response = api.get("/api/v1/requests/")
    assert response.status_code == 200
    return response.json()["count"], len(queries)


def page_queries(client, user) -> tuple[str, int]:
    client.force_login(user)
    client.get(reverse("committee:portal"))  # the session row and the content types, once
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("committee:portal"))
    assert response.status_code == 200
    return response.content.decode(), len(queries)


@pytest.mark.parametrize("who", ["lead_a", "reviewer"])
def test_requests_api_runs_the_same_queries_for_1_and_50_rows(world, who):
    file_request(world)
    one_count, one = api_queries(getattr(world, who))
    fifty_for_lead_a(world)
    fifty_count, fifty = api_queries(getattr(world, who))
    assert (one_count, fifty_count) == (1, 50)
    assert fifty == one


def test_requests_api_shows_team_members_a_decision_only_once_the_request_is_decided(world):
    file_request(world)
    fifty_for_lead_a(world)
    api = APIClient()
    api.force_authenticate(user=world.lead_a)
    rows = api.get("/api/v1/requests/", {"page_size": 100}).json()["results"]
    decided = [row for row in rows if row["status"] == RequestStatus.DECIDED]
    assert decided and all(row["decision"] is not None for row in decided)
    assert all(row["decision"] is None for row in rows if row["status"] != RequestStatus.DECIDED)


def test_portal_request_list_runs_the_same_queries_for_1_and_50_rows(client, world):
    file_request(world, title="Only one")
    body, one = page_queries(client, world.lead_a)
    assert "Only one" in body
    fifty_for_lead_a(world)
    body, fifty = page_queries(client, world.lead_a)
    assert "The fiftieth" in body
    assert fifty == one


def test_the_portal_narrows_to_a_department_or_a_team_of_the_viewers_own(client, world):
    from allocations.models import Department, Team

    file_request(world, title="Team A own")
    (other,) = bulk_teams(1)
    TeamMembership.objects.create(user=world.lead_a, team=other)
    research = Department.objects.create(name="Research", slug="research")
    Team.objects.filter(pk=other.pk).update(department=research)
    from django.contrib.auth import get_user_model

    lead = get_user_model().objects.get(pk=world.lead_a.pk)  # read again: the roles cached on the first are old
    file_request(world, team=other, actor=lead, title="The other team's")
    client.force_login(world.lead_a)
    client.get(reverse("committee:portal"))  # the session row and the content types, once
    with CaptureQueriesContext(connection) as one:
        body = client.get(reverse("committee:portal"), {"department": "research"}).content.decode()
    assert "The other team&#x27;s" in body and "Team A own" not in body
    Department.objects.bulk_create(Department(name=f"Dept {i}", slug=f"dept-{i}") for i in range(19))
    Team.objects.filter(pk=world.team_a.pk).update(department=Department.objects.get(slug="dept-2"))
    with CaptureQueriesContext(connection) as twenty:
        client.get(reverse("committee:portal"), {"department": "research"})
    assert len(twenty) == len(one)
    body = client.get(reverse("committee:portal"), {"team": "team-a"}).content.decode()
    assert "Team A own" in body and "The other team&#x27;s" not in body
    # Another team's slug is not among the viewer's: refused, and the list is the viewer's whole list.
    body = client.get(reverse("committee:portal"), {"team": "team-b"}).content.decode()
    assert "Select a valid choice" in body and "Team A own" in body and "The other team&#x27;s" in body
