"""In a real browser: a member proposes a lower A100 burst reserve, the chair adopts it for the next free week,
and a second proposal for that same week is refused with the week after offered."""

from __future__ import annotations

from typing import Any

import pytest

from policy import services
from policy.models import Proposal, ProposalStatus
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.conftest import World

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_chair_adopts_one_and_the_second_for_that_week_is_refused(browser_page: Any, world: World) -> None:  # noqa: F811
    page = browser_page
    sign_in(page, "member_a")
    page.get_by_role("link", name="Policy lab").click()
    page.get_by_role("button", name="Propose a change").click()
    page.get_by_label("Title").fill("A100 burst reserve 20% → 15%")
    page.get_by_text("Pools", exact=True).click()
    page.get_by_label("New value of atlas/a100 burst reserve").fill("15")
    page.get_by_label("Reason").fill("The reserve sat idle most nights.")
    page.get_by_label("Expected effect").fill("About 3 more A100s in standard windows.")
    page.locator("[name=figure-1-baseline]").fill("1180")
    page.locator("[name=figure-1-value]").fill("1265")
    page.locator("[name=figure-1-unit]").fill("samples/s")
    page.get_by_role("button", name="File the proposal").click()
    page.get_by_text("Your proposal is on the board.").wait_for()
    first = Proposal.objects.get()
    second = services.proposal_submit(actor=world.member_b, title="Score quorum 2 → 3", reason="Absences",
                                      expected_effect="Fewer thin rankings", changes={"review.quorum": "3"})

    sign_in(page, "chair")
    page.goto(f"/policy/{first.pk}/")
    assert page.get_by_label("Effective from week").input_value() == "2026-W51"
    page.locator("#decide").get_by_label("Reason").fill("Staging shows no loss for bursts.")
    page.get_by_role("button", name="Adopt").click()
    page.get_by_text("Adopted: it takes effect from week 2026-W51.").wait_for()

    page.goto(f"/policy/{second.pk}/")
    assert page.get_by_label("Effective from week").input_value() == "2026-W52"
    page.get_by_label("Effective from week").fill("2026-W51")
    page.locator("#decide").get_by_label("Reason").fill("Same week, please.")
    page.get_by_role("button", name="Adopt").click()
    page.get_by_text("The next free week is 2026-W52.").wait_for()
    assert Proposal.objects.get(pk=second.pk).status == ProposalStatus.OPEN

    page.get_by_role("link", name="Policy lab").first.click()
    adopted = page.locator("section", has=page.get_by_role("heading", name="Adopted"))
    assert "2026-W51" in adopted.inner_text() and "not in effect yet" in adopted.inner_text()
