"""Schedulers polling the windows API while plan versions are published: no errors, never half a plan.

    .venv/bin/python bench/load_during_publish.py [--pollers 200] [--duration 60] [--every 2] [--workers 4]

What it does, all on loopback and all stopped (by pid) before it exits:

1. (Re)creates the PostgreSQL database `docket_bench_publish` (only that one) at $BENCH_PG,
   default postgres://postgres@127.0.0.1:5432, migrates it, creates the cluster `loadtest` with
   two pools and 20 teams, a scheduler token for the cluster, and publishes version 1 of the
   week 2030-W20 through `allocations.services.plan_publish`.
2. Starts `.venv/bin/gunicorn config.wsgi` (production settings, DEBUG off, `--workers N` sync
   workers, persistent database connections) on 127.0.0.1 and a free port.
3. Starts a publisher, this script's `publish` command in another process, which publishes the
   next version of the week through `plan_publish` every `--every` seconds: each version keeps
   about three quarters of the candidate windows (a random pick per version), so every publish
   carries some windows over, withdraws some and creates some.
4. Runs `--pollers` concurrent pollers (asyncio, one connection per request, as gunicorn's sync
   workers close each one) for `--duration` seconds, each looping on
   GET /api/v1/windows/?cluster=loadtest&week=2030-W20&page_size=1000 with its Bearer token.
   Half of them send back the ETag they last got (If-None-Match), as a real poller would.
5. Checks every 200 against the database once the run is over: all windows of one response
   carry the response's plan_version; the response's window ids are exactly the windows that
   version holds on the cluster (`plan_window_list`), its cursor is that version's change
   sequence, its count the number of windows, and there is no next page. A 304 must echo the
   ETag sent. Any other status, a refused or cut connection, or a timeout is an error.

Prints the figures and writes them to docs/benchmarks.md under "## Load during publish"
(`--no-write` to skip). Exits 1 when there is an error or an incomplete response.
tests/test_load_during_publish.py runs the same pieces, smaller, on every CI run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import re
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import migrated_database  # noqa: E402

DB_NAME = "docket_bench_publish"
CLUSTER = "loadtest"
WEEK = "2030-W20"
CANDIDATES = 160  # candidate windows; each version holds a random ~75% of them
KEEP_SHARE = 0.75
TEAMS = 20
SECTION = "## Load during publish"


# --- the data: seeding and publishing (these need Django set up) ---------------------------------


def seed(*, cluster_slug: str = CLUSTER, week: str = WEEK) -> str:
    """Create the cluster, pools, teams and a scheduler token; publish version 1. Returns the token."""
    from allocations import services
    from allocations.models import Cluster, GpuPool, SchedulerKind, Team

    cluster = Cluster.objects.create(slug=cluster_slug, name=cluster_slug.title(), scheduler_kind=SchedulerKind.SLURM)
    for slug in ("a100", "h100"):
        GpuPool.objects.create(cluster=cluster, slug=slug, gpu_model=slug.upper(), gpu_count=4096, gpus_per_node=8,
                               scheduler_label=slug)
    for index in range(TEAMS):
        Team.objects.get_or_create(slug=f"load-team-{index}", defaults={"name": f"Load team {index}"})
    publish_version(cluster_slug=cluster_slug, week=week, index=0)
    return services.scheduler_client_create(cluster=cluster, name="load-poller").token


def publish_version(*, cluster_slug: str, week: str, index: int) -> Any:
    """Publish the next version of `week` on the cluster: a random pick of the candidate windows."""
    from allocations import services
    from allocations.engine import EngineWindow
    from allocations.models import GpuPool, Team
    from committee import weeks

    pools = {f"{cluster_slug}/{pool.slug}": pool for pool in GpuPool.objects.filter(cluster__slug=cluster_slug)}
    teams = list(Team.objects.filter(slug__startswith="load-team-").order_by("slug"))
    start, end = weeks.week_bounds(week)
    pick = random.Random(f"{week}:{index}")  # test data, not secrets
    windows, owners = [], {}
    for ref in range(1, CANDIDATES + 1):
        if index > 0 and pick.random() > KEEP_SHARE:
            continue
        begin = (ref * 7) % 120
        windows.append(EngineWindow(ref=ref, pool=f"{cluster_slug}/{'a100' if ref % 3 else 'h100'}",
                                    gpu_count=8 + ref % 24, start=start + timedelta(hours=begin),
                                    end=start + timedelta(hours=begin + 24 + ref % 24), tier="standard"))
        owners[ref] = teams[ref % len(teams)]
    return services.plan_publish(week=week, week_starts_at=start, week_ends_at=end, source_ref="load-during-publish",
                                 windows=windows, explanations=[], pools=pools, teams=owners,
                                 published_by_name="load bench", note=f"load bench version {index + 1}",
                                 refs_are_requests=False)


def publisher_main(argv: list[str]) -> int:
    """`publish`: publish a version every --every seconds for at most --duration seconds (Django from the env)."""
    parser = argparse.ArgumentParser(prog="load_during_publish.py publish")
    parser.add_argument("--cluster", default=CLUSTER)
    parser.add_argument("--week", default=WEEK)
    parser.add_argument("--every", type=float, default=2.0)
    parser.add_argument("--duration", type=float, default=70.0)
    args = parser.parse_args(argv)
    if not 0.1 <= args.every <= 60 or not 1 <= args.duration <= 600:
        parser.error("keep it bounded: --every 0.1-60 s, --duration 1-600 s")
    import django

    django.setup()
    from allocations.models import AllocationPlan

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    index = AllocationPlan.objects.filter(week=args.week).count()
    print("ready", flush=True)
    deadline = time.monotonic() + args.duration
    while time.monotonic() < deadline:
        began = time.monotonic()
        plan = publish_version(cluster_slug=args.cluster, week=args.week, index=index)
        index += 1
        print(json.dumps({"version": plan.version, "change_seq": plan.change_seq,
                          "seconds": round(time.monotonic() - began, 3)}), flush=True)
        time.sleep(max(0.0, args.every - (time.monotonic() - began)))
    return 0


def start_publisher(env: dict[str, str], *, log: Path, every: float, duration: float,
                    cluster: str = CLUSTER, week: str = WEEK) -> subprocess.Popen[bytes]:
    """Start the publisher process and wait (at most 60 s) until Django is up in it. The caller stops it by pid."""
    from tests.processes import stop, wait_until

    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "publish", "--cluster", cluster, "--week", week,
             "--every", str(every), "--duration", str(duration)],
            cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
        )

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"the publisher exited with {process.returncode}:\n{log.read_text()}")
        return "ready" in log.read_text().splitlines()

    try:
        wait_until(ready, timeout=60, what="the publisher process", interval=0.1)
    except BaseException:
        stop(process)
        raise
    return process


def published_during(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


# --- the pollers ---------------------------------------------------------------------------------


@dataclass
class LoadResult:
    pollers: int
    seconds: float
    requests: int = 0
    ok_200: int = 0
    not_modified: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)
    # Each distinct 200 body, reduced to what is checked: (plan_version, cursor, window ids) -> responses.
    bodies: Counter[tuple[int, int, frozenset[int]]] = field(default_factory=Counter)
    malformed: Counter[str] = field(default_factory=Counter)  # inconsistent within one response
    load_before: float = float("nan")  # the machine's 1-minute load average around the run
    load_after: float = float("nan")

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def percentile(self, pct: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


async def _get(host: str, port: int, target: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        lines = [f"GET {target} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status_line, *header_lines = head.split("\r\n")
        status = int(status_line.split()[1])
        response_headers = {}
        for line in header_lines:
            if ":" in line:
                name, value = line.split(":", 1)
                response_headers[name.strip().lower()] = value.strip()
        if "content-length" in response_headers:
            body = await reader.readexactly(int(response_headers["content-length"]))
        elif response_headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                body += await reader.readexactly(size)
                await reader.readexactly(2)
        else:
            body = await reader.read()
        return status, response_headers, body
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def check_body(body: bytes) -> tuple[tuple[int, int, frozenset[int]] | None, str]:
    """The (plan_version, cursor, ids) of a 200 body, or None and what is wrong with it."""
    try:
        page = json.loads(body)
    except ValueError:
        return None, "not JSON"
    results = page.get("results") or []
    versions = {window.get("plan_version") for window in results}
    if results and versions != {page.get("plan_version")}:
        return None, "windows of more than one plan version"
    if page.get("next") is not None:
        return None, "more than one page"
    ids = frozenset(window["id"] for window in results)
    if page.get("count") != len(results) or len(ids) != len(results):
        return None, "count does not match the windows"
    return (page["plan_version"], page["cursor"], ids), ""


async def _poll(index: int, host: str, port: int, target: str, token: str, deadline: float, timeout: float,
                result: LoadResult) -> None:
    conditional = index % 2 == 0
    etag: str | None = None
    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        if conditional and etag:
            headers["If-None-Match"] = etag
        began = time.perf_counter()
        try:
            status, response_headers, body = await asyncio.wait_for(_get(host, port, target, headers), timeout)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError,
                IndexError) as exc:
            result.requests += 1
            result.errors[type(exc).__name__] += 1
            await asyncio.sleep(0.05)  # do not spin on a refused connection
            continue
        result.requests += 1
        result.latencies_ms.append((time.perf_counter() - began) * 1000)
        if status == 200:
            key, problem = check_body(body)
            if key is None:
                result.malformed[problem] += 1
            else:
                result.ok_200 += 1
                result.bodies[key] += 1
            etag = response_headers.get("etag")
        elif status == 304:
            result.not_modified += 1
            if response_headers.get("etag") != headers.get("If-None-Match"):
                result.malformed["304 with another ETag"] += 1
        else:
            result.errors[f"HTTP {status}"] += 1


async def _run(base_url: str, token: str, *, pollers: int, duration: float, timeout: float,
               cluster: str, week: str) -> LoadResult:
    match = re.fullmatch(r"http://([\d.]+):(\d+)", base_url)
    if not match:
        raise ValueError(f"a loopback http://host:port URL is expected, not {base_url}")
    host, port = match[1], int(match[2])
    target = f"/api/v1/windows/?cluster={cluster}&week={week}&page_size=1000"
    result = LoadResult(pollers=pollers, seconds=duration)
    deadline = asyncio.get_running_loop().time() + duration
    await asyncio.gather(*(_poll(i, host, port, target, token, deadline, timeout, result) for i in range(pollers)))
    return result


def run_load(base_url: str, token: str, *, pollers: int, duration: float, timeout: float = 60.0,
             cluster: str = CLUSTER, week: str = WEEK) -> LoadResult:
    """`pollers` concurrent pollers on the windows list for `duration` seconds (each request at most `timeout`)."""
    if not 1 <= pollers <= 500 or not 1 <= duration <= 300:
        raise ValueError("keep the load bounded: 1-500 pollers, 1-300 s")
    load_before = os.getloadavg()[0]
    result = asyncio.run(_run(base_url, token, pollers=pollers, duration=duration, timeout=timeout,
                              cluster=cluster, week=week))
    result.load_before, result.load_after = load_before, os.getloadavg()[0]
    return result


# --- checking against the database ---------------------------------------------------------------


@dataclass
class Verdict:
    versions_published: int  # all versions of the week, the seeded first one included
    versions_seen: list[int]
    bodies_checked: int  # distinct 200 bodies compared with the database
    incomplete: int  # 200 responses whose windows are not exactly one version's
    problems: list[str]


def verify(result: LoadResult, *, cluster: str = CLUSTER, week: str = WEEK) -> Verdict:
    """Compare every distinct 200 body with the version it names, as the database holds it after the run."""
    from allocations import selectors
    from allocations.models import AllocationPlan

    plans = {plan.version: plan for plan in AllocationPlan.objects.filter(week=week)}
    expected: dict[int, frozenset[int]] = {}
    problems: list[str] = []
    incomplete = sum(result.malformed.values())
    problems += [f"{count} response(s): {what}" for what, count in result.malformed.items()]
    for (version, cursor, ids), count in sorted(result.bodies.items(), key=lambda item: item[0][:2]):
        plan = plans.get(version)
        if plan is None:
            incomplete += count
            problems.append(f"{count} response(s) name version {version}, which was never published")
            continue
        if version not in expected:
            expected[version] = frozenset(
                selectors.plan_window_list(plan=plan).filter(cluster__slug=cluster).values_list("id", flat=True))
        if ids != expected[version] or cursor != plan.change_seq:
            incomplete += count
            problems.append(f"{count} response(s) of version {version} (cursor {cursor}): {len(ids)} windows, "
                            f"{len(ids - expected[version])} not in it, {len(expected[version] - ids)} missing")
    return Verdict(versions_published=len(plans), versions_seen=sorted({key[0] for key in result.bodies}),
                   bodies_checked=len(result.bodies), incomplete=incomplete, problems=problems)


# --- the benchmark ------------------------------------------------------------------------------




def report(args: argparse.Namespace, result: LoadResult, verdict: Verdict, published: list[dict[str, Any]],
           command: str) -> str:
    publish_seconds = [entry["seconds"] for entry in published]
    rps = result.requests / result.seconds
    rows = [
        ("requests", f"{result.requests:,} ({rps:,.0f}/s)"),
        ("200 with a body, checked", f"{result.ok_200:,}"),
        ("304 Not Modified", f"{result.not_modified:,}"),
        ("errors (refused, cut, timed out, other status)", f"**{result.error_count}**"),
        ("latency p50 / p95 / p99 (ms)", f"{result.percentile(50):,.0f} / {result.percentile(95):,.0f} / "
                                         f"{result.percentile(99):,.0f}"),
        ("latency max (ms)", f"{max(result.latencies_ms, default=float('nan')):,.0f}"),
        ("plan versions published during the load", f"{len(published)} "
         f"(each publish {statistics.median(publish_seconds) if publish_seconds else float('nan'):.2f} s median)"),
        ("plan versions seen by the pollers", f"{len(verdict.versions_seen)}"),
        ("distinct bodies compared with the database", f"{verdict.bodies_checked:,}"),
        ("incomplete or mixed responses", f"**{verdict.incomplete}**"),
    ]
    table = "\n".join(["| figure | value |", "|---|---:|", *[f"| {name} | {value} |" for name, value in rows]])
    errors = ", ".join(f"{name}: {count}" for name, count in result.errors.items()) or "none"
    return f"""{SECTION}

Target: **200 concurrent pollers** on the windows list for **60 s** while plan versions are
published about every 2 s: **0 errors**, and **every response is one complete plan version**
(all its windows carry the response's `plan_version`, and its window ids are exactly the windows
that version holds, compared with the database after the run).

```
{command}
```

What runs (details in the script's docstring): a fresh database `{DB_NAME}`; gunicorn
(`config.wsgi`, production settings, {args.workers} sync workers, persistent connections) on
127.0.0.1; a publisher process calling `allocations.services.plan_publish` every {args.every:g} s,
each version keeping a random ~{KEEP_SHARE:.0%} of {CANDIDATES} candidate windows (so each publish
carries windows over, withdraws some, creates some); {args.pollers} asyncio pollers in this
process, one connection per request, half of them sending back their last ETag. Everything is
stopped by pid before the script exits, which is non-zero on any error or incomplete response.

Measured {date.today().isoformat()}, {os.cpu_count()} cores, Python {platform.python_version()},
PostgreSQL on the same machine, pollers, publisher and server sharing the cores (load average
{result.load_before:.1f} before the run, {result.load_after:.1f} after it):

{table}

Errors by kind: {errors}. The latencies are queueing, mostly: {args.pollers} pollers with no think
time against {args.workers} sync workers. A conditional poll answers 304 only when no version was
published since that poller's previous answer, so the share of 304s falls as the latency
approaches the publish interval. The property is the point: a poller never sees a version
half-written, because `plan_publish` writes a version in one transaction and the windows API reads
every page of a list as of one change sequence (docs/scheduler-api.md, docs/reliability.md).
CI runs the same pieces smaller (`tests/test_load_during_publish.py`: 50 pollers for 10 s,
a publish every second), asserting 0 errors and 0 incomplete responses.
"""


def write_section(text: str, path: Path = ROOT / "docs" / "benchmarks.md") -> None:
    """Replace the "## Load during publish" section of docs/benchmarks.md (or append it)."""
    content = path.read_text()
    start = content.find(SECTION)
    if start == -1:
        content = content.rstrip("\n") + "\n\n" + text
    else:
        following = content.find("\n## ", start + len(SECTION))
        content = content[:start] + text + ("\n" + content[following + 1:] if following != -1 else "")
    path.write_text(content.rstrip("\n") + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pollers", type=int, default=200)
    parser.add_argument("--duration", type=int, default=60, help="seconds of load")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between publishes")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers")
    parser.add_argument("--no-write", action="store_true", help="print the figures, leave docs/benchmarks.md alone")
    args = parser.parse_args()
    if not 1 <= args.pollers <= 500 or not 5 <= args.duration <= 300 or not 1 <= args.workers <= 16:
        parser.error("keep the run bounded: 1-500 pollers, 5-300 s, 1-16 workers")
    command = ".venv/bin/python bench/load_during_publish.py " + " ".join(sys.argv[1:])

    env = migrated_database(DB_NAME)
    from tests.processes import gunicorn, stop

    token = seed()
    log_dir = ROOT / "bench" / "results"
    with gunicorn(env, log_dir=log_dir, workers=args.workers, timeout=60) as server:
        publisher = start_publisher(env, log=log_dir / "publisher.log", every=args.every,
                                    duration=args.duration + 30)
        try:
            result = run_load(server.url, token, pollers=args.pollers, duration=args.duration)
        finally:
            stop(publisher)
    published = published_during(log_dir / "publisher.log")
    verdict = verify(result)
    text = report(args, result, verdict, published, command)
    print(text)
    for problem in verdict.problems[:20]:
        print("problem:", problem)
    if not args.no_write:
        write_section(text)
        print("written to docs/benchmarks.md")
    return 0 if result.error_count == 0 and verdict.incomplete == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "publish":
        sys.exit(publisher_main(sys.argv[2:]))
    sys.exit(main())
