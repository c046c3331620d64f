"""The layout CPU of a decision record's text pieces (no charts, no Chromium), piece by piece, for several sizes.

    .venv/bin/python bench/bench_pdf_text.py --sizes 200 1000        # from the checkout's directory

Each size's week is built once (tests/reports/big_week.py, finalized and published at a pinned instant) in a
SQLite file kept in `--dir`, so that two versions of the code can be timed on the same database one after the
other. Every text piece of `reports.pdf.DecisionRecordPrint` is laid out in this process with
`reports.print_pieces.lay_out` and its CPU (time.process_time) printed with its pages, table cells and first
heading; the last line is the sum. The charts' pieces are left out: bench/bench_pdf.py times the whole PDF.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one(size: int, database: Path, *, profile: Path | None = None, dump: Path | None = None) -> None:
    sys.path.insert(0, str(ROOT))
    fresh = not database.exists()
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    import django

    django.setup()
    from datetime import UTC, datetime

    import time_machine
    from django.core.management import call_command

    from reports import pdf, print_pieces
    from reports.models import Page

    if fresh:
        from committee import services
        from tests.conftest import build_world
        from tests.reports.big_week import big_week

        call_command("migrate", verbosity=0)
        with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=True):
            world = build_world()
            big_week(world, requests=size)
            services.cycle_finalize(cycle=world.cycle, actor=world.chair)
            world.cycle.refresh_from_db()
            services.cycle_publish(actor=world.chair, cycle=world.cycle)
    # The week's own page ("cycle:<week>"), not one of the parts it continues on.
    page = min(Page.objects.filter(source_key__startswith="cycle:"), key=lambda p: len(p.source_key or ""))
    revision = page.revisions.order_by("-number").first()
    assert revision is not None
    record = pdf.DecisionRecordPrint(revision=revision)
    pieces: list[print_pieces.Piece] = []
    for item in record.pieces():
        if isinstance(item, print_pieces.Piece):
            pieces.append(item)
        elif not item.last:  # the last one is the charts' slots
            pieces.extend(item.make())
    if dump:
        for number, piece in enumerate(pieces):
            (dump / f"week{size}-piece{number:02d}.html").write_text(piece.html)
    profiler = cProfile.Profile() if profile else None
    total = 0.0
    pages = 0
    for number, piece in enumerate(pieces):
        started = time.process_time()
        if profiler is not None:
            profiler.enable()
        count = print_pieces.lay_out(piece.html).pages
        if profiler is not None:
            profiler.disable()
        cpu = time.process_time() - started
        total += cpu
        pages += count
        heading = re.search(r"<h[12][^>]*>(.*?)</h[12]>", piece.html)
        print(f"  piece {number:3d}: {count:3d} pages, {piece.html.count('<td'):5d} cells, {cpu:5.2f} s CPU  "
              f"{heading.group(1)[:50] if heading else ''}")
    print(f"{size} requests: {len(pieces)} text pieces, {pages} pages, layout CPU {total:.2f} s, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if profiler is not None:
        profiler.dump_stats(str(profile))
        stats = pstats.Stats(str(profile))
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(45)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--dir", default="/tmp/docket-bench-pdf-text")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile the layout; print the top functions, keep the stats in --dir")
    parser.add_argument("--dump", action="store_true", help="write each piece's HTML into --dir")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    if args.one:
        one(args.one, Path(args.dir) / f"week{args.one}.sqlite3",
            profile=Path(args.dir) / f"layout{args.one}.prof" if args.profile else None,
            dump=Path(args.dir) if args.dump else None)
        return 0
    for size in args.sizes:  # a process each: Django is set up once a process
        flags = ["--profile"] * args.profile + ["--dump"] * args.dump
        subprocess.run([sys.executable, __file__, "--dir", args.dir, "--one", str(size), *flags], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
