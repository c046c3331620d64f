"""The replay page in a real browser (Playwright on Debian's Chromium): htmx swaps results and errors in place."""

from __future__ import annotations

import pytest

from tests.browser import browser_page, sign_in  # noqa: F401
from tests.committee.contended import contended_week

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_committee_replays_a_lower_reserve_in_place_and_reads_every_problem_of_a_bad_one(
    browser_page, world  # noqa: F811
):
    page = browser_page
    contended_week(world)
    sign_in(page, "reviewer")
    page.goto("/policy/replay/")
    page.get_by_label("atlas/a100 burst reserve %").fill("0")
    page.get_by_role("button", name="Replay").click()
    results = page.locator("#replay-results")
    results.get_by_role("heading", name="Per team").wait_for()
    assert page.url.endswith("/policy/replay/")  # htmx: the page stayed, the results came in place
    team_b = results.get_by_role("row", name="Team B")
    assert "288 → 768" in team_b.inner_text() and "+480" in team_b.inner_text()
    assert page.locator("#replay-chart .main-svg").first.is_visible()  # Plotly drew the change chart

    page.get_by_label("Time urgency").fill("90")
    page.get_by_label("How many past weeks").fill("0")
    page.get_by_role("button", name="Replay").click()
    alert = results.get_by_role("alert")
    alert.wait_for()
    text = alert.inner_text()
    assert "Nothing was replayed" in text
    assert "they add up to 170%" in text and "weeks: 0 is out of range (1 to 52)." in text
    assert not results.get_by_role("heading", name="Per team").count()

    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_label("Time urgency").fill("")
    page.get_by_label("How many past weeks").fill("")
    page.get_by_role("button", name="Replay").click()
    results.get_by_role("heading", name="Per team").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
