"""Helpers for the archive tests: PDFs land in a temporary folder; pages are made through the services."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from committee import services as committee_services
from reports import services
from reports.models import Page
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request


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


def note_write(client: Any, page: Page, note: str, *, as_user: Any) -> None:
    """A committee member writes `note` in the record's notes, through the page's edit form, as people do."""
    from django.urls import reverse

    from reports.selectors import revision_latest

    client.force_login(as_user)
    body = revision_latest(page=page).body.replace("Notes added by committee members go here.", note)
    response = client.post(reverse("reports:page-edit", args=[page.slug]), {
        "title": page.title, "body": body, "summary": "Note the abstention",
        "base_revision_id": page.latest_revision_id})
    assert response.status_code == 302


def on_postgresql() -> bool:
    return connection.vendor == "postgresql"


RATIONALES = {
    "first": "Strongest revenue case this week; no cheaper variant reaches the quality bar.",
    "second": "Useful but the distilled variant covers most of it: eight GPUs, not twenty-four.",
    "third": "Deferred: the deadline is next month and the pool is full.",
}


@pytest.fixture
def week(world, django_capture_on_commit_callbacks):
    """Three requests scored by three members, decided (grant, partial, defer) and finalized; signals delivered."""
    first = file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    second = file_request(world, team=world.team_b, title="Vision model | v2", gpu_count=24, min_gpu_count=8)
    third = file_request(world, team=world.team_b, pool=world.h100, title="Speech *fine-tune*", gpu_count=8,
                         min_gpu_count=4)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, first, 9, 8, 9)
        score(member, second, 6, 6, 5)
        score(member, third, 3, 3, 3)
    decide(world, first, rationale=RATIONALES["first"])
    decide(world, second, outcome="partial", granted_gpu_count=8, rationale=RATIONALES["second"])
    decide(world, third, outcome="defer", rationale=RATIONALES["third"])
    with django_capture_on_commit_callbacks(execute=True):
        world.cycle = committee_services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    world.requests = (first, second, third)
    return world
