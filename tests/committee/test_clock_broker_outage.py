"""The weekly clock survives its broker: Redis down across Friday's intake close and Monday 00:00, then back.

Real processes: private redis-servers (down until the test starts them), Celery workers with beat inside ticking
every second (`DOCKET_CLOCK_TICK_SECONDS=1`), on the test's clock (`child_env`: each child starts at the test's
instant then, a second before the close or Monday 00:00, and ticks from there). Beat cannot reach its broker
after the instant; once Redis is there, a tick closes the intake (and, on Monday, opens the week), once.

Needs a database another process can open: PostgreSQL (CI), or SQLite with DOCKET_TEST_DB_FILE=1.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.db import connection

from committee import weeks
from committee.models import ClockRun, CycleStatus, OutboxMessage, ReviewCycle
from tests.clock import child_env, unshifted_env
from tests.conftest import require
from tests.factories import file_request
from tests.processes import BIN, ROOT, app_env, database_url, free_port, require_tool, stop, wait_until

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True)]


class Broker:
    """A redis-server on one port that the test stops and starts again (in memory only)."""

    def __init__(self, work_dir: Path) -> None:
        require_tool("redis-server", "redis-server (apt-get install redis-server)")
        self.port = free_port()
        self.dir = work_dir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.dir), "--logfile", str(self.dir / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=unshifted_env(),
        )
        wait_until(self.answers, timeout=15, what=f"redis-server on port {self.port}", interval=0.02)

    def stop(self) -> None:
        stop(self.process)
        self.process = None


class Clockwork:
    """A Celery worker with beat inside it (`-B`: beat forked from the worker, one start-up for both) on `broker`,
    started at the test's instant then; stopped by pid."""

    def __init__(self, name: str, broker: Broker, log_dir: Path) -> None:
        self.name = name
        self.env = app_env(database_url(connection.settings_dict), CELERY_BROKER_URL=broker.url,
                           DOCKET_CLOCK_TICK_SECONDS="1")
        self.log_dir = log_dir
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def log(self) -> Path:
        return self.log_dir / f"worker-{self.name}.log"

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as sink:
            self.processes.append(subprocess.Popen(
                [str(BIN / "celery"), "-A", "config", "worker", "-B", "--pool=solo", "--loglevel=info",
                 "-n", f"{self.name}@%h", "-s", str(self.log_dir / f"schedule-{self.name}"),
                 "--without-gossip", "--without-mingle", "--without-heartbeat"],
                cwd=ROOT, env=child_env(self.env), stdout=sink, stderr=subprocess.STDOUT,
            ))

    def logs(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def beat_failed_to_send(self, *, after: datetime) -> datetime | None:
        """When beat, by its own clock, last tried to reach the broker after `after` and could not (at its start or
        sending a tick), or None."""
        zone = ZoneInfo(settings.TIME_ZONE)  # the children log in the committee's zone
        failures = [
            datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=zone)
            for line in self.log.read_text(errors="replace").splitlines()
            if "beat: Connection error" in line or "Couldn't apply scheduled task clock-tick" in line
        ]
        return max((at for at in failures if at > after), default=None)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Callable[[str], tuple[Broker, Clockwork]]]:
    """Brokers with their worker and beat; everything stopped by pid at the end, all at once."""
    vendor, name = connection.vendor, str(connection.settings_dict["NAME"])
    require(vendor == "postgresql" or (vendor == "sqlite" and "memory" not in name and Path(name).is_file()),
            "a test database another process can open (PostgreSQL, or DOCKET_TEST_DB_FILE=1)")
    made: list[tuple[Broker, Clockwork]] = []

    def make(name: str) -> tuple[Broker, Clockwork]:
        broker = Broker(tmp_path / f"redis-{name}")
        made.append((broker, Clockwork(name, broker, tmp_path / "logs")))
        return made[-1]

    try:
        yield make
    finally:
        processes = [p for _broker, work in made for p in work.processes] + [b.process for b, _work in made]
        for process in processes:  # TERM to all first: they shut down side by side
            with contextlib.suppress(ProcessLookupError, AttributeError):
                process.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        for process in processes:
            stop(process, grace=5)


def test_intake_closes_and_the_next_week_opens_once_after_the_broker_was_down_across_both_instants(
    world: Any, stack: Callable[[str], tuple[Broker, Clockwork]], clock: Any
) -> None:
    file_request(world, title="Ranker retrain")
    cycle = world.cycle
    closes = cycle.intake_closes_at
    monday = weeks.week_bounds(cycle.week)[0]  # the allocation week begins: the next week's intake opens
    next_week = weeks.next_week_label(monday)
    # Two clocks side by side, to pay the processes' start once: one a second before Friday's close, one a second
    # before Monday 00:00, each with its broker down from before it starts.
    friday_broker, friday = stack("friday")
    monday_broker, monday_clock = stack("monday")
    clock.move_to(closes - timedelta(seconds=1))
    friday.start()
    clock.move_to(monday - timedelta(seconds=1))
    monday_clock.start()

    # Friday 18:00: beat cannot reach Redis after the instant; nothing closes; Redis is back; intake closes.
    failed = wait_until(lambda: friday.beat_failed_to_send(after=closes), timeout=90, what=friday.logs)
    assert ReviewCycle.objects.get(pk=cycle.pk).status == CycleStatus.OPEN
    friday_broker.start()
    wait_until(lambda: ReviewCycle.objects.filter(pk=cycle.pk, status=CycleStatus.IN_REVIEW).exists(),
               timeout=90, what=friday.logs)
    closing = ClockRun.objects.get(job="close_intake", period=cycle.week)
    assert closing.due_at == closes and closing.ran_at > failed  # late: at a tick after Redis was back
    assert ReviewCycle.objects.get(pk=cycle.pk).intake_closed_at == closes  # closed as of 18:00

    # Monday 00:00: the same.
    failed = wait_until(lambda: monday_clock.beat_failed_to_send(after=monday), timeout=90, what=monday_clock.logs)
    assert not ReviewCycle.objects.filter(week=next_week).exists()
    monday_broker.start()
    wait_until(lambda: ReviewCycle.objects.filter(week=next_week).exists(), timeout=90, what=monday_clock.logs)
    opened = ClockRun.objects.get(job="open_cycle", period=next_week).ran_at
    assert opened > failed

    # Once: later ticks find nothing owed. One cycle, one run of each, one "intake closed" message.
    wait_until(lambda: ClockRun.objects.filter(job=ClockRun.TICK, ran_at__gt=opened + timedelta(seconds=2)).exists(),
               timeout=60, what=monday_clock.logs)
    assert ReviewCycle.objects.filter(week=next_week, status=CycleStatus.OPEN).count() == 1
    assert list(ClockRun.objects.filter(job__in=["close_intake", "open_cycle"]).order_by("job")
                .values_list("job", "period")) == [("close_intake", cycle.week), ("open_cycle", next_week)]
    assert OutboxMessage.objects.filter(key=f"notify:intake-closed:{cycle.pk}").count() == 1
