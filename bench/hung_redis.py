"""Schedulers polling the windows API, and a load balancer asking /healthz, while Redis hangs (SIGSTOP).

    .venv/bin/python bench/hung_redis.py [--clients 8] [--seconds 15] [--workers 4] [--threads 1]

Issue 27's fourth fault: with Redis SIGSTOPped, every request held a gunicorn worker about 2 s (the cache's
socket timeout, asked by the API's rate limit) and, with 4 sync workers, every request took about 10 s. What it
does, all on loopback and all stopped (by pid) before it exits:

1. (Re)creates the PostgreSQL database `--database` (only that one) at $BENCH_PG, migrates it and seeds the
   cluster, pools, teams and a published week of bench/load_during_publish.py.
2. Starts a private redis-server (tests.processes.redis_server) as the cache (`CACHE_URL`) and the Celery broker,
   and gunicorn (`config.wsgi`, production settings, `--workers` workers; `--threads` above 1 makes them gthread).
3. Runs `--clients` clients for `--seconds` with Redis answering, then as long again with Redis stopped
   (SIGSTOP), then resumes it (SIGCONT). Each client loops: GET /api/v1/windows/ of the seeded week with the
   scheduler's token, and every fourth call GET /healthz. Each call may take up to 30 s.

Prints, per phase and endpoint, the calls, their statuses and latencies (p50, p95, max); `--no-write` leaves
docs/benchmarks.md alone, else the run's row (named by `--label`) goes under "## A hung Redis".
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import migrated_database  # noqa: E402

SECTION = "## A hung Redis"
CLIENT_TIMEOUT = 30.0


def get(url: str, headers: dict[str, str]) -> tuple[str, float]:
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 (loopback)
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=CLIENT_TIMEOUT) as response:  # noqa: S310 (loopback server)
            response.read()
            status = str(response.status)
    except urllib.error.HTTPError as error:
        status = str(error.code)
    except OSError as error:
        status = type(error).__name__
    return status, time.perf_counter() - began


def phase(base_url: str, token: str, *, clients: int, seconds: float) -> dict[str, list[tuple[str, float]]]:
    """`clients` loops for `seconds`: the windows list, and every fourth call /healthz."""
    from bench.load_during_publish import CLUSTER, WEEK

    calls: dict[str, list[tuple[str, float]]] = defaultdict(list)
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    windows = f"{base_url}/api/v1/windows/?cluster={CLUSTER}&week={WEEK}&page_size=1000"

    def client(index: int) -> None:
        count = index  # the clients ask /healthz at different turns, some at their first call
        while time.monotonic() < deadline:
            count += 1
            name, url, headers = (("healthz", f"{base_url}/healthz", {}) if count % 4 == 0 else
                                  ("windows", windows, {"Authorization": f"Bearer {token}"}))
            result = get(url, headers)
            with lock:
                calls[name].append(result)

    threads = [threading.Thread(target=client, args=(index,)) for index in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return calls


def summary(results: list[tuple[str, float]]) -> str:
    statuses = Counter(status for status, _ in results)
    seconds = sorted(took for _, took in results)
    p95 = seconds[min(len(seconds) - 1, round(0.95 * (len(seconds) - 1)))] if seconds else float("nan")
    median = statistics.median(seconds) if seconds else float("nan")
    return (f"{len(results)} calls ({', '.join(f'{s}: {n}' for s, n in sorted(statuses.items()))}), "
            f"p50 {median * 1000:,.0f} ms, p95 {p95 * 1000:,.0f} ms, max {max(seconds, default=0) * 1000:,.0f} ms")


def write_row(label: str, row: str, intro: str, path: Path = ROOT / "docs" / "benchmarks.md") -> None:
    content = path.read_text()
    start = content.find(SECTION)
    header = ("| run | gunicorn | windows API, Redis answering | windows API, Redis stopped | "
              "/healthz, Redis stopped |\n|---|---|---|---|---|\n")
    if start == -1:
        content = content.rstrip("\n") + f"\n\n{SECTION}\n\n{intro}\n\n{header}{row}\n"
    else:
        end = content.find("\n## ", start + len(SECTION))
        section = content[start:end if end != -1 else len(content)]
        rows = [line for line in section.splitlines()
                if line.startswith("| ") and not line.startswith(("| run |", f"| {label} |"))]
        section = f"{SECTION}\n\n{intro}\n\n{header}" + "\n".join([*rows, row]) + "\n"
        content = content[:start] + section + (content[end:] if end != -1 else "")
    path.write_text(content.rstrip("\n") + "\n")


INTRO = """Target: while Redis (cache and broker) hangs, the windows API and `/healthz` answer **in under a second**
(issue 27: about 10 s each with 4 sync workers). `bench/hung_redis.py` runs 8 clients against gunicorn on
PostgreSQL, each polling the windows list of a published week (112 windows) with a scheduler token and asking
`/healthz` every fourth call: first with a private redis-server answering, then as long with it SIGSTOPped. The
rate limit counts in the cache; after one timeout (`CACHE_SOCKET_TIMEOUT`, 0.5 s) the circuit breaker
(core/breaker.py) skips the cache for 30 s, so each worker pays the timeout once, not every request.
docs/reliability.md, "A hung Redis"."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0, help="each phase")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="threads per worker; above 1: gthread workers")
    parser.add_argument("--database", default="docket_bench_hung_redis")
    parser.add_argument("--label", default="this tree")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if not 1 <= args.clients <= 64 or not 1 <= args.seconds <= 120 or not 1 <= args.workers <= 16 \
            or not 1 <= args.threads <= 16:
        parser.error("keep the run bounded: 1-64 clients, 1-120 s a phase, 1-16 workers and threads")
    from tests.processes import gunicorn, redis_server

    env = migrated_database(args.database)
    from bench.load_during_publish import seed

    token = seed()
    results = {}
    with redis_server(ROOT / "bench" / "results" / "redis") as redis:
        env = {**env, "CACHE_URL": redis.url, "CELERY_BROKER_URL": redis.url}
        extra = ["--worker-class", "gthread", "--threads", str(args.threads)] if args.threads > 1 else []
        with gunicorn(env, log_dir=ROOT / "bench" / "results", workers=args.workers, timeout=60,
                      extra_args=extra) as server:
            results["answering"] = phase(server.url, token, clients=args.clients, seconds=args.seconds)
            os.kill(redis.process.pid, signal.SIGSTOP)
            try:
                results["stopped"] = phase(server.url, token, clients=args.clients, seconds=args.seconds)
            finally:
                os.kill(redis.process.pid, signal.SIGCONT)
    for name, calls in results.items():
        for endpoint, measured in sorted(calls.items()):
            print(f"Redis {name}, {endpoint}: {summary(measured)}")
    if not args.no_write:
        kind = f"{args.workers} gthread × {args.threads}" if args.threads > 1 else f"{args.workers} sync"
        row = (f"| {args.label} | {kind} | {summary(results['answering'].get('windows', []))} | "
               f"{summary(results['stopped'].get('windows', []))} | {summary(results['stopped'].get('healthz', []))} |")
        intro = INTRO + (f"\n\nMeasured {date.today().isoformat()}, {os.cpu_count()} cores shared with other work, "
                         f"Python {platform.python_version()}:\n\n```\n.venv/bin/python bench/hung_redis.py "
                         f"--clients {args.clients} --seconds {args.seconds:g} --workers N [--threads T] "
                         f"--label '<run>'\n```")
        write_row(args.label, row, intro)
        print("written to docs/benchmarks.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
