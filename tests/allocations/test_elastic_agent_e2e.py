"""The elastic agent against the real components: Slurm's accounting lab (fake GPUs, real jobs, real preemption),
a Prometheus with a backfilled DCGM series, and Docket (pytest-django's `live_server`).

Time: Docket's clock is the suite's (FIXED_NOW, 10:00 UTC); the agent runs as its own process, one tick at a time at
a pinned minute (`--now`), over the series backfilled with timestamps around FIXED_NOW (Prometheus answers a range
query over any stored time). No real minute is waited: the lending follows the series' minutes, the preemption is
Slurm's, in seconds.

The series (one sample a minute): team A's 8 GPUs at 80 % until 09:50, then only GPU 0 at 80 % (10 % of its 8-GPU
window busy) until 09:57, then all 8 at 90 %.
"""

from __future__ import annotations

import io
import json
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.conf import settings
from django.test import Client

from allocations import selectors as allocation_selectors
from allocations.emergency import EmergencyPlacement, emergency_place
from allocations.engine import EngineWindow
from allocations.models import AgentAction, ClusterAccount
from committee import services, weeks
from docket_scheduler.client import DocketClient
from docket_scheduler.slurm_sync import SlurmSync
from tests.allocations.plans import W, publish, token_for, week_start
from tests.allocations.slurm_accounting_lab import (  # noqa: F401  (fixtures)
    SlurmLab,
    clean_slurm_lab,
    slurm_lab,
)
from tests.clock import FIXED_NOW, machine_now
from tests.processes import ROOT, free_port
from tests.prometheus import PrometheusServer, backfill, prometheus
from tests.scheduler_programs import program, program_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slurm]

IDLE_FROM, BUSY_FROM = FIXED_NOW - timedelta(minutes=10), FIXED_NOW - timedelta(minutes=3)


def history() -> str:
    lines = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    start = FIXED_NOW - timedelta(hours=1)
    for minute in range(70):
        at = start + timedelta(minutes=minute)
        busy = range(8) if not IDLE_FROM <= at < BUSY_FROM else range(1)
        value = 90 if at >= BUSY_FROM else 80
        lines += [f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",Hostname="gpu1",namespace="team-a",modelName="A100"}} '
                  f"{value} {int(at.timestamp())}" for g in busy]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def dcgm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    folder = tmp_path_factory.mktemp("prometheus-elastic")
    backfill(history(), folder / "data")
    with prometheus(folder, "global: {scrape_interval: 1h}\n") as server:
        yield server


@pytest.fixture
def lab(clean_slurm_lab: SlurmLab) -> Iterator[SlurmLab]:  # noqa: F811  (the fixture)
    """The lab with the QOS the sync creates removed afterwards (the operator's baseline, as test_slurm_tiers)."""
    yield clean_slurm_lab
    clean_slurm_lab.cancel_all()
    clean_slurm_lab.sacctmgr("modify", "account", "where", f"name={','.join(clean_slurm_lab.accounts)}", "set",
                             "QOS=normal", "DefaultQOS=-1")
    clean_slurm_lab.sacctmgr("delete", "qos", "where", "name=docket-team-a-acct,docket-team-b-acct,scavenger",
                             check=False)


@pytest.fixture
def docket_at_fixed_now(clock: time_machine.Traveller) -> None:
    """Docket (the world, its windows API) lives in the week of FIXED_NOW, as the agent's minutes and the DCGM series
    do, whatever the machine's day; slurmctld and its jobs keep the machine's clock, which only Slurm compares."""
    clock.move_to(FIXED_NOW)


def agent(lab: SlurmLab, *, url: str, token: str, state: Path, prometheus_url: str | None, now: datetime
          ) -> tuple[int, str]:
    """One tick of `docket-elastic-agent` in its own process at the pinned minute `now` (without a Prometheus: Slurm's
    accounting measures)."""
    measure = ["--prometheus", prometheus_url] if prometheus_url else ["--measure", "slurm"]
    result = subprocess.run(
        [*program("docket-elastic-agent"), "--url", url, "--cluster", "atlas", *measure,
         "--team-map", "team-a=team-a", "--selector", 'a100=modelName="A100"', "--state-file", str(state),
         "--once", "--now", now.isoformat(), "--timeout", "5"],
        cwd=ROOT, env=program_env({**lab.env, "DOCKET_TOKEN": token}), capture_output=True, text=True, timeout=120,
        check=False,
    )
    return result.returncode, result.stdout + result.stderr


def scavenger_limit(lab: SlurmLab) -> str:
    return lab.run("sacctmgr", "-P", "-n", "show", "qos", "where", "name=scavenger", "format=grptres").stdout.strip()


def quota(lab: SlurmLab) -> tuple[str, str]:
    """Team A's quota QOS: its GrpTRES, and the agent's raise as its Description says it (without the lease time)."""
    shown = lab.run("sacctmgr", "-P", "-n", "show", "qos", "where", "name=docket-team-a-acct",
                    "format=grptres,description").stdout.strip()
    tres, _sep, description = shown.partition("|")
    return tres, " ".join(description.split()[-4:-1])


def wait_for(lab: SlurmLab, what: str, check, timeout: float = 30) -> dict[str, dict[str, str]]:
    deadline = time.monotonic() + timeout
    while True:
        queue = {row["JobID"]: row for row in lab.squeue()}
        if check(queue):
            return queue
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not within {timeout:.0f} s: {queue}")
        time.sleep(0.1)


def state_of(queue: dict[str, dict[str, str]], job: int) -> tuple[str, str]:
    row = queue.get(str(job), {"State": "GONE", "Reason": ""})
    return row["State"], row["Reason"]


def test_an_idle_grant_is_lent_after_five_minutes_its_owner_takes_it_back_and_docket_sees_each_action_once(
        docket_at_fixed_now, world, live_server, dcgm, lab, tmp_path):
    version = services.elastic_policy_change(
        actor=world.chair, parameters={"idle_span_minutes": 5, "recent_span_minutes": 10, "night_utilization_pct": 20,
                                       "promote_queue_wait_minutes": 0},
        reason="The committee's policy is written in minutes; on the lab a job's wait is seconds.").number
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="team-b-acct")
    plan = publish([W(world.a100, world.team_a, 8, 0, 24 * 7, ref=1),
                    W(world.a100, world.team_b, 8, 0, 24 * 7, ref=2, tier="preemptible")])
    window = plan.windows.get(team=world.team_a)
    token = token_for(world.atlas, "elastic-agent")
    # What docket-slurm-sync holds: team A's quota QOS (it preempts the scavenger QOS), team B's scavenger access.
    windows = DocketClient(live_server.url, token, "atlas").fetch_windows()
    assert windows is not None
    SlurmSync(env=lab.env, out=io.StringIO()).sync(windows.windows, now=FIXED_NOW, dry_run=False)
    state = tmp_path / "elastic-atlas.json"

    def tick(now: datetime, url: str = live_server.url) -> tuple[int, str]:
        return agent(lab, url=url, token=token, state=state, prometheus_url=dcgm.url, now=now)

    # 09:54: idle for four minutes only. Preemptible work gets what nobody was granted: 64 − 8 − 12 − 6 = 38.
    code, out = tick(FIXED_NOW - timedelta(minutes=5, seconds=30))
    assert code == 0, out
    assert "GrpTRES=gres/gpu:a100=38" in out and scavenger_limit(lab) == "gres/gpu:a100=38"
    assert f"policy v{version}: 0 actions" in out
    borrower = lab.sbatch("--gres=gpu:a100:45", "--qos=scavenger", account="team-b-acct", wrap="sleep 300")
    filler = lab.sbatch("--gres=gpu:a100:19", account="team-b-acct", wrap="sleep 300")
    wait_for(lab, "the borrower held by the scavenger QOS's limit", lambda q: state_of(q, borrower) == (
        "PENDING", "QOSGrpGRES") and state_of(q, filler)[0] == "RUNNING")

    # 09:55, Docket cut off: the agent decides from the policy it kept, lends 7 of the 8 idle GPUs, and keeps the
    # action to report.
    closed = f"http://127.0.0.1:{free_port()}"
    code, out = tick(FIXED_NOW - timedelta(minutes=4, seconds=30), url=closed)
    assert code == 1, out
    assert "Docket not reached" in out
    assert f"policy v{version} (kept: Docket not reached): 1 actions, 0 reported, 1 to report" in out
    assert "lend window" in out and scavenger_limit(lab) == "gres/gpu:a100=45"
    assert not AgentAction.objects.exists()
    wait_for(lab, "the borrower running on the lent GPUs", lambda q: state_of(q, borrower)[0] == "RUNNING")

    # 09:56, Docket back: the kept action is reported, once.
    code, out = tick(FIXED_NOW - timedelta(minutes=3, seconds=30))
    assert code == 0 and "0 actions, 1 reported, 0 to report" in out, out
    [lend] = AgentAction.objects.all()
    assert (lend.kind, lend.window, lend.gpus, str(lend.utilization_pct), lend.span_minutes, lend.policy_version) == (
        "lend", window, 7, "10.0", 5, version)
    assert lend.acted_at == FIXED_NOW - timedelta(minutes=5)  # the minute the span ended: five idle minutes
    assert "GrpTRES=gres/gpu:a100=45" in lend.applied

    # The owner submits within its quota: Slurm preempts the borrower in seconds, whatever the agent does.
    started = time.monotonic()
    owner = lab.sbatch("--gres=gpu:a100:8", account="team-a-acct", wrap="sleep 300")
    queue = wait_for(lab, "the owner's job running", lambda q: state_of(q, owner)[0] == "RUNNING")
    took = time.monotonic() - started
    assert state_of(queue, borrower)[0] == "PENDING", queue
    print(f"owner's job running {took:.1f} s after submit, borrower requeued")

    # The owner needs more than its quota: the next job waits for it (QOSGrpGRES), a second at least by Slurm's clock.
    critical = lab.sbatch("--gres=gpu:a100:4", account="team-a-acct", wrap="sleep 300")
    wait_for(lab, "the owner's next job held by its quota", lambda q: state_of(q, critical) == (
        "PENDING", "QOSGrpGRES"))
    time.sleep(1.1)

    # 09:58: the series shows the owner busy again: the lending is taken back and reported. The pool is hot (its GPUs'
    # mean over the last 10 minutes: 81%) and the owner's job waited longer than the policy's minutes for its quota:
    # the burst reserve (12) raises team A's quota QOS, and the job runs within a minute.
    code, out = tick(FIXED_NOW - timedelta(minutes=1, seconds=30))
    assert code == 0, out
    assert scavenger_limit(lab) == "gres/gpu:a100=38"
    assert quota(lab) == ("gres/gpu=20", "burst 12 lease")
    started = time.monotonic()
    wait_for(lab, "the waiting job running on the burst", lambda q: state_of(q, critical)[0] == "RUNNING", timeout=60)
    print(f"the critical job running {time.monotonic() - started:.1f} s after the burst")
    assert list(AgentAction.objects.order_by("acted_at", "id").values_list("kind", "gpus")) == [
        ("lend", 7), ("reclaim", 7), ("promote", 12)]
    promote = AgentAction.objects.get(kind="promote")
    assert (promote.window, str(promote.utilization_pct), promote.span_minutes, promote.measured_by) == (
        window, "81.0", 10, "prometheus+slurm")
    assert promote.queue_wait_minutes is not None and "GrpTRES=gres/gpu=20" in promote.applied
    kept = json.loads(state.read_text())
    assert kept["lent"] == {} and kept["unreported"] == [] and kept["policy"]["version"] == version
    assert kept["promoted"] == {"team-a-acct": {"account": "team-a-acct", "pool": "a100", "team": "team-a",
                                                "window": window.pk, "gpus": 12}}
    # docket-slurm-sync run again within the agent's lease keeps the raise; the same minute again changes nothing.
    SlurmSync(env=lab.env, out=io.StringIO()).sync(windows.windows, now=FIXED_NOW, dry_run=False)
    assert quota(lab) == ("gres/gpu=20", "burst 12 lease")
    code, out = tick(FIXED_NOW - timedelta(minutes=1, seconds=30))
    assert code == 0 and "0 actions" in out, out

    # The pool's elastic history and the request's page show the agent's actions.
    client = Client()
    client.force_login(world.member_a)
    history = client.get("/archive/dashboards/elastic/atlas/a100/").content.decode()
    assert "Lent to preemptible work" in history and "Taken back for the owner" in history
    assert "10.0% over 5 min (prometheus, policy v" in history


def test_an_emergency_placed_on_the_cold_standby_gets_its_gpus_when_the_agent_wakes_it_five_minutes_ahead(
        docket_at_fixed_now, clock, world, live_server, dcgm, lab, tmp_path):
    """Team A holds 40 of a100's 64 GPUs; the chair's emergency for team B, placed by Docket's own rule at 11:00,
    gets 24: the 18 outside the cold standby and 6 of the standby. The agent wakes the standby five minutes (the
    policy's standby_wake_minutes) before the window starts, and the emergency's job runs within seconds of it."""
    version = 1  # the seed's policy: the standby wakeable within 5 minutes
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="team-b-acct")
    standard = W(world.a100, world.team_a, 40, 0, 24 * 7, ref=1)
    first = publish([standard])
    week = week_start(first.week)
    placed = emergency_place(
        pool=allocation_selectors.pool_capacity(pool=world.a100), week_start=week, hours=24 * 7,
        fixed=[EngineWindow(ref=1, pool=world.a100.key, gpu_count=40, start=week, end=week + timedelta(days=7),
                            tier="standard")],
        ref=2, gpu_count=24, min_gpu_count=24, duration_hours=6, earliest_start=FIXED_NOW + timedelta(minutes=10),
        latest_end=week + timedelta(days=7), use_standby=True)
    assert isinstance(placed, EmergencyPlacement) and placed.standby_gpu_count == 6
    starts = placed.window.start
    assert starts == FIXED_NOW + timedelta(hours=1)
    offset = (starts - week) / timedelta(hours=1)
    plan = publish([standard, W(world.a100, world.team_b, 24, offset, offset + 6, ref=2, tier="preemptible")],
                   source_ref="emergency:1", standby_gpus={2: placed.standby_gpu_count})
    emergency = plan.windows.get(team=world.team_b)
    token = token_for(world.atlas, "elastic-agent")
    clock.move_to(starts - timedelta(minutes=6))  # Docket's clock: the agent's actions lie in its present
    windows = DocketClient(live_server.url, token, "atlas").fetch_windows()
    assert windows is not None
    SlurmSync(env=lab.env, out=io.StringIO()).sync(windows.windows, now=starts, dry_run=False)
    state = tmp_path / "elastic-atlas.json"

    def tick(now: datetime) -> tuple[int, str]:
        return agent(lab, url=live_server.url, token=token, state=state, prometheus_url=dcgm.url, now=now)

    # 10:54: six minutes ahead the standby sleeps: preemptible work gets 64 − 40 − 12 − 6 = 6 GPUs, and the
    # emergency's job waits for the scavenger QOS's limit.
    code, out = tick(starts - timedelta(minutes=5, seconds=30))
    assert code == 0 and scavenger_limit(lab) == "gres/gpu:a100=6", out
    job = lab.sbatch("--gres=gpu:a100:24", "--qos=scavenger", account="team-b-acct", wrap="sleep 300")
    wait_for(lab, "the emergency's job held by the limit", lambda q: state_of(q, job) == ("PENDING", "QOSGrpGRES"))

    # 10:55, five minutes ahead: the standby is woken, the emergency's 24 GPUs are preemptible work's, and it runs.
    clock.move_to(starts - timedelta(minutes=5))
    code, out = tick(starts - timedelta(minutes=4, seconds=30))
    assert code == 0 and "standby_wake window" in out, out
    assert scavenger_limit(lab) == "gres/gpu:a100=24"
    started = time.monotonic()
    wait_for(lab, "the emergency's job running on the woken standby", lambda q: state_of(q, job)[0] == "RUNNING")
    print(f"the emergency's job running {time.monotonic() - started:.1f} s after the wake")
    [wake] = AgentAction.objects.all()
    assert (wake.kind, wake.window, wake.gpus, wake.span_minutes, wake.measured_by, wake.policy_version) == (
        "standby_wake", emergency, 6, 5, "plan", version)
    assert wake.acted_at == starts - timedelta(minutes=5) and "GrpTRES=gres/gpu:a100=24" in wake.applied

    # The emergency's window ends: the standby goes back to rest, reported once.
    ends = emergency.end
    clock.move_to(ends)
    code, out = tick(ends + timedelta(seconds=30))
    assert code == 0 and scavenger_limit(lab) == "gres/gpu:a100=6", out
    assert list(AgentAction.objects.order_by("acted_at").values_list("kind", "gpus")) == [
        ("standby_wake", 6), ("standby_end", 6)]


def test_where_the_site_has_no_prometheus_slurms_accounting_measures_and_the_action_says_so(
        world, live_server, lab, tmp_path):
    """Docket and Slurm on the machine's clock (sacct reads real jobs). Team A holds 8 GPUs and runs one: 12.5 % of
    its grant allocated, under 25 % for the policy's span (one minute here): 7 GPUs lent, measured by sacct. The
    agent's minute is pinned two minutes ahead of the lab's clock once the job runs, so it has run the whole span."""
    version = services.elastic_policy_change(
        actor=world.chair, parameters={"idle_span_minutes": 1, "recent_span_minutes": 1},
        reason="On the lab a minute of accounting is the span.").number
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    now = machine_now()
    week = weeks.current_week_label(now)
    hour = (now - week_start(week)) // timedelta(hours=1)
    publish([W(world.a100, world.team_a, 8, max(0, hour - 1), min(24 * 7, hour + 2), ref=1)], week=week)
    token = token_for(world.atlas, "elastic-agent")
    windows = DocketClient(live_server.url, token, "atlas").fetch_windows()
    assert windows is not None
    SlurmSync(env=lab.env, out=io.StringIO()).sync(windows.windows, now=now, dry_run=False)
    job = lab.sbatch("--gres=gpu:a100:1", account="team-a-acct", wrap="sleep 300")
    wait_for(lab, "team A's job running", lambda q: state_of(q, job)[0] == "RUNNING")

    lab.wait_for_listing([job])  # slurmdbd has its record: what the agent's sacct -S/-E reads

    code, out = agent(lab, url=live_server.url, token=token, state=tmp_path / "elastic.json", prometheus_url=None,
                      now=machine_now() + timedelta(minutes=2))  # the span: a whole minute after the job started
    assert code == 0 and "lend window" in out, out
    assert scavenger_limit(lab) == "gres/gpu:a100=45"  # 64 − 8 − 12 − 6 + 7
    [lend] = AgentAction.objects.all()
    assert (lend.kind, lend.gpus, str(lend.utilization_pct), lend.span_minutes, lend.measured_by,
            lend.policy_version) == ("lend", 7, "12.5", 1, "slurm", version)


def test_a_quiet_grant_opens_to_preemptible_work_for_the_committees_night_and_closes_when_its_owner_wakes(
        docket_at_fixed_now, world, live_server, dcgm, lab, tmp_path):
    """The committee's night set around FIXED_NOW (09:00–11:00 UTC, on its own wall clock), idle lending off: team A's
    window, under the night threshold for the recent span (five minutes here), opens its 7 spare GPUs to the
    scavenger QOS and a borrower runs on them; when the owner's use rises the opening closes. The owner's preemption
    of the borrower is the same QOS mechanism as the idle lending's (the first test)."""
    zone = ZoneInfo(settings.TIME_ZONE)
    version = services.elastic_policy_change(
        actor=world.chair, parameters={
            "idle_span_minutes": 5, "recent_span_minutes": 5, "offer_idle_to_preemptible": False,
            "night_start": (FIXED_NOW - timedelta(hours=1)).astimezone(zone).time(),
            "night_end": (FIXED_NOW + timedelta(hours=1)).astimezone(zone).time(), "night_utilization_pct": 30},
        reason="On the lab the night is the hour the DCGM series was recorded in.").number
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="team-b-acct")
    plan = publish([W(world.a100, world.team_a, 8, 0, 24 * 7, ref=1),
                    W(world.a100, world.team_b, 8, 0, 24 * 7, ref=2, tier="preemptible")])
    window = plan.windows.get(team=world.team_a)
    token = token_for(world.atlas, "elastic-agent")
    windows = DocketClient(live_server.url, token, "atlas").fetch_windows()
    assert windows is not None
    SlurmSync(env=lab.env, out=io.StringIO()).sync(windows.windows, now=FIXED_NOW, dry_run=False)
    state = tmp_path / "elastic-atlas.json"

    def tick(now: datetime) -> tuple[int, str]:
        return agent(lab, url=live_server.url, token=token, state=state, prometheus_url=dcgm.url, now=now)

    # 09:55: five quiet minutes at 10 % in the night: 7 GPUs opened, 38 + 7 for preemptible work.
    code, out = tick(FIXED_NOW - timedelta(minutes=4, seconds=30))
    assert code == 0 and "night_open window" in out and "lend window" not in out, out
    assert scavenger_limit(lab) == "gres/gpu:a100=45"
    borrower = lab.sbatch("--gres=gpu:a100:45", "--qos=scavenger", account="team-b-acct", wrap="sleep 300")
    wait_for(lab, "the borrower running on the night's GPUs", lambda q: state_of(q, borrower)[0] == "RUNNING")

    # 09:58: the owner is busy again (90 %): closed, the limit back to the ungranted 38, each action once.
    code, out = tick(FIXED_NOW - timedelta(minutes=1, seconds=30))
    assert code == 0 and "night_close window" in out, out
    assert scavenger_limit(lab) == "gres/gpu:a100=38"
    assert list(AgentAction.objects.order_by("acted_at").values_list(
        "kind", "window", "gpus", "utilization_pct", "span_minutes", "policy_version")) == [
        ("night_open", window.pk, 7, Decimal("10.0"), 5, version),
        ("night_close", window.pk, 7, Decimal("90.0"), 1, version)]
