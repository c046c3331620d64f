"""Locks held in the database, so that every worker of every process waits for the same one.

Row locks: a service locks only the rows it changes (`select_for_update(of=("self",), no_key=True)`), in the
order docs/maintaining.md gives ("Write to the database: one transaction, row locks in one order"), and runs in
`write_transaction`, which runs it once more when PostgreSQL still picks it as a deadlock's victim.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import random
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import OperationalError, connection, transaction

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

# PostgreSQL's SQLSTATEs for "run the transaction again": deadlock_detected, serialization_failure.
RETRYABLE_SQLSTATES = frozenset({"40P01", "40001"})
# Before running again, a pause of a few hundredths of a second, different each time: the transaction that won
# takes the rows it waited for and finishes, instead of meeting the rerun in the same circle again.
RETRY_PAUSE_SECONDS = (0.01, 0.1)


def advisory_lock(name: str) -> None:
    """Wait for the lock called `name`, and hold it until the current transaction ends.

    Call it inside `transaction.atomic()`. On PostgreSQL this is a transaction-level advisory
    lock (keyed by 64 bits of the name's SHA-256). Other databases (SQLite, for development
    only) take no lock: there, concurrent callers are not kept apart.
    """
    if connection.vendor != "postgresql":
        return
    key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def retryable(exc: BaseException) -> bool:
    """True for a deadlock or a serialization failure: the database undid the transaction; running it again may pass."""
    return isinstance(exc, OperationalError) and getattr(exc.__cause__, "sqlstate", None) in RETRYABLE_SQLSTATES


def write_transaction(service: Callable[P, R]) -> Callable[P, R]:
    """Run `service` in one transaction (`transaction.atomic`); after a deadlock or serialization failure, once more.

    PostgreSQL ends a deadlock by rolling back one of the transactions in it; the other goes through.
    The rerun starts after a short random pause (RETRY_PAUSE_SECONDS), so the one that went through has taken
    the rows it waited for. Everything the first run did is undone with it (its rows, its outbox messages, its
    `on_commit` callbacks), so the second run starts from the committed state and decides again. A second failure is
    raised: the view answers 503 with Retry-After (core.middleware), never a bare 500.

    Inside a caller's transaction (a service calling a service) the caller's transaction is the one to
    run again: this is a plain savepoint then, and the error goes up to the caller's `write_transaction`.
    """

    @functools.wraps(service)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if transaction.get_connection().in_atomic_block:
            with transaction.atomic():
                return service(*args, **kwargs)
        try:
            with transaction.atomic():
                return service(*args, **kwargs)
        except OperationalError as exc:
            if not retryable(exc):
                raise
            logger.warning("%s: %s; running it once more", service.__qualname__, str(exc).splitlines()[0])
        time.sleep(random.uniform(*RETRY_PAUSE_SECONDS))  # nosec B311 (a pause, not a secret)
        with transaction.atomic():
            return service(*args, **kwargs)

    return run
