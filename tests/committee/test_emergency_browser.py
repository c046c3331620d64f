"""An emergency in a real browser: a team files it mid-week, the chair and a member approve, the team sees it placed."""

from __future__ import annotations

import pytest

from committee.models import EmergencyRequest
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.committee.test_emergency import running_week  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_filed_approved_twice_and_placed_within_the_hour(browser_page, world, running_week):  # noqa: F811
    page = browser_page
    sign_in(page, "lead_a")
    page.get_by_role("link", name="Emergencies").click()
    page.get_by_role("button", name="File an emergency request").click()
    page.get_by_label("GPU pool", exact=True).select_option(str(world.a100.pk))
    page.get_by_label("What needs the GPUs").fill("Fraud model hotfix")
    page.get_by_label("GPUs", exact=True).fill("20")
    page.get_by_label("Hours, from now").fill("6")
    page.get_by_label("Why it cannot wait for the weekly review").fill("A fraud wave started this morning.")
    page.get_by_role("button", name="File the emergency request").click()
    page.get_by_text("Emergency request filed").wait_for()
    emergency = EmergencyRequest.objects.get()

    sign_in(page, "reviewer")
    page.goto(f"/emergencies/{emergency.pk}/")
    page.get_by_label("Approve").check()
    page.get_by_role("button", name="Give my verdict").click()
    page.get_by_text("it needs one more approval").wait_for()

    sign_in(page, "chair")
    page.goto(f"/emergencies/{emergency.pk}/")
    page.get_by_label("Approve").check()
    page.get_by_role("button", name="Give my verdict").click()
    # 20 GPUs do not fit beside the published windows outside the standby (18 free): refused, nothing changed.
    page.get_by_text("No room: atlas/a100 has at most 18 GPUs free").wait_for()
    page.get_by_label("Approve").check()
    page.get_by_label("Wake the cold standby for it too (chair)").check()
    page.get_by_role("button", name="Give my verdict").click()
    page.get_by_text("Approved and placed: plan version 2 is published.").wait_for()

    sign_in(page, "lead_a")
    page.goto(f"/emergencies/{emergency.pk}/")
    placement = page.locator("#placement").inner_text()
    assert "20 A100, Wed 10:00–Wed 16:00, preemptible" in placement
    assert "2 GPUs come from the cold standby" in placement
