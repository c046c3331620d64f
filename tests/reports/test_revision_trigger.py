"""On PostgreSQL the database itself refuses to change or remove an archive revision."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from reports.models import PageRevision
from tests.conftest import require
from tests.reports.conftest import edit, make_page, on_postgresql

pytestmark = pytest.mark.postgres


@pytest.fixture
def revisions(world):
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    page = make_page(world, body="v1")
    edit(world, page, "v2")
    return list(PageRevision.objects.order_by("position"))


def refused(sql, params):
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_update_is_refused(revisions):
    refused("UPDATE reports_pagerevision SET body = %s WHERE id = %s", ["forged", revisions[0].pk])
    assert PageRevision.objects.get(pk=revisions[0].pk).body == "v1"


def test_update_through_the_orm_is_refused(revisions):
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        PageRevision.objects.filter(pk=revisions[0].pk).update(summary="forged")


def test_delete_is_refused(revisions):
    refused("DELETE FROM reports_pagerevision WHERE id = %s", [revisions[0].pk])
    assert PageRevision.objects.count() == 2


def test_inserting_stays_allowed_and_the_chain_verifies(revisions, world):
    from reports import selectors

    edit(world, revisions[0].page, "v3")
    assert PageRevision.objects.count() == 3 and selectors.archive_verify().ok
