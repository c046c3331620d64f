"""Issue 13, the Slurm usage collector end to end: real jobs on fake GPUs, recorded by a real
slurmdbd, read back by `docket-slurm-usage` (tests/scheduler_programs.py) in its own process and posted
to the real usage API of a live Docket; and Slurm's classic fair share against Docket's.

The cluster is the pytest process's shared accounting lab (tests/allocations/slurm_accounting_lab.py),
which `ran` first makes look like a cluster that never ran a job (usage reset, no other account, a
period after every earlier job): accounts team-a-acct and team-b-acct with fair-share shares 2 and 1,
the weights of Team A and Team B. One set of jobs runs once per module (`ran`):

    A1  team-a-acct  gres/gpu:a100:32  sleep 6
    B1  team-b-acct  gres/gpu:a100:48  sleep 4   waits for A1: 32 + 48 > the node's 64 A100s
    A2  team-a-acct  gres/gpu:h100:8   sleep 3

Clock: slurmctld and slurmdbd keep the machine's clock, so these tests are marked `slurm` and
Docket runs on the machine's clock too (tests/conftest.py `clock`), like
test_slurm_sync_e2e.py; every instant is built from `machine_now()`. The usage API refuses
periods that end in its future, which is then the machine's future.

Order matters and is kept by file order (`--dist loadfile` keeps a module on one worker): the
fair-share test compares every top-level account of the cluster, so the test that adds a
foreign account runs last.
"""

from __future__ import annotations

import io
import itertools
import math
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from allocations import services
from allocations.models import AllocationWindow, ClusterAccount, Department, GpuPool, Team, UsageRecord
from committee import scoring, weeks
from committee.selectors.fairshare import fair_share_live
from docket_scheduler.client import DocketClient
from docket_scheduler.slurm_accounts import AccountTreeExecutor, team_places
from docket_scheduler.slurm_commands import SlurmTools
from tests.allocations.plans import W, publish
from tests.allocations.slurm_accounting_lab import (  # noqa: F401  (fixtures)
    CLUSTER,
    SEARCH_PATH,
    USER,
    SlurmLab,
    clean_slurm_lab,
    sacct_time,
    slurm_lab,
    wait_for_clock,
)
from tests.clock import machine_now
from tests.scheduler_programs import program, program_env

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]

REPO = Path(__file__).resolve().parents[2]
SHARES = {"team-a-acct": 2, "team-b-acct": 1}


@dataclass(frozen=True)
class Run:
    """One job run as `sacct -P` (not the collector's JSON) reports it."""

    job_id: int
    account: str
    gpu_type: str
    gpus: int
    submit: datetime
    start: datetime
    end: datetime


@dataclass(frozen=True)
class Ran:
    since: datetime
    until: datetime
    runs: list[Run]
    nominal: dict[int, tuple[str, str, int, int]]  # job id → account, type, GPUs, seconds slept


@pytest.fixture(scope="module")
def ran(slurm_lab: SlurmLab) -> Ran:  # noqa: F811
    """The module's jobs, run once to completion; the period [since, until) holds them whole, and
    no job that ran in the lab before."""
    after_earlier_jobs = slurm_lab.fresh_accounting()
    for account, shares in SHARES.items():
        slurm_lab.sacctmgr("modify", "account", account, "set", f"fairshare={shares}")
    since = max(machine_now().replace(microsecond=0) - timedelta(seconds=1), after_earlier_jobs)
    wait_for_clock(since)
    plan = [("team-a-acct", "a100", 32, 6), ("team-b-acct", "a100", 48, 4), ("team-a-acct", "h100", 8, 3)]
    nominal = {}
    for account, gpu_type, gpus, seconds in plan:
        job = slurm_lab.sbatch(f"--gres=gpu:{gpu_type}:{gpus}", account=account, wrap=f"sleep {seconds}")
        nominal[job] = (account, gpu_type, gpus, seconds)
    states = slurm_lab.wait_for_state(nominal, timeout=90)
    assert set(states.values()) == {"COMPLETED"}, states
    slurm_lab.wait_for_listing(nominal)  # what the collector's sacct -S/-E sees
    until = machine_now().replace(microsecond=0) + timedelta(seconds=1)
    wait_for_clock(until)
    runs = []
    for row in slurm_lab.sacct("JobID", "Account", "AllocTRES", "Submit", "Start", "End", jobs=nominal):
        tres = dict(item.split("=", 1) for item in row["AllocTRES"].split(","))
        (typed,) = [key for key in tres if key.startswith("gres/gpu:")]
        runs.append(Run(int(row["JobID"]), row["Account"], typed.removeprefix("gres/gpu:"), int(tres[typed]),
                        sacct_time(row["Submit"]), sacct_time(row["Start"]), sacct_time(row["End"])))
    return Ran(since=since, until=until, runs=runs, nominal=nominal)


@pytest.fixture
def atlas(world: SimpleNamespace) -> SimpleNamespace:
    """Atlas as its operator sets it up: an H100 pool next to the A100 one, the teams' Slurm
    accounts, a scheduler token in a file for the collector."""
    world.atlas_h100 = GpuPool.objects.create(
        cluster=world.atlas, slug="h100", gpu_model="H100", gpu_count=32, gpus_per_node=8, scheduler_label="h100"
    )
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="team-b-acct")
    world.token = services.scheduler_client_create(cluster=world.atlas, name="slurm-usage").token
    return world


@pytest.fixture
def token_file(atlas: SimpleNamespace, tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(atlas.token + "\n")
    path.chmod(0o600)
    return path


def collect(live_server: Any, lab: SlurmLab, token_file: Path, since: datetime, until: datetime,
            *args: str) -> tuple[int, str]:
    """One run of the real collector in its own process, the only one that sees SLURM_CONF."""
    result = subprocess.run(
        [*program("docket-slurm-usage"), "--docket-url", live_server.url,
         "--token-file", str(token_file), "--cluster", "atlas",
         "--since", since.isoformat(), "--until", until.isoformat(), *args],
        cwd=REPO, env=program_env(lab.env), capture_output=True, text=True, timeout=120, check=False,
    )
    return result.returncode, result.stdout + result.stderr


def stored() -> dict[tuple[str, str], list[UsageRecord]]:
    records: dict[tuple[str, str], list[UsageRecord]] = {}
    for record in UsageRecord.objects.select_related("team", "pool").order_by("period_start"):
        records.setdefault((record.team.slug, record.pool.slug), []).append(record)
    return records


def overlap_s(a: tuple[datetime, datetime], b: tuple[datetime, datetime]) -> float:
    return max(0.0, (min(a[1], b[1]) - max(a[0], b[0])).total_seconds())


def windows_over(atlas: SimpleNamespace, since: datetime, until: datetime) -> dict[str, AllocationWindow]:
    """Team A: 16 A100s over the hours of [since, until); team B: 8 H100s it never uses (a granted,
    idle window). The period lies in one week of the committee's zone."""
    week = weeks.current_week_label(since)
    week_start = weeks.week_bounds(week)[0]

    def hours(moment: datetime) -> float:  # `publish` adds wall-clock hours in the committee's zone
        wall = moment.astimezone(week_start.tzinfo).replace(tzinfo=None)
        return (wall - week_start.replace(tzinfo=None)).total_seconds() / 3600

    first, last = math.floor(hours(since)), math.ceil(hours(until))
    plan = publish([W(atlas.a100, atlas.team_a, 16, first, last, ref=1),
                    W(atlas.atlas_h100, atlas.team_b, 8, first, last, ref=2)], week=week)
    return {"team-a": plan.windows.get(request_ref=1), "team-b": plan.windows.get(request_ref=2)}


def windows_this_hour(atlas: SimpleNamespace, ran: Ran) -> dict[str, AllocationWindow]:
    return windows_over(atlas, ran.since, ran.until)


def test_collector_stores_what_accounting_measured_and_a_rerun_adds_nothing(
    live_server: Any, atlas: SimpleNamespace, token_file: Path, slurm_lab: SlurmLab, ran: Ran  # noqa: F811
) -> None:
    windows = windows_this_hour(atlas, ran)
    period = (ran.since, ran.until)

    # The jobs really ran for about what they slept, on the GPUs they asked for.
    for run in ran.runs:
        account, gpu_type, gpus, seconds = ran.nominal[run.job_id]
        assert (run.account, run.gpu_type, run.gpus) == (account, gpu_type, gpus)
        assert abs((run.end - run.start).total_seconds() - seconds) <= 2
    waited = {run.account: (run.start - run.submit).total_seconds() for run in ran.runs if run.gpu_type == "a100"}
    assert waited["team-b-acct"] >= 3, waited  # B1 queued behind A1

    # A dry run prints the reports and stores nothing.
    code, out = collect(live_server, slurm_lab, token_file, *period, "--dry-run")
    assert code == 0, out
    assert "would report team-a (team-a-acct) on a100" in out
    assert not UsageRecord.objects.exists()

    code, out = collect(live_server, slurm_lab, token_file, *period)
    assert code == 0, out
    records = stored()
    assert set(records) == {("team-a", "a100"), ("team-a", "h100"), ("team-b", "a100"), ("team-b", "h100")}
    for (team, pool), rows in records.items():
        account = f"{team}-acct"
        mine = [run for run in ran.runs if run.account == account and run.gpu_type == pool]
        # Records follow the hour grid and tile the period exactly.
        assert rows[0].period_start == ran.since and rows[-1].period_end == ran.until
        assert all(a.period_end == b.period_start for a, b in itertools.pairwise(rows))
        for row in rows:
            bucket = (row.period_start, row.period_end)
            gpu_s = sum(run.gpus * overlap_s((run.start, run.end), bucket) for run in mine)
            assert abs(float(row.gpu_hours_used) - gpu_s / 3600) <= 0.005 + 1e-9, (team, pool, row.gpu_hours_used)
            starts = [(run.start - run.submit).total_seconds() for run in mine if bucket[0] <= run.start < bucket[1]]
            wait = sum(starts) / len(starts) / 60 if starts else 0.0
            assert abs(float(row.mean_queue_wait_minutes) - wait) <= 0.05 + 1e-9, (team, pool, row)
            assert row.reported_by == "slurm-usage"
            assert row.idempotency_key == (f"slurm:atlas:{account}:{pool}:{row.period_start:%Y%m%dT%H%M%SZ}:"
                                           f"{row.period_end:%Y%m%dT%H%M%SZ}")
            window = windows.get(team)
            if window is not None and window.pool.slug == pool:
                assert row.window_id == window.pk
                granted_s = window.gpu_count * overlap_s((window.start, window.end), bucket)
                assert abs(float(row.mean_utilization_pct) - min(100.0, 100 * gpu_s / granted_s)) <= 0.05 + 1e-9
            else:
                assert row.window_id is None
                assert row.mean_utilization_pct == 100  # used GPUs without any grant
    # The whole period, in GPU-hours: the real elapsed × GPUs of every run.
    for (team, pool), rows in records.items():
        total = sum(float(r.gpu_hours_used) for r in rows)
        real = sum(r.gpus * (r.end - r.start).total_seconds() for r in ran.runs
                   if r.account == f"{team}-acct" and r.gpu_type == pool) / 3600
        assert abs(total - real) <= 0.005 * len(rows) + 1e-9, (team, pool, total, real)
    idle = records[("team-b", "h100")]
    assert [(r.gpu_hours_used, r.mean_utilization_pct, r.window_id) for r in idle] == \
        [(Decimal("0.00"), Decimal("0.0"), windows["team-b"].pk)] * len(idle)

    # A period that starts while A1 runs counts only what falls inside it (sacct lists the job,
    # which started before the period; the collector cuts it).
    a1 = next(r for r in ran.runs if r.account == "team-a-acct" and r.gpu_type == "a100")
    cut = a1.start + timedelta(seconds=3)
    code, out = collect(live_server, slurm_lab, token_file, cut, ran.until, "--dry-run")
    assert code == 0, out
    said = [Decimal(x) for x in re.findall(r"would report team-a \(team-a-acct\) on a100 \S+: ([\d.]+) GPU-h", out)]
    inside = sum(r.gpus * overlap_s((r.start, r.end), (cut, ran.until)) for r in ran.runs
                 if r.account == "team-a-acct" and r.gpu_type == "a100") / 3600
    assert said and abs(float(sum(said)) - inside) <= 0.005 * len(said) + 1e-9, (said, inside)

    # Run again over the same period: the same keys, Docket changes nothing.
    before = list(UsageRecord.objects.order_by("pk").values())
    code, out = collect(live_server, slurm_lab, token_file, *period)
    assert code == 0, out
    assert f"0 reported, {len(before)} already reported, 0 refused" in out
    assert list(UsageRecord.objects.order_by("pk").values()) == before


def test_a_bad_token_is_refused_clearly_and_nothing_is_stored(
    live_server: Any, atlas: SimpleNamespace, tmp_path: Path, slurm_lab: SlurmLab, ran: Ran  # noqa: F811
) -> None:
    bad = tmp_path / "bad-token"
    bad.write_text("dks_" + "0" * 40)

    code, out = collect(live_server, slurm_lab, bad, ran.since, ran.until)

    assert code == 2, out
    assert "usage collection failed" in out and "HTTP 401" in out and "scheduler token" in out
    assert not UsageRecord.objects.exists()


def test_a_period_docket_cannot_hold_is_refused_per_report_and_nothing_is_stored(
    live_server: Any, atlas: SimpleNamespace, token_file: Path, slurm_lab: SlurmLab, ran: Ran  # noqa: F811
) -> None:
    # An hour wholly in the future (the one after next on the UTC grid, whatever the time of day):
    # the windows granted in it give reports (granted, idle), and Docket refuses each (400).
    start = machine_now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=2)
    period = (start, start + timedelta(hours=1))
    windows_over(atlas, *period)

    code, out = collect(live_server, slurm_lab, token_file, *period)

    assert code == 1, out
    assert "refused team-a (team-a-acct) on a100" in out and "refused team-b (team-b-acct) on h100" in out
    assert "The period ends in the future." in out
    assert "0 reported, 0 already reported, 2 refused" in out
    assert not UsageRecord.objects.exists()


def test_numbers_that_changed_since_a_period_was_reported_are_refused_and_the_first_kept(
    live_server: Any, atlas: SimpleNamespace, token_file: Path, slurm_lab: SlurmLab, ran: Ran  # noqa: F811
) -> None:
    # The period was reported before with other numbers (say, before late accounting arrived).
    key = f"slurm:atlas:team-b-acct:a100:{ran.since:%Y%m%dT%H%M%SZ}:"
    code, out = collect(live_server, slurm_lab, token_file, ran.since, ran.until, "--dry-run")
    assert code == 0, out
    hours = [line for line in out.splitlines() if "would report team-b (team-b-acct) on a100" in line]
    first_end = re.search(r"on a100 \S+–(\S+):", hours[0])
    assert first_end is not None
    end = datetime.fromisoformat(first_end.group(1))
    earlier = services.measured_usage_record(
        client=atlas.atlas.scheduler_clients.get(), team_slug="team-b", pool_slug="a100", window_id=None,
        period_start=ran.since, period_end=end, gpu_hours_used=Decimal("0.01"), mean_utilization_pct=Decimal(100),
        mean_queue_wait_minutes=Decimal(0), idempotency_key=key + f"{end:%Y%m%dT%H%M%SZ}",
    ).record

    code, out = collect(live_server, slurm_lab, token_file, ran.since, ran.until)

    assert code == 1, out
    assert "refused team-b (team-b-acct) on a100" in out and "HTTP 409" in out
    assert "1 refused" in out
    stored_b = stored()[("team-b", "a100")]
    assert [r.pk for r in stored_b if r.period_start == ran.since] == [earlier.pk]
    assert stored_b[0].gpu_hours_used == Decimal("0.01")  # the first numbers stay
    assert ("team-a", "a100") in stored()  # the other reports are stored


# --- fair share: sshare's 2^(−U/S) and Docket's factor ---------------------------------------------


def settled_sshare(lab: SlurmLab, ran: Ran, timeout: float = 60) -> dict[str, dict[str, str]]:
    """The accounts' sshare rows once the controller's priority pass has counted the module's jobs:
    RawUsage moves when a job ends, EffectvUsage and FairShare only at that pass, which runs when
    slurmctld starts and then every PriorityCalcPeriod (a minute at least). The lab restarts the
    controller to run it now (`run_priority_pass`); the usage it counts is the module's jobs alone
    (`fresh_accounting` in `ran`)."""
    want = {account: sum(r.gpus * int((r.end - r.start).total_seconds()) for r in ran.runs if r.account == account)
            for account in SHARES}
    lab.run_priority_pass()
    deadline = time.monotonic() + timeout
    while True:
        rows = {row["Account"].strip(): row for row in lab.sshare() if not row["User"]}
        accounts = {name: row for name, row in rows.items() if name != "root"}
        if all(float(accounts.get(a, {}).get("EffectvUsage") or 0) > 0 for a in SHARES):
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"sshare did not count the jobs within {timeout} s: {rows}")
        time.sleep(0.1)
    assert set(accounts) == set(SHARES), accounts  # the cluster's only top-level accounts: S is shares / Σ shares
    for account, row in accounts.items():
        # Billing counts GPUs only (TRESBillingWeights GRES/gpu=1): RawUsage is GPU-seconds.
        assert int(row["RawUsage"]) == want[account], (account, row, want)
        assert int(row["RawShares"]) == SHARES[account]
    return accounts


def test_docket_fair_share_factor_is_slurms_classic_fair_share(
    live_server: Any, atlas: SimpleNamespace, token_file: Path, slurm_lab: SlurmLab, ran: Ran  # noqa: F811
) -> None:
    accounts = settled_sshare(slurm_lab, ran)
    for row in accounts.values():  # Slurm's own identity under NO_FAIR_TREE
        assert abs(float(row["FairShare"]) - 2 ** (-float(row["EffectvUsage"]) / float(row["NormShares"]))) <= 1e-5

    # The same usage and shares through Docket's arithmetic (committee/scoring.py).
    team_of = {"team-a-acct": atlas.team_a, "team-b-acct": atlas.team_b}
    assert {a: team_of[a].fair_share_weight for a in SHARES} == SHARES
    factors = scoring.fair_shares(
        decayed={team_of[a].pk: int(row["RawUsage"]) / 3600 for a, row in accounts.items()},
        weights={team_of[a].pk: team_of[a].fair_share_weight for a in SHARES},
    )
    for account, row in accounts.items():
        share = factors[team_of[account].pk]
        assert abs(share.entitled_share - float(row["NormShares"])) <= 5e-7
        assert abs(share.usage_share - float(row["EffectvUsage"])) <= 5e-7
        assert abs(share.factor - float(row["FairShare"])) <= 2e-6, (account, share.factor, row["FairShare"])

    # And end to end: the collector's records, read by the review's own selector. Records hold
    # GPU-hours to 0.01, so Slurm's factor must lie within what that rounding allows.
    # No window this week: the teams' cluster accounts and the pools' labels name the reports.
    code, out = collect(live_server, slurm_lab, token_file, ran.since, ran.until)
    assert code == 0, out
    live = fair_share_live(as_of=machine_now())
    per_team = {team: sum(float(r.gpu_hours_used) for rows in stored_rows for r in rows)
                for team, stored_rows in _by_team().items()}
    count = {team: sum(len(rows) for rows in stored_rows) for team, stored_rows in _by_team().items()}
    for account, row in accounts.items():
        team = team_of[account]
        assert abs(live[team.pk].decayed_gpu_hours - per_team[team.slug]) <= 1e-9
        low, high = _factor_bounds(team.slug, per_team, count, weights={"team-a": 2, "team-b": 1})
        assert low - 1e-9 <= float(row["FairShare"]) <= high + 1e-9, (account, low, row["FairShare"], high)
        assert low <= live[team.pk].factor <= high


# --- the department tree: the sync's account tree, and sshare's hierarchical factor equals Docket's -------------


def tree_sshare(lab: SlurmLab, timeout: float = 60) -> dict[str, dict[str, str]]:
    """The account rows of sshare once the priority pass has run over the tree: team-c-acct used nothing, so its
    EffectvUsage is above 0 only once the pass has counted its department's usage."""
    lab.run_priority_pass()
    deadline = time.monotonic() + timeout
    while True:
        rows = {row["Account"].strip(): row for row in lab.sshare() if not row["User"]}
        if float(rows.get("team-c-acct", {}).get("EffectvUsage") or 0) > 0:
            return rows
        if time.monotonic() > deadline:
            raise AssertionError(f"sshare did not count the tree within {timeout} s: {rows}")
        time.sleep(0.1)


def test_the_synced_department_tree_gives_sshares_factor_which_is_dockets(
    live_server: Any, atlas: SimpleNamespace, slurm_lab: SlurmLab, ran: Ran  # noqa: F811
) -> None:
    """Issue 29: Docket's departments made into Slurm's account tree by the Slurm sync's account side
    (docket_scheduler.slurm_accounts, fed by the scheduler API), idempotent; then, with the module's jobs as usage,
    sshare's classic hierarchical fair share (NO_FAIR_TREE) is the factor Docket computes over the same tree.

        root ── dept-research (3) ─┬─ team-a-acct (2)   used 32 A100 × 6 s + 8 H100 × 3 s
                                   └─ team-c-acct (1)   used nothing
             └─ team-b-acct (1)                          used 48 A100 × 4 s
    """
    lab = slurm_lab
    research = Department.objects.create(name="Research", slug="research", fair_share_weight=3)
    team_c = Team.objects.create(name="Team C", slug="team-c", fair_share_weight=1, department=research)
    Team.objects.filter(pk=atlas.team_a.pk).update(department=research)
    ClusterAccount.objects.create(cluster=atlas.atlas, team=team_c, account="team-c-acct")
    lab.sacctmgr("add", "account", "team-c-acct", f"Cluster={CLUSTER}", "Description=team c", "Organization=lab")
    out = io.StringIO()
    tree = AccountTreeExecutor(tools=SlurmTools(sacctmgr=shutil.which("sacctmgr", path=SEARCH_PATH) or "sacctmgr",
                                                env=lab.env), out=out)
    try:
        places = team_places(DocketClient(live_server.url, atlas.token, "atlas").fetch_cluster())
        ran_commands = tree.sync(places, cluster=CLUSTER, dry_run=False)

        assert tree.problems == [], out.getvalue()
        where = "modify account where name={} cluster=lab set parent=dept-research"
        assert [c.line() for c in ran_commands] == [
            "sacctmgr -i add account dept-research cluster=lab parent=root fairshare=3 "
            "description=Docket department research organization=docket",
            "sacctmgr -i " + where.format("team-a-acct"), "sacctmgr -i " + where.format("team-c-acct"),
        ]
        assert {name: (a.parent, a.shares) for name, a in tree.read_tree(CLUSTER).items() if name != "root"} == {
            "dept-research": ("root", 3), "team-a-acct": ("dept-research", 2), "team-b-acct": ("root", 1),
            "team-c-acct": ("dept-research", 1),
        }
        # A second pass finds the tree as Docket says: no sacctmgr write.
        assert tree.sync(places, cluster=CLUSTER, dry_run=False) == []

        rows = tree_sshare(lab)
        team_of = {"team-a-acct": atlas.team_a, "team-b-acct": atlas.team_b, "team-c-acct": team_c}
        factors = scoring.fair_shares(
            decayed={team_of[a].pk: int(rows[a]["RawUsage"]) / 3600 for a in team_of},
            weights={team.pk: Team.objects.get(pk=team.pk).fair_share_weight for team in team_of.values()},
            departments={atlas.team_a.pk: (research.pk, 3), team_c.pk: (research.pk, 3)},
        )
        assert int(rows["team-c-acct"]["RawUsage"]) == 0 and int(rows["team-a-acct"]["RawUsage"]) > 0
        assert int(rows["dept-research"]["RawUsage"]) == int(rows["team-a-acct"]["RawUsage"])
        assert abs(float(rows["dept-research"]["NormShares"]) - 3 / 4) <= 5e-7
        for account, team in team_of.items():
            share, row = factors[team.pk], rows[account]
            assert abs(share.entitled_share - float(row["NormShares"])) <= 5e-7, (account, row)
            assert abs(share.usage_share - float(row["NormUsage"])) <= 5e-7, (account, row)
            assert abs(share.effective_usage - float(row["EffectvUsage"])) <= 5e-7, (account, row)
            assert abs(share.factor - float(row["FairShare"])) <= 2e-6, (account, share.factor, row["FairShare"])
        # Team C used nothing, yet carries a third of its department's usage: not the flat 1.0.
        assert factors[team_c.pk].factor < 1
    finally:  # the lab is shared: the flat tree of the module's other tests again
        for account in ("team-a-acct", "team-c-acct"):
            lab.sacctmgr("modify", "account", "where", f"name={account}", f"cluster={CLUSTER}", "set",
                         "parent=root", check=False)
        lab.sacctmgr("delete", "account", "where", "name=team-c-acct,dept-research", check=False)


def _by_team() -> dict[str, list[list[UsageRecord]]]:
    grouped: dict[str, list[list[UsageRecord]]] = {}
    for (team, _pool), rows in stored().items():
        grouped.setdefault(team, []).append(rows)
    return grouped


def _factor_bounds(team: str, used: dict[str, float], records: dict[str, int],
                   weights: dict[str, int]) -> tuple[float, float]:
    """The range of 2^(−U/S) over every true usage that rounds to the stored records (±0.005 GPU-h each)."""
    share = weights[team] / sum(weights.values())
    mine, others = used[team], sum(v for k, v in used.items() if k != team)
    slack_mine = 0.005 * records[team]
    slack_others = 0.005 * sum(v for k, v in records.items() if k != team)

    def factor(m: float, o: float) -> float:
        return float(2 ** (-(m / (m + o)) / share))

    corners = [factor(max(mine + dm, 1e-12), max(others + do, 0.0))
               for dm in (-slack_mine, slack_mine) for do in (-slack_others, slack_others)]
    return min(corners), max(corners)


def test_a_running_job_counts_up_to_now(
    live_server: Any, atlas: SimpleNamespace, token_file: Path, clean_slurm_lab: SlurmLab,  # noqa: F811
) -> None:
    # After the fair-share test: this job's usage would change sshare's numbers.
    lab = clean_slurm_lab
    since = machine_now().replace(microsecond=0) - timedelta(seconds=1)
    job = lab.sbatch("--gres=gpu:a100:60", account="team-b-acct", wrap="sleep 120")
    try:
        lab.wait_for_state([job], {"RUNNING"}, timeout=30)
        lab.wait_for_listing([job])
        (row,) = lab.sacct("JobID", "Start", "End", jobs=[job])
        # At least 4 s of the run inside the period, however late accounting heard of the start.
        wait_for_clock(sacct_time(row["Start"]) + timedelta(seconds=4))
        (row,) = lab.sacct("JobID", "Start", "End", jobs=[job])
        assert row["End"] == "Unknown"  # accounting has no end yet
        until = machine_now().replace(microsecond=0)

        code, out = collect(live_server, lab, token_file, since, until, "--dry-run")
    finally:
        lab.cancel_all()

    assert code == 0, out
    said = [Decimal(x) for x in re.findall(r"would report team-b \(team-b-acct\) on a100 \S+: ([\d.]+) GPU-h", out)]
    held = 60 * overlap_s((sacct_time(row["Start"]), until), (since, until)) / 3600
    assert said and abs(float(sum(said)) - held) <= 0.005 * len(said) + 1e-9, (said, held)
    assert held > 0.05  # about 3 s or more of 60 GPUs: the test would see a missing job


# --- an account Docket does not know (runs last: it adds a top-level account to the cluster) -------


@pytest.fixture
def foreign_job(clean_slurm_lab: SlurmLab) -> Iterator[tuple[datetime, datetime, int]]:  # noqa: F811
    """A finished job of account lab-admin, which no team holds; the account goes again afterwards
    (the lab is shared)."""
    clean_slurm_lab.sacctmgr("add", "account", "lab-admin", "Cluster=lab", "Description=admins", "Organization=lab")
    clean_slurm_lab.sacctmgr("add", "user", USER, "Account=lab-admin")
    since = machine_now().replace(microsecond=0) - timedelta(seconds=1)
    job = clean_slurm_lab.sbatch("--gres=gpu:a100:4", account="lab-admin", wrap="sleep 1")
    assert clean_slurm_lab.wait_for_state([job]) == {job: "COMPLETED"}
    # sacct -j (above) shows the job before its eligible time reaches slurmdbd; until then the
    # collector's sacct -S/-E does not list it, and the run would not stop.
    clean_slurm_lab.wait_for_listing([job])
    until = machine_now().replace(microsecond=0) + timedelta(seconds=1)
    wait_for_clock(until)
    yield since, until, job
    clean_slurm_lab.sacctmgr("delete", "user", USER, "where", "account=lab-admin")
    clean_slurm_lab.sacctmgr("delete", "account", "lab-admin")


def test_an_account_no_team_holds_stops_the_run_before_anything_is_posted(
    live_server: Any, atlas: SimpleNamespace, token_file: Path, slurm_lab: SlurmLab,  # noqa: F811
    ran: Ran, foreign_job: tuple[datetime, datetime, int],
) -> None:
    since, until, job = foreign_job
    both = (min(since, ran.since), until)  # team A's and B's jobs and the admin's

    code, out = collect(live_server, slurm_lab, token_file, *both)

    assert code == 2, out
    assert f"Slurm account 'lab-admin' (jobs {job}) is no Docket team's account on cluster atlas" in out
    assert "--account-map lab-admin=TEAM" in out and "--ignore-account lab-admin" in out
    assert not UsageRecord.objects.exists()

    # Mapped by the operator, it counts for that team (a dry run shows it and stores nothing).
    code, out = collect(live_server, slurm_lab, token_file, *both, "--account-map", "lab-admin=team-b", "--dry-run")
    assert code == 0, out
    assert "would report team-b (lab-admin) on a100" in out
    assert not UsageRecord.objects.exists()

    # Left out on purpose, the others' usage is reported.
    code, out = collect(live_server, slurm_lab, token_file, *both, "--ignore-account", "lab-admin")
    assert code == 0, out
    assert {team for team, _pool in stored()} == {"team-a", "team-b"}
    assert "lab-admin" not in out
