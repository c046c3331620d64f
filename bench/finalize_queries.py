"""Finalizing and publishing a week: queries and time, in the chair's transaction and after it, for several sizes.

    .venv/bin/python bench/finalize_queries.py                # sizes 200 1000, SQLite in a temp file
    .venv/bin/python bench/finalize_queries.py --sizes 3 30 200 1000
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/docket_bench_queries .venv/bin/python bench/finalize_queries.py

Each size gets a fresh database (migrated once, flushed between sizes) with the tests' world
(tests/conftest.py) and tests/reports/big_week.py: N submitted requests over four roomy pools,
each scored by three members and granted. The clock is pinned to 2026-12-01 10:00 UTC. For
`cycle_finalize` and `cycle_publish` the script measures what the chair waits for, the service's
transaction (queries, CPU, wall, SQL: the time the database took to answer), and apart from it what
runs after the commit (the outbox's tasks, run here in-process as a worker would run them: the
week's decision record, the teams' notifications), and prints the size of the decision record's
generated text: a Markdown table for docs/benchmarks.md. `--repeat N` runs each size N times and keeps the
run with the least CPU in the transaction. The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


PROFILE = ""  # a pstats sort key when profiling


@dataclass
class Measured:
    queries: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    sql_s: float = 0.0

    def cell(self) -> str:
        return f"{self.queries:,} q, {self.cpu_s:.2f} s CPU, {self.wall_s:.2f} s wall, {self.sql_s:.2f} s SQL"


class _SqlClock:
    """The wall time the database took to answer each query (a connection's execute wrapper)."""

    def __init__(self) -> None:
        self.total = 0.0

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.total += time.perf_counter() - started


def _timed(call: Callable[[], object]) -> Measured:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    sql = _SqlClock()
    cpu, wall = time.process_time(), time.perf_counter()
    with connection.execute_wrapper(sql), CaptureQueriesContext(connection) as queries:
        call()
    return Measured(len(queries), time.process_time() - cpu, time.perf_counter() - wall, sql.total)


def _measure(service: Callable[..., object], **kwargs: Any) -> tuple[Measured, Measured, str]:
    """Run a finalize or publish: its transaction (what the chair waits for), then what runs after the commit (the
    on_commit callbacks: the outbox's tasks in-process, as a worker runs them), and the error a user would see."""
    from django.core.exceptions import ValidationError
    from django.db import transaction

    error = ""
    after: list[Callable[[], object]] = []

    def collect(func: Callable[[], object], using: str | None = None, robust: bool = False) -> None:
        after.append(func)  # what the commit would start: run below, timed apart

    def transaction_only() -> None:
        nonlocal error
        on_commit, transaction.on_commit = transaction.on_commit, collect
        try:
            service(**kwargs)
        except ValidationError as exc:
            error = "failed: " + "; ".join(exc.messages)
            after.clear()  # rolled back: nothing runs after it
        finally:
            transaction.on_commit = on_commit

    if PROFILE:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        in_transaction = _timed(lambda: profiler.runcall(transaction_only))
        print(f"\n{getattr(service, '__name__', service)}: the transaction's profile (cProfile, top 40 by {PROFILE})")
        pstats.Stats(profiler).sort_stats(PROFILE).print_stats(40)
    else:
        in_transaction = _timed(transaction_only)
    after_commit = _timed(lambda: [callback() for callback in after])
    return in_transaction, after_commit, error


def _record_chars(page_model: Any) -> str:
    pages = page_model.objects.filter(kind="decision_record").select_related("latest_revision")
    sizes = [len(p.latest_revision.body) for p in pages if p.latest_revision]
    return f"{sum(sizes):,} on {len(sizes)} page(s), largest {max(sizes, default=0):,}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--profile", nargs="?", const="tottime", default="", metavar="SORT",
                        help="print a cProfile of each transaction (slower), sorted by SORT (tottime, cumulative)")
    args = parser.parse_args()
    global PROFILE
    PROFILE = args.profile

    workdir = tempfile.mkdtemp(prefix="docket-bench-queries-")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir}/bench.sqlite3")
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["DOCKET_PDF_ROOT"] = f"{workdir}/pdf"

    import django

    django.setup()
    import time_machine
    from django.core.management import call_command
    from django.db import connection

    from committee import services
    from reports.models import Page
    from tests.conftest import build_world
    from tests.reports.big_week import big_week

    call_command("migrate", verbosity=0)
    print(f"database: {connection.vendor}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| requests | finalize: transaction | finalize: after commit | publish: transaction | "
          "publish: after commit | record (publish) |")
    print("|---:|---|---|---|---|---|")
    for size in args.sizes:
        best: tuple[Measured, Measured, Measured, Measured, str] | None = None
        for _run in range(args.repeat):
            call_command("flush", interactive=False, verbosity=0)
            with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False):
                world = build_world()
                big_week(world, requests=size)
                gc.collect()
                finalize, finalize_after, finalized_error = _measure(
                    services.cycle_finalize, cycle=world.cycle, actor=world.chair
                )
                world.cycle.refresh_from_db()
                gc.collect()
                publish, publish_after, published_error = _measure(
                    services.cycle_publish, actor=world.chair, cycle=world.cycle
                )
                published_chars = finalized_error or published_error or _record_chars(Page)
            run = (finalize, finalize_after, publish, publish_after, published_chars)
            if best is None or finalize.cpu_s + publish.cpu_s < best[0].cpu_s + best[2].cpu_s:
                best = run
        assert best is not None
        print(f"| {size:,} | {best[0].cell()} | {best[1].cell()} | {best[2].cell()} | {best[3].cell()} | {best[4]} |")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
