"""In Chromium: an admin changes a fair-share weight with a reason; a team member reads it in the policy history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.browser import browser_page, sign_in  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_weight_changed_in_the_admin_is_read_in_the_policy_history(browser_page, world, tmp_path: Path):  # noqa: F811
    page: Any = browser_page
    get_user_model().objects.create_superuser("root", "root@example.com", "pw", first_name="Ada", last_name="Admin")
    sign_in(page, "root")
    page.goto(f"/admin/allocations/team/{world.team_a.pk}/change/")
    page.get_by_label("Fair-share weight").fill("3")
    page.get_by_role("button", name="Save", exact=True).click()
    # No reason, no change: the browser does not even send the form (the server refuses it too: test_policy_history).
    assert page.get_by_label("Reason for this change").evaluate("e => e.validity.valueMissing")
    world.team_a.refresh_from_db()
    assert world.team_a.fair_share_weight == 2
    page.get_by_label("Fair-share weight").fill("3")
    page.get_by_label("Reason for this change").fill("Team A takes over the search ranking from Team B.")
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_url("**/admin/allocations/team/")
    page.context.clear_cookies()

    sign_in(page, "member_b")
    page.goto("/rubric/")
    page.get_by_role("link", name="Policy history: fair-share weights, pools, cluster accounts and seats").click()
    row = page.locator("tr.policy-change", has_text="Team A").first
    assert "2 → 3" in row.inner_text()
    assert "Team A takes over the search ranking from Team B." in row.inner_text()
    assert "Ada Admin" in row.inner_text()
    page.screenshot(path=str(tmp_path / "policy-history.png"), full_page=True)
    print(tmp_path / "policy-history.png")
