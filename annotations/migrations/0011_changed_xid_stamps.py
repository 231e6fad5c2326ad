"""PairLabel.changed_xid and Response.changed_xid, kept by a trigger: the transaction
that last wrote each row.

A trigger rather than code in the write paths: bulk_update, COPY, the admin and raw SQL
all stamp the row, so no writer can forget it. Postgres only (elsewhere the column stays
empty and readers read every row: annotations/quality/label_table.py,
estimation/correction.py).
"""

from django.db import migrations, models

FUNCTION = "kbpo_stamp_changed_xid"
TABLES = ("annotations_pairlabel", "annotations_response")


def install(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN NEW.changed_xid := pg_current_xact_id()::text::bigint; RETURN NEW; END $$")
    for table in TABLES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_stamp ON {table}")
        schema_editor.execute(f"CREATE TRIGGER {table}_stamp BEFORE INSERT OR UPDATE ON "
                              f"{table} FOR EACH ROW EXECUTE FUNCTION {FUNCTION}()")


def remove(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_stamp ON {table}")
    schema_editor.execute(f"DROP FUNCTION IF EXISTS {FUNCTION}()")


def _field() -> models.BigIntegerField:
    # Rows written before get 0 ("long ago": a process reads everything once after it
    # starts anyway). A one-off default: Postgres stores it without rewriting the table,
    # and the column keeps no default, so a row the trigger missed stays NULL, which
    # readers always read again.
    return models.BigIntegerField(blank=True, db_index=True, editable=False, null=True,
                                  default=0, help_text="Transaction that last wrote the row "
                                                       "(set by the database).")


class Migration(migrations.Migration):

    dependencies = [
        ("annotations", "0010_pairlabel_type_prior"),
    ]

    operations = [
        migrations.AddField(model_name="pairlabel", name="changed_xid", field=_field(),
                            preserve_default=False),
        migrations.AddField(model_name="response", name="changed_xid", field=_field(),
                            preserve_default=False),
        migrations.RunPython(install, remove),
    ]
