"""A per-corpus stamp of sample draws and pair labels, kept by Postgres triggers.

The triggers are constraint triggers deferred to commit: the stamp row is locked only
while the writing transaction commits (not from its first write on), so concurrent
label writers on a corpus do not queue behind each other's work, and it moves once per
transaction and corpus (a per-transaction setting remembers the
bump), not once per row. A row whose corpus is gone by commit (its submission or
mention pair deleted) bumps nothing: every report that showed it is gone too, or lost
a draw in the same transaction (an instance's deletion deletes its draws).
Two transactions that each write two corpora, in opposite orders, can deadlock at
commit (Postgres aborts one of them with a deadlock error); every writer
today writes one corpus per transaction.

Off Postgres (SQLite for `make demo`) only the table is made: stored pages are not
used there, so nothing reads the stamp.
"""

from django.db import migrations, models

FUNCTIONS = """
CREATE FUNCTION kbpo_bump_draw_label_stamp(corpus bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF corpus IS NULL OR current_setting('kbpo.stamped_' || corpus, true) = '1' THEN
        RETURN;
    END IF;
    INSERT INTO annotations_drawlabelstamp (corpus_id, version) VALUES (corpus, 1)
    ON CONFLICT (corpus_id) DO UPDATE SET version = annotations_drawlabelstamp.version + 1;
    PERFORM set_config('kbpo.stamped_' || corpus, '1', true);
END $$;

CREATE FUNCTION kbpo_draw_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM kbpo_bump_draw_label_stamp(
            (SELECT corpus_id FROM submissions_submission WHERE id = OLD.submission_id));
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM kbpo_bump_draw_label_stamp(
            (SELECT corpus_id FROM submissions_submission WHERE id = NEW.submission_id));
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION kbpo_label_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM kbpo_bump_draw_label_stamp(
            (SELECT d.corpus_id FROM submissions_mentionpair p
             JOIN kbpo_document d ON d.id = p.document_id WHERE p.id = OLD.pair_id));
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM kbpo_bump_draw_label_stamp(
            (SELECT d.corpus_id FROM submissions_mentionpair p
             JOIN kbpo_document d ON d.id = p.document_id WHERE p.id = NEW.pair_id));
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER kbpo_draw_stamp
    AFTER INSERT OR UPDATE OR DELETE ON annotations_sampledraw
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION kbpo_draw_stamp();

CREATE CONSTRAINT TRIGGER kbpo_label_stamp
    AFTER INSERT OR UPDATE OR DELETE ON annotations_pairlabel
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION kbpo_label_stamp();
"""

DROP = """
DROP TRIGGER IF EXISTS kbpo_label_stamp ON annotations_pairlabel;
DROP TRIGGER IF EXISTS kbpo_draw_stamp ON annotations_sampledraw;
DROP FUNCTION IF EXISTS kbpo_label_stamp();
DROP FUNCTION IF EXISTS kbpo_draw_stamp();
DROP FUNCTION IF EXISTS kbpo_bump_draw_label_stamp(bigint);
"""


def _on_postgres(sql: str):
    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)
    return run


class Migration(migrations.Migration):

    dependencies = [
        ("annotations", "0008_pairlabel_majority"),
        ("kbpo", "0002_document_id_refuses_commas"),
    ]

    operations = [
        migrations.CreateModel(
            name="DrawLabelStamp",
            fields=[
                ("corpus", models.OneToOneField(on_delete=models.deletion.CASCADE,
                                                primary_key=True, related_name="+",
                                                serialize=False, to="kbpo.corpus")),
                ("version", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(_on_postgres(FUNCTIONS), _on_postgres(DROP)),
    ]
