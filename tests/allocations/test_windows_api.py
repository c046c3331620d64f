"""GET /api/v1/windows/: scoped to the token's cluster, strong ETag, change cursor, keyset pages."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.test import APIClient, APIRequestFactory
from rest_framework.views import APIView

from allocations.models import ClusterAccount, Department, SchedulerClient, Team
from docket_scheduler.base import parse_windows
from tests.allocations.plans import W, bearer, publish, this_week, token_for, week_start
from tests.clock import FIXED_NOW

URL = "/api/v1/windows/"
CONTRACT_FIELDS = {"id", "plan_version", "cluster", "pool", "gpu_model", "scheduler_label", "gpu_count",
                   "gpus_per_node", "start", "end", "team", "account", "department", "tier", "request_id",
                   "withdrawn", "lendable_gpus", "lendable_reason", "standby_gpus"}


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def atlas_token(world):
    return token_for(world.atlas)


@pytest.fixture
def orion_token(world):
    return token_for(world.orion)


def utc(moment) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def get(api, token, **params):
    return api.get(URL, params, **bearer(token))


def test_scheduler_reads_its_clusters_windows_in_the_contract_shape(world, api, atlas_token):
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    week = this_week()
    publish([W(world.a100, world.team_a, 16, 8, 56, ref=101, tier="priority"),
             W(world.a100, world.team_b, 8, 0, 24, ref=102),
             W(world.h100, world.team_b, 8, 0, 24, ref=103)], week=week)
    response = get(api, atlas_token, cluster="atlas", week=week)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"count", "next", "previous", "cursor", "plan_version", "results", "commitments"}
    assert body["commitments"] == []  # no run continues into this week
    assert body["count"] == 2 and body["plan_version"] == 1 and body["next"] is None
    first = body["results"][0]
    assert set(first) == CONTRACT_FIELDS
    start = week_start(week)
    assert first == {
        "id": first["id"], "plan_version": 1, "cluster": "atlas", "pool": "a100", "gpu_model": "A100",
        "scheduler_label": "a100", "gpu_count": 16, "gpus_per_node": 8,
        "start": utc(start + timedelta(hours=8)), "end": utc(start + timedelta(hours=56)),
        "team": "team-a", "account": "team-a-acct", "department": None, "tier": "priority", "request_id": 101,
        "withdrawn": False,
        "lendable_gpus": 0, "lendable_reason": None, "standby_gpus": 0,
    }
    assert body["results"][1]["account"] is None  # team B has no account on atlas
    windows = parse_windows(body["results"])  # what the Slurm adapter does with it
    assert {w.cluster for w in windows} == {"atlas"}


def test_token_of_one_cluster_gets_nothing_of_another(world, api, atlas_token, orion_token):
    # Neither window has ended on Wednesday 11:00 (FIXED_NOW), which the default "not ended" filter needs.
    publish([W(world.a100, world.team_a, 16, 8, 120, ref=1), W(world.h100, world.team_b, 8, 72, 96, ref=2)])
    assert get(api, atlas_token, cluster="orion").status_code == 404
    assert get(api, orion_token, cluster="atlas").status_code == 404
    assert get(api, atlas_token, cluster="no-such-cluster").status_code == 404
    orion = get(api, orion_token, cluster="orion").json()
    assert [w["cluster"] for w in orion["results"]] == ["orion"]
    atlas_window = get(api, atlas_token, cluster="atlas").json()["results"][0]["id"]
    assert api.get(f"{URL}{atlas_window}/", **bearer(orion_token)).status_code == 404
    assert api.get(f"{URL}{atlas_window}/", **bearer(atlas_token)).json()["id"] == atlas_window


@pytest.mark.parametrize("persona", ["chair", "lead_a", "member_b", "outsider"])
def test_people_get_nothing_from_scheduler_endpoints(world, api, persona):
    publish([W(world.a100, world.team_a, 16, 8, 56, ref=1)])
    api.force_login(getattr(world, persona))
    assert api.get(URL, {"cluster": "atlas"}).status_code == 401
    assert api.post(URL + "sync-status/", {"statuses": []}, format="json").status_code == 401
    assert api.post("/api/v1/usage/", {}, format="json").status_code == 401


def test_anonymous_and_bad_tokens_get_401(world, api, atlas_token):
    assert api.get(URL, {"cluster": "atlas"}).status_code == 401
    response = api.get(URL, {"cluster": "atlas"}, HTTP_AUTHORIZATION="Bearer dks_not-a-real-token-0123456789abcdef")
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    SchedulerClient.objects.update(is_active=False)
    assert get(api, atlas_token, cluster="atlas").status_code == 401


def test_scheduler_token_is_not_a_signed_in_person(world, atlas_token):
    class PeopleOnly(APIView):  # any endpoint for people, with the project's default authentication
        permission_classes = [IsAuthenticated]

        def get(self, request):
            return Response({"user": request.user.get_username()})

    request = APIRequestFactory().get("/", **bearer(atlas_token))
    assert PeopleOnly.as_view()(request).status_code == 403


def test_if_none_match_answers_304_until_something_changes(world, api, atlas_token):
    week = this_week()
    publish([W(world.a100, world.team_a, 16, 8, 56, ref=1)], week=week)
    first = get(api, atlas_token, cluster="atlas", week=week)
    etag = first["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    again = api.get(URL, {"cluster": "atlas", "week": week}, HTTP_IF_NONE_MATCH=etag, **bearer(atlas_token))
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    assert get(api, atlas_token, cluster="atlas", week=week).content == first.content  # same ETag, same bytes

    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="a")  # shown in the body
    after_mapping = api.get(URL, {"cluster": "atlas", "week": week}, HTTP_IF_NONE_MATCH=etag, **bearer(atlas_token))
    assert after_mapping.status_code == 200 and after_mapping["ETag"] != etag

    publish([W(world.a100, world.team_a, 8, 8, 56, ref=1)], week=week)
    changed = api.get(URL, {"cluster": "atlas", "week": week},
                      HTTP_IF_NONE_MATCH=after_mapping["ETag"], **bearer(atlas_token))
    assert changed.status_code == 200 and changed.json()["plan_version"] == 2


def test_a_window_ending_changes_the_list_of_windows_not_ended_but_not_the_weeks_list(world, api, atlas_token,
                                                                                      clock):
    """The list without a week holds the windows not ended yet: one ending is a change, answered with a 200. A week's
    list keeps every window of the week, so its ETag stands (it is computed without counting them)."""
    week = this_week()
    publish([W(world.a100, world.team_a, 8, 40, 70, ref=1), W(world.a100, world.team_b, 8, 40, 150, ref=2)], week=week)
    current, whole_week = get(api, atlas_token, cluster="atlas"), get(api, atlas_token, cluster="atlas", week=week)
    assert current.json()["count"] == 2 and whole_week.json()["count"] == 2

    clock.move_to(week_start(week) + timedelta(hours=80), tick=False)  # the first window has ended

    polled = api.get(URL, {"cluster": "atlas"}, HTTP_IF_NONE_MATCH=current["ETag"], **bearer(atlas_token))
    assert polled.status_code == 200 and polled.json()["count"] == 1 and polled["ETag"] != current["ETag"]
    week_polled = api.get(URL, {"cluster": "atlas", "week": week}, HTTP_IF_NONE_MATCH=whole_week["ETag"],
                          **bearer(atlas_token))
    assert week_polled.status_code == 304


def test_a_compressed_answer_keeps_a_strong_etag_of_its_own_and_either_one_gets_the_304(world, api, atlas_token):
    week = this_week()
    publish([W(world.a100, world.team_a, 16, 8, 56, ref=1), W(world.a100, world.team_b, 8, 0, 24, ref=2)], week=week)
    query = {"cluster": "atlas", "week": week}
    plain = api.get(URL, query, **bearer(atlas_token))
    zipped = api.get(URL, query, HTTP_ACCEPT_ENCODING="gzip, deflate", **bearer(atlas_token))
    assert plain.status_code == zipped.status_code == 200
    assert zipped["Content-Encoding"] == "gzip" and "Accept-Encoding" in zipped["Vary"]
    assert not plain.has_header("Content-Encoding")
    # Strong, and not the uncompressed answer's: the bytes differ, so the tag does.
    assert zipped["ETag"] == plain["ETag"][:-1] + '-gzip"' and not zipped["ETag"].startswith("W/")
    assert json.loads(gzip.decompress(zipped.content)) == plain.json()
    again = api.get(URL, query, HTTP_ACCEPT_ENCODING="gzip", **bearer(atlas_token))
    assert again.content == zipped.content and again["ETag"] == zipped["ETag"]  # the same tag names the same bytes
    for etag in (zipped["ETag"], plain["ETag"], "W/" + zipped["ETag"]):
        unchanged = api.get(URL, query, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=etag, **bearer(atlas_token))
        assert unchanged.status_code == 304 and unchanged.content == b"", etag
        assert unchanged["ETag"] == etag.removeprefix("W/")
    other = api.get(URL, query, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH='"other-gzip"', **bearer(atlas_token))
    assert other.status_code == 200


def test_without_week_only_current_windows_that_have_not_ended(world, api, atlas_token):
    now = FIXED_NOW
    week = this_week()
    hours_in = int((now - week_start(week)).total_seconds() // 3600)
    publish([W(world.a100, world.team_a, 8, 0, max(1, hours_in), ref=1),  # ended (or ending) already
             W(world.a100, world.team_b, 8, hours_in, hours_in + 2, ref=2)], week=week)
    body = get(api, atlas_token, cluster="atlas").json()
    live = [w["request_id"] for w in body["results"]]
    assert 2 in live and (1 not in live or hours_in == 0)


def test_filters_pool_team_and_active_at(world, api, atlas_token):
    week = this_week()
    start = week_start(week)
    publish([W(world.a100, world.team_a, 8, 0, 10, ref=1), W(world.a100, world.team_b, 8, 10, 20, ref=2)],
            week=week)
    by_team = get(api, atlas_token, cluster="atlas", week=week, team="team-b").json()
    assert [w["request_id"] for w in by_team["results"]] == [2]
    at = (start + timedelta(hours=10)).isoformat()
    active = get(api, atlas_token, cluster="atlas", week=week, active_at=at).json()
    assert [w["request_id"] for w in active["results"]] == [2]  # [start, end): window 1 has just ended
    assert get(api, atlas_token, cluster="atlas", week=week, pool="h100").json()["count"] == 0


def test_each_window_names_its_teams_department_which_filters_and_moves_the_etag(world, api, atlas_token):
    research = Department.objects.create(name="Research", slug="research", fair_share_weight=1)
    Team.objects.filter(pk=world.team_b.pk).update(department=research)
    week = this_week()
    publish([W(world.a100, world.team_a, 8, 0, 10, ref=1), W(world.a100, world.team_b, 8, 10, 20, ref=2)],
            week=week)
    body = get(api, atlas_token, cluster="atlas", week=week)
    assert [(w["request_id"], w["department"]) for w in body.json()["results"]] == [(1, None), (2, "research")]
    in_research = get(api, atlas_token, cluster="atlas", week=week, department="research").json()
    assert [w["request_id"] for w in in_research["results"]] == [2]
    assert get(api, atlas_token, cluster="atlas", week=week, department="sales").json()["count"] == 0
    assert get(api, atlas_token, cluster="atlas", department="not a slug").status_code == 400

    Team.objects.filter(pk=world.team_a.pk).update(department=research)  # the org chart moves a team
    moved = api.get(URL, {"cluster": "atlas", "week": week}, HTTP_IF_NONE_MATCH=body["ETag"], **bearer(atlas_token))
    assert moved.status_code == 200 and moved.json()["results"][0]["department"] == "research"
    # A move changes no cursor, so a list since one cannot be narrowed by department: refused, said why.
    since = get(api, atlas_token, cluster="atlas", since=body.json()["cursor"], department="research")
    assert since.status_code == 400 and "cannot be narrowed by department" in since.json()["department"][0]
    assert get(api, atlas_token, cluster="atlas", since=body.json()["cursor"], team="team-a").status_code == 200


@pytest.mark.parametrize("params", [{"week": "2026-49"}, {"since": "-1"}, {"active_at": "tuesday"},
                                    {"page_size": "0"}, {"after": "1", "before": "5"}])
def test_bad_query_is_400_with_the_field_named(world, api, atlas_token, params):
    response = get(api, atlas_token, cluster="atlas", **params)
    assert response.status_code == 400
    assert set(response.json()) & (set(params) | {"non_field_errors"})


def test_missing_cluster_is_400(world, api, atlas_token):
    assert api.get(URL, **bearer(atlas_token)).status_code == 400


def test_cursor_returns_what_changed_including_withdrawn_windows(world, api, atlas_token):
    week = this_week()
    publish([W(world.a100, world.team_a, 16, 8, 56, ref=1), W(world.a100, world.team_b, 8, 0, 24, ref=2)],
            week=week)
    first = get(api, atlas_token, cluster="atlas", week=week).json()
    kept = next(w for w in first["results"] if w["request_id"] == 2)
    cursor = first["cursor"]
    assert get(api, atlas_token, cluster="atlas", week=week, since=cursor).json()["results"] == []

    # Version 2: request 1 shrinks to 8 GPUs, request 2 is unchanged (carried over, same id).
    publish([W(world.a100, world.team_a, 8, 8, 56, ref=1), W(world.a100, world.team_b, 8, 0, 24, ref=2)],
            week=week)
    changes = get(api, atlas_token, cluster="atlas", week=week, since=cursor).json()
    assert changes["cursor"] > cursor and changes["plan_version"] == 2
    by_state = {(w["request_id"], w["gpu_count"], w["withdrawn"]) for w in changes["results"]}
    assert by_state == {(1, 16, True), (1, 8, False)}
    current = get(api, atlas_token, cluster="atlas", week=week).json()
    assert {w["id"] for w in current["results"]} >= {kept["id"]}
    assert all(not w["withdrawn"] and w["plan_version"] == 2 for w in current["results"])
    assert get(api, atlas_token, cluster="atlas", week=week, since=changes["cursor"]).json()["count"] == 0


def test_pages_follow_next_and_never_mix_two_versions(world, api, atlas_token):
    week = this_week()
    publish([W(world.a100, world.team_a, 1, h, h + 1, ref=h + 1) for h in range(5)], week=week)
    first = get(api, atlas_token, cluster="atlas", week=week, page_size=2).json()
    assert first["count"] == 5 and first["previous"] is None and len(first["results"]) == 2
    # A correction lands while the poller pages through version 1.
    publish([W(world.a100, world.team_b, 1, h, h + 1, ref=h + 100) for h in range(3)], week=week)
    seen, page = list(first["results"]), first
    while page["next"]:
        page = api.get(page["next"], **bearer(atlas_token)).json()
        seen.extend(page["results"])
        assert page["plan_version"] == 1
    assert sorted(w["request_id"] for w in seen) == [1, 2, 3, 4, 5]
    back = api.get(page["previous"], **bearer(atlas_token)).json()
    assert [w["request_id"] for w in back["results"]] == [3, 4]
    fresh = get(api, atlas_token, cluster="atlas", week=week).json()
    assert fresh["plan_version"] == 2 and sorted(w["request_id"] for w in fresh["results"]) == [100, 101, 102]


def test_as_of_ahead_of_the_latest_change_is_400(world, api, atlas_token):
    publish([W(world.a100, world.team_a, 1, 0, 1, ref=1)])
    assert get(api, atlas_token, cluster="atlas", as_of=99).status_code == 400


def _queries_for_list(api, token, week) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = get(api, token, cluster="atlas", week=week)
    assert response.status_code == 200
    return len(queries)


def test_list_runs_a_constant_number_of_queries(world, api, atlas_token):
    one, fifty = this_week(), "2030-W10"
    publish([W(world.a100, world.team_a, 1, 0, 1, ref=1)], week=one)
    publish([W(world.a100, world.team_a if i % 2 else world.team_b, 1, i, i + 1, ref=i + 10) for i in range(50)],
            week=fifty)
    get(api, atlas_token, cluster="atlas")  # the client's last_seen_at is written at most once a minute
    with_one = _queries_for_list(api, atlas_token, one)
    with_fifty = _queries_for_list(api, atlas_token, fifty)
    assert get(api, atlas_token, cluster="atlas", week=fifty).json()["count"] == 50
    # 7: the elastic policy's offers and the commitments, one query each; a list that fits its page is not counted
    assert with_one == with_fifty <= 7


@pytest.mark.parametrize("persona", ["lead_a", "chair"])
def test_a_persons_api_token_gets_nothing_from_scheduler_endpoints(world, api, persona):
    from committee.services import personal_token_create

    publish([W(world.a100, world.team_a, 16, 8, 56, ref=1)])
    _row, token = personal_token_create(user=getattr(world, persona), name="script")
    headers = {"HTTP_AUTHORIZATION": f"Token {token}"}
    assert api.get(URL, {"cluster": "atlas"}, **headers).status_code == 401
    assert api.post("/api/v1/usage/", {}, format="json", **headers).status_code == 401


def test_a_preemptible_window_says_how_much_of_the_cold_standby_the_chair_let_it_take(world, api, atlas_token):
    publish([W(world.a100, world.team_a, 40, 0, 168, ref=1),
             W(world.a100, world.team_b, 24, 8, 14, ref=2, tier="preemptible")], standby_gpus={2: 6})
    body = api.get(URL, {"cluster": "atlas", "week": this_week()}, **bearer(atlas_token)).json()
    assert {w["request_id"]: w["standby_gpus"] for w in body["results"]} == {1: 0, 2: 6}
    assert [w.standby_gpus for w in parse_windows(body["results"])] == [0, 6]  # what the elastic agent reads


@pytest.mark.parametrize("tier, standby", [("standard", 6), ("preemptible", 25)])
def test_the_standby_for_a_window_that_cannot_take_it_is_refused_and_nothing_is_published(world, tier, standby):
    from django.core.exceptions import ValidationError

    from allocations.models import AllocationPlan

    with pytest.raises(ValidationError, match="cold standby goes only to one preemptible window"):
        publish([W(world.a100, world.team_b, 24, 8, 14, ref=2, tier=tier)], standby_gpus={2: standby})
    assert not AllocationPlan.objects.exists()
