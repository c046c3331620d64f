"""PDF of an archive revision with WeasyPrint: any page, and decision records in a print layout.

The HTML given to WeasyPrint is built from the revision's snapshot (its sanitized Markdown and,
for decision records, its structured data and charts). WeasyPrint fetches nothing from the
network or the disk: only `data:` URLs (the charts) resolve, so a link or image in a page's text
can never make the server request an internal address while rendering (no SSRF).
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext as _
from weasyprint import HTML
from weasyprint.urls import URLFetcher

from reports import charts as charts_module
from reports import print_pieces, records
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


def print_context(*, revision: PageRevision) -> dict[str, Any]:
    """What the print template of a page that is not a decision record needs, from the revision alone."""
    return {"page": revision.page, "revision": revision, "html": render_markdown(revision.body)}


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
    """The PDF bytes of a revision. Decision records get the print layout with charts; other pages print their text.

    A decision record is laid out in pieces (reports/print_pieces.py): the cover, the charts, and its text cut at
    its parts and long sections, each starting a page; the text's pieces are laid out by worker processes while
    Chromium draws the charts, and the whole gets its page numbers once joined.
    """
    with translation.override(translation.get_language() or "en"):
        if not is_decision_record(revision):
            progress("typesetting", 60)
            html = render_to_string("reports/print/page.html", print_context(revision=revision))
            content = html_to_pdf(html=html)
            return PdfResult(content=content, charts_included=False, charts_note="")
        progress("charts", 20)
        pieces, charts_outcome = decision_record_pieces(revision=revision)

        def typeset(done: int, total: int) -> None:
            progress("typesetting", 40 + 45 * done // total)

        joined = print_pieces.lay_out_pieces(pieces, workers=settings.DOCKET_PDF_WORKERS, progress=typeset)
    rendered = charts_outcome[0] if charts_outcome else None
    return PdfResult(
        content=joined.content,
        charts_included=bool(rendered and rendered.svgs),
        charts_note=rendered.missing_reason if rendered is not None else "",
    )


# A section of a record's text at least this long (in the pieces' weight, ≈ characters of HTML) starts a page and
# a piece of its own; shorter ones follow the one before them.
LONG_SECTION = 20_000


def decision_record_pieces(
    *, revision: PageRevision
) -> tuple[list[print_pieces.Piece | Callable[[], print_pieces.Piece]], list[charts_module.RenderedCharts]]:
    """The record's print pieces in order: the cover, the charts (drawn when called), then its text's pieces.

    The second value receives the drawn charts once the charts' piece has been made (for the PDF's note).
    """
    data: Mapping[str, Any] = revision.data or {}
    base = {"revision": revision, "page": revision.page, "LANGUAGE_CODE": translation.get_language()}
    language = translation.get_language() or "en"
    outcome: list[charts_module.RenderedCharts] = []

    def piece(**context: Any) -> print_pieces.Piece:
        return print_pieces.Piece(render_to_string("reports/print/decision_record_piece.html", {**base, **context}))

    def charts_piece() -> print_pieces.Piece:
        with translation.override(language):  # this runs in a thread of its own, whose language is not the caller's
            print_charts = charts_module.decision_record_print_charts(data)
            rendered = charts_module.render_svgs(print_charts)
            outcome.append(rendered)
            images = [{"title": c.title, "src": _data_uri_svg(rendered.svgs[c.key])}
                      for c in print_charts if rendered.svgs.get(c.key)]
            return piece(piece="charts", charts=images, charts_note=rendered.missing_reason)

    cover = print_pieces.Piece(
        render_to_string("reports/print/decision_record_piece.html",
                         {**base, "piece": "cover", "summary_lines": _summary_lines(data)}),
        numbered=False,
    )
    pieces: list[print_pieces.Piece | Callable[[], print_pieces.Piece]] = [cover, charts_piece]
    texts = [(revision.title, "", render_markdown(revision.body))]
    texts += [(part.title, part.title, render_markdown(part.body)) for part in record_parts(revision)]
    for running_title, part_title, html in texts:
        for index, fragment in enumerate(_long_section_runs(html)):
            pieces.append(piece(running_title=running_title, part_title=part_title if index == 0 else "",
                                html=fragment))
    return pieces, outcome


def _long_section_runs(html: str) -> list[str]:
    """The HTML cut before each top-level <h2> whose section is long (LONG_SECTION), and before the one after it."""
    starts = _top_level_h2_offsets(html)
    bounds = [0, *[s for s in starts if s > 0], len(html)]
    sections = [html[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    runs: list[str] = []
    previous_long = False
    for section in sections:
        long = print_pieces.Piece(section).weight >= LONG_SECTION
        if runs and not long and not previous_long:
            runs[-1] += section
        else:
            runs.append(section)
        previous_long = long
    return runs or [html]


class _TopLevelH2(HTMLParser):
    """Offsets of the <h2> tags at the top level of an HTML fragment (not inside a list, quote or table)."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.found: list[tuple[int, int]] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "h2" and self.depth == 0:
            self.found.append(self.getpos())
        if tag not in self.VOID:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID:
            self.depth = max(0, self.depth - 1)


def _top_level_h2_offsets(html: str) -> list[int]:
    line_starts = [0]  # HTMLParser counts lines by "\n" only
    for line in html.split("\n"):
        line_starts.append(line_starts[-1] + len(line) + 1)
    return [line_starts[line - 1] + column for line, column in _TopLevelH2(html).found]


def html_to_pdf(*, html: str) -> bytes:
    """The PDF of an HTML document, fetching nothing but `data:` URLs (the same rule as the archive's PDFs)."""
    content = HTML(string=html, url_fetcher=URLFetcher(allowed_protocols={"data"}), base_url=None).write_pdf()
    assert content is not None
    return content
