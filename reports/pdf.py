"""PDF of an archive revision with WeasyPrint: any page, and decision records in a print layout.

The HTML given to WeasyPrint is built from the revision's snapshot (its sanitized Markdown and,
for decision records, its structured data and charts). WeasyPrint fetches nothing from the
network or the disk: only `data:` URLs (the charts) resolve, so a link or image in a page's text
can never make the server request an internal address while rendering (no SSRF).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext as _
from weasyprint import HTML
from weasyprint.urls import URLFetcher

from reports import charts as charts_module
from reports import records
from reports.markdown import render as render_markdown
from reports.models import PageKind, PageRevision

Progress = Callable[[str, int], None]


@dataclass(frozen=True)
class PdfResult:
    content: bytes
    charts_included: bool
    charts_note: str


def _no_progress(step: str, pct: int) -> None:
    return None


def _data_uri_svg(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def chart_images(charts: Sequence[charts_module.Chart]) -> tuple[list[dict[str, str]], str]:
    """Each chart as an SVG data URI for a print template, and why charts are missing, if they are."""
    rendered = charts_module.render_svgs(charts)
    images = [
        {"title": chart.title, "src": _data_uri_svg(rendered.svgs[chart.key])}
        for chart in charts
        if chart.key in rendered.svgs
    ]
    return images, rendered.missing_reason


def print_context(*, revision: PageRevision, rendered: charts_module.RenderedCharts | None = None) -> dict[str, Any]:
    """What the print templates need, from the revision alone."""
    data: Mapping[str, Any] = revision.data or {}
    chart_list = []
    if rendered is not None:
        for chart in charts_module.decision_record_charts(data):
            svg = rendered.svgs.get(chart.key)
            if svg:
                chart_list.append({"title": chart.title, "src": _data_uri_svg(svg)})
    return {
        "summary_lines": _summary_lines(data) if is_decision_record(revision) else [],
        "page": revision.page,
        "revision": revision,
        "html": render_markdown(revision.body),
        "parts": [{"title": part.title, "html": render_markdown(part.body)} for part in record_parts(revision)],
        "data": data,
        "charts": chart_list,
        "charts_note": rendered.missing_reason if rendered is not None else "",
    }


def _summary_lines(data: Mapping[str, Any]) -> list[str]:
    cycle = data.get("cycle") or {}
    counts = data.get("outcome_counts") or {}
    labels = data.get("outcome_labels") or []
    lines = [
        _("Week %(week)s: %(start)s – %(end)s")
        % {"week": cycle.get("week", ""), "start": cycle.get("starts_label", ""), "end": cycle.get("ends_label", "")},
        _("Status: %(status)s") % {"status": cycle.get("status_label", "")},
        _("%(n)d requests reviewed: %(outcomes)s")
        % {
            "n": len(data.get("ranking") or []),
            "outcomes": ", ".join(f"{label} {counts.get(key, 0)}" for key, label in labels),
        },
    ]
    plan = data.get("plan")
    if plan:
        windows = len(plan.get("windows") or [])
        lines.append(_("Plan version %(v)d: %(n)d windows") % {"v": plan["version"], "n": windows})
    return lines


def is_decision_record(revision: PageRevision) -> bool:
    return revision.page.kind == PageKind.DECISION_RECORD and bool(revision.data)


def record_parts(revision: PageRevision) -> list[PageRevision]:
    """The pages a week's record continues on (too long for one page), each as it stood when `revision` was written.

    The week's page links its parts in order; a part's revision "as it stood" is its latest one
    before `revision` in the chain (a sync writes the parts first, then the week's page), so the
    PDF of an old revision prints the parts of that time.
    """
    cycle = (revision.data or {}).get("cycle") if is_decision_record(revision) else None
    week = cycle.get("week") if isinstance(cycle, dict) else None
    parts: list[PageRevision] = []
    while week and f"[[{records.decision_record_part_slug(week, len(parts) + 2)}|" in revision.body:
        part = (
            PageRevision.objects.filter(
                page__slug=records.decision_record_part_slug(week, len(parts) + 2), position__lt=revision.position
            )
            .order_by("-position")
            .first()
        )
        if part is None:
            break
        parts.append(part)
    return parts


def render_revision_pdf(*, revision: PageRevision, progress: Progress = _no_progress) -> PdfResult:
    """The PDF bytes of a revision. Decision records get the print layout with charts; other pages print their text."""
    rendered: charts_module.RenderedCharts | None = None
    with translation.override(translation.get_language() or "en"):
        if is_decision_record(revision):
            progress("charts", 20)
            rendered = charts_module.render_svgs(charts_module.decision_record_charts(revision.data))
            template = "reports/print/decision_record.html"
        else:
            template = "reports/print/page.html"
        progress("typesetting", 60)
        html = render_to_string(template, print_context(revision=revision, rendered=rendered))
    document = HTML(string=html, url_fetcher=URLFetcher(allowed_protocols={"data"}), base_url=None)
    content = document.write_pdf()
    assert content is not None
    return PdfResult(
        content=content,
        charts_included=bool(rendered and rendered.svgs),
        charts_note=rendered.missing_reason if rendered is not None else "",
    )


def html_to_pdf(*, html: str) -> bytes:
    """The PDF of an HTML document, fetching nothing but `data:` URLs (the same rule as the archive's PDFs)."""
    content = HTML(string=html, url_fetcher=URLFetcher(allowed_protocols={"data"}), base_url=None).write_pdf()
    assert content is not None
    return content
