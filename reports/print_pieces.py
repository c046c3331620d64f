"""A long print document laid out in pieces, on several processes, and joined into one PDF with its page numbers.

WeasyPrint lays text out on one core, at about 30 ms of CPU per request of a decision record (280 pages at 1,000
requests). The record is cut where its print layout starts a new page anyway (the cover, the charts, each long
section, each part of a long record); each piece is a whole HTML document that WeasyPrint lays out alone, in a
worker process (one a core, `DOCKET_PDF_WORKERS`), and the pieces' PDFs are joined in order. The PDF is the same
whatever the number of workers: the pieces, not the workers, decide where pages break.

A page's number ("n / N") needs the whole document's page count, which no piece knows: pieces are laid out without
it, and the numbers are stamped on the joined PDF (`stamp_page_numbers`), where the print style's bottom-right
margin box puts them.

A piece may be late (`Late`): made by the caller while the workers lay out the others, as the charts are, drawn by
Chromium meanwhile. Workers are forked before the caller starts any thread of its own, and only lay out HTML: they
touch no database connection and leave with `os._exit` (multiprocessing's own), so nothing of the parent is closed
twice.
"""

from __future__ import annotations

import io
import logging
import multiprocessing
import os
import queue
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pikepdf
from weasyprint import HTML
from weasyprint.urls import URLFetcher

logger = logging.getLogger(__name__)

WORKER_TIMEOUT_SECONDS = 600

# Where `reports/print/_style.html` puts the page number on a landscape ("wide") page: right-aligned at the right
# margin (14 mm), on the baseline of the bottom margin box's line (16 mm margin, 8 pt text, vertically centred),
# in #666. Helvetica is one of PDF's standard fonts, so the stamp embeds no font.
NUMBER_RIGHT_MARGIN_PT = 14 * 72 / 25.4
NUMBER_BASELINE_PT = 19.9
NUMBER_SIZE_PT = 8
NUMBER_GREY = 0.4
_HELVETICA_WIDTHS = {" ": 278, "/": 278, **dict.fromkeys("0123456789", 556)}

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Piece:
    """One HTML document to lay out: a run of pages of the whole. `numbered`: its pages get "n / N"."""

    html: str
    numbered: bool = True

    @property
    def weight(self) -> int:
        """What laying it out is expected to cost: table cells cost about 70 characters of running text each."""
        return len(self.html) + 70 * self.html.count("<td")


@dataclass(frozen=True)
class Late:
    """Pieces made while the others are laid out (none: no pages). `waits`: making them waits on something slow
    (the charts, drawn by Chromium), so every other piece is made and sent to the workers first."""

    make: Callable[[], Sequence[Piece]]
    waits: bool = False


@dataclass(frozen=True)
class JoinedPdf:
    content: bytes
    pages: int
    piece_pages: list[int]


Key = tuple[int, int]  # (position in the list given, position among the pieces a Late made)


def _fetcher() -> URLFetcher:
    # Only data: URLs (the charts) resolve: a link or image in a page's text never makes the server fetch anything.
    return URLFetcher(allowed_protocols={"data"})


def lay_out(html: str) -> tuple[bytes, int]:
    """One piece's PDF and its page count."""
    document = HTML(string=html, url_fetcher=_fetcher(), base_url=None).render()
    content = document.write_pdf()
    assert content is not None
    return content, len(document.pages)


def _worker(tasks: Any, results: Any, parent: int) -> None:
    while True:
        try:
            task = tasks.get(timeout=2)
        except queue.Empty:
            if os.getppid() != parent:  # the process that forked this one died (a killed Celery worker): stop too
                return
            continue
        if task is None:
            return
        key, html = task
        try:
            content, pages = lay_out(html)
        except BaseException:  # reported to the parent, which raises
            results.put((key, None, 0, traceback.format_exc()))
        else:
            results.put((key, content, pages, ""))


def lay_out_pieces(
    pieces: Sequence[Piece | Late],
    *,
    workers: int,
    start: Callable[[], None] | None = None,
    progress: Progress | None = None,
) -> JoinedPdf:
    """The PDF of the pieces in order, each laid out alone, joined, with page numbers stamped across the whole.

    With `workers` > 1 the pieces are laid out by that many forked processes; then `start` is called (it may start
    threads: the charts' drawing), the late pieces are made here, the waiting ones last, and each is sent to the
    workers as soon as it is made. With 1, everything happens in this process, the waiting pieces last. Raises
    RuntimeError when a worker fails or dies; what making a late piece raises is raised here.
    """
    made: dict[Key, Piece] = {(i, 0): p for i, p in enumerate(pieces) if isinstance(p, Piece)}
    late = {i: p for i, p in enumerate(pieces) if isinstance(p, Late)}
    outputs: dict[Key, tuple[bytes, int]] = {}

    def make(index: int) -> list[Key]:
        keys = []
        for k, piece in enumerate(late[index].make()):
            made[(index, k)] = piece
            keys.append((index, k))
        return keys

    def done(key: Key, output: tuple[bytes, int]) -> None:
        outputs[key] = output
        if progress is not None:
            progress(len(outputs), max(len(made), len(outputs)))

    if workers > 1 and multiprocessing.current_process().daemon:
        # A daemonic process may not start processes of its own (multiprocessing refuses): a Celery prefork
        # worker's child is one. The pieces are laid out here, as with one worker; run the PDF exports on a
        # `--pool=solo` or `--pool=threads` worker to lay them out on every core (docs/operations.md).
        logger.info("PDF laid out in one process: this process is daemonic (a prefork pool's child)")
        workers = 1
    if workers <= 1:
        if start is not None:
            start()
        for index, item in late.items():
            if not item.waits:
                make(index)
        for key in sorted(made):
            done(key, lay_out(made[key].html))
        for index, item in late.items():
            if item.waits:
                for key in make(index):
                    done(key, lay_out(made[key].html))
    else:
        _lay_out_in_workers(made, late, make, workers=workers, start=start, done=done)
    numbered: list[bool] = []
    for key in sorted(made):
        numbered += [made[key].numbered] * outputs[key][1]
    content = join_and_number([outputs[key][0] for key in sorted(made)], numbered=numbered)
    return JoinedPdf(content=content, pages=len(numbered), piece_pages=[outputs[key][1] for key in sorted(made)])


def _lay_out_in_workers(
    made: dict[Key, Piece],
    late: dict[int, Late],
    make: Callable[[int], list[Key]],
    *,
    workers: int,
    start: Callable[[], None] | None,
    done: Callable[[Key, tuple[bytes, int]], None],
) -> None:
    # Forked before `start` starts its threads: a child gets only this thread, and no lock another one holds.
    context = multiprocessing.get_context("fork")
    tasks: Any = context.Queue()
    results: Any = context.Queue()
    processes = [
        context.Process(target=_worker, args=(tasks, results, os.getpid()), daemon=True, name=f"docket-pdf-{n}")
        for n in range(workers)
    ]
    for process in processes:
        process.start()
    sent = 0
    received = 0

    def send(key: Key) -> None:
        nonlocal sent
        tasks.put((key, made[key].html))
        sent += 1

    def collect(*, until_all: bool) -> None:
        nonlocal received
        waited = 0
        while received < sent:
            try:
                key, content, pages, error = results.get(timeout=1) if until_all else results.get_nowait()
            except queue.Empty:
                if not until_all:
                    return
                waited += 1
                dead = [p for p in processes if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"a PDF worker died (exit code {dead[0].exitcode})") from None
                if waited > WORKER_TIMEOUT_SECONDS:
                    raise RuntimeError(f"laying the PDF out took over {WORKER_TIMEOUT_SECONDS} s") from None
                continue
            if error:
                raise RuntimeError(f"laying out piece {key} of the PDF failed:\n{error}")
            received += 1
            done(key, (content, pages))

    try:
        if start is not None:
            start()
        for index, item in late.items():
            if not item.waits:
                make(index)
        # The costliest first, so that no long piece starts last.
        for key in sorted(made, key=lambda k: -made[k].weight):
            send(key)
        for index, item in late.items():
            if item.waits:
                for key in make(index):  # the workers lay the text out meanwhile
                    send(key)
                collect(until_all=False)  # progress as pieces come in
        collect(until_all=True)
    finally:
        for _ in processes:
            tasks.put(None)
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()


def _number_width_pt(text: str) -> float:
    return sum(_HELVETICA_WIDTHS[c] for c in text) * NUMBER_SIZE_PT / 1000


def join_and_number(pdfs: Sequence[bytes], *, numbered: Sequence[bool]) -> bytes:
    """The PDFs' pages in order in one PDF; each page i (1-based) that `numbered` marks gets "i / N" stamped."""
    joined = pikepdf.new()
    for content in pdfs:
        source = pikepdf.open(io.BytesIO(content))
        joined.pages.extend(source.pages)
    total = len(joined.pages)
    assert total == len(numbered), (total, len(numbered))
    font = joined.make_indirect(pikepdf.Dictionary(
        Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name.Helvetica,
        Encoding=pikepdf.Name.WinAnsiEncoding,
    ))
    for number, (page, wanted) in enumerate(zip(joined.pages, numbered, strict=True), start=1):
        if not wanted:
            continue
        text = f"{number} / {total}"
        width = float(page.mediabox[2]) - float(page.mediabox[0])
        x = width - NUMBER_RIGHT_MARGIN_PT - _number_width_pt(text)
        name = page.add_resource(font, pikepdf.Name.Font, prefix="DocketNumber")
        stream = (f"q BT {name} {NUMBER_SIZE_PT} Tf {NUMBER_GREY} g {x:.3f} {NUMBER_BASELINE_PT} Td ({text}) Tj ET Q"
                  .encode("ascii"))
        # The page's own content is wrapped in q … Q first, so whatever it leaves in the graphics state (WeasyPrint
        # flips the y axis) does not move the number.
        page.contents_add(pikepdf.Stream(joined, b"q\n"), prepend=True)
        page.contents_add(pikepdf.Stream(joined, b"\nQ\n" + stream))
    out = io.BytesIO()
    joined.save(out)
    return out.getvalue()
