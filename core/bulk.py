"""Writes of many rows in one statement, where Django's own helpers cost more than the write.

`QuerySet.bulk_update` builds one `CASE WHEN pk = … THEN …` expression per row and field, each resolved and
copied by the ORM: at 1,000 rows and two fields that is most of a week's finalize (docs/benchmarks.md).
`rows_update` sends the same values as one `UPDATE … FROM (VALUES …)`, which PostgreSQL and SQLite (3.33 on) both
run, with each value prepared by its field as the ORM would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connections, router
from django.db.models import Field, Model

# Rows a statement: the parameters stay under SQLite's limit (32,766) and PostgreSQL's (65,535) for a few fields.
ROWS_PER_STATEMENT = 2_000


def rows_update(model: type[Model], rows: Sequence[Model], fields: Sequence[str]) -> int:
    """Write `fields` of each of `rows` (instances of `model` with a primary key) in one statement per
    ROWS_PER_STATEMENT rows; returns how many rows were updated. The caller's transaction holds it."""
    if not rows:
        return 0
    using = router.db_for_write(model)
    connection = connections[using]
    meta = model._meta
    columns = [field for name in fields if isinstance(field := meta.get_field(name), Field)]
    if len(columns) != len(fields):
        raise ValueError(f"rows_update writes concrete fields only: {fields}")
    table = connection.ops.quote_name(meta.db_table)
    pk = connection.ops.quote_name(meta.pk.column)
    assignments = ", ".join(
        f"{connection.ops.quote_name(field.column)} = CAST(v.column{index} AS {field.db_type(connection)})"
        for index, field in enumerate(columns, start=2)
    )
    updated = 0
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        chunk = rows[start:start + ROWS_PER_STATEMENT]
        params: list[Any] = []
        for row in chunk:
            params.append(row.pk)
            params.extend(field.get_db_prep_save(getattr(row, field.attname), connection) for field in columns)
        placeholder = "(" + ", ".join(["%s"] * (len(columns) + 1)) + ")"
        values = ", ".join([placeholder] * len(chunk))
        # Names from the model, every value a parameter.
        sql = f"UPDATE {table} SET {assignments} FROM (VALUES {values}) AS v WHERE {table}.{pk} = v.column1"  # noqa: S608
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            updated += cursor.rowcount
    return updated
