"""The scheduler API of the elastic agent: the published policy (ETag, 304) and the actions it reports (idempotent).

GET /api/v1/elastic/policy/ and POST /api/v1/elastic/actions/, with a cluster-bound token (docs/scheduler-api.md).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from allocations.elastic import selectors as elastic_selectors
from allocations.models import AgentAction
from committee import services
from tests.allocations.plans import W, bearer, publish, token_for
from tests.clock import FIXED_NOW

POLICY = "/api/v1/elastic/policy/"
ACTIONS = "/api/v1/elastic/actions/"


@pytest.fixture
def api(world) -> APIClient:
    client = APIClient()
    client.credentials(**bearer(token_for(world.atlas, "elastic-agent")))
    return client


def test_the_agent_reads_the_policy_in_minutes_with_its_pools_bounds_and_an_etag(world, api):
    response = api.get(POLICY)
    assert response.status_code == 200
    body = response.json()
    assert body["cluster"] == "atlas" and body["version"] == 1 and body["time_zone"]
    # Version 1 of the store, in minutes (240 and 60 as policy 0008 migrated them; the declared 5 and 10 where an
    # earlier transactional test's flush removed its rows), and the standby's minutes.
    current = elastic_selectors.elastic_policy_current().policy
    assert (body["parameters"]["idle_span_minutes"], body["parameters"]["recent_span_minutes"]) == (
        current.idle_span_minutes, current.recent_span_minutes)
    assert body["parameters"]["standby_wake_minutes"] == 5 and body["parameters"]["night_start"] == "22:00"
    [a100] = body["pools"]  # atlas's pools only
    assert (a100["pool"], a100["gpu_count"], a100["burst_reserve_gpus"]) == ("a100", 64, 12)
    etag = response["ETag"]
    assert api.get(POLICY, HTTP_IF_NONE_MATCH=etag).status_code == 304
    # The chair adopts the committee's minutes: a new version, a new ETag, the new spans.
    services.elastic_policy_change(actor=world.chair, parameters={"idle_span_minutes": 5, "recent_span_minutes": 10,
                                                                  "night_utilization_pct": 20},
                                   reason="The policy is written in minutes.")
    changed = api.get(POLICY, HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag
    assert changed.json()["version"] == 2 and changed.json()["parameters"]["idle_span_minutes"] == 5


def action(window_id: int | None, **overrides):
    data = {"idempotency_key": "atlas-a100-lend-w1-202612020955", "kind": "lend", "pool": "a100",
            "window": window_id, "gpus": 6, "acted_at": (FIXED_NOW - timedelta(minutes=5)).isoformat(),
            "utilization_pct": "12.5", "span_minutes": 5, "measured_by": "prometheus", "policy_version": 1,
            "applied": "sacctmgr -i modify qos where name=scavenger set GrpTRES=gres/gpu=6"}
    data.update(overrides)
    return data


def test_an_action_is_stored_once_per_key_and_shown_in_the_pools_history(world, api):
    window = publish([W(world.a100, world.team_a, 8, 0, 24 * 7, ref=1)]).windows.get()
    first = api.post(ACTIONS, action(window.pk), format="json")
    assert first.status_code == 201, first.json()
    assert first.json()["team"] == "team-a" and first.json()["reported_by"] == "elastic-agent"
    again = api.post(ACTIONS, action(window.pk), format="json")
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    other = api.post(ACTIONS, action(window.pk, gpus=7), format="json")
    assert other.status_code == 409 and "already used for different data" in other.json()["idempotency_key"][0]
    [stored] = elastic_selectors.agent_actions(pool=world.a100)
    assert (stored.kind, stored.gpus, stored.window, stored.team) == ("lend", 6, window, world.team_a)
    assert [a.pk for a in elastic_selectors.agent_actions(window_ids=[window.pk])] == [stored.pk]


@pytest.mark.parametrize(("change", "field"), [
    ({"pool": "h100"}, "pool"),  # orion's pool: not the token's cluster
    ({"window": 999_999}, "window"),
    ({"team": "team-b"}, "team"),  # not the window's team
    ({"kind": "steal"}, "kind"),
    ({"acted_at": (FIXED_NOW + timedelta(hours=1)).isoformat()}, "acted_at"),
    ({"policy_version": 99}, "policy_version"),
    ({"gpus": -1}, "gpus"),
    ({"surprise": 1}, "surprise"),
])
def test_a_bad_action_is_refused_naming_the_field_and_nothing_is_stored(world, api, change, field):
    window = publish([W(world.a100, world.team_a, 8, 0, 24 * 7, ref=1)]).windows.get()
    response = api.post(ACTIONS, action(window.pk, **change), format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    assert not AgentAction.objects.exists()
