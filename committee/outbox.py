"""The outbox: work that a change asks for is written in the change's own transaction, then relayed to Celery.

A task sent to the broker inside a transaction can run before the transaction commits (or after
it rolled back); a task sent after commit is lost when the broker is down at that moment. So the
work is written down with the change, as an `OutboxMessage`, and is exactly as durable:

1. `outbox_enqueue(...)`, inside the change's transaction, writes the message (once per key) and
   asks for it to be relayed when the transaction commits;
2. after commit, `outbox_relay` hands it to the broker if the broker answers within
   settings.CELERY_BROKER_CONNECTION_TIMEOUT. If it does not, the message waits and nothing is
   raised: the user's action has succeeded all the same, and no page shows an error;
3. the `relay_outbox` beat job (and command) relays whatever waits, and hands a message over
   again when the broker no longer holds it (a Redis restarted without persistence: checked from
   LOST_AFTER on) or when it was handed over REDELIVER_AFTER ago and is still not done;
4. the task runs with the task id "outbox-<message id>". A task that runs twice does its work
   once: Docket's own tasks mark the message done in the same transaction as their effect
   (`outbox_once`); a task that guards itself otherwise (the PDF export claims its row) is marked
   done when it succeeds.

Without a broker (CELERY_TASK_ALWAYS_EAGER), step 2 runs the task in-process after commit.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import redis
from celery import Task
from celery.signals import task_postrun
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from committee.models import OutboxMessage
from config.celery import app
from core import breaker
from core.health import broker_ping
from core.logs import TASK_HEADER, current_request_id
from core.parsers import parse_whole_number

logger = logging.getLogger(__name__)

TASK_ID_PREFIX = "outbox-"
# A message handed to the broker this long ago and still not done is handed over again.
REDELIVER_AFTER = timedelta(minutes=15)
# A message handed over at least this long ago that the broker no longer holds (a Redis restarted without
# persistence lost it) is handed over again at the next relay, not after REDELIVER_AFTER.
LOST_AFTER = timedelta(seconds=60)
# The broker's queues are read for that only while they hold at most this many messages.
LOST_SCAN_LIMIT = 10_000
# After this many hand-overs a message stops being relayed; the admin shows it with its last error.
MAX_RELAY_ATTEMPTS = 20
RELAY_BATCH = 500


@dataclass(frozen=True)
class RelayResult:
    relayed: int  # handed to the broker, or run in-process without one
    waiting: int  # left waiting: the broker did not answer
    failed: int  # run in-process and raised (recorded on the message)
    broker_down: bool


def task_id_for(message: OutboxMessage) -> str:
    return f"{TASK_ID_PREFIX}{message.pk}"


def message_id_from(task_id: str | None) -> int | None:
    """The outbox message a task id names, or None for a task that did not come through the outbox."""
    if not task_id or not task_id.startswith(TASK_ID_PREFIX):
        return None
    suffix = task_id[len(TASK_ID_PREFIX) :]
    return parse_whole_number(suffix)


def outbox_enqueue(*, task_name: str, key: str, kwargs: Mapping[str, Any] | None = None) -> OutboxMessage:
    """Write down the work `task_name(**kwargs)` in the caller's transaction and relay it after commit.

    Call it inside the transaction of the change that needs the work. `key` names the work:
    asking again with the same key writes nothing new (the existing message is relayed again
    if it is not done). Side effect after commit: `outbox_relay` for this message, which never
    raises (a failure is logged and the beat job retries).
    """
    message, _created = OutboxMessage.objects.get_or_create(
        key=key,
        defaults={"task_name": task_name, "kwargs": dict(kwargs or {}), "request_id": current_request_id() or ""},
    )
    if message.done_at is None:
        transaction.on_commit(partial(_relay_after_commit, message.pk), robust=True)
    return message


def _relay_after_commit(message_id: int) -> None:
    try:
        outbox_relay(message_ids=[message_id])
    except Exception:  # the user's change is committed; the beat job relays what is left
        logger.exception("Relaying outbox message %s failed; it waits for the relay job", message_id)


def _waiting(now: datetime) -> Q:
    return (
        Q(done_at__isnull=True, relay_attempts__lt=MAX_RELAY_ATTEMPTS)
        & (Q(relayed_at__isnull=True) | Q(relayed_at__lt=now - REDELIVER_AFTER))
    )


def _claim(message: OutboxMessage, now: datetime) -> bool:
    """Take the message for this relay run: one conditional UPDATE, so two relays never both send it.

    It holds only while the row is as this run read it (not done, the same number of hand-overs).
    """
    return bool(
        OutboxMessage.objects.filter(
            pk=message.pk,
            done_at__isnull=True,
            relay_attempts=message.relay_attempts,
            relay_attempts__lt=MAX_RELAY_ATTEMPTS,
        ).update(relayed_at=now, relay_attempts=F("relay_attempts") + 1)
    )


def _handed_over_recently(now: datetime) -> Q:
    """Handed over, not done, not yet due again by REDELIVER_AFTER, but long enough ago to have been taken."""
    return Q(
        done_at__isnull=True,
        relay_attempts__lt=MAX_RELAY_ATTEMPTS,
        relayed_at__gte=now - REDELIVER_AFTER,
        relayed_at__lt=now - LOST_AFTER,
    )


def _task_id_of(raw: bytes | str) -> str | None:
    payload = json.loads(raw)
    if isinstance(payload, list):  # the unacked hash keeps [message, exchange, routing key]
        payload = payload[0]
    headers = payload.get("headers") or {}
    return headers.get("id")


def broker_held_task_ids() -> set[str] | None:
    """The task ids a Redis broker holds (in its queues, or taken by a worker and not acknowledged yet).

    None when it cannot tell: another kind of broker, queues longer than LOST_SCAN_LIMIT, or an error.
    Reads kombu's Redis layout: one list per queue and priority step, and the "unacked" hash.
    """
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return None
    timeout = settings.CELERY_BROKER_CONNECTION_TIMEOUT
    client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    options = app.conf.broker_transport_options or {}
    separator, steps = options.get("sep", "\x06\x16"), options.get("priority_steps", [0, 3, 6, 9])
    held: set[str | None] = set()
    try:
        for queue in app.amqp.queues:
            for step in steps:
                key = queue if step == 0 else f"{queue}{separator}{step}"
                if client.llen(key) > LOST_SCAN_LIMIT:
                    return None
                held.update(_task_id_of(raw) for raw in client.lrange(key, 0, -1))
        unacked = options.get("unacked_key", "unacked")
        if client.hlen(unacked) > LOST_SCAN_LIMIT:
            return None
        held.update(_task_id_of(raw) for raw in client.hvals(unacked))
    except (redis.RedisError, ValueError, AttributeError, IndexError) as exc:
        logger.warning("Could not read which tasks the broker holds: %s", exc)
        return None
    finally:
        client.close()
    return {task_id for task_id in held if task_id}


def _lost(candidates: Sequence[OutboxMessage]) -> list[OutboxMessage]:
    """Of messages handed over recently, those the broker no longer holds."""
    if not candidates:
        return []
    held = broker_held_task_ids()
    if held is None:
        return []
    lost = [message for message in candidates if task_id_for(message) not in held]
    for message in lost:
        logger.warning("Outbox message %s (%s) was lost by the broker; handing it over again", message.pk, message.key)
    return lost


def broker_answers(*, skip_while_open: bool = False) -> bool:
    """Whether the broker answers a round trip within CELERY_BROKER_CONNECTION_TIMEOUT (one try, no retries).

    A round trip, not only a connection: a Redis that hangs accepts connections and never answers. The
    answer sets the circuit breaker (core.breaker.BROKER). `skip_while_open`: after a timeout, do not ask for
    a while, False at once (a page's hand-over after its commit: the work waits for the relay job, which asks).
    """
    if skip_while_open and not breaker.BROKER.allows():
        return False
    try:
        broker_ping(settings.CELERY_BROKER_CONNECTION_TIMEOUT)
    except Exception as exc:
        logger.warning("The Celery broker does not answer: %s", exc)
        breaker.BROKER.failed(exc)
        return False
    breaker.BROKER.succeeded()
    return True


def _task(name: str) -> Task:
    if name not in app.tasks:
        app.loader.import_default_modules()  # discovers every app's tasks.py
    return app.tasks[name]


def outbox_relay(
    *, message_ids: Sequence[int] | None = None, now: datetime | None = None, limit: int = RELAY_BATCH
) -> RelayResult:
    """Hand the waiting messages (all, or those of `message_ids`) to Celery, oldest first.

    Waiting: not done, never handed over or handed over more than REDELIVER_AFTER ago, fewer
    than MAX_RELAY_ATTEMPTS hand-overs. With a broker, each message is claimed (relayed_at,
    relay_attempts) and sent as task id "outbox-<id>"; when the broker does not answer, nothing
    is claimed and the messages keep waiting. Without a broker (eager mode) each task runs here,
    now. Never raises for a broker that is down or a task that fails; the error is recorded on
    the message and logged.
    """
    now = now or timezone.now()
    queryset = OutboxMessage.objects.filter(_waiting(now))
    if message_ids is not None:
        queryset = queryset.filter(pk__in=list(message_ids))
    messages = list(queryset.order_by("id")[:limit])
    if app.conf.task_always_eager:
        if not messages:
            return RelayResult(relayed=0, waiting=0, failed=0, broker_down=False)
        return _run_in_process(messages, now)
    recent: list[OutboxMessage] = []
    if message_ids is None:  # the relay job also looks for work the broker lost
        recent = list(OutboxMessage.objects.filter(_handed_over_recently(now)).order_by("id")[:limit])
    if not messages and not recent:
        return RelayResult(relayed=0, waiting=0, failed=0, broker_down=False)
    # A request's own hand-over skips a broker that just timed out; the relay job always asks.
    if not broker_answers(skip_while_open=message_ids is not None):
        return RelayResult(relayed=0, waiting=len(messages), failed=0, broker_down=True)
    messages = sorted([*messages, *_lost(recent)], key=lambda message: message.pk)
    relayed = 0
    try:
        with app.connection_for_write() as connection:
            for message in messages:
                if not _claim(message, now):
                    continue
                try:
                    app.send_task(
                        message.task_name,
                        kwargs=message.kwargs,
                        task_id=task_id_for(message),
                        connection=connection,
                        retry=False,
                        headers=_headers(message),
                    )
                except Exception as exc:
                    # Not handed over after all: give the claim back so the next relay sends it.
                    OutboxMessage.objects.filter(pk=message.pk).update(
                        relayed_at=None, last_error=f"{type(exc).__name__}: {exc}"[:2000]
                    )
                    raise
                relayed += 1
    except Exception:
        logger.exception("The broker went away while relaying the outbox")
        return RelayResult(relayed=relayed, waiting=len(messages) - relayed, failed=0, broker_down=True)
    return RelayResult(relayed=relayed, waiting=0, failed=0, broker_down=False)


def _run_in_process(messages: Sequence[OutboxMessage], now: datetime) -> RelayResult:
    relayed = failed = 0
    for message in messages:
        if not _claim(message, now):
            continue
        try:
            task = _task(message.task_name)
            result = task.apply(
                kwargs=message.kwargs, task_id=task_id_for(message), throw=True, headers=_headers(message)
            )
        except Exception as exc:
            logger.exception("Outbox task %s (%s) failed", message.task_name, message.key)
            OutboxMessage.objects.filter(pk=message.pk).update(last_error=f"{type(exc).__name__}: {exc}"[:2000])
            failed += 1
            continue
        if result.successful():
            outbox_mark_done(message_id=message.pk, by=_worker_name(None))
        relayed += 1
    return RelayResult(relayed=relayed, waiting=0, failed=failed, broker_down=False)


def _headers(message: OutboxMessage) -> dict[str, str]:
    """The task's headers: the id of the request that asked for the work, for the worker's log lines."""
    return {TASK_HEADER: message.request_id} if message.request_id else {}


def _worker_name(task: Task | None) -> str:
    """Who did the work, for the operator: a worker's node name and pid, or "in-process" (eager mode)."""
    request = getattr(task, "request", None)
    if request is None or getattr(request, "is_eager", False) or not getattr(request, "hostname", None):
        return f"in-process@{socket.gethostname()} pid {os.getpid()}"
    return f"{request.hostname} pid {os.getpid()}"


def outbox_mark_done(*, message_id: int, by: str) -> bool:
    """Record that a message's work is done, unless it already is. True when this call recorded it."""
    return bool(
        OutboxMessage.objects.filter(pk=message_id, done_at__isnull=True).update(
            done_at=timezone.now(), done_by=by[:200], last_error=""
        )
    )


@contextmanager
def outbox_once(task: Task) -> Iterator[bool]:
    """A transaction in which a task does its work once per outbox message.

    Yields True when this run is the first to do the message's work (the message is marked
    done inside the same transaction, so if the work fails and rolls back, so does the mark);
    False when a previous delivery already did it. A task called directly (not through the
    outbox) always yields True.
    """
    with transaction.atomic():
        message_id = message_id_from(task.request.id)
        if message_id is None:
            yield True
            return
        yield outbox_mark_done(message_id=message_id, by=_worker_name(task))


def _on_task_postrun(sender: Task | None = None, task_id: str | None = None, state: str | None = None,
                     **kwargs: Any) -> None:
    """A task relayed from the outbox succeeded: its message is done (no-op if the task recorded it itself)."""
    message_id = message_id_from(task_id)
    if message_id is None or state != "SUCCESS":
        return
    try:
        outbox_mark_done(message_id=message_id, by=_worker_name(sender))
    except Exception:
        logger.exception("Could not mark outbox message %s done", message_id)


task_postrun.connect(_on_task_postrun, weak=False, dispatch_uid="committee.outbox.task_postrun")


def outbox_waiting_count() -> int:
    """How many messages wait to be relayed or done: for the operator's command output."""
    return OutboxMessage.objects.filter(done_at__isnull=True).count()
