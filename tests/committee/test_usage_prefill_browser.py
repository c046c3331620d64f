"""Last week's usage in a real browser: the form follows the team and pool chosen; the review shows the gap."""

from __future__ import annotations

from datetime import timedelta

import pytest

from allocations.models import UsageRecord
from committee import weeks
from committee.models import TeamMembership, UsageReport
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.committee.reviewing import close
from tests.factories import file_request

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _measure(world, team, pool, gpu_hours, utilization):
    since, _until = weeks.week_bounds(weeks.reported_usage_week(world.cycle.week))
    UsageRecord.objects.create(pool=pool, team=team, period_start=since + timedelta(days=1),
                               period_end=since + timedelta(days=2), gpu_hours_used=gpu_hours,
                               mean_utilization_pct=utilization, idempotency_key=f"{team.slug}:{pool.slug}")


def test_the_usage_follows_the_team_and_pool_chosen_and_keeps_a_typed_figure(browser_page, world):  # noqa: F811
    TeamMembership.objects.create(user=world.lead_a, team=world.team_b)
    _measure(world, world.team_a, world.a100, 240, 75)
    _measure(world, world.team_b, world.a100, 96, 40)
    page = browser_page
    sign_in(page, "lead_a")
    page.goto("/requests/new/")
    used, utilization = page.get_by_label("GPU-hours used last week"), page.get_by_label("Mean utilization %")
    note = page.locator("#usage-note")
    assert "Choose the GPU pool above" in note.inner_text()

    page.get_by_label("Team").select_option(label="Team A")
    page.get_by_label("GPU pool", exact=True).select_option(str(world.a100.pk))
    page.get_by_text("for Team A on atlas/a100").wait_for()
    assert (used.input_value(), utilization.input_value()) == ("240.0", "75.0")

    page.get_by_label("Team").select_option(label="Team B")
    page.get_by_text("for Team B on atlas/a100").wait_for()
    assert (used.input_value(), utilization.input_value()) == ("96.0", "40.0")

    page.get_by_label("GPU pool", exact=True).select_option(str(world.h100.pk))
    page.get_by_text("No usage measured for Team B on orion/h100 last week").wait_for()
    assert (used.input_value(), utilization.input_value()) == ("", "")
    assert "enter your own figure" in note.inner_text()

    used.fill("50")  # the team's own figure: a change of pool keeps it, and fills in the rest
    page.get_by_label("GPU pool", exact=True).select_option(str(world.a100.pk))
    page.get_by_text("for Team B on atlas/a100").wait_for()
    assert (used.input_value(), utilization.input_value()) == ("50", "40.0")


def test_the_review_flags_a_gap_in_words(browser_page, world):  # noqa: F811
    gpu_request = file_request(world, title="Over-stated")
    UsageReport.objects.filter(request=gpu_request).update(gpu_hours_used=600)
    _measure(world, world.team_a, world.a100, 480, 60)
    close(world)
    page = browser_page
    sign_in(page, "reviewer")
    page.goto(f"/review/{world.cycle.week}/")
    card = page.locator(f"#request-{gpu_request.pk}")
    table = card.get_by_role("table", name="Last week's usage")
    assert table.get_by_role("row", name="GPU-hours used").inner_text().split() == ["GPU-hours", "used", "600",
                                                                                    "480"]
    flag = card.get_by_role("note").filter(has_text="Gap over 10%")
    assert flag.is_visible()
    assert "the team stated 25% more GPU-hours than the schedulers measured" in flag.inner_text()


def test_a_figure_typed_while_the_pre_fill_is_on_its_way_is_kept(browser_page, world):  # noqa: F811
    _measure(world, world.team_a, world.a100, 240, 75)
    page = browser_page
    sign_in(page, "lead_a")
    page.goto("/requests/new/")
    from playwright.sync_api import expect

    answered = []
    typed = page.get_by_label("Mean utilization %")

    def slow(route):  # a slow network: the pre-fill arrives only after the person has typed
        expect(typed).to_have_value("33")
        route.continue_()
        answered.append(route.request.url)

    page.route("**/requests/new/usage/**", slow)
    page.get_by_label("GPU pool", exact=True).select_option(str(world.a100.pk))
    typed.fill("33")
    page.wait_for_function("() => !document.querySelector('#usage-live.htmx-request')")
    assert answered, "the pre-fill was never asked for"
    assert page.get_by_label("Mean utilization %").input_value() == "33"
