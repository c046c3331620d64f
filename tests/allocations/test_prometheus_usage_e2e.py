"""The Prometheus / DCGM usage collector against a real Prometheus and the real usage API.

Docket is pytest-django's `live_server`; the collector runs as its own process
(`docket-prometheus-usage` from the scheduler package, no Django; tests/scheduler_programs.py), as on a monitoring host.

Time: Docket's clock is the suite's (FIXED_NOW, 2026-12-02 10:00 UTC), Prometheus keeps the
machine's. History is therefore written with timestamps relative to FIXED_NOW and loaded with
promtool's backfill before Prometheus starts: Prometheus answers a query_range over any stored
time whatever its own clock says, and Docket accepts the periods because they lie in its past.
The test of a live scrape (a DCGM-style exporter served by the test) lies in Prometheus's time (the
machine's real clock: libfaketime does not reach Go programs), which Docket's frozen clock may place
years away (outside its retention horizon), so that run is a dry run: what the collector would post
is read from its output and checked.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

from allocations.models import ClusterAccount, UsageRecord
from docket_scheduler.prometheus_usage import main
from tests.allocations.plans import W, publish, token_for
from tests.processes import ROOT, wait_until
from tests.prometheus import backfill, prometheus
from tests.scheduler_programs import program, program_env

pytestmark = pytest.mark.django_db(transaction=True)

DAY = datetime(2026, 12, 1, tzinfo=UTC)  # the day before FIXED_NOW, measured in 6-hour periods
STEP = 60  # seconds between samples in the backfilled history, and the collector's step


def series(labels: dict[str, str]) -> str:
    return "DCGM_FI_DEV_GPU_UTIL{" + ",".join(f'{key}="{value}"' for key, value in labels.items()) + "}"


def gpu(index: int, host: str = "n1", model: str = "NVIDIA A100-SXM4-80GB", **extra: str) -> dict[str, str]:
    return {"gpu": str(index), "UUID": f"GPU-{host}-{index}", "modelName": model, "Hostname": host, **extra}


def history() -> str:
    """A day of DCGM samples (one a minute) on the a100 pool's node n1, an H100 node, and a GPU no one holds.

    - team-a (namespace team-a): GPUs 0–3 all day; GPU 0 alternates 100 and 80 % by the minute, GPUs 1–3
      hold 80, 60 and 50 %: a mean of 70 %, 4 GPUs × 6 h = 24 GPU-hours per period.
    - team-b (namespace ml-b, its Slurm account): GPUs 4–5 at 20 % from 06:00 to 12:00, GPU 6 at 50 % from
      09:00 to 10:30: 12 + 1.5 = 13.5 GPU-hours, (12 × 20 + 1.5 × 50) / 13.5 = 23.3 %, in the 06–12 period only.
    - research-x: GPU 7, a namespace no team maps to: skipped.
    - GPU 8 with no namespace (nobody's pod holds it): ignored.
    - team-a on the H100 node: another pool, left out by --selector.
    """
    lines = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    start = int(DAY.timestamp())
    for minute in range(24 * 60):
        at = start + minute * STEP
        hour = minute / 60
        samples = [
            (gpu(0, namespace="team-a"), 100 if minute % 2 else 80),
            (gpu(1, namespace="team-a"), 80), (gpu(2, namespace="team-a"), 60), (gpu(3, namespace="team-a"), 50),
            (gpu(7, namespace="research-x"), 99), (gpu(8), 0),
            (gpu(0, host="h1", model="NVIDIA H100 80GB HBM3", namespace="team-a"), 95),
        ]
        if 6 <= hour < 12:
            samples += [(gpu(4, namespace="ml-b"), 20), (gpu(5, namespace="ml-b"), 20)]
        if 9 <= hour < 10.5:
            samples.append((gpu(6, namespace="ml-b"), 50))
        lines += [f"{series(labels)} {value} {at}" for labels, value in samples]
    return "\n".join(lines) + "\n# EOF\n"


def collect(*args: str, token: str, url: str) -> tuple[int, str]:
    """One run of the collector in its own process; (exit code, what it printed)."""
    result = subprocess.run(
        [*program("docket-prometheus-usage"), "--url", url, "--cluster", "atlas", "--pool", "a100", *args],
        cwd=ROOT, env=program_env({"PATH": "/usr/bin:/bin", "DOCKET_TOKEN": token}),
        capture_output=True, text=True, timeout=120, check=False,
    )
    return result.returncode, result.stdout + result.stderr


def stored() -> set[tuple[str, datetime, datetime, Decimal, Decimal]]:
    return {(r.team.slug, r.period_start, r.period_end, r.gpu_hours_used, r.mean_utilization_pct)
            for r in UsageRecord.objects.select_related("team")}


def test_the_collector_posts_what_prometheus_measured_per_team_and_period(world, live_server, history_prometheus):
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a")
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="ml-b")
    # team-b's window this week: how --team-accounts finds ml-b, and the window its report names.
    plan = publish([W(world.a100, world.team_b, 8, 0, 24 * 7, ref=1)])
    window = plan.windows.get()
    token = token_for(world.atlas, "prometheus-usage")
    args = ("--prometheus", history_prometheus, "--team-map", "team-a=team-a", "--team-accounts",
            "--selector", 'modelName=~".*A100.*"', "--period", str(6 * 3600), "--step", str(STEP),
            "--since", DAY.isoformat(), "--until", (DAY + timedelta(days=1)).isoformat())

    code, output = collect(*args, token=token, url=live_server.url)

    assert code == 0, output
    periods = [(DAY + timedelta(hours=h), DAY + timedelta(hours=h + 6)) for h in (0, 6, 12, 18)]
    team_a = {("team-a", start, end, Decimal("24.00"), Decimal("70.0")) for start, end in periods}
    team_b = {("team-b", periods[1][0], periods[1][1], Decimal("13.50"), Decimal("23.3"))}
    assert stored() == team_a | team_b, output
    assert "skipped namespace=research-x: it maps to no Docket team" in output
    assert UsageRecord.objects.get(team=world.team_b).window == window
    assert not UsageRecord.objects.filter(team=world.team_a, window__isnull=False).exists()  # team-a has none
    assert f"team-b in window {window.pk} (namespace=ml-b)" in output
    assert "5 stored, 0 already stored, 0 refused" in output
    keys = set(UsageRecord.objects.values_list("idempotency_key", flat=True))
    assert "prom-atlas-a100-team-b-20261201T060000Z-20261201T120000Z" in keys

    # Twice over the same time: the same keys, nothing new.
    code, output = collect(*args, token=token, url=live_server.url)
    assert code == 0, output
    assert "0 stored, 5 already stored, 0 refused" in output
    assert stored() == team_a | team_b


def test_a_report_docket_refuses_is_printed_with_its_reason_and_nothing_else_changes(
        world, live_server, history_prometheus):
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a")
    token = token_for(world.atlas, "prometheus-usage")
    window = ("--since", (DAY + timedelta(hours=6)).isoformat(), "--until", (DAY + timedelta(hours=12)).isoformat(),
              "--period", str(6 * 3600), "--prometheus", history_prometheus, "--selector", 'modelName=~".*A100.*"')
    # team-b has no account on atlas and no window on a100: Docket refuses its report, team-a's is stored.
    code, output = collect(*window, "--team-map", "team-a=team-a", "--team-map", "ml-b=team-b", token=token,
                           url=live_server.url)
    assert code == 1, output
    assert "refused 2026-12-01 06:00–2026-12-01 12:00 team-b" in output
    assert "no account on cluster atlas and no window on pool a100" in output
    assert stored() == {("team-a", DAY + timedelta(hours=6), DAY + timedelta(hours=12), Decimal("24.00"),
                         Decimal("70.0"))}
    # The unmapped GPU mapped to team-a too: the same key for other numbers is a conflict, and nothing changes.
    code, output = collect(*window, "--team-map", "team-a=team-a", "--team-map", "research-x=team-a", token=token,
                           url=live_server.url)
    assert code == 1 and "HTTP 409" in output, output
    assert [str(r.gpu_hours_used) for r in UsageRecord.objects.all()] == ["24.00"]


def test_a_dry_run_prints_the_reports_and_posts_nothing(world, live_server, history_prometheus):
    code, output = collect("--prometheus", history_prometheus, "--team-map", "team-a=team-a", "--period", "3600",
                           "--since", (DAY + timedelta(hours=9)).isoformat(),
                           "--until", (DAY + timedelta(hours=10)).isoformat(), "--dry-run", "--no-windows",
                           token="unused",
                           url=live_server.url)
    assert code == 0, output
    match = re.search(r"^would post .*?: (\{.*\})$", output, re.M)
    assert match, output
    body = json.loads(match[1])
    # Without --selector the H100 node's team-a GPU counts too: 5 GPUs, (70 × 4 + 95) / 5 = 75 %.
    assert body["gpu_hours_used"] == "5.00" and body["mean_utilization_pct"] == "75.0"
    assert not UsageRecord.objects.exists()


def test_without_since_and_until_it_reports_the_last_period_complete_before_the_delay(history_prometheus):
    out = io.StringIO()
    code = main(["--url", "http://127.0.0.1:9", "--token", "unused", "--cluster", "atlas", "--pool", "a100",
                 "--prometheus", history_prometheus, "--team-map", "team-a=team-a", "--selector",
                 'modelName=~".*A100.*"', "--dry-run", "--no-windows"], out=out,
                now=DAY + timedelta(hours=7, minutes=1))
    assert code == 0, out.getvalue()
    # 07:01 less the 2-minute delay is 06:59: the last complete hour is 05:00–06:00.
    reports = [json.loads(line.split(": ", 2)[2]) for line in out.getvalue().splitlines()
               if line.startswith("would post")]
    assert [(r["period_start"], r["period_end"], r["gpu_hours_used"]) for r in reports] == [
        ("2026-12-01T05:00:00Z", "2026-12-01T06:00:00Z", "4.00")]


# --- a live scrape of a DCGM-style exporter ------------------------------------------------------

LIVE = {  # (namespace, utilization %) per GPU index
    0: ("team-a", 90.0), 1: ("team-a", 80.0), 2: ("team-a", 60.0), 3: ("team-a", 50.0), 4: ("team-b", 30.0),
}


class DcgmExporter(BaseHTTPRequestHandler):
    """What dcgm-exporter serves, for the GPUs in LIVE (text exposition format 0.0.4)."""

    def do_GET(self) -> None:
        lines = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
        lines += [f"{series(gpu(index, namespace=ns, pod=f'train-{ns}-0'))} {util}" for index, (ns, util)
                  in LIVE.items()]
        body = ("\n".join(lines) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """One Prometheus for the module: the day of history backfilled before it starts, and a live scrape every second
    of a DCGM-style exporter served here (started first, so the scrapes run while the history tests do)."""
    exporter = ThreadingHTTPServer(("127.0.0.1", 0), DcgmExporter)
    threading.Thread(target=exporter.serve_forever, daemon=True).start()
    folder = tmp_path_factory.mktemp("prometheus")
    backfill(history(), folder / "data")
    config = ("global: {scrape_interval: 1s, scrape_timeout: 1s}\nscrape_configs:\n  - job_name: dcgm\n"
              f"    static_configs: [{{targets: ['127.0.0.1:{exporter.server_address[1]}']}}]\n")
    try:
        with prometheus(folder, config) as server:
            yield SimpleNamespace(server=server, exporter=exporter)
    finally:
        exporter.shutdown()
        exporter.server_close()


@pytest.fixture
def history_prometheus(lab: SimpleNamespace) -> str:
    return lab.server.url


def test_the_collector_reads_a_live_scrape_of_a_dcgm_exporter(lab: SimpleNamespace, live_server):
    server = lab.server
    # The first sample is queryable 5 to 6 s after the start (target discovery is batched).
    wait_until(lambda: server.value("count(DCGM_FI_DEV_GPU_UTIL)") == len(LIVE), timeout=40,
               what="the exporter's GPUs in Prometheus", interval=0.5)
    # A whole 10-second period after the first sample, on Prometheus's clock (it stamps each sample as its scrape
    # starts; under `make test-at` the test's machine clock is shifted and Prometheus's is not), ended over a second ago
    # (its last scrape stored): the latest one, or the first once it is over.
    first_stamp = server.value("max(timestamp(DCGM_FI_DEV_GPU_UTIL))")
    assert first_stamp is not None
    first = (int(first_stamp) // 10 + 1) * 10
    latest = (int(server.now() - 1.5) // 10 - 1) * 10
    since = datetime.fromtimestamp(max(first, latest), UTC)
    until = since + timedelta(seconds=10)
    wait_until(lambda: server.now() >= until.timestamp() + 1.5, timeout=30,
               what=f"the period {since:%H:%M:%S}-{until:%H:%M:%S} over", interval=0.2)
    code, output = collect("--prometheus", server.url, "--team-map", "team-a=team-a",
                           "--team-map", "team-b=team-b", "--period", "10", "--step", "5",
                           "--since", since.isoformat(), "--until", until.isoformat(), "--dry-run",
                           "--no-windows", token="unused", url=live_server.url)
    assert code == 0, output
    lines = {match["team"]: match for match in re.finditer(
        r"^would post .*? (?P<team>\S+) \(namespace=.*?\((?P<seconds>\d+) GPU-seconds\) .*?: (?P<body>\{.*\})$", output,
        re.M)}
    assert set(lines) == {"team-a", "team-b"}, output
    bodies = {team: json.loads(match["body"]) for team, match in lines.items()}
    # Scraped every second, each 5-s step holds a sample of every GPU: 4 GPUs × 10 s and 1 GPU × 10 s.
    assert lines["team-a"]["seconds"] == "40" and lines["team-b"]["seconds"] == "10", output
    assert bodies["team-a"]["mean_utilization_pct"] == "70.0" and bodies["team-a"]["gpu_hours_used"] == "0.01"
    assert bodies["team-b"]["mean_utilization_pct"] == "30.0" and bodies["team-b"]["gpu_hours_used"] == "0.00"
    assert bodies["team-a"]["period_start"] == since.isoformat().replace("+00:00", "Z")
