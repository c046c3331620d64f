"""A long decision record's PDF is laid out in pieces by worker processes and joined: nothing lost, reordered or
numbered wrong, and the same PDF text whatever the number of workers."""

from __future__ import annotations

import gc
import html
import io
import re
import shutil
import subprocess
import threading
from datetime import UTC, datetime

import pikepdf
import pytest
import time_machine

from allocations.models import AllocationWindow
from committee import services as committee_services
from reports import pdf, print_pieces
from reports.markdown import render as render_markdown
from reports.models import Page, PageKind
from reports.selectors import revision_latest
from reports.services import pages
from tests.conftest import build_world, committed, require
from tests.reports.big_week import big_week

PINNED = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
REQUESTS = 40


@pytest.fixture
def published_week(db, monkeypatch, settings):
    """A published week of 40 requests whose record continues on several archive pages (a small page limit)."""
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    settings.CHROMIUM_PATH = "/nonexistent/chromium"  # the charts are not what this tests
    monkeypatch.setattr(pages, "MAX_BODY_CHARS", 8_000)
    with time_machine.travel(PINNED, tick=False):
        world = build_world()
        big_week(world, requests=REQUESTS)
        cycle = committed(committee_services.cycle_finalize, cycle=world.cycle, actor=world.chair)
        committed(committee_services.cycle_publish, actor=world.chair, cycle=cycle)
        yield revision_latest(page=Page.objects.get(source_key=f"cycle:{cycle.week}"))


def page_texts(content: bytes) -> list[str]:
    text = subprocess.run(["pdftotext", "-layout", "-", "-"], input=content, capture_output=True, check=True).stdout
    return text.decode().split("\f")[:-1]  # pdftotext ends every page with a form feed


def render(revision, settings, *, workers: int) -> bytes:
    settings.DOCKET_PDF_WORKERS = workers
    return pdf.render_revision_pdf(revision=revision).content


def test_a_record_laid_out_in_pieces_has_every_request_once_in_order_and_numbers_1_to_n(
    published_week, settings, monkeypatch
):
    monkeypatch.setattr(pdf, "IN_PROCESS_BELOW", 0)  # fork the workers even for 40 requests
    record = pdf.DecisionRecordPrint(revision=published_week)
    assert record.workers() == 2 and len(record.parts) >= 3  # the record continues on three archive pages or more

    texts = page_texts(render(published_week, settings, workers=2))

    total = len(texts)
    week = published_week.data["cycle"]["week"]
    assert not re.search(r"\b\d+ / \d+\s*$", texts[0])  # the cover has no number
    parts = []
    for number, text in enumerate(texts[1:], start=2):
        footer = text.rstrip().splitlines()[-1]
        # The page's running title at the left (the record's, then each part's from its first page on), its number
        # at the right.
        found = re.fullmatch(rf"\s*Decision record {week}(?:, part (\d) of \d)?\s+{number} / {total}\s*", footer)
        assert found, (number, footer)
        parts.append(int(found.group(1) or 1))
    assert parts == sorted(parts) and set(parts) == set(range(1, len(record.parts) + 2))
    whole = " ".join(" ".join(texts).split())
    heading = r"(\d+)\. Training run \d{4} of Big team \d{4} — Big team \d{4}: Grant"  # one per decision
    decided = [int(n) for n in re.findall(heading, whole)]
    assert decided == list(range(1, REQUESTS + 1))
    window_requests = sorted(int(n) for n in re.findall(r"request:(\d+)", whole))  # the published windows' table
    assert window_requests == sorted(ref for ref in AllocationWindow.objects.values_list("request_ref", flat=True)
                                     if ref is not None)
    assert len(window_requests) == REQUESTS
    for part in range(2, 5):
        assert f"Decision record {published_week.data['cycle']['week']}, part {part} of" in whole


def test_the_pdf_reads_the_same_whatever_the_number_of_workers(published_week, settings, monkeypatch):
    monkeypatch.setattr(pdf, "IN_PROCESS_BELOW", 0)

    in_process = page_texts(render(published_week, settings, workers=1))
    two_workers = page_texts(render(published_week, settings, workers=2))

    assert in_process == two_workers


def test_a_piece_that_cannot_be_made_fails_the_pdf_with_the_reason():
    def broken() -> list[print_pieces.Piece]:
        raise ValueError("no charts today")

    pieces: list[print_pieces.Piece | print_pieces.Late] = [
        print_pieces.Piece("<p>one</p>"), print_pieces.Late(broken), print_pieces.Piece("<p>two</p>")]
    for workers in (1, 2):
        with pytest.raises(ValueError, match="no charts today"):
            print_pieces.lay_out_pieces(pieces, workers=workers)


def test_pieces_are_joined_in_their_order_and_numbered_except_the_unnumbered():
    pieces: list[print_pieces.Piece | print_pieces.Late] = [
        print_pieces.Piece("<h1>Cover</h1>", numbered=False),
        print_pieces.Late(lambda: [print_pieces.Piece("<p>late one</p>"), print_pieces.Piece("<p>late two</p>")]),
        print_pieces.Late(list),  # no pages at all
        print_pieces.Piece("<p>" + "many words " * 2_000 + "</p>"),
    ]

    joined = print_pieces.join(print_pieces.lay_out_pieces(pieces, workers=2))

    texts = page_texts(joined.content)
    assert joined.pages == len(texts) and joined.piece_pages[:3] == [1, 1, 1] and len(texts) > 4
    assert "Cover" in texts[0] and not re.search(r"\d+ / \d+", texts[0])
    assert "late one" in texts[1] and "late two" in texts[2] and "many words" in texts[3]
    assert [re.findall(r"(\d+) / (\d+)", text)[-1] for text in texts[1:]] == [
        (str(n), str(len(texts))) for n in range(2, len(texts) + 1)]


def test_each_page_gets_the_footer_its_piece_names_and_a_piece_of_footers_adds_no_page():
    footers = print_pieces.Piece('<p>Footer one</p><p style="break-before: page">Footer two</p>', numbered=False,
                                 footers=("one", "two"))
    pieces: list[print_pieces.Piece | print_pieces.Late] = [
        print_pieces.Piece("<h1>Cover</h1>", numbered=False), footers,
        print_pieces.Late(lambda: [print_pieces.Piece("<p>first</p>" * 40, footer="one")]),
        print_pieces.Piece("<p>second</p>", footer="two")]

    joined = print_pieces.join(print_pieces.lay_out_pieces(pieces, workers=1))

    texts = [" ".join(text.split()) for text in page_texts(joined.content)]
    assert joined.pages == len(texts) == 4 and joined.piece_pages == [1, 2, 1]
    assert texts[0] == "Cover"
    assert [re.findall(r"Footer \w+", text) for text in texts] == [[], ["Footer one"], ["Footer one"], ["Footer two"]]
    assert texts[3] == "Footer two second 4/4"


def _join_in_a_pool_child(workers: int) -> list[str]:
    pieces: list[print_pieces.Piece | print_pieces.Late] = [
        print_pieces.Piece("<h1>Cover</h1>", numbered=False), print_pieces.Piece("<p>one</p>"),
        print_pieces.Piece("<p>two</p>")]
    return page_texts(print_pieces.join(print_pieces.lay_out_pieces(pieces, workers=workers)).content)


def test_in_a_celery_prefork_child_the_pieces_are_laid_out_in_that_process_and_the_pdf_is_made():
    """A prefork worker's child is daemonic, and multiprocessing refuses to start a process from one: the PDF is
    laid out in the child itself rather than failing the export."""
    billiard = pytest.importorskip("billiard")  # Celery's own pool
    with billiard.get_context("fork").Pool(1) as pool:
        texts = pool.apply(_join_in_a_pool_child, (2,))
    assert [re.sub(r"\s+", "", text) for text in texts] == ["Cover", "one2/3", "two3/3"]


def test_a_long_table_prints_a_line_a_row_with_every_cell_in_order(db, settings):
    """The ranking and the windows of a long week print as lines of text (fewer boxes to lay out): each row's cells,
    as the archive's page shows them, on its own line in the table's order, under the header's names."""
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    settings.CHROMIUM_PATH = "/nonexistent/chromium"
    with time_machine.travel(PINNED, tick=False):
        world = build_world()
        big_week(world, requests=REQUESTS)
        cycle = committed(committee_services.cycle_finalize, cycle=world.cycle, actor=world.chair)
        committed(committee_services.cycle_publish, actor=world.chair, cycle=cycle)
        revision = revision_latest(page=Page.objects.get(source_key=f"cycle:{cycle.week}"))
    assert not pdf.record_parts(revision)  # one archive page: every table whole

    whole = " ".join(" ".join(page_texts(render(revision, settings, workers=1))).split())

    web = render_markdown(revision.body)
    tables = re.findall(r"<table>(.*?)</table>", web, re.DOTALL)
    long_tables = [t for t in tables if t.count("<tr>") > pdf.LINES_ABOVE_ROWS]
    assert len(long_tables) == 2  # the ranking and the published windows
    position = 0
    for table in long_tables:
        for row in re.findall(r"<tr>(.*?)</tr>", table, re.DOTALL):
            cells = [html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
                     for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.DOTALL)]
            line = " · ".join(" ".join(cell.split()) or "–" for cell in cells)
            found = whole.find(line, position)
            assert found >= 0, line
            position = found + len(line)
    assert "Rank · Request · Team · Pool · GPU-hours" in whole


def test_a_record_is_cut_before_its_top_level_sections_only(monkeypatch):
    monkeypatch.setattr(pdf, "LONG_SECTION", 1)  # every top-level section long enough for a piece of its own
    html = render_markdown(
        '## One\n\nText.\n\n> ## Quoted\n\n- ## Listed\n\n<abbr title="</p></p><h2>">a</abbr>\n\n'
        "| h |\n|---|\n| <h2>cell</h2> |\n\n## Two\n\nMore."
    )

    runs = pdf._long_section_runs(html)

    assert [re.findall(r"<h2>(.*?)</h2>", run) for run in runs] == [["One", "Quoted", "Listed", "cell"], ["Two"]]
    assert "".join(runs) == html


def test_a_link_to_the_apps_own_pages_prints_as_its_text_and_a_link_to_another_site_stays(db, settings):
    """A relative address ("/requests/3/") has no host to lead to in a PDF: it prints as text, in the line it stood
    in; a link the author wrote to another site stays a link."""
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    settings.CHROMIUM_PATH = "/nonexistent/chromium"
    page = pages.page_create_system(
        slug="decision-record-links", kind=PageKind.DECISION_RECORD, source_key="cycle:links",
        title="Decision record 2026-W03",
        body="## Decisions\n\nGranted [[request:7|Ranker retrain]] after [[decision-record-2026-w02|last week]]; "
             "see [the vendor's note](https://example.org/note).",
        data={"cycle": {"week": "2026-W03"}, "ranking": []}, summary="Generated")

    content = render(revision_latest(page=page), settings, workers=1)

    links = [str(annotation.A.URI) for pdf_page in pikepdf.open(io.BytesIO(content)).pages
             for annotation in pdf_page.get("/Annots") or []]
    assert links == ["https://example.org/note"]
    whole = " ".join(" ".join(page_texts(content)).split())
    assert "Granted Ranker retrain after last week; see the vendor's note." in whole


def test_a_quote_of_one_paragraph_prints_as_that_paragraph_indented_and_other_quotes_stay():
    """A decision's rationale, a quote of one paragraph, prints as one indented paragraph (one box, the same lines);
    a quote of several paragraphs or with a list inside is left as written (a quote in it may be printed so)."""
    web = render_markdown("> Granted: *clear* effect.\n\nAfter.\n\n> One.\n>\n> Two.\n\nMid.\n\n> - a list\n>\n"
                          "> > nested\n")

    printed = pdf.quotes_of_one_paragraph_as_paragraphs(web)

    assert '<p class="quote">Granted: <em>clear</em> effect.</p>' in printed
    assert "<blockquote>\n<p>One.</p>\n<p>Two.</p>\n</blockquote>" in printed
    assert '<blockquote>\n<ul>\n<li>a list</li>\n</ul>\n<p class="quote">nested</p>\n</blockquote>' in printed
    assert printed.count("<blockquote>") == web.count("<blockquote>") - 2 == 2


def test_the_garbage_collector_is_paused_during_a_layout_and_as_before_after_it():
    assert gc.isenabled()
    with print_pieces.collector_paused():
        with print_pieces.collector_paused():  # another thread's layout meanwhile
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # a process that runs without it keeps it off
    try:
        with print_pieces.collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_fonts_are_kept_for_the_next_documents_of_a_thread_and_each_thread_has_its_own():
    kept = print_pieces.font_config()
    other: list[object] = []
    thread = threading.Thread(target=lambda: other.append(print_pieces.font_config()))
    thread.start()
    thread.join()

    assert print_pieces.font_config() is kept
    assert other and other[0] is not kept
    assert print_pieces.lay_out("<p>one</p>").pages == print_pieces.lay_out("<p>two</p>").pages == 1
