"""The flush after each transactional test (browser and live-server tests, races), made cheap.

Django's TransactionTestCase empties every table after such a test and then sends post_migrate, whose receivers (the
content types' and the permissions') write back what they find missing. Both cost more than the tests around them:
on PostgreSQL the flush is one TRUNCATE of every table, 0.5–3 s of the server's time (it replaces each table's
files), a transactional test; on SQLite the re-created content types and permissions cost 60 ms of CPU.

Here the flush keeps the two tables post_migrate would fill again (`KEPT`: nothing else writes them, so they already
hold what it would write) and sends no post_migrate; on PostgreSQL, when the test database's role may, it empties the
tables with DELETE in one transaction, as a replica (`session_replication_role`, for that transaction only): neither
the foreign keys' triggers nor the archive's append-only ones fire, as they do not for TRUNCATE. A role that is no
superuser, or a flush that resets sequences (none in this suite), gets Django's own.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

KEPT = frozenset({"django_content_type", "auth_permission"})


def sql_flush(style: Any, connection: Any, reset_sequences: bool = True, allow_cascade: bool = False) -> list[str]:
    """The statements that empty every table of Docket but `KEPT`."""
    tables = [
        table
        for table in connection.introspection.django_table_names(only_existing=True, include_views=False)
        if table not in KEPT
    ]
    if connection.vendor == "postgresql" and not reset_sequences and tables and _superuser(connection):
        quote = connection.ops.quote_name  # the tables are Django's own names, quoted
        deletes = [f"DELETE FROM {quote(table)};" for table in tables]  # noqa: S608
        return ["SET LOCAL session_replication_role = replica;", *deletes]
    return connection.ops.sql_flush(style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)


_SUPERUSER: dict[str, bool] = {}


def _superuser(connection: Any) -> bool:
    """Whether the test database's role may act as a replica (asked once a database)."""
    name = connection.settings_dict["NAME"]
    if name not in _SUPERUSER:
        with connection.cursor() as cursor:
            cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            _SUPERUSER[name] = bool(cursor.fetchone()[0])
    return _SUPERUSER[name]


def install() -> None:
    """The flush command (which TransactionTestCase calls) with this flush and without post_migrate."""
    flush: Any = import_module("django.core.management.commands.flush")
    flush.sql_flush = sql_flush
    flush.emit_post_migrate_signal = lambda *args, **kwargs: None  # KEPT holds the rows it would write
