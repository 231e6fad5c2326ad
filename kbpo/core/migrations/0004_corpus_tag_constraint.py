"""Corpus tags must fit URLs in the database too (what skips Corpus.save: bulk_create,
update, raw SQL). On Postgres the check is added NOT VALID: a row stored before tags
were checked stays (its pages say it must be renamed,
docs/internals/corpus-loading.md) and the migration cannot fail on it; every later write
of a row must satisfy it. SQLite cannot add a constraint to an existing table: there
only the model state gets it."""

from django.db import migrations, models

CONSTRAINT = models.CheckConstraint(
    condition=models.Q(("tag__regex", "^[-a-zA-Z0-9_]+\\Z")), name="corpus_tag_routable",
    violation_error_message="This corpus tag is not allowed in URLs: rename it (ASCII "
                            "letters, digits, hyphens and underscores only).")


def add(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        corpus = apps.get_model("kbpo", "Corpus")
        schema_editor.execute(str(CONSTRAINT.create_sql(corpus, schema_editor)) + " NOT VALID")


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        corpus = apps.get_model("kbpo", "Corpus")
        schema_editor.execute(str(CONSTRAINT.remove_sql(corpus, schema_editor)))


class Migration(migrations.Migration):

    dependencies = [
        ("kbpo", "0003_corpus_tag_message"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(add, drop)],
            state_operations=[migrations.AddConstraint(model_name="corpus",
                                                       constraint=CONSTRAINT)],
        ),
    ]
