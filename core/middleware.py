"""Site-wide middleware: an unreachable database, or a deadlock twice, gets a clear 503, not a 500."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext as _

from core.locks import retryable

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 30
BUSY_RETRY_AFTER_SECONDS = 1
# PostgreSQL's SQLSTATEs for "the server went away": admin_shutdown, crash_shutdown, cannot_connect_now;
# class 08 (connection exceptions) is matched by its prefix.
SERVER_GONE = {"57P01", "57P02", "57P03"}


def database_unreachable(exc: BaseException) -> bool:
    """True for an error that says the database cannot be reached, not for one it answered with.

    A refused or cut connection (psycopg raises these without a SQLSTATE, or in class 08) and a
    server shutting down are unreachable; a deadlock, a lock timeout or a constraint is the
    database answering, and stays an ordinary error.
    """
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    sqlstate = getattr(exc.__cause__, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith("08") or sqlstate in SERVER_GONE


def database_unavailable_response(request: HttpRequest, *, busy: bool = False) -> HttpResponse:
    """503 with Retry-After: JSON under /api/, else templates/503.html, rendered without touching the database.

    `busy`: the database undid the change because another one held the same rows (a deadlock or a
    serialization failure, twice in a row: core.locks.write_transaction runs it once more first).
    """
    if busy:
        message = _("Docket was busy with other changes to the same things and undid this one whole: nothing of it "
                    "was saved. Try again in a moment.")
    else:
        message = _("The database is not reachable right now, so Docket could not finish this. Nothing is ever "
                    "half-saved: a change is stored whole or not at all. Try again in a moment; if you were "
                    "saving, look first whether your change arrived.")
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": message}, status=503)
    else:
        # No request in the context: the context processors would ask the database who is signed in.
        response = HttpResponse(render_to_string("503.html", {"message": message, "busy": busy}), status=503)
    response["Retry-After"] = str(BUSY_RETRY_AFTER_SECONDS if busy else RETRY_AFTER_SECONDS)
    return response


class DatabaseUnavailableMiddleware:
    """Turn "the database cannot be reached" (or "undid it twice: a deadlock") raised by a view into a 503 that says so.

    Writes happen in transactions (the services), so a connection lost in the middle of a save
    rolls the whole save back; the page tells the person to try again. Errors raised outside a
    view fall through to Django's handler500, which renders templates/500.html.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if retryable(exception):
            logger.error("Deadlock or serialization failure, twice, during %s %s: %s", request.method, request.path,
                         exception)
            return database_unavailable_response(request, busy=True)
        if not database_unreachable(exception):
            return None
        logger.error("Database unreachable during %s %s: %s", request.method, request.path, exception)
        return database_unavailable_response(request)
