"""Write endpoints take only what the schema lists, as the schema writes it.

A field a client must not set (status, team, ids, totals, authorship) is refused with 400 naming
it, and a decimal written other than the documented pattern ("1_000", full-width digits, "1E+5",
"-0") is refused with 400, though Python's Decimal would read each of them.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from allocations.models import ClusterAccount
from committee.models import GpuRequest
from tests.committee.review_api import request_body
from tests.committee.reviewing import two_requests_in_review

NOT_AS_DOCUMENTED = ["1_000", "１２", "1E+5", "1e2", "-0", "+5", " 12", "12 ", "Infinity", "NaN", "0x10", "1,5"]


def usage(**overrides):
    body = {"team": "team-a", "pool": "a100", "period_start": "2026-11-30T10:00:00Z",
            "period_end": "2026-12-01T10:00:00Z", "gpu_hours_used": "10", "mean_utilization_pct": "50",
            "idempotency_key": "k-1"}
    return {**body, **overrides}


@pytest.mark.parametrize("value", NOT_AS_DOCUMENTED)
@pytest.mark.parametrize("name", ["gpu_hours_used", "mean_utilization_pct", "mean_queue_wait_minutes"])
def test_usage_refuses_a_decimal_not_written_as_documented(scheduler, name, value):
    response = scheduler.post("/api/v1/usage/", usage(**{name: value}), format="json")
    assert response.status_code == 400
    assert list(response.json()) == [name]


@pytest.mark.parametrize("value", ["10", "10.5", "0.5", ".5", "100", "100.0"])
def test_usage_takes_a_decimal_written_as_documented(scheduler, world, value):
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a")  # a team of atlas
    response = scheduler.post("/api/v1/usage/", usage(mean_utilization_pct=value), format="json")
    assert response.status_code == 201, response.json()


@pytest.mark.parametrize("value", NOT_AS_DOCUMENTED)
def test_a_request_refuses_a_nested_decimal_not_written_as_documented(pinned, world, value):
    api = APIClient()
    api.force_authenticate(world.lead_a)
    body = request_body(world)
    body["usage_report"]["gpu_hours_used"] = value
    response = api.post(f"/api/v1/teams/{world.team_a.slug}/requests/", body, format="json")
    assert response.status_code == 400
    assert "gpu_hours_used" in response.json()["usage_report"]
    assert not GpuRequest.objects.exists()


@pytest.mark.parametrize("extra", [{"id": 9}, {"cluster": "orion"}, {"reported_by": "me"}, {"reported_at": "x"}])
def test_usage_refuses_a_field_the_scheduler_does_not_set(scheduler, extra):
    response = scheduler.post("/api/v1/usage/", usage(**extra), format="json")
    assert response.status_code == 400
    assert list(response.json()) == list(extra)


@pytest.mark.parametrize("extra", [{"status": "decided"}, {"team": "team-b"}, {"id": 1}, {"cycle": "2026-W50"},
                                   {"requested_gpu_hours": 1}, {"decision": None}, {"submitted_at": None}])
def test_a_request_refuses_a_field_the_team_does_not_set(pinned, world, extra):
    api = APIClient()
    api.force_authenticate(world.lead_a)
    response = api.post(f"/api/v1/teams/{world.team_a.slug}/requests/", request_body(world, **extra), format="json")
    assert response.status_code == 400
    assert list(response.json()) == list(extra)
    assert not GpuRequest.objects.exists()


def test_a_request_refuses_an_id_on_an_alternative(pinned, world):
    api = APIClient()
    api.force_authenticate(world.lead_a)
    body = request_body(world)
    body["alternatives"][0]["id"] = 7
    response = api.post(f"/api/v1/teams/{world.team_a.slug}/requests/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"alternatives": {"0": {"id": ["This field cannot be set here."]}}}


@pytest.mark.parametrize(("path", "body", "extra"), [
    ("scores/", {"criterion": "business_impact", "value": 5}, {"member": "chair"}),
    ("scores/", {"criterion": "business_impact", "value": 5}, {"member_name": "Someone Else"}),
    ("decision/", {"outcome": "grant", "rationale": "Fits."}, {"weighted_total": "99.00"}),
    ("decision/", {"outcome": "grant", "rationale": "Fits."}, {"decided_by_name": "The Board"}),
    ("decision/", {"outcome": "grant", "rationale": "Fits."}, {"priority_rank": 1}),
])
def test_review_writes_refuse_what_the_service_sets(pinned, world, path, body, extra):
    a, _b = two_requests_in_review(world)
    api = APIClient()
    api.force_authenticate(world.reviewer)
    method = api.put if path == "decision/" else api.post
    response = method(f"/api/v1/requests/{a.pk}/{path}", {**body, **extra}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == list(extra)


def test_a_rubric_change_refuses_a_version_number(pinned, world):
    api = APIClient()
    api.force_authenticate(world.chair)
    weights = {"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10}
    response = api.post("/api/v1/rubric/versions/", {"weights": weights, "reason": "x", "number": 9}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["number"]


def test_the_schema_says_request_bodies_take_no_other_fields(pinned, world):
    api = APIClient()
    api.force_authenticate(world.chair)
    components = api.get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    for name in ("RequestInputRequest", "UsageInputRequest", "ScoreInputRequest", "DecisionInputRequest",
                 "AlternativeInputRequest", "RubricChangeInputRequest"):
        assert components[name]["additionalProperties"] is False, name


INTEGER_NOT_AS_DOCUMENTED = ["1_000", "１２", "1E+5", "12.0", "-0", "+5", "0x10"]


@pytest.mark.parametrize("value", INTEGER_NOT_AS_DOCUMENTED)
@pytest.mark.parametrize("name", ["since", "as_of", "after", "before", "page_size"])
def test_the_windows_list_refuses_an_integer_not_written_as_documented(scheduler, name, value):
    response = scheduler.get("/api/v1/windows/", {"cluster": "atlas", name: value})
    assert response.status_code == 400
    assert list(response.json()) == [name]


@pytest.mark.parametrize("value", ["1_0", "１０", "1E+1", "10.0", "-0"])
def test_the_what_if_refuses_a_weight_not_written_as_documented(pinned, world, value):
    two_requests_in_review(world)
    api = APIClient()
    api.force_authenticate(world.chair)
    weights = {"business_impact": "70", "feasibility": "10", "urgency": "10", "fairness": value}
    response = api.get(f"/api/v1/cycles/{world.cycle.week}/what-if/", weights)
    assert response.status_code == 400
    assert list(response.json()) == ["fairness"]
    assert "Write a whole number in digits 0-9" in response.json()["fairness"][0]


@pytest.mark.parametrize("value", ["1_0", "１", "1E+0", "1.0"])
def test_the_archive_diff_refuses_a_revision_number_not_written_as_documented(pinned, world, value):
    api = APIClient()
    api.force_authenticate(world.member_a)
    response = api.get("/api/v1/archive/pages/charter/diff/", {"old": value, "new": "1"})
    assert response.status_code == 400
    assert list(response.json()) == ["old"]
