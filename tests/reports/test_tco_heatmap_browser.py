"""The heatmap and the cost-of-ownership pages in a real browser: Plotly (served by the app) draws their charts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from allocations.models import UsageRecord
from tests.browser import browser_page, sign_in  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_heatmap_and_the_tco_page_draw_their_charts(browser_page, world, live_server):  # noqa: F811
    monday = datetime(2026, 11, 16, tzinfo=UTC)
    UsageRecord.objects.create(pool=world.a100, team=world.team_a, period_start=monday + timedelta(hours=10),
                               period_end=monday + timedelta(hours=11), gpu_hours_used=Decimal(60),
                               mean_utilization_pct=Decimal(90), idempotency_key="a")
    page = browser_page
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    sign_in(page, "chair")
    page.goto("/archive/dashboards/")
    page.get_by_role("link", name="Hour-of-week heatmap").click()
    expect(page.locator(".plotly-chart .svg-container")).to_have_count(2)
    assert page.locator("#heatmap-summary tbody tr").count() == 2
    # The heatmap's cells are drawn: Plotly puts a heatmap's image into the SVG.
    assert page.locator("#heatmap-atlasa100 .heatmaplayer image").count() == 1
    page.get_by_role("link", name="Cost of ownership").click()
    expect(page.locator(".plotly-chart .svg-container")).to_have_count(1)
    assert page.locator("#tco-table").get_by_text("+18.0%").count() == 1
    assert page.locator(".plotly-chart .scatterlayer .trace").count() == 2
    # A new case from the form: no queue cost, the V100s now 51% dearer.
    page.fill("input[name=queue_cost_per_gpu_hour]", "0")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("#tco-table").get_by_text("+51.2%")).to_have_count(1)
    expect(page.locator(".plotly-chart .svg-container")).to_have_count(1)
    assert page.locator("#tco-table").get_by_text("+51.2%").count() == 1
    assert all(url.startswith(live_server.url) for url in requests), [u for u in requests
                                                                      if not u.startswith(live_server.url)]
    assert any(url.endswith("/static/plotly/plotly.min.js") for url in requests)
