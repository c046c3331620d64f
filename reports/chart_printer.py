"""Plotly figures printed by Chromium as PDF pages, for the PDFs WeasyPrint lays out (reports/pdf.py).

Each process that makes PDFs (a Celery worker, a web worker, `make run`) has one chart printer: a helper process of
its own (reports/chart_printer_process.py) that keeps one Chromium with plotly.js loaded. The helper starts with the
first PDF that has charts (`warm()`, called as a PDF begins) and stops after DOCKET_CHART_PRINTER_IDLE_SECONDS
without one, or when its parent is gone (its stdin closes); so Chromium's start and plotly.js (about 1.5 s on a
2-core machine) are paid by the first PDF of a busy spell, not by every PDF.

A job is sent, the caller goes on (a PDF lays its text out meanwhile), then reads the answer: one PDF with a page a
chart, in the order given, each page the chart's own size, which reports/print_pieces.py places into the slots the
print layout left for them. Vector pages, not SVG for WeasyPrint: WeasyPrint lays SVG text out a letter at a time
(about 0.3 s of CPU a chart of 30 bars), Chromium draws and prints it in about 60 ms, on another core.

A job never waits longer than its timeout, counted from when the caller starts waiting for its answer (`result()`),
not from when it was sent: the time the caller spent laying its text out meanwhile is the caller's, not the
printer's (with one layout worker on a busy machine that can be longer than the timeout, and the charts have long
been printed), and an answer already waiting is read whatever the time. A helper that does not answer in time is
killed with its process group (Chromium with it), and the next job starts a new one. A failure never raises: the
PDF is made without charts and says why (`PrintedCharts.missing_reason`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import plotly
from django.conf import settings
from django.utils.translation import gettext as _

from reports.charts import CHART_HEIGHT, CHART_WIDTH, Chart, chromium_path

logger = logging.getLogger(__name__)

RENDER_TIMEOUT_SECONDS = 90
HELPER = Path(__file__).with_name("chart_printer_process.py")
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


@dataclass(frozen=True)
class PrintedCharts:
    """The charts' PDF (a page each, in `keys` order), or why there is none."""

    keys: tuple[str, ...] = ()
    pdf: bytes | None = None
    missing_reason: str = ""

    @property
    def complete(self) -> bool:
        return not self.missing_reason


def chart_size(chart: Chart) -> tuple[int, int]:
    """The chart's size in CSS pixels: the print width, and the figure's own height."""
    return CHART_WIDTH, int(chart.figure.layout.height or CHART_HEIGHT)


def _job_line(charts: Sequence[Chart]) -> bytes:
    # Each figure's own JSON (plotly's encoder: dates, NumPy arrays, NaN as null), spliced rather than re-parsed.
    items = []
    for chart in charts:
        width, height = chart_size(chart)
        items.append(f'{{"width": {width}, "height": {height}, "figure": {chart.figure.to_json()}}}')
    return ('{"charts": [' + ", ".join(items) + "]}\n").encode()


class HelperGone(Exception):
    """The helper closed its output before answering."""


class _Helper:
    """One helper process: its pipes, and a read of its answers with a deadline."""

    def __init__(self, *, chromium: str, idle_seconds: int) -> None:
        # -P: the script's folder is not put on sys.path (reports/selectors/ would hide the standard library's).
        self.process = subprocess.Popen(  # noqa: S603 (our own helper, run by this interpreter)
            [sys.executable, "-P", str(HELPER), "--chromium", chromium, "--plotly-js", str(PLOTLY_JS),
             "--idle-seconds", str(max(idle_seconds, 1))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
        )
        self._buffer = bytearray()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(line)
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise HelperGone from exc

    def _fill(self, deadline: float) -> None:
        """Read what the helper wrote; TimeoutError when nothing came by `deadline` (what is there already is read,
        however late)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        remaining = max(deadline - time.monotonic(), 0.0)
        if not select.select([fd], [], [], remaining)[0]:
            raise TimeoutError
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise HelperGone
        self._buffer += chunk

    def read_line(self, deadline: float) -> bytes:
        while (end := self._buffer.find(b"\n")) < 0:
            self._fill(deadline)
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        return line

    def read_bytes(self, count: int, deadline: float) -> bytes:
        while len(self._buffer) < count:
            self._fill(deadline)
        content = bytes(self._buffer[:count])
        del self._buffer[:count]
        return content

    def close(self, *, kill: bool = False) -> None:
        """Let the helper stop (its stdin closes), or kill it and its Chromium at once; then reap it."""
        if not kill and self.process.stdin is not None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                kill = True
        if kill:
            with contextlib.suppress(ProcessLookupError):  # a session of its own: the helper and its Chromium
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


@dataclass
class ChartJob:
    """A print under way: `send()` starts it, `result()` waits for it, leaving the printer free again.

    Use it as a context manager, so that a job left by an exception frees the printer too (and stops a helper
    whose answer nobody will read: it would be taken for the next job's).
    """

    printer: ChartPrinter | None
    charts: tuple[Chart, ...]
    timeout: float
    missing_reason: str = ""
    _deadline: float = 0.0
    _sent: bool = False
    _result: PrintedCharts | None = field(default=None, repr=False)

    def __enter__(self) -> ChartJob:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._result is None and self.printer is not None:
            if self._sent:
                self.printer._stop(kill=True)
            self._done(PrintedCharts(keys=self._keys, missing_reason=_failed()))

    @property
    def _keys(self) -> tuple[str, ...]:
        return tuple(chart.key for chart in self.charts)

    def _done(self, result: PrintedCharts) -> PrintedCharts:
        self._result = result
        if self.printer is not None:
            printer, self.printer = self.printer, None
            printer._lock.release()
        return result

    def send(self) -> None:
        """Start printing (the helper starts first if there is none); what fails here is the result's reason."""
        if self.printer is None or self._sent:
            return
        self._sent = True
        try:
            self.printer._send(self.charts)
        except (OSError, HelperGone) as exc:
            logger.error("The chart printer could not be started: %r", exc)
            self.printer._stop(kill=True)
            self._done(PrintedCharts(keys=self._keys, missing_reason=_failed()))

    def result(self) -> PrintedCharts:
        """The printed charts, or why there are none: once printed, or once the printer has had the job's timeout
        from now (the caller's own work since `send()` is not counted) without answering."""
        if self._result is not None:
            return self._result
        if self.printer is None:
            return self._done(PrintedCharts(keys=self._keys, missing_reason=self.missing_reason))
        self.send()
        self._deadline = time.monotonic() + self.timeout
        if self._result is not None:  # sending failed
            return self._result
        assert self.printer is not None
        try:
            printed = self.printer._receive(self.charts, self._deadline, self.timeout)
        except BaseException:
            self.printer._stop(kill=True)
            self._done(PrintedCharts(keys=self._keys, missing_reason=_failed()))
            raise
        return self._done(printed)


class ChartPrinter:
    """The chart printer of this process: at most one helper, one job at a time (others wait their turn)."""

    def __init__(self, *, chromium: str, idle_seconds: int) -> None:
        self.chromium = chromium
        self.idle_seconds = idle_seconds
        self._helper: _Helper | None = None
        self._pending = b""
        self._waited = False
        self._lock = threading.Lock()

    @property
    def helper_pid(self) -> int | None:
        """The running helper's process id (None when there is none)."""
        return self._helper.process.pid if self._helper is not None and self._helper.alive else None

    def start(self) -> None:
        """Start the helper now, unless it runs or a job holds the printer: Chromium starts and loads plotly.js while
        the caller prepares its first job."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            if self._helper is not None and not self._helper.alive:
                self._stop()
            if self._helper is None:
                self._new_helper()
        except OSError as exc:
            logger.error("The chart printer could not be started: %r", exc)
        finally:
            self._lock.release()

    def job(self, charts: Sequence[Chart], *, timeout: float | None = None) -> ChartJob:
        """A job for these charts, holding the printer until its result is read or it is left."""
        timeout = RENDER_TIMEOUT_SECONDS if timeout is None else timeout
        if not charts:
            return ChartJob(None, (), timeout)
        if not self._lock.acquire(timeout=timeout):
            return ChartJob(None, tuple(charts), timeout, missing_reason=_took_too_long())
        return ChartJob(self, tuple(charts), timeout)

    def _new_helper(self) -> _Helper:
        self._helper = _Helper(chromium=self.chromium, idle_seconds=self.idle_seconds)
        return self._helper

    def _send(self, charts: Sequence[Chart]) -> None:
        self._pending = _job_line(charts)
        if self._helper is not None and not self._helper.alive:  # it stopped while idle
            self._stop()
        self._waited = self._helper is not None  # it was running before this job: it may stop (idle) as it comes
        helper = self._helper or self._new_helper()
        try:
            helper.send(self._pending)
        except HelperGone:  # it stopped (idle) between the check and the write: a new one
            self._stop(kill=True)
            self._waited = False
            self._new_helper().send(self._pending)

    def _receive(self, charts: Sequence[Chart], deadline: float, timeout: float) -> PrintedCharts:
        keys = tuple(chart.key for chart in charts)
        try:
            try:
                header = self._read_answer(deadline)
            except HelperGone:
                if not self._waited:
                    raise
                # A helper that was waiting for work stopped (its idle time ran out as this job came): once more.
                self._stop()
                self._waited = False
                self._new_helper().send(self._pending)
                header = self._read_answer(deadline)
            assert self._helper is not None
            if not header.get("ok"):
                logger.error("Printing the charts failed: %s", header.get("error"))
                if not self._helper.alive:
                    self._stop()
                return PrintedCharts(keys=keys, missing_reason=_failed())
            content = self._helper.read_bytes(int(str(header["bytes"])), deadline)
            return PrintedCharts(keys=keys, pdf=content)
        except TimeoutError:
            logger.error("Printing %d charts with %s took over %s s; the PDF goes without them",
                         len(charts), self.chromium, timeout)
            self._stop(kill=True)
            return PrintedCharts(keys=keys, missing_reason=_took_too_long())
        except (HelperGone, ValueError, KeyError) as exc:
            logger.error("The chart printer stopped without printing: %r", exc)
            self._stop(kill=True)
            return PrintedCharts(keys=keys, missing_reason=_failed())
        finally:
            if self.idle_seconds <= 0:
                self._stop()

    def _read_answer(self, deadline: float) -> dict[str, object]:
        assert self._helper is not None
        answer = json.loads(self._helper.read_line(deadline))
        if not isinstance(answer, dict):
            raise ValueError(answer)
        return answer

    def _stop(self, *, kill: bool = False) -> None:
        if self._helper is not None:
            helper, self._helper = self._helper, None
            helper.close(kill=kill)

    def close(self) -> None:
        """Stop the helper (it closes Chromium). The next job starts a new one."""
        with self._lock:
            self._stop()


def _took_too_long() -> str:
    return _("Drawing the charts took too long, so this PDF has no charts.")


def _failed() -> str:
    return _("Drawing the charts failed, so this PDF has no charts.")


_printer: ChartPrinter | None = None
_printer_pid = 0
_printer_guard = threading.Lock()


def chart_printer() -> ChartPrinter | None:
    """This process's chart printer for the configured Chromium, or None when there is no Chromium.

    A forked process gets one of its own (its parent's helper answers its parent). A changed setting (a test's)
    stops the printer of the old one.
    """
    global _printer, _printer_pid
    chromium = chromium_path()
    if chromium is None:
        return None
    idle_seconds = settings.DOCKET_CHART_PRINTER_IDLE_SECONDS
    with _printer_guard:
        if _printer is not None and _printer_pid == os.getpid() and (
            (_printer.chromium, _printer.idle_seconds) != (chromium, idle_seconds)
        ):
            _printer.close()
            _printer = None
        if _printer is None or _printer_pid != os.getpid():
            _printer = ChartPrinter(chromium=chromium, idle_seconds=idle_seconds)
            _printer_pid = os.getpid()
        return _printer


def unavailable_reason() -> str:
    """Why no chart can be printed in this process (no Chromium), or "" when they can be."""
    if chromium_path() is None:
        return _("No Chromium was found (setting CHROMIUM_PATH), so this PDF has no charts.")
    return ""


def warm() -> None:
    """Start this process's Chromium now, if it has none running: a PDF calls this first, and its charts' job
    finds plotly.js loaded by the time its figures are built."""
    printer = chart_printer()
    if printer is not None:
        printer.start()


def chart_job(charts: Sequence[Chart]) -> ChartJob:
    """A job printing these charts (use it as a context manager: `send()`, go on, then `result()`).

    Without Chromium the job is done already: no charts, and the reason the PDF gives.
    """
    printer = chart_printer()
    if printer is None:
        return ChartJob(None, tuple(charts), RENDER_TIMEOUT_SECONDS,
                        missing_reason=unavailable_reason() if charts else "")
    return printer.job(charts, timeout=RENDER_TIMEOUT_SECONDS)
