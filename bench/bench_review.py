"""The weekly review at 200 and 1,000 requests: server time (wall and CPU) and bytes of each page, save and API.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/docket_e .venv/bin/python bench/bench_review.py
    DATABASE_URL=... .venv/bin/python bench/bench_review.py --sizes 12 200 1000 --repeat 5
    DATABASE_URL=... .venv/bin/python bench/bench_review.py --only first timeline dashboards portal

In-process (Django's test client, no network), on the database DATABASE_URL names, which it
flushes: each size gets the tests' world (tests/conftest.py) and N submitted requests over four
pools with full evidence, scored by four committee members on every criterion, every other one
decided (a grant or a rejection). The clock is pinned to Tuesday 2026-12-01 10:00 UTC.

It measures, as the finance member (the chair for a decision and the what-if): the review page's
first screen, the scores grid, one grid cell save, one inline score save and one decision save on
the review page (htmx), the ranking refresh the page asks for after a save (htmx), the ranking API and
the what-if API (their first page where they are paged), and every page of the ranking and of the
what-if read one after the other, as they are (the week's ranking kept) and after a change of the week
(its ranking version moved, as a score moves it: the first page ranks the week again); then one pool's timeline
as the review page fetches it when opened, the dashboards index (four past weeks of usage, one record a team and
week) and the portal of a lead of every team (`--only WORD...` measures only the names holding a word). Time is the
median of --repeat calls, wall and this process's CPU (PostgreSQL's own time is in the wall only); bytes are the
body as sent, raw and with `Accept-Encoding: gzip`. A URL the checked-out code does not have prints "—",
so the same script measures the code before the grid existed. Prints a Markdown table for
docs/benchmarks.md, with the growth from the first size to the last (200 → 1,000 by default) of each
measure, and the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WEIGHTS = {"business_impact": 30, "feasibility": 30, "urgency": 30, "fairness": 10}


def build_week(world: Any, *, requests: int) -> list[Any]:
    """`requests` submitted requests in review, four members' scores each, every other one decided."""
    from allocations.models import Cluster, GpuPool, SchedulerKind, Team
    from committee import services
    from committee.models import Decision, DecisionOutcome, GpuRequest, RequestStatus, Score
    from tests.committee.reviewing import CRITERIA, bulk_evidence, close

    cluster = Cluster.objects.create(slug="vast", name="Vast", scheduler_kind=SchedulerKind.SLURM)
    per_pool = -(-requests // 4)
    pools = [GpuPool.objects.create(cluster=cluster, slug=f"p{i}", gpu_model="H100",
                                    gpu_count=2 * max(per_pool, 1) * 8, gpus_per_node=8, scheduler_label=f"p{i}")
             for i in range(4)]
    teams = Team.objects.bulk_create(Team(name=f"Big team {i:04d}", slug=f"big-{i:04d}", fair_share_weight=1 + i % 3)
                                     for i in range(-(-requests // 4)))
    start = world.cycle.starts_at + timedelta(hours=8)
    rows = GpuRequest.objects.bulk_create(
        GpuRequest(team=teams[i // 4], cycle=world.cycle, pool=pools[i % 4],
                   title=f"Training run {i:04d} of {teams[i // 4].name}", gpu_count=8, min_gpu_count=4,
                   duration_hours=24 + 6 * (i % 7), earliest_start=start, latest_end=start + timedelta(hours=96),
                   deadline=start + timedelta(days=i % 30), status=RequestStatus.SUBMITTED,
                   created_by=world.lead_a, submitted_by=world.lead_a,
                   submitted_at=world.cycle.starts_at - timedelta(days=3) + timedelta(seconds=i))
        for i in range(requests)
    )
    bulk_evidence(rows)
    close(world)
    members = (world.chair, world.reviewer, world.finance, world.tech)
    Score.objects.bulk_create(
        Score(request=r, member=m, member_name=m.get_full_name(), criterion=c,
              value=(i * 7 + offset * 3 + len(c)) % 11)
        for i, r in enumerate(rows) for offset, m in enumerate(members) for c in CRITERIA
    )
    Decision.objects.bulk_create(
        Decision(request=r, cycle=world.cycle,
                 outcome=DecisionOutcome.GRANT if i % 4 == 0 else DecisionOutcome.REJECT,
                 requested_gpu_count=r.gpu_count, granted_gpu_count=r.gpu_count if i % 4 == 0 else None,
                 rationale="Worth it." if i % 4 == 0 else "Not this week.", decided_by=world.chair,
                 decided_by_name="Chair", decided_at=world.cycle.intake_closes_at, team_name=r.team.name,
                 request_title=r.title, cycle_week=world.cycle.week)
        for i, r in enumerate(rows) if i % 2 == 0
    )
    if hasattr(services, "cycle_ranking_changed"):  # written past the services: move the ranking's version too
        services.cycle_ranking_changed(cycle=world.cycle)
    history(world, teams=teams, pools=pools)
    return rows


def history(world: Any, *, teams: list[Any], pools: list[Any]) -> None:
    """Four past weeks of usage, each team on its pool, for the dashboards index; the lead of team A leads every
    team (the portal of a lead of many teams)."""
    from allocations.models import UsageRecord
    from committee.models import MembershipRole, TeamMembership

    monday = world.cycle.starts_at
    UsageRecord.objects.bulk_create(
        UsageRecord(pool=pools[i % 4], team=team, period_start=monday - timedelta(weeks=w),
                    period_end=monday - timedelta(weeks=w) + timedelta(days=3), gpu_hours_used=100 + i % 50 + w,
                    mean_utilization_pct=40 + (i + w) % 60, mean_queue_wait_minutes=(i * w) % 90,
                    idempotency_key=f"bench-{i}-{w}")
        for i, team in enumerate(teams) for w in range(1, 5)
    )
    TeamMembership.objects.bulk_create(TeamMembership(user=world.lead_a, team=team, role=MembershipRole.LEAD)
                                       for team in teams)


def measure(call: Callable[[dict[str, Any]], Any], repeat: int) -> tuple[float, int, int, int, float]:
    """(median seconds, raw bytes, gzip bytes, status, median CPU seconds of this process) of `call(extra_headers)`.

    The CPU is the Python side's (Django, the driver): PostgreSQL's own time is in the wall time only."""
    times, cpu = [], []
    response = None
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        response = call({})
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    assert response is not None
    raw = len(response.content)
    status = response.status_code
    zipped = call({"HTTP_ACCEPT_ENCODING": "gzip"})
    packed = len(zipped.content) if zipped.get("Content-Encoding") == "gzip" else raw
    return statistics.median(times), raw, packed, status, statistics.median(cpu)


NAMES = ["review page, first screen", "scores grid", "grid cell save", "inline score save (htmx)",
         "decision save (htmx)", "ranking refresh after a save (htmx)", "ranking API", "what-if API",
         "ranking API, every page", "ranking API, every page after a change", "what-if API, every page",
         "what-if API, every page after a change", "a pool's timeline, opened", "dashboards index (committee)",
         "portal of a lead of every team"]


class _Pages:
    """Every page of a paged API answer, read one after the other: the last page's answer, the bytes of all."""

    def __init__(self, responses: list[Any]) -> None:
        self.last = responses[-1]
        self.status_code = max(r.status_code for r in responses)
        self.content = b"".join(r.content for r in responses)
        self._headers = self.last

    def get(self, name: str) -> Any:
        return self.last.get(name)


def measure_week(world: Any, rows: list[Any], names: list[str], repeat: int) -> dict[str, Any]:
    """Each measure of one week, or None for a URL the checked-out code does not have."""
    from django.test import Client
    from django.urls import NoReverseMatch, reverse

    week = world.cycle.week
    member, chair = Client(), Client()
    member.force_login(world.finance)
    chair.force_login(world.chair)
    undecided = rows[1]
    values = iter(range(10**6))

    def url(name: str, *extra: Any) -> str:
        return reverse(f"committee:{name}", args=[week, *extra])

    def has(name: str, *extra: Any) -> bool:
        try:
            url(name, *extra)
        except NoReverseMatch:
            return False
        return True

    htmx: dict[str, Any] = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": f"http://testserver/review/{week}/"}
    pages = -(-len(rows) // 100)  # API_PAGE_SIZE

    def every_page(client: Any, path: str, query: dict[str, Any], *, changed: bool) -> Callable[[dict[str, Any]], Any]:
        """Read pages 1..n of `path`; `changed`: after a change of the week (its ranking version moves, as a
        score's does), so the first page ranks the week again and the others read it."""
        from committee import services

        def call(h: dict[str, Any]) -> Any:
            if changed and hasattr(services, "cycle_ranking_changed"):  # before it, every page ranked the week
                services.cycle_ranking_changed(cycle=world.cycle)
            return _Pages([client.get(path, {**query, "page": n}, **h) for n in range(1, pages + 1)])
        return call
    lead = Client()
    lead.force_login(world.lead_a)
    pool = rows[0].pool
    calls: dict[str, Callable[[dict[str, Any]], Any] | None] = {
        "a pool's timeline, opened": (lambda h: member.get(url("review-placement-pool", pool.cluster.slug, pool.slug),
                                                           **h)) if has("review-placement-pool", "c", "p") else None,
        "dashboards index (committee)": lambda h: member.get(reverse("reports:dashboards"), **h),
        "portal of a lead of every team": lambda h: lead.get(reverse("committee:portal"), **h),
        "review page, first screen": lambda h: member.get(url("review-cycle"), **h),
        "scores grid": (lambda h: member.get(url("review-grid"), **h)) if has("review-grid") else None,
        "grid cell save": (lambda h: member.post(url("review-grid-cell"), {
            "request": undecided.pk, "criterion": "urgency", "value": str(next(values) % 11)}, **h))
        if has("review-grid-cell") else None,
        "inline score save (htmx)": lambda h: member.post(url("review-score", undecided.pk), {
            "criterion": "feasibility", "value": str(next(values) % 11)}, **htmx, **h),
        "decision save (htmx)": lambda h: chair.post(url("review-decision", undecided.pk), {
            "outcome": "reject", "rationale": f"Not this week ({next(values)})."}, **htmx, **h),
        "ranking refresh after a save (htmx)": (lambda h: member.get(url("review-ranking"), **htmx, **h))
        if has("review-ranking") else None,
        "ranking API": lambda h: member.get(f"/api/v1/cycles/{week}/ranking/", **h),
        "what-if API": lambda h: chair.get(f"/api/v1/cycles/{week}/what-if/", WEIGHTS, **h),
        "ranking API, every page": every_page(member, f"/api/v1/cycles/{week}/ranking/", {}, changed=False),
        "ranking API, every page after a change": every_page(
            member, f"/api/v1/cycles/{week}/ranking/", {}, changed=True),
        "what-if API, every page": every_page(chair, f"/api/v1/cycles/{week}/what-if/", WEIGHTS, changed=False),
        "what-if API, every page after a change": every_page(
            chair, f"/api/v1/cycles/{week}/what-if/", WEIGHTS, changed=True),
    }
    results: dict[str, Any] = {}
    for name in names:
        call = calls[name]
        if call is not None:
            call({})  # warm: the session, the caches
        results[name] = None if call is None else measure(call, repeat)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="+", metavar="WORD",
                        help="measure only the measures whose name holds one of these words (e.g. first portal)")
    args = parser.parse_args()
    if "DATABASE_URL" not in os.environ:
        parser.error("set DATABASE_URL to a PostgreSQL database the benchmark may flush")
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"

    import django

    django.setup()
    import time_machine
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connection

    from tests.conftest import build_world

    call_command("migrate", verbosity=0)
    results: dict[str, dict[int, tuple[float, int, int, int, float] | None]] = {}
    names = [n for n in NAMES if not args.only or any(word in n for word in args.only)]
    loads = [os.getloadavg()[0]]
    for size in args.sizes:
        call_command("flush", interactive=False, verbosity=0)
        cache.clear()  # the ids come again after a flush: no ranking kept from the size before
        with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=True):
            world = build_world()
            rows = build_week(world, requests=size)
            for name, got in measure_week(world, rows, names, args.repeat).items():
                results.setdefault(name, {})[size] = got
                if got is not None and got[3] >= 400:
                    print(f"warning: {name} at {size} answered {got[3]}", file=sys.stderr)
    load = " → ".join(f"{value:.1f}" for value in (loads[0], os.getloadavg()[0]))
    print(f"database: {connection.vendor}; median of {args.repeat} calls; in-process (Django test client); "
          f"wall (CPU of this process); 1-minute load average {load}")
    header = " | ".join(f"{s:,} requests" for s in args.sizes)
    print(f"| measure | {header} | growth {args.sizes[-1]:,} ÷ {args.sizes[0]:,} |")
    print("|---|" + "---:|" * (len(args.sizes) + 1))
    for name in names:
        cells = []
        for size in args.sizes:
            got = results[name][size]
            cells.append("—" if got is None else f"{got[0] * 1000:,.0f} ms ({got[4] * 1000:,.0f} ms CPU), "
                                                  f"{got[1] / 1024:,.1f} KB (gzip {got[2] / 1024:,.1f} KB)")
        first, last = results[name][args.sizes[0]], results[name][args.sizes[-1]]
        growth = "—" if first is None or last is None else (
            f"time ×{last[0] / first[0]:.1f}, CPU ×{last[4] / max(first[4], 1e-6):.1f}, "
            f"bytes ×{last[1] / first[1]:.1f}")
        print(f"| {name} | " + " | ".join(cells) + f" | {growth} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
