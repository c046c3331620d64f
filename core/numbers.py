"""How a number is written in input: the one pattern the API's schema documents and the forms check.

Python's Decimal() and int() read more than digits: "1_000", full-width digits ("１２"), "1E+5",
"-0", "NaN" (Decimal) and "12.0" (Django's IntegerField). The API documents a pattern per field
(core.openapi) and refuses the rest (core.serializers); the forms (core.forms) check the same
pattern, so a number the schema would refuse is refused on a page too, with a clear message.
"""

from __future__ import annotations

import re
from decimal import Decimal

from django.utils.translation import gettext_lazy as _

DECIMAL_MESSAGE = _("Write the number in digits 0-9 with an optional decimal point, as %(pattern)s.")
INTEGER_MESSAGE = _("Write a whole number in digits 0-9, as %(pattern)s.")

Bound = Decimal | int | float | None


def decimal_pattern(
    *, max_digits: int | None, decimal_places: int | None, min_value: Bound = None,
    max_value: Bound = None,
) -> str:
    """The strings a decimal field takes, as a regular expression (ECMA 262, as OpenAPI wants).

    A digit is required, a minus sign only where negative values are allowed, and the maximum
    is spelled out when it is a power of ten (a percentage: up to two whole digits, or 100).
    """
    places = decimal_places or 0
    whole = max_digits - places if max_digits is not None else None
    fraction = rf"(?:\.\d{{0,{places}}})?" if places else ""
    maximum = Decimal(str(max_value)) if max_value is not None else None
    alternatives = []
    if maximum is not None and maximum > 0 and _power_of_ten(maximum):
        below = rf"\d{{1,{len(str(int(maximum))) - 1}}}{fraction}"
        alternatives += [below, str(int(maximum)) + fraction.replace(r"\d", "0")]
    elif whole != 0:
        alternatives.append((rf"\d{{1,{whole}}}" if whole is not None else r"\d+") + fraction)
    if places:
        alternatives.append(rf"\.\d{{1,{places}}}")
    return "^" + _sign(min_value) + "(?:" + "|".join(alternatives) + ")$"


def integer_pattern(*, min_value: int | None = None) -> str:
    """The strings an integer field takes: digits 0-9, a minus sign only where negative values are allowed."""
    return "^" + _sign(min_value) + r"\d+$"


def written_as(pattern: str, value: str) -> bool:
    """Whether `value` matches `pattern` with \\d meaning 0-9 only (Python's \\d takes every script's digits)."""
    return re.fullmatch(pattern, value, flags=re.ASCII) is not None


def _sign(min_value: Bound) -> str:
    return "-?" if min_value is None or Decimal(str(min_value)) < 0 else ""


def _power_of_ten(value: Decimal) -> bool:
    return value == value.to_integral_value() and str(int(value)).rstrip("0") == "1"
