"""Every area writes times, numbers, money and ids one way, in English and in Simplified Chinese.

tests/readable.py's check runs over a rendered page per area: no 12-hour time, no "a.m."/"p.m.", no number of
four or more digits without separators, no "(s)" plural, no cost without its currency. Every page of the permission
matrix gets the same check in both languages (tests/test_permission_matrix.py: test_permission in English,
test_every_page_reads_in_chinese).
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from committee import services
from tests.allocations.plans import W, publish
from tests.factories import file_request
from tests.governed.version_one import pool_prices_set
from tests.readable import assert_readable, unreadable
from tests.reports.dashboard_data import WEEK_1, WEEK_2, build

SET_LANGUAGE = "/i18n/setlang/"


def test_the_check_finds_each_kind_of_unreadable_text():
    assert unreadable("<p>Intake closes Fri 4 Dec 2026, 18:00 CET.</p><td>12,000</td><td>USD 1,234.50 cost</td>") == []
    found = unreadable(
        "<p>Closes 12/01/2026 7:42 a.m.</p><p>Dec. 7, 2026, midnight</p><td>12000 GPU-hours</td>"
        "<li>Cost: 1,234.50</li><li>at 6 PM</li>", currency="USD",
    )
    assert [line.split(" '")[0] for line in found] == [
        "12-hour time", "Django's default date words", "number without separators", "cost without USD in",
        "12-hour time",
    ]
    # Not what a reader sees, or not a count: scripts, attributes, code, ids and ISO weeks.
    assert unreadable('<script>var n = 123456;</script><a href="/x/123456/">R-123456</a> <code>1234567</code>'
                      "<p>2026-W53, 2026-12-31, W-10001</p>") == []
    with pytest.raises(AssertionError, match="number without separators '98765'"):
        assert_readable("<td>98765</td>")


def test_four_digits_are_a_count_unless_a_date_says_they_are_a_year():
    found = unreadable("<p>Grant, 32 GPUs (2304 GPU-hours)</p><p>used 2150.0 of 2304.0</p><p>共2304个</p>"
                       "<p>in 2026</p><li>2 window(s)</li>")
    assert [line.split(" in ")[0] for line in found] == [
        "number without separators '2304'", "number without separators '2150.0'", "number without separators '2304.0'",
        "number without separators '2304'", "number without separators '2026'", "a plural written as 'w(s)'",
    ]
    # Years in dates, ISO weeks and quarters, Markdown's escaped dates, ids and times are no counts.
    assert unreadable("<p>Fri 4 Dec 2026, 18:00 CET; December 2026; Q1 2027; 2026年12月4日; 2 十二月 2026</p>"
                      "<p>2026-W49, 2026-Q4, 2026-12-31, 2026\\-12\\-31, R-1234, W-2048, 2,304.5 GPU-hours</p>") == []


@pytest.fixture
def every_area(world, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    dash = build(world)  # weeks 2026-W40/W41: windows, usage, requests, scores
    # costs in the tens of thousands: separators and currency show
    pool_prices_set({world.a100: "275.50", world.h100: "275.50"})
    publish([W(world.a100, world.team_a, 64, 0, 168, ref=12345), W(world.h100, world.team_b, 32, 0, 168, ref=2)])
    gpu_request = file_request(world, title="Ranker retrain", gpu_count=64, min_gpu_count=8, duration_hours=90,
                               alternatives=[{"description": "Distilled ranker", "gpu_hours": 3000,
                                              "quality_change": "", "cost_estimate": Decimal("12500"),
                                              "feasible": True}])
    services.cycle_close_intake(cycle=world.cycle, actor=world.chair)
    return dash, gpu_request


def pages(world, gpu_request) -> list[str]:
    week = world.cycle.week
    return [
        reverse("allocations:windows"),
        reverse("committee:review-cycle", args=[week]),
        reverse("committee:request-detail", args=[gpu_request.pk]),
        reverse("committee:portal"),
        reverse("committee:appeal-list", args=[week]),
        reverse("committee:emergency-list"),
        reverse("committee:profile"),
        reverse("reports:index"),
        reverse("reports:dashboards") + f"?first_week={WEEK_1}&last_week={WEEK_2}",
        reverse("reports:monthly-review") + "?month=2026-10",
        reverse("reports:capacity-planning"),
    ]


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_page_per_area_reads_one_way(client, world, every_area, language):
    _dash, gpu_request = every_area
    client.force_login(world.chair)
    client.post(SET_LANGUAGE, {"language": language, "next": "/"})
    seen_money = seen_big = False
    for url in pages(world, gpu_request):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert f'<html lang="{language}"' in html, url
        try:
            assert_readable(html)
        except AssertionError as failure:
            raise AssertionError(f"{url} ({language}): {failure}") from None
        seen_money |= "USD" in html
        seen_big |= "10,752" in html  # a100's capacity in a week (64 GPUs × 168 h), grouped
    assert seen_money and seen_big  # the walk met a cost and a five-digit figure, so the check had work to do


def test_a_cheaper_alternative_s_cost_names_its_currency(client, world, every_area):
    _dash, gpu_request = every_area
    client.force_login(world.lead_a)
    html = client.get(reverse("committee:request-detail", args=[gpu_request.pk])).content.decode()
    assert '<td data-label="Cost">USD 12,500.00</td>' in html


def test_a_window_and_its_request_are_told_apart_by_their_letters(client, world, every_area):
    client.force_login(world.chair)
    html = client.get(reverse("allocations:windows")).content.decode()
    assert "R-12345" in html and "#12345" not in html
    assert "W-" in html


def test_an_e_mail_writes_its_times_as_the_pages_do(world, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    from committee.services import notifications

    text = notifications._when((world.cycle.intake_closes_at).isoformat())
    assert text.endswith(("CET", "CEST")) and ":" in text and "m." not in text
    assert_readable(f"<p>{text}</p>")
    friday = world.cycle.intake_closes_at.astimezone(notifications.weeks.committee_zone())
    assert text == f"{friday:%a} {friday.day} {friday:%b %Y, %H:%M} {friday.tzname()}"
