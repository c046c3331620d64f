"""A long print document laid out in pieces, on several processes, and joined into one PDF with its page numbers.

WeasyPrint lays text out on one core, at about 30 ms of CPU per request of a decision record (280 pages at 1,000
requests). The record is cut where its print layout starts a new page anyway (the cover, the charts, each long
section, each part of a long record); each piece is a whole HTML document that WeasyPrint lays out alone, in a
worker process (one a core, `DOCKET_PDF_WORKERS`), and the pieces' PDFs are joined in order. The PDF is the same
whatever the number of workers: the pieces, not the workers, decide where pages break.

A page's number ("n / N") needs the whole document's page count, which no piece knows: pieces are laid out without
it, and the numbers are stamped on the joined PDF (`join_and_number`), where the print style's bottom-right
margin box puts them. A page's running title (its footer) is stamped too: each is laid out once, a page of a
footers piece (`Piece.footers`), and drawn on every page of the pieces that carry it (`Piece.footer`), rather than
laid out again in a margin box of every page.

A piece may be late (`Late`): made by the caller while the workers lay out the others (a record's text, rendered from
Markdown meanwhile). Workers are forked before the caller starts any thread of its own, and only lay out HTML: they
touch no database connection and leave with `os._exit` (multiprocessing's own), so nothing of the parent is closed
twice.

Charts are not laid out by WeasyPrint: a piece leaves a slot for each (`ChartSlot`, an empty image of the chart's
size, named by two anchors), Chromium prints the charts meanwhile (reports/chart_printer.py), and `join` places each
chart's vector page into its slot, wherever the slot fell.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import io
import logging
import multiprocessing
import os
import queue
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pikepdf

from reports.chart_printer import PrintedCharts

if TYPE_CHECKING:
    from weasyprint.text.fonts import FontConfiguration
    from weasyprint.urls import URLFetcher

logger = logging.getLogger(__name__)

WORKER_TIMEOUT_SECONDS = 600

# The garbage collector is paused while a PDF is made: WeasyPrint makes a few hundred thousand boxes, styles and Pango
# objects a piece that live until it is written, and the collector only scanned them again and again (at thresholds
# of (50,000, 20, 1,000), 15 collections and 0.6-0.9 s of a 1,000-request record's PDF). Nearly all of it is freed by
# reference counting: what a PDF leaves to the collector is 10,000-35,000 objects (0.2 s), and the process's peak
# memory is the same (docs/benchmarks.md, "The decision record's PDF").

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
    """One HTML document to lay out: a run of pages of the whole. `numbered`: its pages get "n / N"; `charts`: the
    keys of the chart slots it holds; `footer`: the footer (a page of a footers piece) drawn on each of its pages.

    A piece with `footers` is no pages of the whole: its page i is the footer `footers[i]`, laid out where the print
    style puts a footer, alone on its page."""

    html: str
    numbered: bool = True
    charts: tuple[str, ...] = ()
    footer: str = ""
    footers: tuple[str, ...] = ()

    @property
    def weight(self) -> int:
        """What laying it out is expected to cost: table cells cost about 70 characters of running text each."""
        return len(self.html) + 70 * self.html.count("<td")


@dataclass(frozen=True)
class Late:
    """Pieces made while the others are laid out (none: no pages). `last`: made after the other late pieces (the
    charts' slots, whose figures only Chromium waits for, after the text the workers wait for)."""

    make: Callable[[], Sequence[Piece]]
    last: bool = False


CSS_PX_PER_PT = 4 / 3  # CSS pixels are 1/96 in, PDF points 1/72 in
SLOT_TOP = "docket-chart-top-"
SLOT_BOTTOM = "docket-chart-bottom-"


@dataclass(frozen=True)
class ChartSlot:
    """Where a chart goes on a print page: an empty image of the chart's size (so the layout gives it the chart's
    place and shape), named by an anchor at its top and one at its bottom (`templates/reports/print/_chart.html`)."""

    key: str
    title: str
    width_px: int
    height_px: int

    @property
    def anchor(self) -> str:
        return SLOT_TOP + self.key

    @property
    def end_anchor(self) -> str:
        return SLOT_BOTTOM + self.key

    @property
    def placeholder(self) -> str:
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width_px}" height="{self.height_px}" '
               f'viewBox="0 0 {self.width_px} {self.height_px}"></svg>')
        return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode("ascii")


@dataclass(frozen=True)
class Placement:
    """A chart's slot as laid out: its page in the piece (from 0); its left, bottom and top in PDF points from the
    page's bottom left. Its width is the chart's, at that height."""

    key: str
    page: int
    left: float
    bottom: float
    top: float


@dataclass(frozen=True)
class LaidOut:
    """A piece's PDF, its page count, and where its chart slots fell; what its piece says of its pages."""

    content: bytes
    pages: int
    placements: tuple[Placement, ...] = ()
    numbered: bool = True
    charts: tuple[str, ...] = field(default=(), compare=False)
    footer: str = ""
    footers: tuple[str, ...] = ()

    def of(self, piece: Piece) -> LaidOut:
        """This layout with what `piece` says of its pages (a worker lays out only the piece's HTML)."""
        return replace(self, numbered=piece.numbered, charts=piece.charts, footer=piece.footer, footers=piece.footers)


@dataclass(frozen=True)
class JoinedPdf:
    content: bytes
    pages: int
    piece_pages: list[int]
    charts_placed: int = 0


Key = tuple[int, int]  # (position in the list given, position among the pieces a Late made)


def fetcher() -> URLFetcher:
    # Only data: URLs (the charts) resolve: a link or image in a page's text never makes the server fetch anything.
    from weasyprint.urls import URLFetcher

    return URLFetcher(allowed_protocols={"data"})


def _placements(document: Any) -> tuple[Placement, ...]:
    """Each chart slot's box, from the anchors at its top and bottom: on one page (an image is never split)."""
    tops: dict[str, tuple[int, float, float, float]] = {}
    bottoms: dict[str, float] = {}
    for number, page in enumerate(document.pages):
        for name, point in page.anchors.items():  # (x, y, …) in CSS pixels from the page's top left
            if name.startswith(SLOT_TOP):
                tops[name.removeprefix(SLOT_TOP)] = (number, point[0], point[1], page.height)
            elif name.startswith(SLOT_BOTTOM):
                bottoms[name.removeprefix(SLOT_BOTTOM)] = point[1]
    placements = []
    for key, (number, left, top, page_height) in tops.items():
        bottom = bottoms.get(key)
        if bottom is None or bottom <= top:
            continue
        placements.append(Placement(key=key, page=number, left=left / CSS_PX_PER_PT,
                                    bottom=(page_height - bottom) / CSS_PX_PER_PT,
                                    top=(page_height - top) / CSS_PX_PER_PT))
    return tuple(placements)


_collector_lock = threading.Lock()
_collector_layouts = 0
_collector_was_enabled = True


def _collector_lock_after_fork() -> None:  # another thread of the parent may have held it when a worker was forked
    global _collector_lock
    _collector_lock = threading.Lock()


os.register_at_fork(after_in_child=_collector_lock_after_fork)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector paused while the block runs, and as it was after (its next collection frees what the
    block left). Other threads of the process (a thread pool's) are paused too meanwhile; the last layout to end
    puts it back."""
    global _collector_layouts, _collector_was_enabled
    with _collector_lock:
        if _collector_layouts == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _collector_layouts += 1
    try:
        yield
    finally:
        with _collector_lock:
            _collector_layouts -= 1
            if _collector_layouts == 0 and _collector_was_enabled:
                gc.enable()


_fonts = threading.local()


def font_config() -> FontConfiguration:
    """The fonts WeasyPrint lays pages out with, kept for every document this thread of this process lays out.

    Without it WeasyPrint loads Fontconfig's configuration and makes a new Pango font map for each document, so each
    piece of a record finds and loads its fonts again: 7% of the text's layout CPU (docs/benchmarks.md). One a thread
    (Pango's font map is not shared between threads) and a process: a forked layout worker makes its own rather than
    reading font files through the parent's open descriptors."""
    if getattr(_fonts, "pid", None) != os.getpid():
        from weasyprint.text.fonts import FontConfiguration

        _fonts.config = FontConfiguration()
        _fonts.pid = os.getpid()
    config: FontConfiguration = _fonts.config
    return config


def lay_out_piece(piece: Piece) -> LaidOut:
    return lay_out(piece.html).of(piece)


def lay_out(html: str) -> LaidOut:
    """One piece's PDF, its page count and where its chart slots fell (their width is the chart's, to its height)."""
    from weasyprint import HTML  # imported where PDFs are made (see weasyprint_import), not where Django starts

    with collector_paused():
        document = HTML(string=html, url_fetcher=fetcher(), base_url=None).render(font_config=font_config())
        content = document.write_pdf()
    assert content is not None
    return LaidOut(content=content, pages=len(document.pages), placements=_placements(document))


def weasyprint_import() -> None:
    """Import WeasyPrint now. It is imported where a PDF is first made, not with the app: with Pango, HarfBuzz and its
    CSS engine it is a third of a Django start (about 0.5 s), which every web worker, the beat and each management
    command would pay without ever making a PDF. A process that makes PDFs pays it once, at its first."""
    import weasyprint  # noqa: F401


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
            laid = lay_out(html)
        except BaseException:  # reported to the parent, which raises
            results.put((key, None, traceback.format_exc()))
        else:
            results.put((key, laid, ""))


def lay_out_pieces(
    pieces: Sequence[Piece | Late],
    *,
    workers: int,
    start: Callable[[], None] | None = None,
    progress: Progress | None = None,
) -> list[LaidOut]:
    """Each piece laid out alone, in their order (a late piece where it stands in the list).

    With `workers` > 1 the pieces are laid out by that many forked processes; the late pieces are made here, the
    `last` ones last, each sent to the workers as soon as it is made; then `start` is called (the charts' printing
    starts). With 1, everything happens in this process: the late pieces are made, `start` is called, and the pieces
    are laid out. Raises RuntimeError when a worker fails or dies; what making a late piece raises is raised here.
    """
    weasyprint_import()  # before the workers fork, so that they inherit it instead of each importing it
    made: dict[Key, Piece] = {(i, 0): p for i, p in enumerate(pieces) if isinstance(p, Piece)}
    late = {i: p for i, p in enumerate(pieces) if isinstance(p, Late) and not p.last}
    late |= {i: p for i, p in enumerate(pieces) if isinstance(p, Late) and p.last}  # made after the others
    outputs: dict[Key, LaidOut] = {}

    def make(index: int) -> list[Key]:
        keys = []
        for k, piece in enumerate(late[index].make()):
            made[(index, k)] = piece
            keys.append((index, k))
        return keys

    def done(key: Key, laid: LaidOut) -> None:
        outputs[key] = laid.of(made[key])
        if progress is not None:
            progress(len(outputs), max(len(made), len(outputs)))

    if workers > 1 and multiprocessing.current_process().daemon:
        # A daemonic process may not start processes of its own (multiprocessing refuses): a Celery prefork
        # worker's child is one. The pieces are laid out here, as with one worker; run the PDF exports on a
        # `--pool=solo` or `--pool=threads` worker to lay them out on every core (docs/operations.md).
        logger.info("PDF laid out in one process: this process is daemonic (a prefork pool's child)")
        workers = 1
    if workers <= 1:
        for index in late:
            make(index)
        if start is not None:
            start()
        for key in sorted(made):
            done(key, lay_out(made[key].html))
    else:
        _lay_out_in_workers(made, late, make, workers=workers, start=start, done=done)
    return [outputs[key] for key in sorted(made)]


def _lay_out_in_workers(
    made: dict[Key, Piece],
    late: dict[int, Late],
    make: Callable[[int], list[Key]],
    *,
    workers: int,
    start: Callable[[], None] | None,
    done: Callable[[Key, LaidOut], None],
) -> None:
    # Forked before anything here starts a thread (the queues' feeders): a child gets only this thread, and no lock
    # another one holds.
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
                key, laid, error = results.get(timeout=1) if until_all else results.get_nowait()
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
            done(key, laid)

    try:
        # The costliest first, so that no long piece starts last.
        for key in sorted(made, key=lambda k: -made[k].weight):
            send(key)
        for index in late:
            for key in make(index):  # the workers lay the first pieces out meanwhile
                send(key)
            collect(until_all=False)  # progress as pieces come in
        if start is not None:
            start()
        collect(until_all=True)
    finally:
        for _ in processes:
            tasks.put(None)
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()


@dataclass(frozen=True)
class Footers:
    """A PDF whose page i is the footer `keys[i]`, alone where the print style puts a footer."""

    pdf: bytes
    keys: tuple[str, ...]


def join(laid: Sequence[LaidOut], *, charts: PrintedCharts | None = None, number_pages: bool = True) -> JoinedPdf:
    """The pieces' pages in order in one PDF, each chart placed in its slot (when `charts` has it), each page's
    footer drawn (from the footers pieces) and, with `number_pages`, "i / N" stamped on every page of a numbered
    piece."""
    numbered: list[bool] = []
    footer_keys: list[str] = []
    placements: list[tuple[int, Placement]] = []
    pages = [piece for piece in laid if not piece.footers]
    for piece in pages:
        placements += [(len(numbered) + placement.page, placement) for placement in piece.placements]
        numbered += [piece.numbered and number_pages] * piece.pages
        footer_keys += [piece.footer] * piece.pages
    footers = [Footers(pdf=piece.content, keys=piece.footers) for piece in laid if piece.footers]
    content, placed = join_and_number([piece.content for piece in pages], numbered=numbered, charts=charts,
                                      placements=placements, footers=footers, footer_keys=footer_keys)
    return JoinedPdf(content=content, pages=len(numbered), piece_pages=[piece.pages for piece in pages],
                     charts_placed=placed)


def _number_width_pt(text: str) -> float:
    return sum(_HELVETICA_WIDTHS[c] for c in text) * NUMBER_SIZE_PT / 1000


def _place_charts(joined: pikepdf.Pdf, charts: PrintedCharts, placements: Sequence[tuple[int, Placement]]) -> int:
    """Each printed chart's page drawn into its slot (as a form: vector, its text still text); how many were."""
    if charts.pdf is None:
        return 0
    printed = pikepdf.open(io.BytesIO(charts.pdf))
    pages = dict(zip(charts.keys, printed.pages, strict=False))
    placed = 0
    for number, placement in placements:
        chart = pages.get(placement.key)
        if chart is None:
            continue
        width, height = (float(chart.mediabox[2]) - float(chart.mediabox[0]),
                         float(chart.mediabox[3]) - float(chart.mediabox[1]))
        right = placement.left + (placement.top - placement.bottom) * width / height
        joined.pages[number].add_overlay(chart, pikepdf.Rectangle(placement.left, placement.bottom, right,
                                                                   placement.top))
        placed += 1
    return placed


def _footer_forms(joined: pikepdf.Pdf, footers: Sequence[Footers]) -> dict[str, pikepdf.Object]:
    """Each footer's page as a form in `joined`, made once and drawn on every page that carries it."""
    forms = {}
    for footer in footers:
        source = pikepdf.open(io.BytesIO(footer.pdf))
        for key, page in zip(footer.keys, source.pages, strict=False):
            forms[key] = joined.copy_foreign(page.as_form_xobject())
    return forms


def join_and_number(pdfs: Sequence[bytes], *, numbered: Sequence[bool], charts: PrintedCharts | None = None,
                    placements: Sequence[tuple[int, Placement]] = (), footers: Sequence[Footers] = (),
                    footer_keys: Sequence[str] = ()) -> tuple[bytes, int]:
    """The PDFs' pages in order in one PDF; each page i (1-based) that `numbered` marks gets "i / N" stamped, the
    charts go into their slots (`placements`: a page of the whole, from 0, and the slot), and page i gets the footer
    `footer_keys[i]` (one of `footers`' pages) drawn over it. Also: how many charts were placed."""
    joined = pikepdf.new()
    for content in pdfs:
        source = pikepdf.open(io.BytesIO(content))
        joined.pages.extend(source.pages)
    total = len(joined.pages)
    assert total == len(numbered), (total, len(numbered))
    placed = _place_charts(joined, charts, placements) if charts is not None else 0
    forms = _footer_forms(joined, footers)
    font = joined.make_indirect(pikepdf.Dictionary(
        Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name.Helvetica,
        Encoding=pikepdf.Name.WinAnsiEncoding,
    ))
    footer_keys = list(footer_keys) or [""] * total
    for number, (page, wanted, key) in enumerate(zip(joined.pages, numbered, footer_keys, strict=True), start=1):
        stamps = b""
        if key in forms:  # the footer's page is the page's size: drawn where it was laid out
            name = page.add_resource(forms[key], pikepdf.Name.XObject, prefix="DocketFooter")
            stamps += page.calc_form_xobject_placement(forms[key], name, pikepdf.Rectangle(page.mediabox),
                                                       invert_transformations=True, allow_shrink=False,
                                                       allow_expand=False)
        if wanted:
            text = f"{number} / {total}"
            width = float(page.mediabox[2]) - float(page.mediabox[0])
            x = width - NUMBER_RIGHT_MARGIN_PT - _number_width_pt(text)
            name = page.add_resource(font, pikepdf.Name.Font, prefix="DocketNumber")
            stamps += (f"q BT {name} {NUMBER_SIZE_PT} Tf {NUMBER_GREY} g {x:.3f} {NUMBER_BASELINE_PT} Td ({text}) Tj "
                       "ET Q").encode("ascii")
        if not stamps:
            continue
        # The page's own content is wrapped in q … Q first, so whatever it leaves in the graphics state (WeasyPrint
        # flips the y axis) does not move the stamps.
        page.contents_add(pikepdf.Stream(joined, b"q\n"), prepend=True)
        page.contents_add(pikepdf.Stream(joined, b"\nQ\n" + stamps))
    out = io.BytesIO()
    joined.save(out)
    return out.getvalue(), placed
