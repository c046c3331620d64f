"""Decided and placed, and the withdraw confirmation, in a real browser (Playwright on Debian's Chromium)."""

from __future__ import annotations

import pytest

from committee.models import GpuRequest, RequestStatus
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.committee.contended import contended_week
from tests.factories import file_request

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_shortened_grant_reads_the_same_on_the_portal_and_its_page_at_laptop_and_phone_width(
    browser_page, world  # noqa: F811
):
    page = browser_page
    week = contended_week(world)
    sign_in(page, "member_b")
    for width, height in ((1366, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto("/")
        row = page.get_by_role("row", name="Vision model")
        assert "Grant 16 → placed 6 (shortened)" in row.inner_text()
        page.get_by_role("link", name="Vision model").click()
        outcome = page.locator("#outcome")
        assert outcome.is_visible()
        assert page.locator("#outcome-placed").inner_text() == "6 A100, Tue 00:00–Thu 00:00, standard (288 GPU-hours)"
        assert page.locator("#outcome-difference").inner_text() == "shortened (6 of 16 GPUs)"
        # Nothing runs off the side of the page: the outcome reads without scrolling sideways.
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert GpuRequest.objects.get(pk=week.shortened.pk).status == RequestStatus.DECIDED


def test_withdraw_asks_before_it_withdraws(browser_page, world):  # noqa: F811
    page = browser_page
    gpu_request = file_request(world)
    sign_in(page, "lead_a")
    page.goto(f"/requests/{gpu_request.pk}/")
    page.get_by_role("button", name="Withdraw…").click()
    page.get_by_text("It cannot be undone").wait_for()
    page.get_by_role("button", name="Keep it").click()
    page.locator("#request-status").wait_for()
    assert GpuRequest.objects.get(pk=gpu_request.pk).status == RequestStatus.SUBMITTED
    page.get_by_role("button", name="Withdraw…").click()
    page.get_by_role("button", name="Withdraw the request").click()
    page.get_by_text("Request withdrawn.").wait_for()
    assert GpuRequest.objects.get(pk=gpu_request.pk).status == RequestStatus.WITHDRAWN
