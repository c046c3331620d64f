"""A private Slurm cluster with accounting, for tests: real jobs on fake GPUs, recorded by slurmdbd.

    mariadbd (own datadir and port) <- slurmdbd <- slurmctld <- slurmd gpu1 (64× a100), slurmd gpu2 (16× h100)

Every daemon is the real Debian one; the GPUs are fake (gres.conf `File=` symlinks to /dev/null,
AutoDetect=off), so jobs get CUDA_VISIBLE_DEVICES and sacct records `gres/gpu:<type>=N`.
The facts behind each setting (start order, pitfalls) are in the lab notes the project keeps
(shared/notes/integration-lab.md); the ones that bite are repeated where they are used.

Invariants, as in tests/allocations/slurm_testbed.py (the machine is shared):
- every file (configs, MariaDB datadir, munge key and socket, state, spool, pids, logs) lives
  under one folder, removed afterwards;
- SLURM_CONF is set only in the environment of the processes we start (`SlurmLab.env`);
- daemons are stopped by the pids in their own pid files, after checking /proc/<pid>/stat
  (pids wrap at 32768 here), never by name; running jobs are cancelled first, because
  slurmstepd outlives a stopped slurmd;
- every daemon listens on a free port (slurmdbd, slurmctld and slurmd bind 0.0.0.0 whatever
  the config says), and lives as long as the pytest process (one lab per xdist worker, shared
  by every module that imports `slurm_lab`; see "Sharing" below).

Scheduling is classic fair share (PriorityFlags=NO_FAIR_TREE, PriorityDecayHalfLife=0, no
reset, PriorityCalcPeriod=1 minute) and billing counts GPUs only (TRESBillingWeights
GRES/gpu=1), so `sshare`'s RawUsage is in GPU-seconds and its FairShare is 2^(−U/S).

Reuse: `SlurmLab.sacctmgr`, `.sbatch`, `.squeue`, `.sacct`, `.sshare`, `.wait_for_state`,
`.wait_for_listing` and `.cancel_all` are the building blocks; `slurm_lab` is the shared
fixture. QOS with gres/gpu limits can be added only now that slurmctld has registered its TRES (before, sacctmgr
says "no TRES known by type gres/gpu"). `sreport` sees only rolled-up hours; forcing the
rollup (libfaketime on slurmdbd, as the lab notes describe) is not built in.

Sharing: starting the lab takes 5 to 25 s, so one lab serves the whole pytest process. What a
test changes it puts back (jobs: `clean_slurm_lab`; QOS, shares, accounts: the module's own
fixtures). What cannot be put back is history: sacct keeps every job, and fair share keeps usage
until it is reset. A module that needs a cluster with no past calls `SlurmLab.fresh_accounting()`,
which resets the usage, drops accounts beyond `accounts`, and gives the instant after which no
earlier job ran.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.allocations.slurm_testbed import shared_daemon, stop_daemon
from tests.clock import machine_clock_env, machine_now
from tests.conftest import require
from tests.processes import free_port, log_tail, read_pid

BINARIES = ("mariadb-install-db", "mariadbd", "mariadb", "munged", "slurmdbd", "slurmctld", "slurmd",
            "sacctmgr", "sacct", "sbatch", "squeue", "scancel", "scontrol", "sshare")
APT_HINT = "apt-get install -y slurm-wlm slurmdbd slurm-wlm-mysql-plugin munge mariadb-server"
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin", "/sbin"])

CLUSTER = "lab"
# The daemons and the jobs run as whoever runs the tests (root in CI and on the shared machine).
USER = pwd.getpwuid(os.geteuid()).pw_name
DB_USER, DB_PASSWORD, DB_NAME = "slurm", "slurmpw", "slurm_acct_db"


@dataclass(frozen=True)
class FakeNode:
    name: str
    gpu_type: str
    gpus: int


NODES = (FakeNode("gpu1", "a100", 64), FakeNode("gpu2", "h100", 16))
# Job states after which a job never runs again (sacct's words).
FINISHED = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY",
                      "BOOT_FAIL", "DEADLINE"})


class LabError(RuntimeError):
    """A lab daemon or command did not do what the lab needs; the message carries its own words and log."""


@dataclass
class SlurmLab:
    """A running cluster `lab`: run its commands with `lab.run(...)` or the helpers below."""

    root: Path
    conf: Path
    env: dict[str, str]
    accounts: tuple[str, ...]
    pids: dict[str, int] = field(default_factory=dict)

    # --- commands ---------------------------------------------------------------------------

    def run(self, *argv: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command against this cluster (UTC, this config), capturing text."""
        result = subprocess.run(
            [_which(argv[0]) or argv[0], *argv[1:]], env=self.env, capture_output=True, text=True,
            timeout=timeout, check=False, cwd=self.root,
        )
        if check and result.returncode != 0:
            raise LabError(f"{' '.join(argv)} exited {result.returncode}: {result.stderr.strip() or result.stdout}")
        return result

    def sacctmgr(self, *args: str, check: bool = True) -> str:
        """`sacctmgr -i ...` (never asks to confirm); its stdout."""
        return self.run("sacctmgr", "-i", *args, check=check).stdout

    def sbatch(self, *args: str, account: str, wrap: str = "sleep 5") -> int:
        """Submit a batch job under `account` (output to the lab's folder); its job id."""
        out = self.run("sbatch", "--parsable", "-A", account, "-o", str(self.root / "log" / "job-%j.out"),
                       *args, "--wrap", wrap).stdout
        return int(out.strip().split(";")[0])

    def squeue(self, *args: str) -> list[dict[str, str]]:
        """The queue as rows of JobID, Account, State, Reason (all jobs unless `args` narrow it)."""
        out = self.run("squeue", "-h", "-o", "%i|%a|%T|%r", *args).stdout
        return [dict(zip(("JobID", "Account", "State", "Reason"), line.split("|"), strict=True))
                for line in out.splitlines() if line.strip()]

    def sacct(self, *fields: str, jobs: Iterable[int] = (), extra: Sequence[str] = ()) -> list[dict[str, str]]:
        """Accounting rows of whole jobs (-X, all users, parsable), one dict per job run."""
        selection = ["-j", ",".join(str(j) for j in jobs)] if jobs else ["-S", "2000-01-01"]
        out = self.run("sacct", "-X", "-a", "-n", "-P", "-D", "-o", ",".join(fields), *selection, *extra).stdout
        return [dict(zip(fields, line.split("|"), strict=True)) for line in out.splitlines() if line.strip()]

    def job_state(self, job_id: int) -> str:
        """What accounting says of the job's latest run ("" while slurmdbd has not heard of it)."""
        rows = self.sacct("JobID", "State", jobs=[job_id])
        return rows[-1]["State"].split()[0] if rows else ""

    def wait_for_state(self, job_ids: Iterable[int], states: Iterable[str] = FINISHED, *,
                       timeout: float = 60) -> dict[int, str]:
        """Wait until accounting shows every job in one of `states` (default: finished); their states.

        Accounting lags the controller: a start reaches sacct 4–5 s after squeue shows RUNNING,
        an end about 0.1 s after the job leaves squeue. A job in a state here may not yet be in
        a time-window query (`sacct -S/-E`): `wait_for_listing` waits for that.
        """
        wanted, pending = set(states), [int(job_id) for job_id in job_ids]
        deadline = time.monotonic() + timeout
        while True:
            # One sacct for all the jobs; a requeued job has a row per run, the last is the latest.
            latest = {int(row["JobID"]): row["State"].split()[0] for row in self.sacct("JobID", "State", jobs=pending)}
            seen = {job_id: latest.get(job_id, "") for job_id in pending}
            if all(state in wanted for state in seen.values()):
                return seen
            if time.monotonic() > deadline:
                raise LabError(f"jobs not in {sorted(wanted)} after {timeout:.0f} s: {seen}\n"
                               f"{log_tail(self.root / 'log' / 'slurmctld.log')}")
            time.sleep(0.1)

    def wait_for_listing(self, job_ids: Iterable[int], *, timeout: float = 30) -> None:
        """Wait until sacct's time-window selection (`-S`/`-E`, no `-j`: what the usage collector
        runs) lists every job.

        That selection shows only jobs whose record has an eligible time, and slurmdbd may get it
        after the job's state: under load a job was COMPLETED in `sacct -j` (what `wait_for_state`
        reads) with Eligible=Unknown for 0.4 to more than 2 s, and missing from `sacct -S ... -E ...`.
        """
        pending = {int(job_id) for job_id in job_ids}
        deadline = time.monotonic() + timeout
        while True:
            listed = {int(row["JobID"]) for row in self.sacct("JobID", "Eligible")
                      if row["Eligible"] not in ("Unknown", "None", "")}
            if pending <= listed:
                return
            if time.monotonic() > deadline:
                raise LabError(f"jobs {sorted(pending - listed)} not listed by sacct -S after {timeout:.0f} s: "
                               f"{self.sacct('JobID', 'State', 'Eligible', 'Start', 'End', jobs=pending)}")
            time.sleep(0.1)

    def sshare(self) -> list[dict[str, str]]:
        """`sshare -a -l -P` as rows keyed by its header (Account, User, RawShares, NormShares, ...)."""
        lines = [line for line in self.run("sshare", "-a", "-l", "-P").stdout.splitlines() if line.strip()]
        header = lines[0].split("|")
        return [dict(zip(header, line.split("|"), strict=True)) for line in lines[1:]]

    def cancel_all(self, timeout: float = 30) -> None:
        """Cancel every job and wait for the queue to empty."""
        if not self.squeue():
            return
        self.run("scancel", "-u", USER, check=False)
        self.run("scancel", "--state=PENDING", check=False)
        deadline = time.monotonic() + timeout
        while self.squeue() and time.monotonic() < deadline:
            time.sleep(0.05)

    def fresh_accounting(self, timeout: float = 30) -> datetime:
        """Make the shared lab look, to accounting, like one that never ran a job; the first whole
        second after every earlier job ended (sacct -S from then on lists none of them).

        Cancels every job, drops the top-level accounts that are not the lab's `accounts` (with
        their users), and resets the usage of the lab's accounts (RawUsage=0; sshare's other
        figures follow at the next priority pass, `run_priority_pass`).
        """
        self.settle(timeout=timeout)
        earlier = [int(row["JobID"]) for row in self.sacct("JobID")]
        if earlier:
            self.wait_for_state(earlier, timeout=timeout)
        top = {line.strip() for line in self.run("sacctmgr", "-n", "-P", "list", "account", "format=account").stdout
               .splitlines()} - {"", "root", *self.accounts}
        if top:
            self.sacctmgr("delete", "user", "where", f"account={','.join(sorted(top))}", check=False)
            self.sacctmgr("delete", "account", "where", f"name={','.join(sorted(top))}")
        self.sacctmgr("modify", "account", "where", f"name={','.join(self.accounts)}", f"cluster={CLUSTER}",
                      "set", "RawUsage=0")
        ends = [sacct_time(row["End"]) for row in self.sacct("End")]
        return max(ends, default=datetime.min.replace(tzinfo=UTC)) + timedelta(seconds=1)

    def run_priority_pass(self, timeout: float = 30) -> None:
        """Have the controller's priority pass run now: restart slurmctld.

        The pass (which computes sshare's EffectvUsage and FairShare) runs when slurmctld starts and
        then every PriorityCalcPeriod, whose least value is one minute; a test that waits for the
        pass waits 30 s on average. slurmctld saves its state when it stops (usage included) and
        reads it back. Returns once the controller answers; the slurmds register again about 3 s
        later, which `settle` (the next test's `clean_slurm_lab`) waits for.
        """
        log = self.root / "log" / "slurmctld.log"
        stop_daemon(self.pids["slurmctld"], "slurmctld", grace_s=30)
        _daemon([_which("slurmctld") or "", "-f", str(self.conf)], env=self.env, log=log)
        self.pids["slurmctld"] = _read_new_pid(self.root / "state" / "slurmctld.pid", self.pids["slurmctld"])
        _wait(lambda: "is UP" in self.run("scontrol", "ping", check=False).stdout, "slurmctld", log, timeout)

    def settle(self, timeout: float = 30) -> None:
        """No job queued or running, and both fake nodes idle (registered with the controller)."""
        self.cancel_all(timeout=timeout)
        _wait(self.nodes_idle, "fake GPU nodes idle", self.root / "log" / "slurmctld.log", timeout)

    def nodes_idle(self) -> bool:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout.splitlines()
        states = dict(line.split() for line in out if line.strip())
        return all(states.get(n.name) == "idle" for n in NODES)


def sacct_time(text: str) -> datetime:
    """An instant as sacct prints it (the lab runs with TZ=UTC)."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)


def wait_for_clock(instant: datetime) -> None:
    """Return once the machine's clock (the one slurmctld keeps) has reached `instant`."""
    while machine_now() < instant:
        time.sleep(0.02)


# --- configuration -------------------------------------------------------------------------------


def _slurm_conf(root: Path, ports: dict[str, int]) -> str:
    munge = root / "munge" / "munge.socket.2"
    host = socket.gethostname().split(".")[0]
    types = sorted({node.gpu_type for node in NODES})
    node_names = ",".join(n.name for n in NODES)
    billing = "TRESBillingWeights=CPU=0,GRES/gpu=1"  # billing = GPUs: sshare's RawUsage is GPU-seconds
    nodes = "\n".join(
        f"NodeName={n.name} NodeHostname={host} NodeAddr=127.0.0.1 Port={ports[n.name]} CPUs=32 RealMemory=64000 "
        f"Gres=gpu:{n.gpu_type}:{n.gpus} State=UNKNOWN"
        for n in NODES
    )
    return f"""\
ClusterName={CLUSTER}
SlurmctldHost=localhost
SlurmctldPort={ports['slurmctld']}
SlurmUser={USER}
SlurmdUser={USER}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/state/slurmctld.pid
SlurmdPidFile={root}/state/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={ports['slurmdbd']}
# The clients ignore AuthInfo for dbd connections: without this, "Munge encode failed".
AccountingStoragePass={munge}
AccountingStorageTRES=gres/gpu,{','.join(f'gres/gpu:{t}' for t in types)}
AccountingStorageEnforce=associations,limits,qos,safe
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/linux
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=2,sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PriorityType=priority/multifactor
PriorityWeightQOS=10000
PriorityWeightFairshare=1000
PriorityCalcPeriod=1
PriorityFlags=NO_FAIR_TREE
PriorityDecayHalfLife=0
PriorityUsageResetPeriod=NONE
PreemptType=preempt/qos
PreemptMode=REQUEUE
JobRequeue=1
GresTypes=gpu
# Not proctrack/pgid: its slurmstepd polls a cancelled job's process group after 1 s, then 2 s more.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
SlurmdParameters=config_overrides
ReturnToService=2
{nodes}
PartitionName=gpu Nodes={node_names} Default=YES MaxTime=INFINITE State=UP {billing}
"""


def _slurmdbd_conf(root: Path, ports: dict[str, int]) -> str:
    return f"""\
AuthType=auth/munge
AuthInfo=socket={root}/munge/munge.socket.2
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={ports['slurmdbd']}
SlurmUser={USER}
LogFile={root}/log/slurmdbd.log
PidFile={root}/state/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports['mariadb']}
StorageUser={DB_USER}
StoragePass={DB_PASSWORD}
StorageLoc={DB_NAME}
"""


def _gres_conf(root: Path) -> str:
    lines = ["AutoDetect=off"]
    for node in NODES:
        # Symlinks to a character device: plain files would give jobs no CUDA_VISIBLE_DEVICES,
        # and GPUs without File= are dropped (the node drains).
        lines.append(f"NodeName={node.name} Name=gpu Type={node.gpu_type} "
                     f"File={root}/fakedev/{node.name}/nvidia[0-{node.gpus - 1}]")
    return "\n".join(lines) + "\n"


# --- processes -----------------------------------------------------------------------------------


def _which(name: str) -> str | None:
    return shutil.which(name, path=SEARCH_PATH)





def _read_new_pid(path: Path, old: int, timeout_s: float = 15) -> int:
    """The pid a restarted daemon writes over its predecessor's in `path`."""
    deadline = time.monotonic() + timeout_s
    while (pid := read_pid(path, timeout_s=timeout_s)) == old:
        if time.monotonic() > deadline:
            raise LabError(f"{path} still names the stopped pid {old}")
        time.sleep(0.02)
    return pid


def _daemon(argv: list[str], *, env: dict[str, str], log: Path) -> None:
    """Run a daemon that forks into the background; fail with its own words if it cannot start."""
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    if result.returncode != 0:
        raise LabError(f"{argv[0]} exited {result.returncode}: {result.stderr.strip()}\n{log_tail(log)}")


def _wait(check: object, what: str, log: Path, timeout_s: float = 30.0) -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise LabError(f"{what} not within {timeout_s:.0f} s\n{log_tail(log)}")
        time.sleep(0.05)


@contextlib.contextmanager
def slurm_accounting_lab(root: Path, *, accounts: Sequence[str]) -> Iterator[SlurmLab]:
    """Start MariaDB, munged, slurmdbd, slurmctld and one slurmd per fake node under `root`.

    `accounts` are created under the cluster (fair share 1 each; `sacctmgr modify account X
    set fairshare=N` changes it), with the current user (`USER`) in all of them (default: the first). The
    root user's own association under account root is removed, so that the accounts are the
    only shares at the top level and NormShares = shares / Σ shares of `accounts`.
    Skips (fails in CI) when a binary is missing. Stops everything on exit.
    """
    missing = [name for name in BINARIES if _which(name) is None]
    require(not missing, f"{', '.join(missing)} ({APT_HINT})")

    for folder in ("db", "state", "log", "munge", *(f"spool/{n.name}" for n in NODES),
                   *(f"fakedev/{n.name}" for n in NODES)):
        (root / folder).mkdir(parents=True, exist_ok=True)
    # munged insists that every folder above its socket is world-executable.
    root.chmod(0o755)
    (root / "munge").chmod(0o755)
    for node in NODES:
        for index in range(node.gpus):
            (root / "fakedev" / node.name / f"nvidia{index}").symlink_to("/dev/null")

    ports = {name: free_port() for name in ("mariadb", "slurmdbd", "slurmctld", *(n.name for n in NODES))}
    conf = root / "slurm.conf"
    conf.write_text(_slurm_conf(root, ports))
    (root / "gres.conf").write_text(_gres_conf(root))
    # slurmdbd has no -f: it reads slurmdbd.conf next to $SLURM_CONF, mode 600, owned by SlurmUser.
    dbd_conf = root / "slurmdbd.conf"
    dbd_conf.write_text(_slurmdbd_conf(root, ports))
    dbd_conf.chmod(0o600)
    # Under `make test-at` (libfaketime) the daemons keep the suite's shifted clock too.
    env = {"PATH": SEARCH_PATH, "TZ": "UTC", "LANG": "C.UTF-8", "SLURM_CONF": str(conf), "HOME": str(root),
           **machine_clock_env()}
    lab = SlurmLab(root=root, conf=conf, env=env, accounts=tuple(accounts))
    log = root / "log"
    mariadbd: subprocess.Popen[bytes] | None = None
    # Its own temporary folder too: in /tmp, a bootstrap's temporary table was once gone before MariaDB removed it
    # ("Could not remove temporary table: '/tmp/#sql-temptable-…', error: 2") and the install failed, twice under a
    # full run with other labs starting beside it.
    (root / "tmp").mkdir()
    try:
        # 1. MariaDB, private datadir and port; the shared server on 3306 is not touched.
        installed = subprocess.run(
            [_which("mariadb-install-db") or "", "--no-defaults", f"--datadir={root}/db", "--user=root",
             "--auth-root-authentication-method=normal", "--skip-test-db", f"--tmpdir={root}/tmp"],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )
        if installed.returncode != 0:  # what it said, for a failure seen once under a full run
            raise RuntimeError(f"mariadb-install-db exited {installed.returncode}: "
                               f"{(installed.stderr or installed.stdout).strip()[-2000:]}")
        mariadbd = subprocess.Popen(  # it writes its pid file; stopped by that pid
            [_which("mariadbd") or "", "--no-defaults", f"--datadir={root}/db", f"--tmpdir={root}/tmp",
             f"--port={ports['mariadb']}",
             "--bind-address=127.0.0.1", f"--socket={root}/mysqld.sock", f"--pid-file={root}/state/mysqld.pid",
             f"--user={USER}", f"--log-error={log}/mariadb.err", "--skip-name-resolve",
             "--innodb-buffer-pool-size=128M", "--innodb-log-file-size=16M", "--innodb-lock-wait-timeout=900",
             # A throwaway datadir: no fsync per commit (every sacctmgr change and job record is one).
             "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        lab.pids["mariadbd"] = read_pid(root / "state" / "mysqld.pid", timeout_s=60)
        sql = (f"CREATE USER '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{DB_PASSWORD}'; "
               f"GRANT ALL ON {DB_NAME}.* TO '{DB_USER}'@'127.0.0.1';")
        mariadb = [_which("mariadb") or "", "--no-defaults", "-h127.0.0.1", f"-P{ports['mariadb']}", "-uroot"]
        _wait(lambda: subprocess.run([*mariadb, "-e", "SELECT 1"], capture_output=True, timeout=10,
                                     check=False).returncode == 0, "MariaDB", log / "mariadb.err")
        subprocess.run([*mariadb, "-e", sql], capture_output=True, text=True, timeout=30, check=True)

        # 2. munged.
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        _daemon([_which("munged") or "", f"--key-file={key}", f"--socket={root}/munge/munge.socket.2",
                 f"--pid-file={root}/munge/munged.pid", f"--log-file={root}/munge/munged.log",
                 f"--seed-file={root}/munge/munged.seed"], env=env, log=root / "munge" / "munged.log")
        lab.pids["munged"] = read_pid(root / "munge" / "munged.pid", timeout_s=15)

        # 3. slurmdbd (it daemonizes; the first start creates the tables).
        _daemon([_which("slurmdbd") or ""], env=env, log=log / "slurmdbd.log")
        lab.pids["slurmdbd"] = read_pid(root / "state" / "slurmdbd.pid", timeout_s=15)
        _wait(lambda: lab.run("sacctmgr", "-n", "list", "cluster", check=False).returncode == 0,
              "slurmdbd", log / "slurmdbd.log")

        # 4. The cluster, its accounts and users, before slurmctld registers.
        lab.sacctmgr("add", "cluster", CLUSTER)
        lab.sacctmgr("add", "account", ",".join(accounts), f"Cluster={CLUSTER}", "Description=team",
                     "Organization=lab")
        lab.sacctmgr("add", "user", USER, f"Account={','.join(accounts)}", f"DefaultAccount={accounts[0]}")
        # `add cluster` gave user root an association under account root, a share beside the accounts.
        lab.sacctmgr("delete", "user", "root", "account=root", check=False)

        # 5. slurmctld, 6. one slurmd per fake node.
        _daemon([_which("slurmctld") or "", "-f", str(conf)], env=env, log=log / "slurmctld.log")
        lab.pids["slurmctld"] = read_pid(root / "state" / "slurmctld.pid", timeout_s=15)
        _wait(lambda: "is UP" in lab.run("scontrol", "ping", check=False).stdout, "slurmctld",
              log / "slurmctld.log")
        for node in NODES:
            _daemon([_which("slurmd") or "", "-f", str(conf), "-N", node.name], env=env,
                    log=log / f"slurmd-{node.name}.log")
            lab.pids[f"slurmd-{node.name}"] = read_pid(root / "state" / f"slurmd-{node.name}.pid", timeout_s=15)

        _wait(lab.nodes_idle, "fake GPU nodes idle", log / "slurmctld.log")
        yield lab
    finally:
        with contextlib.suppress(Exception):
            if "slurmctld" in lab.pids:
                lab.cancel_all(timeout=15)
        order = [*(f"slurmd-{n.name}" for n in NODES), "slurmctld", "slurmdbd", "munged"]
        for name in order:
            if name in lab.pids:
                stop_daemon(lab.pids[name], "slurmd" if name.startswith("slurmd-") else name)
        if "mariadbd" in lab.pids:
            # Its datadir is removed next: nothing to flush, so no clean InnoDB shutdown to wait for.
            stop_daemon(lab.pids["mariadbd"], "mariadbd", grace_s=1)
        if mariadbd is not None:
            mariadbd.wait(timeout=10)  # our child: reap it


ACCOUNTS = ("team-a-acct", "team-b-acct")  # the tests' ClusterAccounts


@contextlib.contextmanager
def _lab_in_tmp() -> Iterator[SlurmLab]:
    """A lab with accounts `ACCOUNTS` in a fresh folder under /tmp, removed afterwards.

    Not under pytest's tmp_path: munged needs world-executable folders above its socket.
    """
    root = Path(tempfile.mkdtemp(prefix="docket-slurmlab-"))
    try:
        with slurm_accounting_lab(root, accounts=ACCOUNTS) as lab:
            yield lab
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_lab(request: pytest.FixtureRequest) -> SlurmLab:
    """One private accounting cluster per pytest process (per xdist worker; 5 to 25 s to start),
    accounts `team-a-acct` and `team-b-acct`, shared by every module that imports this fixture and
    stopped by the daemons' pids when pytest ends. See "Sharing" in the module's docstring."""
    return shared_daemon(request.config, "slurm_lab", _lab_in_tmp)


@pytest.fixture
def clean_slurm_lab(slurm_lab: SlurmLab) -> SlurmLab:
    """The shared lab with no job queued or running and both nodes idle at the start of the test
    (usage already recorded stays: accounting and fair share remember every job until
    `fresh_accounting`)."""
    slurm_lab.settle()
    return slurm_lab
