"""A Celery worker dies (SIGKILL) in the middle of rendering a PDF: the next worker renders it, once.

Real pieces only: a redis-server and two Celery workers (solo pool, production settings) that
the test starts on a free port and stops by pid, the test's PostgreSQL database, and the PDF
export asked for through the real outbox (`pdf_export_request` → after commit → the broker).
The task is acknowledged late (CELERY_TASK_ACKS_LATE), so a worker that dies leaves its message
unacknowledged; the worker still running hands it out again once CELERY_VISIBILITY_TIMEOUT (30 s
here) has passed — kombu's default sweep would take 100 s, Docket's settings sweep every quarter of
the timeout — and the redelivered task takes over the dead worker's claim on the export row.
"""

from __future__ import annotations

import signal
from functools import partial
from pathlib import Path

import pytest
from django.db import connection

from committee.models import OutboxMessage
from reports.models import ExportStatus, Page, PdfExport
from reports.selectors import revision_latest
from reports.services.exports import pdf_export_request
from tests.browser import require_chromium
from tests.conftest import require
from tests.processes import SECRET_KEY, app_env, celery_worker, database_url, log_tail, redis_server, stop, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

VISIBILITY_TIMEOUT_S = 30
# Well under kombu's default 100 s sweep, well over the timeout and a quarter of it.
TAKEOVER_WAIT_S = VISIBILITY_TIMEOUT_S + 45


def _says_ready(log: Path) -> bool:
    return " ready." in log.read_text()


def _ready_failure(name: str, log: Path) -> str:
    return f"worker {name} ready\n{log_tail(log)}"


def export_row(pk: int) -> PdfExport:
    return PdfExport.objects.get(pk=pk)


def test_worker_killed_mid_render_the_next_worker_renders_the_pdf_once(week, pdf_root, tmp_path, monkeypatch, settings):
    require(connection.vendor == "postgresql", "PostgreSQL (run with DATABASE_URL=postgres://…)")
    require_chromium(", which draws the record's charts: the render that takes a while,")
    record = Page.objects.get(source_key=f"cycle:{week.cycle.week}")
    names = ["first", "second"]
    logs = [tmp_path / "first-worker.log", tmp_path / "second-worker.log"]
    with redis_server(tmp_path / "redis") as redis:
        env = app_env(
            database_url(connection.settings_dict), DJANGO_SETTINGS_MODULE="config.settings", DEBUG="0",
            SECRET_KEY=SECRET_KEY, CELERY_BROKER_URL=redis.url, CELERY_VISIBILITY_TIMEOUT=str(VISIBILITY_TIMEOUT_S),
            DOCKET_PDF_ROOT=str(pdf_root), EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
            LOG_LEVEL="INFO",
        )
        # This process hands the work to that broker through the outbox, as the app does in production.
        monkeypatch.setenv("CELERY_BROKER_URL", redis.url)
        # Through Django's settings, which Celery reads on each use; `app.conf.x = …` would pin an override
        # over them for every later test in this process.
        settings.CELERY_TASK_ALWAYS_EAGER = False
        workers = {name: celery_worker(env, name=name, log=log) for name, log in zip(names, logs, strict=True)}
        try:
            for name, log in zip(names, logs, strict=True):  # both poll the queue before the work arrives
                wait_until(partial(_says_ready, log), timeout=90, interval=0.1,
                           what=partial(_ready_failure, name, log))
            export = pdf_export_request(actor=week.tech, revision=revision_latest(page=record))
            message = OutboxMessage.objects.get(key=f"pdf-export:{export.pk}:0")
            assert message.relayed_at is not None  # handed to the broker, not run here
            wait_until(lambda: export_row(export.pk).status == ExportStatus.RUNNING, timeout=90, interval=0.05,
                       what=lambda: f"a worker taking the render\n{log_tail(logs[0])}\n{log_tail(logs[1])}")
            received = f"reports.render_pdf_export[outbox-{message.pk}] received"
            taker = next(name for name, log in zip(names, logs, strict=True) if received in log.read_text())
            survivor = next(name for name in names if name != taker)
            workers[taker].send_signal(signal.SIGKILL)  # mid-render: the row is claimed, no file is written yet
            workers[taker].wait(timeout=10)
            dead = export_row(export.pk)
            assert (dead.status, dead.file_name, dead.attempts) == (ExportStatus.RUNNING, "", 1)
            assert list(Path(pdf_root).glob("*.pdf")) == []
            message.refresh_from_db()
            assert message.done_at is None

            # The worker still running gives the unacknowledged message out again once its visibility
            # timeout has passed, within a quarter of the timeout more, not at kombu's 100 s sweep.
            survivor_log = logs[names.index(survivor)]
            wait_until(lambda: OutboxMessage.objects.get(pk=message.pk).done_at, timeout=TAKEOVER_WAIT_S,
                       interval=0.2, what=lambda: f"worker {survivor} doing the task\n{log_tail(survivor_log)}")
        finally:
            for process in workers.values():
                stop(process)

    done = export_row(export.pk)
    assert done.status == ExportStatus.DONE, (done.status, done.error, log_tail(logs[1]))
    assert done.attempts == 2  # the dead worker's claim and the rerun's, nothing more
    files = sorted(Path(pdf_root).iterdir())
    assert [path.name for path in files] == [done.file_name]  # one PDF, no temporary leftovers
    assert files[0].read_bytes().startswith(b"%PDF")
    message.refresh_from_db()
    assert message.done_by.startswith(f"{survivor}@")
    assert received in survivor_log.read_text()  # the same task, rerun
