"""Conflicts of interest found from the organisation (docs/conflicts.md): the department and the manager chain recuse
a member like a declaration, unless the chair waives it with a reason, which the week's decision record archives."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command
from django.urls import reverse

from allocations.models import Department
from committee import selectors, services
from committee.models import ConflictWaiver, Decision, GpuRequest, ReportingLine, Score
from core.audit import person_name
from core.errors import StateConflict
from reports.models import Page
from reports.selectors import revision_latest
from tests.committee.review_api import API, api_for
from tests.committee.reviewing import decide, score, two_requests_in_review
from tests.conftest import committed


def same_department(world: Any, name: str = "Consumer Products") -> Department:
    """Teams A and B in one department: the tech lead (team B) is likely conflicted on team A's requests."""
    department = Department.objects.create(slug="consumer", name=name, fair_share_weight=1)
    for team in (world.team_a, world.team_b):
        team.department = department
        team.save(update_fields=["department"])
    return department


def reports_to(person: Any, manager: Any) -> None:
    ReportingLine.objects.update_or_create(person=person, defaults={"manager_username": manager.username})


def fresh(gpu_request: GpuRequest) -> GpuRequest:
    """The request as a page reads it, with its team (and so its department) as it is now."""
    return GpuRequest.objects.select_related("team").get(pk=gpu_request.pk)


def found(gpu_request: GpuRequest) -> dict[str, str]:
    """{member's username: why} of the conflicts found on the request, waived or not."""
    conflicts = selectors.found_conflicts_map(requests=[fresh(gpu_request)])[gpu_request.pk].conflicts
    usernames = dict(User.objects.values_list("pk", "username"))
    return {usernames[c.member_id]: c.text for c in conflicts}


def test_a_member_in_a_team_of_the_requests_department_is_likely_conflicted(world):
    a, b = two_requests_in_review(world)
    assert found(a) == {} and found(b) == {}
    same_department(world)
    assert found(a) == {"tech": "same department as Team B (Consumer Products)"}
    assert found(b) == {}  # the tech lead's own team: rule 2 keeps them out, not a found conflict


def test_the_manager_chain_directly_two_levels_up_and_down(world):
    a, _b = two_requests_in_review(world)
    lead = person_name(world.lead_a)
    reports_to(world.lead_a, world.reviewer)  # the lead of team A reports to the product lead
    assert found(a) == {"reviewer": f"{lead} (lead of Team A) reports to {person_name(world.reviewer)}"}
    reports_to(world.lead_a, world.outsider)  # two levels: lead → outsider → finance
    reports_to(world.outsider, world.finance)
    assert found(a) == {"finance": f"{lead} (lead of Team A) reports to {person_name(world.finance)}, 2 levels down"}
    reports_to(world.chair, world.lead_a)  # the chair reports to the team's lead
    assert found(a)["chair"] == f"{person_name(world.chair)} reports to {lead}, lead of Team A"


def test_a_chain_that_loops_is_followed_once_around():
    assert selectors.manager_chains(lines={1: 2, 2: 3, 3: 1}) == {1: [2, 3], 2: [3, 1], 3: [1, 2]}
    assert selectors.manager_chains(lines={1: 2}) == {1: [2]}


def test_a_loop_through_the_lead_finds_only_the_people_in_it(world):
    a, _b = two_requests_in_review(world)
    reports_to(world.lead_a, world.outsider)
    reports_to(world.outsider, world.reviewer)
    reports_to(world.reviewer, world.lead_a)  # back to the lead
    assert set(found(a)) == {"reviewer"}


def test_a_found_conflict_refuses_the_score_on_every_surface_and_the_decision(world):
    a, _b = two_requests_in_review(world)
    reports_to(world.lead_a, world.finance)
    with pytest.raises(PermissionDenied, match="Likely conflict of interest on “Ranker retrain”"):
        services.score_record(actor=world.finance, gpu_request=a, criterion="urgency", value=3)
    response = api_for(world.finance).post(f"{API}/requests/{a.pk}/scores/",
                                           {"criterion": "urgency", "value": 3, "note": ""}, format="json")
    assert response.status_code == 403 and "reports to" in response.json()["detail"]
    assert not Score.objects.filter(member=world.finance).exists()
    # The chair reports to team A's lead: recused, so another member records the decision instead.
    reports_to(world.chair, world.lead_a)
    score(world.reviewer, a, 5, 5, 5)
    score(world.tech, a, 5, 5, 5)
    with pytest.raises(PermissionDenied, match="found from the organisation"):
        decide(world, a)
    assert not Decision.objects.filter(request=a).exists()
    decision = services.request_decide(actor=world.reviewer, gpu_request=a, outcome="defer", rationale="Later.")
    assert decision.decided_by_name == person_name(world.reviewer)


def test_the_grid_and_the_review_mark_the_conflict_and_the_chair_sees_the_waiver_form(client, world):
    a, _b = two_requests_in_review(world)
    same_department(world)
    client.force_login(world.tech)
    grid = client.get(reverse("committee:review-grid", args=[world.cycle.week])).content.decode()
    row = grid[grid.index(f'id="grid-row-{a.pk}"'):]
    row = row[:row.index("</tr>")]
    assert "Not scorable:" in row and "same department as Team B (Consumer Products)" in row
    client.force_login(world.chair)
    review = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    card = review[review.index(f'id="request-{a.pk}"'):]
    card = card[:card.index("</article>")]
    assert "likely conflict" in card and "same department as Team B (Consumer Products)" in card
    assert reverse("committee:review-conflict-waive", args=[world.cycle.week, a.pk]) in card


def test_only_the_chair_waives_with_a_reason_and_withdrawing_recuses_again(client, world):
    a, _b = two_requests_in_review(world)
    same_department(world)
    a = fresh(a)
    with pytest.raises(PermissionDenied, match="Only the chair"):
        services.conflict_waive(actor=world.reviewer, gpu_request=a, member=world.tech, reason="Fine.")
    with pytest.raises(ValidationError) as missing:
        services.conflict_waive(actor=world.chair, gpu_request=a, member=world.tech, reason="  ")
    assert "reason" in missing.value.message_dict
    with pytest.raises(StateConflict, match="nothing to waive"):
        services.conflict_waive(actor=world.chair, gpu_request=a, member=world.finance, reason="Fine.")
    assert not ConflictWaiver.objects.exists()

    client.force_login(world.chair)
    answer = client.post(reverse("committee:review-conflict-waive", args=[world.cycle.week, a.pk]),
                         {"member": world.tech.pk, "reason": "Team B shares only the budget line."})
    assert answer.status_code == 302
    waiver = ConflictWaiver.objects.get()
    assert (waiver.member_name, waiver.conflict, waiver.waived_by_name) == (
        person_name(world.tech), "same department as Team B (Consumer Products)", person_name(world.chair))
    services.score_record(actor=world.tech, gpu_request=a, criterion="urgency", value=4)  # may score again
    with pytest.raises(StateConflict, match="already waived"):
        services.conflict_waive(actor=world.chair, gpu_request=a, member=world.tech, reason="Again.")

    with pytest.raises(PermissionDenied, match="Only the chair"):
        services.conflict_waiver_withdraw(actor=world.reviewer, gpu_request=a, member=world.tech)
    services.conflict_waiver_withdraw(actor=world.chair, gpu_request=a, member=world.tech)
    with pytest.raises(PermissionDenied, match="Likely conflict"):
        services.score_record(actor=world.tech, gpu_request=a, criterion="urgency", value=5)
    assert ConflictWaiver.objects.get().withdrawn_at is not None


def test_the_waiver_is_archived_with_its_reason_in_the_weeks_record_and_the_chain_verifies(world):
    a, b = two_requests_in_review(world)
    same_department(world)
    a = fresh(a)
    services.conflict_waive(actor=world.chair, gpu_request=a, member=world.tech, reason="Shares only a budget line.")
    decide(world, a, outcome="defer")
    decide(world, b, outcome="defer")
    committed(services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    revision = revision_latest(page=Page.objects.get(source_key=f"cycle:{world.cycle.week}"))
    [waiver] = revision.data["waivers"]
    assert (waiver["member"], waiver["title"], waiver["conflict"], waiver["reason"], waiver["withdrawn_at"]) == (
        person_name(world.tech), "Ranker retrain", "same department as Team B (Consumer Products)",
        "Shares only a budget line.", None)
    section = revision.body.split("## Conflicts waived", 1)[1]
    assert "Shares only a budget line" in section and "no: in force" in section
    out = StringIO()
    call_command("verify_archive", stdout=out)
    assert "Archive intact" in out.getvalue()
    with pytest.raises(StateConflict):  # a finalized week's waivers stay as archived
        services.conflict_waiver_withdraw(actor=world.chair, gpu_request=a, member=world.tech)


def org_with_conflicts(world: Any, teams: list[Any]) -> None:
    """For the pages' query counts: one department over team B and `teams` (the tech lead, in team B, is likely
    conflicted on all their requests) and a manager chain (the lead of team A also leads the first of `teams` and
    reports to the chair), so every query of the conflicts found runs."""
    department = Department.objects.create(slug="bulk", name="Bulk", fair_share_weight=1)
    Team = type(world.team_b)
    Team.objects.filter(pk__in=[world.team_b.pk, *(t.pk for t in teams)]).update(department=department)
    from committee.models import MembershipRole, TeamMembership

    TeamMembership.objects.create(user=world.lead_a, team=teams[0], role=MembershipRole.LEAD)
    reports_to(world.lead_a, world.chair)


def test_single_sign_on_keeps_only_the_reporting_lines_it_made(world):
    from committee.models import GrantSource

    services.sso_manager_sync(user=world.lead_a, manager="reviewer")
    assert ReportingLine.objects.get(person=world.lead_a).source == GrantSource.SSO
    services.sso_manager_sync(user=world.lead_a, manager=None)  # the provider said nothing: left as it is
    assert ReportingLine.objects.get(person=world.lead_a).manager_username == "reviewer"
    services.sso_manager_sync(user=world.lead_a, manager="")  # the provider names no manager now
    assert not ReportingLine.objects.filter(person=world.lead_a).exists()
    reports_to(world.member_a, world.chair)  # set by hand in the admin
    services.sso_manager_sync(user=world.member_a, manager="finance")
    assert ReportingLine.objects.get(person=world.member_a).manager_username == "chair"
