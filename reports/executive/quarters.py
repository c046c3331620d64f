"""Calendar quarters in the committee's time zone, written YYYY-Qn (2026-Q4). Plain functions, no database."""

from __future__ import annotations

import re
from datetime import date, datetime, time

from committee import weeks

_QUARTER = re.compile(r"^(\d{4})-Q([1-4])$")


def parse_quarter(quarter: str) -> tuple[int, int]:
    """(year, n) of a quarter written 2026-Q4; ValueError if malformed."""
    match = _QUARTER.match(quarter)
    if match is None:
        raise ValueError(f"a quarter looks like 2026-Q4, got {quarter!r}")
    return int(match.group(1)), int(match.group(2))


def quarter_of_day(day: date) -> str:
    return f"{day.year:04d}-Q{(day.month - 1) // 3 + 1}"


def quarter_of(instant: datetime) -> str:
    """The quarter an instant falls in, read in the committee's zone (31 Dec 23:59 there is still Q4)."""
    return quarter_of_day(instant.astimezone(weeks.committee_zone()).date())


def quarter_bounds(quarter: str) -> tuple[datetime, datetime]:
    """The quarter's first instant and the next quarter's, in the committee's zone."""
    year, n = parse_quarter(quarter)
    zone = weeks.committee_zone()
    start = datetime.combine(date(year, 3 * n - 2, 1), time.min, tzinfo=zone)
    end = datetime.combine(date(year + n // 4, 3 * (n % 4) + 1, 1), time.min, tzinfo=zone)
    return start, end


def quarter_months(quarter: str) -> list[str]:
    year, n = parse_quarter(quarter)
    return [f"{year:04d}-{3 * n - 2 + k:02d}" for k in range(3)]


def shift_quarter(quarter: str, by: int) -> str:
    year, n = parse_quarter(quarter)
    index = year * 4 + n - 1 + by
    return f"{index // 4:04d}-Q{index % 4 + 1}"
