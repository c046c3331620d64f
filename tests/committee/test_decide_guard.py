"""The decide guard (committee.selectors.deciding) on every path that changes an outcome, as every role.

One published week is built once per test; each case runs in a savepoint that is rolled back, with
fresh user rows (their roles are cached on the instance), so a conflict declared or a team joined for
one case never reaches the next. A refused case must raise PermissionDenied and change nothing.

The table below is the specification: who may do what to team A's granted request, with
DOCKET_DECISIONS_RECORDED_BY "chair" (the default). "chair in A" makes the chair a member of team A;
"recused" declares the actor's conflict of interest on the request.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan
from committee import services
from committee.models import (
    Appeal,
    ConflictDeclaration,
    Decision,
    DecisionCorrection,
    EmergencyRequest,
    GpuRequest,
    TeamMembership,
)
from committee.selectors.grid import score_refusal
from committee.services import emergency as emergencies
from tests.clock import FIXED_NOW
from tests.committee.appealing import publish, record_revisions
from tests.committee.review_api import as_user
from tests.committee.reviewing import close, decide, score
from tests.conftest import committed
from tests.factories import file_request

ALLOW, DENY = "allow", "deny"


@pytest.fixture
def week(world, clock):
    """Published at FIXED_NOW: team A's "Ranker retrain" and team B's "Vision model" partly granted (ranked),
    team A's "Unscored" (nobody scored it) deferred automatically at finalize. Team A's lead appealed "Ranker
    retrain" and "Unscored", so amendments and answers can be walked too."""
    clock.move_to(FIXED_NOW, tick=False)
    first = file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    second = file_request(world, team=world.team_b, title="Vision model", gpu_count=24, min_gpu_count=8)
    unscored = file_request(world, pool=world.h100, title="Unscored", gpu_count=8, min_gpu_count=4)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, first, 9, 8, 9)
        score(member, second, 6, 6, 5)
    decide(world, first, outcome="partial", granted_gpu_count=8, rationale="Half now.")
    decide(world, second, outcome="partial", granted_gpu_count=8, rationale="Half now.")
    world.cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    publish(world)
    appeals = {
        r.pk: services.appeal_file(actor=world.lead_a, gpu_request=r, statement="We need more.")
        for r in (first, unscored)
    }
    return {"first": first, "second": second, "unscored": unscored, "appeals": appeals}


def _fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)


@contextmanager
def _case(world: Any, target: GpuRequest, *, actor: User, recused: bool = False, chair_in_team: bool = False):
    """A savepoint rolled back at the end: the case's conflict and team, then the actor as a fresh row."""
    with transaction.atomic():
        if recused:
            ConflictDeclaration.objects.create(request=target, member=actor, member_name=actor.username,
                                               declared_at=timezone.now())
        if chair_in_team:
            TeamMembership.objects.create(user=world.chair, team=target.team)
        yield _fresh(actor)
        transaction.set_rollback(True)


def _state(target: GpuRequest) -> tuple[Any, ...]:
    decision = Decision.objects.get(request=target)
    plan = allocation_selectors.plan_for_week(week=target.cycle.week)
    return (decision.outcome, decision.granted_gpu_count, decision.rationale, plan.version if plan else None,
            DecisionCorrection.objects.count(), tuple(Appeal.objects.order_by("pk").values_list("status", flat=True)))


def _correct(actor: User, target: GpuRequest, _week: dict[str, Any]) -> None:
    services.decision_correct(actor=actor, gpu_request=target, outcome="grant", rationale="All 16.",
                              reason="Finance found the budget.")


def _amend(actor: User, target: GpuRequest, week: dict[str, Any]) -> None:
    services.appeal_decide(actor=actor, appeal=week["appeals"][target.pk], decision="amend", reason="They need it.",
                           outcome="grant", rationale="All 16.")


def _uphold(actor: User, target: GpuRequest, week: dict[str, Any]) -> None:
    services.appeal_decide(actor=actor, appeal=week["appeals"][target.pk], decision="uphold", reason="It stands.")


PATHS: dict[str, Callable[[User, GpuRequest, dict[str, Any]], None]] = {
    "correct": _correct, "amend": _amend, "uphold": _uphold,
}

#  (path, actor, recused, chair in team A) → allowed?
#  reviewer, finance: seats; tech: a seat, in team B (not A); member_a: team A, no seat; outsider: nothing.
TABLE = [
    ("correct", "chair", False, False, ALLOW),
    ("correct", "chair", True, False, DENY),  # the chair declared a conflict on it
    ("correct", "chair", False, True, DENY),  # the chair's own team's request
    ("correct", "reviewer", False, False, DENY),  # corrections are the chair's
    ("correct", "reviewer", False, True, ALLOW),  # ... unless the chair is kept out of it
    ("correct", "reviewer", True, True, DENY),  # ... and then not by a recused member
    ("correct", "tech", False, False, DENY),
    ("correct", "member_a", False, False, DENY),
    ("correct", "outsider", False, False, DENY),
    ("amend", "chair", False, False, ALLOW),
    ("amend", "chair", True, False, DENY),
    ("amend", "chair", False, True, DENY),
    ("amend", "reviewer", False, False, DENY),  # a member who does not record decisions
    ("amend", "finance", False, False, DENY),
    ("amend", "reviewer", False, True, ALLOW),
    ("amend", "reviewer", True, True, DENY),  # a recused member cannot amend
    ("amend", "member_a", False, False, DENY),
    ("amend", "outsider", False, False, DENY),
    ("uphold", "chair", False, False, ALLOW),
    ("uphold", "reviewer", False, False, ALLOW),  # upholding changes no outcome: any seat outside the team
    ("uphold", "tech", False, False, ALLOW),  # tech is in team B, the request is team A's
    ("uphold", "reviewer", True, False, DENY),  # but not a recused one
    ("uphold", "chair", False, True, DENY),
    ("uphold", "member_a", False, False, DENY),
    ("uphold", "outsider", False, False, DENY),
]


def test_every_outcome_path_as_every_role_and_conflict(world, week):
    target = week["first"]
    before = _state(target)
    for path, who, recused, chair_in_team, expected in TABLE:
        with _case(world, target, actor=getattr(world, who), recused=recused, chair_in_team=chair_in_team) as actor:
            label = f"{path} by {who}{' (recused)' if recused else ''}{' (chair in team A)' if chair_in_team else ''}"
            if expected == DENY:
                with pytest.raises(PermissionDenied):
                    PATHS[path](actor, target, week)
                assert _state(target) == before, label
            else:
                PATHS[path](actor, target, week)
                assert _state(target) != before, label
    assert _state(target) == before


def test_the_review_grid_and_emergencies_ask_the_same_guard(world, week):
    """The review's score and decision (a cycle in review), the grid's refusal text, an emergency's approval."""
    target = week["first"]
    with _case(world, target, actor=world.reviewer, recused=True) as actor:
        refusal = score_refusal(viewer=actor, gpu_request=target, recused=True)
        assert refusal is not None and "recused" in refusal
    with _case(world, target, actor=world.member_a) as actor:
        assert score_refusal(viewer=actor, gpu_request=target) is not None
    # An emergency of team A in the running week: the chair in team A may not approve it, a recused member neither.
    services.cycle_create(week="2026-W49")
    emergency = emergencies.emergency_request_file(
        actor=world.lead_a, team=world.team_a, pool=world.a100, title="Hotfix", gpu_count=2, duration_hours=4,
        justification="Fraud wave.",
    )
    for actor_user, recused, chair_in_team in ((world.chair, False, True), (world.reviewer, True, False),
                                               (world.member_a, False, False)):
        with _case(world, emergency.request, actor=actor_user, recused=recused, chair_in_team=chair_in_team) as actor:
            with pytest.raises(PermissionDenied):
                emergencies.emergency_request_decide(actor=actor, emergency=emergency, approve=True)
            assert EmergencyRequest.objects.get(pk=emergency.pk).approvals.count() == 0


def test_a_correction_by_the_chair_on_their_own_team_is_refused_with_403_on_the_page_and_the_api(
    world, week, client, api
):
    target = week["first"]
    TeamMembership.objects.create(user=world.chair, team=world.team_a)
    before = _state(target)
    client.force_login(world.chair)
    page = client.post(f"/requests/{target.pk}/correct/", {"outcome": "grant", "rationale": "All.", "reason": "Mine."})
    assert page.status_code == 403
    as_user(api, _fresh(world.chair))
    answer = api.post(f"/api/v1/requests/{target.pk}/corrections/",
                      {"outcome": "grant", "rationale": "All.", "reason": "Mine."}, format="json")
    assert answer.status_code == 403 and "Team A" in answer.json()["detail"]
    assert _state(target) == before


def test_an_unscored_request_is_granted_only_as_the_chairs_stated_exception(world, week):
    unscored = week["unscored"]
    assert Decision.objects.get(request=unscored).outcome == "defer"
    before = _state(unscored)
    # A correction or an amendment without an exception: refused, keyed by the outcome, nothing changed.
    for attempt in (
        lambda: services.decision_correct(actor=world.chair, gpu_request=unscored, outcome="grant",
                                          rationale="All 8.", reason="Urgent."),
        lambda: services.appeal_decide(actor=world.chair, appeal=week["appeals"][unscored.pk], decision="amend",
                                       reason="Urgent.", outcome="partial", granted_gpu_count=4, rationale="Four."),
    ):
        with pytest.raises(ValidationError) as refused:
            attempt()
        assert "Not ranked yet" in " ".join(refused.value.message_dict["outcome"])
        assert _state(unscored) == before
    # An exception on a ranked request, or on an outcome that grants nothing, is refused too.
    with pytest.raises(ValidationError) as ranked:
        services.decision_correct(actor=world.chair, gpu_request=week["first"], outcome="grant", rationale="All.",
                                  reason="R.", exception="Because.")
    assert set(ranked.value.message_dict) == {"exception"}
    # Only the chair states an exception: with decisions recorded by any member, a member's is refused (403).
    with override_settings(DOCKET_DECISIONS_RECORDED_BY="committee"), pytest.raises(PermissionDenied):
        services.appeal_decide(actor=_fresh(world.reviewer), appeal=week["appeals"][unscored.pk],
                               decision="amend", reason="Urgent.", outcome="grant", rationale="All.",
                               exception="I say so.")
    assert _state(unscored) == before
    # The chair's exception: stored with the amendment's correction and the decision, shown in the record.
    committed(services.appeal_decide, actor=world.chair, appeal=week["appeals"][unscored.pk], decision="amend",
              reason="The launch moved up.", outcome="grant", rationale="All 8 GPUs.",
              exception="Scoring missed it; the launch is Thursday.")
    decision = Decision.objects.get(request=unscored)
    assert (decision.outcome, decision.exception_reason) == ("grant", "Scoring missed it; the launch is Thursday.")
    correction = DecisionCorrection.objects.get(decision=decision)
    assert correction.exception_reason == "Scoring missed it; the launch is Thursday."
    latest = record_revisions(world)[-1]
    assert "Granted as an exception to the rubric" in latest.body
    assert "Scoring missed it; the launch is Thursday." in latest.body
    assert AllocationPlan.objects.filter(week=world.cycle.week).count() == 2


def test_the_review_grants_an_unscored_request_only_with_the_chairs_exception(world, client):
    unscored = file_request(world, title="Unscored", gpu_count=8, min_gpu_count=4)
    close(world)
    url = f"/review/{world.cycle.week}/requests/{unscored.pk}/decision/"
    client.force_login(world.chair)
    refused = client.post(url, {"outcome": "grant", "rationale": "Urgent."})
    assert refused.status_code == 400 and "Not ranked yet" in refused.content.decode()
    assert not Decision.objects.filter(request=unscored).exists()
    # A recused member, or one who does not record decisions, is refused before anything is read.
    with override_settings(DOCKET_DECISIONS_RECORDED_BY="committee"), _case(
        world, unscored, actor=world.reviewer, recused=True
    ) as actor, pytest.raises(PermissionDenied):
        services.request_decide(actor=actor, gpu_request=unscored, outcome="defer", rationale="Later.")
    with pytest.raises(PermissionDenied):
        services.request_decide(actor=_fresh(world.finance), gpu_request=unscored, outcome="defer",
                                rationale="Later.")
    page = client.get(url).content.decode()
    assert 'name="exception"' in page  # the chair's form offers the exception on an unranked request
    done = client.post(url, {"outcome": "grant", "rationale": "Urgent.", "exception": "The outage fix ships now."})
    assert done.status_code == 302
    assert Decision.objects.get(request=unscored).exception_reason == "The outage fix ships now."
