"""The quarter every view reads (core.parsers.parse_quarter): YYYY-Qn, ASCII digits, the whole text, years 3 to 9997."""

from __future__ import annotations

import pytest

from core.parsers import parse_quarter


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-Q4", (2026, 4)), ("0003-Q1", (3, 1)), ("9997-Q4", (9997, 4)),
])
def test_a_quarter_is_its_year_and_number(text, expected):
    assert parse_quarter(text) == expected


@pytest.mark.parametrize("text", [
    "0000-Q1", "0001-Q1", "0002-Q4", "9998-Q1", "9999-Q4",  # no date of its own or of a neighbour
    "2026-Q4\n", " 2026-Q4", "２０２６-Q4", "2026-Q５", "2026-Q0", "2026-Q5", "2026-q4", "2026Q4", "", "\x00",
    "2026-Q4\x00", "99999-Q1",
])
def test_anything_else_is_refused(text):
    with pytest.raises(ValueError):
        parse_quarter(text)


def test_not_a_string_is_refused():
    with pytest.raises(ValueError):
        parse_quarter(None)
