"""A count of the statements that deleted rows of annotations_pairlabel and
annotations_response (or truncated them), kept by statement-level triggers.

A process that keeps a corpus's labels or answers between reads (annotations/quality/
label_table.py, estimation/correction.py) finds rows written since by their changed_xid
stamp, but a deleted row leaves no row to stamp: while these counts are unchanged since
its last read nothing was deleted, and it need not look for every kept row again. One
row per table, updated in the deleting transaction (so a reader sees the count move
with the deletion); deletions are rare, and one counter row locked until their commit
queues only other deleters. Postgres only.
"""

from django.db import migrations

SQL = """
CREATE TABLE IF NOT EXISTS kbpo_deletions (
    table_name text PRIMARY KEY,
    deletions bigint NOT NULL DEFAULT 0
);
CREATE OR REPLACE FUNCTION kbpo_count_deletions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO kbpo_deletions (table_name, deletions) VALUES (TG_TABLE_NAME, 1)
    ON CONFLICT (table_name) DO UPDATE SET deletions = kbpo_deletions.deletions + 1;
    RETURN NULL;
END $$;
""" + "".join(f"""
DROP TRIGGER IF EXISTS {table}_deletions ON {table};
CREATE TRIGGER {table}_deletions AFTER DELETE OR TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION kbpo_count_deletions();
""" for table in ("annotations_pairlabel", "annotations_response"))

DROP = """
DROP TRIGGER IF EXISTS annotations_pairlabel_deletions ON annotations_pairlabel;
DROP TRIGGER IF EXISTS annotations_response_deletions ON annotations_response;
DROP FUNCTION IF EXISTS kbpo_count_deletions();
DROP TABLE IF EXISTS kbpo_deletions;
"""


def _on_postgres(sql: str):
    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)
    return run


class Migration(migrations.Migration):

    dependencies = [
        ("annotations", "0013_question_recount_pending"),
    ]

    operations = [
        migrations.RunPython(_on_postgres(SQL), _on_postgres(DROP)),
    ]
