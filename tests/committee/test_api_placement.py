"""The API: a request's placement for whoever may see its decision, a team's windows, the pools."""

from __future__ import annotations

import itertools

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from committee import services
from committee.services import personal_token_create
from tests.allocations.plans import bearer, token_for
from tests.committee.contended import contended_week
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request

_names = itertools.count()


def client_for(user) -> APIClient:
    _row, token = personal_token_create(user=user, name=f"placement {next(_names)}")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return api


def test_a_team_reads_its_requests_placement_and_explanation(world):
    week = contended_week(world)
    body = client_for(world.member_b).get(f"/api/v1/requests/{week.shortened.pk}/").json()
    placement = body["placement"]
    assert {k: placement[k] for k in ("status", "shortened", "preemptible", "decided_outcome", "decided_gpu_count",
                                      "decided_gpu_hours", "placed_gpu_count", "placed_gpu_hours", "plan_version")} == {
        "status": "shortened", "shortened": True, "preemptible": False, "decided_outcome": "grant",
        "decided_gpu_count": 16, "decided_gpu_hours": 768, "placed_gpu_count": 6, "placed_gpu_hours": 288,
        "plan_version": 1,
    }
    assert placement["plan_week"] == world.cycle.week
    (window,) = placement["windows"]
    assert window["text"] == "6 A100, Tue 00:00–Thu 00:00, standard"
    assert (window["pool"], window["gpu_count"], window["tier"], window["gpu_hours"]) == ("atlas/a100", 6,
                                                                                        "standard", 288)
    assert placement["explanation"].startswith("shortened to 6 GPUs")
    assert [r["code"] for r in placement["reasons"]] == ["shortened", "placed"]

    unplaced = client_for(world.lead_a).get(f"/api/v1/requests/{week.unplaced.pk}/").json()["placement"]
    assert (unplaced["status"], unplaced["windows"], unplaced["placed_gpu_hours"]) == ("not_placed", [], 0)
    assert [r["code"] for r in unplaced["reasons"]] == ["pool_too_small"]


def test_another_team_cannot_read_the_placement(world):
    week = contended_week(world)
    assert client_for(world.member_b).get(f"/api/v1/requests/{week.unplaced.pk}/").status_code == 404
    listed = client_for(world.member_b).get("/api/v1/requests/").json()["results"]
    assert {r["id"] for r in listed} == {week.shortened.pk, week.deferred.pk}


def test_the_team_sees_a_placement_once_the_week_is_finalized_the_committee_as_decisions_are_entered(world):
    gpu_request = file_request(world)
    close(world)
    for member in (world.chair, world.reviewer):
        score(member, gpu_request, 7, 7, 7)
    decide(world, gpu_request)
    assert client_for(world.lead_a).get(f"/api/v1/requests/{gpu_request.pk}/").json()["placement"] is None
    committee = client_for(world.reviewer).get(f"/api/v1/requests/{gpu_request.pk}/").json()["placement"]
    assert committee["status"] == "not_published" and committee["windows"] == []
    services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    team = client_for(world.lead_a).get(f"/api/v1/requests/{gpu_request.pk}/").json()["placement"]
    assert (team["status"], team["summary"]) == ("not_published", "Grant 16 → not yet published")


def test_a_list_reads_placements_in_a_constant_number_of_queries(world):
    week = contended_week(world)
    api = client_for(world.reviewer)
    api.get("/api/v1/pools/")  # the token's first use is written down once
    with CaptureQueriesContext(connection) as one:
        assert len(api.get("/api/v1/requests/", {"team": "team-b", "pool": world.a100.pk}).json()["results"]) == 1
    with CaptureQueriesContext(connection) as every:
        rows = api.get("/api/v1/requests/").json()["results"]
    assert len(rows) == 4 and len(every) == len(one)
    assert {r["id"]: r["placement"]["summary"] for r in rows}[week.unplaced.pk] == "Grant 24 → not placed"


def test_a_team_reads_its_own_windows(world):
    week = contended_week(world)
    rows = client_for(world.member_b).get("/api/v1/teams/team-b/windows/", {"week": world.cycle.week}).json()
    assert [(r["request_id"], r["gpu_count"], r["text"], r["plan_version"]) for r in rows] == [
        (week.shortened.pk, 6, "6 A100, Tue 00:00–Thu 00:00, standard", 1)]
    # Without a week: the weeks whose plan has not ended.
    assert [r["id"] for r in client_for(world.member_b).get("/api/v1/teams/team-b/windows/").json()] == [
        rows[0]["id"]]
    assert len(client_for(world.reviewer).get("/api/v1/teams/team-a/windows/").json()) == 1  # the committee


def test_team_windows_refuse_another_team_an_unknown_team_and_a_bad_week(world):
    contended_week(world)
    refused = client_for(world.member_b).get("/api/v1/teams/team-a/windows/")
    assert refused.status_code == 403 and "team's members" in refused.json()["detail"]
    assert client_for(world.outsider).get("/api/v1/teams/team-a/windows/").status_code == 403
    assert client_for(world.member_b).get("/api/v1/teams/no-such-team/windows/").status_code == 404
    bad = client_for(world.member_b).get("/api/v1/teams/team-b/windows/", {"week": "2026-W99"})
    assert bad.status_code == 400 and "week" in bad.json()
    assert client_for(world.member_b).get("/api/v1/teams/team-b/windows/", {"week": "2031-W02"}).json() == []


def test_pools_are_listed_for_a_script_filing_a_request(world):
    rows = client_for(world.member_a).get("/api/v1/pools/").json()
    assert [r["key"] for r in rows] == ["atlas/a100", "orion/h100"]
    a100 = rows[0]
    assert a100 == {
        "id": world.a100.pk, "key": "atlas/a100", "cluster": "atlas", "slug": "a100", "gpu_model": "A100",
        "gpu_count": 64, "gpus_per_node": 8, "burst_reserve_pct": 20, "standby_pct": 10, "fast_lane_pct": 0,
        "burst_reserve_gpus": 12, "standby_gpus": 6, "fast_lane_gpus": 0, "standard_gpus": 46,
        "standard_gpu_hours_per_week": 46 * 168, "burst_gpu_hours_per_week": 12 * 168,
    }


@pytest.mark.parametrize("who", ["anonymous", "scheduler"])
def test_pools_are_for_people(world, who):
    api = APIClient()
    if who == "scheduler":
        api.credentials(**bearer(token_for(world.atlas)))
    assert api.get("/api/v1/pools/").status_code in (401, 403)
