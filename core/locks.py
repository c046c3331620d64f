"""Locks held in the database, so that every worker of every process waits for the same one."""

from __future__ import annotations

import hashlib

from django.db import connection


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
