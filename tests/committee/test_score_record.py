"""score_record: who may score what, when, and the database's own guarantees."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from committee import services
from committee.models import Score
from committee.services.scores import ScoreInvalid
from tests.committee.reviewing import close, two_requests_in_review
from tests.factories import file_request


def test_member_scores_and_revises_in_place(world):
    a, _b = two_requests_in_review(world)
    services.score_record(actor=world.reviewer, gpu_request=a, criterion="business_impact", value=6, note="ok")
    services.score_record(actor=world.reviewer, gpu_request=a, criterion="business_impact", value=8, note=" better ")
    score = Score.objects.get()
    assert (score.value, score.note, score.member_name) == (8, "better", "Reviewer")


def test_member_cannot_score_own_team(world):
    _a, b = two_requests_in_review(world)  # tech is a member of team B
    with pytest.raises(PermissionDenied, match="member of Team B"):
        services.score_record(actor=world.tech, gpu_request=b, criterion="business_impact", value=10)
    assert not Score.objects.exists()


def test_tech_lead_scores_other_teams(world):
    a, _b = two_requests_in_review(world)
    services.score_record(actor=world.tech, gpu_request=a, criterion="urgency", value=3)
    assert Score.objects.filter(member=world.tech).count() == 1


@pytest.mark.parametrize("who", ["lead_a", "member_b", "outsider"])
def test_people_without_a_seat_cannot_score(world, who):
    a, _b = two_requests_in_review(world)
    with pytest.raises(PermissionDenied, match="committee"):
        services.score_record(actor=getattr(world, who), gpu_request=a, criterion="urgency", value=3)


@pytest.mark.parametrize(
    ("criterion", "value", "field"),
    [("fairness", 5, "criterion"), ("charm", 5, "criterion"), ("urgency", 11, "value"), ("urgency", -1, "value"),
     ("urgency", True, "value"), ("urgency", 2.5, "value")],
)
def test_invalid_scores_are_refused(world, criterion, value, field):
    a, _b = two_requests_in_review(world)
    with pytest.raises(ValidationError) as excinfo:
        services.score_record(actor=world.reviewer, gpu_request=a, criterion=criterion, value=value)
    assert field in excinfo.value.message_dict
    assert not Score.objects.exists()


def test_no_scoring_while_intake_is_open(world):
    a = file_request(world)
    with pytest.raises(ValidationError, match="open for intake, not in review"):
        services.score_record(actor=world.reviewer, gpu_request=a, criterion="urgency", value=3)


def test_drafts_are_not_reviewed(world):
    draft = file_request(world, submit=False)
    close(world)
    with pytest.raises(ValidationError, match="Only submitted requests"):
        services.score_record(actor=world.reviewer, gpu_request=draft, criterion="urgency", value=3)


def _insert(world, gpu_request, **overrides):
    values = {"member": world.reviewer, "member_name": "Reviewer", "request": gpu_request,
              "criterion": "urgency", "value": 5}
    values.update(overrides)
    with transaction.atomic():
        Score.objects.create(**values)


@pytest.mark.parametrize("overrides", [{"value": 11}, {"criterion": "fairness"}])
def test_database_refuses_out_of_range_or_computed_scores(world, overrides):
    a = file_request(world)
    with pytest.raises(IntegrityError):
        _insert(world, a, **overrides)


def test_database_holds_one_score_per_member_request_and_criterion(world):
    a = file_request(world)
    _insert(world, a)
    with pytest.raises(IntegrityError):
        _insert(world, a, value=7)


def test_a_members_scores_of_a_request_are_recorded_together_or_not_at_all(world):
    a, _b = two_requests_in_review(world)
    with pytest.raises(ScoreInvalid) as refused:  # a ValidationError keyed by field, naming the criterion at fault
        services.scores_record(actor=world.reviewer, gpu_request=a,
                               values={"business_impact": 7, "feasibility": "１", "urgency": 4})
    assert "value" in refused.value.message_dict and refused.value.criterion == "feasibility"
    assert not Score.objects.exists()

    services.scores_record(actor=world.reviewer, gpu_request=a, values={"business_impact": 7, "feasibility": "5"},
                           notes={"feasibility": " a distilled model would do "})
    stored = dict(Score.objects.filter(request=a).values_list("criterion", "value"))
    assert stored == {"business_impact": 7, "feasibility": 5}
    assert Score.objects.get(criterion="feasibility").note == "a distilled model would do"
