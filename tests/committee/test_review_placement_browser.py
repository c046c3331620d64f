"""The placement preview in a real browser: the chair sees what each grant would get, resolves a flagged
one inline, then finalizes and publishes through the confirmation pages."""

from __future__ import annotations

import pytest

from allocations.models import AllocationWindow
from committee.models import CycleStatus, ReviewCycle
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.committee.reviewing import contended

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_chair_resolves_a_flagged_grant_then_finalizes_and_publishes(browser_page, world, live_server):  # noqa: F811
    from playwright.sync_api import expect

    requests = contended(world)
    search = requests["search"]
    page = browser_page
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(live_server.url) else None)
    sign_in(page, "chair")
    page.goto(f"/review/{world.cycle.week}/")

    line = page.locator(f"#would-get-{search.pk}")
    expect(line).to_have_class("would-get flagged flag-shortened")
    expect(line).to_contain_text("⚠ Shortened: would get 14 A100, ")
    expect(line).to_contain_text("The engine: shortened")
    expect(page.locator("#placement .placement-flags")).to_contain_text("3 grants cannot be honoured as decided")
    timeline = page.locator('[data-timeline="atlas/a100"]')
    expect(timeline).to_be_hidden()  # fetched and drawn when the chair opens the pool's timeline
    page.locator("#placement-atlas-a100 details.pool-timeline summary").click()
    expect(timeline.locator(".main-svg").first).to_be_attached()  # drawn by the app's own Plotly
    expect(timeline).to_contain_text("burst reserve top (58)")

    # The chair grants Search the 14 GPUs that fit: the flag goes, without reloading the page.
    form = page.locator(f"#decision-{search.pk}")
    form.locator('input[name="outcome"][value="partial"]').check()
    form.get_by_role("spinbutton").fill("14")
    form.get_by_label("Rationale").fill("The 14 GPUs that fit this week.")
    form.get_by_role("button", name="Save decision").click()
    page.locator(f"#decision-{search.pk} .saved").wait_for()
    expect(line).to_have_class("would-get")
    expect(line).to_contain_text("would get 14 A100, ")
    expect(line).to_contain_text("(decided: 14 GPUs)")
    expect(page.locator("#placement .placement-flags")).to_contain_text("2 grants cannot be honoured as decided")
    expect(page.locator(f'#ranking tr[data-request="{search.pk}"]')).to_contain_text("Partial grant (14)")
    expect(timeline.locator(".main-svg").first).to_be_attached()  # still open, fetched and drawn again after the swap

    # Finalize: a confirmation with the placement summary first; nothing changes until confirmed.
    page.locator("#finalize").click()
    expect(page.locator("#confirm-placement")).to_contain_text("2 grants are not placed as decided")
    expect(page.locator("#confirm-placement")).to_contain_text("Speech")
    assert ReviewCycle.objects.get(pk=world.cycle.pk).status == CycleStatus.IN_REVIEW
    page.locator("#confirm-finalize").click()
    expect(page.locator("#cycle-status")).to_have_text("Finalized")
    expect(page.locator("#placement h2")).to_have_text("What publishing will place")

    page.locator("#publish-plan").click()
    expect(page.locator("#confirm-windows")).to_contain_text("Team B — Search: 14 A100, ")
    assert not AllocationWindow.objects.exists()
    page.locator("#confirm-publish").click()
    expect(page.locator("#cycle-status")).to_have_text("Published")
    assert AllocationWindow.objects.get(request_ref=search.pk).gpu_count == 14
    assert outside == []  # no CDN, nothing fetched from anywhere but the app
