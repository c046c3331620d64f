"""In a real browser: a team copies last week's request, checks it and files it (Playwright on Chromium)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from committee import services
from committee.models import (
    Alternative,
    CycleStatus,
    GpuRequest,
    ImpactForecast,
    RequestStatus,
    UsageReport,
)
from tests.browser import browser_page, sign_in  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_team_copies_last_week_s_request_and_files_it(browser_page, world):  # noqa: F811
    last_week = services.cycle_create(week="2026-W49", status=CycleStatus.PUBLISHED)
    source = GpuRequest.objects.create(
        team=world.team_a, cycle=last_week, pool=world.a100, title="Holiday ranker", gpu_count=16, min_gpu_count=8,
        duration_hours=24, earliest_start=datetime(2026, 12, 3, 10, tzinfo=UTC),
        latest_end=datetime(2026, 12, 5, 10, tzinfo=UTC), deadline=datetime(2026, 12, 6, 12, tzinfo=UTC),
        baseline_gpu_hours=900, status=RequestStatus.SUBMITTED, submitted_at=datetime(2026, 11, 27, tzinfo=UTC),
    )
    UsageReport.objects.create(request=source, gpu_hours_granted=700, gpu_hours_used=650, mean_utilization_pct=88)
    ImpactForecast.objects.create(request=source, kind="revenue", estimated_value=Decimal(75000),
                                  value_unit="USD/week", confidence="high", narrative="Holiday traffic peaks.")
    Alternative.objects.create(request=source, description="Distilled", gpu_hours=200, feasible=True)

    page = browser_page
    sign_in(page, "member_a")
    page.goto("/requests/")
    page.get_by_text("start from an earlier week's request").click()
    page.get_by_role("link", name="Copy “Holiday ranker”").click()
    page.get_by_text("Copied from “Holiday ranker” (Team A, atlas/a100, week 2026-W49).").wait_for()
    assert page.get_by_label("Title").input_value() == "Holiday ranker"
    assert page.get_by_label("Earliest start").input_value() == "2026-12-10 10:00"
    assert page.get_by_label("Latest end").input_value() == "2026-12-12 10:00"
    assert page.locator("#id_deadline").input_value() == "2026-12-13 12:00"
    assert page.locator(".alternative-row").first.get_by_label("Description").input_value() == "Distilled"
    assert GpuRequest.objects.count() == 1  # nothing saved yet

    page.get_by_label("Title").fill("Holiday ranker, week 50")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Draft saved").wait_for()
    page.get_by_role("button", name="Submit to the committee").click()
    page.get_by_text("Submitted to the committee.").wait_for()

    filed = GpuRequest.objects.get(cycle=world.cycle)
    assert filed.title == "Holiday ranker, week 50" and filed.status == RequestStatus.SUBMITTED
    assert filed.earliest_start == datetime(2026, 12, 10, 10, tzinfo=UTC)
    assert [a.description for a in filed.alternatives.all()] == ["Distilled"]
    assert filed.impact_forecast.narrative == "Holiday traffic peaks."
    assert "copied from “Holiday ranker”, week 2026-W49" in page.content()
