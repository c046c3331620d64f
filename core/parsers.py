r"""Input from outside, parsed once: the whole numbers and quarters every view and every setting reads (the API's
JSON bodies: `core.json_parser.JSONParser`). Nothing here imports Django REST framework, so config/env.py can use it
while the settings load.

A view that reads a number from a query string, a form or a path uses `parse_whole_number`, and a
quarter (2026-Q4) `parse_quarter`: ASCII digits only, the whole text (`re.fullmatch`, no trailing
newline), years Python's dates can hold around them. `str.isdigit()`, `\d` and `$` are not these
tests: they take "²", full-width digits and "2026-Q4\n", which `int()` or `date()` then refuse
with a 500. (The scheduler package, scheduler/, installed apart from Docket, has its own copy, standard library only:
`docket_scheduler.base.parse_whole_number`, held to the same cases by tests/allocations/test_whole_numbers.py.) ISO
weeks have theirs: `core.isoweek`.
"""

from __future__ import annotations

import re

from core.isoweek import MAX_YEAR, MIN_YEAR


def parse_whole_number(text: str | None, *, max_digits: int = 18) -> int | None:
    """`text` as a whole number when it is ASCII digits only (1 to `max_digits` of them), else None."""
    if text is None or not 0 < len(text) <= max_digits or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


_QUARTER = re.compile(r"([0-9]{4})-Q([1-4])")


# A quarter's neighbours (the fund page's links, the emergencies of the quarter before) are quarters too.
QUARTER_MIN_YEAR, QUARTER_MAX_YEAR = MIN_YEAR + 1, MAX_YEAR - 1


def parse_quarter(text: str | None) -> tuple[int, int]:
    """(year, n) of a quarter written YYYY-Qn (2026-Q4), years 3 to 9997; ValueError otherwise."""
    match = _QUARTER.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"a quarter looks like 2026-Q4, got {text!r}")
    year = int(match.group(1))
    if not QUARTER_MIN_YEAR <= year <= QUARTER_MAX_YEAR:
        raise ValueError(f"{text} is outside the years {QUARTER_MIN_YEAR} to {QUARTER_MAX_YEAR}")
    return year, int(match.group(2))
