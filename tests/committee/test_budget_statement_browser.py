"""Issue 29's finance walk in a real browser: the finance member sets a department's budget, the review flags the
request that would exceed it with the amounts, and the month's statement page and its CSV show the same total."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse

from committee.selectors import department_budgets
from reports.statements.selectors import statement_for_month
from tests.allocations.plans import W, publish
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.committee.reviewing import close, file_request
from tests.committee.test_budgets import research  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_finance_sets_a_budget_the_review_flags_a_grant_over_it_and_the_statement_matches_its_csv(
    browser_page, world, research  # noqa: F811
):
    from playwright.sync_api import expect

    # Research (team A) holds 8 A100s for 24 hours from Monday 30 November (November's) and again from Wednesday
    # 2 December (December's): 480.00 each at 2.50 an hour; team B, in no department, 2 for 3 hours, 15.00.
    publish([W(world.a100, world.team_a, 8, 0, 24, ref=1), W(world.a100, world.team_a, 8, 48, 72, ref=2),
             W(world.a100, world.team_b, 2, 50, 53, ref=3)])
    bigger = file_request(world, title="Bigger retrain", gpu_count=16, duration_hours=60)  # 960 × 2.50 = 2,400.00
    close(world)
    page = browser_page
    sign_in(page, "finance")

    # The finance member sets Research's budget for the quarter on the budgets page.
    page.goto(reverse("committee:budgets"))
    page.locator('select[name="department"]').select_option(label="Research")
    page.locator('input[name="quarter"]').fill("2026-Q4")
    page.locator('input[name="quarterly"]').fill("2500")
    page.locator('input[name="carry_over_pct"]').fill("0")
    page.locator('[name="reason"]').fill("The quarter's plan.")
    page.get_by_role("button", name="Save the budget").click()
    expect(page.get_by_text("Budget saved as policy version")).to_be_visible()
    (budget,) = [b for b in department_budgets(quarter="2026-Q4") if b.slug == "research"]
    assert (budget.available, budget.spent) == (Decimal(2500), Decimal("960.00"))

    # The review flags the grant that would take Research over it, with the amounts.
    page.goto(reverse("committee:review-cycle", args=[world.cycle.week]))
    card = page.locator(f"#request-{bigger.pk} .request-budget")
    expect(card).to_have_class("request-budget over-budget")
    expect(card).to_contain_text("over budget")
    expect(card).to_contain_text(
        "Granting it charges USD 2,400.00 to Research, which has USD 1,540.00 left of USD 2,500.00 in 2026-Q4.")
    expect(card).to_contain_text("It would exceed the budget by USD 860.00: the committee may still grant it.")

    # December's statement: the page's total, and the CSV it offers adds up to the same.
    december = statement_for_month(month="2026-12")
    assert december.charge == Decimal("495.00")
    page.goto(reverse("reports:statement", args=["2026-12"]))
    expect(page.locator("main")).to_contain_text("Total USD 495.00 for")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download as CSV").click()
    with Path(download.value.path()).open(encoding="utf-8", newline="") as spreadsheet:
        rows = list(csv.DictReader(spreadsheet))
    assert sum(Decimal(row["charge"]) for row in rows) == december.charge
    assert sorted(row["team"] for row in rows) == ["Team A", "Team B"]
