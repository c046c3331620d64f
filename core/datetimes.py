"""Date-times from outside (API bodies and query parameters, form fields), checked once and made UTC.

Python takes UTC offsets up to ±23:59 and years 1 to 9999; PostgreSQL's timestamptz takes offsets
up to ±15:59, and a moment that is in year 1 or 9999 on the client's clock can be in year 0 or
10000 in UTC, which Python cannot read back. Such an input is refused with 400 naming the field,
and every accepted one is converted to UTC before it reaches a query.

The three field classes are the same rule for DRF serializers, Django forms and django-filter.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
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
    """Django's DateTimeField (it takes ISO 8601 too, offsets included), refusing what cannot be stored."""

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
