"""PDF of an archive revision with WeasyPrint: any page, and decision records in a print layout.

The HTML given to WeasyPrint is built from the revision's snapshot (its sanitized Markdown and,
for decision records, its structured data and charts). WeasyPrint fetches nothing from the
network or the disk: only `data:` URLs (the charts) resolve, so a link or image in a page's text
can never make the server request an internal address while rendering (no SSRF).
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, partial
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext as _

from reports import chart_printer, print_pieces, records, selectors
from reports import charts as charts_module
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


def chart_slots(charts: Sequence[charts_module.Chart]) -> list[print_pieces.ChartSlot]:
    """Where each chart goes in a print template (`reports/print/_chart.html`): its key, title and size."""
    slots = []
    for chart in charts:
        width, height = chart_printer.chart_size(chart)
        slots.append(print_pieces.ChartSlot(key=chart.key, title=chart.title, width_px=width, height_px=height))
    return slots


def document_pdf(*, charts: Sequence[charts_module.Chart],
                 render: Callable[[list[print_pieces.ChartSlot], str], str]) -> bytes:
    """The PDF of a page with charts (the dashboards'): `render(slots, missing_reason)` gives its HTML.

    Chromium prints the charts while WeasyPrint lays the page out around their slots, then each is placed in its
    slot. When they cannot be printed, the page is laid out again without slots, saying why (`missing_reason`).
    """
    with chart_printer.chart_job(charts) as job:
        job.send()  # Chromium prints while WeasyPrint lays out
        laid = print_pieces.lay_out(render([] if job.missing_reason else chart_slots(charts), job.missing_reason))
        printed = job.result()
    if not printed.complete and not job.missing_reason:
        laid = print_pieces.lay_out(render([], printed.missing_reason))
    return print_pieces.join([laid], charts=printed, number_pages=False).content


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

    A decision record is laid out in pieces (reports/print_pieces.py): the cover, the charts' slots, and its text
    cut at its parts, long sections and every TABLE_ROWS_PER_PIECE rows of a long table, each starting a page.
    Worker processes lay the pieces out while Chromium prints the charts (reports/chart_printer.py); the pieces are
    joined, each chart is placed in its slot, and the pages are numbered. Charts that cannot be printed leave a note
    saying why in their place.
    """
    # The record's Markdown and the charts' figures make as many short-lived objects as the layout does.
    with translation.override(translation.get_language() or "en"), print_pieces.collector_paused():
        if not is_decision_record(revision):
            progress("typesetting", 60)
            html = render_to_string("reports/print/page.html", print_context(revision=revision))
            content = html_to_pdf(html=html)
            return PdfResult(content=content, charts_included=False, charts_note="")
        progress("charts", 20)
        chart_printer.warm()  # Chromium starts and loads plotly.js while the record is prepared
        record = DecisionRecordPrint(revision=revision)
        unavailable = chart_printer.unavailable_reason()

        def typeset(done: int, total: int) -> None:
            progress("typesetting", 40 + 45 * done // total)

        with contextlib.ExitStack() as jobs:
            started: list[chart_printer.ChartJob] = []

            def print_charts() -> None:  # once every piece is made: the charts' figures are built by then
                started.append(jobs.enter_context(chart_printer.chart_job(record.charts)))
                started[0].send()

            laid = print_pieces.lay_out_pieces(
                record.pieces(charts_note=unavailable), workers=record.workers(), start=print_charts,
                progress=typeset,
            )
            printed = started[0].result()
        if not printed.complete and not unavailable:
            laid = record.without_charts(laid, note=printed.missing_reason)
        joined = print_pieces.join(laid, charts=printed)
    return PdfResult(content=joined.content, charts_included=joined.charts_placed > 0,
                     charts_note=printed.missing_reason)


# A section of a record's text at least this long (in the pieces' weight, ≈ characters of HTML) starts a page and
# a piece of its own; shorter ones follow the one before them.
LONG_SECTION = 20_000
# Rows of a long table a piece holds (about ten landscape pages of lines: the ranking's or the windows').
TABLE_ROWS_PER_PIECE = 300
# A record whose text (Markdown, all parts) is shorter is laid out in the calling process: forking workers costs
# more than it saves.
IN_PROCESS_BELOW = 40_000


class DecisionRecordPrint:
    """A decision record's print pieces: the cover, the charts' slots, then its text cut at parts and sections."""

    def __init__(self, *, revision: PageRevision) -> None:
        self.revision = revision
        self.language = translation.get_language() or "en"
        # In another language than the record's own, its text is rendered from its data, whole (no parts), and
        # the cover's labels are written from their codes (reports.records.language), as the record's page reads.
        self.text = selectors.revision_text(revision=revision)
        data: Any = revision.data or {}
        self.data: Mapping[str, Any] = records.decision_record_relabelled(data) if self.text.in_reader_language \
            else data
        self.parts = [] if self.text.in_reader_language else record_parts(revision)

    @cached_property
    def charts(self) -> list[charts_module.Chart]:
        """The record's print charts, built when first asked for (after the text: Plotly's figures take a while)."""
        with translation.override(self.language):
            return charts_module.decision_record_print_charts(self.data)

    def workers(self) -> int:
        text = len(self.text.body) + sum(len(part.body) for part in self.parts)
        return 1 if text < IN_PROCESS_BELOW else settings.DOCKET_PDF_WORKERS

    def _piece(self, *, footer: str = "", footers: Sequence[str] = (), **context: Any) -> print_pieces.Piece:
        """A piece of the record; `footer`: the running title drawn on its pages, from the footers piece (`footers`:
        the running titles, a page each, laid out in the print style's footer: the only piece with margin boxes)."""
        with translation.override(self.language):  # the language the PDF is printed in, whichever thread asks
            html = render_to_string(
                "reports/print/decision_record_piece.html",
                {"revision": self.revision, "page": self.revision.page, "title": self.text.title,
                 "LANGUAGE_CODE": self.language, "footers": footers, "titles_stamped": not footers, **context},
            )
        return print_pieces.Piece(html, footer=footer, footers=tuple(footers))

    def pieces(self, *, charts_note: str = "") -> list[print_pieces.Piece | print_pieces.Late]:
        """The cover, the charts (their slots, or `charts_note` when they cannot be printed), the text (made late),
        and the running titles of its pages (their footers)."""
        cover = replace(self._piece(piece="cover", summary_lines=_summary_lines(self.data)), numbered=False)
        result: list[print_pieces.Piece | print_pieces.Late] = [
            cover, print_pieces.Late(lambda: [self._charts_piece(note=charts_note)], last=True)]
        texts = [(self.text.title, "", self.text.body)]
        texts += [(part.title, part.title, part.body) for part in self.parts]
        for running_title, part_title, body in texts:
            result.append(print_pieces.Late(partial(self._text_pieces, running_title, part_title, body)))
        footers = [title for title in dict.fromkeys([self._charts_title, *(title for title, _, _ in texts)]) if title]
        if footers:
            result.append(replace(self._piece(piece="footers", footers=footers), numbered=False))
        return result

    @property
    def _charts_title(self) -> str:
        return self.text.title or self.revision.title

    def _charts_piece(self, *, note: str) -> print_pieces.Piece:
        if note or not self.charts:
            with translation.override(self.language):
                note = note or _("This record has no data to chart.")
            return self._piece(piece="charts", slots=[], charts_note=note, footer=self._charts_title)
        slots = chart_slots(self.charts)
        return replace(self._piece(piece="charts", slots=slots, footer=self._charts_title),
                       charts=tuple(slot.key for slot in slots))

    def without_charts(self, laid: Sequence[print_pieces.LaidOut], *, note: str) -> list[print_pieces.LaidOut]:
        """The laid-out pieces with the charts' piece laid out again saying why there are no charts (`note`)."""
        noted = print_pieces.lay_out_piece(self._charts_piece(note=note))
        return [noted if piece.charts else piece for piece in laid]

    def _text_pieces(self, running_title: str, part_title: str, body: str) -> list[print_pieces.Piece]:
        with translation.override(self.language):
            html = quotes_of_one_paragraph_as_paragraphs(app_links_as_text(render_markdown(body)))
        return [
            self._piece(running_title=running_title, part_title=part_title if index == 0 else "", html=fragment,
                        footer=running_title)
            for index, fragment in enumerate(_long_section_runs(html))
        ]


# A link to one of the app's own pages (a request, an archive page) is written with a relative address ("/requests/3/").
_APP_LINK = re.compile(r'<a\s[^>]*?\bhref="/[^"]*"[^>]*>(.*?)</a>', re.DOTALL)


def app_links_as_text(html: str) -> str:
    """The HTML with each link to one of the app's own pages printed as its text (a link to another site stays).

    A relative address has no host to resolve against in a PDF, so such a link never led anywhere; and each link is
    an inline box that cuts its line into several pieces of text, which WeasyPrint lays out, measures and draws
    apart: the ranking's and the windows' lines, a link each, cost about twice a plain line's CPU
    (docs/benchmarks.md, "The decision record's PDF")."""
    return _APP_LINK.sub(r"\1", html)


# A quote that holds one paragraph and nothing else (the rationale of each decision in a record).
_ONE_PARAGRAPH_QUOTE = re.compile(
    r"<blockquote>\s*<p>((?:(?!</?p[\s>]|</?blockquote[\s>]).)*)</p>\s*</blockquote>", re.DOTALL)


def quotes_of_one_paragraph_as_paragraphs(html: str) -> str:
    """The HTML with each quote of one paragraph printed as that paragraph, indented as the quote was (the print
    style's `p.quote`: a quote's margins, into which its paragraph's collapsed): the same lines at the same places,
    one box fewer. A decision's rationale is such a quote, and its two nested boxes were a sixth of the layout of the
    decisions (docs/benchmarks.md, "The decision record's PDF")."""
    return _ONE_PARAGRAPH_QUOTE.sub(r'<p class="quote">\1</p>', html)


def _long_section_runs(html: str) -> list[str]:
    """The HTML cut before each top-level <h2> whose section is long (LONG_SECTION), and its long tables cut."""
    starts = _top_level_h2_offsets(html)
    bounds = [0, *[s for s in starts if s > 0], len(html)]
    sections = [html[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    runs: list[str] = []
    for section in sections:
        if runs and print_pieces.Piece(section).weight < LONG_SECTION:
            runs[-1] += section  # a short section follows the one before it on its page
        else:
            runs.append(section)
    return [cut for run in runs for cut in _long_tables_cut(run)] or [html]


_TABLE = re.compile(r"<table>\s*(<thead>.*?</thead>)\s*<tbody>(.*?)</tbody>\s*</table>", re.DOTALL)
_ROW = re.compile(r"<tr>.*?</tr>", re.DOTALL)
_CELL = re.compile(r"<t([dh])(?:\s[^>]*)?>(.*?)</t\1>", re.DOTALL)
# A table of more rows than this prints as lines (`_table_lines`): the ranking and the windows of a week.
LINES_ABOVE_ROWS = 30
CELL_SEPARATOR = " · "


def _table_lines(header: str, rows: Sequence[str]) -> str:
    """A long table printed as lines of text: the header's names on the first line, then a line (a paragraph) per
    row, its cells in the header's order, separated by " · " (an empty cell prints as "–").

    Every cell's text and links stay; what goes is the table's boxes: WeasyPrint lays each table cell out three
    times (its least and greatest width, then the row), about 1 ms of CPU a cell, where a line of text costs about
    as much as one cell (docs/benchmarks.md, "The decision record's PDF").
    """
    def line(row: str) -> str:
        return CELL_SEPARATOR.join(cell.strip() or "–" for _, cell in _CELL.findall(row))

    lines = [f'<p class="head">{line(row)}</p>' for row in _ROW.findall(header)]
    lines += [f"<p>{line(row)}</p>" for row in rows]
    return '<div class="table-lines">\n' + "\n".join(lines) + "\n</div>"


def _long_tables_cut(html: str) -> list[str]:
    """The HTML with each table of more than LINES_ABOVE_ROWS rows printed as lines (`_table_lines`), cut every
    TABLE_ROWS_PER_PIECE rows, each run after the first starting a piece (a page) of its own, under the same header:
    the ranking and the windows of a long week are most of its layout, and one piece each would leave one worker
    laying them out while the other idles.

    Only the tables Markdown writes are changed (a header, a body, rows of cells: no table inside a cell).
    """
    cuts: list[str] = []
    current = ""
    position = 0
    for table in _TABLE.finditer(html):
        header, body = table.group(1), table.group(2)
        rows = _ROW.findall(body)
        only_rows = "".join(rows) == re.sub(r">\s+<tr>", "><tr>", body).strip()
        if "<table" in body or not only_rows or len(rows) <= LINES_ABOVE_ROWS:
            continue
        current += html[position:table.start()]
        for start in range(0, len(rows), TABLE_ROWS_PER_PIECE):
            if start:
                cuts.append(current)
                current = ""
            current += _table_lines(header, rows[start:start + TABLE_ROWS_PER_PIECE])
        position = table.end()
    current += html[position:]
    cuts.append(current)
    return cuts


# A start or end tag of sanitized HTML (reports.markdown.sanitize): its attributes' values quoted, text's "<" escaped.
_TAG = re.compile(r"""<(/?)([a-zA-Z][a-zA-Z0-9]*)(?:\s+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+))?)*\s*/?>""")
_VOID = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
})  # fmt: skip


def _top_level_h2_offsets(html: str) -> list[int]:
    """Offsets of the <h2> tags at the top level of a sanitized HTML fragment (not inside a list, quote or table).

    Read from its tags alone, not by an HTML parser: at 1,000 requests Python's HTMLParser took 1.5% of the record's
    PDF (docs/benchmarks.md)."""
    depth = 0
    found = []
    for tag in _TAG.finditer(html):
        name = tag.group(2).lower()
        if name in _VOID:
            continue
        if tag.group(1):
            depth = max(0, depth - 1)
            continue
        if name == "h2" and depth == 0:
            found.append(tag.start())
        depth += 1
    return found


def html_to_pdf(*, html: str) -> bytes:
    """The PDF of an HTML document, fetching nothing but `data:` URLs (the same rule as the archive's PDFs)."""
    from weasyprint import HTML  # imported where PDFs are made, not with the app (print_pieces.weasyprint_import)

    with print_pieces.collector_paused():
        content = HTML(string=html, url_fetcher=print_pieces.fetcher(), base_url=None).write_pdf(
            font_config=print_pieces.font_config())
    assert content is not None
    return content
