"""A date-time the database cannot store (offset past ±15:59, a year past 1–9999 in UTC) is a 400 naming the field.

Every accepted one is read as the same instant, whatever offset it was written with.
"""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from committee.models import GpuRequest
from tests.allocations.plans import W, publish
from tests.committee.review_api import request_body
from tests.committee.test_portal_views import form_data

UNSTORABLE = [
    "0418-10-10T00:38:09.994+23:19",  # found by the fuzzer: an offset PostgreSQL refuses
    "2026-12-01T10:00:00+16:00",
    "2026-12-01T10:00:00-23:59",
    "0001-01-01T00:00:00+01:00",  # year 0 in UTC
    "9999-12-31T23:00:00-05:00",  # year 10000 in UTC
]


@pytest.mark.parametrize("value", UNSTORABLE)
@pytest.mark.parametrize("name", ["ends_after", "active_at"])
def test_the_windows_list_refuses_a_time_it_cannot_query(scheduler, name, value):
    response = scheduler.get("/api/v1/windows/", {"cluster": "atlas", name: value})
    assert response.status_code == 400
    assert list(response.json()) == [name]


def test_active_at_means_the_same_instant_whatever_the_offset(scheduler, world):
    publish([W(world.a100, world.team_a, 8, 0, 24 * 7, ref=1)], week="2026-W49")
    for written in ("2026-12-02T10:00:00Z", "2026-12-02T23:59:00+13:59", "2026-12-01T20:00:00-14:00"):
        response = scheduler.get("/api/v1/windows/", {"cluster": "atlas", "week": "2026-W49", "active_at": written})
        assert response.status_code == 200 and response.json()["count"] == 1, written


@pytest.mark.parametrize("value", UNSTORABLE)
@pytest.mark.parametrize("name", ["period_start", "period_end"])
def test_usage_refuses_a_period_it_cannot_store(scheduler, name, value):
    body = {"team": "team-a", "pool": "a100", "period_start": "2026-11-30T10:00:00Z",
            "period_end": "2026-12-01T10:00:00Z", "gpu_hours_used": "10", "mean_utilization_pct": "50",
            "idempotency_key": "k-1", name: value}
    response = scheduler.post("/api/v1/usage/", body, format="json")
    assert response.status_code == 400
    assert name in response.json()


@pytest.mark.parametrize("value", UNSTORABLE)
@pytest.mark.parametrize("name", ["earliest_start", "latest_end", "deadline"])
def test_a_request_body_with_an_unstorable_time_is_refused(pinned, world, name, value):
    api = APIClient()
    api.force_authenticate(world.lead_a)
    response = api.post(f"/api/v1/teams/{world.team_a.slug}/requests/", request_body(world, **{name: value}),
                        format="json")
    assert response.status_code == 400
    assert name in response.json()
    assert GpuRequest.objects.count() == 0


def test_a_request_written_with_an_offset_is_stored_in_utc(pinned, world):
    api = APIClient()
    api.force_authenticate(world.lead_a)
    # Monday 20:00 written at +15:30 is Monday 04:30 UTC: still inside the week the window must lie in.
    start = world.cycle.starts_at + timedelta(hours=20)
    written = start.astimezone(UTC).replace(tzinfo=None).isoformat() + "+15:30"  # 15:30 hours later, as UTC
    body = request_body(world, earliest_start=written)
    response = api.post(f"/api/v1/teams/{world.team_a.slug}/requests/", body, format="json")
    assert response.status_code == 201, response.json()
    assert GpuRequest.objects.get().earliest_start == start - timedelta(hours=15, minutes=30)


@pytest.mark.parametrize("value", UNSTORABLE)
def test_the_request_form_refuses_a_time_it_cannot_store(pinned, world, value):
    client = Client()
    client.force_login(world.lead_a)
    response = client.post(reverse("committee:request-create"), form_data(world, earliest_start=value))
    assert response.status_code == 400
    assert "earliest_start" in response.context["forms"]["request"].errors
    assert GpuRequest.objects.count() == 0
