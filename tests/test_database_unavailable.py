"""The database cannot be reached: a 503 with Docket's own page (JSON under /api/); other errors are left alone."""

from __future__ import annotations

import json

import psycopg
from django.db import OperationalError
from django.test import RequestFactory
from django.views.defaults import server_error

from core.middleware import DatabaseUnavailableMiddleware, database_unreachable


def wrapped(cause: Exception) -> OperationalError:
    error = OperationalError(str(cause))
    error.__cause__ = cause  # as Django's wrap_database_errors raises it
    return error


def middleware() -> DatabaseUnavailableMiddleware:
    return DatabaseUnavailableMiddleware(lambda request: None)  # type: ignore[arg-type,return-value]


def test_a_refused_connection_gets_the_503_page_with_retry_after():
    request = RequestFactory().post("/requests/new/")
    response = middleware().process_exception(request, wrapped(psycopg.OperationalError("connection refused")))
    assert response is not None and response.status_code == 503
    assert response["Retry-After"] == "30"
    page = response.content.decode()
    assert "The database is not reachable" in page and "Nothing is ever half-saved" in page
    assert "<title>The database is not reachable · Docket</title>" in page


def test_the_api_gets_json():
    request = RequestFactory().get("/api/v1/windows/")
    response = middleware().process_exception(request, wrapped(psycopg.errors.AdminShutdown("terminating")))
    assert response is not None and response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert "not reachable" in json.loads(response.content)["detail"]


def test_errors_the_database_answers_with_are_not_called_unreachable():
    assert not database_unreachable(wrapped(psycopg.errors.DeadlockDetected("deadlock detected")))
    assert not database_unreachable(wrapped(psycopg.errors.LockNotAvailable("lock timeout")))
    assert not database_unreachable(ValueError("not a database error"))
    assert middleware().process_exception(RequestFactory().get("/"), ValueError("boom")) is None


def test_other_server_errors_get_dockets_500_page():
    response = server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    assert "Something went wrong on Docket" in response.content.decode()


def test_a_deadlock_that_came_back_on_the_rerun_is_a_503_that_says_nothing_was_saved():
    request = RequestFactory().put("/api/v1/requests/1/")
    response = middleware().process_exception(request, wrapped(psycopg.errors.DeadlockDetected("deadlock detected")))
    assert response is not None and response.status_code == 503
    assert response["Retry-After"] == "1"
    assert "nothing of it was saved" in json.loads(response.content)["detail"]
    page = middleware().process_exception(RequestFactory().post("/requests/1/edit/"),
                                          wrapped(psycopg.errors.SerializationFailure("could not serialize")))
    assert page is not None and page.status_code == 503 and "busy with other changes" in page.content.decode()
    assert "<title>Busy: nothing was saved · Docket</title>" in page.content.decode()
