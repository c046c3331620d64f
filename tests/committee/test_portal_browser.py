"""The intake journey in a real browser (Playwright on Debian's Chromium)."""

from __future__ import annotations

import pytest

from committee.models import GpuRequest, RequestStatus
from tests.browser import browser_page, fill_request_form, sign_in  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_team_member_files_and_submits_a_request_with_two_alternatives(browser_page, world):  # noqa: F811
    page = browser_page
    sign_in(page, "lead_a")
    page.get_by_role("button", name="File a request").click()
    fill_request_form(
        page,
        world=world,
        title="Holiday ranker retrain",
        alternatives=(("Distilled student ranker", "300"), ("bf16 mixed precision", "600")),
    )
    page.locator(".alternative-row").first.get_by_label("Feasible for us").check()
    # The hint beside the form answers the pool, GPUs and window chosen (docs/multi-week-runs.md).
    page.locator("#filing-hint").get_by_text("atlas/a100 is 0% committed in your window").wait_for()
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Draft saved").wait_for()
    page.get_by_role("button", name="Submit to the committee").click()
    page.get_by_text("Submitted to the committee.").wait_for()

    page.get_by_role("link", name="My requests").click()
    row = page.get_by_role("row", name="Holiday ranker retrain")
    assert "Submitted" in row.inner_text()
    gpu_request = GpuRequest.objects.get(title="Holiday ranker retrain")
    assert gpu_request.status == RequestStatus.SUBMITTED
    assert [(a.description, a.feasible) for a in gpu_request.alternatives.all()] == [
        ("Distilled student ranker", True),
        ("bf16 mixed precision", False),
    ]


def test_invalid_form_shows_errors_beside_the_fields(browser_page, world):  # noqa: F811
    page = browser_page
    sign_in(page, "lead_a")
    page.goto("/requests/new/")
    page.get_by_label("Title").fill("Too big")
    page.get_by_label("GPU pool", exact=True).select_option(str(world.a100.pk))
    page.get_by_label("GPUs", exact=True).fill("500")
    page.get_by_label("Minimum acceptable GPUs").fill("8")
    page.get_by_label("Mean utilization %").fill("150")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("The request was not saved").wait_for()
    assert "only 64 GPUs" in page.locator('[data-field="gpu_count"]').inner_text()
    assert "less than or equal to 100" in page.locator('[data-field="usage-mean_utilization_pct"]').inner_text()
    assert page.locator('[data-field="duration_hours"]').inner_text()  # required, left empty
    assert page.get_by_label("Title").input_value() == "Too big"  # what was typed is kept
    assert GpuRequest.objects.count() == 0
