"""`manage.py verify_archive`: passes an intact chain, names the first revision that does not match.

Tampering goes around the application with raw SQL, as an attacker with database access would.
On PostgreSQL the append-only trigger would refuse it, so these tests switch triggers off for
the tampering statement only (session_replication_role = replica); the trigger itself is tested
in test_revision_trigger.py.
"""

from __future__ import annotations

from contextlib import contextmanager
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from reports.models import PageRevision
from tests.reports.conftest import edit, make_page, on_postgresql


@contextmanager
def tampering():
    with connection.cursor() as cursor:
        if on_postgresql():
            cursor.execute("SET session_replication_role = replica")
        try:
            yield cursor
        finally:
            if on_postgresql():
                cursor.execute("SET session_replication_role = DEFAULT")


@pytest.fixture
def archive(world):
    """Two pages, five revisions: charter #1, minutes #1, charter #2, charter #3, minutes #2."""
    charter = make_page(world, body="v1")
    minutes = make_page(world, slug="minutes", title="Minutes", body="m1")
    edit(world, charter, "v2")
    edit(world, charter, "v3")
    edit(world, minutes, "m2")
    return {r.position: r for r in PageRevision.objects.select_related("page")}


def verify(*args):
    out = StringIO()
    call_command("verify_archive", *args, stdout=out)
    return out.getvalue()


def test_intact_chain_passes(archive):
    output = verify()
    assert "Archive intact: 5 revisions verified" in output
    assert archive[5].hash in output


def test_a_kept_head_still_in_the_chain_passes(archive):
    assert "Archive intact" in verify("--expect-head", archive[3].hash)


def test_a_kept_head_not_in_the_chain_fails(archive):
    with pytest.raises(CommandError, match="not in the chain"):
        verify("--expect-head", "f" * 64)


def test_a_changed_body_is_named(archive):
    with tampering() as cursor:
        cursor.execute("UPDATE reports_pagerevision SET body = %s WHERE id = %s", ["v2 (quietly rewritten)",
                                                                                  archive[3].pk])
    with pytest.raises(CommandError) as error:
        verify()
    message = str(error.value)
    assert "Revision 2 of page “charter” (chain position 3" in message
    assert "hashes to" in message and "2 revisions before it are intact" in message


def test_a_changed_author_is_named(archive):
    with tampering() as cursor:
        cursor.execute("UPDATE reports_pagerevision SET author_name = 'Someone Else' WHERE id = %s", [archive[2].pk])
    with pytest.raises(CommandError, match="chain position 2"):
        verify()


def test_a_deleted_revision_is_named_by_the_one_after_the_gap(archive):
    with tampering() as cursor:
        cursor.execute("DELETE FROM reports_pagerevision WHERE id = %s", [archive[3].pk])
    with pytest.raises(CommandError) as error:
        verify()
    message = str(error.value)
    assert "Revision 3 of page “charter” (chain position 4" in message and "missing" in message


def test_a_deleted_last_revision_is_caught_by_the_recorded_head(archive):
    with tampering() as cursor:
        cursor.execute("UPDATE reports_page SET latest_revision_id = %s WHERE id = %s",
                       [archive[2].pk, archive[5].page_id])
        cursor.execute("DELETE FROM reports_pagerevision WHERE id = %s", [archive[5].pk])
    with pytest.raises(CommandError, match="revisions after position 4 are missing"):
        verify()


def test_swapped_rows_are_named(archive):
    """Two revisions trade places in the chain (their positions swapped)."""
    first, second = archive[2], archive[3]
    with tampering() as cursor:
        cursor.execute("UPDATE reports_pagerevision SET position = 1000 WHERE id = %s", [first.pk])
        cursor.execute("UPDATE reports_pagerevision SET position = 2 WHERE id = %s", [second.pk])
        cursor.execute("UPDATE reports_pagerevision SET position = 3 WHERE id = %s", [first.pk])
    with pytest.raises(CommandError) as error:
        verify()
    message = str(error.value)
    assert "Revision 2 of page “charter” (chain position 2" in message
    assert "previous hash does not match" in message


def test_swapped_contents_are_named(archive):
    """Two revisions of a page exchange their bodies (and hashes), as a forger covering tracks would."""
    a, b = archive[3], archive[4]
    with tampering() as cursor:
        cursor.execute("UPDATE reports_pagerevision SET body = %s, hash = %s WHERE id = %s", [b.body, "e" * 64, a.pk])
        cursor.execute("UPDATE reports_pagerevision SET body = %s, hash = %s WHERE id = %s", [a.body, a.hash, b.pk])
        cursor.execute("UPDATE reports_pagerevision SET hash = %s WHERE id = %s", [b.hash, a.pk])
    with pytest.raises(CommandError, match="chain position 3"):
        verify()


def test_command_exits_non_zero(archive, capsys):
    with tampering() as cursor:
        cursor.execute("UPDATE reports_pagerevision SET summary = 'x' WHERE id = %s", [archive[1].pk])
    from django.core.management import ManagementUtility

    utility = ManagementUtility(["manage.py", "verify_archive"])
    with pytest.raises(SystemExit) as exit_info:
        utility.execute()
    assert exit_info.value.code == 1
    assert "chain position 1" in capsys.readouterr().err
