"""How long the week's decision record takes to become a PDF, for weeks of several sizes: the first PDF of a process
(its Chromium starts) and the next ones (its Chromium kept), with 1 and 2 layout workers.

    .venv/bin/python bench/bench_pdf.py                                  # sizes 12 200 1000, workers 2 1
    .venv/bin/python bench/bench_pdf.py --sizes 200 --workers 2 --repeat 5
    .venv/bin/python bench/bench_pdf.py --sizes 200 1000 --workers 1 --before /tmp/before --rounds 2

`--before DIR` times a checkout of older code too (`git worktree add --detach /tmp/before <commit>`, its .venv linked
to this one's), on the same weeks, alternately with this code, `--rounds` times: the rows of both are taken side by
side under the same load, each labelled with its code in the "code" column.

Each size's week is built once (tests/reports/big_week.py: N submitted requests scored by three members and granted,
finalized and published at a pinned instant) in a SQLite file kept in `--dir`, so the archive holds the week's
decision record as a server holds it. Each (size, workers) then runs in a new process, as a Celery worker would:
its first PDF starts the chart printer (reports/chart_printer.py: Chromium, plotly.js), the `--repeat` next ones
find it running; before the first, what a Celery worker does as it starts is timed apart (reports.tasks:
WeasyPrint imported). Each PDF is made from the record's latest revision as the export task makes it
(reports.pdf.render_revision_pdf) and timed: the whole (wall clock), the CPU of this process and of its layout
workers (reaped children), and the load average; then the same charts are printed alone (Chromium running) and
timed. Chromium's own CPU is not counted. Prints a Markdown table for docs/benchmarks.md: the first PDF, and the
median and the best of the next.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINNED = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def setup(database: Path) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["DOCKET_PDF_ROOT"] = str(database.parent / "pdf")
    import django

    django.setup()


def build(size: int, database: Path) -> None:
    setup(database)
    import time_machine
    from django.core.management import call_command

    from committee import services
    from tests.conftest import build_world
    from tests.reports.big_week import big_week

    call_command("migrate", verbosity=0)
    with time_machine.travel(PINNED, tick=True):
        world = build_world()
        big_week(world, requests=size)
        services.cycle_finalize(cycle=world.cycle, actor=world.chair)
        world.cycle.refresh_from_db()
        services.cycle_publish(actor=world.chair, cycle=world.cycle)


def measure(size: int, database: Path, *, workers: int, repeat: int) -> None:
    setup(database)
    import pikepdf
    from django.conf import settings

    from reports import chart_printer, pdf
    from reports.models import Page

    settings.DOCKET_PDF_WORKERS = workers
    settings.CHROMIUM_PATH = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
    # The week's own page ("cycle:<week>"), not one of the parts it continues on.
    page = min(Page.objects.filter(source_key__startswith="cycle:"), key=lambda p: len(p.source_key))
    revision = page.revisions.order_by("-number").first()
    assert revision is not None
    charts = pdf.DecisionRecordPrint(revision=revision).charts
    try:  # what a Celery worker does as it starts (WeasyPrint imported), before its first PDF: timed apart
        from reports.tasks import weasyprint_at_worker_start
    except ImportError:  # older code: its first PDF imports WeasyPrint
        weasyprint_at_worker_start = None
    if weasyprint_at_worker_start is not None:
        before, started = os.times(), time.perf_counter()
        weasyprint_at_worker_start()
        after = os.times()
        wall = time.perf_counter() - started
        cpu = (after.user - before.user) + (after.system - before.system)
        print(f"| {size:,} | {workers} | worker start (WeasyPrint imported) | | {wall:.2f} | | {cpu:.2f} | | "
              f"{os.getloadavg()[0]:.1f} |", flush=True)
    runs = []
    for _ in range(1 + repeat):
        before = os.times()
        started = time.perf_counter()
        result = pdf.render_revision_pdf(revision=revision)
        whole = time.perf_counter() - started
        after = os.times()
        assert result.content.startswith(b"%PDF") and result.charts_included, result.charts_note
        # The same charts printed alone, Chromium running: what the PDF waits for when its text is short.
        alone = time.perf_counter()
        with chart_printer.chart_job(charts) as job:
            job.send()
            assert job.result().complete
        runs.append({
            "whole": whole,
            "charts": time.perf_counter() - alone,
            "self_cpu": (after.user - before.user) + (after.system - before.system),
            "workers_cpu": (after.children_user - before.children_user)
            + (after.children_system - before.children_system),
            "load": os.getloadavg()[0],
            "pages": len(pikepdf.open(io.BytesIO(result.content)).pages),
        })
    first, rest = runs[0], runs[1:]

    def row(label: str, run: dict[str, float]) -> str:
        return (f"| {size:,} | {workers} | {label} | {run['pages']:,.0f} | {run['whole']:.2f} | {run['charts']:.2f} | "
                f"{run['self_cpu']:.2f} | {run['workers_cpu']:.2f} | {run['load']:.1f} |")

    print(row("first (Chromium starts)", first), flush=True)
    if rest:
        median = sorted(rest, key=lambda run: run["whole"])[len(rest) // 2]
        print(row(f"next, median of {len(rest)}", median), flush=True)
        best = min(rest, key=lambda run: run["whole"])
        print(row(f"next, best (spread {statistics.pstdev(r['whole'] for r in rest):.2f} s)", best), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 200, 1000])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 1])
    parser.add_argument("--repeat", type=int, default=3, help="PDFs made after the first, in the same process")
    parser.add_argument("--dir", default="/tmp/docket-bench-pdf")
    parser.add_argument("--before", help="a checkout of older code to time alternately with this one")
    parser.add_argument("--rounds", type=int, default=1, help="with --before: times each code is run, alternately")
    parser.add_argument("--build", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    if args.build:
        build(args.build, folder / f"week{args.build}.sqlite3")
        return 0
    if args.one:
        measure(args.one, folder / f"week{args.one}.sqlite3", workers=args.workers[0], repeat=args.repeat)
        return 0
    codes = [("this", Path(__file__))]
    if args.before:
        codes.insert(0, ("before", Path(args.before).resolve() / "bench" / "bench_pdf.py"))
    print("| requests | workers | code | PDF | pages | whole PDF (wall) s | its charts alone s | this process CPU s "
          "| layout workers CPU s | load average |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|", flush=True)
    for size in args.sizes:  # a process each: Django is set up once a process, and each starts its own Chromium
        if not (folder / f"week{size}.sqlite3").exists():
            subprocess.run([sys.executable, __file__, "--dir", args.dir, "--build", str(size)], check=True)
        for workers in args.workers:
            for _ in range(args.rounds if args.before else 1):
                for label, script in codes:
                    done = subprocess.run([sys.executable, str(script), "--dir", args.dir, "--one", str(size),
                                           "--workers", str(workers), "--repeat", str(args.repeat)],
                                          check=True, capture_output=True, text=True, cwd=script.parent.parent)
                    for line in done.stdout.splitlines():  # "| size | workers | …": the code after the workers
                        cells = line.split(" | ")
                        print(" | ".join([*cells[:2], label, *cells[2:]]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
