"""Real services for the tests that need them: gunicorn, a private PostgreSQL cluster, redis-server, a Celery worker.

Each one is started by the test on 127.0.0.1 and a free port, as a child process whose pid the
test holds, and is stopped by that pid (TERM, then KILL) in a `finally`, also when the test
fails. Nothing here touches the machine's own PostgreSQL or Redis. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.clock import child_env, unshifted_env

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the virtualenv's bin: gunicorn, celery
PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))
SECRET_KEY = "tests-only-secret-key-not-for-production-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(check: Callable[[], Any], *, timeout: float, what: str | Callable[[], str],
               interval: float = 0.1) -> Any:
    """Poll `check` until it returns something truthy; fail naming `what` (or what it returns) after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what() if callable(what) else what}: not within {timeout:.0f} s")
        time.sleep(interval)


def running(pid: int, comm: str = "") -> bool:
    """Whether `pid` is still a live process (named `comm`, when given).

    A daemon that has exited stays a zombie until PID 1 reaps it, which this machine's init
    does only every second or two: a zombie counts as gone, or every stop would wait for it.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # /proc/<pid>/stat is "pid (comm) state ...", and comm may itself hold spaces or parentheses.
    name, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:][:1]
    return state not in ("Z", "X") and name.startswith(comm[:15])


def stop_daemon(pid: int, comm: str = "", grace_s: float = 5.0) -> None:
    """SIGTERM, wait, then SIGKILL: only the one process we started (still named `comm`, when
    given: pids wrap, and a reused one belongs to someone else)."""
    if not running(pid, comm):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while running(pid, comm):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.02)


def stop(process: subprocess.Popen[Any] | None, *, grace: float = 10.0, sig: int = signal.SIGTERM) -> None:
    """Stop a child process by its pid: `sig` (TERM), then KILL after `grace` seconds."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(sig)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait(timeout=10)


def read_pid(path: Path, *, timeout_s: float = 10.0) -> int:
    """The pid a daemon writes into `path` once it has started (it may take a moment to appear)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError, ValueError):
            text = path.read_text().strip()
            if text:
                return int(text)
        time.sleep(0.05)
    raise RuntimeError(f"no pid in {path} after {timeout_s} s")


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def database_url(settings_dict: Mapping[str, Any]) -> str:
    """A DATABASE_URL for another process to open the database Django is connected to (PostgreSQL)."""
    user = quote(settings_dict.get("USER") or "", safe="")
    password = quote(settings_dict.get("PASSWORD") or "", safe="")
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    return f"postgres://{credentials}{host}{port}/{quote(settings_dict['NAME'], safe='')}"


def app_env(database: str, **extra: str) -> dict[str, str]:
    """The environment of a Docket process under test: tests.settings on `database`, quiet logs."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update({
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": database,
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra)
    return env


def http_status(url: str, *, timeout: float = 5.0) -> int | None:
    """The status a GET on `url` answers, None if nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (loopback URLs only)
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, OSError):
        return None


# --- gunicorn --------------------------------------------------------------------------------


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


@contextlib.contextmanager
def gunicorn(env: Mapping[str, str], *, log_dir: Path, workers: int = 2, timeout: int = 120,
             ready_path: str = "/accounts/login/", extra_args: Sequence[str] = ()) -> Iterator[Server]:
    """Serve config.wsgi with gunicorn (sync workers) on 127.0.0.1 and a free port until the block ends.

    `extra_args` go last on gunicorn's command line (e.g. `--worker-class gthread --threads 4`).
    """
    require_tool(BIN / "gunicorn", "gunicorn (pip install -r requirements.txt)")
    port = free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"gunicorn-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(BIN / "gunicorn"), "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
             "--worker-class", "sync", "--timeout", str(timeout), "--graceful-timeout", "5",
             "--log-level", "warning", *extra_args],
            cwd=ROOT, env=child_env(env), stdout=sink, stderr=subprocess.STDOUT,
        )
    server = Server(url=f"http://127.0.0.1:{port}", process=process, log=log)
    try:
        def up() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"gunicorn exited with {process.returncode}:\n{log_tail(log)}")
            return http_status(server.url + ready_path) is not None

        wait_until(up, timeout=60, what=f"gunicorn answering on {server.url}", interval=0.2)
        yield server
    finally:
        stop(process)


def require_tool(path: Path | str, what: str) -> None:
    from tests.conftest import require

    found = Path(path).exists() if os.sep in str(path) else shutil.which(str(path)) is not None
    require(found, what)


# --- PostgreSQL, a private cluster in a temporary folder ----------------------------------------


class PrivatePostgres:
    """A PostgreSQL cluster of its own: initdb in a temporary folder, served on 127.0.0.1 and a free port.

    initdb refuses to run as root, so as root the cluster belongs to the `postgres` OS user
    (runuser). `stop()` signals the postmaster by the pid in its postmaster.pid (SIGINT: fast
    shutdown, rolling back open transactions; SIGQUIT with `immediate=True`), then SIGKILL after a grace period.
    """

    def __init__(self) -> None:
        require_tool(PG_BIN / "initdb", f"PostgreSQL server binaries ({PG_BIN}; apt-get install postgresql)")
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="docket-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self._as_owner: list[str] = []
        if os.geteuid() == 0:
            require_tool("runuser", "runuser (util-linux), to run PostgreSQL as the postgres user")
            shutil.chown(self.root, user="postgres", group="postgres")
            self._as_owner = ["runuser", "-u", "postgres", "--"]

    def _run(self, *argv: str, timeout: float = 60) -> None:
        done = subprocess.run([*self._as_owner, *argv], capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}\n{log_tail(self.log)}")

    def init(self) -> None:
        self._run(str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync",
                  "-E", "UTF8", "--locale=C")

    def init_migrated(self, database: str) -> None:
        """initdb, and `database` created with every migration in it, for a `start()` after.

        A copy of a cluster migrated once per machine for these migrations and this PostgreSQL
        (`docket-pg-migrated-<key>` in the temporary folder, keyed as tests/migrated_template.py keys SQLite's
        template, made under a lock by the first test to ask), instead of `migrate` in every cluster: about 10 s
        idle, most of a fault test's setup. The copy is a whole cluster stopped cleanly, so it starts as any."""
        import fcntl

        from tests.migrated_template import migrations_key

        version = subprocess.run([str(PG_BIN / "postgres"), "-V"], capture_output=True, text=True, check=True).stdout
        key = hashlib.sha256(f"{migrations_key()} {database} {version}".encode()).hexdigest()[:16]
        template = Path(tempfile.gettempdir()) / f"docket-pg-migrated-{key}"
        with open(f"{template}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not template.exists():
                self.init()
                self.start()
                try:
                    self.create_database(database)
                    migrated = subprocess.run(
                        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT,
                        env=child_env(app_env(self.url(database))), capture_output=True, text=True, timeout=300,
                        check=False)
                    assert migrated.returncode == 0, migrated.stderr[-3000:]
                finally:
                    self.stop()
                partial = template.with_name(f"{template.name}.{os.getpid()}.partial")
                self._copy(self.data, partial)
                partial.rename(template)
                return
        self._copy(template, self.data)

    def _copy(self, source: Path, target: Path) -> None:
        """A cluster's folder copied whole, its owner and modes kept (PostgreSQL starts only on its own 0700 folder)."""
        subprocess.run(["cp", "-a", str(source), str(target)], check=True, timeout=120)

    def start(self) -> None:
        # fsync off: nothing here survives the machine. But a commit is written to the operating system before it
        # answers (synchronous_commit stays on), so a cluster stopped as if it crashed (`stop(immediate=True)`) keeps
        # every commit, as a production server does: with it off, a sign-in committed just before could be lost.
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c full_page_writes=off")
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options,
                  "-w", "-t", "30", "start")

    @property
    def pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def running(self) -> bool:
        pid = self.pid
        return pid is not None and running(pid, "postgres")

    def stop(self, *, grace: float = 20.0, immediate: bool = False) -> None:
        """Stop the cluster: a fast shutdown, or with `immediate` an immediate one (as if it crashed).

        In a fast shutdown every backend exits cleanly, releasing its locks as it goes, one after the other: a
        backend waiting for a lock can be granted it by one that already left, and commit before its own turn.
        In an immediate shutdown a backend leaves without releasing anything, so whoever waits still waits when
        it is cut off; the next start runs crash recovery.
        """
        pid = self.pid
        if pid is None or not self.running():
            return
        os.kill(pid, signal.SIGQUIT if immediate else signal.SIGINT)
        deadline = time.monotonic() + grace
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.running():
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: not self.running(), timeout=10, what="PostgreSQL gone after SIGKILL")

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True, connect_timeout=5) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    cluster = PrivatePostgres()
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.cleanup()


# --- Redis ------------------------------------------------------------------------------------


@dataclass
class Redis:
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False


@contextlib.contextmanager
def redis_server(work_dir: Path) -> Iterator[Redis]:
    """A redis-server of the test's own, in memory only, on 127.0.0.1 and a free port."""
    require_tool("redis-server", "redis-server (apt-get install redis-server)")
    port = free_port()
    work_dir.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(work_dir), "--logfile", str(work_dir / f"redis-{port}.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=unshifted_env(),
    )
    redis = Redis(port=port, process=process)
    try:
        wait_until(redis.answers, timeout=15, what=f"redis-server on port {port}")
        yield redis
    finally:
        stop(process)


# --- Celery -----------------------------------------------------------------------------------


def celery_worker(env: Mapping[str, str], *, name: str, log: Path) -> subprocess.Popen[bytes]:
    """A Celery worker (solo pool: the task runs in the worker process itself). The caller stops it by pid."""
    require_tool(BIN / "celery", "celery (pip install -r requirements.txt)")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as sink:
        return subprocess.Popen(
            [str(BIN / "celery"), "-A", "config", "worker", "--pool=solo", "--loglevel=info", "-n", f"{name}@%h",
             "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=child_env(env), stdout=sink, stderr=subprocess.STDOUT,
        )
