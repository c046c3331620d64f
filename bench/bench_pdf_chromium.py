"""The decision record's text printed by Chromium beside WeasyPrint's layout of the same pieces: which is cheaper.

    .venv/bin/python bench/bench_pdf.py --sizes 200 1000 --workers 1 --repeat 0   # builds the weeks in --dir first
    .venv/bin/python bench/bench_pdf_chromium.py --sizes 200 1000                # --dir /tmp/docket-bench-pdf

For each week built by bench/bench_pdf.py (a SQLite file in `--dir`), the record's latest revision is cut into its
print pieces as the export makes them (`reports.pdf.DecisionRecordPrint`, the charts' page saying there are no
charts), then every piece is laid out by WeasyPrint in this process (`reports.print_pieces.lay_out`: CPU of this
process and wall), and printed by one Chromium page (`Page.pdf`, A4, through Playwright; after one warm-up print):
the CPU of every process under this one (Playwright's driver and Chromium's, read from /proc) and wall. The load
average is printed. Only the cost is compared: the two PDFs are not the same to the letter (Chromium does not apply
every paged-media rule the print CSS uses), so a switch needs its own look at the pages.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _descendants_cpu() -> float:
    """CPU seconds of every live process below this one (Chromium's processes, Playwright's driver)."""
    from core.parsers import parse_whole_number  # (ROOT is on sys.path from main())

    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if (pid := parse_whole_number(entry.name)) is not None:
            try:
                fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
            except OSError:
                continue
            parents[pid] = int(fields[1])
            cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
    mine = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                grew = True
    return sum(cpu[pid] for pid in mine if pid != os.getpid())


def measure(size: int, folder: Path) -> str:
    os.environ["DATABASE_URL"] = f"sqlite:///{folder / f'week{size}.sqlite3'}"
    from playwright.sync_api import sync_playwright

    from reports import pdf, print_pieces
    from reports.models import Page

    page = min(Page.objects.filter(source_key__startswith="cycle:"), key=lambda p: len(p.source_key or ""))
    revision = page.revisions.order_by("-number").first()
    assert revision is not None
    pieces: list[print_pieces.Piece] = []
    for item in pdf.DecisionRecordPrint(revision=revision).pieces(charts_note="(no charts: not compared)"):
        pieces.extend(item.make() if isinstance(item, print_pieces.Late) else [item])
    cpu, wall = time.process_time(), time.perf_counter()
    for piece in pieces:
        print_pieces.lay_out(piece.html)
    weasy_cpu, weasy_wall = time.process_time() - cpu, time.perf_counter() - wall
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        tab = browser.new_page()
        tab.set_content("<p>warm-up</p>")
        tab.pdf()
        cpu, wall = _descendants_cpu(), time.perf_counter()
        for piece in pieces:
            tab.set_content(piece.html)
            tab.pdf(format="A4")
        chromium_cpu, chromium_wall = _descendants_cpu() - cpu, time.perf_counter() - wall
        browser.close()
    html = sum(len(piece.html) for piece in pieces)
    return (f"| {size:,} | {len(pieces)} | {html:,} | {weasy_cpu:.2f} | {weasy_wall:.2f} | {chromium_cpu:.2f} | "
            f"{chromium_wall:.2f} | {os.getloadavg()[0]:.1f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--dir", default="/tmp/docket-bench-pdf")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    if args.one:
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(args.dir) / f'week{args.one}.sqlite3'}"
        import django

        django.setup()
        print(measure(args.one, Path(args.dir)), flush=True)
        return 0
    print("| requests | pieces | HTML chars | WeasyPrint CPU s | WeasyPrint wall s | Chromium CPU s | Chromium wall s "
          "| load average |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    for size in args.sizes:  # a process each: Django is set up once a process, on that week's database
        subprocess.run([sys.executable, __file__, "--dir", args.dir, "--one", str(size)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
