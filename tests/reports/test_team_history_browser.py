"""In Chromium: a team member opens the inbox from the badge, marks everything read, and reads the team's history
with its chart, on a laptop and as cards on a phone."""

from __future__ import annotations

import pytest

from committee import services
from committee.models import NotificationKind
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.committee.appealing import finalize_week, publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_inbox_badge_and_team_history(browser_page, world):  # noqa: F811
    from playwright.sync_api import expect

    finalize_week(world)
    publish(world)
    services.notifications_record(
        recipient_ids=[world.lead_a.pk], kind=NotificationKind.REQUEST_SUBMITTED, key="extra",
        params={"team": "Team A", "title": "Ranker retrain", "week": world.cycle.week, "by": "Lead A",
                "path": "/requests/"},
    )
    page = browser_page
    sign_in(page, "lead_a")
    badge = page.locator("a.inbox-link .badge")
    unread = int(badge.inner_text())
    assert unread >= 1
    page.locator("a.inbox-link").click()
    assert page.locator("li.inbox-item.unread").count() == unread
    page.get_by_role("button", name="Mark all read").click()
    expect(page.locator("a.inbox-link .badge")).to_have_count(0)  # the inbox again, everything read
    expect(page.locator("li.inbox-item.unread")).to_have_count(0)

    page.goto("/requests/")
    page.get_by_role("link", name="history").click()
    page.wait_for_selector(".plotly-chart .main-svg")
    week_row = page.locator("table.team-history tbody tr", has_text=world.cycle.week)
    assert "768" in week_row.inner_text()  # 16 GPUs × 48 h asked, decided and placed
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.wait_for_selector(".plotly-chart .main-svg")  # drawn again, at the phone's width
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # On a phone each value carries its column's name.
    label = page.locator("table.team-history tbody tr", has_text=world.cycle.week).locator("td").nth(2)
    before = page.evaluate("e => getComputedStyle(e, '::before').content", label.element_handle())
    assert before == '"Asked A100-eq GPU-h"'
