"""Stored page bodies compressed with LZ4 instead of Postgres's default pglz.

A stored report is ~110 KB of HTML, so every request that serves it first decompresses
its TOASTed value; pglz spent most of that request's database time doing so, LZ4 does it
several times faster at a similar size. Only values written afterwards are compressed
the new way, so the stored bodies (derived data: the next request renders and stores
them again) are dropped. Postgres 14+ built with LZ4 only; elsewhere (SQLite, an older
or LZ4-less server) nothing changes.
"""

from django.db import migrations

TABLES = ("estimation_reportbody", "estimation_boardbody")


def _lz4_available(schema_editor) -> bool:
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
        if not _lz4_available(schema_editor):
            return
        for table in TABLES:
            schema_editor.execute(f"ALTER TABLE {table} ALTER COLUMN body SET COMPRESSION {method}")
            schema_editor.execute(f"DELETE FROM {table}")  # re-rendered on the next request
    return run


class Migration(migrations.Migration):

    dependencies = [
        ("estimation", "0009_correctionfit"),
    ]

    operations = [
        migrations.RunPython(_set("lz4"), _set("DEFAULT")),
    ]
