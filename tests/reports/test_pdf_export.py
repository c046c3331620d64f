"""PDF exports: requested from a page, rendered by a Celery task (eager here), followed by polling, downloaded."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from reports import pdf, selectors, services
from reports.models import ExportStatus, PageKind, PdfExport
from reports.selectors import revision_latest
from tests.browser import require_chromium
from tests.conftest import require
from tests.reports.conftest import make_page

RECORD_DATA = {
    "rubric": {"version": 1, "criteria": [
        {"key": "business_impact", "label": "Business impact", "weight_pct": 40},
        {"key": "alternatives", "label": "Feasibility of alternatives", "weight_pct": 30},
        {"key": "urgency", "label": "Time urgency", "weight_pct": 20},
        {"key": "fairness", "label": "Fairness", "weight_pct": 10}]},
    "ranking": [
        {"rank": 1, "team": "Search", "title": "Ranker retrain", "total": 81.0,
         "scores": {"business_impact": 9, "alternatives": 8, "urgency": 7, "fairness": 6}},
        {"rank": 2, "team": "Ads", "title": "CTR refresh", "total": 55.0,
         "scores": {"business_impact": 6, "alternatives": 5, "urgency": 5, "fairness": 5}}],
    "capacity": [{"pool": "atlas/a100", "capacity_gpu_hours": 7000, "requested_gpu_hours": 9000,
                  "granted_gpu_hours": 6500}],
}


def pdf_text(path: Path | None) -> str:
    assert path is not None, "the export has a file"
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


def record_page():
    return services.page_create_system(
        slug="decision-record-test", kind=PageKind.DECISION_RECORD, source_key="cycle:test",
        title="Decision record 2026-W02", body="## Decisions\n\n**Grant** Ranker retrain: strongest impact case.",
        data=RECORD_DATA, summary="Generated")


def request_pdf(client, page, captured):
    with captured(execute=True):
        response = client.post(reverse("reports:revision-pdf", args=[page.slug, revision_latest(page=page).number]))
    assert response.status_code == 302
    return PdfExport.objects.get(revision=revision_latest(page=page))


def test_any_page_prints_its_text(client, world, django_capture_on_commit_callbacks):
    page = make_page(world, body="# Charter\n\nThe committee allocates GPUs by the published rubric.")
    client.force_login(world.member_a)
    export = request_pdf(client, page, django_capture_on_commit_callbacks)
    assert export.status == ExportStatus.DONE and export.progress_pct == 100
    response = client.get(reverse("reports:export-download", args=[export.pk]))
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    content = b"".join(response.streaming_content)
    assert content.startswith(b"%PDF")
    text = pdf_text(selectors.pdf_export_path(export=export))
    assert "allocates GPUs by the published rubric" in text and revision_latest(page=page).hash in text


def test_decision_record_prints_charts(client, world, django_capture_on_commit_callbacks):
    require_chromium()
    page = record_page()
    client.force_login(world.member_b)
    export = request_pdf(client, page, django_capture_on_commit_callbacks)
    assert export.status == ExportStatus.DONE, export.error
    assert export.charts_included and export.note == ""
    text = pdf_text(selectors.pdf_export_path(export=export))
    assert "strongest impact case" in text
    # Axis titles and legend entries exist only inside the SVG charts.
    assert "weighted total" in text and "Business impact (40%)" in text and "GPU-h" in text


def test_without_chromium_the_pdf_is_made_and_says_so(client, world, settings, django_capture_on_commit_callbacks):
    settings.CHROMIUM_PATH = "/nonexistent/chromium"
    page = record_page()
    client.force_login(world.member_b)
    export = request_pdf(client, page, django_capture_on_commit_callbacks)
    assert export.status == ExportStatus.DONE and not export.charts_included
    assert "No Chromium" in export.note
    text = pdf_text(selectors.pdf_export_path(export=export))
    assert "No Chromium was found" in text and "strongest impact case" in text


def test_the_task_does_its_work_once_when_run_twice(world, monkeypatch):
    page = make_page(world)
    export = PdfExport.objects.create(revision=revision_latest(page=page), requested_by_name="x")
    calls = []
    real = pdf.render_revision_pdf

    def counting(**kwargs):
        calls.append(kwargs["revision"].pk)
        return real(**kwargs)

    monkeypatch.setattr(pdf, "render_revision_pdf", counting)
    from reports.tasks import render_pdf_export

    assert render_pdf_export.apply(args=[export.pk]).get() is True
    assert render_pdf_export.apply(args=[export.pk]).get() is False
    assert calls == [revision_latest(page=page).pk]


def test_a_redelivered_task_takes_over_the_render_its_dead_worker_left_running(world):
    page = make_page(world)
    export = PdfExport.objects.create(revision=revision_latest(page=page), requested_by_name="x", attempts=1,
                                      status=ExportStatus.RUNNING, step="charts", started_at=timezone.now())
    from reports.tasks import render_pdf_export

    assert render_pdf_export.apply(args=[export.pk]).get() is False  # a first delivery leaves a fresh claim alone
    render_pdf_export.push_request(delivery_info={"redelivered": True})  # its worker died before acking it
    try:
        assert render_pdf_export.run(export.pk) is True
    finally:
        render_pdf_export.pop_request()
    export.refresh_from_db()
    assert (export.status, export.attempts) == (ExportStatus.DONE, 2)
    render_pdf_export.push_request(delivery_info={"redelivered": True})
    try:
        assert render_pdf_export.run(export.pk) is False  # done is done, redelivered or not
    finally:
        render_pdf_export.pop_request()


def test_asking_again_reuses_the_export(client, world, django_capture_on_commit_callbacks):
    page = make_page(world)
    client.force_login(world.member_a)
    first = request_pdf(client, page, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks() as callbacks:
        second = services.pdf_export_request(actor=world.chair, revision=revision_latest(page=page))
    assert first.pk == second.pk and callbacks == []


def test_a_failure_is_recorded_and_asking_again_retries(client, world, monkeypatch,
                                                         django_capture_on_commit_callbacks):
    page = make_page(world)

    def broken(**kwargs):
        raise RuntimeError("typesetter on fire")

    monkeypatch.setattr(pdf, "render_revision_pdf", broken)
    client.force_login(world.member_a)
    export = request_pdf(client, page, django_capture_on_commit_callbacks)
    assert export.status == ExportStatus.FAILED and "typesetter on fire" in export.error
    body = client.get(reverse("reports:export", args=[export.pk])).content.decode()
    assert "could not be made" in body and "Try again" in body
    monkeypatch.undo()
    export = request_pdf(client, page, django_capture_on_commit_callbacks)
    assert export.status == ExportStatus.DONE and export.attempts == 2


def test_progress_fragment_polls_until_ready(client, world):
    page = make_page(world)
    export = PdfExport.objects.create(revision=revision_latest(page=page), requested_by_name="x",
                                      status=ExportStatus.RUNNING, step="charts", progress_pct=20)
    client.force_login(world.member_a)
    body = client.get(reverse("reports:export-progress", args=[export.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 1s"' in body and 'value="20"' in body and "Drawing the charts" in body
    assert services.pdf_export_render(export_id=export.pk) is False  # fresh "running" rows are not claimed twice
    PdfExport.objects.filter(pk=export.pk).update(status=ExportStatus.PENDING)
    services.pdf_export_render(export_id=export.pk)
    body = client.get(reverse("reports:export-progress", args=[export.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in body and reverse("reports:export-download", args=[export.pk]) in body


def test_rendering_fetches_nothing_from_the_network(world, monkeypatch):
    from weasyprint.urls import URLFetcher

    opened = []
    monkeypatch.setattr(URLFetcher, "open", lambda self, url, *a, **k: opened.append(url))
    page = make_page(world, body="![x](http://127.0.0.1:9/secret.png) <img src='https://169.254.169.254/latest'>")
    result = pdf.render_revision_pdf(revision=revision_latest(page=page))
    assert result.content.startswith(b"%PDF") and opened == []


@pytest.mark.parametrize("persona", ["member_a", "outsider", "chair"])
def test_export_pages_need_sign_in_and_downloads_need_a_ready_file(client, world, persona):
    page = make_page(world)
    export = PdfExport.objects.create(revision=revision_latest(page=page), requested_by_name="x")
    for name in ("reports:export", "reports:export-progress", "reports:export-download"):
        assert client.get(reverse(name, args=[export.pk])).status_code == 302
    client.force_login(getattr(world, persona))
    assert client.get(reverse("reports:export", args=[export.pk])).status_code == 200
    assert client.get(reverse("reports:export-download", args=[export.pk])).status_code == 404
    assert client.get(reverse("reports:export", args=[export.pk + 100])).status_code == 404


WORKER_START = """
import sys
from celery import signals
from config.celery import app
app.loader.init_worker()  # what a worker does first: Django set up, every app's tasks imported
print("weasyprint" in sys.modules)
signals.worker_init.send(sender=None)
print("weasyprint" in sys.modules)
"""


def test_a_celery_worker_imports_weasyprint_as_it_starts_not_in_its_first_export():
    root = Path(__file__).resolve().parents[2]
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", WORKER_START], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)

    assert done.stdout.split() == ["False", "True"], done.stderr  # not with Django and the tasks; at the start
