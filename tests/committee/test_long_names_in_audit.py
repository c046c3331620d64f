"""A person whose first and last names together pass 150 characters can still score, decide, finalize,
publish and change the rubric; the audit rows copy the name cut to its 150-character column."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from rest_framework.test import APIClient

from tests.committee.reviewing import score, two_requests_in_review

PINNED = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
WEIGHTS = {"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10}


def lengthen(user, first: str, last: str) -> None:
    user.first_name, user.last_name = first * 150, last * 150
    user.save()


def cut_name(first: str) -> str:
    return first * 149 + "…"


@pytest.fixture
def long_named(world):
    with time_machine.travel(PINNED, tick=False):
        lengthen(world.chair, "C", "c")
        lengthen(world.reviewer, "R", "r")
        yield world


def as_user(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def test_a_long_named_member_scores_and_decides(long_named, settings):
    settings.DOCKET_DECISIONS_RECORDED_BY = "committee"  # the member records it: the test is about the name's copy
    world = long_named
    a, _b = two_requests_in_review(world)
    reviewer = as_user(world.reviewer)
    scored = reviewer.post(f"/api/v1/requests/{a.pk}/scores/", {"criterion": "urgency", "value": 6}, format="json")
    assert scored.status_code == 200, scored.json()
    assert scored.json()["member_name"] == cut_name("R")
    decided = reviewer.put(f"/api/v1/requests/{a.pk}/decision/", {"outcome": "defer", "rationale": "Next week."},
                           format="json")
    assert decided.status_code == 200, decided.json()
    assert decided.json()["decided_by_name"] == cut_name("R")


def test_a_long_named_chair_finalizes_and_publishes(long_named):
    world = long_named
    a, b = two_requests_in_review(world)
    for member in (world.reviewer, world.finance):
        score(member, a, 7, 6, 5)
        score(member, b, 5, 5, 5)
    chair = as_user(world.chair)
    for gpu_request in (a, b):
        response = chair.put(f"/api/v1/requests/{gpu_request.pk}/decision/", {"outcome": "grant", "rationale": "Ok."},
                             format="json")
        assert response.status_code == 200, response.json()
    finalized = chair.post(f"/api/v1/cycles/{world.cycle.week}/finalize/")
    assert finalized.status_code == 200, finalized.json()
    assert finalized.json()["finalized_by_name"] == cut_name("C")
    published = chair.post(f"/api/v1/cycles/{world.cycle.week}/publish/", {}, format="json")
    assert published.status_code == 201, published.json()
    assert published.json()["published_by_name"] == cut_name("C")


def test_a_long_named_chair_changes_the_rubric(long_named):
    chair = as_user(long_named.chair)
    weights = {**WEIGHTS, "business_impact": 35, "urgency": 25}
    response = chair.post("/api/v1/rubric/versions/", {"weights": weights, "reason": "Urgency matters more."},
                          format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["author_name"] == cut_name("C")
