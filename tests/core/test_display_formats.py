"""How a reader sees times, numbers, money and ids (core.datetimes, core.numbers, the docket_format filters).

Times are the committee's (settings.TIME_ZONE), 24-hour, the zone named; numbers and money through Django's
localization, in English and in Simplified Chinese.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.template import Context, Template
from django.test import override_settings
from django.utils import translation

from core import datetimes, numbers
from tests.clock import FIXED_NOW

BERLIN = override_settings(TIME_ZONE="Europe/Berlin")


def render(source: str, **context: object) -> str:
    return Template("{% load docket_format %}" + source).render(Context(context))


@BERLIN
def test_an_instant_is_written_in_the_committees_zone_on_the_24_hour_clock_with_the_zone_named():
    friday_close = datetime(2026, 12, 4, 17, 0, tzinfo=UTC)  # Friday 18:00 in Berlin, the intake close
    assert datetimes.format_when(friday_close) == "Fri 4 Dec 2026, 18:00 CET"
    with translation.override("zh-hans"):
        assert datetimes.format_when(friday_close) == "2026年12月4日（星期五）18:00 CET"
    assert render("{{ t|when }} · {{ t|clock }} · {{ t|when_short }}", t=friday_close) == (
        "Fri 4 Dec 2026, 18:00 CET · 18:00 CET · Fri 4 Dec, 18:00 CET"
    )


@BERLIN
def test_midnight_is_00_00_of_the_day_it_starts_not_midnight_or_12_am():
    monday = datetime(2026, 12, 6, 23, 0, tzinfo=UTC)  # Monday 7 December 00:00 in Berlin
    assert datetimes.format_when(monday) == "Mon 7 Dec 2026, 00:00 CET"
    assert datetimes.format_day(monday) == "Mon 7 Dec 2026"  # not Sunday, as the UTC date would say
    assert datetimes.format_isoweek(monday) == "2026-W50"
    assert datetimes.format_when(monday - timedelta(minutes=1)) == "Sun 6 Dec 2026, 23:59 CET"


@BERLIN
def test_the_dst_change_in_berlin_on_25_october_2026_names_each_side_its_own_zone():
    # 03:00 CEST becomes 02:00 CET at 01:00 UTC: 02:30 happens twice, told apart by the zone.
    first = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    second = datetime(2026, 10, 25, 1, 30, tzinfo=UTC)
    assert datetimes.format_when(first) == "Sun 25 Oct 2026, 02:30 CEST"
    assert datetimes.format_when(second) == "Sun 25 Oct 2026, 02:30 CET"
    assert datetimes.zone_label(first) == "Europe/Berlin (CEST)"
    assert datetimes.zone_label(second) == "Europe/Berlin (CET)"


@BERLIN
def test_the_year_boundary_and_iso_week_53_of_2026():
    new_year = datetime(2026, 12, 31, 23, 0, tzinfo=UTC)  # 1 January 2027 00:00 in Berlin
    assert datetimes.format_when(new_year) == "Fri 1 Jan 2027, 00:00 CET"
    assert datetimes.format_isoweek(new_year) == "2026-W53"  # 2026 has 53 ISO weeks; 1 Jan 2027 is in the last
    assert datetimes.format_isoweek(date(2026, 12, 28)) == "2026-W53"
    assert datetimes.format_isoweek(date(2027, 1, 4)) == "2027-W01"
    assert render("{{ d|isoweek }} {{ d|day }}", d=date(2026, 12, 31)) == "2026-W53 Thu 31 Dec 2026"


def test_in_utc_the_zone_is_named_utc_and_a_naive_time_is_taken_as_utc():
    assert datetimes.format_when(FIXED_NOW) == "Wed 2 Dec 2026, 10:00 UTC"
    assert datetimes.format_when(FIXED_NOW.replace(tzinfo=None)) == "Wed 2 Dec 2026, 10:00 UTC"
    assert datetimes.zone_label(FIXED_NOW) == "UTC"


def test_nothing_is_written_for_a_missing_time():
    assert datetimes.format_when(None) == "" and render("{{ t|when }}{{ t|day }}", t=None) == ""


@pytest.mark.parametrize(("language", "expected"), [("en", "1,234,567,890"), ("zh-hans", "1,234,567,890")])
def test_large_numbers_have_thousands_separators_in_each_language(language, expected):
    with translation.override(language):
        assert numbers.format_number(1234567890) == expected
        assert render("{{ n|number }}", n=1234567890) == expected


def test_gpu_hours_keep_a_fraction_only_when_there_is_one_and_round_half_up():
    assert numbers.format_gpu_hours(Decimal("12000")) == "12,000"
    assert numbers.format_gpu_hours(Decimal("12000.50")) == "12,000.5"
    assert numbers.format_gpu_hours(Decimal("0.04")) == "0"
    assert numbers.format_gpu_hours(Decimal("99999.96")) == "100,000"
    assert numbers.format_number(Decimal("2.675"), 2) == "2.68"  # Django's number_format alone would cut to 2.67


@override_settings(DOCKET_COST_CURRENCY="EUR")
def test_money_always_names_its_currency_zero_and_negative_included():
    assert numbers.format_money(Decimal("1234.5")) == "EUR 1,234.50"
    assert numbers.format_money(0) == "EUR 0.00"
    assert numbers.format_money(Decimal("-12")) == "EUR -12.00"
    assert numbers.format_money(Decimal("-0.001")) == "EUR 0.00"  # no "-0.00"
    assert render("{{ c|money }}", c=Decimal("98765.432")) == "EUR 98,765.43"
    with translation.override("zh-hans"):
        assert numbers.format_money(Decimal("1234.5")) == "1,234.50 EUR"
    assert numbers.format_money(None) == ""


def test_ids_say_what_they_name_and_hash_is_only_a_rank():
    assert render("{{ 123|request_ref }} {{ 45|window_ref }} {{ 1|rank_ref }} {{ 3|revision_ref }}") == (
        "R-123 W-45 #1 rev. 3"
    )
    assert render("{{ none|request_ref }}{{ none|window_ref }}", none=None) == ""


def test_a_table_cell_keeps_its_decimals_and_separates_thousands():
    assert render("{{ v|figure }}", v=Decimal("12345.60")) == "12,345.60"
    assert render("{{ v|figure }}", v=98765) == "98,765"
    assert render("{{ v|figure }}", v="2026-W49") == "2026-W49"


def test_a_date_time_field_is_typed_on_the_24_hour_clock_and_says_the_zone():
    field = datetimes.UTCFormDateTimeField()
    html = field.widget.render("start", datetime(2026, 12, 4, 18, 0, tzinfo=UTC))
    assert 'type="text"' in html and 'value="2026-12-04 18:00"' in html and "PM" not in html
    with BERLIN:
        assert str(datetimes.UTCFormDateTimeField().help_text) == "24-hour clock, Europe/Berlin (CET) time."
        assert str(datetimes.UTCFormDateTimeField(help_text="When it starts.").help_text) == (
            "When it starts. 24-hour clock, Europe/Berlin (CET) time."
        )
