"""The OpenAPI schema's view of errors: every operation documents the error answers it can give.

drf-spectacular documents what a view declares (200, 201, 304…). The answers that DRF itself
gives are the same on every endpoint, so they are added here once instead of on each view:

    400  the input (body or query) is invalid; a field → messages object, or {"detail": ...}
    401  no credentials, or unknown/revoked ones
    403  signed in, but this caller may not do this (or a scheduler token on a person's endpoint)
    404  what the path or query names does not exist for this caller (or a page past the end)
    409  (writes) valid, but not in the current state of what it acts on (e.g. closing intake twice)

A status a view declares itself (with its own description) wins.

Decimal fields travel as strings; their pattern here says exactly what the field takes (a digit
is required, a minus sign only where negative values are allowed, and the maximum when it is a
power of ten, as percentages are), so a client that follows the schema is never refused.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import build_basic_type
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers

from core import numbers


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text=_("What went wrong, in words."))


SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _object_schema(description: str) -> dict[str, Any]:
    schema = build_basic_type(OpenApiTypes.OBJECT)
    assert schema is not None, "build_basic_type answers None only for OpenApiTypes.NONE"
    schema["description"] = description
    return schema


class DocketAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code, body, description in self._error_answers():
            if code in responses:
                continue
            response = self._get_response_for_code(body, code, direction=direction)
            response["description"] = str(description)
            responses[code] = response
        return responses

    def _error_answers(self) -> list[tuple[str, Any, Any]]:
        answers: list[tuple[str, Any, Any]] = []
        if self.method not in SAFE_METHODS or self._has_query_parameters():
            validation = _object_schema(str(_("Each invalid field with its messages, or `detail`.")))
            answers.append(("400", validation, _("Invalid input; nothing was changed.")))
        if self.get_auth():
            answers.append(("401", ErrorSerializer, _("No credentials, or unknown or revoked ones.")))
            answers.append(("403", ErrorSerializer, _("This caller may not do this.")))
        if self.method not in SAFE_METHODS:
            conflict = _object_schema(str(_("Messages by field (`non_field_errors` for the whole), or `detail`.")))
            answers.append(("409", conflict, _("Not in the current state of what it acts on.")))
        if "{" in self.path or self.method == "GET":
            answers.append(("404", ErrorSerializer, _("Not found, or not this caller's to see.")))
        return answers

    def _map_serializer(self, serializer: Any, direction: Any, bypass_extensions: bool = False) -> dict[str, Any]:
        """An input serializer refuses fields it does not list (core.serializers.StrictJSONMixin): say so."""
        schema: dict[str, Any] = super()._map_serializer(serializer, direction, bypass_extensions)
        if direction == "request" and getattr(serializer, "refuses_unknown_fields", False):
            schema["additionalProperties"] = False
        return schema

    def _map_serializer_field(self, field: Any, direction: Any, bypass_extensions: bool = False) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer_field(field, direction, bypass_extensions)
        if isinstance(field, serializers.DecimalField) and schema.get("type") == "string" and "pattern" in schema:
            schema["pattern"] = decimal_pattern(field)
        if isinstance(field, serializers.ListSerializer) and schema.get("type") == "array":
            # many=True with max_length (e.g. a request's alternatives): drf-spectacular leaves it out.
            # (The stubs do not list ListSerializer's max_length and min_length.)
            max_items, min_items = getattr(field, "max_length", None), getattr(field, "min_length", None)
            if max_items is not None:
                schema["maxItems"] = max_items
            if min_items is not None:
                schema["minItems"] = min_items
        return schema

    def _get_parameters(self) -> list[dict[str, Any]]:
        """An optional query parameter sent empty (`?page=`) counts as not sent, as Django's forms read it."""
        parameters: list[dict[str, Any]] = super()._get_parameters()
        for parameter in parameters:
            if parameter.get("in") == "query" and not parameter.get("required"):
                parameter["allowEmptyValue"] = True
        return parameters

    def _has_query_parameters(self) -> bool:
        return any(parameter.get("in") == "query" for parameter in self._get_parameters())


def decimal_pattern(field: serializers.DecimalField) -> str:
    """The strings a DecimalField takes (core.numbers.decimal_pattern, which the forms check too)."""
    return numbers.decimal_pattern(
        max_digits=field.max_digits, decimal_places=field.decimal_places,
        min_value=field.min_value, max_value=field.max_value,
    )
