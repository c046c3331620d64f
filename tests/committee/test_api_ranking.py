"""The ranking and what-if API: the rubric's arithmetic for the committee, constant queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from committee.models import GpuRequest, RubricVersion, Score
from tests.committee.review_api import API, as_user
from tests.committee.reviewing import bulk_requests, bulk_teams, close, score, two_requests_in_review


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
