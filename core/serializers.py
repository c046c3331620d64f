"""Input serializers take each JSON value only in the type the schema documents, and only the fields it lists.

DRF converts on input: a CharField takes 0 as "0", an IntegerField takes "7" and 7.0, a
BooleanField takes "yes" and 1, a DecimalField takes 3.5. The OpenAPI schema documents one
type per field, so a client that sends another type is told so (400) instead of being guessed
at. A decimal string must match the pattern the schema documents (core.openapi.decimal_pattern):
Python's Decimal also reads "1_000", full-width digits, "1E+5" and "-0", which the schema does not
allow. A field the input does not list (`status`, `team`, `id`, a total) is refused, naming it,
rather than silently ignored: a client that sets it would otherwise believe it had. The fields
sent as documented are checked too, so one 400 names every invalid field. Query strings
are all text, so they are not checked here (their fields parse them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import models
from django.http import QueryDict
from django.utils.translation import gettext_lazy as _
from rest_framework import relations, serializers

from core.datetimes import UTCDateTimeField
from core.numbers import DECIMAL_MESSAGE, INTEGER_MESSAGE, integer_pattern, written_as
from core.openapi import decimal_pattern


def json_types(field: serializers.Field) -> tuple[type, ...] | None:
    """The JSON types (as Python types) a field's value must have; None for no check."""
    if isinstance(field, serializers.BooleanField):
        return (bool,)
    if isinstance(field, (serializers.IntegerField, relations.PrimaryKeyRelatedField)):
        return (int,)
    if isinstance(field, serializers.FloatField):
        return (int, float)
    if isinstance(field, serializers.MultipleChoiceField):
        return (list,)
    if isinstance(field, serializers.ChoiceField):
        return tuple({type(key) for key in field.choices}) or None
    if isinstance(field, (serializers.CharField, serializers.DecimalField, serializers.DateTimeField,
                          serializers.DateField, serializers.SlugRelatedField)):
        return (str,)
    if isinstance(field, (serializers.ListSerializer, serializers.ListField)):
        return (list,)
    if isinstance(field, serializers.Serializer):
        return (dict,)
    return None


class StrictJSONMixin(serializers.Serializer):
    """Refuse a JSON value of another type than the field's (400, naming the field), before DRF converts it.

    On a ModelSerializer, a model's DateTimeField becomes core.datetimes.UTCDateTimeField: a
    time the database cannot store is refused, and the rest arrive in UTC.
    """

    refuses_unknown_fields = True  # read by core.openapi: additionalProperties is false in the schema

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.DateTimeField: UTCDateTimeField,
    }

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping) and not isinstance(data, QueryDict):
            errors: dict[str, Any] = {}
            for name in data:
                field = self.fields.get(name)
                if field is None or field.read_only:
                    errors[str(name)] = [str(_("This field cannot be set here."))]
            for name, field in self.fields.items():
                if field.read_only or name not in data or data[name] is None:
                    continue
                expected = json_types(field)
                value = data[name]
                wrong_bool = isinstance(value, bool) and bool not in (expected or ())
                if expected is not None and (wrong_bool or not isinstance(value, expected)):
                    errors[name] = [str(_("Incorrect type: expected %(type)s.") % {"type": _type_name(expected)})]
                elif isinstance(field, serializers.DecimalField) and not _decimal_written_as_documented(field, value):
                    errors[name] = [str(DECIMAL_MESSAGE % {"pattern": decimal_pattern(field)})]
            if errors:
                # Every error at once: the other fields are checked too, as if the refused ones were not sent
                # (a refused field's own "required" is left out: its type error says more).
                rest = {key: value for key, value in data.items() if str(key) not in errors}
                try:
                    super().to_internal_value(rest)
                except serializers.ValidationError as exc:
                    if isinstance(exc.detail, Mapping):
                        for key, messages in exc.detail.items():
                            errors.setdefault(str(key), messages)
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


JSON_NAMES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def _decimal_written_as_documented(field: serializers.DecimalField, value: str) -> bool:
    return written_as(decimal_pattern(field), value)


def _type_name(expected: tuple[type, ...]) -> str:
    return " or ".join(sorted({JSON_NAMES.get(t, t.__name__) for t in expected}))


class StrictIntegerField(serializers.IntegerField):
    """DRF's IntegerField, taking a string (a query parameter) only in digits 0-9.

    DRF reads a string through int(), which also takes "1_000", full-width digits and "12.0";
    the schema documents an integer. A JSON body's integers are JSON numbers (StrictJSONMixin).
    """

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str):
            pattern = integer_pattern(min_value=self.min_value)
            if not written_as(pattern, data.strip()):
                raise serializers.ValidationError(str(INTEGER_MESSAGE % {"pattern": pattern}), code="invalid")
        return super().to_internal_value(data)
