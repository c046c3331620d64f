"""The chart printer's own process: one Chromium with plotly.js loaded, printing Plotly figures to PDF pages.

reports/chart_printer.py starts it as `python -P chart_printer_process.py --chromium PATH --plotly-js PATH
--idle-seconds N`, in a session of its own, and keeps it while PDFs are being made: Chromium's start and parsing
plotly.js (about 1.5 s here) are paid once, not once a PDF. It never imports Django. It reads jobs from stdin, a JSON
line each:

    {"charts": [{"figure": {"data": [...], "layout": {...}}, "width": 900, "height": 600}, ...]}

and answers each with a JSON line, followed, when it printed, by the PDF's bytes:

    {"ok": true, "bytes": 48123}  then 48123 bytes: a PDF of one page a chart, in order, each page the chart's size
    {"ok": false, "error": "..."}

A chart is drawn by plotly.js in Chromium and printed by Chromium as vector PDF (text stays text). It stops when
stdin closes (the process that started it is gone), after --idle-seconds without a job, and when Chromium fails to
start or dies (its last answer says why).

Chromium is driven over its DevTools pipe (`--remote-debugging-pipe`: JSON messages ended by a NUL byte, read on
its descriptor 3, written on 4), with the five commands this needs: no driver process beside it (Playwright's
costs about 100 MB a printer, more as it buffers PDFs) and no flag we did not choose. Chromium is this process's
child, in its session: killing the session kills it, and when this process dies its pipe closes and Chromium leaves.
The page is about:blank with plotly.js evaluated into it, and every request it would make is refused (Fetch): a
figure is drawn from Docket's own data, but its labels are users' text.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import itertools
import json
import os
import queue
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

# Chromium's flags: headless, no sandbox (Docket's server usually runs it as a service user in a container, where
# the sandbox cannot start), no GPU, nothing fetched in the background (a closed network refuses it, slowly).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-dev-shm-usage", "--disable-extensions", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--no-default-browser-check", "--mute-audio", "--hide-scrollbars"]
START_TIMEOUT_SECONDS = 60
COMMAND_TIMEOUT_SECONDS = 120
PROFILE_PREFIX = "docket-chromium-"

# Draws the charts into the page, each a page of the print of its own size (CSS named pages).
DRAW = """
async (charts) => {
  for (const box of document.body.children) Plotly.purge(box);
  document.body.replaceChildren();
  const rules = [];
  for (const [index, chart] of charts.entries()) {
    const box = document.createElement('div');
    box.style.cssText = `width:${chart.width}px;height:${chart.height}px;overflow:hidden;page:chart${index}`;
    rules.push(`@page chart${index} { size: ${chart.width}px ${chart.height}px; margin: 0 }`);
    document.body.appendChild(box);
    const layout = Object.assign({}, chart.figure.layout || {}, {width: chart.width, height: chart.height});
    await Plotly.newPlot(box, chart.figure.data || [], layout, {staticPlot: true});
  }
  let pages = document.getElementById('docket-pages');
  if (!pages) {
    pages = document.createElement('style');
    pages.id = 'docket-pages';
    document.head.appendChild(pages);
  }
  pages.textContent = 'html, body { margin: 0; padding: 0 }\\n' + rules.join('\\n');
  return charts.length;
}
"""


class ChromiumError(Exception):
    """Chromium refused a command, stopped, or did not answer in time: it is closed, and this process stops."""


class PageError(Exception):
    """The page's script threw (a figure plotly.js cannot draw): this job fails, the next one is printed."""


class Chromium:
    """A headless Chromium and one page, driven over the DevTools pipe."""

    def __init__(self, path: str, *, timeout: float = START_TIMEOUT_SECONDS) -> None:
        _remove_stale_profiles()
        self.profile = tempfile.mkdtemp(prefix=f"{PROFILE_PREFIX}{os.getpid()}-")
        commands_read, self._commands = os.pipe()
        self._events, events_write = os.pipe()
        try:
            # Chromium reads commands on its descriptor 3 and writes on 4: the shell puts the pipes there (a thread
            # of this process reads stdin already, so no preexec_fn).
            self.process = subprocess.Popen(  # noqa: S603 (the configured Chromium, with our own arguments)
                ["/bin/sh", "-c", f'exec "$0" "$@" 3<&{commands_read} 4>&{events_write}', path,
                 "--remote-debugging-pipe", f"--user-data-dir={self.profile}", *CHROMIUM_ARGS, "about:blank"],
                pass_fds=(commands_read, events_write), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            shutil.rmtree(self.profile, ignore_errors=True)
            raise
        finally:
            os.close(commands_read)
            os.close(events_write)
        self._ids = itertools.count(1)
        self._buffer = b""
        self.session = ""
        try:
            # The tab Chromium opened (about:blank), found once Chromium answers: a tab of our own would be a second
            # renderer process, about 100 MB more.
            targets = self.command("Target.getTargets", timeout=timeout)["targetInfos"]
            pages = [t["targetId"] for t in targets if t.get("type") == "page"]
            target = pages[0] if pages else self.command("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.command("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            self.command("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, session=True)
        except BaseException:
            self.close()
            raise

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self._commands, data):]
        except OSError as exc:
            raise ChromiumError(f"Chromium stopped ({exc})") from exc

    def _next_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._events], [], [], remaining)[0]:
                raise ChromiumError("Chromium did not answer in time")
            chunk = os.read(self._events, 1 << 20)
            if not chunk:
                raise ChromiumError(f"Chromium stopped (exit code {self.process.poll()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(message))

    def command(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False,
                timeout: float = COMMAND_TIMEOUT_SECONDS) -> dict[str, Any]:
        """Send a command and wait for its answer; a request the page makes meanwhile is refused."""
        number = next(self._ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + timeout
        while True:
            answer = self._next_message(deadline)
            if answer.get("method") == "Fetch.requestPaused":
                self._send({"id": next(self._ids), "method": "Fetch.failRequest", "sessionId": self.session,
                            "params": {"requestId": answer["params"]["requestId"], "errorReason": "BlockedByClient"}})
            elif answer.get("id") == number:
                if "error" in answer:
                    raise ChromiumError(f"{method}: {answer['error'].get('message', answer['error'])}")
                return dict(answer.get("result") or {})

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        result = self.command("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                   "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise PageError((details.get("exception") or {}).get("description") or details.get("text", "error"))
        return (result.get("result") or {}).get("value")

    def print_pdf(self) -> bytes:
        # Untagged: the pages are placed into another PDF as drawings, where a structure tree would be dropped anyway
        # (tagged, a page of 8 charts is 119 KB; untagged, 48 KB).
        result = self.command("Page.printToPDF", {"printBackground": True, "preferCSSPageSize": True,
                                                  "generateTaggedPDF": False}, session=True)
        return base64.b64decode(result["data"])

    def close(self) -> None:
        with contextlib.suppress(ChromiumError):
            if self.alive:
                self.command("Browser.close", timeout=5)
        for fd in (self._commands, self._events):
            with contextlib.suppress(OSError):
                os.close(fd)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def _remove_stale_profiles() -> None:
    """Profiles left by printers that were killed (their pid, ASCII digits, is in the name, and gone). This helper runs
    apart from Docket (`python -P`), so it checks the digits itself rather than with core.parsers."""
    for folder in Path(tempfile.gettempdir()).glob(f"{PROFILE_PREFIX}*-*"):
        pid = folder.name.removeprefix(PROFILE_PREFIX).split("-", 1)[0]
        if pid.isascii() and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


class Printer:
    """Chromium with plotly.js loaded into its page."""

    def __init__(self, *, chromium: str, plotly_js: Path) -> None:
        self.chromium = Chromium(chromium)
        try:
            self.chromium.evaluate(plotly_js.read_text(encoding="utf-8") + "\n;typeof Plotly")
        except BaseException:
            self.chromium.close()
            raise

    @property
    def alive(self) -> bool:
        return self.chromium.alive

    def print(self, charts: list[dict[str, Any]]) -> bytes:
        drawn = self.chromium.evaluate(f"({DRAW})({json.dumps(charts)})")
        if drawn != len(charts):
            raise PageError(f"{drawn} of {len(charts)} charts drawn")
        return self.chromium.print_pdf()

    def close(self) -> None:
        self.chromium.close()


def _read_jobs(fd: int, jobs: queue.Queue[bytes | None], wake: int) -> None:
    # A thread reads stdin from the start, so that a large job is taken in while Chromium starts: the process that
    # sent it does not wait on a full pipe. It reads the descriptor itself: a buffered reader's lock, held by this
    # thread as the process exits, would stop the interpreter's shutdown. Each job queued writes a byte to `wake`.
    pending = b""
    while chunk := os.read(fd, 1 << 20):
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            jobs.put(line)
            os.write(wake, b"\0")
    jobs.put(None)
    os.write(wake, b"\0")


def _next_job(jobs: queue.Queue[bytes | None], wake: int, idle_seconds: float) -> bytes | None:
    """The next job, or None when stdin closed or `idle_seconds` passed without one.

    The idle time is a relative timeout of select() on the reader's wake pipe, not `jobs.get(timeout=...)`: CPython
    waits on a lock with an absolute deadline on CLOCK_MONOTONIC (sem_clockwait), and libfaketime (`make test-at`)
    fakes that clock without faking the wait, so the deadline lay years away and the helper never stopped. A relative
    timeout holds on any clock, and the wall clock is never read: setting it neither stops the helper nor keeps it."""
    while True:
        try:
            return jobs.get_nowait()
        except queue.Empty:
            if not select.select([wake], [], [], idle_seconds)[0]:
                return None
            os.read(wake, 1 << 16)  # the bytes of the jobs now queued (or of ones already taken: then wait again)


def _answer(out: BinaryIO, header: dict[str, Any], content: bytes = b"") -> None:
    out.write(json.dumps(header).encode() + b"\n" + content)
    out.flush()


def _charts_of(line: bytes) -> list[dict[str, Any]]:
    job = json.loads(line)
    charts = job.get("charts") if isinstance(job, dict) else None
    if not isinstance(charts, list) or not charts or not all(
        isinstance(c, dict) and isinstance(c.get("figure"), dict)
        and all(isinstance(c.get(k), int) and 0 < c[k] <= 20_000 for k in ("width", "height"))
        for c in charts
    ):
        raise ValueError('a job is {"charts": [{"figure": {...}, "width": px, "height": px}, ...]}')
    return charts


def serve(*, chromium: str, plotly_js: Path, idle_seconds: float, jobs_in: int, out: BinaryIO) -> int:
    jobs: queue.Queue[bytes | None] = queue.Queue()
    wake_out, wake_in = os.pipe()
    threading.Thread(target=_read_jobs, args=(jobs_in, jobs, wake_in), name="jobs", daemon=True).start()
    try:
        printer = Printer(chromium=chromium, plotly_js=plotly_js)
    except Exception as exc:  # the job waiting for this start is told why; the next one starts a new process
        _answer(out, {"ok": False, "error": f"Chromium could not be started: {exc}"})
        return 1
    try:
        while True:
            line = _next_job(jobs, wake_out, idle_seconds)
            if line is None:
                return 0
            try:
                content = printer.print(_charts_of(line))
            except (ValueError, PageError) as exc:  # this job's fault
                _answer(out, {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]})
            except ChromiumError as exc:  # Chromium's: a new process starts a new one for the next job
                _answer(out, {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]})
                return 1
            else:
                _answer(out, {"ok": True, "bytes": len(content)}, content)
    finally:
        printer.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chromium", required=True)
    parser.add_argument("--plotly-js", required=True, type=Path)
    parser.add_argument("--idle-seconds", type=float, default=300)
    args = parser.parse_args()
    return serve(chromium=args.chromium, plotly_js=args.plotly_js, idle_seconds=max(args.idle_seconds, 1),
                 jobs_in=sys.stdin.fileno(), out=sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
