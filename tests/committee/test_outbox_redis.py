"""Nothing is lost when Redis is down: a real redis-server (started here on a free port, stopped by its pid) and a
real Celery worker process, pointed at this test's database.

While Redis is down a team submits a request, the chair publishes a week and a member asks for a PDF: each action
succeeds and its work waits in the outbox. Redis comes back, the relay hands the work to the broker, and the worker
does it; a message delivered twice is done once.

Needs a database another process can open: PostgreSQL (CI), or SQLite with DOCKET_TEST_DB_FILE=1.
The machine's own Redis (port 6379) is never touched.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import redis
from django.core.management import call_command
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from redis.backoff import NoBackoff
from redis.retry import Retry

from committee import services
from committee.models import (
    CycleStatus,
    Notification,
    NotificationKind,
    OutboxMessage,
    RequestStatus,
)
from committee.outbox import broker_held_task_ids, outbox_enqueue, outbox_relay
from config.celery import app
from reports.models import ExportStatus, Page, PageKind, PdfExport
from reports.selectors import revision_latest
from tests.clock import child_env, unshifted_env
from tests.committee.reviewing import decide, score
from tests.conftest import require
from tests.factories import file_request

pytestmark = [pytest.mark.redis]

REDIS_SERVER = shutil.which("redis-server")
CELERY = Path(sys.executable).parent / "celery"
ROOT = Path(__file__).resolve().parents[2]
WAIT_SECONDS = 90


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(what: str, check: Callable[[], bool], seconds: float = WAIT_SECONDS) -> None:
    """Poll `check` until it holds; each check is cheap (a ping, a query, a log read), so it is polled often."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError(f"waited {seconds}s for {what}")


def _stop(process: subprocess.Popen[Any]) -> None:
    """Stop a process this test started, by its pid: SIGTERM, then SIGKILL if it does not go."""
    if process.poll() is not None:
        return
    os.kill(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


class RedisServer:
    """A throwaway redis-server on its own port: no persistence, stopped and started again by the test."""

    def __init__(self, port: int, log: Path) -> None:
        assert port != 6379, "never the machine's own Redis"
        self.port = port
        self.log = log
        self.process: subprocess.Popen[Any] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _answers(self) -> bool:
        """One ping, no retries: redis-py's default retries a refused connection with backoff (~2 s a ping)."""
        try:
            client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.5,
                                 retry=Retry(NoBackoff(), 0))
            return bool(client.ping())
        except redis.RedisError:
            return False

    def start(self) -> None:
        assert REDIS_SERVER is not None
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--daemonize", "no"],
                stdout=log, stderr=subprocess.STDOUT, env=unshifted_env(),
            )
        _wait_for(f"redis-server on port {self.port}", self._answers, 20)

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)
            self.process = None
        _wait_for("redis-server to stop", lambda: not self._answers(), 20)


def _database_url() -> str:
    """The test database (not the development one) as a URL the worker's settings understand."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    user = quote(db["USER"] or "")
    password = f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else ""
    host = db["HOST"] or "127.0.0.1"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{user}{password}@{host}{port}/{db['NAME']}"


def _shared_database() -> bool:
    if connection.vendor == "postgresql":
        return True
    name = str(connection.settings_dict["NAME"])
    return connection.vendor == "sqlite" and "memory" not in name and Path(name).is_file()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    require(REDIS_SERVER is not None, "redis-server (apt-get install redis-server)")
    server = RedisServer(_free_port(), tmp_path / "redis.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def start_worker(transactional_db: None, tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Start `celery -A config worker --pool=solo` on a broker, against this test's database; stopped by pid."""
    require(_shared_database(), "a test database another process can open (PostgreSQL, or DOCKET_TEST_DB_FILE=1)")
    processes: list[subprocess.Popen[Any]] = []

    def start(broker_url: str) -> Path:
        log_path = tmp_path / "worker.log"
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "CELERY_BROKER_URL": broker_url,
            "DATABASE_URL": _database_url(),
            "DOCKET_PDF_ROOT": str(tmp_path / "pdf"),
            "CHROMIUM_PATH": "/nonexistent",  # the PDFs here need no charts
        }
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [str(CELERY), "-A", "config", "worker", "--pool=solo", "--loglevel=INFO", "--without-gossip",
                 "--without-mingle", "--without-heartbeat", "-n", f"docket-test-{os.getpid()}@%h"],
                cwd=ROOT, env=child_env(env), stdout=log, stderr=subprocess.STDOUT,
            )
        processes.append(process)
        _wait_for("the Celery worker to be ready",
                  lambda: process.poll() is not None or b" ready." in log_path.read_bytes(), 60)
        assert process.poll() is None, log_path.read_text()
        return log_path

    try:
        yield start
    finally:
        for process in processes:
            _stop(process)


def _finalized_week(world: Any) -> Any:
    """A second cycle, filed, scored, decided and finalized while everything runs in-process (eager)."""
    original = world.cycle
    world.cycle = services.cycle_create(week="2027-W10")
    ranker = file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    vision = file_request(world, team=world.team_b, pool=world.h100, title="Vision model", gpu_count=8,
                          min_gpu_count=4)
    world.cycle = services.cycle_close_intake(cycle=world.cycle, actor=world.chair)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, ranker, 9, 8, 8)
        score(member, vision, 6, 6, 5)
    decide(world, ranker)
    decide(world, vision, outcome="partial", granted_gpu_count=6)
    finalized = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    world.cycle = original
    return finalized


def test_actions_succeed_while_redis_is_down_and_their_work_runs_in_the_worker_once_it_is_back(
    start_worker, redis_server, world, client, settings, monkeypatch
):
    week = _finalized_week(world)
    draft = file_request(world, title="Eval sweep", submit=False)
    record_page = Page.objects.get(kind=PageKind.DECISION_RECORD)
    assert OutboxMessage.objects.filter(done_at__isnull=True).count() == 0  # everything so far ran in-process

    # From here on Docket has a broker, and the broker goes down.
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis_server.url
    monkeypatch.setenv("CELERY_BROKER_URL", redis_server.url)  # Celery reads the variable before settings
    settings.CELERY_BROKER_CONNECTION_TIMEOUT = 1.0
    redis_server.stop()

    client.force_login(world.lead_a)
    started = time.monotonic()
    response = client.post(reverse("committee:request-submit", args=[draft.pk]), follow=True)
    assert response.status_code == 200
    client.force_login(world.chair)
    response = client.post(reverse("committee:cycle-publish", args=[week.week]), {"confirm": "1"}, follow=True)
    assert response.status_code == 200 and "is published" in response.content.decode()
    client.force_login(world.member_a)
    number = revision_latest(page=record_page).number
    response = client.post(reverse("reports:revision-pdf", args=[record_page.slug, number]), follow=True)
    assert response.status_code == 200
    assert time.monotonic() - started < 30  # no page hangs on the missing broker

    draft.refresh_from_db()
    week.refresh_from_db()
    assert draft.status == RequestStatus.SUBMITTED and week.status == CycleStatus.PUBLISHED
    export = PdfExport.objects.get(revision=revision_latest(page=record_page))
    keys = [f"notify:request-submitted:{draft.pk}", f"notify:published:{week.pk}:v1", f"pdf-export:{export.pk}:0"]
    waiting = OutboxMessage.objects.filter(key__in=keys)
    assert waiting.count() == 3 and not waiting.filter(relayed_at__isnull=False).exists()
    assert not Notification.objects.filter(kind=NotificationKind.DECISION_PUBLISHED).exists()
    assert export.status == ExportStatus.PENDING

    # Redis is back: a worker runs, the relay (beat's job, here its command) hands the waiting work over.
    redis_server.start()
    worker_log = start_worker(redis_server.url)
    call_command("relay_outbox")
    _wait_for("the worker to do the waiting work",
              lambda: OutboxMessage.objects.filter(key__in=keys, done_at__isnull=False).count() == 3)

    for message in OutboxMessage.objects.filter(key__in=keys):
        assert message.done_by.startswith(f"docket-test-{os.getpid()}@"), message.done_by  # the worker, not us
        assert f"pid {os.getpid()}" not in message.done_by
    # The worker's lines of each task carry the id of the request that asked for its work (core/logs.py).
    asked = list(OutboxMessage.objects.filter(key__in=keys).exclude(request_id=""))
    assert asked, "the work was asked for by requests, which have ids"
    for message in asked:
        line = f"[{message.request_id}] task {message.task_name}[outbox-{message.pk}] started"
        assert line in worker_log.read_text(), line
    submitted = Notification.objects.filter(kind=NotificationKind.REQUEST_SUBMITTED, key=f"request:{draft.pk}")
    assert sorted(submitted.values_list("recipient__username", flat=True)) == ["lead_a", "member_a"]
    published = Notification.objects.filter(kind=NotificationKind.DECISION_PUBLISHED)
    assert sorted(published.values_list("recipient__username", flat=True)) == ["lead_a", "member_a", "member_b",
                                                                              "tech"]
    export.refresh_from_db()
    assert export.status == ExportStatus.DONE and export.attempts == 1

    # The broker delivers the same message again: the worker runs the task and it does nothing.
    message = OutboxMessage.objects.get(key=f"notify:published:{week.pk}:v1")
    count = Notification.objects.count()
    # Through the test's own broker: app.conf.broker_url was fixed by whichever test used the app first in this
    # process (the whole suite runs many in one), so a plain send_task could go to another Redis.
    with app.connection_for_write(redis_server.url) as connection:
        app.send_task(message.task_name, kwargs=message.kwargs, task_id=f"outbox-{message.pk}", connection=connection)
    assert message.task_name == "committee.notify"  # the one notification task, whatever the kind
    succeeded = f"Task committee.notify[outbox-{message.pk}] succeeded"
    _wait_for("the second delivery to run", lambda: worker_log.read_text().count(succeeded) == 2)
    assert worker_log.read_text().rsplit(succeeded, 1)[1].split("\n", 1)[0].endswith(": 0")
    assert Notification.objects.count() == count


def test_a_notification_queued_under_its_old_task_name_before_an_upgrade_is_delivered_by_the_new_worker(
    start_worker, redis_server, world, settings, monkeypatch
):
    """Before `committee.notify`, each kind had its own task: what an old release left waiting in the outbox, and
    what it left in the broker's queue, is delivered by a worker of this one, as its kind, once."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis_server.url
    monkeypatch.setenv("CELERY_BROKER_URL", redis_server.url)  # Celery reads the variable before settings
    settings.CELERY_BROKER_CONNECTION_TIMEOUT = 1.0
    # Written by the old release, not relayed yet.
    waiting = OutboxMessage.objects.create(
        key=f"notify:intake-closed:{world.cycle.pk}", task_name="committee.notify_intake_closed",
        kwargs={"cycle_id": world.cycle.pk},
    )
    # Handed to the broker by the old release: in Redis's queue under the old name when the new worker starts.
    queued = OutboxMessage.objects.create(
        key="pre-upgrade:in-the-broker", task_name="committee.notify_intake_closed",
        kwargs={"cycle_id": world.cycle.pk}, relayed_at=timezone.now(), relay_attempts=1,
    )
    with app.connection_for_write(redis_server.url) as connection:
        app.send_task(queued.task_name, kwargs=queued.kwargs, task_id=f"outbox-{queued.pk}", connection=connection)

    worker_log = start_worker(redis_server.url)
    call_command("relay_outbox")
    _wait_for("the worker to deliver both",
              lambda: OutboxMessage.objects.filter(pk__in=[waiting.pk, queued.pk], done_at__isnull=False).count() == 2)

    told = Notification.objects.filter(kind=NotificationKind.INTAKE_CLOSED)
    assert sorted(told.values_list("recipient__username", flat=True)) == ["chair", "finance", "reviewer", "tech"]
    log = worker_log.read_text()
    runs = [line for line in log.splitlines() if "Task committee.notify_intake_closed[outbox-" in line and
            " succeeded " in line]
    assert sorted(line.rsplit(": ", 1)[1] for line in runs) == ["0", "4"], runs  # recorded once between them


def test_work_a_restarted_redis_lost_is_handed_over_again_at_the_next_relay(
    redis_server, world, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """No worker runs, so a handed-over message sits in the broker's queue until Redis restarts and loses it."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis_server.url
    monkeypatch.setenv("CELERY_BROKER_URL", redis_server.url)  # Celery reads the variable before settings
    settings.CELERY_BROKER_CONNECTION_TIMEOUT = 1.0
    with django_capture_on_commit_callbacks(execute=True):
        message = outbox_enqueue(
            task_name=services.NOTIFY_TASK, key="test:lost-by-broker",
            kwargs={"kind": NotificationKind.INTAKE_CLOSED, "arguments": {"cycle_id": world.cycle.pk}},
        )
    message.refresh_from_db()
    assert message.relay_attempts == 1 and message.relayed_at is not None
    handed_over = message.relayed_at
    assert f"outbox-{message.pk}" in (broker_held_task_ids() or set())

    outbox_relay(now=handed_over + timedelta(minutes=2))  # the broker holds it: left alone
    message.refresh_from_db()
    assert message.relay_attempts == 1

    redis_server.stop()  # no persistence: the queue is gone
    redis_server.start()
    assert f"outbox-{message.pk}" not in (broker_held_task_ids() or set())
    outbox_relay(now=handed_over + timedelta(minutes=3))  # the next minute's relay, not 15 minutes later

    message.refresh_from_db()
    assert message.relay_attempts == 2 and message.relayed_at == handed_over + timedelta(minutes=3)
    assert f"outbox-{message.pk}" in (broker_held_task_ids() or set())


def test_a_submit_answers_while_redis_hangs_and_its_work_waits_in_the_outbox(
    redis_server, world, client, settings, monkeypatch
):
    """SIGSTOP: the server still accepts connections (the kernel does) and never answers a command."""
    draft = file_request(world, title="Eval sweep", submit=False)
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis_server.url
    monkeypatch.setenv("CELERY_BROKER_URL", redis_server.url)
    settings.CELERY_BROKER_CONNECTION_TIMEOUT = 1.0
    client.force_login(world.lead_a)
    assert redis_server.process is not None
    os.kill(redis_server.process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        response = client.post(reverse("committee:request-submit", args=[draft.pk]), follow=True)
        elapsed = time.monotonic() - started
    finally:
        os.kill(redis_server.process.pid, signal.SIGCONT)

    assert response.status_code == 200
    assert elapsed < 30, f"the submit waited {elapsed:.0f} s on a hung broker"  # was 120 s before the ping
    draft.refresh_from_db()
    assert draft.status == RequestStatus.SUBMITTED
    message = OutboxMessage.objects.get(key=f"notify:request-submitted:{draft.pk}")
    assert message.relayed_at is None and message.done_at is None  # waits for the relay
