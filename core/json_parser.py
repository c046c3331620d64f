"""The API's JSON parser: Django REST framework's, with a bound on nesting (REST_FRAMEWORK's DEFAULT_PARSER_CLASSES).

A module of its own: DRF reads its parser setting while `rest_framework.views` is imported, so this imports nothing of
Docket's that imports DRF's views (core.errors does). Whole numbers and quarters from outside: core/parsers.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.utils.translation import gettext as _
from rest_framework import parsers
from rest_framework.exceptions import ParseError

# `json.loads` answers a body nested too deeply for the interpreter (`[` × 50,000) with RecursionError, which DRF's
# JSONParser does not catch (it only turns ValueError into 400). A body nested deeper than any of Docket's inputs is
# refused before a serializer walks it recursively (the API's parser: REST_FRAMEWORK's DEFAULT_PARSER_CLASSES).
# The deepest input of the API is a request with its alternatives (object → list → object → value).
MAX_DEPTH = 32


class JSONParser(parsers.JSONParser):
    def parse(self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
              ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(_("JSON parse error - the body is nested too deeply.")) from None
        if _depth_exceeds(data, MAX_DEPTH):
            raise ParseError(_("JSON parse error - the body is nested deeper than %(depth)d levels.")
                             % {"depth": MAX_DEPTH})
        return data


def _depth_exceeds(data: Any, limit: int) -> bool:
    """True when `data` nests lists and objects deeper than `limit`; iterative, so no depth can overflow it."""
    pending = [(data, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, (list, dict)):
            if depth > limit:
                return True
            children = value.values() if isinstance(value, dict) else value
            pending.extend((child, depth + 1) for child in children)
    return False
