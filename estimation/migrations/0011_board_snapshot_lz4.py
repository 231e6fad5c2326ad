"""Stored leaderboards' JSON columns compressed with LZ4 instead of Postgres's default pglz.

Every score run rewrites the corpus's boards: ~5 MB of JSON (24 boards at 100 systems)
that pglz compressed in ~50 ms of the run's store phase, LZ4 in a fraction of that (and a
request that reads a board decompresses it faster too), at a similar size. Values already
stored keep pglz until the next run rewrites them. Postgres 14+ built with LZ4 only;
elsewhere (SQLite, an older or LZ4-less server) nothing changes.
"""

from django.db import migrations

TABLE = "estimation_boardsnapshot"
COLUMNS = ("head", "rows", "html", "api", "csv")


def _lz4_available(schema_editor) -> bool:  # as in 0010
    conn = schema_editor.connection
    if conn.vendor != "postgresql" or conn.pg_version < 140000:
        return False
    with conn.cursor() as cur:
        cur.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                    "WHERE name = 'default_toast_compression'")
        row = cur.fetchone()
    return bool(row and row[0])


def _set(method: str):
    def run(apps, schema_editor) -> None:
        if _lz4_available(schema_editor):
            for column in COLUMNS:
                schema_editor.execute(
                    f"ALTER TABLE {TABLE} ALTER COLUMN {column} SET COMPRESSION {method}")
    return run


class Migration(migrations.Migration):

    dependencies = [
        ("estimation", "0010_stored_body_lz4"),
    ]

    operations = [
        migrations.RunPython(_set("lz4"), _set("DEFAULT")),
    ]
