"""Celery tasks of the archive. Each loads its row by id and calls one service."""

from __future__ import annotations

from celery import shared_task

from reports.services.exports import pdf_export_render


@shared_task(name="reports.render_pdf_export", acks_late=True)
def render_pdf_export(export_id: int) -> bool:
    """Render a PDF export. Safe to run twice: the service claims the row, so the work happens once."""
    return pdf_export_render(export_id=export_id)
