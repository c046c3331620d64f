"""Issue 13 item 4, Slurm carries the tiers: a standard window is the team account's GPU quota
(a QOS with GrpTRES=gres/gpu=N, applied at the window's start, removed at its end), preemptible
work runs in the scavenger QOS that the quota QOS preempts, a priority window stays a
reservation (test_slurm_sync.py).

Against the shared accounting lab (tests/allocations/slurm_accounting_lab.py, one per pytest process: real
slurmctld, slurmdbd, MariaDB and slurmd on fake GPUs; node gpu1 with 64 A100, gpu2 with 16
H100; PreemptType=preempt/qos, AccountingStorageEnforce=associations,limits,qos,safe). The sync
runs in this process with an explicit `now`: QOS have no times of their own, so nothing in
Slurm depends on the instant the windows are built from (FIXED_NOW). The end-to-end test
at the bottom runs the real CLI against the real API on the machine's clock.
"""

from __future__ import annotations

import io
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from allocations import services
from allocations.models import ClusterAccount, Department, Team, WindowSyncStatus
from committee import weeks
from docket_scheduler.base import DesiredCommitment, DesiredWindow, RemovalGuard, SyncState, SyncStatus, Withdrawal
from docket_scheduler.client import DocketClient, poll
from docket_scheduler.slurm_commands import SlurmConfig, parse_config
from docket_scheduler.slurm_qos import QosSettings, quota_desire
from docket_scheduler.slurm_sync import SlurmSync, main
from tests.allocations.plans import W, publish
from tests.allocations.slurm_accounting_lab import (  # noqa: F401  (fixtures)
    LabError,
    SlurmLab,
    clean_slurm_lab,
    slurm_lab,
)
from tests.clock import FIXED_NOW, machine_now
from tests.scheduler_programs import program, program_env

REPO = Path(__file__).resolve().parents[2]
HOUR = timedelta(hours=1)
QUOTA_QOS = "docket-team-a-acct"
ACCOUNTING = SlurmConfig("lab", "accounting_storage/slurmdbd", frozenset({"associations", "limits", "qos"}),
                         "preempt/qos")


def window(window_id: int, *, tier: str = "standard", account: str | None = "team-a-acct", gpus: int = 4,
           start: datetime = FIXED_NOW - HOUR, end: datetime = FIXED_NOW + 2 * HOUR) -> DesiredWindow:
    """A window of the lab's A100 pool, active at FIXED_NOW unless told otherwise."""
    return DesiredWindow(
        id=window_id, plan_version=1, cluster="lab", pool="a100", gpu_model="A100", scheduler_label="a100",
        gpu_count=gpus, gpus_per_node=64, start=start, end=end, team="team-a", account=account, tier=tier,
        request_id=None,
    )


# --- pure: what the QOS side should hold ---------------------------------------------------------


def test_quota_sums_the_accounts_active_standard_windows_only() -> None:
    desire = quota_desire(
        [window(1, gpus=4), window(2, gpus=2), window(3, gpus=8, start=FIXED_NOW + HOUR),
         window(4, tier="preemptible", account="team-b-acct", gpus=16), window(5, end=FIXED_NOW - HOUR / 2,
                                                                                start=FIXED_NOW - HOUR)],
        FIXED_NOW, ACCOUNTING,
    )

    assert desire.quotas == {"team-a-acct": 6}  # 3 starts later, 4 is preemptible, 5 has ended
    assert desire.scavenger_accounts == {"team-a-acct", "team-b-acct"}
    assert desire.reports == {5: (SyncState.IN_SYNC, "window has ended; no quota")}


def test_quota_needs_accounting_and_preemptible_work_needs_preempt_qos() -> None:
    config = parse_config("ClusterName = atlas\nAccountingStorageType   = (null)\nPreemptType = preempt/none\n")
    no_preempt = SlurmConfig("lab", ACCOUNTING.accounting_type, ACCOUNTING.enforce, "preempt/none")
    no_limits = SlurmConfig("lab", ACCOUNTING.accounting_type, frozenset({"associations"}), "preempt/qos")

    without_accounting = quota_desire([window(1)], FIXED_NOW, config)
    assert without_accounting.quotas == {}
    state, message = without_accounting.reports[1]
    assert state is SyncState.FAILED
    assert message.startswith("accounting is needed for quotas")
    assert "--reservations-only" in message
    assert quota_desire([window(1)], FIXED_NOW, no_limits).reports[1][1].startswith(
        "AccountingStorageEnforce lacks limits,qos")
    preemptible = quota_desire([window(1), window(2, tier="preemptible")], FIXED_NOW, no_preempt)
    assert preemptible.quotas == {"team-a-acct": 4}
    assert preemptible.reports[2][1].startswith("PreemptType=preempt/qos is needed")


def test_account_or_qos_names_sacctmgr_would_misread_change_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    desire = quota_desire([window(1, account="team-a set DefaultQOS=x"), window(2, account="a,b")],
                          FIXED_NOW, ACCOUNTING)

    assert desire.quotas == {} and desire.scavenger_accounts == frozenset()
    assert desire.reports[1] == (SyncState.FAILED, "'team-a set DefaultQOS=x' is not a Slurm account name")
    assert desire.reports[2][0] is SyncState.FAILED
    with pytest.raises(SystemExit) as refused:
        main(["--url", "http://127.0.0.1:9", "--token", "t", "--cluster", "lab", "--scavenger-qos", "a,b"])
    assert refused.value.code == 2
    assert "'a,b' is not a QOS name" in capsys.readouterr().err


# --- against the accounting lab ------------------------------------------------------------------


def qos_state(lab: SlurmLab) -> tuple[str, str]:
    """Every QOS and association as sacctmgr shows them: what a second sync must leave alone."""
    return (lab.run("sacctmgr", "-P", "-n", "show", "qos", "format=name,grptres,preempt,preemptmode").stdout,
            lab.run("sacctmgr", "-P", "-n", "show", "assoc", "format=account,user,qos,defaultqos").stdout)


def account_qos(lab: SlurmLab, account: str) -> tuple[set[str], str]:
    """The QOS an account's jobs may use, and their default."""
    for line in lab.run("sacctmgr", "-P", "-n", "show", "assoc", "where", f"account={account}",
                        "format=user,qos,defaultqos").stdout.splitlines():
        user, qos, default = line.split("|")
        if not user:
            return set(filter(None, qos.split(","))), default
    raise AssertionError(f"no association for {account}")


@pytest.fixture
def lab(clean_slurm_lab: SlurmLab) -> Iterator[SlurmLab]:  # noqa: F811  (the fixture)
    """The module's lab with no job and none of the QOS a sync creates (the operator's baseline:
    every account may use `normal`, no default QOS)."""
    yield clean_slurm_lab
    clean_slurm_lab.cancel_all()
    # One sacctmgr for all the accounts: every call costs about 0.4 s (slurmdbd round trips).
    clean_slurm_lab.sacctmgr("modify", "account", "where", f"name={','.join(clean_slurm_lab.accounts)}", "set",
                             "QOS=normal", "DefaultQOS=-1")
    clean_slurm_lab.sacctmgr("delete", "qos", "where", "name=docket-team-a-acct,docket-team-b-acct,scavenger",
                             check=False)


def sync(lab: SlurmLab, windows: list[DesiredWindow], now: datetime = FIXED_NOW, *,
         dry_run: bool = False, guard: RemovalGuard | None = None, commitments: list[DesiredCommitment] | None = None,
         **options: Any) -> tuple[list[SyncStatus], str, SlurmSync]:
    out = io.StringIO()
    adapter = SlurmSync(env=lab.env, out=out, **options)
    statuses = adapter.sync(windows, now=now, dry_run=dry_run, guard=guard, commitments=commitments or ())
    return statuses, out.getvalue(), adapter


def wait_for(lab: SlurmLab, what: str, check: Callable[[dict[str, dict[str, str]]], bool],
             timeout: float = 30) -> dict[str, dict[str, str]]:
    """Poll squeue (rows by job id) until `check` holds; the scheduler runs every 2 s here."""
    deadline = time.monotonic() + timeout
    while True:
        queue = {row["JobID"]: row for row in lab.squeue()}
        if check(queue):
            return queue
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not within {timeout:.0f} s: {queue}")
        time.sleep(0.1)


def state(queue: dict[str, dict[str, str]], job: int) -> tuple[str, str]:
    row = queue.get(str(job), {"State": "GONE", "Reason": ""})
    return row["State"], row["Reason"]


@pytest.mark.slurm
def test_standard_window_is_a_quota_jobs_beyond_it_pend_and_others_use_the_rest(lab: SlurmLab) -> None:
    statuses, out, _adapter = sync(lab, [window(1, gpus=4)])

    [status] = statuses
    assert status.state is SyncState.IN_SYNC, status
    assert "GrpTRES=gres/gpu=4" in status.message and (status.nodes_requested, status.nodes_reserved) == (0, 0)
    assert f"sacctmgr -i add qos {QUOTA_QOS} GrpTRES=gres/gpu=4 Preempt=scavenger" in out
    assert account_qos(lab, "team-a-acct") == ({"normal", "scavenger", QUOTA_QOS}, QUOTA_QOS)

    within = [lab.sbatch("--gres=gpu:a100:2", account="team-a-acct", wrap="sleep 60") for _ in range(2)]
    beyond = lab.sbatch("--gres=gpu:a100:1", account="team-a-acct", wrap="sleep 60")
    # 60 of the 64 A100s are idle: the only reason left for the job beyond the quota to wait is the quota.
    wait_for(lab, "two jobs within the quota running and the one beyond it held by the quota", lambda q: all(
        state(q, job)[0] == "RUNNING" for job in within) and state(q, beyond) == ("PENDING", "QOSGrpGRES"))

    # The quota is not a hold: another team runs on the GPUs team A does not use, and team A
    # itself goes beyond its quota only as preemptible work.
    other = lab.sbatch("--gres=gpu:a100:32", account="team-b-acct", wrap="sleep 60")
    extra = lab.sbatch("--gres=gpu:a100:8", "--qos=scavenger", account="team-a-acct", wrap="sleep 60")
    wait_for(lab, "team B and team A's scavenger job running",
             lambda q: state(q, other)[0] == "RUNNING" and state(q, extra)[0] == "RUNNING")

    # A second sync reads, changes nothing, and reports the same.
    before = qos_state(lab)
    again, out, _adapter = sync(lab, [window(1, gpus=4)])
    assert again == statuses
    assert "sacctmgr -i" not in out
    assert qos_state(lab) == before


@pytest.mark.slurm
def test_scavenger_job_is_preempted_when_the_owner_needs_its_gpus(lab: SlurmLab) -> None:
    statuses, _out, _adapter = sync(lab, [window(1, gpus=4), window(2, tier="preemptible", account="team-b-acct")])
    assert [s.state for s in statuses] == [SyncState.IN_SYNC, SyncState.IN_SYNC], statuses
    assert statuses[1].message.startswith("preemptible: account team-b-acct runs in QOS scavenger")
    assert account_qos(lab, "team-b-acct")[0] == {"normal", "scavenger"}

    victim = lab.sbatch("-w", "gpu2", "--gres=gpu:h100:16", "--qos=scavenger", account="team-b-acct",
                        wrap="sleep 120")
    wait_for(lab, "the scavenger job on every H100", lambda q: state(q, victim)[0] == "RUNNING")
    started = time.monotonic()
    owner = lab.sbatch("--gres=gpu:h100:2", account="team-a-acct", wrap="sleep 30")

    queue = wait_for(lab, "the owner's job running", lambda q: state(q, owner)[0] == "RUNNING")
    took = time.monotonic() - started
    # Requeued (the scavenger QOS's PreemptMode): back to pending, not before its begin time.
    assert state(queue, victim) == ("PENDING", "BeginTime"), queue
    assert "PREEMPTED" in [row["State"] for row in lab.sacct("JobID", "State", jobs=[victim])]
    print(f"owner's job running {took:.1f} s after submit, scavenger job requeued")


@pytest.mark.slurm
def test_quota_is_applied_at_the_windows_start_and_removed_at_its_end(lab: SlurmLab) -> None:
    start, end = FIXED_NOW + HOUR, FIXED_NOW + 3 * HOUR
    planned = [window(1, gpus=4, start=start, end=end)]

    [status], out, adapter = sync(lab, planned)
    assert status.state is SyncState.IN_SYNC
    assert status.message.startswith("not started: account team-a-acct gets a quota of 4 GPUs")
    assert QUOTA_QOS not in qos_state(lab)[0]
    assert adapter.next_boundary == start  # the poll loop runs a full pass then

    [status], out, adapter = sync(lab, planned, now=start)
    assert status.message.startswith("quota: account team-a-acct runs up to 4 GPUs")
    assert f"{QUOTA_QOS}|gres/gpu=4|scavenger" in qos_state(lab)[0]
    assert adapter.next_boundary == end

    [status], out, adapter = sync(lab, planned, now=end)
    assert (status.state, status.message) == (SyncState.IN_SYNC, "window has ended; no quota")
    assert f"delete qos where name={QUOTA_QOS}" in out
    assert QUOTA_QOS not in qos_state(lab)[0]
    qos, default = account_qos(lab, "team-a-acct")
    assert QUOTA_QOS not in qos and default == ""
    with pytest.raises(LabError, match="Invalid qos specification"):
        lab.sbatch(f"--qos={QUOTA_QOS}", "--gres=gpu:a100:1", account="team-a-acct")
    # Past its window the team is back to the operator's baseline: no quota holds it.
    free = lab.sbatch("--gres=gpu:a100:8", account="team-a-acct", wrap="sleep 30")
    wait_for(lab, "team A's 8-GPU job running", lambda q: state(q, free)[0] == "RUNNING")
    assert adapter.next_boundary is None


@pytest.mark.slurm
def test_two_windows_of_one_account_add_up_and_a_withdrawn_one_gives_its_gpus_back(lab: SlurmLab) -> None:
    statuses, _out, _adapter = sync(lab, [window(1, gpus=4), window(2, gpus=2)])
    assert all(s.state is SyncState.IN_SYNC for s in statuses)
    assert "(the account's active standard windows: 6 GPUs in all)" in statuses[0].message
    assert f"{QUOTA_QOS}|gres/gpu=6|scavenger" in qos_state(lab)[0]

    [status], out, _adapter = sync(lab, [window(1, gpus=4)])

    assert f"modify qos where name={QUOTA_QOS} set GrpTRES=gres/gpu=4" in out
    assert f"{QUOTA_QOS}|gres/gpu=4|scavenger" in qos_state(lab)[0]
    assert status.state is SyncState.IN_SYNC


@pytest.mark.slurm
def test_a_quota_in_force_is_not_removed_by_a_list_without_its_window_unless_docket_withdrew_it(lab: SlurmLab) -> None:
    sync(lab, [window(1, gpus=4)])
    described = lab.run("sacctmgr", "-P", "-n", "show", "qos", f"name={QUOTA_QOS}", "format=description").stdout
    # sacctmgr keeps it in lower case
    assert described.strip() == "docket quota of account team-a-acct until 2026-12-02t12:00:00 windows 1"

    # An empty list (no way to ask Docket here): the quota is in force until its window's end, so it stays.
    _statuses, out, adapter = sync(lab, [])
    assert f"{QUOTA_QOS}|gres/gpu=4|scavenger" in qos_state(lab)[0]
    assert "delete qos" not in out and adapter.problems == [f"kept {QUOTA_QOS}: it is live, and Docket does not "
                                                            "say its window was withdrawn (window 1: no Docket to "
                                                            "confirm its withdrawal)"]

    # Docket says a newer plan withdrew window 1: the quota goes.
    _statuses, out, _adapter = sync(lab, [], guard=RemovalGuard(check=lambda _w: (Withdrawal.WITHDRAWN, "withdrawn")))
    assert f"delete qos where name={QUOTA_QOS}" in out and QUOTA_QOS not in qos_state(lab)[0]


@pytest.mark.slurm
def test_a_qos_the_sync_did_not_create_and_an_unknown_account_fail_alone(lab: SlurmLab) -> None:
    lab.sacctmgr("add", "qos", "docket-team-b-acct", "GrpTRES=gres/gpu=1", "Description=the operator's")
    windows = [window(1), window(2, account="team-b-acct"), window(3, account="ghost-acct")]
    before = qos_state(lab)

    dry, plan, _adapter = sync(lab, windows, dry_run=True)
    assert qos_state(lab) == before
    assert f"would run sacctmgr -i add qos {QUOTA_QOS}" in plan

    statuses, _out, _adapter = sync(lab, windows)

    by_window = {s.window: (s.state, s.message) for s in statuses}
    assert by_window[1][0] is SyncState.IN_SYNC
    assert by_window[2] == (SyncState.FAILED, "QOS docket-team-b-acct exists and was not created by Docket "
                                              "(its Description is not ours)")
    assert by_window[3] == (SyncState.FAILED, "account ghost-acct has no association on cluster lab")
    assert "docket-team-b-acct|gres/gpu=1||cluster" in qos_state(lab)[0]  # untouched
    assert account_qos(lab, "team-b-acct") == ({"normal"}, "")
    assert [s.window for s in dry] == [1, 2, 3]

    # Nor does a sync with no window delete it: it is not the sync's.
    sync(lab, [])
    assert "docket-team-b-acct|gres/gpu=1" in qos_state(lab)[0]
    lab.sacctmgr("delete", "qos", "where", "name=docket-team-b-acct")


@pytest.mark.slurm
def test_scavenger_qos_is_created_with_the_operators_preempt_mode_once(lab: SlurmLab) -> None:
    settings = QosSettings(scavenger="Backfill", scavenger_preempt_mode="cancel")
    sync(lab, [window(1, tier="preemptible")], qos=settings)
    assert "backfill|||cancel" in qos_state(lab)[0]

    lab.sacctmgr("modify", "qos", "where", "name=backfill", "set", "PreemptMode=requeue")
    _statuses, out, _adapter = sync(lab, [window(1, tier="preemptible")], qos=settings)

    assert "sacctmgr -i" not in out  # the operator's change stays
    assert "backfill|||requeue" in qos_state(lab)[0]
    lab.sacctmgr("modify", "account", "where", "name=team-a-acct", "set", "QOS=normal")
    lab.sacctmgr("delete", "qos", "where", "name=backfill")


# --- end to end: the published plan, the CLI, the stored statuses --------------------------------


@pytest.mark.slurm
@pytest.mark.django_db(transaction=True)
def test_published_standard_window_becomes_the_quota_and_its_status_is_stored(
    live_server: Any, world: SimpleNamespace, lab: SlurmLab, client: Any
) -> None:
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="team-b-acct")
    # Team A belongs to a department: --department-accounts makes it the account tree (issue 29).
    research = Department.objects.create(name="Research", slug="research", fair_share_weight=3)
    Team.objects.filter(pk=world.team_a.pk).update(department=research)
    token = services.scheduler_client_create(cluster=world.atlas, name="slurm-sync").token
    now = machine_now()  # the CLI and the live server both keep the machine's clock (tests/clock.py)
    week = weeks.current_week_label(now)
    hours = int((now - weeks.week_bounds(week)[0]).total_seconds() // 3600)
    start_h, end_h = max(0, hours - 1), min(hours + 2, 7 * 24)  # active now, within the week
    plan = publish([W(world.a100, world.team_a, 4, start_h, end_h, ref=1),
                    W(world.a100, world.team_b, 8, start_h, end_h, ref=2, tier="preemptible")], week=week)
    quota_window, preemptible_window = plan.windows.get(request_ref=1), plan.windows.get(request_ref=2)

    def run() -> tuple[int, str]:
        result = subprocess.run(
            [*program("docket-slurm-sync"), "--url", live_server.url, "--token", token,
             "--cluster", "atlas", "--once", "--department-accounts"],
            cwd=REPO, env=program_env(lab.env), capture_output=True, text=True, timeout=120, check=False,
        )
        return result.returncode, result.stdout + result.stderr

    try:
        code, out = run()
        assert code == 0, out
        assert "sacctmgr -i add account dept-research cluster=lab parent=root fairshare=3" in out
        assert "sacctmgr -i modify account where name=team-a-acct cluster=lab set parent=dept-research" in out
        tree = lab.run("sacctmgr", "-n", "-P", "show", "assoc", "where", "cluster=lab", "user=",
                       "format=account,parentname,share").stdout
        assert "team-a-acct|dept-research|2" in tree.splitlines() and "dept-research|root|3" in tree.splitlines()
        held_as_quota(lab, world, quota_window, preemptible_window, client, week)
        # A second pass: the tree and the quotas are as Docket says, no sacctmgr write.
        before = qos_state(lab)
        code, out = run()
        assert code == 0, out
        assert qos_state(lab) == before and "sacctmgr -i" not in out
    finally:  # the lab is shared: the flat tree again
        lab.sacctmgr("modify", "account", "where", "name=team-a-acct", "cluster=lab", "set", "parent=root",
                     check=False)
        lab.sacctmgr("delete", "account", "where", "name=dept-research", check=False)


def held_as_quota(lab: SlurmLab, world: SimpleNamespace, quota_window: Any, preemptible_window: Any, client: Any,
                  week: str) -> None:
    """The standard window is the account's quota QOS, its status stored and shown on the windows page."""
    assert f"{QUOTA_QOS}|gres/gpu=4|scavenger" in qos_state(lab)[0]
    stored = {s.window_id: (s.state, s.nodes_requested, s.nodes_reserved, s.message)
              for s in WindowSyncStatus.objects.all()}
    assert stored[quota_window.pk][:3] == ("in_sync", 0, 0)
    assert "GrpTRES=gres/gpu=4" in stored[quota_window.pk][3]
    assert stored[preemptible_window.pk][3].startswith("preemptible: account team-b-acct runs in QOS scavenger")

    client.force_login(world.reviewer)
    page = client.get("/windows/", {"week": week}).content.decode()
    row = re.search(rf'<tr id="window-{quota_window.pk}">(.*?)</tr>', page, re.S)
    assert row and "In sync" in row.group(1) and "GrpTRES=gres/gpu=4" in row.group(1)
    assert "nodes," not in row.group(1)  # a quota holds no nodes


@pytest.mark.slurm
@pytest.mark.django_db(transaction=True)
def test_poll_applies_the_quota_at_the_windows_start_though_the_plan_did_not_change(
    live_server: Any, world: SimpleNamespace, lab: SlurmLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    token = services.scheduler_client_create(cluster=world.atlas, name="slurm-sync").token
    now = machine_now()
    week = weeks.current_week_label(now)
    start_h = int((now - weeks.week_bounds(week)[0]).total_seconds() // 3600) + 1  # the next full hour
    if start_h >= 7 * 24:
        week, start_h = weeks.current_week_label(now + HOUR), 0
    plan = publish([W(world.a100, world.team_a, 4, start_h, start_h + 1, ref=1)], week=week)
    start = plan.windows.get().start
    client = DocketClient(live_server.url, token, "atlas")
    sent: list[str | None] = []  # If-None-Match of each windows request
    real_request = client._request

    def spy(method: str, url: str, *, headers: dict[str, str] | None = None, data: bytes | None = None) -> Any:
        if method == "GET":
            sent.append((headers or {}).get("If-None-Match"))
        return real_request(method, url, headers=headers, data=data)

    monkeypatch.setattr(client, "_request", spy)
    adapter = SlurmSync(env=lab.env, out=io.StringIO())
    instants = iter([now, now + timedelta(seconds=1), start + timedelta(seconds=1)])  # the sync's wall clock

    poll(client, adapter, interval_s=1, resync_s=3600, dry_run=False, passes=3, sleep=lambda _s: None,
         out=io.StringIO(), wall_clock=lambda: next(instants))

    # Pass 1 reads (not started: nothing to apply), pass 2 costs a 304, pass 3 comes after
    # the start and reads everything again instead of trusting the unchanged plan.
    assert sent[0] is None and sent[1] is not None and sent[2] is None, sent
    assert f"{QUOTA_QOS}|gres/gpu=4|scavenger" in qos_state(lab)[0]
    assert adapter.next_boundary == plan.windows.get().end
    stored = WindowSyncStatus.objects.get(window=plan.windows.get())
    assert stored.message.startswith("quota: account team-a-acct runs up to 4 GPUs")


@pytest.mark.slurm
def test_a_runs_quota_holds_across_the_week_boundary_and_goes_at_the_hour_it_is_given_back(lab: SlurmLab) -> None:
    # Team A's two-week run as a standard window: the last 4 hours of 2027-W12 (Sunday 20:00 to 24:00 in Berlin, the
    # week summer time starts: 167 hours), then 2027-W13 committed. Quotas have no times of their own in Slurm: the
    # sync holds what is in force at its `now`, so the boundary is crossed without waiting.
    from dataclasses import replace
    from datetime import UTC
    from zoneinfo import ZoneInfo

    from docket_scheduler.base import parse_commitments

    berlin = ZoneInfo("Europe/Berlin")
    w12, monday = (datetime(2027, 3, day, tzinfo=berlin).astimezone(UTC) for day in (22, 29))
    next_monday = datetime(2027, 4, 5, tzinfo=berlin).astimezone(UTC)
    assert (monday - w12, next_monday - monday) == (timedelta(hours=167), timedelta(hours=168))
    first = replace(window(1, gpus=8, start=monday - 4 * HOUR, end=monday), request_id=204)
    [week2] = parse_commitments([{
        "id": 7, "week": "2027-W13", "cluster": "lab", "pool": "a100", "gpu_count": 8, "start": monday.isoformat(),
        "end": next_monday.isoformat(), "team": "team-a", "account": "team-a-acct", "state": "committed",
        "request_id": 204, "week_of_run": 2, "run_weeks": 2}])

    _statuses, out, _adapter = sync(lab, [first], monday - HOUR, commitments=[week2])
    assert "GrpTRES=gres/gpu=8 " in out
    # Monday 01:00, W13 not published: the committed week holds the same quota, nothing is changed in Slurm.
    _statuses, out, adapter = sync(lab, [first], monday + HOUR, commitments=[week2])
    assert "qos" not in out  # no sacctmgr change at all
    assert adapter.next_boundary == next_monday  # no wake-up at Monday 00:00

    # W13 is published (its window stands for the commitment) and the team gives it back from 10:00 (the week's next
    # plan version ends the window there): the quota holds until that hour, the loop wakes at it, and it goes then.
    hour = monday + 10 * HOUR
    given_back = replace(window(3, gpus=8, start=monday, end=hour), request_id=204)
    _statuses, out, adapter = sync(lab, [given_back], monday + 2 * HOUR, commitments=[week2])
    assert "GrpTRES=gres/gpu=8 " in out and "delete qos" not in out and adapter.next_boundary == hour
    [status], out, _adapter = sync(lab, [given_back], hour, commitments=[week2])
    assert f"delete qos where name={QUOTA_QOS}" in out and QUOTA_QOS not in qos_state(lab)[0]
    assert status.message == "window has ended; no quota"
