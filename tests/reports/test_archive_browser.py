"""The archive's "done when", in a real browser: a finalized demo week's record is edited by a committee
member, its history shows both revisions and their difference, the chain verifies, and the PDF downloads
with the ranking and the charts. Also: the PDF page follows a slow render with htmx until the file is ready.
"""

from __future__ import annotations

import shutil
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from reports import services
from reports.models import Page, PdfExport
from reports.selectors import revision_latest
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.conftest import require

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_committee_member_edits_the_record_and_downloads_its_pdf(browser_page, week, tmp_path):  # noqa: F811
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    record = Page.objects.get(source_key=f"cycle:{week.cycle.week}")
    page = browser_page
    sign_in(page, "tech")
    page.get_by_role("link", name="Archive").click()
    page.get_by_role("link", name=record.title).first.click()
    page.get_by_role("heading", name=record.title).wait_for()
    assert "Strongest revenue case this week" in page.inner_text(".markdown-body")

    page.get_by_role("link", name="Edit").click()
    text = page.get_by_label("Text (Markdown)")
    text.fill(text.input_value().replace("Notes added by committee members go here.",
                                         "Team B's lead asked for a review of the partial grant."))
    # The preview follows the typing; the generated record is shown above the notes, not in the textarea.
    expect(page.locator("#markdown-preview")).to_contain_text("asked for a review of the partial grant")
    assert "Strongest revenue case this week" in page.inner_text("#generated-block")
    assert "docket:generated" not in text.input_value()
    page.get_by_label("Edit summary").fill("Note the appeal")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved as revision 2.").wait_for()
    assert "asked for a review of the partial grant" in page.inner_text(".markdown-body")

    page.get_by_role("link", name="History").click()
    assert page.locator("table.history tbody tr").count() == 2
    assert "Note the appeal" in page.inner_text("#revision-2") and "Docket" in page.inner_text("#revision-1")
    page.get_by_role("button", name="Compare the selected revisions").click()
    page.get_by_role("heading", name="Revision 1 → revision 2").wait_for()
    changed = page.locator("table.diff tr.replace td.right")
    assert changed.count() == 1 and "asked for a review of the partial grant" in changed.inner_text()
    assert page.locator("table.diff tr.replace td.right ins").count() >= 1

    out = StringIO()
    call_command("verify_archive", stdout=out)
    assert "Archive intact" in out.getvalue()

    page.get_by_role("link", name="Read", exact=True).click()
    page.wait_for_load_state()  # htmx (a deferred script) has taken over the PDF form
    # Celery runs eagerly here, so the PDF (its charts drawn by Chromium) renders inside this POST: on a busy
    # machine that takes longer than a click's 15 s. Wait for the page the render leads to instead.
    page.get_by_role("button", name="Make a PDF").click(no_wait_after=True)
    # At once, while the render runs: the button is disabled and says the PDF is being made.
    expect(page.locator("#pdf-button")).to_be_disabled(timeout=2000)
    expect(page.locator("#pdf-busy")).to_be_visible(timeout=2000)
    expect(page.locator("#pdf-busy")).to_contain_text("Making the PDF")
    page.locator("#pdf-download").wait_for(timeout=120_000)
    expect(page.locator("#pdf-busy")).to_be_hidden()
    assert page.url.endswith(f"/archive/{record.slug}/")  # the progress came to the page: no navigation
    with page.expect_download(timeout=60000) as download_info:
        page.locator("#pdf-download").click()
    path = tmp_path / "record.pdf"
    download_info.value.save_as(path)
    text = " ".join(subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True,
                                   check=True).stdout.split())
    assert "Ranking" in text and "88.00" in text and "Grant" in text
    assert "asked for a review of the partial grant" in text
    assert "weighted total" in text and "Demand vs capacity" in text  # the charts, drawn by Chromium


def test_pdf_page_follows_the_render_until_the_file_is_ready(browser_page, world):  # noqa: F811
    created = services.page_create(actor=world.chair, slug="charter", title="Charter", body="# Charter", summary="x")
    export = PdfExport.objects.create(revision=revision_latest(page=created), requested_by_name="Chair")
    page = browser_page
    sign_in(page, "member_a")
    page.goto(f"/archive/exports/{export.pk}/")
    assert page.locator("#export-progress progress").count() == 1
    assert page.locator("#pdf-download").count() == 0
    services.pdf_export_render(export_id=export.pk)  # the worker finishes while the page is open
    page.locator("#pdf-download").wait_for(timeout=10000)  # htmx polled and swapped in the link
    assert page.locator("#export-progress").get_attribute("data-status") == "done"
    assert page.locator("#export-progress").get_attribute("hx-trigger") is None


def test_pdfs_land_in_the_configured_folder(pdf_root, world):
    created = services.page_create(actor=world.chair, slug="minutes", title="Minutes", body="Present", summary="x")
    export = PdfExport.objects.create(revision=revision_latest(page=created), requested_by_name="Chair")
    services.pdf_export_render(export_id=export.pk)
    export.refresh_from_db()
    assert Path(pdf_root, export.file_name).is_file()
