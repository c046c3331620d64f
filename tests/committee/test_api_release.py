"""POST /api/v1/requests/<pk>/release/: a team's lead gives GPUs back; everyone else is refused, bad input is 400."""

from __future__ import annotations

from datetime import timedelta

import pytest

from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan
from committee.models import RequestEvent
from tests.committee.contended import contended_week
from tests.committee.review_api import API, as_user


@pytest.fixture
def week(world):
    return contended_week(world)


def _held(world):
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None
    return {w.request_ref: w.gpu_count for w in allocation_selectors.plan_window_list(plan=plan)}


def test_the_lead_gives_back_gpus_from_an_hour_and_the_shortened_grant_gets_them(api, world, week):
    start = world.cycle.starts_at + timedelta(hours=24)
    as_user(api, world.lead_a)
    response = api.post(f"{API}/requests/{week.placed.pk}/release/",
                        {"gpu_count": 20, "effective_from": start.isoformat(), "reason": "Done early."}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json() == {"plan_version": 2, "effective_from": start.isoformat().replace("+00:00", "Z"),
                               "released_gpu_count": 20, "kept_gpu_count": 20}
    assert _held(world) == {week.placed.pk: 20, week.shortened.pk: 16}


def test_others_and_bad_input_are_refused_and_nothing_changes(api, world, week):
    """Each refusal changes nothing, so the cases run one after the other on the same published week."""
    cases = [
        ("member_a", {"gpu_count": 1}, 403),  # a member, not the lead
        ("member_b", {"gpu_count": 1}, 404),  # another team's request
        ("chair", {"gpu_count": 1}, 403),
        ("lead_a", {"gpu_count": 41}, 400),  # more than the window holds
        ("lead_a", {"gpu_count": 0}, 400),
        ("lead_a", {"gpu_count": 1, "effective_from": "2026-12-01T10:00:00Z"}, 400),  # an hour in the past
        ("lead_a", {"gpu_count": 1, "effective_from": "tomorrow"}, 400),
        ("lead_a", {"gpu_count": 1, "plan_version": 2}, 400),  # an unknown field
    ]
    for persona, body, status in cases:
        as_user(api, getattr(world, persona))
        response = api.post(f"{API}/requests/{week.placed.pk}/release/", body, format="json")
        assert response.status_code == status, (persona, body, response.json())
        assert AllocationPlan.objects.count() == 1 and not RequestEvent.objects.filter(action="released").exists()
        assert _held(world) == {week.placed.pk: 40, week.shortened.pk: 6}


def test_a_grant_without_a_window_is_a_conflict(api, world, week):
    as_user(api, world.lead_a)
    response = api.post(f"{API}/requests/{week.unplaced.pk}/release/", {"gpu_count": 1}, format="json")
    assert response.status_code == 409 and "holds no window" in str(response.json())
