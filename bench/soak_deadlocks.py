"""Usage posts and the same team's request edits on one pool, in parallel: how many answer 500 (deadlocks).

    .venv/bin/python bench/soak_deadlocks.py [--pairs 300] [--workers 4] [--database docket_bench_deadlocks]

The reproduction of issue 27's first fault, all on loopback and all stopped (by pid) before it exits:

1. (Re)creates the PostgreSQL database `--database` (only that one) at $BENCH_PG, default
   postgres://postgres@127.0.0.1:5432, migrates it and builds the tests' small world (two clusters, teams A
   and B, a committee, next week's cycle open for intake: `tests.conftest.build_world`), files team A's
   request on atlas/a100, gives team A an account on atlas, a scheduler token for atlas and a personal token
   for team A's lead.
2. Starts gunicorn (`config.wsgi`, production settings, DEBUG off, `--workers N` sync workers, persistent
   connections) on 127.0.0.1 and a free port.
3. Runs `--pairs` pairs, `--parallel` pairs at a time: in each pair a usage post
   (`POST /api/v1/usage/`, team A on a100, 0.1 GPU-hours, a new idempotency key) and team A's lead
   replacing the request (`PUT /api/v1/requests/<id>/`, a new title) leave together (a barrier).
4. Counts the answers by status. A 500 (or a refused or cut connection) is what the issue reported; a 503
   would be a deadlock that Docket's retry could not absorb. Then checks the ledger: exactly one usage row per
   201 answered.

Prints the figures and writes them to docs/benchmarks.md under "## Deadlocks under load" (`--no-write` to
skip; `--label` names the run, e.g. the commit, and each label keeps its own row). Exits 1 on any 500 or error.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import migrated_database  # noqa: E402
from core.parsers import parse_whole_number  # noqa: E402

SECTION = "## Deadlocks under load"


def seed() -> dict[str, Any]:
    """The world, team A's request on a100, a scheduler token for atlas and the lead's personal token."""
    from allocations import services as allocation_services
    from allocations.models import ClusterAccount
    from committee import services
    from tests.committee.review_api import request_body
    from tests.conftest import build_world
    from tests.factories import file_request

    world = build_world()
    gpu_request = file_request(world)
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    scheduler = allocation_services.scheduler_client_create(cluster=world.atlas, name="soak").token
    _token, personal = services.personal_token_create(user=world.lead_a, name="soak")
    body = json.loads(json.dumps(request_body(world), default=str))
    return {"request": gpu_request.pk, "scheduler": scheduler, "personal": personal, "body": body}


def call(method: str, url: str, authorization: str, body: dict[str, Any]) -> int | str:
    """The status of one JSON request, or the name of the error when no status came back."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method=method)  # noqa: S310 (loopback)
    request.add_header("Authorization", authorization)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 (the loopback server)
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError as error:
        return type(error).__name__


PER_HOUR = 50


def run_pairs(base_url: str, seeded: dict[str, Any], *, pairs: int, parallel: int) -> dict[str, Counter[str]]:
    """`pairs` pairs of (usage post, request edit), each pair's two calls released together."""
    usage_url, edit_url = f"{base_url}/api/v1/usage/", f"{base_url}/api/v1/requests/{seeded['request']}/"
    first_hour = (time.time() // 3600 - 3) * 3600

    def period(index: int) -> dict[str, str]:
        # At most PER_HOUR posts an hour: DOCKET_USAGE_MAX_REPORTS_PER_HOUR (60) would refuse the rest.
        hour = first_hour - 3600 * (index // PER_HOUR)
        return {"period_start": _iso(hour), "period_end": _iso(hour + 3600)}
    answers: dict[str, Counter[str]] = {"usage": Counter(), "edit": Counter()}
    lock = threading.Lock()

    def pair(index: int) -> None:
        barrier = threading.Barrier(2)
        out: dict[str, int | str] = {}

        def usage() -> None:
            barrier.wait()
            out["usage"] = call("POST", usage_url, f"Bearer {seeded['scheduler']}", {
                "team": "team-a", "pool": "a100", **period(index), "gpu_hours_used": "0.1",
                "mean_utilization_pct": "50", "idempotency_key": f"soak-{index}"})

        def edit() -> None:
            barrier.wait()
            out["edit"] = call("PUT", edit_url, f"Token {seeded['personal']}",
                               {**seeded["body"], "title": f"Edit {index}"})

        threads = [threading.Thread(target=usage), threading.Thread(target=edit)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with lock:
            for kind, status in out.items():
                answers[kind][str(status)] += 1

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(pair, range(pairs)))
    return answers


def _iso(epoch: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, tz=UTC).isoformat()


def bad(answers: dict[str, Counter[str]]) -> int:
    """Answers that are a server error or no answer at all."""
    return sum(count for counter in answers.values() for status, count in counter.items()
               if (code := parse_whole_number(status)) is None or code >= 500)


def write_row(label: str, row: str, intro: str, path: Path = ROOT / "docs" / "benchmarks.md") -> None:
    """Keep one row per label in the section's table (the section is made when missing)."""
    content = path.read_text()
    start = content.find(SECTION)
    header = "| run | pairs | usage posts by status | request edits by status | 500s and errors | ledger |\n" \
             "|---|---:|---|---|---:|---|\n"
    if start == -1:
        content = content.rstrip("\n") + f"\n\n{SECTION}\n\n{intro}\n\n{header}{row}\n"
    else:
        end = content.find("\n## ", start + len(SECTION))
        section = content[start:end if end != -1 else len(content)]
        lines = [line for line in section.splitlines() if not line.startswith(f"| {label} |")]
        lines.append(row)
        table_rows = [line for line in lines if line.startswith("| ") and not line.startswith("| run |")]
        body = [line for line in lines if not line.startswith("|")]
        while body and not body[-1].strip():
            body.pop()
        section = "\n".join(body) + "\n\n" + header + "\n".join(table_rows) + "\n"
        content = content[:start] + section + (content[end:] if end != -1 else "")
    path.write_text(content.rstrip("\n") + "\n")


INTRO = """Target: **0 × 500** when a scheduler posts usage on a pool while the team that uses it edits its
request, in parallel (issue 27: 23 × 500 in 300 pairs, each a `deadlock detected` in PostgreSQL's log).
`bench/soak_deadlocks.py` runs the pairs against gunicorn (4 sync workers, production settings,
PostgreSQL on the same machine), each pair's two calls released together, 8 pairs at a time, and checks
that every 201 stored exactly one usage row. How the deadlock came about and what prevents it:
docs/reliability.md, "Deadlocks under load"."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--parallel", type=int, default=8, help="pairs in flight at once")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers")
    parser.add_argument("--database", default="docket_bench_deadlocks")
    parser.add_argument("--label", default="this tree")
    parser.add_argument("--no-write", action="store_true", help="print the figures, leave docs/benchmarks.md alone")
    args = parser.parse_args()
    if not 1 <= args.pairs <= 2000 or not 1 <= args.parallel <= 32 or not 1 <= args.workers <= 16:
        parser.error("keep the run bounded: 1-2000 pairs, 1-32 in parallel, 1-16 workers")
    env = migrated_database(args.database)
    from allocations.models import UsageRecord
    from tests.processes import gunicorn

    seeded = seed()
    began = time.monotonic()
    with gunicorn(env, log_dir=ROOT / "bench" / "results", workers=args.workers, timeout=60) as server:
        answers = run_pairs(server.url, seeded, pairs=args.pairs, parallel=args.parallel)
        log = server.log.read_text(errors="replace")
    seconds = time.monotonic() - began
    stored = UsageRecord.objects.count()
    ledger = "ok" if stored == answers["usage"]["201"] else f"{stored} rows for {answers['usage']['201']} × 201"
    errors = bad(answers)
    # A refused call never met its pair's other call, so the run would measure less than it says.
    refused = sum(count for counter in answers.values() for status, count in counter.items()
                  if (code := parse_whole_number(status)) is not None and 400 <= code < 500)

    def statuses(counter: Counter[str]) -> str:
        return ", ".join(f"{status}: {count}" for status, count in sorted(counter.items()))

    print(f"{args.pairs} pairs in {seconds:.0f} s; usage {statuses(answers['usage'])}; "
          f"edits {statuses(answers['edit'])}; 500s and errors: {errors}; ledger: {ledger}; "
          f"'deadlock detected' in gunicorn's log: {log.count('deadlock detected')}")
    if refused:
        print(f"{refused} calls were refused (4xx): those pairs never met, so the run is not the reproduction")
    if not args.no_write:
        row = (f"| {args.label} | {args.pairs} | {statuses(answers['usage'])} | {statuses(answers['edit'])} | "
               f"**{errors}** | {ledger} |")
        intro = INTRO + (f"\n\nMeasured {date.today().isoformat()}, {os.cpu_count()} cores shared with other work, "
                         f"Python {platform.python_version()}:\n\n```\n.venv/bin/python bench/soak_deadlocks.py "
                         f"--pairs {args.pairs} --label '<run>'\n```")
        write_row(args.label, row, intro)
        print("written to docs/benchmarks.md")
    return 0 if errors == 0 and refused == 0 and ledger == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
