"""Errors, once for the whole site.

- `StateConflict`: what a service raises when a request is fine in itself but meets its target
  in the wrong state (closing intake twice, scoring a week not in review, finalizing with
  requests undecided). It is a Django `ValidationError`, so a form shows it like any other
  refusal; the API answers it with 409 instead of 400, so a client can tell "correct your
  input" from "the world moved on".
- `api_exception_handler`: DRF's EXCEPTION_HANDLER. A service's `ValidationError` becomes 400
  keyed by field, a `StateConflict` 409, a body over the size limit 413 (HackSoft's styleguide
  does the same in `api/exception_handlers.py`). Views call services directly.
- `form_errors_add`: a service's `ValidationError` onto a Django form, by field.
- `RoleRequired`: a PermissionDenied that also names the role a page needs and where the viewer
  can go instead; the 403 page shows both.
- The error pages: under /api/ every error is JSON, even where no API view was reached; elsewhere
  403 and 404 are pages of the site (navigation, the reason in plain words, where to go next),
  rendered the same with DEBUG off. Only messages the code wrote for people reach them: a 404's
  internal detail (the URL patterns tried, a model's name) never does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.urls import Resolver404
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import csrf, defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

API_PREFIX = "/api/"


class StateConflict(DjangoValidationError):
    """Valid input, refused because of the current state of what it acts on (the API's 409)."""


class RoleRequired(PermissionDenied):
    """Refused for want of a role: `role` names it ("a committee seat"), `elsewhere` offers (label, URL) to go to."""

    def __init__(self, message: str, *, role: str, elsewhere: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.role = role
        self.elsewhere = list(elsewhere)


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = gettext_lazy("This cannot be done in the current state.")
    default_code = "conflict"


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = gettext_lazy("The request body is larger than Docket accepts.")
    default_code = "payload_too_large"


def validation_detail(exc: DjangoValidationError) -> dict[str, list[str]]:
    """A Django ValidationError's messages keyed by field, the whole's under DRF's `non_field_errors`."""
    if not hasattr(exc, "error_dict"):
        return {api_settings.NON_FIELD_ERRORS_KEY: list(exc.messages)}
    return {
        api_settings.NON_FIELD_ERRORS_KEY if field == NON_FIELD_ERRORS else field: messages
        for field, messages in exc.message_dict.items()
    }


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, after turning the exceptions of services and of Django into API answers."""
    if isinstance(exc, StateConflict):
        exc = Conflict(validation_detail(exc))
    elif isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(validation_detail(exc))
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    return drf_exception_handler(exc, context)


def form_errors_add(
    form: forms.BaseForm, exc: DjangoValidationError, *, parts: Mapping[str, forms.BaseForm] | None = None
) -> None:
    """Show a service's ValidationError on `form`: a field's messages at that field, the rest on the whole form.

    A page made of several forms names them in `parts`: a message keyed `usage.notes` goes to
    the field `notes` of `parts["usage"]`, one keyed `alternatives.2.gpu_hours` to the field
    `gpu_hours` of `parts["alternatives.2"]`. A message for a field no form shows is shown on
    the whole of `form` rather than lost.
    """
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc)
        return
    for key, errors in exc.error_dict.items():
        prefix, _dot, name = key.rpartition(".")
        part = (parts or {}).get(prefix)
        if part is not None and name in part.fields:
            part.add_error(name, errors)
        else:
            form.add_error(key if key in form.fields else None, errors)


# --- error pages --------------------------------------------------------------------------------


def _api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404: JSON under /api/ (a path that matches no endpoint, e.g. /api/v1/requests/abc/), the page elsewhere."""
    if _api(request):
        return JsonResponse({"detail": _("Not found.")}, status=404)
    return _page(request, "404.html", {"reason": _not_found_reason(exception)}, status=404)


def _not_found_reason(exception: Exception) -> str:
    """A message the code gave Http404 for people ("No archive page at this address."), else nothing.

    A URL that matches no pattern (Resolver404 carries the patterns tried) and get_object_or_404's
    "No <Model> matches the given query." say nothing a reader can use, and name internals.
    """
    if not isinstance(exception, Http404) or isinstance(exception, Resolver404) or not exception.args:
        return ""
    message = exception.args[0]
    if not isinstance(message, str | Promise) or str(message).endswith(" matches the given query."):
        return ""
    return str(message)


def _page(request: HttpRequest, template: str, context: dict[str, Any], *, status: int) -> HttpResponse:
    """An error page of the site (base.html: navigation, the viewer's roles through the context processors)."""
    return HttpResponse(render_to_string(template, context, request=request), status=status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """400 from Django itself (a SuspiciousOperation); a body over DATA_UPLOAD_MAX_MEMORY_SIZE is 413."""
    if isinstance(exception, RequestDataTooBig):
        message = str(PayloadTooLarge.default_detail)
        if _api(request):
            return JsonResponse({"detail": message}, status=413)
        return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
    if _api(request):
        return JsonResponse({"detail": _("Bad request.")}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": _("You do not have permission to perform this action.")}, status=403)
    message = exception.args[0] if isinstance(exception, PermissionDenied) and exception.args else ""
    elsewhere: list[tuple[str, str]] = getattr(exception, "elsewhere", [])
    context = {
        "reason": str(message) if isinstance(message, str | Promise) else "",
        "role": getattr(exception, "role", ""),
        "elsewhere": elsewhere,
        "elsewhere_urls": [url for _label, url in elsewhere],  # the page's own links are not offered twice
    }
    return _page(request, "403.html", context, status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    """500: JSON under /api/, templates/500.html elsewhere."""
    if _api(request):
        return JsonResponse({"detail": _("Something went wrong on Docket's side; the error has been logged.")},
                            status=500)
    try:
        # With the navigation when the parts it needs (the session, the viewer's roles) still work;
        return _page(request, "500.html", {}, status=500)
    except Exception:  # whatever broke the page may break this too
        # else Django's way: the template without the request's context, which needs nothing.
        return defaults.server_error(request)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF refusal: JSON under /api/ (a session-authenticated script without the token), Django's page elsewhere."""
    if _api(request):
        return JsonResponse({"detail": _("CSRF check failed: %(reason)s") % {"reason": reason}}, status=403)
    return csrf.csrf_failure(request, reason)
