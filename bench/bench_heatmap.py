"""The hour-of-week heatmap over a year of hourly usage records for two pools, and over 13 weeks.

    .venv/bin/python bench/bench_heatmap.py                      # SQLite in a temp file
    .venv/bin/python bench/bench_heatmap.py --teams 4 --repeat 5
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/docket_bench_heatmap .venv/bin/python bench/bench_heatmap.py

A fresh database with the tests' world (tests/conftest.py: atlas/a100, 64 GPUs; orion/h100, 32) gets one usage
record per hour, per team and per pool for the 52 weeks to 2026-W48 (hourly collectors), plus, with --daily, a
daily record per team and pool over the same year (the demo's shape, spread over its hours in Python). It
times `heatmap.utilization_heatmap` for a span of 52 and of 13 weeks (median of --repeat runs) and counts its
queries, a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=2, help="teams reporting each hour on each pool")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--daily", action="store_true", help="also a daily record per team and pool")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="docket-bench-heatmap-")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir}/bench.sqlite3")
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"

    import django

    django.setup()
    import time_machine
    from django.core.management import call_command
    from django.db import connection
    from django.db.models import Sum
    from django.test.utils import CaptureQueriesContext

    from allocations.models import Team, UsageRecord
    from reports.dashboards import heatmap
    from tests.conftest import build_world

    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    with time_machine.travel(datetime(2026, 12, 2, 10, 0, tzinfo=UTC), tick=False):
        world = build_world()
        teams = [world.team_a, world.team_b] + [
            Team.objects.create(name=f"Bench {i}", slug=f"bench-{i}") for i in range(max(0, args.teams - 2))]
        teams = teams[:args.teams]
        span_year = heatmap.span_of(last_week="2026-W48", weeks_back=52)
        records = []
        hour, index = span_year.start, 0
        while hour < span_year.end:
            for pool in (world.a100, world.h100):
                for team in teams:
                    busy = Decimal(pool.gpu_count) * Decimal(30 + (hour.hour * 7 + index) % 60) / 100 / len(teams)
                    records.append(UsageRecord(
                        pool=pool, team=team, period_start=hour, period_end=hour + timedelta(hours=1),
                        gpu_hours_used=busy.quantize(Decimal("0.01")), mean_utilization_pct=Decimal(80),
                        idempotency_key=f"h{index}:{team.pk}"))
            if args.daily and hour.hour == 0:
                for pool in (world.a100, world.h100):
                    for team in teams:
                        records.append(UsageRecord(
                            pool=pool, team=team, period_start=hour, period_end=hour + timedelta(days=1),
                            gpu_hours_used=Decimal(48), mean_utilization_pct=Decimal(80),
                            idempotency_key=f"d{index}:{team.pk}"))
            hour += timedelta(hours=1)
            index += 1
        UsageRecord.objects.bulk_create(records, batch_size=5000)
        print(f"database: {connection.vendor}; {len(records):,} usage records "
              f"({args.teams} teams × 2 pools × {index:,} hours{', and daily records' if args.daily else ''})")
        print("| span | queries | median seconds | of which the query | peak hours above 80% (a100) |")
        print("|---|---:|---:|---:|---:|")
        for weeks_back in (52, 13):
            span = heatmap.span_of(last_week="2026-W48", weeks_back=weeks_back)
            timings, query_timings = [], []
            pools = [world.a100, world.h100]
            for _ in range(args.repeat):
                started = time.perf_counter()
                list(UsageRecord.objects.filter(pool__in=pools, period_start__lt=span.end, period_end__gt=span.start)
                     .values_list("pool_id", "period_start", "period_end").annotate(gpu_hours=Sum("gpu_hours_used"))
                     .order_by())
                query_timings.append(time.perf_counter() - started)
                with CaptureQueriesContext(connection) as queries:
                    started = time.perf_counter()
                    result = heatmap.utilization_heatmap(span=span)
                    timings.append(time.perf_counter() - started)
            share = result.pools[0].peak_above_pct
            print(f"| {weeks_back} weeks | {len(queries)} | {statistics.median(timings):.3f} | "
                  f"{statistics.median(query_timings):.3f} | "
                  f"{share:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
