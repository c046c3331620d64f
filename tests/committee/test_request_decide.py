"""request_decide: the four outcomes, the required rationale, quorum for grants, conflict of interest."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from committee import services
from committee.models import Decision
from tests.committee.reviewing import decide, score, two_requests_in_review


@pytest.fixture
def scored(world):
    a, b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 8, 6, 5)
        score(member, b, 5, 5, 5)
    return a, b


def test_grant_gives_every_gpu_asked_for(world, scored):
    a, _b = scored
    decision = decide(world, a, "grant", granted_gpu_count=3)  # a count sent with a grant is ignored
    assert (decision.granted_gpu_count, decision.requested_gpu_count) == (16, 16)
    assert (decision.team_name, decision.request_title, decision.cycle_week) == ("Team A", "Ranker retrain",
                                                                               world.cycle.week)
    assert decision.decided_by_name == "Chair"


def test_partial_grant_within_the_requests_minimum_and_count(world, scored):
    a, _b = scored
    assert decide(world, a, "partial", granted_gpu_count=8).granted_gpu_count == 8
    for count in (None, 7, 16, 40):
        with pytest.raises(ValidationError) as excinfo:
            decide(world, a, "partial", granted_gpu_count=count)
        assert "from 8 to 15" in str(excinfo.value.message_dict["granted_gpu_count"])
    assert Decision.objects.get().granted_gpu_count == 8  # the refusals changed nothing


@pytest.mark.parametrize("outcome", ["defer", "reject"])
def test_defer_and_reject_grant_nothing(world, scored, outcome):
    a, _b = scored
    assert decide(world, a, outcome, granted_gpu_count=8).granted_gpu_count is None


@pytest.mark.parametrize("rationale", ["", "   "])
def test_rationale_is_required(world, scored, rationale):
    a, _b = scored
    with pytest.raises(ValidationError) as excinfo:
        decide(world, a, "grant", rationale=rationale)
    assert "rationale" in excinfo.value.message_dict
    assert not Decision.objects.exists()


def test_revising_a_decision_keeps_one_row(world, scored):
    a, _b = scored
    decide(world, a, "grant")
    decide(world, a, "defer", rationale="Capacity went to the launch.")
    assert Decision.objects.get().outcome == "defer"


def test_a_grant_needs_a_ranked_request(world):
    a, _b = two_requests_in_review(world)
    score(world.chair, a, 8, 6, 5)  # one member: below quorum
    with pytest.raises(ValidationError, match="Not ranked yet"):
        decide(world, a, "grant")
    assert decide(world, a, "defer").outcome == "defer"


def test_member_cannot_decide_on_own_team(world, scored):
    _a, b = scored
    with pytest.raises(PermissionDenied, match="Team B"):
        services.request_decide(actor=world.tech, gpu_request=b, outcome="reject", rationale="No.")
    assert not Decision.objects.exists()


def test_team_members_cannot_decide(world, scored):
    a, _b = scored
    with pytest.raises(PermissionDenied):
        services.request_decide(actor=world.lead_a, gpu_request=a, outcome="grant", rationale="Ours!")


@pytest.mark.parametrize(
    "overrides",
    [
        {"rationale": ""},
        {"outcome": "grant", "granted_gpu_count": 8},
        {"outcome": "partial", "granted_gpu_count": 16},
        {"outcome": "reject", "granted_gpu_count": 4},
    ],
)
def test_database_refuses_inconsistent_decisions(world, scored, overrides):
    a, _b = scored
    values = {"request": a, "cycle": world.cycle, "outcome": "grant", "requested_gpu_count": 16,
              "granted_gpu_count": 16, "rationale": "Because.", "decided_by_name": "Chair", "team_name": "Team A",
              "request_title": a.title, "cycle_week": world.cycle.week}
    values.update(overrides)
    with pytest.raises(IntegrityError), transaction.atomic():
        Decision.objects.create(**values)
