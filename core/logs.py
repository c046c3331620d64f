"""Log lines that say which request (or which task for which request) wrote them.

- `RequestIdMiddleware` takes the proxy's X-Request-ID when it is sane (1 to 128 of letters, digits
  and `. _ : -`), else makes a new one; puts it on the response's X-Request-ID and, through a context
  variable, on every log line written while the request runs. A malformed incoming value is dropped
  unread: it never reaches a log line.
- The outbox stores the id with each message and hands it to Celery as the task header
  `docket_request_id`; `task_prerun` sets it again in the worker, so the task's lines carry it too.
- `RequestIdFilter` adds `request_id` to every record ("-" outside a request); LOG_FORMAT=json
  formats records as one JSON object a line (python-json-logger), LOG_FORMAT=text as plain lines.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any

from celery import Task
from celery.signals import task_postrun, task_prerun
from django.http import HttpRequest, HttpResponse

REQUEST_ID_HEADER = "X-Request-ID"
TASK_HEADER = "docket_request_id"
SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

request_id_var: ContextVar[str | None] = ContextVar("docket_request_id", default=None)
request_logger = logging.getLogger("docket.request")
task_logger = logging.getLogger("docket.task")


def current_request_id() -> str | None:
    """The id of the request (or of the request behind the task) now running; None outside both."""
    return request_id_var.get()


def request_id_from_header(value: str | None) -> str:
    """The incoming X-Request-ID when it is sane, else a new random id."""
    if value is not None and SANE_REQUEST_ID.fullmatch(value):
        return value
    return uuid.uuid4().hex


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to each record, so every formatter can print it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = request_id_var.get() or "-"
        return True


class RequestIdMiddleware:
    """Sets the request id for the request's log lines and answers it in X-Request-ID; logs one line per request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_from_header(request.META.get("HTTP_X_REQUEST_ID"))
        request.request_id = request_id  # type: ignore[attr-defined]
        token = request_id_var.set(request_id)
        started = time.monotonic()
        try:
            response = self.get_response(request)
            response[REQUEST_ID_HEADER] = request_id
            request_logger.info(
                "%s %s %s",
                request.method,
                request.path,
                response.status_code,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": round((time.monotonic() - started) * 1000, 1),
                },
            )
            return response
        finally:
            request_id_var.reset(token)


# --- Celery: the request id travels with the task --------------------------------------------

_task_tokens: dict[str, Token[str | None]] = {}


def request_id_of_task(task: Task) -> str | None:
    """The request id a task was sent with (header `docket_request_id`), if any and sane."""
    request = task.request
    value = getattr(request, TASK_HEADER, None) or (getattr(request, "headers", None) or {}).get(TASK_HEADER)
    return value if isinstance(value, str) and SANE_REQUEST_ID.fullmatch(value) else None


def _on_task_prerun(sender: Task | None = None, task_id: str | None = None, task: Task | None = None,
                    **kwargs: Any) -> None:
    request_id = request_id_of_task(task) if task is not None else None
    if request_id and task_id:
        _task_tokens[task_id] = request_id_var.set(request_id)
        # One line that ties the task to the request: grep the request id, find the worker's lines too.
        task_logger.info("task %s[%s] started", getattr(task, "name", "?"), task_id)


def _on_task_postrun(sender: Task | None = None, task_id: str | None = None, **kwargs: Any) -> None:
    token = _task_tokens.pop(task_id or "", None)
    if token is not None:
        request_id_var.reset(token)


task_prerun.connect(_on_task_prerun, weak=False, dispatch_uid="core.logs.task_prerun")
task_postrun.connect(_on_task_postrun, weak=False, dispatch_uid="core.logs.task_postrun")


def logging_config(*, log_format: str, level: str) -> dict[str, Any]:
    """The LOGGING dict: one console handler, text or JSON, with the request id on every line."""
    formatters: dict[str, dict[str, Any]] = {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": ["asctime", "levelname", "name", "message", "request_id"],
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "core.logs.RequestIdFilter"}},
        "formatters": formatters,
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": log_format, "filters": ["request_id"]},
        },
        "root": {"handlers": ["console"], "level": level},
    }
