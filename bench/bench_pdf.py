"""How long the week's decision record takes to become a PDF, for weeks of several sizes, and where the time goes.

    .venv/bin/python bench/bench_pdf.py                      # sizes 12 200 1000, SQLite in a temp file
    .venv/bin/python bench/bench_pdf.py --sizes 200 1000 --repeat 3 --workers 1 2

Each size gets a fresh database with the tests' world and tests/reports/big_week.py (N submitted requests,
scored by three members and granted), finalized and published at a pinned instant, so the archive holds the
week's decision record as a server holds it. The PDF is then made from the record's latest revision the way the
export task makes it (reports.pdf.render_revision_pdf), with each `--workers` count (DOCKET_PDF_WORKERS), and
timed: the whole (wall clock), when Chromium had drawn the last chart (kaleido then closes it in the background),
the CPU of this process and of the layout workers (their pieces' CPU, summed, and the largest one), and the
machine's load average. Prints a Markdown table for docs/benchmarks.md: the run with the best wall clock of
`--repeat` runs, and the page count (from the PDF). Chromium's own CPU is not counted (its processes are
kaleido's, not this one's children).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 200, 1000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workers", type=int, nargs="+", default=[2])
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="docket-bench-pdf-")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir}/bench.sqlite3")
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["DOCKET_PDF_ROOT"] = f"{workdir}/pdf"

    import django

    django.setup()
    import pikepdf
    import time_machine
    from django.conf import settings
    from django.core.management import call_command

    from committee import services
    from reports import charts, pdf, print_pieces
    from reports.models import Page
    from tests.conftest import build_world
    from tests.reports.big_week import big_week

    # What each run measures, gathered through the pieces' own functions (the layout runs in forked workers: each
    # piece's CPU travels back in its result).
    piece_cpu: list[float] = []
    charts_done: list[float] = []
    real_lay_out = print_pieces.lay_out
    real_render_svgs = charts.render_svgs

    def lay_out_timed(html: str) -> tuple[bytes, int]:
        started = time.process_time()
        content, pages = real_lay_out(html)
        return content + f"\n%docket-bench-cpu {time.process_time() - started:.4f}\n".encode(), pages

    def render_svgs_timed(figures, each=None):
        def drawn(key: str, svg: str) -> None:
            charts_done.append(time.perf_counter())
            if each is not None:
                each(key, svg)

        return real_render_svgs(figures, each=drawn)

    real_join = print_pieces.join_and_number

    def join_timed(pdfs, *, numbered):
        for content in pdfs:
            marker = content.rfind(b"%docket-bench-cpu ")
            piece_cpu.append(float(content[marker:].split()[1]))
        return real_join([c[: c.rfind(b"\n%docket-bench-cpu ")] for c in pdfs], numbered=numbered)

    print_pieces.lay_out = lay_out_timed
    print_pieces.join_and_number = join_timed
    charts.render_svgs = render_svgs_timed

    call_command("migrate", verbosity=0)
    print("| requests | workers | pages | whole PDF (wall) s | charts drawn at s | this process CPU s "
          "| layout CPU s (sum) | largest piece CPU s | load average |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        call_command("flush", interactive=False, verbosity=0)
        with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=True):
            world = build_world()
            big_week(world, requests=size)
            services.cycle_finalize(cycle=world.cycle, actor=world.chair)
            world.cycle.refresh_from_db()
            services.cycle_publish(actor=world.chair, cycle=world.cycle)
            page = Page.objects.get(source_key=f"cycle:{world.cycle.week}")
            revision = page.revisions.order_by("-number").first()
            assert revision is not None
            for workers in args.workers:
                settings.DOCKET_PDF_WORKERS = workers
                best: dict[str, float] | None = None
                for _ in range(args.repeat):
                    piece_cpu.clear()
                    charts_done.clear()
                    cpu = time.process_time()
                    started = time.perf_counter()
                    result = pdf.render_revision_pdf(revision=revision)
                    whole = time.perf_counter() - started
                    run = {
                        "whole": whole,
                        "charts": (charts_done[-1] - started) if charts_done else float("nan"),
                        "self_cpu": time.process_time() - cpu,
                        "layout_cpu": sum(piece_cpu),
                        "largest": max(piece_cpu, default=0.0),
                        "load": os.getloadavg()[0],
                        "pages": len(pikepdf.open(io.BytesIO(result.content)).pages),
                    }
                    assert result.content.startswith(b"%PDF")
                    if best is None or run["whole"] < best["whole"]:
                        best = run
                assert best is not None
                print(f"| {size:,} | {workers} | {best['pages']:,.0f} | {best['whole']:.2f} | {best['charts']:.2f} | "
                      f"{best['self_cpu']:.2f} | {best['layout_cpu']:.2f} | {best['largest']:.2f} | "
                      f"{best['load']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
