"""What every app's forms share."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, TypeVar

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _

from core import numbers

FieldT = TypeVar("FieldT", bound=forms.Field)


def form_field(form: forms.BaseForm, name: str, kind: type[FieldT]) -> FieldT:
    """The form's own copy of field `name`, as the `kind` of field it is.

    `form.fields` holds plain `Field`s as far as the type checker knows; a form that sets a
    `queryset` or `choices` in `__init__` names the kind here, and a field that is not of that
    kind (the declaration or the model changed) fails loudly instead of gaining a stray attribute.
    """
    field = form.fields[name]
    if not isinstance(field, kind):
        raise TypeError(f"{type(form).__name__}.{name} is a {type(field).__name__}, not a {kind.__name__}")
    return field


# --- Numbers, written as the API's schema documents them (core.numbers) ----------------------


def _example(places: int) -> str:
    return "1250" + ("." + "5" * places if places else "")


class StrictDecimalField(forms.DecimalField):
    """Django's DecimalField, taking only what the API's pattern takes: no "1_000", "１２", "1E+5", "-0" or "NaN"."""

    def to_python(self, value: Any) -> Decimal | None:  # type: ignore[override]  # stubs: IntegerField's
        if value not in self.empty_values:
            text = str(value).strip()
            # Without the digit count and the maximum: a well-written 150 for a percentage is told
            # the range ("less than or equal to 100") by Django's own validators, not the format.
            pattern = numbers.decimal_pattern(
                max_digits=None, decimal_places=self.decimal_places, min_value=self.min_value,
            )
            if not numbers.written_as(pattern, text):
                raise ValidationError(
                    FORM_DECIMAL_MESSAGE % {"example": _example(self.decimal_places or 0)}, code="invalid"
                )
        return super().to_python(value)


class StrictIntegerField(forms.IntegerField):
    """Django's IntegerField, taking digits 0-9 only: int() also reads "1_000", "１２" and, here, "12.0"."""

    def to_python(self, value: Any) -> int | None:
        pattern = numbers.integer_pattern(min_value=self.min_value)
        if value not in self.empty_values and not numbers.written_as(pattern, str(value).strip()):
            raise ValidationError(FORM_INTEGER_MESSAGE, code="invalid")
        return super().to_python(value)


FORM_DECIMAL_MESSAGE = _("Write the number in digits 0-9 with an optional decimal point, e.g. %(example)s.")
FORM_INTEGER_MESSAGE = _("Write a whole number in digits 0-9, e.g. 1250.")


def strict_number_formfield(db_field: models.Field[Any, Any], **kwargs: Any) -> forms.Field | None:
    """A ModelForm's `formfield_callback`: numbers become the strict fields, bounded as the model's validators are.

    The model's MinValueValidator and MaxValueValidator otherwise run only after parsing, so the
    pattern would not know that a minus sign (or "-0") has no place in the field.
    """
    if isinstance(db_field, models.DecimalField | models.IntegerField):
        kwargs.setdefault("form_class", StrictDecimalField if isinstance(db_field, models.DecimalField)
                          else StrictIntegerField)
        for validator in db_field.validators:
            if isinstance(validator, MinValueValidator):
                kwargs.setdefault("min_value", validator.limit_value)
            elif isinstance(validator, MaxValueValidator):
                kwargs.setdefault("max_value", validator.limit_value)
    return db_field.formfield(**kwargs)


# --- Date-times typed on a page: the 24-hour clock, in the committee's zone, the zone named ------------------

DATETIME_INPUT_FORMAT = "%Y-%m-%d %H:%M"
DATETIME_INPUT_PATTERN = r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?"


class ZonedDateTimeInput(forms.DateTimeInput):
    """A date-time as "2026-12-04 18:00": 24-hour whatever the browser's locale (a datetime-local input shows
    "06:00 PM" to an en-US browser), read in the committee's zone, which the field's help names (zone_help)."""

    input_type = "text"

    def __init__(self, attrs: dict[str, Any] | None = None, format: str | None = None) -> None:
        base = {
            "placeholder": "YYYY-MM-DD HH:MM", "pattern": DATETIME_INPUT_PATTERN, "inputmode": "numeric",
            "autocomplete": "off", "class": "datetime-24h",
        }
        super().__init__(attrs={**base, **(attrs or {})}, format=format or DATETIME_INPUT_FORMAT)


def zone_help() -> str:
    """What a date-time field's help says: the clock and the zone, e.g. "24-hour clock, Europe/Berlin (CET) time."."""
    from core.datetimes import zone_label  # core.datetimes imports this module inside its field, not at the top

    return str(_("24-hour clock, %(zone)s time.") % {"zone": zone_label()})


lazy_zone_help = lazy(zone_help, str)
