"""On PostgreSQL, refuse every UPDATE and DELETE of an archive revision, whoever sends it.

The services never update or delete a revision; this makes the database hold the same rule for
any other code path (a shell, the admin, a bad migration). TRUNCATE is left alone: the test
runner empties tables with it between tests. Other databases get nothing here: SQLite is the
single-user development default, and `verify_archive` still detects any change there.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION reports_revision_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'archive revisions are append-only: % on reports_pagerevision refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql
"""
TRIGGER = """
CREATE TRIGGER reports_revision_append_only
    BEFORE UPDATE OR DELETE ON reports_pagerevision
    FOR EACH ROW EXECUTE FUNCTION reports_revision_append_only()
"""


class PostgresOnlyRunSQL(migrations.RunSQL):
    """RunSQL that does nothing on databases other than PostgreSQL."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0001_initial"),
    ]

    operations = [
        PostgresOnlyRunSQL(
            sql=[FUNCTION, "DROP TRIGGER IF EXISTS reports_revision_append_only ON reports_pagerevision", TRIGGER],
            reverse_sql=[
                "DROP TRIGGER IF EXISTS reports_revision_append_only ON reports_pagerevision",
                "DROP FUNCTION IF EXISTS reports_revision_append_only()",
            ],
            elidable=False,
        ),
    ]
