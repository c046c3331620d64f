"""The ranking and what-if API: the rubric's arithmetic for the committee, constant queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from committee.models import GpuRequest, Score
from governed.models import PolicyValue
from tests.committee.review_api import API, as_user
from tests.committee.reviewing import bulk_requests, bulk_teams, close, score, two_requests_in_review


def test_ranking_with_breakdown_and_arithmetic(api, world, scored):
    a, b = scored
    body = as_user(api, world.tech).get(f"{API}/cycles/{world.cycle.week}/ranking/").json()
    assert (body["count"], body["next"], body["previous"]) == (2, None, None)
    rows = body["results"]
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
    before = (list(Score.objects.values()), list(PolicyValue.objects.values()), list(GpuRequest.objects.values()))
    as_user(api, world.chair)
    weights = {"business_impact": 70, "feasibility": 10, "urgency": 10, "fairness": 10}
    body = api.get(f"{API}/cycles/{world.cycle.week}/what-if/", weights).json()
    after = (list(Score.objects.values()), list(PolicyValue.objects.values()), list(GpuRequest.objects.values()))
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
        assert len(api.get(f"{API}/cycles/{world.cycle.week}/ranking/").json()["results"]) == 10
    bulk_requests(world, teams[5:], scored_by=(world.chair, world.reviewer))
    with CaptureQueriesContext(connection) as two_hundred:
        assert len(api.get(f"{API}/cycles/{world.cycle.week}/ranking/").json()["results"]) == 100  # a page
    assert len(two_hundred) == len(ten), "\n".join(q["sql"] for q in two_hundred.captured_queries)


def test_the_ranking_is_paged_in_rank_order_with_the_count(api, world):
    teams = bulk_teams(60)
    close(world)
    bulk_requests(world, teams, scored_by=(world.chair, world.reviewer))  # 120 requests
    as_user(api, world.reviewer)
    url = f"{API}/cycles/{world.cycle.week}/ranking/"
    first = api.get(url).json()
    assert first["count"] == 120 and len(first["results"]) == 100 and first["previous"] is None
    assert first["next"].endswith(f"/cycles/{world.cycle.week}/ranking/?page=2")
    second = api.get(url, {"page": 2}).json()
    assert len(second["results"]) == 20 and second["next"] is None
    ranks = [r["rank"] for r in first["results"] + second["results"]]
    assert ranks == list(range(1, 121))  # every request once, in rank order across the pages
    assert api.get(url, {"page": 3}).status_code == 404


def test_the_what_if_is_paged_beside_the_current_ranking(api, world):
    teams = bulk_teams(60)
    close(world)
    bulk_requests(world, teams, scored_by=(world.chair, world.reviewer))
    as_user(api, world.chair)
    weights = {"business_impact": 70, "feasibility": 10, "urgency": 10, "fairness": 10}
    url = f"{API}/cycles/{world.cycle.week}/what-if/"
    first = api.get(url, weights).json()
    second = api.get(url, {**weights, "page": 2}).json()
    assert (first["count"], len(first["current"]), len(first["proposed"])) == (120, 100, 100)
    assert (len(second["current"]), len(second["proposed"]), second["next"]) == (20, 20, None)
    assert [r["rank"] for r in second["current"]] == list(range(101, 121))
    assert [r["rank"] for r in second["proposed"]] == list(range(101, 121))
    # A move is against the whole current ranking, whichever page either rank is on.
    current = {r["request"]: r["rank"] for r in first["current"] + second["current"]}
    for row in first["proposed"] + second["proposed"]:
        assert row["move"] == current[row["request"]] - row["rank"]
