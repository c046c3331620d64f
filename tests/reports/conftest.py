"""Helpers for the archive tests: PDFs land in a temporary folder; pages are made through the services."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from reports import services
from reports.models import Page


@pytest.fixture(autouse=True)
def pdf_root(settings: Any, tmp_path: Path) -> Path:
    settings.DOCKET_PDF_ROOT = tmp_path / "pdf"
    return settings.DOCKET_PDF_ROOT


def make_page(world: Any, slug: str = "charter", body: str = "# Charter\n\nWe allocate GPUs by rubric.",
              title: str = "Charter", actor: Any = None) -> Page:
    return services.page_create(actor=actor or world.chair, slug=slug, title=title, body=body,
                                summary="First version")


def edit(world: Any, page: Page, body: str, *, actor: Any = None, summary: str = "Edit", title: str | None = None):
    page.refresh_from_db()
    return services.page_revision_save(
        actor=actor or world.chair,
        page=page,
        base_revision_id=page.latest_revision_id,
        title=title or page.title,
        body=body,
        summary=summary,
    )


def on_postgresql() -> bool:
    return connection.vendor == "postgresql"
