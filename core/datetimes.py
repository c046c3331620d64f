"""Date-times from outside (API bodies and query parameters, form fields), checked once and made UTC.

Python takes UTC offsets up to ±23:59 and years 1 to 9999; PostgreSQL's timestamptz takes offsets
up to ±15:59, and a moment that is in year 1 or 9999 on the client's clock can be in year 0 or
10000 in UTC, which Python cannot read back. Such an input is refused with 400 naming the field,
and every accepted one is converted to UTC before it reaches a query.

The three field classes are the same rule for DRF serializers, Django forms and django-filter.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import django_filters
from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import dateformat, formats
from django.utils.functional import Promise
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _
from django_filters.fields import IsoDateTimeField
from rest_framework import serializers

StrOrPromise = str | Promise

MAX_OFFSET = timedelta(hours=15, minutes=59)  # PostgreSQL's limit for a timestamptz input
OFFSET_MESSAGE = _("A UTC offset must lie within ±15:59.")
RANGE_MESSAGE = _("This time is outside the years 1 to 9999 once converted to UTC.")
# Said in every date-time's description (help_text) in the schema, by the fields below.
LIMITS_HELP = _("ISO 8601; a UTC offset must lie within ±15:59, and the time in the years 1 to 9999 once in UTC.")


def with_limits(help_text: StrOrPromise | None) -> StrOrPromise:
    """`help_text` followed by what a date-time must be (LIMITS_HELP)."""
    return format_lazy("{} {}", help_text, LIMITS_HELP) if help_text else LIMITS_HELP


def storable_utc(value: datetime) -> datetime:
    """`value` (aware) in UTC; ValidationError if its offset or its UTC year is more than the database takes."""
    offset = value.utcoffset()
    if offset is None:
        raise ValueError("storable_utc takes an aware datetime")  # the fields make naive input aware first
    if abs(offset) > MAX_OFFSET:
        raise ValidationError(OFFSET_MESSAGE, code="offset")
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValidationError(RANGE_MESSAGE, code="overflow") from None


class UTCDateTimeField(serializers.DateTimeField):
    """DRF's DateTimeField, refusing what the database cannot store and answering UTC.

    DRF converts an aware input to the current time zone before anything sees it, which would
    hide the offset the client wrote; the check runs on the value as written. Its description
    in the schema says the limits.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not kwargs.get("read_only"):
            kwargs["help_text"] = with_limits(kwargs.get("help_text"))
        super().__init__(*args, **kwargs)

    def enforce_timezone(self, value: datetime) -> datetime:
        aware = value if value.utcoffset() is not None else super().enforce_timezone(value)
        try:
            return storable_utc(aware)
        except ValidationError as exc:
            raise serializers.ValidationError(list(exc.messages), code=exc.code) from None


def _storable_or_none(parse: Callable[[Any], datetime | None], value: Any) -> datetime | None:
    """A form field's parse, then storable_utc; a date Python cannot hold is the same range error."""
    try:
        parsed = parse(value)
    except OverflowError:
        raise ValidationError(RANGE_MESSAGE, code="overflow") from None
    return None if parsed is None else storable_utc(parsed)


class UTCFormDateTimeField(forms.DateTimeField):
    """Django's DateTimeField (it takes ISO 8601 too, offsets included), refusing what cannot be stored.

    Typed on the 24-hour clock (core.forms.ZonedDateTimeInput, unless the form names another widget), and its
    help names the zone a time without an offset is read in.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from core.forms import ZonedDateTimeInput, lazy_zone_help

        kwargs.setdefault("widget", ZonedDateTimeInput)
        given = kwargs.get("help_text")
        kwargs["help_text"] = format_lazy("{} {}", given, lazy_zone_help()) if given else lazy_zone_help()
        super().__init__(*args, **kwargs)

    def to_python(self, value: Any) -> datetime | None:
        return _storable_or_none(super().to_python, value)


class UTCIsoDateTimeField(IsoDateTimeField):
    def to_python(self, value: Any) -> datetime | None:
        return _storable_or_none(super().to_python, value)


class UTCDateTimeFilter(django_filters.IsoDateTimeFilter):
    """An ISO 8601 query parameter, refused (400) when the database could not take it, else in UTC."""

    field_class = UTCIsoDateTimeField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["help_text"] = with_limits(kwargs.get("help_text"))
        super().__init__(*args, **kwargs)


# --- How a time is written for a reader: the committee's zone, the 24-hour clock, the zone named --------------
#
# Every page, e-mail, chart hover and PDF writes an instant through these, in settings.TIME_ZONE (the committee's
# zone), with the formats of the reader's language (DOCKET_*_FORMAT in core/formats/<lang>/formats.py). The
# template filters (core.templatetags.docket_format) call them.


def committee_zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def in_committee_zone(value: datetime) -> datetime:
    """`value` (aware; a naive one is taken as UTC, as storage is) on the committee's clock."""
    aware = value if value.utcoffset() is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(committee_zone())


def _formatted(value: datetime | date | None, format_name: str) -> str:
    if value is None:
        return ""
    pattern = str(formats.get_format(format_name, use_l10n=True))
    if isinstance(value, datetime):
        value = in_committee_zone(value)
        zone_name = "".join("\\" + c for c in value.tzname() or "")
        # Django writes no zone for an hour that happens twice (02:30 on the night summer time ends), which
        # is exactly where the zone tells the two apart: the zone's name goes in as literal text instead.
        pattern = re.sub(r"(?<!\\)T", lambda _m: zone_name, pattern)
    return str(dateformat.format(value, pattern))


def format_when(value: datetime | None) -> str:
    """An instant, with its day and the zone: "Fri 4 Dec 2026, 18:00 CET" (zh: "2026年12月4日（星期五）18:00 CET")."""
    return _formatted(value, "DOCKET_WHEN_FORMAT")


def format_when_short(value: datetime | None) -> str:
    """An instant within a week the reader already sees (a window's start): "Fri 4 Dec, 18:00 CET"."""
    return _formatted(value, "DOCKET_WHEN_SHORT_FORMAT")


def format_clock(value: datetime | None) -> str:
    """The time of day with the zone: "18:00 CET"."""
    return _formatted(value, "DOCKET_CLOCK_FORMAT")


def format_day(value: datetime | date | None) -> str:
    """A day: "Fri 4 Dec 2026"; an instant is first put on the committee's clock (23:30 UTC can be the next day)."""
    return _formatted(value, "DOCKET_DAY_FORMAT")


def format_isoweek(value: datetime | date | None) -> str:
    """The ISO week a day or an instant (on the committee's clock) falls in: "2026-W49"; 2027-01-01 is "2026-W53"."""
    if value is None:
        return ""
    day = in_committee_zone(value).date() if isinstance(value, datetime) else value
    year, week, _weekday = day.isocalendar()
    return f"{year:04d}-W{week:02d}"


def zone_label(at: datetime | None = None) -> str:
    """The committee's zone as a form's help names it: "Europe/Berlin (CET)" or "UTC"."""
    zone = committee_zone()
    short = (at or datetime.now(UTC)).astimezone(zone).tzname() or ""
    return settings.TIME_ZONE if short in ("", settings.TIME_ZONE) else f"{settings.TIME_ZONE} ({short})"
