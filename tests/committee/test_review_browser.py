"""The weekly review in a real browser (Playwright on Debian's Chromium): scoring inline re-ranks the week."""

from __future__ import annotations

import pytest

from committee.models import Score
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.committee.reviewing import score, two_requests_in_review

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_member_scores_two_requests_and_the_ranking_changes(browser_page, world, live_server):  # noqa: F811
    from playwright.sync_api import expect

    a, b = two_requests_in_review(world)
    for member in (world.chair, world.finance):
        score(member, a, 8, 8, 8)  # a leads: 90% × 8 + 10 = 82
        score(member, b, 4, 4, 4)  # b: 90% × 4 + 10 = 46
    page = browser_page
    outside = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(live_server.url) else None)
    sign_in(page, "reviewer")
    page.get_by_role("link", name="Weekly review").click()
    first_row = page.locator("#ranking tbody tr").first
    expect(first_row).to_contain_text("Ranker retrain")
    expect(page.locator("#priority-matrix .main-svg").first).to_be_attached()  # Plotly, served by the app

    for gpu_request, value in ((a, "0"), (b, "10")):
        for criterion in ("business_impact", "feasibility", "urgency"):
            form = page.locator(f"#score-{gpu_request.pk}-{criterion}")
            form.get_by_role("spinbutton").fill(value)
            form.get_by_role("button", name="Save").click()
            expect(page.locator(f"#score-{gpu_request.pk}-{criterion} .saved")).to_have_text("Saved.")

    # a: (8 + 8 + 0) / 3 = 5.33 on each → 48 + 10 = 58.00; b: (4 + 4 + 10) / 3 = 6 → 54 + 10 = 64.00
    expect(first_row).to_contain_text("Vision model")
    expect(first_row).to_contain_text("64.00")
    page.reload()
    expect(page.locator("#ranking tbody tr").first).to_contain_text("Vision model")
    expect(page.locator("#ranking tbody tr").nth(1)).to_contain_text("58.00")
    assert Score.objects.filter(member=world.reviewer).count() == 6
    assert outside == []  # no CDN, nothing fetched from anywhere but the app
