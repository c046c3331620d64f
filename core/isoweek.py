"""ISO weeks as Docket writes them (2026-W49): one parser for every URL, query parameter and form.

Only weeks that exist are weeks: 2026-W99, 2027-W53 (2027 has 52) and 0000-W01 are refused, as
are full-width digits and a trailing newline, which `\\d` and `$` would let through, and weeks of
the years 1 and 9999, whose neighbours or UTC bounds Python cannot hold. A refused
week never reaches the database (where a NUL byte would be PostgreSQL's error, not ours).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

# As OpenAPI documents it (ECMA 262: \d is ASCII there) and as the path converter matches it.
WEEK_PATTERN = r"^\d{4}-W\d{2}$"
WEEK_RE = re.compile(r"^([0-9]{4})-W([0-9]{2})\Z")
# A week's neighbours and its bounds in UTC, from any time zone, must be dates Python holds (1 to 9999).
MIN_YEAR, MAX_YEAR = 2, 9998
WEEK_MESSAGE = _("Write an ISO week that exists as YYYY-Www, e.g. 2026-W49.")


def parse_iso_week(week: str) -> date:
    """The Monday of an ISO week written as YYYY-Www; ValueError if malformed or if the week does not exist."""
    match = WEEK_RE.match(week) if isinstance(week, str) else None
    if not match:
        raise ValueError(f"week must look like 2026-W49, got {week!r}")
    year, number = int(match.group(1)), int(match.group(2))
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise ValueError(f"{week} is outside the years {MIN_YEAR} to {MAX_YEAR}")
    try:
        return date.fromisocalendar(year, number, 1)
    except ValueError:
        raise ValueError(f"{week} is not a week of {year}") from None


def is_iso_week(value: Any) -> bool:
    try:
        parse_iso_week(value)
    except ValueError:
        return False
    return True


def validate_iso_week(value: Any) -> None:
    """A form and filter validator: refuses (ValidationError) anything but an existing ISO week."""
    if not is_iso_week(value):
        raise ValidationError(WEEK_MESSAGE, code="invalid_week")


class WeekConverter:
    """`<week:week>` in a URL: only the shape of a week matches, so anything else (a NUL byte) is a 404."""

    regex = "[0-9]{4}-W[0-9]{2}"

    def to_python(self, value: str) -> str:
        if not is_iso_week(value):
            raise ValueError(value)  # Django answers a converter's ValueError with "no match": 404
        return value

    def to_url(self, value: str) -> str:
        return value
