"""The PDF of a demo week: cover, ranking, rationale, windows and both charts, extracted back out as text."""

from __future__ import annotations

import re

from django.urls import reverse

from committee import services as committee_services
from reports import selectors
from reports.models import ExportStatus, Page, PdfExport
from reports.selectors import revision_latest
from tests.browser import require_chromium
from tests.reports.conftest import RATIONALES
from tests.reports.test_pdf_export import pdf_text


def test_the_weeks_pdf_has_the_decisions_and_the_charts(client, week, django_capture_on_commit_callbacks):
    require_chromium()
    with django_capture_on_commit_callbacks(execute=True):
        committee_services.cycle_publish(actor=week.chair, cycle=week.cycle)
    page = Page.objects.get(source_key=f"cycle:{week.cycle.week}")
    client.force_login(week.member_b)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("reports:revision-pdf", args=[page.slug, revision_latest(page=page).number]))
    export = PdfExport.objects.get(revision=revision_latest(page=page))
    assert export.status == ExportStatus.DONE and export.charts_included, export.error or export.note
    text = " ".join(pdf_text(selectors.pdf_export_path(export=export)).split())

    assert f"Decision record {week.cycle.week}" in text and revision_latest(page=page).hash in text  # the cover
    for rationale in RATIONALES.values():
        assert " ".join(rationale.split()) in text
    # The ranking table: its header, and each row's scores, total and decision in order (long cells wrap).
    assert re.search(r"Rank Request Team Pool GPU- Business impact .* Total Decision", text)
    assert re.search(r"1 Ranker (retrain )?Team .{0,20}768 9\.00 8\.00 9\.00 10\.00 88\.00 Grant", text)
    assert re.search(r"2 Vision .{0,40}1,152 6\.00 6\.00 5\.00 10\.00 62\.00 Partial", text)
    assert "Published windows" in text and "Priority" in text
    # The charts: their titles, axis titles and legends are text inside the SVG figures.
    assert text.count("Weighted scores by request") >= 2  # the SVG's own title and the figure caption
    assert "weighted total" in text and "Business impact (40%)" in text
    assert text.count("Demand vs capacity") >= 2 and "requested" in text and "granted" in text
