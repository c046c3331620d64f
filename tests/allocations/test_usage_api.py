"""POST /api/v1/usage/: validated, scoped to the token's cluster, idempotent on the client's key."""

from __future__ import annotations

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from allocations.models import UsageRecord
from committee import weeks
from tests.allocations.plans import W, bearer, publish, token_for
from tests.clock import FIXED_NOW

URL = "/api/v1/usage/"


@pytest.fixture
def api(world) -> APIClient:
    client = APIClient()
    client.credentials(**bearer(token_for(world.atlas, "slurm-sync")))
    return client


def payload(**overrides):
    end = FIXED_NOW.replace(minute=0, second=0, microsecond=0)
    data = {
        "team": "team-a",
        "pool": "a100",
        "period_start": (end - timedelta(hours=24)).isoformat(),
        "period_end": end.isoformat(),
        "gpu_hours_used": "300.50",
        "mean_utilization_pct": "81.5",
        "mean_queue_wait_minutes": "12.0",
        "idempotency_key": "atlas-2026-12-01-team-a-a100",
    }
    data.update(overrides)
    return data


def test_usage_is_stored_with_who_reported_it(world, api):
    response = api.post(URL, payload(), format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["cluster"] == "atlas" and body["team"] == "team-a" and body["reported_by"] == "slurm-sync"
    record = UsageRecord.objects.get()
    assert str(record.gpu_hours_used) == "300.50" and record.pool == world.a100 and record.window is None


def test_same_key_again_changes_nothing_and_answers_the_same(world, api):
    first = api.post(URL, payload(), format="json")
    again = api.post(URL, payload(), format="json")
    assert again.status_code == first.status_code == 201
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert UsageRecord.objects.count() == 1


def test_same_key_with_other_data_is_a_conflict_and_changes_nothing(world, api):
    api.post(URL, payload(), format="json")
    response = api.post(URL, payload(gpu_hours_used="999"), format="json")
    assert response.status_code == 409 and "idempotency_key" in response.json()
    assert UsageRecord.objects.get().gpu_hours_used == pytest.approx(300.5)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"mean_utilization_pct": "120"}, "mean_utilization_pct"),
        ({"gpu_hours_used": "-1"}, "gpu_hours_used"),
        ({"gpu_hours_used": "abc"}, "gpu_hours_used"),
        ({"gpu_hours_used": "1537"}, "gpu_hours_used"),  # 64 GPUs × 24 h = 1536 GPU-hours at most
        ({"period_end": "2020-01-01T00:00:00Z"}, "period_end"),  # before the start
        ({"period_start": "2999-01-01T00:00:00Z", "period_end": "2999-01-02T00:00:00Z"}, "period_end"),
        ({"team": "no-such-team"}, "team"),
        ({"pool": "h100"}, "pool"),  # orion's pool: not this token's cluster
        ({"idempotency_key": ""}, "idempotency_key"),
        ({"window": 0}, "window"),
    ],
)
def test_bad_usage_is_400_with_field_errors_and_nothing_stored(world, api, overrides, field):
    response = api.post(URL, payload(**overrides), format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert UsageRecord.objects.count() == 0


def test_missing_fields_are_named(world, api):
    response = api.post(URL, {"team": "team-a"}, format="json")
    assert response.status_code == 400
    assert {"pool", "period_start", "period_end", "gpu_hours_used", "idempotency_key"} <= set(response.json())


def test_window_must_be_the_teams_on_that_pool_and_overlap(world, api):
    last_week = weeks.week_label(FIXED_NOW.date() - timedelta(days=7))
    plan = publish([W(world.a100, world.team_a, 8, 0, 24, ref=1), W(world.a100, world.team_b, 8, 0, 24, ref=2)],
                   week=last_week)
    windows = {w.request_ref: w for w in plan.windows.all()}
    period = {"period_start": windows[1].start.isoformat(), "period_end": windows[1].end.isoformat()}
    stored = api.post(URL, payload(window=windows[1].pk, idempotency_key="k1", **period), format="json")
    assert stored.status_code == 201 and stored.json()["window"] == windows[1].pk
    other_team = api.post(URL, payload(window=windows[2].pk, idempotency_key="k2", **period), format="json")
    assert other_team.status_code == 400 and "window" in other_team.json()
    after_end = windows[1].end + timedelta(hours=1)
    later = {"period_start": windows[1].end.isoformat(), "period_end": after_end.isoformat()}
    no_overlap = api.post(URL, payload(window=windows[1].pk, idempotency_key="k3", gpu_hours_used="8", **later),
                          format="json")
    assert no_overlap.status_code == 400 and "window" in no_overlap.json()
    assert UsageRecord.objects.count() == 1


def test_token_of_another_cluster_cannot_report_here(world):
    api = APIClient()
    api.credentials(**bearer(token_for(world.orion)))
    response = api.post(URL, payload(), format="json")  # a100 is atlas's
    assert response.status_code == 400 and "pool" in response.json()
    assert UsageRecord.objects.count() == 0


def test_anonymous_gets_nothing(world):
    assert APIClient().post(URL, payload(), format="json").status_code == 401
    assert UsageRecord.objects.count() == 0
