"""Celery tasks of the archive. Each loads its row by id and calls one service."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task, signals

from committee.models import ReviewCycle
from committee.outbox import outbox_once
from reports import print_pieces
from reports.services.exports import pdf_export_render
from reports.services.records import RECORD_TASK, decision_record_sync


@shared_task(name="reports.render_pdf_export", bind=True, acks_late=True)
def render_pdf_export(self: Task, export_id: int) -> bool:
    """Render a PDF export. Safe to run twice: the service claims the row, so the work happens once.

    A redelivered message means the worker that took it first died before acknowledging it
    (acks_late): this run takes over that worker's claim instead of leaving the export running.
    """
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    return pdf_export_render(export_id=export_id, take_over=redelivered)


@shared_task(name=RECORD_TASK, bind=True, acks_late=True)
def write_decision_record(self: Task, cycle_id: int, reason: str = "", published: bool = True) -> bool:
    """Write a week's decision record after the change that asked for it committed (`decision_record_enqueue`).

    Once per outbox message: the message is marked done in the record's own transaction (`outbox_once`), so a
    worker that dies mid-record leaves it not done and the relay hands it over again; a second delivery of a
    done message writes nothing. True when this run wrote (or found up to date) the record.
    """
    with outbox_once(self) as first:
        if first:
            decision_record_sync(cycle=ReviewCycle.objects.get(pk=cycle_id), reason=reason, published=published)
        return first


@signals.worker_init.connect(dispatch_uid="reports.weasyprint_at_worker_start")
def weasyprint_at_worker_start(**kwargs: Any) -> None:
    """A Celery worker imports WeasyPrint as it starts, not in its first PDF export: about 0.5 s of CPU a process
    (docs/benchmarks.md, "The decision record's PDF"). A prefork pool's children are forked after, and inherit it; a
    solo or threads pool runs in this process. Web processes never send the signal, and never import it."""
    print_pieces.weasyprint_import()
