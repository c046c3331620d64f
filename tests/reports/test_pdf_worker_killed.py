"""A Celery worker dies (SIGKILL) in the middle of rendering a PDF: the next worker renders it, once.

Real pieces only: a redis-server and two Celery workers (solo pool, production settings) that
the test starts on a free port and stops by pid, the test's PostgreSQL database, and the PDF
export asked for through the real outbox (`pdf_export_request` → after commit → the broker).
The task is acknowledged late (CELERY_TASK_ACKS_LATE), so a worker that dies leaves its message
unacknowledged; Redis hands it out again after CELERY_VISIBILITY_TIMEOUT (3 s here) as a
redelivery, and the redelivered task takes over the dead worker's claim on the export row.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from committee.models import OutboxMessage
from config.celery import app
from reports.models import ExportStatus, Page, PdfExport
from reports.selectors import revision_latest
from reports.services.exports import pdf_export_request
from tests.browser import CHROMIUM
from tests.conftest import require
from tests.processes import SECRET_KEY, app_env, celery_worker, database_url, log_tail, redis_server, stop, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

VISIBILITY_TIMEOUT_S = 3


def export_row(pk: int) -> PdfExport:
    return PdfExport.objects.get(pk=pk)


def test_worker_killed_mid_render_the_next_worker_renders_the_pdf_once(week, pdf_root, tmp_path, monkeypatch):
    require(connection.vendor == "postgresql", "PostgreSQL (run with DATABASE_URL=postgres://…)")
    require(Path(CHROMIUM).exists(), "Chromium, which draws the record's charts: the render that takes a while")
    record = Page.objects.get(source_key=f"cycle:{week.cycle.week}")
    logs = tmp_path / "first-worker.log", tmp_path / "second-worker.log"
    with redis_server(tmp_path / "redis") as redis:
        env = app_env(
            database_url(connection.settings_dict), DJANGO_SETTINGS_MODULE="config.settings", DEBUG="0",
            SECRET_KEY=SECRET_KEY, CELERY_BROKER_URL=redis.url, CELERY_VISIBILITY_TIMEOUT=str(VISIBILITY_TIMEOUT_S),
            DOCKET_PDF_ROOT=str(pdf_root), EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
            LOG_LEVEL="INFO",
        )
        # This process hands the work to that broker through the outbox, as the app does in production.
        monkeypatch.setenv("CELERY_BROKER_URL", redis.url)
        eager, app.conf.task_always_eager = app.conf.task_always_eager, False
        try:
            first = celery_worker(env, name="first", log=logs[0])
            try:
                export = pdf_export_request(actor=week.tech, revision=revision_latest(page=record))
                message = OutboxMessage.objects.get(key=f"pdf-export:{export.pk}:0")
                assert message.relayed_at is not None  # handed to the broker, not run here
                wait_until(lambda: export_row(export.pk).status == ExportStatus.RUNNING, timeout=90, interval=0.05,
                           what=lambda: f"the first worker taking the render\n{log_tail(logs[0])}")
                first.send_signal(signal.SIGKILL)  # mid-render: the row is claimed, no file is written yet
                first.wait(timeout=10)
            finally:
                stop(first)
            dead = export_row(export.pk)
            assert (dead.status, dead.file_name, dead.attempts) == (ExportStatus.RUNNING, "", 1)
            assert list(Path(pdf_root).glob("*.pdf")) == []
            message.refresh_from_db()
            assert message.done_at is None

            # Redis gives the unacknowledged message out again once its visibility timeout has passed.
            assert dead.started_at is not None
            time.sleep(max(0.0, (dead.started_at - timezone.now()).total_seconds() + VISIBILITY_TIMEOUT_S + 1))
            second = celery_worker(env, name="second", log=logs[1])
            try:
                wait_until(lambda: OutboxMessage.objects.get(pk=message.pk).done_at, timeout=120, interval=0.2,
                           what=lambda: f"the second worker doing the task\n{log_tail(logs[1])}")
            finally:
                stop(second)
        finally:
            app.conf.task_always_eager = eager

    done = export_row(export.pk)
    assert done.status == ExportStatus.DONE, (done.status, done.error, log_tail(logs[1]))
    assert done.attempts == 2  # the dead worker's claim and the rerun's, nothing more
    files = sorted(Path(pdf_root).iterdir())
    assert [path.name for path in files] == [done.file_name]  # one PDF, no temporary leftovers
    assert files[0].read_bytes().startswith(b"%PDF")
    message.refresh_from_db()
    assert message.done_by.startswith("second@")
    assert f"reports.render_pdf_export[outbox-{message.pk}] received" in logs[1].read_text()  # the same task, rerun
