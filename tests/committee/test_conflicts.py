"""Conflicts of interest: a member declares one on a request, is recused from it, and the record says so."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import override_settings
from django.urls import reverse

from committee import selectors, services
from committee.models import ConflictDeclaration, Decision, Score
from reports.models import Page
from reports.records import decision_record_markdown
from reports.selectors import revision_latest
from tests.committee.reviewing import close, decide, score
from tests.conftest import committed
from tests.factories import file_request


def _ranked(world):
    return [(row.request.title, row.result.rank) for row in selectors.cycle_ranking(cycle=world.cycle)]


@pytest.fixture
def scored(world):
    """Team A's "Ranker retrain" lifted to first by Finance's tens; team B's "Vision model" steady at six."""
    a = file_request(world, title="Ranker retrain")
    b = file_request(world, team=world.team_b, pool=world.h100, title="Vision model", gpu_count=8, min_gpu_count=4)
    close(world)
    score(world.chair, a, 5, 5, 5)
    score(world.reviewer, a, 5, 5, 5)
    score(world.finance, a, 10, 10, 10)
    score(world.chair, b, 6, 6, 6)
    score(world.reviewer, b, 6, 6, 6)
    return a, b


def test_declaring_a_conflict_withdraws_the_scores_from_the_totals_and_the_rank_changes(world, scored):
    a, _b = scored
    assert _ranked(world) == [("Ranker retrain", 1), ("Vision model", 2)]
    services.conflict_declare(actor=world.finance, gpu_request=a, reason="I advise team A on this model.")
    assert _ranked(world) == [("Vision model", 1), ("Ranker retrain", 2)]
    row = next(r for r in selectors.cycle_ranking(cycle=world.cycle) if r.request.pk == a.pk)
    assert row.result.criterion("business_impact").score == 5 and row.result.criterion("business_impact").count == 2
    assert Score.objects.filter(request=a, member=world.finance).count() == 3  # kept, not counted


def test_withdrawing_the_declaration_counts_the_scores_again_and_is_recorded(world, scored):
    a, _b = scored
    services.conflict_declare(actor=world.finance, gpu_request=a)
    withdrawn = services.conflict_withdraw(actor=world.finance, gpu_request=a)
    assert withdrawn.withdrawn_at is not None
    assert _ranked(world) == [("Ranker retrain", 1), ("Vision model", 2)]
    assert ConflictDeclaration.objects.filter(request=a, member=world.finance).count() == 1
    # A second declaration after the withdrawal is a new row; both stay.
    services.conflict_declare(actor=world.finance, gpu_request=a, reason="Again.")
    assert ConflictDeclaration.objects.filter(request=a, member=world.finance).count() == 2


def test_a_recused_member_can_neither_score_nor_decide(world, scored):
    a, _b = scored
    services.conflict_declare(actor=world.finance, gpu_request=a)
    with pytest.raises(PermissionDenied, match="recused"):
        services.score_record(actor=world.finance, gpu_request=a, criterion="urgency", value=3)
    assert Score.objects.get(request=a, member=world.finance, criterion="urgency").value == 10
    with override_settings(DOCKET_DECISIONS_RECORDED_BY="committee"), pytest.raises(PermissionDenied, match="recused"):
        services.request_decide(actor=world.finance, gpu_request=a, outcome="grant", rationale="Mine.")
    assert not Decision.objects.filter(request=a).exists()


def test_a_recused_chair_leaves_the_decision_to_another_member(world, scored):
    a, b = scored
    services.conflict_declare(actor=world.chair, gpu_request=a, reason="My partner leads team A.")
    with pytest.raises(PermissionDenied, match="recused"):
        decide(world, a)
    decision = services.request_decide(actor=world.reviewer, gpu_request=a, outcome="defer", rationale="Later.")
    assert decision.decided_by_name == "Reviewer"
    with pytest.raises(PermissionDenied, match="Only the chair"):  # the chair is not conflicted on b
        services.request_decide(actor=world.reviewer, gpu_request=b, outcome="defer", rationale="Later.")


def test_declarations_that_cannot_be_made_store_nothing(world, scored):
    a, b = scored
    with pytest.raises(PermissionDenied, match="already kept out"):
        services.conflict_declare(actor=world.tech, gpu_request=b)  # tech is in team B
    with pytest.raises(PermissionDenied, match="Only committee members"):
        services.conflict_declare(actor=world.member_b, gpu_request=a)
    with pytest.raises(ValidationError) as exc:
        services.conflict_declare(actor=world.finance, gpu_request=a, reason="x" * 1001)
    assert "reason" in exc.value.message_dict
    services.conflict_declare(actor=world.finance, gpu_request=a)
    with pytest.raises(ValidationError, match="already declared"):
        services.conflict_declare(actor=world.finance, gpu_request=a)
    with pytest.raises(ValidationError, match="no conflict of interest declared"):
        services.conflict_withdraw(actor=world.reviewer, gpu_request=a)
    assert ConflictDeclaration.objects.count() == 1


def test_declarations_are_frozen_once_the_week_is_finalized(world, scored):
    a, b = scored
    services.conflict_declare(actor=world.finance, gpu_request=a)
    decide(world, a)
    decide(world, b)
    services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    with pytest.raises(ValidationError, match="finalized"):
        services.conflict_withdraw(actor=world.finance, gpu_request=a)
    with pytest.raises(ValidationError, match="finalized"):
        services.conflict_declare(actor=world.reviewer, gpu_request=b)
    assert ConflictDeclaration.objects.get(request=a).withdrawn_at is None


def test_the_review_shows_the_recusal_and_offers_the_recused_member_no_inputs(world, scored, client):
    a, _b = scored
    client.force_login(world.finance)
    url = reverse("committee:review-cycle", args=[world.cycle.week])
    response = client.post(reverse("committee:review-conflict", args=[world.cycle.week, a.pk]),
                           {"reason": "I advise team A."})
    assert response.status_code == 302 and response["Location"].endswith(f"#request-{a.pk}")
    html = client.get(url).content.decode()
    card = html[html.index(f'id="request-{a.pk}"'):]
    card = card[:card.index("</article>")]
    assert "recused: Finance" in card
    assert "You declared a conflict of interest: you are recused" in card and "Your reason: “I advise team A.”" in card
    assert 'name="criterion"' not in card
    client.force_login(world.chair)
    html = client.get(url).content.decode()
    assert "recused: Finance" in html and "recused: scores not counted" in html


def test_the_decision_record_lists_recusals_and_older_records_read_as_before(world, scored):
    a, b = scored
    services.conflict_declare(actor=world.finance, gpu_request=a, reason="I advise team A.")
    services.conflict_declare(actor=world.reviewer, gpu_request=b)
    services.conflict_withdraw(actor=world.reviewer, gpu_request=b)
    decide(world, a)
    decide(world, b)
    committed(services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    revision = revision_latest(page=Page.objects.get(source_key=f"cycle:{world.cycle.week}"))
    recusals = revision.data["recusals"]
    assert [(r["member"], r["title"], r["reason"], r["withdrawn_at"] is None) for r in recusals] == [
        ("Finance", "Ranker retrain", "I advise team A.", True),
        ("Reviewer", "Vision model", "", False),
    ]
    assert "## Recusals" in revision.body
    recusal_section = revision.body.split("## Recusals", 1)[1]
    line = next(line for line in recusal_section.splitlines() if line.startswith("| Finance |"))
    assert "Ranker retrain" in line and "I advise team A" in line and "no: recused" in line
    assert "no: recused" in revision.body
    older = {key: value for key, value in revision.data.items() if key != "recusals"}
    assert "Recusals" not in decision_record_markdown(older)  # type: ignore[arg-type]
