"""The hour-of-week heatmap: cells from measured usage, the peak-hour share, DST weeks, the page and its PDF."""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse

from allocations.models import UsageRecord
from reports.dashboards import heatmap
from tests.browser import require_chromium
from tests.conftest import require

pytestmark = pytest.mark.django_db

MONDAY = datetime(2026, 11, 16, tzinfo=UTC)  # 2026-W47 begins (UTC committee zone)


def usage(pool: Any, team: Any, start: datetime, end: datetime, gpu_hours: float | str, key: str,
          wait: str = "0") -> UsageRecord:
    return UsageRecord.objects.create(
        pool=pool, team=team, period_start=start, period_end=end, gpu_hours_used=Decimal(str(gpu_hours)),
        mean_utilization_pct=Decimal(90), mean_queue_wait_minutes=Decimal(wait), idempotency_key=key,
    )


def cell(day: int, hour: int) -> int:
    return day * 24 + hour


def test_hourly_and_daily_records_fill_their_hours_and_the_peak_share_counts_hours_above_80(world):
    a100 = world.a100  # 64 GPUs
    # Monday 10:00: two teams, 40 + 16 = 56 GPU-hours, 87.5% (a peak hour above 80%).
    usage(a100, world.team_a, MONDAY + timedelta(hours=10), MONDAY + timedelta(hours=11), 40, "a")
    usage(a100, world.team_b, MONDAY + timedelta(hours=10), MONDAY + timedelta(hours=11), 16, "b")
    # Monday 11:00 for half an hour: 51.2 GPU-hours is 80%, not above.
    usage(a100, world.team_a, MONDAY + timedelta(hours=11), MONDAY + timedelta(hours=11, minutes=30), "51.2", "c")
    # A daily record on Tuesday: 768 GPU-hours spread over 24 hours, 32 an hour, 50%.
    usage(a100, world.team_a, MONDAY + timedelta(days=1), MONDAY + timedelta(days=2), 768, "d")
    # A record running from Sunday 23:00 into the next week: only its first hour is in the span.
    usage(a100, world.team_a, MONDAY + timedelta(days=6, hours=23), MONDAY + timedelta(days=7, hours=1), 128, "e")
    span = heatmap.span_of(last_week="2026-W47", weeks_back=1)
    (pool, h100) = heatmap.utilization_heatmap(span=span).pools
    assert pool.key == "atlas/a100" and h100.key == "orion/h100"
    assert pool.cells_pct[cell(0, 10)] == Decimal("87.5")
    assert pool.cells_pct[cell(0, 11)] == Decimal(80)
    assert pool.cells_pct[cell(0, 12)] == 0
    assert all(pool.cells_pct[cell(1, hour)] == 50 for hour in range(24))
    assert pool.cells_pct[cell(6, 23)] == 100  # 64 of the record's 128 GPU-hours fall before Monday
    assert pool.used_gpu_hours == Decimal(56) + Decimal("51.2") + 768 + 64
    assert pool.capacity_gpu_hours == 64 * 168
    assert pool.peak_hours == 45 and pool.peak_hours_above == 1
    assert pool.peak_above_pct == Decimal(100) / 45
    assert h100.used_gpu_hours == 0 and h100.peak_hours_above == 0 and h100.cells_pct[cell(0, 10)] == 0


def test_a_cell_is_the_mean_over_the_weeks_of_the_span(world):
    usage(world.a100, world.team_a, MONDAY + timedelta(hours=10), MONDAY + timedelta(hours=11), 64, "w47")
    span = heatmap.span_of(last_week="2026-W48", weeks_back=2)
    assert (span.first_week, span.weeks) == ("2026-W47", 2)
    pool = heatmap.utilization_heatmap(span=span).pools[0]
    assert pool.cells_pct[cell(0, 10)] == 50 and pool.hours_counted[cell(0, 10)] == 2
    assert pool.peak_hours == 90 and pool.peak_hours_above == 1


def test_the_week_summer_time_ends_has_two_sunday_two_oclock_hours_in_one_cell(world, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    # 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:00 local is 00:00 UTC, then again 01:00 UTC.
    sunday_0200_cest = datetime(2026, 10, 25, 0, tzinfo=UTC)
    usage(world.a100, world.team_a, sunday_0200_cest, sunday_0200_cest + timedelta(hours=1), 32, "first")
    usage(world.a100, world.team_a, sunday_0200_cest + timedelta(hours=1), sunday_0200_cest + timedelta(hours=2),
          64, "second")
    # Monday 00:00 Berlin is Sunday 22:00 UTC: the week's first cell.
    usage(world.a100, world.team_a, datetime(2026, 10, 18, 22, tzinfo=UTC), datetime(2026, 10, 18, 23, tzinfo=UTC),
          16, "monday")
    span = heatmap.span_of(last_week="2026-W43", weeks_back=1)
    assert span.start == datetime(2026, 10, 18, 22, tzinfo=UTC) and span.end == datetime(2026, 10, 25, 23, tzinfo=UTC)
    pool = heatmap.utilization_heatmap(span=span).pools[0]
    assert sum(pool.hours_counted) == 169 and pool.hours_counted[cell(6, 2)] == 2
    assert pool.cells_pct[cell(6, 2)] == Decimal(96) * 100 / (64 * 2)
    assert pool.cells_pct[cell(6, 3)] == 0
    assert pool.cells_pct[cell(0, 0)] == 25


def test_the_week_summer_time_starts_has_no_sunday_two_oclock(world, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    pool = heatmap.utilization_heatmap(span=heatmap.span_of(last_week="2027-W12", weeks_back=1)).pools[0]
    assert sum(pool.hours_counted) == 167 and pool.cells_pct[cell(6, 2)] is None and pool.grid()[6][2] is None


@pytest.mark.parametrize("records", [1, 50])
def test_the_heatmap_takes_two_queries_however_many_records(world, django_assert_num_queries, records):
    for index in range(records):
        start = MONDAY + timedelta(hours=index)
        usage(world.a100, world.team_a, start, start + timedelta(hours=1), 10, f"h{index}")
        usage(world.h100, world.team_b, start, start + timedelta(days=1), 24, f"d{index}")
    span = heatmap.span_of(last_week="2026-W47", weeks_back=heatmap.DEFAULT_WEEKS)
    with django_assert_num_queries(2):
        result = heatmap.utilization_heatmap(span=span)
    assert result.pools[0].used_gpu_hours == 10 * records
    assert result.pools[1].used_gpu_hours == 24 * records


def test_the_page_shows_the_last_13_weeks_and_refuses_a_bad_span(client, world):
    usage(world.a100, world.team_a, MONDAY + timedelta(hours=10), MONDAY + timedelta(hours=11), 64, "a")
    client.force_login(world.member_b)  # anyone signed in: pool numbers only
    body = client.get(reverse("reports:utilization-heatmap")).content.decode()
    assert "Weeks 2026-W36 to 2026-W48 (13 weeks)" in body
    assert 'data-figure-id="heatmap-0"' in body and 'id="heatmap-1"' in body
    assert "/static/plotly/plotly.min.js" in body
    # 1 of the span's 13 × 45 = 585 peak hours was above 80%.
    assert "0.2% <small>(1 of 585 h)</small>" in body
    for query, message in [
        ({"weeks": "0"}, "Ensure this value is greater than or equal to 1."),
        ({"weeks": "many"}, "Give the weeks as a whole number."),
        ({"weeks": "105"}, "Ensure this value is less than or equal to 104."),
        ({"last_week": "2026-W60"}, "There is no week 2026-W60."),
        ({"last_week": "2027-W05"}, "Choose a week that has begun"),
        ({"last_week": "last"}, "Write a week as 2026-W45."),
    ]:
        response = client.get(reverse("reports:utilization-heatmap"), query)
        assert response.status_code == 400, query
        assert message in response.content.decode() and "heatmap-summary" not in response.content.decode()
    assert client.get(reverse("reports:utilization-heatmap-pdf"), {"weeks": "0"}).status_code == 400
    client.logout()
    assert client.get(reverse("reports:utilization-heatmap")).status_code == 302


def test_the_pdf_has_the_peak_share_and_each_pools_chart(client, world):
    usage(world.a100, world.team_a, MONDAY + timedelta(hours=10), MONDAY + timedelta(hours=11), 64, "a")
    usage(world.a100, world.team_a, MONDAY + timedelta(days=1), MONDAY + timedelta(days=2), 768, "d")
    client.force_login(world.member_a)
    response = client.get(reverse("reports:utilization-heatmap-pdf"), {"last_week": "2026-W47", "weeks": "1"})
    assert response.status_code == 200 and response.content.startswith(b"%PDF")
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    require_chromium(", which draws the PDF's charts,")
    text = subprocess.run(["pdftotext", "-layout", "-", "-"], input=response.content, capture_output=True,
                          check=True).stdout.decode()
    assert "Utilization by hour of the week" in text and "Weeks 2026-W47 to 2026-W47 (1 week)" in text
    assert "atlas/a100" in text and "2.2% (1 of 45 h)" in text and "832" in text
    # The charts: each pool's caption, and the axis title drawn as text inside the SVG.
    assert "orion/h100 (32× H100)" in text and "hour (committee time)" in text


def test_the_current_week_counts_only_the_hours_gone_by(client, world):
    # FIXED_NOW is Wednesday 2026-12-02 10:00 UTC: Monday, Tuesday and ten hours of Wednesday have gone by.
    monday = datetime(2026, 11, 30, tzinfo=UTC)
    usage(world.a100, world.team_a, monday, monday + timedelta(days=1), 64 * 24, "monday")
    client.force_login(world.member_a)
    response = client.get(reverse("reports:utilization-heatmap"), {"last_week": "2026-W49", "weeks": "1"})
    pool = response.context["heatmap"].pools[0]
    assert sum(pool.hours_counted) == 58 and pool.cells_pct[cell(2, 9)] == 0 and pool.cells_pct[cell(2, 10)] is None
    assert pool.utilization_pct == Decimal(24) * 100 / 58
    assert "reported in periods of up to 24 hours, spread evenly over them" in response.content.decode()


def test_a_span_over_the_year_boundary_takes_iso_week_53(world):
    span = heatmap.span_of(last_week="2027-W01", weeks_back=2)
    assert span.first_week == "2026-W53" and span.start == datetime(2026, 12, 28, tzinfo=UTC)
    assert span.end == datetime(2027, 1, 11, tzinfo=UTC) and span.weeks == 2
    usage(world.a100, world.team_a, datetime(2027, 1, 1, 9, tzinfo=UTC), datetime(2027, 1, 1, 10, tzinfo=UTC), 64, "ny")
    pool = heatmap.utilization_heatmap(span=span).pools[0]
    assert pool.cells_pct[cell(4, 9)] == 50 and pool.peak_hours == 90 and pool.peak_hours_above == 1
