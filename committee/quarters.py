"""Calendar quarters in the committee's time zone, written YYYY-Qn (2026-Q4). Plain functions, no database."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta

from committee import weeks
from core.parsers import parse_quarter

_QUARTER = re.compile(r"([0-9]{4})-Q([1-4])")


def _year_n(quarter: str) -> tuple[int, int]:
    """(year, n) of a quarter Docket wrote itself (a parsed one or its neighbour): input goes through parse_quarter."""
    match = _QUARTER.fullmatch(quarter)
    if match is None:
        raise ValueError(f"a quarter looks like 2026-Q4, got {quarter!r}")
    return int(match.group(1)), int(match.group(2))

__all__ = ["parse_quarter", "quarter_bounds", "quarter_months", "quarter_of", "quarter_of_day", "quarters_of_span",
           "shift_quarter"]


def quarter_of_day(day: date) -> str:
    return f"{day.year:04d}-Q{(day.month - 1) // 3 + 1}"


def quarter_of(instant: datetime) -> str:
    """The quarter an instant falls in, read in the committee's zone (31 Dec 23:59 there is still Q4)."""
    return quarter_of_day(instant.astimezone(weeks.committee_zone()).date())


def quarter_bounds(quarter: str) -> tuple[datetime, datetime]:
    """The quarter's first instant and the next quarter's, in the committee's zone."""
    year, n = _year_n(quarter)
    zone = weeks.committee_zone()
    start = datetime.combine(date(year, 3 * n - 2, 1), time.min, tzinfo=zone)
    end = datetime.combine(date(year + n // 4, 3 * (n % 4) + 1, 1), time.min, tzinfo=zone)
    return start, end


def quarter_months(quarter: str) -> list[str]:
    year, n = _year_n(quarter)
    return [f"{year:04d}-{3 * n - 2 + k:02d}" for k in range(3)]


def shift_quarter(quarter: str, by: int) -> str:
    year, n = _year_n(quarter)
    index = year * 4 + n - 1 + by
    return f"{index // 4:04d}-Q{index % 4 + 1}"


def quarters_of_span(start: datetime, end: datetime) -> list[str]:
    """The quarters the span [start, end) has instants in, in order (a week across 1 January: two)."""
    first, last = quarter_of(start), quarter_of(max(start, end - timedelta(microseconds=1)))
    quarters = [first]
    while quarters[-1] < last:
        quarters.append(shift_quarter(quarters[-1], 1))
    return quarters
