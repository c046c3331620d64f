"""A finalized week always gets its decision record: the worker writing it dies (SIGKILL) mid-record, the relay hands
the work over again and the other worker writes it, once.

Real pieces only: a redis-server and two Celery workers (solo pool, production settings) that the test starts on a
free port and stops by pid, the test's PostgreSQL database, and the record asked for through the real outbox
(`cycle_finalize` → `cycle_transition` → an outbox message → after commit → the broker). The worker that takes the
message is held mid-record by a lock the test holds on the archive's chain head (the record's data is read, its
pages not yet written), then killed: its transaction dies with it. The relay job, run at an instant past
REDELIVER_AFTER (time is an input), hands the message to the broker again and the surviving worker writes the record.
"""

from __future__ import annotations

import signal
from datetime import timedelta
from functools import partial
from pathlib import Path

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from committee import outbox, selectors
from committee import services as committee_services
from committee.models import CycleStatus, OutboxMessage, ReviewCycle
from reports.models import ArchiveChain, Page
from reports.selectors import revision_latest
from tests.conftest import require
from tests.processes import SECRET_KEY, app_env, celery_worker, database_url, log_tail, redis_server, stop, wait_until
from tests.reports.big_week import big_week

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def _says_ready(log: Path) -> bool:
    return " ready." in log.read_text()


def _not_ready(name: str, log: Path) -> str:
    return f"worker {name} ready\n{log_tail(log)}"


def _waiting_on_a_lock(url: str) -> bool:
    """A session of the database (the worker's) waits for a lock: it is inside the record's transaction."""
    with psycopg.connect(url, autocommit=True) as probe:
        row = probe.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return bool(row and row[0])


def test_a_worker_killed_mid_record_leaves_the_week_finalized_and_the_relay_gets_the_record_written_once(
    world, tmp_path, monkeypatch, settings
):
    require(connection.vendor == "postgresql", "PostgreSQL (run with DATABASE_URL=postgres://…)")
    big_week(world, requests=3)
    url = database_url(connection.settings_dict)
    names = ["first", "second"]
    logs = [tmp_path / f"{name}-worker.log" for name in names]
    with redis_server(tmp_path / "redis") as redis:
        env = app_env(url, DJANGO_SETTINGS_MODULE="config.settings", DEBUG="0", SECRET_KEY=SECRET_KEY,
                      CELERY_BROKER_URL=redis.url, EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
                      LOG_LEVEL="INFO")
        monkeypatch.setenv("CELERY_BROKER_URL", redis.url)  # this process relays to that broker, as the app does
        # Through Django's settings, which Celery reads on each use; `app.conf.x = …` would pin an override
        # over them for every later test in this process.
        settings.CELERY_TASK_ALWAYS_EAGER = False
        workers = {name: celery_worker(env, name=name, log=log) for name, log in zip(names, logs, strict=True)}
        try:
            for name, log in zip(names, logs, strict=True):
                wait_until(partial(_says_ready, log), timeout=90, interval=0.1, what=partial(_not_ready, name, log))
            ArchiveChain.objects.get_or_create(pk=1)
            with psycopg.connect(url) as holder:  # the archive's chain head, held: a record write waits for it
                holder.execute("SELECT id FROM reports_archivechain WHERE id = 1 FOR UPDATE")
                cycle = committee_services.cycle_finalize(cycle=world.cycle, actor=world.chair)
                message = OutboxMessage.objects.get(key__startswith=f"decision-record:{cycle.pk}:")
                assert message.relayed_at is not None  # handed to the broker after commit, not written here
                received = f"reports.write_decision_record[outbox-{message.pk}] received"
                wait_until(lambda: any(received in log.read_text() for log in logs), timeout=60, interval=0.05,
                           what=lambda: f"a worker taking the record\n{log_tail(logs[0])}\n{log_tail(logs[1])}")
                wait_until(partial(_waiting_on_a_lock, url), timeout=30, interval=0.05,
                           what=lambda: f"the worker inside the record's transaction\n{log_tail(logs[0])}\n"
                                        f"{log_tail(logs[1])}")
                taker = next(name for name, log in zip(names, logs, strict=True) if received in log.read_text())
                survivor = next(name for name in names if name != taker)
                workers[taker].send_signal(signal.SIGKILL)  # mid-record
                workers[taker].wait(timeout=10)
                holder.rollback()

            # The week stands; its record is not written, and the chair reads that it is being written.
            assert ReviewCycle.objects.get(pk=cycle.pk).status == CycleStatus.FINALIZED
            assert not Page.objects.filter(source_key=f"cycle:{cycle.week}").exists()
            assert selectors.cycle_record_progress(cycle=cycle).waiting == 1

            relayed = outbox.outbox_relay(now=timezone.now() + outbox.REDELIVER_AFTER + timedelta(seconds=1))
            assert relayed.relayed == 1
            survivor_log = logs[names.index(survivor)]
            wait_until(lambda: OutboxMessage.objects.get(pk=message.pk).done_at, timeout=60, interval=0.1,
                       what=lambda: f"worker {survivor} writing the record\n{log_tail(survivor_log)}")
        finally:
            for process in workers.values():
                stop(process)

    page = Page.objects.get(source_key=f"cycle:{cycle.week}")
    assert page.revisions.count() == 1  # once
    assert revision_latest(page=page).data["cycle"]["status"] == "finalized"
    message.refresh_from_db()
    assert message.done_by.startswith(f"{survivor}@") and message.relay_attempts == 2
    assert selectors.cycle_record_progress(cycle=cycle).up_to_date
