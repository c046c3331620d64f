"""PDF exports of archive revisions: ask for one, render it (in a Celery task). Finding one and its file
are reads (reports/selectors/exports.py).

A revision's PDF never changes (the revision never does), so there is one `PdfExport` row per
revision and language (a decision record prints in its reader's language): asking again returns
the same row, and a failed export is retried by asking again. Rendering claims the row with one
conditional UPDATE, so a task delivered twice (or two workers) renders it once.
"""

from __future__ import annotations

import logging
import os
import tempfile
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone, translation

from committee.outbox import outbox_enqueue
from reports import pdf
from reports.models import ExportStatus, ExportStep, PageRevision, PdfExport
from reports.selectors.exports import export_language, pdf_export_path, pdf_root
from reports.services.pages import Author

logger = logging.getLogger(__name__)

# A render still "running" after this long is taken to have died with its worker and may be claimed again.
STALE_AFTER = timedelta(minutes=10)


def _file_name(export: PdfExport) -> str:
    revision = export.revision
    language = "" if export.language == settings.LANGUAGE_CODE else f"-{export.language}"
    return f"{revision.page.slug}-r{revision.number}-{revision.hash[:12]}{language}.pdf"


def pdf_export_request(*, actor: User, revision: PageRevision) -> PdfExport:
    """The export of `revision` in the active language (the reader's), queued for rendering unless it is ready or
    being rendered.

    Side effects: creates the row on first request; resets a failed export (or one whose file
    went missing) to pending; enqueues `render_pdf_export` through the outbox (written in this
    transaction, relayed after commit), so the worker never looks for a row that is not committed
    yet and the export is rendered even if the broker was down when it was asked for.
    """
    with transaction.atomic():
        export, _created = PdfExport.objects.select_for_update(no_key=True).get_or_create(
            revision=revision, language=export_language(), defaults={"requested_by_name": Author.of(actor).name}
        )
        path = pdf_export_path(export=export)
        file_missing = export.status == ExportStatus.DONE and (path is None or not path.is_file())
        if export.status == ExportStatus.FAILED or file_missing:
            export.status = ExportStatus.PENDING
            export.step = ExportStep.QUEUED
            export.progress_pct = 0
            export.error = ""
            export.note = ""
            export.file_name = ""
            export.requested_by_name = Author.of(actor).name
            export.save()
        stale = export.status == ExportStatus.RUNNING and (
            export.started_at is None or export.started_at < timezone.now() - STALE_AFTER
        )
        if export.status == ExportStatus.PENDING or stale:
            outbox_enqueue(
                task_name="reports.render_pdf_export",
                key=f"pdf-export:{export.pk}:{export.attempts}",
                kwargs={"export_id": export.pk},
            )
    return export


def _progress(export_id: int, step: str, pct: int) -> None:
    # Outside any transaction: the page polling for progress sees each step as it happens.
    PdfExport.objects.filter(pk=export_id, status=ExportStatus.RUNNING).update(step=step, progress_pct=pct)


def _write_atomically(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pdf")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def pdf_export_render(*, export_id: int, take_over: bool = False) -> bool:
    """Render the export's PDF to DOCKET_PDF_ROOT, recording progress on the row as it goes.

    Returns True when this call did the work, False when there was nothing to do (already done,
    failed, or claimed by another run that is still fresh). A failure is recorded on the row
    (status failed, with the error) instead of raised, so the page can say what happened.

    `take_over` also claims a render that is marked running however fresh: the task passes it
    for a redelivered message, whose first delivery died with its worker (a render it started
    will never finish, and waiting STALE_AFTER would leave the export stuck). Should that render
    be alive after all, both write the same file name atomically: the work is done twice, the
    file exists once.
    """
    now = timezone.now()
    claimable = Q(status=ExportStatus.PENDING) | Q(status=ExportStatus.RUNNING, started_at__lt=now - STALE_AFTER)
    if take_over:
        claimable |= Q(status=ExportStatus.RUNNING)
    claimed = (
        PdfExport.objects.filter(pk=export_id)
        .filter(claimable)
        .update(
            status=ExportStatus.RUNNING,
            step=ExportStep.PREPARING,
            progress_pct=5,
            started_at=now,
            attempts=F("attempts") + 1,
        )
    )
    if not claimed:
        return False
    export = PdfExport.objects.select_related("revision", "revision__page").get(pk=export_id)
    try:
        with translation.override(export.language):  # a worker has no reader: the export says whose language
            result = pdf.render_revision_pdf(
                revision=export.revision, progress=lambda step, pct: _progress(export_id, step, pct)
            )
        _progress(export_id, ExportStep.SAVING, 90)
        file_name = _file_name(export)
        _write_atomically(pdf_root() / file_name, result.content)
    except Exception as exc:
        logger.exception("PDF export %s failed", export_id)
        PdfExport.objects.filter(pk=export_id).update(
            status=ExportStatus.FAILED,
            step=ExportStep.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:2000],
            finished_at=timezone.now(),
        )
        return True
    PdfExport.objects.filter(pk=export_id).update(
        status=ExportStatus.DONE,
        step=ExportStep.DONE,
        progress_pct=100,
        file_name=file_name,
        size_bytes=len(result.content),
        charts_included=result.charts_included,
        note=result.charts_note[:300],
        finished_at=timezone.now(),
    )
    return True
