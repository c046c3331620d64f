"""The fast lane in a real browser: a four-GPU, one-day request granted on submission and seen on the review page."""

from __future__ import annotations

import pytest

from tests.browser import browser_page, sign_in  # noqa: F401
from tests.committee.test_fast_lane import running_week  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_four_gpu_one_day_request_is_granted_on_submission_and_listed_at_the_review(
        browser_page, world, running_week):  # noqa: F811
    page = browser_page
    sign_in(page, "lead_a")
    page.get_by_role("link", name="Ask the fast lane").click()
    page.get_by_label("GPU pool", exact=True).select_option(str(world.a100.pk))
    page.get_by_label("What needs the GPUs").fill("Eval of the ranker")
    page.get_by_label("GPUs", exact=True).fill("4")
    page.get_by_label("Hours, from now").fill("24")
    page.get_by_role("button", name="Submit to the fast lane").click()
    page.get_by_text("Granted in the fast lane: plan version 2 is published.").wait_for()
    assert "Grant, 4 GPUs (96 GPU-hours), granted in the fast lane" in page.locator("main").inner_text()

    sign_in(page, "chair")
    page.goto(f"/review/{world.cycle.week}/")
    listed = page.locator("#fast-lane").inner_text()
    assert "Eval of the ranker" in listed and "4 GPUs of atlas/a100" in listed and "Granted in the fast lane" in listed
