"""How a number is written in input: the one pattern the API's schema documents and the forms check.

Python's Decimal() and int() read more than digits: "1_000", full-width digits ("１２"), "1E+5",
"-0", "NaN" (Decimal) and "12.0" (Django's IntegerField). The API documents a pattern per field
(core.openapi) and refuses the rest (core.serializers); the forms (core.forms) check the same
pattern, so a number the schema would refuse is refused on a page too, with a clear message.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.utils import formats
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


# --- How a number is written on a page, in an e-mail, a chart's hover text or a PDF ------------------------
#
# One place for every reader-facing number, so a page, its chart and its PDF agree and a second language gets
# its own separators (core/formats/<lang>/formats.py, through Django's localization). The template filters
# (core.templatetags.docket_format) call these.

Number = Decimal | int | float


def _rounded(value: Number, places: int) -> Decimal:
    """`value` rounded half away from zero to `places` decimals (Django's number_format cuts, it does not round)."""
    exact = value if isinstance(value, Decimal) else Decimal(str(value))
    return exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def format_number(value: Number | None, places: int = 0) -> str:
    """`value` with the reader's thousands separator and decimal mark, `places` decimals: "12,345.5"; "" for None.

    "-0" never shows: a value that rounds to zero is written 0.
    """
    if value is None:
        return ""
    rounded = _rounded(value, places)
    if rounded == 0:
        rounded = abs(rounded)
    return str(formats.number_format(rounded, decimal_pos=places, use_l10n=True, force_grouping=True))


def format_gpu_hours(value: Number | None) -> str:
    """GPU-hours: whole hours as "12,000", a fraction to one decimal as "12,000.5"; "" for None."""
    if value is None:
        return ""
    return format_number(value, 0 if _rounded(value, 1) == _rounded(value, 0) else 1)


def format_pct(value: Number | None, places: int = 1) -> str:
    """A percentage: "12.5%" (the number localized); "" for None."""
    if value is None:
        return ""
    return str(formats.get_format("DOCKET_PERCENT_FORMAT")) % {"number": format_number(value, places)}


def format_money(value: Number | None, currency: str | None = None, places: int = 2) -> str:
    """A cost in `currency` (default settings.DOCKET_COST_CURRENCY), always named: "USD 1,234.50", "USD -12.00".

    "" for None. The order of code and amount is the language's (DOCKET_MONEY_FORMAT in core/formats/).
    """
    if value is None:
        return ""
    code = currency or settings.DOCKET_COST_CURRENCY
    pattern = str(formats.get_format("DOCKET_MONEY_FORMAT"))
    return pattern % {"currency": code, "amount": format_number(value, places)}


# --- Ids: a letter says what the number names; "#" is only ever a rank -----------------------------------------

def request_ref(pk: int | str | None) -> str:
    """A GPU request's id as readers see it: "R-123"."""
    return "" if pk in (None, "") else f"R-{pk}"


def window_ref(pk: int | str | None) -> str:
    """An allocation window's id: "W-45"."""
    return "" if pk in (None, "") else f"W-{pk}"


def rank_ref(rank: int | str | None) -> str:
    """A place in the ranking: "#1". The only thing "#" stands for."""
    return "" if rank in (None, "") else f"#{rank}"


def revision_ref(number: int | str | None) -> str:
    """An archive revision's number: "rev. 3" (its language's form)."""
    return "" if number in (None, "") else str(_("rev. %(number)s") % {"number": number})


def format_figure(value: Number | None) -> str:
    """A figure as computed (a table cell): its own decimals kept, thousands separated; "" for None."""
    if value is None:
        return ""
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        return format_number(value, max(0, -exponent) if isinstance(exponent, int) else 0)
    return format_number(value, 0 if isinstance(value, int) else 2)

