"""Each test process's SQLite test database copied from one migrated template instead of migrated again.

Every xdist worker makes its own in-memory test database, and `migrate` runs all of Docket's migrations in it
(6 s a worker on an idle machine, close to a minute when the machine is loaded). The first process to need one
migrates as before and keeps the result in a file keyed by the migrations' text and Django's version
(`docket-migrated-<key>.sqlite3` in the temporary folder, under a lock: the workers share it); the others, and
later runs, copy that file into their database with SQLite's backup API. The copy holds everything `migrate` wrote,
data migrations and post_migrate's rows (content types, permissions) included, so the tests see the same database.
On PostgreSQL the same, in the server: the first worker migrates its test database and copies it into a template
database (`docket_migrated_<key>`); the others, and later runs against that server, drop the test database Django
just created and create it again from the template (`CREATE DATABASE … TEMPLATE`, about a second against half a
minute or more of `migrate` on a loaded machine). A file test database (DOCKET_TEST_DB_FILE) migrates as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any


@cache
def migrations_key() -> str:
    """A hash of every installed app's migrations and Django's version: what a migrated database depends on."""
    import django
    from django.apps import apps

    digest = hashlib.sha256(django.get_version().encode())
    for app in sorted(apps.get_app_configs(), key=lambda app: app.label):
        folder = Path(app.path) / "migrations"
        for migration in sorted(folder.glob("*.py")) if folder.is_dir() else ():
            digest.update(f"{app.label}/{migration.name}\0".encode())
            digest.update(migration.read_bytes())
    return digest.hexdigest()[:16]


def template_path() -> Path:
    """The template's file, named by the migrations' key."""
    return Path(tempfile.gettempdir()) / f"docket-migrated-{migrations_key()}.sqlite3"


def _in_memory_sqlite(alias: str) -> Any | None:
    from django.db import connections

    connection: Any = connections[alias]
    if connection.vendor != "sqlite" or not connection.is_in_memory_db():
        return None
    return connection


def _postgresql(alias: str) -> Any | None:
    from django.db import connections

    connection: Any = connections[alias]
    return connection if connection.vendor == "postgresql" else None


def template_database() -> str:
    """The PostgreSQL template's name, keyed like the SQLite file (63 characters at most)."""
    return f"docket_migrated_{migrations_key()}"


def _migrate_or_clone_postgresql(connection: Any, real_call_command: Any, name: str, *args: Any, **options: Any) -> Any:
    """The test database (already created, empty) made again from the template, or migrated and kept as the template.

    CREATE DATABASE … TEMPLATE needs nobody connected to the database it copies: this connection is closed first, and
    the workers take turns under one lock (a file in the temporary folder: they run on one machine)."""
    template = template_database()
    test_database = connection.settings_dict["NAME"]
    quote = connection.ops.quote_name
    with open(Path(tempfile.gettempdir()) / f"{template}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with connection._nodb_cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template])
            exists = cursor.fetchone() is not None
        if not exists:
            result = real_call_command(name, *args, **options)
            connection.close()
            partial = f"{template}_{os.getpid()}"  # renamed when whole: a template that exists is complete
            with connection._nodb_cursor() as cursor:
                cursor.execute(f"DROP DATABASE IF EXISTS {quote(partial)}")
                cursor.execute(f"CREATE DATABASE {quote(partial)} TEMPLATE {quote(test_database)}")
                cursor.execute(f"ALTER DATABASE {quote(partial)} RENAME TO {quote(template)}")
            return result
        connection.close()
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE {quote(test_database)}")
            cursor.execute(f"CREATE DATABASE {quote(test_database)} TEMPLATE {quote(template)}")
    return None


def migrate_or_copy(real_call_command: Any, name: str, *args: Any, **options: Any) -> Any:
    """call_command as create_test_db calls it; `migrate` of an in-memory SQLite database, or of a PostgreSQL one,
    from the template."""
    alias = options.get("database", "default")
    if name == "migrate" and (postgresql := _postgresql(alias)) is not None:
        return _migrate_or_clone_postgresql(postgresql, real_call_command, name, *args, **options)
    connection = _in_memory_sqlite(alias) if name == "migrate" else None
    if connection is None:
        return real_call_command(name, *args, **options)
    template = template_path()
    connection.ensure_connection()
    with open(f"{template}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():
            result = real_call_command(name, *args, **options)
            partial = template.with_suffix(f".{os.getpid()}.partial")
            with contextlib.closing(sqlite3.connect(partial)) as copy:
                connection.connection.backup(copy)
            partial.replace(template)
            return result
    with contextlib.closing(sqlite3.connect(f"file:{template}?mode=ro", uri=True)) as source:
        source.backup(connection.connection)
    return None


@contextlib.contextmanager
def migrations_from_a_template() -> Iterator[None]:
    """While the test databases are made: `migrate` of an in-memory SQLite or a PostgreSQL one copies the template."""
    from django.core import management

    real = management.call_command

    def call_command(name: str, *args: Any, **options: Any) -> Any:
        return migrate_or_copy(real, name, *args, **options)

    management.call_command = call_command  # type: ignore[assignment]  # create_test_db imports it from there when it runs
    try:
        yield
    finally:
        management.call_command = real


def copy_into(path: Path) -> bool:
    """A SQLite file at `path` holding every migration, for a child process started with `DATABASE_URL=sqlite:///…`:
    the template copied (milliseconds) instead of `migrate` in the child (10 s idle, half a minute when the machine
    is loaded). False when this machine has none yet for these migrations (a run on PostgreSQL, or before any test
    database was made: ask for pytest-django's `django_db_setup` first); the caller then migrates."""
    template = template_path()
    if not template.exists():  # made whole or not at all (a rename), so one that exists is complete
        return False
    shutil.copyfile(template, path)
    return True


def install() -> None:
    """Django's setup_databases (which pytest-django calls to make the test databases) with the template."""
    from django.test import utils

    real = utils.setup_databases

    def setup_databases(*args: Any, **kwargs: Any) -> Any:
        with migrations_from_a_template():
            return real(*args, **kwargs)

    utils.setup_databases = setup_databases
