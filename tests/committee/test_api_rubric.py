"""The rubric API: versions for anyone signed in, changes by the chair with a reason."""

from __future__ import annotations

from typing import Any

from governed.models import PolicyChange
from tests.committee.review_api import API, as_user


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
    assert bad.status_code == 400 and not PolicyChange.objects.filter(number__gt=1).exists()
    response = api.post(f"{API}/rubric/versions/", body, format="json")
    assert response.status_code == 201 and response.json()["number"] == 2
    assert PolicyChange.objects.filter(number=2, source="rubric").exists()
    history = api.get(f"{API}/rubric/versions/").json()
    assert history[0]["previous_weights"]["business_impact"] == 40 and history[0]["version"]["author_name"] == "Chair"
