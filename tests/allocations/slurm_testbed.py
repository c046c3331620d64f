"""A private, throwaway Slurm controller for tests: one munged and one lone slurmctld.

The controller has twelve fake nodes in State=CLOUD that stay powered down, which is all
that reservations need (no slurmd, no slurmdbd):

    gpu[01-08]  Features=a100  8 GPUs each
    gpu[09-12]  Features=h100  8 GPUs each

Invariants the fixture keeps, because the test machine is shared:
- every file (config, key, socket, state, pids, logs) lives under one tmp folder, which
  is removed when the controller stops;
- SLURM_CONF is only ever set in the environment of the subprocesses we start
  (`SlurmTestbed.env`), never in os.environ;
- the daemons are stopped by the pids from their own pid files (SIGTERM, then SIGKILL),
  never by process name;
- slurmctld listens on all interfaces, so it gets a free port, and it lives as long as the
  pytest process (one per xdist worker): every module that asks gets the same controller,
  and each test starts from an empty reservation table (`slurm`).
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
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from docket_scheduler.slurm_reservations import Reservation, parse_reservations
from tests.clock import machine_clock_env
from tests.conftest import require
from tests.processes import read_pid, stop_daemon

BINARIES = ("munged", "slurmctld", "scontrol")
# Debian puts the daemons in /usr/sbin, which is not on every user's PATH.
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin", "/sbin"])

NODES_CONF = """\
NodeName=gpu[01-08] NodeAddr=127.0.0.1 CPUs=64 RealMemory=512000 Gres=gpu:a100:8 Features=a100 State=CLOUD
NodeName=gpu[09-12] NodeAddr=127.0.0.1 CPUs=64 RealMemory=1024000 Gres=gpu:h100:8 Features=h100 State=CLOUD
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@dataclass(frozen=True)
class SlurmTestbed:
    """A running controller: run `scontrol` as `testbed.scontrol` with `env=testbed.env`."""

    root: Path
    conf: Path
    scontrol: str
    env: dict[str, str]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run scontrol against this controller (UTC, this config), capturing text output."""
        return subprocess.run(
            [self.scontrol, *args], env=self.env, capture_output=True, text=True, timeout=30, check=check
        )

    def reservation_names(self) -> list[str]:
        out = self.run("-o", "show", "reservation").stdout
        return [
            token.split("=", 1)[1]
            for line in out.splitlines()
            for token in line.split()
            if token.startswith("ReservationName=")
        ]

    def reservations(self) -> dict[str, Reservation]:
        """Every reservation the controller holds, by name, read as the sync reads them."""
        return {r.name: r for r in parse_reservations(self.run("-o", "show", "reservation").stdout)}

    def delete_all_reservations(self) -> None:
        """Leave the controller as a fresh one for the next test."""
        for name in self.reservation_names():
            self.run("delete", f"ReservationName={name}")


def _which(name: str) -> str | None:
    return shutil.which(name, path=SEARCH_PATH)


def _missing_binaries() -> list[str]:
    return [name for name in BINARIES if _which(name) is None]


def _free_port() -> int:
    # There is a small race between closing this socket and slurmctld binding the port;
    # acceptable for tests, and a collision fails loudly at `scontrol ping`.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _slurm_conf(root: Path, port: int) -> str:
    munge_socket = root / "munge" / "munge.socket.2"
    return f"""\
ClusterName=docket-test
SlurmctldHost=localhost
SlurmctldPort={port}
SlurmUser={pwd.getpwuid(os.geteuid()).pw_name}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
SuspendProgram=/bin/true
ResumeProgram=/bin/true
SuspendTime=INFINITE
PrivateData=cloud
{NODES_CONF}"""



T = TypeVar("T")
_SHARED: dict[str, Any] = {}


def shared_daemon(config: pytest.Config, key: str, start: Callable[[], AbstractContextManager[T]]) -> T:
    """What `start()` yields, entered once per pytest process and exited when pytest ends.

    A session-scoped fixture imported into two test modules is two fixtures to pytest, each with
    its own value; this keeps one set of daemons per process (per xdist worker) whichever module
    asks first. If `start()` fails or skips, nothing is kept and the next asker tries again.
    """
    if key not in _SHARED:
        stack = ExitStack()
        try:
            _SHARED[key] = stack.enter_context(start())
        except BaseException:
            stack.close()
            raise

        def close() -> None:
            _SHARED.pop(key, None)
            stack.close()

        config.add_cleanup(close)
    shared: T = _SHARED[key]
    return shared


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return f"({path} not written)"


def _start_daemon(argv: list[str], *, env: dict[str, str], log: Path) -> None:
    """Run a daemon that forks into the background; fail with its own words if it cannot start."""
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {result.returncode}: {result.stderr.strip()}\n{_tail(log)}")


@contextlib.contextmanager
def slurm_testbed(root: Path) -> Iterator[SlurmTestbed]:
    """Start munged and slurmctld with all state under `root`; stop both on exit.

    Skips the test (or fails it when CI=true) if the Slurm or munge binaries are missing.
    """
    missing = _missing_binaries()
    # Skips on a laptop without Slurm; fails in CI (CI=true), where a skip would hide it.
    require(not missing, f"{', '.join(missing)} (apt-get install -y slurm-wlm munge)")

    munge_dir = root / "munge"
    for folder in (munge_dir, root / "state", root / "spool"):
        folder.mkdir(parents=True, exist_ok=True)
    # Clients cannot reach the socket unless its folder is world-executable.
    munge_dir.chmod(0o755)
    root.chmod(0o755)
    key = munge_dir / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)

    port = _free_port()
    conf = root / "slurm.conf"
    conf.write_text(_slurm_conf(root, port))
    env = {
        "PATH": SEARCH_PATH,
        "TZ": "UTC",
        "LANG": "C.UTF-8",
        "SLURM_CONF": str(conf),
        # Under `make test-at` (libfaketime) the daemons keep the suite's shifted clock too.
        **machine_clock_env(),
    }
    pids: list[tuple[int, str]] = []
    try:
        _start_daemon(
            [
                _which("munged") or "munged",
                f"--key-file={key}",
                f"--socket={munge_dir / 'munge.socket.2'}",
                f"--pid-file={munge_dir / 'munged.pid'}",
                f"--log-file={munge_dir / 'munged.log'}",
                f"--seed-file={munge_dir / 'munged.seed'}",
            ],
            env=env,
            log=munge_dir / "munged.log",
        )
        pids.append((read_pid(munge_dir / "munged.pid"), "munged"))

        # slurmctld daemonizes; its pid file is our handle on it.
        _start_daemon([_which("slurmctld") or "slurmctld", "-f", str(conf)], env=env, log=root / "slurmctld.log")
        pids.append((read_pid(root / "slurmctld.pid"), "slurmctld"))

        testbed = SlurmTestbed(root=root, conf=conf, scontrol=_which("scontrol") or "scontrol", env=env)
        deadline = time.monotonic() + 20
        while True:
            ping = testbed.run("ping", check=False)
            if "is UP" in ping.stdout:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"slurmctld did not come up: {ping.stdout}{ping.stderr}\n{_tail(root / 'slurmctld.log')}"
                )
            time.sleep(0.05)
        yield testbed
    finally:
        # Controller first, then the authentication daemon it talks to.
        for pid, comm in reversed(pids):
            stop_daemon(pid, comm)


@contextlib.contextmanager
def _testbed_in_tmp() -> Iterator[SlurmTestbed]:
    """A controller with its state in a fresh folder under /tmp, removed afterwards.

    Not under pytest's tmp_path: munged insists that every folder above its socket is
    world-executable, and pytest's base folder is private (0700).
    """
    root = Path(tempfile.mkdtemp(prefix="docket-slurm-"))
    try:
        with slurm_testbed(root) as testbed:
            yield testbed
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def slurmctld(request: pytest.FixtureRequest) -> SlurmTestbed:
    """One private controller per pytest process (per xdist worker), shared by every module that
    imports this fixture and stopped by its pid when pytest ends."""
    return shared_daemon(request.config, "slurmctld", _testbed_in_tmp)


@pytest.fixture(name="slurm")
def clean_slurmctld(slurmctld: SlurmTestbed) -> SlurmTestbed:
    """`slurm`: the shared controller with no reservations at the start of the test (reservations
    are all the state these tests give it).

    Import both fixtures into a test module: `from tests.allocations.slurm_testbed import
    clean_slurmctld, slurmctld`.
    """
    slurmctld.delete_all_reservations()
    return slurmctld
