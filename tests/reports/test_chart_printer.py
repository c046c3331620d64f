"""The chart printer: one Chromium per process, kept for the next PDF, replaced when it dies or idles, never waited on
past its deadline, opening nothing; and each chart placed in its slot of the page WeasyPrint laid out."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from reports import chart_printer, pdf, print_pieces
from reports import charts as charts_module
from reports.selectors import revision_latest
from tests.browser import require_chromium
from tests.conftest import require
from tests.processes import wait_until
from tests.reports.test_pdf_export import record_page


@pytest.fixture
def chromium(settings) -> str:
    settings.CHROMIUM_PATH = require_chromium()
    return settings.CHROMIUM_PATH


def demand_chart(key: str = "demand", *, requested: float = 9000) -> charts_module.Chart:
    chart = charts_module.demand_capacity_figure({"capacity": [
        {"pool": "atlas/a100", "capacity_gpu_hours": 7000, "requested_gpu_hours": requested,
         "granted_gpu_hours": 6500}]})
    assert chart is not None
    return charts_module.Chart(key, chart.title, chart.figure)


def printed_text(content: bytes) -> str:
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    return subprocess.run(["pdftotext", "-layout", "-", "-"], input=content, capture_output=True,
                          check=True).stdout.decode()


def print_charts(*charts: charts_module.Chart) -> chart_printer.PrintedCharts:
    with chart_printer.chart_job(charts) as job:
        job.send()
        return job.result()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    with contextlib.suppress(FileNotFoundError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    return False


def descendants(pid: int) -> set[int]:
    """Every process started below `pid` (Playwright's driver, and the Chromium it launched)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                parent = int(entry.joinpath("stat").read_text().split(") ")[-1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def test_charts_print_as_a_page_each_in_order_and_the_printer_stays_for_the_next(chromium):
    first = print_charts(demand_chart("one", requested=9000), demand_chart("two", requested=1234))
    printer = chart_printer.chart_printer()
    assert printer is not None
    helper = printer.helper_pid

    again = print_charts(demand_chart("three"))

    assert first.complete and first.keys == ("one", "two") and first.pdf is not None
    pages = printed_text(first.pdf).split("\f")[:-1]
    assert len(pages) == 2
    assert "Demand vs capacity" in pages[0] and "9,000 GPU-h" in pages[0]
    assert "1,234 GPU-h" in pages[1]
    assert again.complete and helper is not None and printer.helper_pid == helper  # the same Chromium, kept


def test_a_printer_that_dies_is_replaced_and_leaves_no_chromium_behind(chromium):
    assert print_charts(demand_chart()).complete
    printer = chart_printer.chart_printer()
    assert printer is not None and printer.helper_pid is not None
    helper = printer.helper_pid
    below = descendants(helper)
    assert any("chrom" in Path(f"/proc/{pid}/comm").read_text() for pid in below if alive(pid))

    os.kill(helper, signal.SIGKILL)  # an out-of-memory kill, say
    wait_until(lambda: not alive(helper), timeout=10, what="the killed helper gone")
    printed = print_charts(demand_chart())

    assert printed.complete and printer.helper_pid not in (None, helper)
    # Playwright's driver and Chromium see their pipe close and leave with it.
    wait_until(lambda: not any(alive(pid) for pid in below), timeout=20,
               what=lambda: f"the dead helper's processes still running: {[p for p in below if alive(p)]}")


def test_two_threads_printing_at_once_each_get_their_own_charts(chromium):
    results: dict[str, chart_printer.PrintedCharts] = {}

    def run(key: str, requested: float) -> None:
        results[key] = print_charts(demand_chart(key, requested=requested))

    threads = [threading.Thread(target=run, args=(f"t{n}", 1000 + n)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    for n in range(3):
        printed = results[f"t{n}"]
        assert printed.complete and printed.keys == (f"t{n}",) and printed.pdf is not None
        assert f"{1000 + n:,} GPU-h" in printed_text(printed.pdf)


def test_the_chart_page_opens_nothing(chromium):
    """A figure is Docket's data, but its labels are users' text: the page Chromium draws in fetches nothing."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        chart = demand_chart()
        url = f"http://127.0.0.1:{server.server_address[1]}/beacon.png"
        chart.figure.update_layout(
            images=[{"source": url, "xref": "paper", "yref": "paper", "x": 0, "y": 1, "sizex": 0.2, "sizey": 0.2}],
            title={"text": f'<a href="{url}">link</a> <img src="{url}">'})
        printed = print_charts(chart)
    finally:
        server.shutdown()
        server.server_close()

    assert printed.complete and asked == []


def test_each_chart_is_placed_in_its_slot_between_the_text_around_it(chromium):
    charts = [demand_chart("first", requested=9000), demand_chart("second", requested=4321)]

    def render(slots: list[print_pieces.ChartSlot], missing: str) -> str:
        figures = "".join(
            f"<p>Before {slot.key}</p>"
            + f'<figure><img id="{slot.anchor}" src="{slot.placeholder}" style="display:block;width:100%">'
            + f'<div id="{slot.end_anchor}"></div></figure><p>After {slot.key}</p>'
            for slot in slots)
        return f"<html><body>{figures}<p>{missing}</p></body></html>"

    content = pdf.document_pdf(charts=charts, render=render)

    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    boxes = subprocess.run(["pdftotext", "-bbox", "-", "-"], input=content, capture_output=True,
                           check=True).stdout.decode()
    pages = boxes.split("<page ")[1:]
    placed = 0
    for page in pages:
        words = [(float(y), word) for y, word in re.findall(r'yMin="([\d.]+)"[^>]*>([^<]*)</word>', page)]
        for key, hours in (("first", "9,000"), ("second", "4,321")):
            before = [y for y, w in words if w == key and any(v == "Before" and abs(u - y) < 1 for u, v in words)]
            after = [y for y, w in words if w == key and any(v == "After" and abs(u - y) < 1 for u, v in words)]
            inside = [y for y, w in words if w == hours]
            if before and after and inside:
                assert before[0] < min(inside) and max(inside) < after[0], (key, before, inside, after)
                placed += 1
    assert placed == 2


def test_an_idle_printer_stops_and_the_next_pdf_starts_another(chromium, settings):
    settings.DOCKET_CHART_PRINTER_IDLE_SECONDS = 1
    assert print_charts(demand_chart()).complete
    printer = chart_printer.chart_printer()
    assert printer is not None and printer.helper_pid is not None
    helper = printer.helper_pid

    wait_until(lambda: printer.helper_pid is None, timeout=30, what="the idle helper stopped")
    printed = print_charts(demand_chart())

    assert not alive(helper) and printed.complete and printer.helper_pid not in (None, helper)


def test_with_no_idle_time_chromium_stops_after_each_pdf(chromium, settings):
    settings.DOCKET_CHART_PRINTER_IDLE_SECONDS = 0
    printer = chart_printer.chart_printer()
    assert printer is not None

    printed = print_charts(demand_chart())

    assert printed.complete and printer.helper_pid is None


@pytest.fixture
def silent_chromium(tmp_path, settings, monkeypatch) -> Iterator[None]:
    """A "Chromium" that starts and then sleeps, never speaking on its pipe; a job's deadline of 1 s (short: it never
    answers, so whatever the deadline, it is the deadline that ends the job)."""
    silent = tmp_path / "chromium"
    pid_file = tmp_path / "chromium.pid"
    silent.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 600\n")
    silent.chmod(silent.stat().st_mode | stat.S_IXUSR)
    settings.CHROMIUM_PATH = str(silent)
    monkeypatch.setattr(chart_printer, "RENDER_TIMEOUT_SECONDS", 1)
    yield
    if pid_file.exists():  # a real Chromium leaves when its pipe closes; this one sleeps on
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_chromium_that_never_answers_leaves_the_pdf_without_charts_at_the_deadline(silent_chromium):
    printed = print_charts(demand_chart())
    content = pdf.document_pdf(charts=[demand_chart()], render=lambda slots, missing: (
        f"<h1>Capacity</h1>{''.join(slot.key for slot in slots)}<p>{missing}</p>"))

    assert printed.pdf is None
    assert printed.missing_reason == "Drawing the charts took too long, so this PDF has no charts."
    assert "Drawing the charts took too long" in printed_text(content)
    printer = chart_printer.chart_printer()
    assert printer is not None and printer.helper_pid is None  # killed at the deadline, with its process group


class SteppedClock:
    """The printer's monotonic clock, moved on by the test: a layout that takes "longer than the timeout"."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_charts_printed_during_a_layout_longer_than_the_timeout_are_in_the_pdf(chromium, monkeypatch):
    """One layout worker on a busy machine: the text takes longer than the printer's timeout, the charts were printed
    long before. The time the layout took is not the printer's: the answer waiting is read, the PDF has its charts."""
    clock = SteppedClock()
    monkeypatch.setattr(chart_printer, "time", clock)
    chart = demand_chart(requested=4321)

    def slow_layout(slots, missing):
        printer = chart_printer.chart_printer()
        if slots and printer is not None and printer._helper is not None:
            # The printer's answer arrives while the text is laid out (waited for on the pipe, not slept)...
            assert select.select([printer._helper.process.stdout], [], [], 60)[0], "the charts were not printed"
            clock.now += chart_printer.RENDER_TIMEOUT_SECONDS + 10  # ...and the layout goes on past the timeout
        figures = "".join(f'<figure><img id="{slot.anchor}" src="{slot.placeholder}" style="display:block;width:100%">'
                          f'<div id="{slot.end_anchor}"></div></figure>' for slot in slots)
        return f"<html><body><h1>Capacity</h1>{figures}<p>{missing}</p></body></html>"

    content = pdf.document_pdf(charts=[chart], render=slow_layout)

    text = printed_text(content)
    assert "4,321 GPU-h" in text and "took too long" not in text


def test_the_helper_answers_a_bad_job_with_the_reason_and_goes_on(chromium):
    """The helper's own protocol: a malformed job gets an error line, and the next job is printed."""
    helper = subprocess.Popen(
        [sys.executable, "-P", str(chart_printer.HELPER), "--chromium", chromium, "--plotly-js",
         str(chart_printer.PLOTLY_JS), "--idle-seconds", "60"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
    assert helper.stdin is not None and helper.stdout is not None
    try:
        figure = json.loads(demand_chart().figure.to_json())
        helper.stdin.write(b'{"charts": [{"figure": {}, "width": -5, "height": 600}]}\n')
        helper.stdin.write(json.dumps({"charts": [{"figure": figure, "width": 900, "height": 480}]}).encode() + b"\n")
        helper.stdin.flush()
        refused = json.loads(helper.stdout.readline())
        printed = json.loads(helper.stdout.readline())
        content = helper.stdout.read(printed["bytes"])
        helper.stdin.close()
        assert helper.wait(timeout=30) == 0  # its stdin closed: it stops, and closes Chromium
    finally:
        if helper.poll() is None:
            os.killpg(helper.pid, signal.SIGKILL)
            helper.wait()

    assert refused["ok"] is False and "a job is" in refused["error"]
    assert printed["ok"] is True and content.startswith(b"%PDF")
    assert "Demand vs capacity" in printed_text(content)


def test_a_record_whose_charts_time_out_prints_the_reason_in_their_place_and_everything_else(
    world, silent_chromium
):
    result = pdf.render_revision_pdf(revision=revision_latest(page=record_page()))

    assert not result.charts_included
    assert result.charts_note == "Drawing the charts took too long, so this PDF has no charts."
    pages = printed_text(result.content).split("\f")[:-1]
    assert "Decision record 2026-W02" in pages[0]  # the cover
    assert "Charts" in pages[1] and "Drawing the charts took too long" in pages[1]
    assert "strongest impact case" in " ".join(pages[2:])  # the record's text follows
    assert re.search(rf"2 ?/ ?{len(pages)}\s*$", pages[1])  # numbered as before
