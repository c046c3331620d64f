"""A question and its answer in a real browser (Playwright on Debian's Chromium): a member asks, the team answers."""

from __future__ import annotations

import pytest

from committee.models import QuestionStatus, RequestQuestion
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.committee.reviewing import two_requests_in_review

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_member_asks_and_the_team_answers_on_its_request_page(browser_page, world):  # noqa: F811
    page = browser_page
    a, _b = two_requests_in_review(world)

    # The reviewer asks team A, from the request's card on the review page.
    sign_in(page, "reviewer")
    page.goto(f"/review/{world.cycle.week}/#request-{a.pk}")
    card = page.locator(f"#request-{a.pk}")
    card.get_by_text("Ask the team, or comment for the committee").click()
    card.locator(f"#question-{a.pk}").fill("Would 12 GPUs meet the same deadline?")
    card.get_by_role("button", name="Ask the team").click()
    page.get_by_text("Question sent to the team").wait_for()
    assert "1 open question to the team" in page.locator(f"#flags-{a.pk}").inner_text()
    card.get_by_text("Ask the team, or comment for the committee").click()
    card.locator(f"#comment-{a.pk}").fill("Last week they used three quarters of the grant.")
    card.get_by_role("button", name="Add comment").click()
    page.get_by_text("Comment added").wait_for()

    # Team A reads the question on its request page (not the comment) and answers it.
    page.context.clear_cookies()
    sign_in(page, "member_a")
    page.goto(f"/requests/{a.pk}/")
    questions = page.locator("#questions")
    assert "Would 12 GPUs meet the same deadline?" in questions.inner_text()
    assert "three quarters" not in page.content()
    questions.get_by_role("button", name="Send the answer").click()  # empty: the browser asks for text first
    assert RequestQuestion.objects.get().status == QuestionStatus.OPEN
    questions.get_by_label("Your answer").fill("Yes, with 12 GPUs over 64 hours.")
    questions.get_by_role("button", name="Send the answer").click()
    page.get_by_text("Answer sent; the committee is told.").wait_for()
    assert "Yes, with 12 GPUs over 64 hours." in page.locator("#questions").inner_text()
    assert page.locator("#questions").get_by_role("button", name="Send the answer").count() == 0

    # The reviewer sees the answer on the review; the question is no longer open.
    page.context.clear_cookies()
    sign_in(page, "reviewer")
    page.goto(f"/review/{world.cycle.week}/#request-{a.pk}")
    card = page.locator(f"#request-{a.pk}")
    assert "Yes, with 12 GPUs over 64 hours." in card.inner_text()
    assert page.locator(f"#flags-{a.pk}").count() == 0
    assert RequestQuestion.objects.get().answered_by_name == "Member_A"
