"""A measured usage record checked against 16,000 stored ones nested around it: the issue's attack, timed.

    .venv/bin/python bench/bench_usage_fit.py [--stored 16000] [--reports 20] [--quadratic-up-to 4000]

What it does, in this process:

1. The check alone (`allocations.usage_fit.chained` + `worst_span`, plain data, no database) on N stored
   reports each nested around the new one (each starts earlier and ends later than the one inside it,
   0.01 GPU-hours each): the worst case, every stored report adds to every span start before it. For
   N = 1,000, 4,000 and `--stored`, the median of 5 runs; beside it the quadratic sweep it replaced
   (tests/allocations/test_usage_fits_pool.py keeps it as the reference) up to `--quadratic-up-to`.
2. The whole service (`allocations.services.measured_usage_record`, what POST /api/v1/usage/ calls): (re)creates
   the PostgreSQL database `docket_bench_usage` (only that one) at $BENCH_PG, default
   postgres://postgres@127.0.0.1:5432 (or $BENCH_DB), migrates it, and stores `--stored` nested
   reports of one team on a 64-GPU pool (24 starting per hour, under DOCKET_USAGE_MAX_REPORTS_PER_HOUR):
   one chain of 999 (the deepest a new report is still checked against: USAGE_MAX_CHAINED) and one
   of the rest. Then `--reports` new reports in the middle of each, through the service with the
   pool's row lock: in the first they are checked (and stored; each is deleted again so the next
   meets the same chain), in the second refused as fragmented, counted before any row is read.
   Prints the median and the slowest of each.

Goal (issue 26): under 50 ms per report with 16,000 stored. Exits 1 if the slowest service call misses it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import production_env, recreate_database  # noqa: E402

DB_NAME = os.environ.get("BENCH_DB", "docket_bench_usage")
GOAL_SECONDS = 0.050
STEP = timedelta(minutes=2, seconds=30)  # 24 nested reports start an hour


def nested(count: int, middle: datetime) -> list[tuple[datetime, datetime]]:
    """`count` periods nested around [middle, middle + 1 h): the i-th starts i steps before, ends i steps after."""
    return [(middle - STEP * i, middle + timedelta(hours=1) + STEP * i) for i in range(1, count + 1)]


def check_alone(count: int, *, quadratic: bool) -> tuple[float, float | None]:
    from allocations.usage_fit import chained, us, worst_span
    from tests.allocations.test_usage_fits_pool import quadratic_worst_span

    middle = datetime(2030, 3, 1, tzinfo=UTC)
    rows = [(us(start), us(end), Decimal("0.01")) for start, end in nested(count, middle)]
    start, end = us(middle), us(middle + timedelta(hours=1))

    def timed(function: Callable[..., object]) -> float:
        began = time.process_time()
        around = chained(rows, start=start, end=end)
        function(around, start=start, end=end, gpu_hours=Decimal(1), gpus=64)
        return time.process_time() - began

    new = statistics.median(timed(worst_span) for _ in range(5))
    old = statistics.median(timed(quadratic_worst_span) for _ in range(1 if count > 2000 else 3)) if quadratic else None
    return new, old


def service(stored: int, reports: int) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(Seconds, this process's CPU seconds) per new report: in the middle of the deepest chain the cap lets
    through, and in one above it. PostgreSQL's own time is in the first only."""
    from django.core.exceptions import ValidationError
    from django.core.management import call_command

    from allocations import services
    from allocations.models import Cluster, ClusterAccount, GpuPool, SchedulerKind, Team, UsageRecord
    from allocations.services import USAGE_MAX_CHAINED

    call_command("migrate", verbosity=0)
    cluster = Cluster.objects.create(slug="bench", name="Bench", scheduler_kind=SchedulerKind.SLURM)
    pool = GpuPool.objects.create(cluster=cluster, slug="a100", gpu_model="A100", gpu_count=64, gpus_per_node=8,
                                  scheduler_label="a100")
    team = Team.objects.create(name="Team", slug="team")
    ClusterAccount.objects.create(cluster=cluster, team=team, account="team")
    client = services.scheduler_client_create(cluster=cluster, name="bench").client
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    # The retention window is 56 days. One chain of USAGE_MAX_CHAINED - 1 nested reports (the most a report
    # joins and is still checked), then the rest of the 16,000 nested around a point a day later (a chain as
    # an attacker could have left before the cap existed).
    first = now - timedelta(days=28, hours=12)
    deep = USAGE_MAX_CHAINED - 1
    second = first + STEP * (2 * deep + 2) + timedelta(hours=2)
    periods = [*nested(deep, first), *nested(stored - deep, second)]
    UsageRecord.objects.bulk_create(
        [UsageRecord(pool=pool, team=team, period_start=start, period_end=end, gpu_hours_used=Decimal("0.01"),
                     mean_utilization_pct=Decimal(50), idempotency_key=f"stored-{i}", reported_by="bench")
         for i, (start, end) in enumerate(periods)],
        batch_size=2000,
    )

    def post(start: datetime, key: str) -> tuple[float, float]:
        began, cpu = time.perf_counter(), time.process_time()
        with contextlib.suppress(ValidationError):  # the refused ones
            services.measured_usage_record(client=client, team_slug="team", pool_slug="a100", window_id=None,
                                  period_start=start, period_end=start + timedelta(minutes=2),
                                  gpu_hours_used=Decimal("0.01"), mean_utilization_pct=Decimal(50),
                                  mean_queue_wait_minutes=Decimal(0), idempotency_key=key, now=now)
        return time.perf_counter() - began, time.process_time() - cpu

    # Each accepted report joins the chain: delete it again so every one is checked against the same 999.
    accepted = []
    for n in range(reports):
        accepted.append(post(first + timedelta(minutes=2 * n), f"new-{n}"))
        UsageRecord.objects.filter(idempotency_key=f"new-{n}").delete()
    refused = [post(second + timedelta(minutes=2 * n), f"over-{n}") for n in range(reports)]
    assert not UsageRecord.objects.filter(idempotency_key__startswith="over-").exists()
    return accepted, refused


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stored", type=int, default=16_000)
    parser.add_argument("--reports", type=int, default=20)
    parser.add_argument("--quadratic-up-to", type=int, default=4_000,
                        help="time the replaced quadratic check up to this many stored reports (~30 s at 16,000)")
    args = parser.parse_args()
    if not 100 <= args.stored <= 40_000 or not 1 <= args.reports <= 200:
        parser.error("keep the run bounded: --stored 100-40000, --reports 1-200")

    os.environ.update(production_env(db_name=DB_NAME))
    recreate_database(DB_NAME)
    import django

    django.setup()
    print("| stored reports, all nested | check (sweep + segment tree), CPU ms | replaced quadratic check, CPU ms |")
    print("|---:|---:|---:|")
    for count in sorted({1_000, 4_000, args.stored}):
        new, old = check_alone(count, quadratic=count <= args.quadratic_up_to)
        print(f"| {count:,} | {new * 1000:.1f} | {'—' if old is None else f'{old * 1000:,.0f}'} |")
    accepted, refused = service(args.stored, args.reports)
    slowest = max(wall for wall, _cpu in accepted + refused)
    print(f"\nmeasured_usage_record with {args.stored:,} nested reports stored (PostgreSQL), {args.reports} new "
          f"reports each (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):")
    for name, timings in (("in a chain of 999 (checked, stored)", accepted),
                          (f"in a chain of {args.stored - 999:,} (refused: over the cap)", refused)):
        walls = [wall for wall, _cpu in timings]
        cpus = [cpu for _wall, cpu in timings]
        print(f"- {name}: median {statistics.median(walls) * 1000:.1f} ms, slowest {max(walls) * 1000:.1f} ms; "
              f"Docket's CPU median {statistics.median(cpus) * 1000:.1f} ms, most {max(cpus) * 1000:.1f} ms")
    print(f"goal < {GOAL_SECONDS * 1000:.0f} ms per report: " + ("met" if slowest < GOAL_SECONDS else "MISSED"))
    return 0 if slowest < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
