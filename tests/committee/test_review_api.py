"""The committee's REST API: the same rules as the pages, for scripts with personal tokens and browsers alike."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from committee.models import CycleStatus, Decision, GpuRequest, PersonalToken, RubricVersion, Score
from tests.committee.reviewing import bulk_requests, bulk_teams, close, decide, score, two_requests_in_review
from tests.factories import file_request

API = "/api/v1"


@pytest.fixture
def api():
    return APIClient()


def as_user(api, user):
    api.force_authenticate(user=user)
    return api


@pytest.fixture
def scored(world):
    a, b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 7, 6, 5)
        score(member, b, 5, 5, 5)
    return a, b


def request_body(world, **overrides):
    start = world.cycle.starts_at.isoformat()
    end = (world.cycle.starts_at + timedelta(hours=96)).isoformat()
    body = {
        "pool": world.a100.pk, "title": "Ranker retrain", "gpu_count": 16, "min_gpu_count": 8, "duration_hours": 48,
        "earliest_start": start, "latest_end": end, "preemptible_ok": False, "baseline_gpu_hours": None,
        "deadline": None, "slip_consequence": "",
        "usage_report": {"gpu_hours_granted": "800", "gpu_hours_used": "600", "mean_utilization_pct": "75",
                         "notes": ""},
        "impact_forecast": {"kind": "revenue", "estimated_value": "50000", "value_unit": "USD/week",
                            "confidence": "medium", "narrative": "Lift."},
        "alternatives": [{"description": "Distilled", "gpu_hours": 300, "quality_change": "", "cost_estimate": None,
                          "feasible": True}],
    }
    body.update(overrides)
    return body


# --- personal tokens -------------------------------------------------------------------------


def test_personal_token_is_printed_once_and_authenticates_as_its_user(world, capsys):
    call_command("personal_token", "--user", "reviewer", "--name", "weekly script")
    token = capsys.readouterr().out.strip()
    assert token.startswith("dkt_")
    row = PersonalToken.objects.get()
    assert row.token_hash != token and token not in row.token_hash  # only a hash is stored
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = client.get(f"{API}/cycles/")
    assert response.status_code == 200
    row.refresh_from_db()
    assert row.last_used_at is not None
    # A token acts with exactly its user's permissions: the reviewer is not the chair.
    assert client.post(f"{API}/cycles/{world.cycle.week}/close-intake/").status_code == 403


def test_unknown_or_revoked_token_is_refused(world, capsys):
    call_command("personal_token", "--user", "reviewer", "--name", "old")
    token = capsys.readouterr().out.strip()
    call_command("personal_token", "--user", "reviewer", "--name", "old", "--revoke")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get(f"{API}/cycles/").status_code == 401
    client.credentials(HTTP_AUTHORIZATION="Token dkt_nope")
    assert client.get(f"{API}/cycles/").status_code == 401


def test_token_names_are_unique_per_user(world):
    call_command("personal_token", "--user", "chair", "--name", "ci")
    with pytest.raises(Exception, match="already have a token"):
        call_command("personal_token", "--user", "chair", "--name", "ci")


def test_anonymous_is_refused(api, world):
    for path in ("/cycles/", "/requests/", "/rubric/", f"/cycles/{world.cycle.week}/ranking/"):
        assert api.get(API + path).status_code == 401


def test_session_auth_works_for_the_browser(client, world):
    client.force_login(world.member_a)
    assert client.get(f"{API}/rubric/").status_code == 200


# --- cycles and transitions ------------------------------------------------------------------


def test_cycles_are_listed_for_anyone_signed_in(api, world):
    body = as_user(api, world.member_b).get(f"{API}/cycles/").json()
    assert body["results"][0]["week"] == world.cycle.week and body["results"][0]["rubric_version"] == 1


@pytest.mark.parametrize("who", ["reviewer", "tech", "lead_a", "outsider"])
def test_only_the_chair_closes_intake_and_finalizes(api, world, who):
    as_user(api, getattr(world, who))
    assert api.post(f"{API}/cycles/{world.cycle.week}/close-intake/").status_code == 403
    close(world)
    assert api.post(f"{API}/cycles/{world.cycle.week}/finalize/").status_code == 403
    world.cycle.refresh_from_db()
    assert world.cycle.status == CycleStatus.IN_REVIEW


def test_a_wrong_state_is_a_conflict_and_changes_nothing(api, world):
    """409 when the request is fine but its target is in the wrong state (found by the API fuzzing)."""
    a = file_request(world)
    scored = as_user(api, world.reviewer).post(f"{API}/requests/{a.pk}/scores/", {"criterion": "urgency", "value": 5})
    assert scored.status_code == 409 and "not in review" in scored.json()["non_field_errors"][0]
    published = as_user(api, world.chair).post(f"{API}/cycles/{world.cycle.week}/publish/", {})
    assert published.status_code == 409 and "finalize it first" in published.json()["non_field_errors"][0]
    assert not Score.objects.exists() and world.cycle.status == CycleStatus.OPEN
    close(world)
    as_user(api, world.lead_a)
    for action in ("submit", "withdraw"):  # intake has closed: the request is frozen
        response = api.post(f"{API}/requests/{a.pk}/{action}/")
        assert response.status_code == 409 and "Intake for" in response.json()["non_field_errors"][0]


def test_chair_drives_the_cycle_and_wrong_states_are_refused(api, world):
    a = file_request(world)
    as_user(api, world.chair)
    response = api.post(f"{API}/cycles/{world.cycle.week}/close-intake/")
    assert response.status_code == 200 and response.json()["status"] == "in_review"
    again = api.post(f"{API}/cycles/{world.cycle.week}/close-intake/")
    assert again.status_code == 409 and "in review, not open" in again.json()["non_field_errors"][0]
    for member in (world.chair, world.reviewer):
        score(member, a, 7, 6, 5)
    refused = api.post(f"{API}/cycles/{world.cycle.week}/finalize/")
    assert refused.status_code == 409 and "Ranker retrain" in refused.json()["non_field_errors"][0]
    decide(world, a)
    assert api.post(f"{API}/cycles/{world.cycle.week}/finalize/").json()["status"] == "finalized"


# --- ranking and what-if ---------------------------------------------------------------------


def test_ranking_with_breakdown_and_arithmetic(api, world, scored):
    a, b = scored
    rows = as_user(api, world.tech).get(f"{API}/cycles/{world.cycle.week}/ranking/").json()
    assert [(r["request"], r["rank"], r["total"]) for r in rows] == [(a.pk, 1, "66.00"), (b.pk, 2, "55.00")]
    assert rows[0]["arithmetic"] == "40% × 7.00 + 30% × 6.00 + 20% × 5.00 + 10% × 10.00 = 66.00"
    assert rows[0]["criteria"][0] == {"criterion": "business_impact", "weight_pct": 40, "score": "7.00", "count": 2,
                                      "points": "28.00", "computed": False, "below_quorum": False}
    assert {s["criterion"] for s in rows[0]["suggestions"]} == {"urgency", "feasibility"}
    assert "F = 2^" in rows[0]["fairness_explanation"]


@pytest.mark.parametrize("who", ["lead_a", "member_b", "outsider"])
def test_ranking_is_for_the_committee(api, world, scored, who):
    assert as_user(api, getattr(world, who)).get(f"{API}/cycles/{world.cycle.week}/ranking/").status_code == 403


def test_what_if_ranks_under_other_weights_and_saves_nothing(api, world):
    a, b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 10, 0, 0)
        score(member, b, 0, 10, 10)
    before = (list(Score.objects.values()), list(RubricVersion.objects.values()), list(GpuRequest.objects.values()))
    as_user(api, world.chair)
    weights = {"business_impact": 70, "feasibility": 10, "urgency": 10, "fairness": 10}
    body = api.get(f"{API}/cycles/{world.cycle.week}/what-if/", weights).json()
    after = (list(Score.objects.values()), list(RubricVersion.objects.values()), list(GpuRequest.objects.values()))
    assert before == after
    assert [r["request"] for r in body["current"]] == [b.pk, a.pk]
    assert [(r["request"], r["move"], r["total"]) for r in body["proposed"]] == [(a.pk, 1, "80.00"),
                                                                                (b.pk, -1, "30.00")]
    bad = api.get(f"{API}/cycles/{world.cycle.week}/what-if/", {**weights, "fairness": 50})
    assert bad.status_code == 400 and "add up to 100%" in str(bad.json())
    assert as_user(api, world.reviewer).get(f"{API}/cycles/{world.cycle.week}/what-if/", weights).status_code == 403


def test_ranking_endpoint_runs_the_same_queries_for_10_and_200_requests(api, world):
    teams = bulk_teams(100)
    close(world)
    bulk_requests(world, teams[:5], scored_by=(world.chair, world.reviewer))
    as_user(api, world.reviewer)
    with CaptureQueriesContext(connection) as ten:
        assert len(api.get(f"{API}/cycles/{world.cycle.week}/ranking/").json()) == 10
    bulk_requests(world, teams[5:], scored_by=(world.chair, world.reviewer))
    with CaptureQueriesContext(connection) as two_hundred:
        assert len(api.get(f"{API}/cycles/{world.cycle.week}/ranking/").json()) == 200
    assert len(two_hundred) == len(ten)


# --- requests --------------------------------------------------------------------------------


def test_teams_read_their_own_requests_and_the_committee_all(api, world):
    a = file_request(world)
    b = file_request(world, team=world.team_b, pool=world.h100, title="Vision", gpu_count=8, min_gpu_count=4)

    def listed(user):
        return {r["id"] for r in as_user(api, user).get(f"{API}/requests/").json()["results"]}

    assert listed(world.lead_a) == {a.pk}
    assert listed(world.member_b) == {b.pk}
    assert listed(world.reviewer) == {a.pk, b.pk}
    assert listed(world.outsider) == set()
    assert as_user(api, world.member_b).get(f"{API}/requests/{a.pk}/").status_code == 404
    detail = as_user(api, world.lead_a).get(f"{API}/requests/{a.pk}/").json()
    assert detail["usage_report"]["gpu_hours_used"] == "600.0" and detail["team"] == "team-a"
    assert as_user(api, world.reviewer).get(f"{API}/requests/", {"team": "team-b"}).json()["count"] == 1


def test_team_files_submits_and_withdraws_over_the_api(api, world):
    as_user(api, world.member_a)
    # What a client must not set is refused, naming it (it used to be ignored silently).
    response = api.post(f"{API}/teams/team-a/requests/", request_body(world, status="decided", team="team-b"),
                        format="json")
    assert response.status_code == 400 and set(response.json()) == {"status", "team"}
    assert not GpuRequest.objects.exists()
    response = api.post(f"{API}/teams/team-a/requests/", request_body(world), format="json")
    assert response.status_code == 201, response.json()
    created = response.json()
    assert created["status"] == "draft" and created["team"] == "team-a"
    assert created["alternatives"][0]["description"] == "Distilled"
    submitted = api.post(f"{API}/requests/{created['id']}/submit/")
    assert submitted.json()["status"] == "submitted"
    updated = api.put(f"{API}/requests/{created['id']}/", request_body(world, title="Smaller retrain"), format="json")
    assert updated.status_code == 200 and updated.json()["title"] == "Smaller retrain"
    assert api.post(f"{API}/requests/{created['id']}/withdraw/").json()["status"] == "withdrawn"


def test_filing_for_another_team_is_refused(api, world):
    response = as_user(api, world.member_b).post(f"{API}/teams/team-a/requests/", request_body(world), format="json")
    assert response.status_code == 403 and not GpuRequest.objects.exists()


def test_bad_request_input_is_a_clear_400_and_writes_nothing(api, world):
    as_user(api, world.member_a)
    response = api.post(f"{API}/teams/team-a/requests/", request_body(world, gpu_count=65), format="json")
    assert response.status_code == 400 and "gpu_count" in response.json()
    response = api.post(f"{API}/teams/team-a/requests/", request_body(world, usage_report={}), format="json")
    assert response.status_code == 400 and "usage_report" in response.json()
    assert not GpuRequest.objects.exists()


# --- scores ----------------------------------------------------------------------------------


def test_member_records_a_score(api, world, scored):
    a, _b = scored
    response = as_user(api, world.finance).post(f"{API}/requests/{a.pk}/scores/",
                                                {"criterion": "urgency", "value": 9, "note": "launch"})
    assert response.status_code == 200 and response.json()["member"] == "finance"
    listed = api.get(f"{API}/requests/{a.pk}/scores/").json()
    assert len(listed) == 7  # chair's and reviewer's three each, and finance's one
    assert [(s["member"], s["value"], s["note"]) for s in listed if s["member"] == "finance"] == [
        ("finance", 9, "launch")
    ]


def test_member_cannot_score_own_team_over_the_api(api, world, scored):
    _a, b = scored
    response = as_user(api, world.tech).post(f"{API}/requests/{b.pk}/scores/", {"criterion": "urgency", "value": 9})
    assert response.status_code == 403 and "Team B" in response.json()["detail"]
    assert not Score.objects.filter(member=world.tech).exists()


@pytest.mark.parametrize("who", ["lead_a", "member_b", "outsider"])
def test_scores_are_for_the_committee(api, world, scored, who):
    a, _b = scored
    as_user(api, getattr(world, who))
    assert api.get(f"{API}/requests/{a.pk}/scores/").status_code == 403
    assert api.post(f"{API}/requests/{a.pk}/scores/", {"criterion": "urgency", "value": 9}).status_code == 403


@pytest.mark.parametrize("body", [{"criterion": "fairness", "value": 5}, {"criterion": "urgency", "value": 11},
                                  {"criterion": "urgency"}])
def test_invalid_scores_are_400(api, world, scored, body):
    a, _b = scored
    assert as_user(api, world.finance).post(f"{API}/requests/{a.pk}/scores/", body).status_code == 400
    assert not Score.objects.filter(member=world.finance).exists()


# --- decisions -------------------------------------------------------------------------------


def test_committee_records_a_decision_and_the_team_reads_it_once_finalized(api, world, scored):
    a, b = scored
    as_user(api, world.reviewer)
    response = api.put(f"{API}/requests/{a.pk}/decision/",
                       {"outcome": "partial", "granted_gpu_count": 10, "rationale": "Most of it."})
    assert response.status_code == 200 and response.json()["granted_gpu_count"] == 10
    decide(world, b, "reject")
    as_user(api, world.lead_a)
    assert api.get(f"{API}/requests/{a.pk}/decision/").status_code == 404
    assert api.get(f"{API}/requests/{a.pk}/").json()["decision"] is None
    as_user(api, world.chair).post(f"{API}/cycles/{world.cycle.week}/finalize/")
    as_user(api, world.lead_a)
    decision = api.get(f"{API}/requests/{a.pk}/decision/").json()
    assert decision["outcome"] == "partial" and decision["priority_rank"] == 1 and decision["weighted_total"] == "66.00"
    assert api.get(f"{API}/requests/{a.pk}/").json()["decision"]["rationale"] == "Most of it."


def test_decision_rules_over_the_api(api, world, scored):
    a, b = scored
    as_user(api, world.tech)
    assert api.put(f"{API}/requests/{b.pk}/decision/", {"outcome": "grant", "rationale": "x"}).status_code == 403
    missing = api.put(f"{API}/requests/{a.pk}/decision/", {"outcome": "grant", "rationale": ""})
    assert missing.status_code == 400 and "rationale" in missing.json()
    partial = api.put(f"{API}/requests/{a.pk}/decision/", {"outcome": "partial", "rationale": "Some."})
    assert partial.status_code == 400 and "granted_gpu_count" in partial.json()
    as_user(api, world.lead_a)
    assert api.put(f"{API}/requests/{a.pk}/decision/", {"outcome": "grant", "rationale": "Ours"}).status_code == 403
    assert not Decision.objects.exists()


# --- the rubric ------------------------------------------------------------------------------


def test_rubric_and_its_history_for_anyone_signed_in(api, world):
    as_user(api, world.member_a)
    current = api.get(f"{API}/rubric/").json()
    assert current["number"] == 1 and current["weights"] == {"business_impact": 40, "feasibility": 30,
                                                              "urgency": 20, "fairness": 10}
    history = api.get(f"{API}/rubric/versions/").json()
    assert history[0]["version"]["number"] == 1 and history[0]["previous_weights"] is None
    assert history[0]["cycle_weeks"] == [world.cycle.week]


def test_chair_changes_the_rubric_over_the_api(api, world):
    body: dict[str, Any] = {"weights": {"business_impact": 50, "feasibility": 20, "urgency": 20, "fairness": 10},
            "reason": "Impact first this quarter."}
    assert as_user(api, world.reviewer).post(f"{API}/rubric/versions/", body, format="json").status_code == 403
    bad = as_user(api, world.chair).post(
        f"{API}/rubric/versions/", {**body, "weights": {**body["weights"], "urgency": 25}}, format="json"
    )
    assert bad.status_code == 400 and RubricVersion.objects.count() == 1
    response = api.post(f"{API}/rubric/versions/", body, format="json")
    assert response.status_code == 201 and response.json()["number"] == 2
    history = api.get(f"{API}/rubric/versions/").json()
    assert history[0]["previous_weights"]["business_impact"] == 40 and history[0]["version"]["author_name"] == "Chair"


# --- schema ----------------------------------------------------------------------------------


def test_schema_and_docs_are_served_without_a_cdn(client, world):
    client.force_login(world.member_a)
    schema = client.get(f"{API}/schema/")
    assert schema.status_code == 200 and b"/api/v1/cycles/{week}/ranking/" in schema.content
    docs = client.get(f"{API}/docs/").content.decode()
    assert "cdn" not in docs.lower() and "/static/drf_spectacular_sidecar/" in docs


def test_another_teams_request_cannot_be_changed_submitted_or_withdrawn(api, world):
    draft = file_request(world, submit=False)
    as_user(api, world.member_b)
    assert api.post(f"{API}/requests/{draft.pk}/submit/").status_code == 404
    assert api.post(f"{API}/requests/{draft.pk}/withdraw/").status_code == 404
    assert api.put(f"{API}/requests/{draft.pk}/", request_body(world), format="json").status_code == 404
    # The committee reads every request but files for no team: changing one is refused.
    as_user(api, world.reviewer)
    assert api.post(f"{API}/requests/{draft.pk}/submit/").status_code == 403
    assert GpuRequest.objects.get(pk=draft.pk).status == "draft"


def test_request_list_filters_by_pool_id_and_refuses_a_fraction(api, world):
    """The pool filter is an id: 1.5 is refused (found by the API fuzzing), an empty value is no filter."""
    a = file_request(world)
    as_user(api, world.reviewer)
    assert [r["id"] for r in api.get(f"{API}/requests/", {"pool": world.a100.pk}).json()["results"]] == [a.pk]
    assert api.get(f"{API}/requests/", {"pool": world.h100.pk}).json()["results"] == []
    assert api.get(f"{API}/requests/", {"pool": "1.5"}).status_code == 400
    assert api.get(f"{API}/requests/", {"pool": 2**70}).status_code == 400  # once a database overflow (500)
    assert api.get(f"{API}/requests/", {"pool": ""}).json()["count"] == 1


def test_a_body_value_of_another_json_type_is_refused(api, world):
    """A string field does not take a number, an integer not a string (DRF would convert; the API fuzzing found it)."""
    a = file_request(world)
    close(world)
    as_user(api, world.reviewer)
    for body in ({"criterion": "urgency", "value": "5"}, {"criterion": "urgency", "value": 5, "note": 7},
                 {"criterion": "urgency", "value": True}):
        response = api.post(f"{API}/requests/{a.pk}/scores/", body, format="json")
        assert response.status_code == 400 and "Incorrect type" in str(response.json())
    assert not Score.objects.exists()
