"""Site-wide rules of the REST API that no single view owns."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext as _

from core.errors import API_PREFIX


class SingleQueryValuesMiddleware:
    """Every query parameter of the API takes one value: `?team=a&team=b` is refused (400), not read as `b`.

    Django's `request.GET[...]` and the filters quietly keep the last of repeated values, so a
    client that meant "a or b" would get b's answer as if it were the answer to its question.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(API_PREFIX):
            repeated = sorted(key for key, values in request.GET.lists() if len(values) > 1)
            if repeated:
                return JsonResponse({key: [_("Give this parameter once.")] for key in repeated}, status=400)
        return self.get_response(request)
