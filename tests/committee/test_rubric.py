"""The rubric: version 1 on every install, changes as new versions with a reason, pinned per cycle, its pages."""

from __future__ import annotations

from datetime import timedelta
from importlib import import_module

import pytest
from django.apps import apps as django_apps
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.migrations import RunPython
from django.urls import reverse

from committee import services, signals, weeks
from committee.models import ReviewCycle, RubricVersion

NEW = {"business_impact": 50, "feasibility": 20, "urgency": 20, "fairness": 10}


def change(world, weights=NEW, reason="Impact matters more this quarter.", **extra):
    return services.rubric_change(actor=world.chair, weights=weights, reason=reason, **extra)


def test_every_install_has_the_charters_rubric_as_version_1(db):
    # Version 1 is written by a data migration's step. A transactional test earlier in the same process (a browser
    # test's) empties every table after it, so the step runs again here, as `migrate` runs it (it keeps a row that is
    # there), and the test checks that the migration runs that step.
    migration = import_module("committee.migrations.0002_rubric")
    steps = [operation.code for operation in migration.Migration.operations if isinstance(operation, RunPython)]
    assert migration.seed_charter_rubric in steps
    migration.seed_charter_rubric(django_apps, None)
    version = RubricVersion.objects.get(number=1)
    assert version.weights() == {"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10}
    assert all(version.guidance().values())
    assert version.reason == "The committee's charter."


def test_chair_changes_the_rubric_as_a_new_version(world, django_capture_on_commit_callbacks):
    received = []
    signals.rubric_changed.connect(lambda sender, rubric_version, **kw: received.append(rubric_version.number),
                                   weak=False, dispatch_uid="test-rubric")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            version = change(world, guidance={"urgency": "Launch dates first."})
    finally:
        signals.rubric_changed.disconnect(dispatch_uid="test-rubric")
    assert received == [2]
    assert version.number == 2 and version.weights() == NEW
    assert version.author == world.chair and version.author_name == "Chair"
    assert version.guidance()["urgency"] == "Launch dates first."
    assert version.guidance()["fairness"] == RubricVersion.objects.get(number=1).guidance()["fairness"]  # carried
    assert RubricVersion.objects.get(number=1).weights()["business_impact"] == 40  # never edited


def test_a_change_applies_from_the_next_cycle(world):
    assert world.cycle.rubric.number == 1
    change(world)
    world.cycle.refresh_from_db()
    assert world.cycle.rubric.number == 1  # the cycle open for intake keeps the rubric its teams were told
    later = services.cycle_create(week=weeks.week_label(world.cycle.starts_at.date() + timedelta(days=7)))
    assert later.rubric.number == 2


@pytest.mark.parametrize(
    ("weights", "reason", "key"),
    [
        ({**NEW, "fairness": 11}, "Because.", "__all__"),
        ({**NEW, "urgency": -5, "fairness": 35}, "Because.", "urgency"),
        (NEW, "  ", "reason"),
    ],
)
def test_invalid_changes_are_refused_and_write_nothing(world, weights, reason, key):
    with pytest.raises(ValidationError) as excinfo:
        change(world, weights=weights, reason=reason)
    assert key in excinfo.value.message_dict
    assert RubricVersion.objects.count() == 1


def test_a_change_that_changes_nothing_is_refused(world):
    with pytest.raises(ValidationError, match="Nothing changed"):
        change(world, weights={"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10})


@pytest.mark.parametrize("who", ["reviewer", "tech", "lead_a", "outsider"])
def test_only_the_chair_changes_the_rubric(world, who):
    with pytest.raises(PermissionDenied):
        services.rubric_change(actor=getattr(world, who), weights=NEW, reason="Mine now.")
    assert RubricVersion.objects.count() == 1


def test_database_refuses_weights_that_do_not_add_up_to_100(db):
    with pytest.raises(IntegrityError), transaction.atomic():
        RubricVersion.objects.create(
            number=9, business_impact_weight_pct=50, feasibility_weight_pct=30, urgency_weight_pct=20,
            fairness_weight_pct=10, business_impact_guidance="g", feasibility_guidance="g", urgency_guidance="g",
            fairness_guidance="g", reason="Sloppy.", author_name="x",
        )


def test_a_flushed_database_still_opens_cycles_with_the_charters_rubric(db):
    ReviewCycle.objects.all().delete()
    RubricVersion.objects.all().delete()
    cycle = services.cycle_create(week="2030-W10")
    assert cycle.rubric.number == 1 and cycle.rubric.weights_label == "40/30/20/10"


# --- pages ---------------------------------------------------------------------------------


def test_rubric_page_shows_history_with_who_when_why_and_old_to_new_weights(client, world):
    change(world)
    client.force_login(world.member_a)  # the rubric is published: any signed-in person reads it
    response = client.get(reverse("committee:rubric"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "Version 2" in body and "Impact matters more this quarter." in body and "Chair" in body
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
    response = client.post(reverse("committee:rubric-change"), data, follow=True)
    assert response.redirect_chain[-1][0] == reverse("committee:rubric")
    assert b"Rubric version 2 saved" in response.content
    assert RubricVersion.objects.get(number=2).guidance()["business_impact"] == "Guide."


def test_change_page_shows_the_error_and_keeps_the_input(client, world):
    client.force_login(world.chair)
    data = {**NEW, "fairness": 15, "reason": "Typo in the sum.", **{f"{c}_guidance": "Guide." for c in NEW}}
    response = client.post(reverse("committee:rubric-change"), data)
    assert response.status_code == 400
    assert "add up to 100%; they add up to 105%" in response.content.decode()
    assert b"Typo in the sum." in response.content
    assert RubricVersion.objects.count() == 1


@pytest.mark.parametrize("who", ["reviewer", "tech", "lead_a", "member_b", "outsider"])
def test_change_page_is_the_chairs_only(client, world, who):
    client.force_login(getattr(world, who))
    assert client.get(reverse("committee:rubric-change")).status_code == 403
    assert client.post(reverse("committee:rubric-change"), {**NEW, "reason": "x"}).status_code == 403
    assert RubricVersion.objects.count() == 1


def test_a_rubric_change_for_a_week_with_an_adopted_change_is_refused_as_in_the_policy_lab(client, world):
    from governed.models import PolicyChange
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
    changes, versions = PolicyChange.objects.count(), RubricVersion.objects.count()
    client.force_login(world.chair)
    data = {**NEW, "reason": "Quarterly review.", **{f"{c}_guidance": "Guide." for c in NEW}}
    response = client.post(reverse("committee:rubric-change"), data)
    assert response.status_code == 400
    text = response.content.decode()
    assert "Week 2026-W51 already has an adopted change" in text
    assert "at most one change takes effect per week. The next free week is 2026-W52." in text
    assert b"Quarterly review." in response.content  # the chair's input is kept
    assert (PolicyChange.objects.count(), RubricVersion.objects.count()) == (changes, versions)
    assert policy_values(week="2026-W51", prefix="rubric.")["rubric.business_impact"] == 40
