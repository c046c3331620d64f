"""The cycles API: listing, and the chair's transitions with wrong states answered 409."""

from __future__ import annotations

import pytest

from committee.models import CycleStatus, Score
from tests.committee.review_api import API, as_user
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request


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
