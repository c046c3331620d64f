"""The corrections and appeals API: the chair corrects, the team appeals within the window, the committee answers."""

from __future__ import annotations

from datetime import timedelta

import pytest

from allocations.models import AllocationPlan
from committee.models import Appeal, AppealStatus, Decision, DecisionCorrection
from tests.clock import FIXED_NOW
from tests.committee.appealing import finalize_week, publish
from tests.committee.review_api import API, as_user


@pytest.fixture
def published(world, clock):
    clock.move_to(FIXED_NOW, tick=False)
    requests = finalize_week(world)
    publish(world)
    return requests


def test_the_chair_corrects_over_the_api_and_the_team_reads_the_history(api, world, published):
    _first, second, _third = published
    as_user(api, world.chair)
    response = api.post(f"{API}/requests/{second.pk}/corrections/",
                        {"outcome": "grant", "rationale": "All 24.", "reason": "Budget approved."}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["previous_outcome"], body["previous_granted_gpu_count"], body["outcome"]) == ("partial", 8, "grant")
    assert (body["plan_version"], body["reason"], body["appeal_id"]) == (2, "Budget approved.", None)
    as_user(api, world.member_b)
    history = api.get(f"{API}/requests/{second.pk}/corrections/").json()
    assert [row["reason"] for row in history] == ["Budget approved."]
    as_user(api, world.member_a)
    assert api.get(f"{API}/requests/{second.pk}/corrections/").status_code == 404  # another team's request


def test_a_correction_without_a_reason_or_with_an_unknown_field_is_400_and_changes_nothing(api, world, published):
    _first, second, _third = published
    as_user(api, world.chair)
    for body in ({"outcome": "grant", "rationale": "All 24.", "reason": ""},
                 {"outcome": "grant", "rationale": "All 24.", "reason": "R.", "plan_version": 7}):
        response = api.post(f"{API}/requests/{second.pk}/corrections/", body, format="json")
        assert response.status_code == 400
    assert not DecisionCorrection.objects.exists() and AllocationPlan.objects.count() == 1
    as_user(api, world.reviewer)
    response = api.post(f"{API}/requests/{second.pk}/corrections/",
                        {"outcome": "grant", "rationale": "All.", "reason": "R."}, format="json")
    assert response.status_code == 403
    assert Decision.objects.get(request=second).outcome == "partial"


def test_the_team_appeals_within_the_window_and_the_committee_amends(api, world, published, clock):
    _first, second, _third = published
    clock.move_to(FIXED_NOW + timedelta(hours=47, minutes=59), tick=False)
    as_user(api, world.member_b)
    filed = api.post(f"{API}/requests/{second.pk}/appeals/", {"statement": "Eight are too few."}, format="json")
    assert filed.status_code == 201 and filed.json()["status"] == "open"
    again = api.post(f"{API}/requests/{second.pk}/appeals/", {"statement": "Again."}, format="json")
    assert again.status_code == 409
    appeal_id = filed.json()["id"]
    as_user(api, world.tech)  # a committee seat, but in team B
    assert api.post(f"{API}/appeals/{appeal_id}/decision/", {"decision": "uphold", "reason": "No."},
                    format="json").status_code == 403
    as_user(api, world.finance)  # a seat outside team B, but decisions are the chair's: no amendment
    refused = api.post(f"{API}/appeals/{appeal_id}/decision/",
                       {"decision": "amend", "reason": "Sixteen fit.", "outcome": "partial", "granted_gpu_count": 16,
                        "rationale": "Sixteen."}, format="json")
    assert refused.status_code == 403 and "Only the chair records" in refused.json()["detail"]
    as_user(api, world.chair)
    response = api.post(f"{API}/appeals/{appeal_id}/decision/",
                        {"decision": "amend", "reason": "Sixteen fit.", "outcome": "partial", "granted_gpu_count": 16,
                         "rationale": "Sixteen."}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "amended"
    assert Decision.objects.get(request=second).granted_gpu_count == 16
    assert AllocationPlan.objects.filter(week=world.cycle.week).count() == 2
    assert api.post(f"{API}/appeals/{appeal_id}/decision/", {"decision": "uphold", "reason": "Again."},
                    format="json").status_code == 409


def test_an_appeal_after_the_window_is_409_with_the_reason(api, world, published, clock):
    _first, second, _third = published
    clock.move_to(FIXED_NOW + timedelta(hours=48, minutes=1), tick=False)
    as_user(api, world.member_b)
    response = api.post(f"{API}/requests/{second.pk}/appeals/", {"statement": "Late."}, format="json")
    assert response.status_code == 409
    assert "closed on" in str(response.json())
    as_user(api, world.member_a)
    assert api.post(f"{API}/requests/{second.pk}/appeals/", {"statement": "Not ours."},
                    format="json").status_code == 404
    assert not Appeal.objects.filter(status=AppealStatus.OPEN).exists()
