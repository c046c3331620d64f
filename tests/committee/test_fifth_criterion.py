"""Criteria as data: a fifth criterion added to the one list (committee.scoring) in a fixture, its weight and guidance
in the store, is scored, ranked and shown on the review, the what-if, the decision record and its PDF."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from committee import scoring, selectors, services
from reports.models import ExportStatus, Page, PdfExport
from reports.selectors import pdf_export_path, revision_latest
from tests.browser import require_chromium
from tests.committee.reviewing import decide, two_requests_in_review
from tests.governed.version_one import version_1_set
from tests.reports.test_pdf_export import pdf_text

FIFTH = "sustainability"
WEIGHTS = {"business_impact": 30, "feasibility": 25, "urgency": 20, FIFTH: 15, "fairness": 10}


@pytest.fixture
def fifth(monkeypatch: pytest.MonkeyPatch, world: Any) -> Any:
    """The one list with a fifth, member-scored criterion; its weight (15 %) and guidance in the store's version 1."""
    monkeypatch.setattr(scoring, "CRITERIA", tuple(WEIGHTS))
    monkeypatch.setattr(scoring, "MEMBER_SCORED", (*scoring.MEMBER_SCORED, FIFTH))
    version_1_set({**{f"rubric.{c}": str(w) for c, w in WEIGHTS.items()},
                   f"rubric_guidance.{FIFTH}": "Energy per result, against the team's last run."})
    a, b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        for gpu_request, values in ((a, (8, 6, 5, 10)), (b, (5, 5, 5, 0))):
            for criterion, value in zip((*scoring.MEMBER_SCORED[:3], FIFTH), values, strict=True):
                services.score_record(actor=member, gpu_request=gpu_request, criterion=criterion, value=value)
    world.requests = (a, b)
    return world


def test_the_fifth_criterion_is_scored_and_ranked(fifth: Any) -> None:
    rows = selectors.cycle_ranking(cycle=fifth.cycle)
    by_id = {row.request.pk: row.result for row in rows}
    a, b = (by_id[r.pk] for r in fifth.requests)
    assert [c.criterion for c in a.criteria] == list(WEIGHTS)
    assert (a.criterion(FIFTH).score, a.criterion(FIFTH).weight_pct) == (Decimal("10.00"), 15)
    # Its 15 points (10 × 15 %) lift the first request; the second gets none from it.
    assert a.criterion(FIFTH).points == Decimal("15.00") and b.criterion(FIFTH).points == Decimal("0.00")
    assert a.total == sum((c.points or Decimal(0) for c in a.criteria), Decimal(0))
    assert [row.request.pk for row in rows] == [r.pk for r in fifth.requests]


def test_the_review_and_the_what_if_show_it(fifth: Any, client: Any) -> None:
    client.force_login(fifth.chair)
    review = client.get(reverse("committee:review-cycle", args=[fifth.cycle.week])).content.decode()
    assert f'name="criterion" value="{FIFTH}"' in review and "Sustainability <small>(15%)</small>" in review
    assert "Energy per result, against the team&#x27;s last run." in review
    what_if = reverse("committee:review-what-if", args=[fifth.cycle.week])
    page = client.get(what_if).content.decode()
    assert f'name="{FIFTH}"' in page and "(30/25/20/15/10)" in page
    other = {"business_impact": 30, "feasibility": 25, "urgency": 20, FIFTH: 5, "fairness": 20}
    body = client.get(what_if, other).content.decode()
    assert "(30/25/20/5/20)" in body and "cannot be previewed" not in body
    refused = client.get(what_if, {**other, FIFTH: 15}).content.decode()
    assert "add up to 100%; they add up to 110%" in refused


def test_the_record_and_its_pdf_have_it(fifth: Any, client: Any, settings: Any, tmp_path: Path,
                                        django_capture_on_commit_callbacks: Any) -> None:
    settings.DOCKET_PDF_ROOT = tmp_path / "pdf"
    for gpu_request in fifth.requests:
        decide(fifth, gpu_request)
    with django_capture_on_commit_callbacks(execute=True):
        services.cycle_finalize(cycle=fifth.cycle, actor=fifth.chair)
    page = Page.objects.get(source_key=f"cycle:{fifth.cycle.week}")
    revision = revision_latest(page=page)
    criteria = {c["key"]: c["weight_pct"] for c in revision.data["rubric"]["criteria"]}
    assert criteria == WEIGHTS
    assert "Sustainability 15%" in revision.body
    require_chromium()
    client.force_login(fifth.member_b)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("reports:revision-pdf", args=[page.slug, revision.number]))
    export = PdfExport.objects.get(revision=revision)
    assert export.status == ExportStatus.DONE, export.error or export.note
    assert "Sustainability" in pdf_text(pdf_export_path(export=export))
