"""A correction and an appeal in a real browser (Playwright on Debian's Chromium): chair, team, committee."""

from __future__ import annotations

import pytest

from allocations import selectors as allocation_selectors
from committee.models import Appeal, AppealStatus, Decision
from reports.models import Page
from tests.browser import ARTIFACTS, browser_page, page_overflow, sign_in  # noqa: F401
from tests.committee.appealing import finalize_week, publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}
SCREENSHOTS = ARTIFACTS / "corrections"  # the confirmation page on a laptop and a phone, to look at


def test_chair_corrects_then_the_team_appeals_and_the_committee_amends(browser_page, world):  # noqa: F811
    page = browser_page
    _first, second, _third = finalize_week(world)
    publish(world)

    # The chair corrects team B's partial grant to a full grant, with a reason.
    sign_in(page, "chair")
    page.goto(f"/requests/{second.pk}/")
    page.get_by_text("Correct this decision (chair)").click()
    page.get_by_role("radio", name="Grant (24 GPUs)").check()
    page.locator("#correct-rationale").fill("All 24: finance found the budget.")
    page.get_by_role("button", name="Correct the decision").click()
    page.get_by_text("Say why the decision is corrected.").wait_for()  # no reason: refused, nothing changed
    assert Decision.objects.get(request=second).outcome == "partial"
    page.locator("#correct-reason").fill("Finance approved the full request.")
    page.get_by_role("button", name="Correct the decision").click()
    # First what plan version 2 would change, team by team; nothing is published yet. It reads on a phone too.
    page.get_by_role("heading", name="What plan version 2 changes").wait_for()
    assert "Team B" in page.locator("#confirm-changes").inner_text()
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None and plan.version == 1
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "correction-confirm-laptop.png"), full_page=True)
    page.set_viewport_size(PHONE)
    assert page_overflow(page) is None
    page.screenshot(path=str(SCREENSHOTS / "correction-confirm-phone.png"), full_page=True)
    page.set_viewport_size(LAPTOP)
    page.get_by_role("button", name="Yes, publish plan version 2").click()
    page.get_by_text("Decision corrected and published as plan version 2").wait_for()
    assert "Partial grant (8 GPUs) → Grant" in page.locator("#corrections").inner_text()

    # Team B appeals: it needs fewer GPUs than the correction gave it.
    page.context.clear_cookies()
    sign_in(page, "member_b")
    page.goto(f"/requests/{second.pk}/")
    page.locator("#appeal-statement").fill("Sixteen GPUs are enough for us; give the rest to team A.")
    page.get_by_role("button", name="File the appeal").click()
    page.get_by_text("Appeal filed.").wait_for()
    assert "Waiting for an answer" in page.locator("#corrections").inner_text()

    # The chair (who records the committee's decisions; not in team B) amends the decision to 16 GPUs.
    page.context.clear_cookies()
    sign_in(page, "chair")
    page.goto(f"/review/{world.cycle.week}/appeals/")
    page.get_by_role("link", name="Answer it").click()
    page.get_by_role("radio", name="Amend the decision").check()
    page.locator("#appeal-reason").fill("The team asked for fewer GPUs.")
    page.get_by_text("When amending: the new decision").click()
    page.locator("#appeal-decision-form").get_by_role("radio", name="Partial").check()
    page.locator("#appeal-granted").fill("16")
    page.locator("#appeal-rationale").fill("Sixteen, as the team asked.")
    page.get_by_role("button", name="Answer the appeal").click()
    page.get_by_role("button", name="Yes, publish plan version 3").click()
    page.get_by_text("Appeal answered: decision amended.").wait_for()

    appeal = Appeal.objects.get()
    assert appeal.status == AppealStatus.AMENDED
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None and plan.version == 3
    record = Page.objects.get(source_key=f"cycle:{world.cycle.week}")
    page.goto(f"/archive/{record.slug}/history/")
    history = page.locator("main").inner_text()
    assert "Updated: plan version 3 published" in history and "The team asked for fewer GPUs." in history
    assert "Updated — appeal filed by Team B" in history
    assert "Finance approved the full request." in history
