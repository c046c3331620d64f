"""Queries run by finalizing and by publishing a week, for weeks of several sizes.

    .venv/bin/python bench/finalize_queries.py                # sizes 200 1000, SQLite in a temp file
    .venv/bin/python bench/finalize_queries.py --sizes 3 30 200 1000
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/docket_bench_queries .venv/bin/python bench/finalize_queries.py

Each size gets a fresh database (migrated once, flushed between sizes) with the tests' world
(tests/conftest.py) and tests/reports/big_week.py: N submitted requests over four roomy pools,
each scored by three members and granted. The clock is pinned to 2026-12-01 10:00 UTC. The
script counts every query `cycle_finalize` and `cycle_publish` run, including what runs after
their commit (the archive's record, the outbox relay), and prints the size of the decision
record's generated text, a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _measure(service: Callable[..., object], **kwargs: Any) -> tuple[int, int, str]:
    """Run a finalize or publish: the queries of its transaction, all its queries including what runs
    after the commit (on_commit callbacks, eager outbox tasks), and the error a user would see ("" if none)."""
    from django.core.exceptions import ValidationError
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    error = ""
    with CaptureQueriesContext(connection) as everything:
        try:
            with transaction.atomic(), CaptureQueriesContext(connection) as in_transaction:
                service(**kwargs)
        except ValidationError as exc:
            error = "failed: " + "; ".join(exc.messages)
    return len(in_transaction), len(everything), error


def _record_chars(page_model: Any) -> str:
    pages = page_model.objects.filter(kind="decision_record").select_related("latest_revision")
    sizes = [len(p.latest_revision.body) for p in pages if p.latest_revision]
    return f"{sum(sizes):,} on {len(sizes)} page(s), largest {max(sizes, default=0):,}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="docket-bench-queries-")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir}/bench.sqlite3")
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["DOCKET_PDF_ROOT"] = f"{workdir}/pdf"

    import django

    django.setup()
    import time_machine
    from django.core.management import call_command
    from django.db import connection

    from allocations.models import AllocationWindow
    from committee import services
    from reports.models import Page
    from tests.conftest import build_world
    from tests.reports.big_week import big_week

    call_command("migrate", verbosity=0)
    print(f"database: {connection.vendor}")
    print("| requests | finalize queries (with after-commit) | publish queries (with after-commit) | windows | "
          "record chars (finalize) | record chars (publish) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        call_command("flush", interactive=False, verbosity=0)
        with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False):
            world = build_world()
            big_week(world, requests=size)
            finalize, finalize_all, finalized_error = _measure(
                services.cycle_finalize, cycle=world.cycle, actor=world.chair
            )
            finalized_chars = finalized_error or _record_chars(Page)
            world.cycle.refresh_from_db()
            publish, publish_all, published_error = _measure(
                services.cycle_publish, actor=world.chair, cycle=world.cycle
            )
            published_chars = published_error or _record_chars(Page)
            windows = AllocationWindow.objects.filter(week=world.cycle.week).count()
        print(f"| {size:,} | {finalize:,} ({finalize_all:,}) | {publish:,} ({publish_all:,}) | {windows:,} | "
              f"{finalized_chars} | {published_chars} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
