"""Celery tasks of the archive. Each loads its row by id and calls one service."""

from __future__ import annotations

from celery import Task, shared_task

from reports.services.exports import pdf_export_render


@shared_task(name="reports.render_pdf_export", bind=True, acks_late=True)
def render_pdf_export(self: Task, export_id: int) -> bool:
    """Render a PDF export. Safe to run twice: the service claims the row, so the work happens once.

    A redelivered message means the worker that took it first died before acknowledging it
    (acks_late): this run takes over that worker's claim instead of leaving the export running.
    """
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    return pdf_export_render(export_id=export_id, take_over=redelivered)
