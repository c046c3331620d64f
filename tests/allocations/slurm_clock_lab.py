"""A small Slurm cluster whose clock starts where a test needs it: a week boundary, seconds ahead.

    munged, slurmctld, slurmd gpu01 and gpu02 (8 fake A100 each, Features=a100), no accounting

Every daemon, and every client a test runs against it (scontrol, sbatch, squeue, the sync program), runs under
libfaketime with one fixed offset (`FAKETIME=+N`, Debian's `faketime` package), so they all keep the same clock: the
machine's, moved to the instant the test names. A job then really runs across Sunday 24:00 in the committee's zone
while the test waits seconds, not days. Docket keeps that clock too (the test moves its `clock` to `ClockLab.now()`).

The invariants of tests/allocations/slurm_testbed.py hold here: every file under one folder, removed afterwards;
SLURM_CONF only in the environment of the processes we start; daemons stopped by the pids in their own pid files
(checked against /proc, pids wrap), jobs cancelled first because slurmstepd outlives a stopped slurmd; free ports.
Starting it takes about a second, so a module starts its own at the instant it needs (not shared).
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
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from docket_scheduler.slurm_reservations import Reservation, parse_reservations
from tests.conftest import require
from tests.processes import free_port, log_tail, read_pid, stop_daemon

FAKETIME_LIBRARY = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")
BINARIES = ("munged", "slurmctld", "slurmd", "scontrol", "sbatch", "squeue", "scancel", "sinfo")
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin", "/sbin"])
NODES = ("gpu01", "gpu02")
GPUS_PER_NODE = 8
USER = pwd.getpwuid(os.geteuid()).pw_name


@dataclass
class ClockLab:
    root: Path
    env: dict[str, str]
    offset: timedelta  # the lab's clock minus the machine's
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def scontrol(self) -> str:
        return _which("scontrol") or "scontrol"

    def now(self) -> datetime:
        """The lab's clock (the machine's real time plus the offset)."""
        return _real_now() + self.offset

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([_which(argv[0]) or argv[0], *argv[1:]], env=self.env, capture_output=True, text=True,
                              timeout=30, check=check)

    def reservations(self) -> dict[str, Reservation]:
        return {r.name: r for r in parse_reservations(self.run("scontrol", "-o", "show", "reservation").stdout)}

    def sbatch(self, *args: str) -> int:
        """Submit a job; its output goes to the lab's folder (by default sbatch writes slurm-<id>.out where it runs)."""
        out = self.run("sbatch", "--parsable", f"--output={self.root}/slurm-%j.out", *args).stdout.strip()
        return int(out.split(";")[0])

    def job(self, job_id: int) -> tuple[str, str]:
        """(state, nodes) of a job as squeue shows it; ("", "") once it left the queue."""
        out = self.run("squeue", "-h", "-j", str(job_id), "-o", "%T|%N", check=False).stdout.strip()
        state, _bar, nodes = out.partition("|")
        return state, nodes

    def wait_until(self, instant: datetime) -> None:
        """Sleep until the lab's clock has passed `instant`."""
        delay = (instant - self.now()).total_seconds()
        if delay > 0:
            time.sleep(delay)

    def cancel_all(self, timeout: float = 15) -> None:
        self.run("scancel", "-u", USER, check=False)
        deadline = time.monotonic() + timeout
        while self.run("squeue", "-h", check=False).stdout.strip() and time.monotonic() < deadline:
            time.sleep(0.2)


def _which(name: str) -> str | None:
    return shutil.which(name, path=SEARCH_PATH)


def _real_now() -> datetime:
    """The machine's real time, even when the suite itself runs under libfaketime (`make test-at`): asked of a
    process with the library loaded and no offset, since our daemons start from that same base."""
    out = subprocess.run(["date", "+%s.%N"], env={"LD_PRELOAD": str(FAKETIME_LIBRARY), "FAKETIME": "+0"},
                         capture_output=True, text=True, timeout=10, check=True).stdout
    return datetime.fromtimestamp(float(out), tz=UTC)


def _slurm_conf(root: Path, ports: dict[str, int]) -> str:
    host = socket.gethostname().split(".")[0]
    nodes = "\n".join(
        f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={ports[name]} CPUs=8 RealMemory=8000 "
        f"Gres=gpu:a100:{GPUS_PER_NODE} Features=a100 State=UNKNOWN"
        for name in NODES
    )
    return f"""\
ClusterName=docket-clock
SlurmctldHost=localhost
SlurmctldPort={ports['slurmctld']}
SlurmUser={USER}
SlurmdUser={USER}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket.2
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/state/slurmctld.pid
SlurmdPidFile={root}/state/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
SlurmdParameters=config_overrides
ReturnToService=2
{nodes}
PartitionName=gpu Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP
"""


def _gres_conf(root: Path) -> str:
    # Symlinks to a character device: without File= the GPUs are dropped and the node drains.
    return "AutoDetect=off\n" + "".join(
        f"NodeName={name} Name=gpu Type=a100 File={root}/fakedev/{name}/nvidia[0-{GPUS_PER_NODE - 1}]\n"
        for name in NODES
    )


def _daemon(argv: list[str], *, env: dict[str, str], log: Path) -> None:
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {result.returncode}: {result.stderr.strip()}\n{log_tail(log)}")


def _wait(check: object, what: str, log: Path, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {timeout_s} s\n{log_tail(log)}")
        time.sleep(0.05)


@contextlib.contextmanager
def clock_lab(*, starts_at: datetime) -> Iterator[ClockLab]:
    """The lab, its clock at `starts_at` now (and ticking); everything stopped and removed on exit.

    Skips (fails in CI) without Slurm, munge or libfaketime."""
    missing = [name for name in BINARIES if _which(name) is None]
    if not FAKETIME_LIBRARY.exists():
        missing.append(str(FAKETIME_LIBRARY))
    require(not missing, f"{', '.join(missing)} (apt-get install -y slurm-wlm munge faketime)")
    # Not under pytest's tmp_path: munged needs world-executable folders above its socket.
    root = Path(tempfile.mkdtemp(prefix="docket-slurmclock-"))
    offset = timedelta(seconds=round((starts_at - _real_now()).total_seconds()))
    lab = ClockLab(root=root, env={}, offset=offset)
    try:
        for folder in ("munge", "state", "log", *(f"spool/{n}" for n in NODES), *(f"fakedev/{n}" for n in NODES)):
            (root / folder).mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)
        (root / "munge").chmod(0o755)
        for name in NODES:
            for index in range(GPUS_PER_NODE):
                (root / "fakedev" / name / f"nvidia{index}").symlink_to("/dev/null")
        ports = {"slurmctld": free_port(), **{name: free_port() for name in NODES}}
        conf = root / "slurm.conf"
        conf.write_text(_slurm_conf(root, ports))
        (root / "gres.conf").write_text(_gres_conf(root))
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        lab.env = {"PATH": SEARCH_PATH, "TZ": "UTC", "LANG": "C.UTF-8", "SLURM_CONF": str(conf),
                   "LD_PRELOAD": str(FAKETIME_LIBRARY), "FAKETIME": f"{int(offset.total_seconds()):+d}"}
        _daemon([_which("munged") or "", f"--key-file={key}", f"--socket={root}/munge/munge.socket.2",
                 f"--pid-file={root}/munge/munged.pid", f"--log-file={root}/munge/munged.log",
                 f"--seed-file={root}/munge/munged.seed"], env=lab.env, log=root / "munge" / "munged.log")
        lab.pids["munged"] = read_pid(root / "munge" / "munged.pid")
        _daemon([_which("slurmctld") or "", "-f", str(conf)], env=lab.env, log=root / "log" / "slurmctld.log")
        lab.pids["slurmctld"] = read_pid(root / "state" / "slurmctld.pid")
        _wait(lambda: "is UP" in lab.run("scontrol", "ping", check=False).stdout, "slurmctld",
              root / "log" / "slurmctld.log")
        for name in NODES:
            _daemon([_which("slurmd") or "", "-f", str(conf), "-N", name], env=lab.env,
                    log=root / "log" / f"slurmd-{name}.log")
            lab.pids[f"slurmd-{name}"] = read_pid(root / "state" / f"slurmd-{name}.pid")
        _wait(lambda: lab.run("sinfo", "-h", "-o", "%T", check=False).stdout.split() == ["idle"],
              "fake GPU nodes idle", root / "log" / "slurmctld.log")
        yield lab
    finally:
        with contextlib.suppress(Exception):
            if "slurmctld" in lab.pids:
                lab.cancel_all()
        for name in [*(f"slurmd-{n}" for n in NODES), "slurmctld", "munged"]:
            if name in lab.pids:
                stop_daemon(lab.pids[name], "slurmd" if name.startswith("slurmd-") else name)
        shutil.rmtree(root, ignore_errors=True)
