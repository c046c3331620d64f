"""The windows API under gunicorn, against a bare Django JSON view of the same size, in one run.

    .venv/bin/python bench/bench_windows_api.py [--duration 10] [--rounds 3] [--connections 4] [--workers 1]

What it does, all on loopback and all stopped before it exits:

1. (Re)creates the PostgreSQL database `docket_bench` (only that one; $BENCH_DB names another) at $BENCH_PG, default
   postgres://postgres@127.0.0.1:5432, migrates it, and publishes one plan with 500 windows on
   the cluster `bench` through `plan_publish`, plus a scheduler token for the cluster.
2. Starts `.venv/bin/gunicorn config.wsgi` on 127.0.0.1 and a free port with DEBUG off, a
   SECRET_KEY, persistent database connections, and DJANGO_SETTINGS_MODULE=bench.settings,
   whose URLconf adds the bare view (bench/urls.py) to the app's URLs.
3. Checks each scenario once (status, window count, ETag), then loads each with `wrk` from a
   second process, interleaving the scenarios round by round so that they share the machine's
   load, and reports the median requests/s of each and the ratios to the bare view, with the CPU gunicorn's
   worker spent a request in each (from /proc, over wrk's count of requests) and the load average:

   - bare: GET /bench/bare-windows/ — the same envelope and fields (cursor, plan version, commitments, the
     elastic offers): four queries, JsonResponse, no DRF, no authentication (the preflight checks that its keys
     and values are the API's);
   - windows: GET /api/v1/windows/?cluster=bench&week=...&page_size=500 with the token;
   - windows 304: the same with If-None-Match: <its ETag>.

Targets (issue 31): windows >= 80% of bare, 304 >= 150% of bare. Exits 1 if one is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import production_env, recreate_database  # noqa: E402
from tests.processes import gunicorn  # noqa: E402

DB_NAME = os.environ.get("BENCH_DB", "docket_bench")
WEEK = "2030-W10"
WINDOWS = 500
TOKEN_NAME = "bench"  # noqa: S105 (the scheduler client's name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, help="seconds of load per scenario and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1, help="gunicorn sync workers")
    args = parser.parse_args()
    if not 1 <= args.duration <= 120 or not 1 <= args.rounds <= 10 or not 1 <= args.connections <= 64:
        parser.error("keep the run bounded: duration 1-120 s, rounds 1-10, connections 1-64")

    env = production_env(db_name=DB_NAME, settings_module="bench.settings")
    recreate_database(DB_NAME)
    token = seed(env)
    with gunicorn(env, log_dir=ROOT / "bench" / "results", workers=args.workers) as server:
        base = server.url
        windows_url = f"{base}/api/v1/windows/?cluster=bench&week={WEEK}&page_size={WINDOWS}"
        auth = f"Bearer {token}"
        etag, sizes = preflight(base, windows_url, auth)
        scenarios = {
            "bare Django JSON view": (f"{base}/bench/bare-windows/?cluster=bench&week={WEEK}", []),
            "windows API (200)": (windows_url, [f"Authorization: {auth}"]),
            "windows API (304, If-None-Match)": (windows_url, [f"Authorization: {auth}", f"If-None-Match: {etag}"]),
        }
        measured: dict[str, list[float]] = {name: [] for name in scenarios}
        cpu_ms: dict[str, list[float]] = {name: [] for name in scenarios}
        loads: list[float] = []
        for _round in range(args.rounds):
            for name, (url, headers) in scenarios.items():
                before = workers_cpu_seconds(server.process.pid)
                rate, requests = run_wrk(url, headers, duration=args.duration, connections=args.connections)
                measured[name].append(rate)
                cpu_ms[name].append(1000 * (workers_cpu_seconds(server.process.pid) - before) / max(requests, 1))
                loads.append(os.getloadavg()[0])

    medians = {name: statistics.median(values) for name, values in measured.items()}
    bare = medians["bare Django JSON view"]
    ratio_200 = medians["windows API (200)"] / bare
    ratio_304 = medians["windows API (304, If-None-Match)"] / bare
    print(f"\n500 windows; gunicorn {args.workers} sync worker(s); wrk -t1 -c{args.connections} -d{args.duration}s; "
          f"{args.rounds} interleaved rounds; body sizes: bare {sizes['bare']} B, windows {sizes['windows']} B; "
          f"load average {min(loads):.1f}-{max(loads):.1f}\n")
    print("| endpoint | requests/s (median) | each round | vs bare | worker CPU ms a request (median) | vs bare |")
    print("|---|---:|---|---:|---:|---:|")
    bare_cpu = statistics.median(cpu_ms["bare Django JSON view"])
    for name, values in measured.items():
        rounds = ", ".join(f"{v:.0f}" for v in values)
        cpu = statistics.median(cpu_ms[name])
        print(f"| {name} | {medians[name]:.0f} | {rounds} | {medians[name] / bare:.0%} | {cpu:.1f} | "
              f"{bare_cpu / cpu:.2f} |")
    bare_rounds = measured["bare Django JSON view"]
    for name in ("windows API (200)", "windows API (304, If-None-Match)"):
        per_round = [value / base_value for value, base_value in zip(measured[name], bare_rounds, strict=True)]
        print(f"{name} / bare, round by round: " + ", ".join(f"{ratio:.2f}" for ratio in per_round))
    ok = ratio_200 >= 0.8 and ratio_304 >= 1.5
    print(f"\nwindows/bare = {ratio_200:.2f} (target >= 0.80); 304/bare = {ratio_304:.2f} (target >= 1.50): "
          + ("targets met" if ok else "TARGET MISSED"))
    return 0 if ok else 1




def seed(env: dict[str, str]) -> str:
    """Migrate and publish 500 windows through the services, in this process; return the token."""
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    from allocations import services
    from allocations.engine import EngineWindow, Explanation
    from allocations.models import Cluster, GpuPool, SchedulerKind, Team
    from committee import weeks

    call_command("migrate", verbosity=0)
    cluster = Cluster.objects.create(slug="bench", name="Bench", scheduler_kind=SchedulerKind.SLURM)
    pools = {
        f"bench/{slug}": GpuPool.objects.create(cluster=cluster, slug=slug, gpu_model=slug.upper(), gpu_count=4096,
                                                 gpus_per_node=8, scheduler_label=slug)
        for slug in ("a100", "h100")
    }
    teams = [Team.objects.create(name=f"Team {i}", slug=f"team-{i}") for i in range(20)]
    start, end = weeks.week_bounds(WEEK)
    windows, explanations, owners = [], [], {}
    for ref in range(1, WINDOWS + 1):
        begin = (ref * 7) % 120
        windows.append(EngineWindow(ref=ref, pool="bench/a100" if ref % 3 else "bench/h100", gpu_count=8 + ref % 24,
                                    start=start + timedelta(hours=begin),
                                    end=start + timedelta(hours=begin + 24 + ref % 24), tier="standard"))
        explanations.append(Explanation(ref=ref, placed=True, shortened=False, reasons=()))
        owners[ref] = teams[ref % len(teams)]
    services.plan_publish(week=WEEK, week_starts_at=start, week_ends_at=end, source_ref="bench", windows=windows,
                          explanations=explanations, pools=pools, teams=owners, published_by_name="bench")
    return services.scheduler_client_create(cluster=cluster, name=TOKEN_NAME).token






def preflight(base: str, windows_url: str, auth: str) -> tuple[str, dict[str, int]]:
    """Each scenario answers what it should before it is loaded; returns the ETag and body sizes."""
    with urllib.request.urlopen(f"{base}/bench/bare-windows/?cluster=bench&week={WEEK}") as response:  # noqa: S310
        bare = response.read()
    assert len(json.loads(bare)["results"]) == WINDOWS
    request = urllib.request.Request(windows_url, headers={"Authorization": auth})  # noqa: S310
    with urllib.request.urlopen(request) as response:  # noqa: S310
        body, etag = response.read(), response.headers["ETag"]
    page = json.loads(body)
    assert len(page["results"]) == WINDOWS and page["next"] is None and etag
    bare_page = json.loads(bare)
    assert set(bare_page) == set(page), f"the bare view's envelope differs: {set(bare_page) ^ set(page)}"
    bare_keys = set(bare_page["results"][0])
    assert bare_keys == set(page["results"][0]), f"the bare view's keys differ: {bare_keys ^ set(page['results'][0])}"
    same = ("count", "cursor", "plan_version", "results", "commitments")
    assert all(bare_page[key] == page[key] for key in same), "the bare view's values differ from the API's"
    conditional = urllib.request.Request(  # noqa: S310
        windows_url, headers={"Authorization": auth, "If-None-Match": etag}
    )
    try:
        urllib.request.urlopen(conditional)  # noqa: S310
    except urllib.error.HTTPError as exc:
        assert exc.code == 304, exc.code
    else:
        raise AssertionError("If-None-Match with the current ETag did not answer 304")
    return etag, {"bare": len(bare), "windows": len(body)}


def workers_cpu_seconds(master: int) -> float:
    """The CPU (user + system) gunicorn's workers have used so far: the children of its master, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    total = 0.0
    for child in children:
        fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14 and 15 of stat)
    return total


def run_wrk(url: str, headers: list[str], *, duration: int, connections: int) -> tuple[float, int]:
    """wrk's requests/s and its count of requests."""
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--timeout", "10s"]
    for header in headers:
        argv += ["-H", header]
    out = subprocess.run([*argv, url], capture_output=True, text=True, check=True, timeout=duration + 30).stdout
    errors = [line.strip() for line in out.splitlines() if "Non-2xx" in line or "Socket errors" in line]
    if errors:
        print(f"warning: {url}: {'; '.join(errors)}", file=sys.stderr)
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    count = re.search(r"(\d+) requests in", out)
    if not match or not count:
        raise SystemExit(f"could not read wrk's output:\n{out}")
    return float(match.group(1)), int(count.group(1))




if __name__ == "__main__":
    sys.exit(main())
