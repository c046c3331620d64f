"""Log lines as a log collector reads them: JSON (LOG_FORMAT=json), each with the request id of its request.

The logging configuration is the one config/settings.py builds (`core.logs.logging_config`), applied for the
test with stderr captured, and put back afterwards.
"""

from __future__ import annotations

import io
import json
import logging
import logging.config
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import transaction
from django.test import Client

from committee.outbox import outbox_enqueue, outbox_relay
from config.celery import app
from core.logs import logging_config, request_id_var

task_logger = logging.getLogger("tests.request_logs")


@app.task(name="tests.request_logs.log_a_line")
def log_a_line(word: str) -> None:
    task_logger.warning("the task says %s", word)


def configured(log_format: str) -> io.StringIO:
    """Apply the settings' logging configuration in `log_format`, its console handler writing to a buffer."""
    logging.config.dictConfig(logging_config(log_format=log_format, level="INFO"))
    buffer = io.StringIO()
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(buffer)
    return buffer


@pytest.fixture
def json_logs() -> Iterator[Any]:
    buffer = configured("json")

    def lines() -> list[dict[str, Any]]:
        return [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]

    try:
        yield lines
    finally:
        logging.config.dictConfig(settings.LOGGING)


def request_lines(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if line["logger"] == "docket.request"]


@pytest.mark.django_db
def test_a_request_logs_a_json_line_with_the_request_id_it_answers(json_logs):
    response = Client().get("/accounts/login/")
    request_id = response["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", request_id)
    (line,) = request_lines(json_logs())
    assert line["request_id"] == request_id
    assert (line["level"], line["method"], line["path"], line["status"]) == ("INFO", "GET", "/accounts/login/", 200)
    assert line["message"] == "GET /accounts/login/ 200"


@pytest.mark.django_db
def test_the_proxys_request_id_is_kept(json_logs):
    sent = "req-7f3a.2026:proxy_1"
    response = Client().get("/accounts/login/", HTTP_X_REQUEST_ID=sent)
    assert response["X-Request-ID"] == sent
    assert [line["request_id"] for line in request_lines(json_logs())] == [sent]


@pytest.mark.django_db
@pytest.mark.parametrize("sent", [
    "a" * 129,  # too long
    "abc\x07def",  # a control character
    "abc\ninjected log line",  # a line break, to forge a log line
    "abc def",  # a space
    "",
])
def test_a_malformed_request_id_is_replaced_and_never_logged(json_logs, sent):
    response = Client().get("/accounts/login/", HTTP_X_REQUEST_ID=sent)
    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])
    lines = json_logs()
    assert [line["request_id"] for line in request_lines(lines)] == [response["X-Request-ID"]]
    if sent:
        assert not any(sent in json.dumps(line) or sent in str(line.values()) for line in lines)


@pytest.mark.django_db
def test_an_outbox_task_logs_with_the_request_id_of_the_request_that_asked_for_it(json_logs):
    """The task runs later, from the relay job, outside any request: the id travels with the message."""
    token = request_id_var.set("req-from-the-submit")
    try:
        with transaction.atomic():
            message = outbox_enqueue(task_name="tests.request_logs.log_a_line", key="log-1", kwargs={"word": "hi"})
    finally:
        request_id_var.reset(token)
    message.refresh_from_db()
    assert message.request_id == "req-from-the-submit"
    assert outbox_relay().relayed == 1  # eager: runs here, with the task header
    task_lines = [line for line in json_logs() if line["logger"] == "tests.request_logs"]
    assert [(line["message"], line["request_id"]) for line in task_lines] == [
        ("the task says hi", "req-from-the-submit")
    ]
    assert request_id_var.get() is None  # the task's id does not leak into what runs next


@pytest.mark.django_db
def test_work_asked_for_outside_a_request_logs_without_an_id(json_logs):
    with transaction.atomic():
        outbox_enqueue(task_name="tests.request_logs.log_a_line", key="log-2", kwargs={"word": "cron"})
    outbox_relay()
    task_lines = [line for line in json_logs() if line["logger"] == "tests.request_logs"]
    assert [line["request_id"] for line in task_lines] == ["-"]


def test_text_logs_carry_the_request_id_too():
    buffer = configured("text")
    try:
        token = request_id_var.set("req-text-1")
        task_logger.warning("plain words")
        request_id_var.reset(token)
    finally:
        logging.config.dictConfig(settings.LOGGING)
    assert re.search(r" WARNING tests\.request_logs \[req-text-1\] plain words$", buffer.getvalue().strip())
