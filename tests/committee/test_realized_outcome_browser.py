"""Reporting a grant's realized outcome on a phone-size page, in a real browser: from the request's page to the
outcome form, a refusal that keeps what was typed, then the report the request's page shows (docs/outcomes.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from committee import services
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.factories import file_request

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_member_reports_the_outcome_on_a_phone(browser_page, world):  # noqa: F811
    granted = file_request(world)
    ended = world.cycle.starts_at + timedelta(days=3)
    services.outcome_ask(gpu_request=granted, last_window_end=ended, now=ended)
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, "member_a")
    page.goto(f"/requests/{granted.pk}/")
    page.locator("#realized-outcome").get_by_role("link", name="Report the outcome").click()
    page.get_by_label("Realized value, in USD/week").fill("about 40k")
    page.get_by_label("Note").fill("Measured by the A/B test over two weeks.")
    page.get_by_role("button", name="Report the outcome").click()
    page.get_by_text("“about 40k” is not a number.").wait_for()
    assert page.get_by_label("Note").input_value() == "Measured by the A/B test over two weeks."
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than the phone

    page.get_by_label("Realized value, in USD/week").fill("42,000")
    page.get_by_role("button", name="Report the outcome").click()
    page.wait_for_url(f"**/requests/{granted.pk}/")
    assert "Realized 42,000.00 USD/week against a forecast of 50,000.00 USD/week." in page.locator(
        "#realized-outcome").inner_text()
