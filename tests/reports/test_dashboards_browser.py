"""The dashboards in a real browser: Plotly (served by the app, nothing from elsewhere) draws every chart."""

from __future__ import annotations

import pytest

from tests.browser import browser_page, sign_in  # noqa: F401
from tests.reports.dashboard_data import WEEK_1, WEEK_2, build

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_committee_sees_every_chart_drawn_and_its_numbers(browser_page, world, live_server):  # noqa: F811
    build(world)
    page = browser_page
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    sign_in(page, "chair")
    page.goto(f"/archive/dashboards/?first_week={WEEK_1}&last_week={WEEK_2}")
    page.wait_for_function("document.querySelectorAll('.plotly-chart .main-svg').length >= 8")
    assert page.locator(".dashboard-chart").count() == 8  # GPU busy time and the departments have their own charts
    assert page.locator("#department-used .plotly-chart .main-svg").count() >= 1  # the committee's, drawn
    section = page.locator("#granted-used")
    section.get_by_text("The numbers").click()
    assert section.locator("table tbody tr").count() == 4
    assert section.locator("table").get_by_text("Team B").count() >= 1
    assert all(url.startswith(live_server.url) for url in requests), [u for u in requests
                                                                      if not u.startswith(live_server.url)]
    assert any(url.endswith("/static/plotly/plotly.min.js") for url in requests)
