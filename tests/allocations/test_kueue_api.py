"""GET /api/v1/windows/kueue/ and `manage.py kueue_export`: the cluster's quotas as Kueue YAML."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tests.allocations.plans import W, bearer, publish, this_week, token_for, week_start

URL = "/api/v1/windows/kueue/"


def _queues(text: str) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(text) if doc and doc["kind"] == "ClusterQueue"}


def _quota(queue: dict) -> int:
    return queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]


def test_quotas_at_a_time_for_the_tokens_cluster(world):
    week = this_week()
    start = week_start(week)
    publish([W(world.h100, world.team_a, 16, 0, 48, ref=1), W(world.h100, world.team_b, 8, 48, 96, ref=2),
             W(world.a100, world.team_a, 8, 0, 96, ref=3)], week=week)
    api = APIClient()
    api.credentials(**bearer(token_for(world.orion)))
    at = (start + timedelta(hours=12)).isoformat()
    response = api.get(URL, {"cluster": "orion", "at": at})
    assert response.status_code == 200 and response["Content-Type"].startswith("application/yaml")
    queues = _queues(response.content.decode())
    assert set(queues) == {"docket-team-a", "docket-team-b"}
    assert _quota(queues["docket-team-a"]) == 16 and _quota(queues["docket-team-b"]) == 0
    flavors = [doc["metadata"]["name"] for doc in yaml.safe_load_all(response.content) if doc
               and doc["kind"] == "ResourceFlavor"]
    assert flavors == ["h100"]  # nothing of atlas's a100 pool

    out = call_command_output("kueue_export", cluster="orion", at=at)
    assert out == response.content.decode()


def test_other_clusters_and_people_get_nothing(world):
    api = APIClient()
    api.credentials(**bearer(token_for(world.atlas)))
    assert api.get(URL, {"cluster": "orion"}).status_code == 404
    people = APIClient()
    people.force_login(world.chair)
    assert people.get(URL, {"cluster": "orion"}).status_code == 401
    assert APIClient().get(URL, {"cluster": "orion"}).status_code == 401


def call_command_output(*args, **kwargs) -> str:
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out, **kwargs)
    return out.getvalue()


def test_etag_answers_304_until_the_quotas_change(world):
    week = this_week()
    start = week_start(week)
    publish([W(world.h100, world.team_a, 16, 0, 48, ref=1)], week=week)
    api = APIClient()
    api.credentials(**bearer(token_for(world.orion)))
    at = (start + timedelta(hours=12)).isoformat()
    first = api.get(URL, {"cluster": "orion", "at": at})
    etag = first["ETag"]
    again = api.get(URL, {"cluster": "orion", "at": at}, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    later = api.get(URL, {"cluster": "orion", "at": (start + timedelta(hours=60)).isoformat()},
                    HTTP_IF_NONE_MATCH=etag)  # the window has ended: team A's quota drops to 0
    assert later.status_code == 200 and later["ETag"] != etag


def test_export_command_takes_the_syncs_policy_options(world):
    week = this_week()
    start = week_start(week)
    publish([W(world.h100, world.team_a, 16, 0, 48, ref=1), W(world.h100, world.team_b, 4, 0, 48, ref=2,
                                                              tier="preemptible")], week=week)
    at = (start + timedelta(hours=12)).isoformat()

    out = call_command_output("kueue_export", cluster="orion", at=at, cohort="gpu-orion", borrowing="granted",
                              standard_lend_pct=50)
    queues = _queues(out)
    resources = queues["docket-team-a"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert resources == {"name": "nvidia.com/gpu", "nominalQuota": 16, "lendingLimit": 8, "borrowingLimit": 0}
    assert queues["docket-team-b"]["spec"]["cohortName"] == "gpu-orion"
    assert _quota(queues["docket-team-b"]) == 0
    with pytest.raises(CommandError, match="standard_lend_pct must be an integer from 0 to 100"):
        call_command_output("kueue_export", cluster="orion", standard_lend_pct=101)
