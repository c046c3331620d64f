"""`{% load docket_format %}`: one way to write times, numbers, money and ids on every page and in every e-mail.

Each filter calls core.datetimes or core.numbers, which charts, e-mails and PDFs call too, and each goes
through Django's localization (core/formats/<lang>/formats.py), so a second language gets its own formats.

    {{ w.start|when }}         Fri 4 Dec 2026, 18:00 CET   (the committee's zone, 24-hour, the zone named)
    {{ w.start|when_short }}   Fri 4 Dec, 18:00 CET
    {{ w.start|clock }}        18:00 CET
    {{ cycle.week_start|day }} Mon 30 Nov 2026
    {{ w.start|isoweek }}      2026-W49
    {{ hours|gpu_hours }}      12,000 or 12,000.5
    {{ value|number }}         12,345; {{ value|number:2 }} 12,345.00
    {{ share|pct }}            12.5%
    {{ cost|money }}           USD 1,234.50 (settings.DOCKET_COST_CURRENCY)
    {{ r.pk|request_ref }}     R-123;  {{ w.pk|window_ref }} W-45;  {{ n|revision_ref }} rev. 3
    {{ rank|rank_ref }}        #1 ("#" means a rank and nothing else)
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django import template

from core import datetimes, numbers

register = template.Library()


def _as_number(value: Any) -> Decimal | int | float | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, Decimal | int | float):
        return value
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _text_or(value: Any, formatted: str) -> str:
    """What a filter shows: the formatted value, or the value as it was when it is not a number (a dash)."""
    return formatted if formatted or value in (None, "") else str(value)


@register.filter
def when(value: datetime | None) -> str:
    return datetimes.format_when(value) if isinstance(value, datetime) else ""


@register.filter
def when_short(value: datetime | None) -> str:
    return datetimes.format_when_short(value) if isinstance(value, datetime) else ""


@register.filter
def clock(value: datetime | None) -> str:
    return datetimes.format_clock(value) if isinstance(value, datetime) else ""


@register.filter
def day(value: datetime | date | None) -> str:
    return datetimes.format_day(value) if isinstance(value, date) else ""


@register.filter
def isoweek(value: datetime | date | None) -> str:
    return datetimes.format_isoweek(value) if isinstance(value, date) else ""


@register.filter
def number(value: Any, places: int = 0) -> str:
    return _text_or(value, numbers.format_number(_as_number(value), int(places)))


@register.filter
def gpu_hours(value: Any) -> str:
    return _text_or(value, numbers.format_gpu_hours(_as_number(value)))


@register.filter
def pct(value: Any, places: int = 1) -> str:
    return _text_or(value, numbers.format_pct(_as_number(value), int(places)))


@register.filter
def money(value: Any, currency: str = "") -> str:
    return _text_or(value, numbers.format_money(_as_number(value), currency or None))


@register.filter
def price(value: Any) -> str:
    """A price per unit (a GPU-hour's): money with the decimals it has, two to four ("USD 2.50", "USD 4.1234")."""
    amount = _as_number(value)
    if not isinstance(amount, Decimal):
        return money(value)
    exponent = amount.normalize().as_tuple().exponent
    places = min(max(-exponent, 2), 4) if isinstance(exponent, int) else 2
    return _text_or(value, numbers.format_money(amount, None, places))


@register.filter
def request_ref(value: Any) -> str:
    return numbers.request_ref(value)


@register.filter
def window_ref(value: Any) -> str:
    return numbers.window_ref(value)


@register.filter
def rank_ref(value: Any) -> str:
    return numbers.rank_ref(value)


@register.filter
def revision_ref(value: Any) -> str:
    return numbers.revision_ref(value)


@register.filter
def figure(value: Any) -> str:
    """A table cell: a number with its own decimals and thousands separated; anything else as it is."""
    if isinstance(value, Decimal | int | float) and not isinstance(value, bool):
        return numbers.format_figure(value)
    return "" if value is None else str(value)


@register.filter
def with_labels(row: Any, columns: Any) -> list[tuple[Any, Any]]:
    """(column, value) pairs of a table row, for cells that carry their column's label (data-label, phone cards)."""
    return list(zip(columns, row, strict=False))
