"""The rubric: version 1 on every install, changes through the one store with a reason, by week, its pages."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from committee import scoring, selectors, services, weeks
from committee.models import ReviewCycle
from governed.models import PolicyChange, PolicyValue
from governed.selectors import policy_version_next
from governed.services import policy_change_record
from governed.signals import policy_changed
from reports.models import Page

NEW = {"business_impact": 50, "feasibility": 20, "urgency": 20, "fairness": 10}


def change(world, weights=NEW, reason="Impact matters more this quarter.", **extra):
    return services.rubric_change(actor=world.chair, weights=weights, reason=reason, **extra)


def _changes() -> int:
    return PolicyChange.objects.count()


def test_every_install_has_the_charters_rubric_as_version_1(world):
    rubric = selectors.rubric_for_week(week=world.cycle.week)
    assert rubric.number == 1
    assert rubric.weights == {"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10}
    assert all(rubric.guidance.values())
    assert rubric.guidance == scoring.DEFAULT_GUIDANCE


def test_chair_changes_the_rubric_as_a_new_version(world, django_capture_on_commit_callbacks):
    received = []
    policy_changed.connect(lambda sender, change, **kw: received.append(change.number),
                           weak=False, dispatch_uid="test-rubric")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            rubric = change(world, guidance={"urgency": "Launch dates first."})
    finally:
        policy_changed.disconnect(dispatch_uid="test-rubric")
    stored = PolicyChange.objects.get(number=rubric.number)
    assert received == [stored.number]
    assert rubric.weights == NEW and stored.exempt_reason == ""  # new weights: the week's one substantive change
    assert stored.author == world.chair and rubric.author_name == "Chair" and stored.source == "rubric"
    assert rubric.guidance["urgency"] == "Launch dates first."
    assert rubric.guidance["fairness"] == scoring.DEFAULT_GUIDANCE["fairness"]  # carried
    assert selectors.rubric_for_week(week=world.cycle.week).weights["business_impact"] == 40  # never edited


def test_one_change_writes_one_archive_page(world, django_capture_on_commit_callbacks):
    pages = set(Page.objects.values_list("slug", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        rubric = change(world)
    assert set(Page.objects.values_list("slug", flat=True)) - pages == {f"policy-change-v{rubric.number}"}


def test_a_guidance_only_change_is_exempt_and_changes_no_number(world):
    from policy import services as policy_services

    proposal = policy_services.proposal_submit(
        actor=world.member_a, title="Quorum 3", reason="Absences", expected_effect="Fuller rankings",
        changes={"review.quorum": "3"})
    policy_services.proposal_adopt(actor=world.chair, proposal=proposal, effective_week="2026-W51", reason="Agreed",
                                   now=world.cycle.intake_closes_at - timedelta(hours=1))
    rubric = change(world, weights=selectors.rubric_current().weights, reason="A typo in the urgency guidance.",
                    guidance={"urgency": "How soon the deadline is, and what slips if it is missed."})
    stored = PolicyChange.objects.get(number=rubric.number)
    assert stored.effective_week == "2026-W51" and stored.exempt_reason  # beside the week's adopted change
    assert [v.key for v in stored.values.all()] == ["rubric_guidance.urgency"]
    assert rubric.weights == {"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10}


def test_a_change_applies_from_the_next_cycle(world):
    assert selectors.rubric_for_week(week=world.cycle.week).number == 1
    rubric = change(world)
    # The cycle open for intake keeps the rubric its teams were told.
    assert selectors.rubric_for_week(week=world.cycle.week).number == 1
    later = services.cycle_create(week=weeks.week_label(world.cycle.starts_at.date() + timedelta(days=7)))
    assert selectors.rubric_for_week(week=later.week).number == rubric.number > 1
    assert selectors.rubric_for_week(week=later.week).weights == NEW


@pytest.mark.parametrize(
    ("weights", "reason", "key"),
    [
        ({**NEW, "fairness": 11}, "Because.", "__all__"),
        ({**NEW, "urgency": -5, "fairness": 35}, "Because.", "urgency"),
        (NEW, "  ", "reason"),
    ],
)
def test_invalid_changes_are_refused_and_write_nothing(world, weights, reason, key):
    before = _changes()
    with pytest.raises(ValidationError) as excinfo:
        change(world, weights=weights, reason=reason)
    assert key in excinfo.value.message_dict
    assert _changes() == before


def test_a_change_that_changes_nothing_is_refused(world):
    with pytest.raises(ValidationError, match="Nothing changed"):
        change(world, weights={"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10})


@pytest.mark.parametrize("who", ["reviewer", "tech", "lead_a", "outsider"])
def test_only_the_chair_changes_the_rubric(world, who):
    before = _changes()
    with pytest.raises(PermissionDenied):
        services.rubric_change(actor=getattr(world, who), weights=NEW, reason="Mine now.")
    assert _changes() == before


def test_the_store_refuses_weights_that_do_not_add_up_to_100_whichever_path_writes(world):
    before = _changes()
    with pytest.raises(ValidationError, match="must add up to 100; these add up to 110"):
        policy_change_record(actor=world.chair, changes={"rubric.business_impact": 50}, effective_week="2027-W10",
                             reason="Sloppy.", source="command")
    assert _changes() == before


def test_a_flushed_database_still_reads_the_charters_rubric(db):
    ReviewCycle.objects.all().delete()
    PolicyValue.objects.all().delete()
    PolicyChange.objects.all().delete()
    cycle = services.cycle_create(week="2030-W10")
    rubric = selectors.rubric_for_week(week=cycle.week)
    assert rubric.number == 1 and rubric.weights_label == "40/30/20/10"


# --- pages ---------------------------------------------------------------------------------


def test_rubric_page_shows_history_with_who_when_why_and_old_to_new_weights(client, world):
    rubric = change(world)
    client.force_login(world.member_a)  # the rubric is published: any signed-in person reads it
    response = client.get(reverse("committee:rubric"))
    assert response.status_code == 200
    body = response.content.decode()
    assert f"Version {rubric.number}" in body and "Impact matters more this quarter." in body and "Chair" in body
    assert "<del>40%</del> → <ins>50%</ins>" in body and "<del>30%</del> → <ins>20%</ins>" in body
    assert world.cycle.week in body  # used by the open cycle (version 1)
    assert "Change the rubric" not in body  # not offered to a non-chair


def test_anonymous_is_sent_to_sign_in(client, world):
    response = client.get(reverse("committee:rubric"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_chair_changes_the_rubric_through_the_page(client, world):
    client.force_login(world.chair)
    page = client.get(reverse("committee:rubric-change"))
    assert page.status_code == 200 and b'value="40"' in page.content
    data = {**NEW, "reason": "Quarterly review.", **{f"{c}_guidance": "Guide." for c in NEW}}
    number = policy_version_next()
    assert f"Saving creates version {number}" in page.content.decode()
    response = client.post(reverse("committee:rubric-change"), data, follow=True)
    assert response.redirect_chain[-1][0] == reverse("committee:rubric")
    assert f"Rubric version {number} saved" in response.content.decode()
    assert selectors.rubric_current().guidance["business_impact"] == "Guide."


def test_change_page_shows_the_error_and_keeps_the_input(client, world):
    before = _changes()
    client.force_login(world.chair)
    data = {**NEW, "fairness": 15, "reason": "Typo in the sum.", **{f"{c}_guidance": "Guide." for c in NEW}}
    response = client.post(reverse("committee:rubric-change"), data)
    assert response.status_code == 400
    assert "add up to 100%; they add up to 105%" in response.content.decode()
    assert b"Typo in the sum." in response.content
    assert _changes() == before


@pytest.mark.parametrize("who", ["reviewer", "tech", "lead_a", "member_b", "outsider"])
def test_change_page_is_the_chairs_only(client, world, who):
    before = _changes()
    client.force_login(getattr(world, who))
    assert client.get(reverse("committee:rubric-change")).status_code == 403
    assert client.post(reverse("committee:rubric-change"), {**NEW, "reason": "x"}).status_code == 403
    assert _changes() == before


def test_a_rubric_change_for_a_week_with_an_adopted_change_is_refused_as_in_the_policy_lab(client, world):
    from governed.selectors import policy_values
    from policy import services as policy_services
    from policy.models import Proposal, ProposalStatus

    now = world.cycle.intake_closes_at - timedelta(hours=1)
    proposal = policy_services.proposal_submit(
        actor=world.member_a, title="Quorum 3", reason="Absences", expected_effect="Fuller rankings",
        changes={"review.quorum": "3"})
    # W50 is open for intake: the next cycle to open, which a rubric change made now applies to, is W51's.
    policy_services.proposal_adopt(actor=world.chair, proposal=proposal, effective_week="2026-W51", reason="Agreed",
                                   now=now)
    assert Proposal.objects.get(pk=proposal.pk).status == ProposalStatus.ADOPTED
    changes = _changes()
    client.force_login(world.chair)
    data = {**NEW, "reason": "Quarterly review.", **{f"{c}_guidance": "Guide." for c in NEW}}
    response = client.post(reverse("committee:rubric-change"), data)
    assert response.status_code == 400
    text = response.content.decode()
    assert "Week 2026-W51 already has an adopted change" in text
    assert "at most one change takes effect per week. The next free week is 2026-W52." in text
    assert b"Quarterly review." in response.content  # the chair's input is kept
    assert _changes() == changes
    assert policy_values(week="2026-W51", prefix="rubric.")["rubric.business_impact"] == 40
