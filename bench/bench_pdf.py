"""How long the week's decision record takes to become a PDF, for weeks of several sizes, and where the time goes.

    .venv/bin/python bench/bench_pdf.py                      # sizes 12 200 1000, SQLite in a temp file
    .venv/bin/python bench/bench_pdf.py --sizes 200 1000 --repeat 3

Each size gets a fresh database with the tests' world and tests/reports/big_week.py (N submitted requests,
scored by three members and granted), finalized and published at a pinned instant, so the archive holds the
week's decision record as a server holds it. The PDF is then made from the record's latest revision the way the
export task makes it (reports.pdf.render_revision_pdf), timed as a whole and in its steps: drawing the charts in
Chromium (kaleido), rendering the print template, WeasyPrint's layout and writing. Prints a Markdown table for
docs/benchmarks.md: the best of `--repeat` runs, and the page count (from the PDF).
"""

from __future__ import annotations

import argparse
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
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="docket-bench-pdf-")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir}/bench.sqlite3")
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["DOCKET_PDF_ROOT"] = f"{workdir}/pdf"

    import django

    django.setup()
    import time_machine
    from django.core.management import call_command
    from django.template.loader import render_to_string
    from django.utils import translation
    from weasyprint import HTML
    from weasyprint.urls import URLFetcher

    from committee import services
    from reports import charts, pdf
    from reports.models import Page
    from tests.conftest import build_world
    from tests.reports.big_week import big_week

    call_command("migrate", verbosity=0)
    print("| requests | pages | whole PDF s | charts (Chromium) s | template s | WeasyPrint s | ms per request |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
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
            best: dict[str, float] = {}
            pages = 0
            for _ in range(args.repeat):
                started = time.perf_counter()
                result = pdf.render_revision_pdf(revision=revision)
                whole = time.perf_counter() - started
                assert result.content.startswith(b"%PDF")
                # The same steps one by one.
                t0 = time.perf_counter()
                rendered = charts.render_svgs(charts.decision_record_charts(revision.data))
                t1 = time.perf_counter()
                with translation.override("en"):
                    html = render_to_string("reports/print/decision_record.html",
                                            pdf.print_context(revision=revision, rendered=rendered))
                t2 = time.perf_counter()
                document = HTML(string=html, url_fetcher=URLFetcher(allowed_protocols={"data"}), base_url=None).render()
                document.write_pdf()
                pages = len(document.pages)
                t3 = time.perf_counter()
                for key, value in (("whole", whole), ("charts", t1 - t0), ("template", t2 - t1), ("weasy", t3 - t2)):
                    best[key] = min(best.get(key, value), value)
        print(f"| {size:,} | {pages:,} | {best['whole']:.2f} | {best['charts']:.2f} | {best['template']:.2f} | "
              f"{best['weasy']:.2f} | {1000 * best['whole'] / size:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
