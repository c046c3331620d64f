"""Benchmark the policy replay: 8 past weeks of 300 requests, the input load and the pure replay timed apart.

    .venv/bin/python bench/bench_replay.py                      # 8 weeks × 300 requests, SQLite in a temp file
    .venv/bin/python bench/bench_replay.py --weeks 8 --requests 300 --repeat 3
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/docket_bench_replay .venv/bin/python bench/bench_replay.py

Builds the weeks as the committee would leave them: the tests' world (tests/conftest.py), 20 contended
pools, 40 teams, usage reported every week; per week, N submitted requests with evidence, intake
closed by `cycle_close_intake` (fair shares frozen), three members' scores, decisions (7 in 10
granted, 1 partial, 2 deferred), then `cycle_finalize` and `cycle_publish`: real ranks, real plans.
The clock is pinned to 2026-12-01 10:00 UTC; the weeks are the N before it.

Times, best of `--repeat`, wall clock (time.perf_counter) and CPU (time.process_time, steadier on a
shared machine): `replay_inputs_load` (its queries counted too), the pure `replay` with no overrides
(the engine once a week), with two pools' reserves changed (the other pools' placement is reused from
the baseline) and with five overrides (rubric weights, reserves, half-life: every pool placed twice), and
the whole page's work (load + replay). Prints a Markdown table
for docs/benchmarks.md. Target: seconds, not minutes, for 8 weeks of 300 requests.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
POOLS = 20
TEAMS = 40
POOL_SIZES = (16, 32, 32, 64, 64, 128)
GPU_COUNTS = (2, 4, 8, 8, 16, 16, 32)
DURATIONS = (8, 12, 24, 24, 48, 72)


def best(repeat: int, work: Callable[[], Any]) -> tuple[float, float, Any]:
    """Best wall-clock and best CPU seconds of `repeat` runs, and the last result. On a shared machine the
    CPU time (time.process_time) is the steadier of the two: it leaves out the time other processes ran."""
    walls, cpus, result = [], [], None
    for _run in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = work()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - started_cpu)
    return min(walls), min(cpus), result


def seconds(wall: float, cpu: float) -> str:
    return f"{wall:.2f} s ({cpu:.2f} s CPU)"


def build(*, weeks: int, requests: int, seed: int = 20261201) -> list[str]:
    """The weeks, oldest first, each finalized and published through the services."""
    from allocations.models import Cluster, GpuPool, SchedulerKind, Team, UsageRecord
    from committee import services
    from committee.models import Decision, DecisionOutcome, GpuRequest, RequestStatus, Score
    from committee.weeks import week_label
    from tests.committee.reviewing import CRITERIA, bulk_evidence
    from tests.conftest import build_world

    rng = random.Random(seed)
    world = build_world()
    cluster = Cluster.objects.create(slug="bench", name="Bench", scheduler_kind=SchedulerKind.SLURM)
    pools = [
        GpuPool.objects.create(cluster=cluster, slug=f"p{i:02d}", gpu_model="H100", gpu_count=rng.choice(POOL_SIZES),
                               gpus_per_node=8, scheduler_label=f"p{i:02d}")
        for i in range(POOLS)
    ]
    teams = Team.objects.bulk_create(
        Team(name=f"Bench team {i:02d}", slug=f"bench-{i:02d}", fair_share_weight=1 + i % 3) for i in range(TEAMS)
    )
    first_monday = (NOW - timedelta(weeks=weeks, days=NOW.weekday())).date()
    labels = [week_label(first_monday + timedelta(weeks=k)) for k in range(weeks)]
    usage_from = datetime.combine(first_monday, datetime.min.time(), tzinfo=UTC) - timedelta(weeks=8)
    UsageRecord.objects.bulk_create(
        UsageRecord(team=team, pool=rng.choice(pools), period_start=usage_from + timedelta(weeks=k, hours=t),
                    period_end=usage_from + timedelta(weeks=k, hours=t + 24),
                    gpu_hours_used=Decimal(rng.randint(0, 2000)), mean_utilization_pct=Decimal(70),
                    mean_queue_wait_minutes=Decimal(5), idempotency_key=f"bench-{k}-{t}")
        for k in range(weeks + 8) for t, team in enumerate(teams)
    )
    members = (world.chair, world.reviewer, world.finance)
    pairs = [(team, pool) for team in teams for pool in pools]  # a team files once per pool and week
    for label in labels:
        cycle = services.cycle_create(week=label)
        rng.shuffle(pairs)
        submitted = cycle.intake_closes_at - timedelta(days=2)
        rows = []
        for index, (team, pool) in enumerate(pairs[:requests]):
            count = rng.choice(GPU_COUNTS)
            duration = rng.choice(DURATIONS)
            start = cycle.starts_at + timedelta(hours=rng.randint(0, 168 - duration))
            rows.append(GpuRequest(
                team=team, cycle=cycle, pool=pool, title=f"Run {index:03d} of {team.name}", gpu_count=count,
                min_gpu_count=max(1, count // rng.choice((1, 2, 4))), duration_hours=duration,
                earliest_start=start, latest_end=min(start + timedelta(hours=duration + rng.randint(0, 48)),
                                                     cycle.ends_at),
                preemptible_ok=rng.random() < 0.3, status=RequestStatus.SUBMITTED, created_by=world.lead_a,
                submitted_by=world.lead_a, submitted_at=submitted + timedelta(seconds=index),
            ))
        rows = GpuRequest.objects.bulk_create(rows)
        bulk_evidence(rows)
        cycle = services.cycle_close_intake(cycle=cycle, actor=world.chair, now=cycle.intake_closes_at)
        Score.objects.bulk_create(
            Score(request=r, member=m, member_name=m.get_full_name(), criterion=c, value=rng.randint(0, 10))
            for r in rows for m in members for c in CRITERIA
        )
        decisions = []
        for r in rows:
            roll = rng.random()
            outcome = (DecisionOutcome.GRANT if roll < 0.7 else DecisionOutcome.PARTIAL
                       if roll < 0.8 and r.min_gpu_count < r.gpu_count else DecisionOutcome.DEFER)
            granted = {DecisionOutcome.GRANT: r.gpu_count, DecisionOutcome.PARTIAL: r.min_gpu_count}.get(outcome)
            decisions.append(Decision(
                request=r, cycle=cycle, outcome=outcome, requested_gpu_count=r.gpu_count, granted_gpu_count=granted,
                rationale="Bench.", decided_by=world.chair, decided_by_name="Chair",
                decided_at=cycle.intake_closes_at, team_name=r.team.name, request_title=r.title, cycle_week=label,
            ))
        Decision.objects.bulk_create(decisions)
        cycle = services.cycle_finalize(cycle=cycle, actor=world.chair)
        services.cycle_publish(actor=world.chair, cycle=cycle, now=cycle.starts_at - timedelta(hours=1))
    return labels


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weeks", type=int, default=8)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="docket-bench-replay-")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir}/bench.sqlite3")
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["DOCKET_PDF_ROOT"] = f"{workdir}/pdf"

    import django

    django.setup()
    import time_machine
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from policy.replay import replay
    from policy.replay.overrides import replay_query_parse
    from policy.selectors.replay import replay_before, replay_inputs_load, replay_parameters

    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    with time_machine.travel(NOW, tick=False):
        started = time.perf_counter()
        labels = build(weeks=args.weeks, requests=args.requests)
        built = time.perf_counter() - started
        weights, pools, elastic = replay_parameters()
        overrides = replay_query_parse(
            [("rubric.business_impact", "30"), ("rubric.fairness", "20"), ("pool.bench/p00.burst_reserve_pct", "0"),
             ("pool.bench/p01.burst_reserve_pct", "5"), ("fairshare.half_life_weeks", "4")],
            current_weights=weights, pools=pools, elastic_fields=elastic,
        ).overrides
        reserves_only = replay_query_parse(
            [("pool.bench/p00.burst_reserve_pct", "0"), ("pool.bench/p01.burst_reserve_pct", "5")],
            current_weights=weights, pools=pools, elastic_fields=elastic,
        ).overrides
        before = replay_before(week=None)
        with CaptureQueriesContext(connection) as queries:
            inputs = replay_inputs_load(before=before, weeks=args.weeks, usage_weeks=overrides.trailing_weeks)
        load = best(args.repeat, lambda: replay_inputs_load(before=before, weeks=args.weeks))
        inputs = load[2]
        assert [w.week for w in inputs.weeks] == labels, (labels, [w.week for w in inputs.weeks])
        plain = best(args.repeat, lambda: replay(inputs=inputs, overrides=type(overrides)()))
        reserves = best(args.repeat, lambda: replay(inputs=inputs, overrides=reserves_only))
        full = best(args.repeat, lambda: replay(inputs=inputs, overrides=overrides))
        baseline, proposed = plain[2], full[2]
        again = replay(inputs=inputs, overrides=overrides)
        page = best(1, lambda: replay(
            inputs=replay_inputs_load(before=before, weeks=args.weeks), overrides=overrides))
    placed = sum(int(t.placed_gpu_hours.baseline) for t in proposed.teams)
    moved = sum(int(t.placed_gpu_hours.change) for t in proposed.teams if t.placed_gpu_hours.change > 0)
    requests = sum(len(w.requests) for w in inputs.weeks)
    print(f"database: {connection.vendor}; built {len(labels)} weeks ({labels[0]} to {labels[-1]}) in {built:.0f} s")
    print(f"baseline notes: {[n.code for n in baseline.notes]}; reproducible: {again.to_json() == proposed.to_json()}")
    print(f"load average when done: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| weeks × requests | load (queries) | replay, no overrides | replay, 2 reserves | replay, 5 overrides | "
          "load + replay (5) | GPU-hours placed (baseline) | gained by teams |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {len(labels)} × {args.requests} ({requests:,}) | {seconds(*load[:2])} ({len(queries)} queries) | "
          f"{seconds(*plain[:2])} | {seconds(*reserves[:2])} | {seconds(*full[:2])} | {seconds(*page[:2])} | "
          f"{placed:,} | {moved:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
