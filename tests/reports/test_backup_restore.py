"""The backup of docs/deploy.md, taken while the archive is being written, restores into a new database and verifies.

PostgreSQL, the real `pg_dump` and `pg_restore`, and `manage.py verify_archive` as a process on the restored
database. A thread appends archive revisions all the while. The head is read before the dump
(`verify_archive --print-head`), so every revision up to it is in the dump whatever is written meanwhile; a head
read after the dump (what the procedure said before) names a revision the dump does not hold, and verifying the
restore with it would fail with "kept head … is not in the chain".
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from reports.models import PageRevision
from tests.conftest import require
from tests.processes import ROOT, app_env, database_url, wait_until
from tests.reports.conftest import edit, make_page, on_postgresql

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class Writer(threading.Thread):
    """Appends a revision to a page, again and again, until stopped (its own database connection)."""

    def __init__(self, world: Any) -> None:
        super().__init__(daemon=True)
        self.world = world
        self.page = make_page(world, slug="minutes", title="Minutes", body="m0")
        self.stopping = threading.Event()
        self.written = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                edit(self.world, self.page, f"m{self.written + 1}")
                self.written += 1
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            connection.close()

    def wait_for_more(self, than: int) -> None:
        wait_until(lambda: self.written > than or self.error, timeout=30, what="the writer to append a revision")
        assert self.error is None, self.error


@pytest.fixture
def restored_database() -> Iterator[str]:
    """An empty database beside the test's (the docs' `createdb`), dropped at the end."""
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    name = f"{connection.settings_dict['NAME']}_restored"
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_backup_taken_while_the_archive_is_written_restores_and_verifies(
    world: Any, restored_database: str, tmp_path: Path
) -> None:
    require(bool(shutil.which("pg_dump") and shutil.which("pg_restore")), "pg_dump and pg_restore (postgresql-client)")
    make_page(world, body="v1")
    source = database_url(connection.settings_dict)
    settings_dict = {**connection.settings_dict, "NAME": restored_database}
    restored = database_url(settings_dict)
    writer = Writer(world)
    writer.start()
    try:
        # 1. The documented backup: the head first (verifying the live chain as it goes), then the dump.
        out = StringIO()
        call_command("verify_archive", print_head=True, stdout=out)
        kept_head = out.getvalue().strip()
        kept_position = PageRevision.objects.get(hash=kept_head).position
        writer.wait_for_more(than=writer.written)  # written after the head was read, before the dump
        dump = tmp_path / "docket.dump"
        subprocess.run(["pg_dump", "--format=custom", "--file", str(dump), source], check=True, timeout=60,
                       capture_output=True)
        writer.wait_for_more(than=writer.written)  # written after the dump
        late_head = PageRevision.objects.order_by("-position").values_list("hash", flat=True)[0]
    finally:
        writer.stopping.set()
        writer.join(timeout=30)
    assert writer.error is None, writer.error

    # 2. The documented restore, into an empty database, and the verification with the head kept with the dump.
    subprocess.run(["pg_restore", "--dbname", restored, str(dump)], check=True, timeout=120, capture_output=True)
    verified = subprocess.run(
        [sys.executable, "manage.py", "verify_archive", "--expect-head", kept_head],
        cwd=ROOT, env=app_env(restored), capture_output=True, text=True, timeout=120,
    )
    assert verified.returncode == 0, verified.stderr + verified.stdout
    assert "Archive intact:" in verified.stdout

    # The dump holds revisions written after the head was read, and not the one read after it: that one was the
    # false tamper alarm ("kept head … is not in the chain").
    in_dump = subprocess.run(
        ["psql", "--no-psqlrc", "-tA", "-d", restored, "-v", f"late={late_head}"],
        input="SELECT max(position), count(*) FILTER (WHERE hash = :'late') FROM reports_pagerevision;",
        check=True, capture_output=True, text=True, timeout=30,
    ).stdout.strip()
    last_position, late_in_dump = (int(value) for value in in_dump.split("|"))
    assert last_position > kept_position and late_in_dump == 0
