"""Corpus tags are part of page URLs: one that does not fit them is refused wherever a
corpus is made, and a row stored before that check does not take the pages down."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType

import pytest
from django.apps import apps as django_apps
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.urls import reverse

from kbpo.core.models import Corpus
from tests.factories import make_corpus, make_submission, make_user

BAD_TAGS = ["tac 2015.v2", "tac2015.v2", "kbp/2016", "été", "a\nb", "x" * 65]


def _jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"id": "D1", "text": "Ada was born in London."}) + "\n")
    return path


@pytest.mark.django_db
@pytest.mark.parametrize("tag", BAD_TAGS)
def test_load_corpus_refuses_a_tag_outside_urls_and_names_it(tmp_path: Path, tag: str) -> None:
    with pytest.raises(CommandError) as exc:
        call_command("load_corpus", str(_jsonl(tmp_path)), tag=tag, quiet_progress=True)
    message = str(exc.value)
    assert ("at most 64 characters" in message if len(tag) > 64
            else f"\u201c{tag}\u201d" in message and "hyphens and underscores" in message)
    assert not Corpus.objects.exists()


@pytest.mark.django_db
def test_import_gold_refuses_a_bad_tag_for_a_new_corpus(tmp_path: Path) -> None:
    path = tmp_path / "gold.json"
    path.write_text("[]")
    with pytest.raises(CommandError, match=r"tac 2015\.v2.*not allowed"):
        call_command("import_gold", str(path), format="docred", corpus="tac 2015.v2")
    assert not Corpus.objects.exists()


@pytest.mark.django_db
def test_a_good_tag_still_loads(tmp_path: Path) -> None:
    call_command("load_corpus", str(_jsonl(tmp_path)), tag="tac2015-v2_b", quiet_progress=True)
    assert Corpus.objects.get(tag="tac2015-v2_b").documents.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("tag", ["tac 2015.v2", ""])
def test_model_validation_and_save_refuse_a_bad_tag(tag: str) -> None:
    with pytest.raises(ValidationError) as exc:
        Corpus(tag=tag).full_clean()
    assert "tag" in exc.value.message_dict
    with pytest.raises(ValidationError):
        make_corpus(tag)  # save() checks too: code and fixtures cannot store one
    assert not Corpus.objects.exists()


@pytest.mark.django_db
def test_admin_form_refuses_a_bad_tag_naming_it(client: Client) -> None:
    root = make_user("root", staff=True)
    root.is_superuser = True
    root.save()
    client.force_login(root)
    resp = client.post(reverse("admin:kbpo_corpus_add"),
                       {"tag": "tac 2015.v2", "description": ""})
    assert resp.status_code == 200  # the form again, with the error
    assert "Corpus tag “tac 2015.v2” is not allowed" in resp.content.decode()
    assert not Corpus.objects.exists()
    resp = client.post(reverse("admin:kbpo_corpus_add"), {"tag": "tac2015", "description": ""})
    assert resp.status_code == 302 and Corpus.objects.filter(tag="tac2015").exists()


def _constraint_migration() -> ModuleType:
    return importlib.import_module("kbpo.core.migrations.0004_corpus_tag_constraint")


def _stored_before_the_check(tag: str) -> Corpus:
    """A row from before tags were checked, as an older version stored it: without the
    database's check, which the migration then adds over it (the test's transaction
    undoes both)."""
    migration = _constraint_migration()
    with connection.schema_editor() as editor:
        migration.drop(django_apps, editor)
        [corpus] = Corpus.objects.bulk_create([Corpus(tag=tag)])
        migration.add(django_apps, editor)
    return Corpus.objects.get(pk=corpus.pk)


@pytest.mark.django_db
@pytest.mark.parametrize("tag", ["tac 2015.v2", "kbp/2016", "été", "a\nb", ""])
def test_the_database_refuses_a_bad_tag_that_skips_save(tag: str) -> None:
    """bulk_create, update and raw SQL skip Corpus.save(): the database checks too."""
    with pytest.raises(IntegrityError), transaction.atomic():
        Corpus.objects.bulk_create([Corpus(tag=tag)])
    good = make_corpus("good")
    with pytest.raises(IntegrityError), transaction.atomic():
        Corpus.objects.filter(pk=good.pk).update(tag=tag)
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE {Corpus._meta.db_table} SET tag = %s", [tag])
    assert list(Corpus.objects.values_list("tag", flat=True)) == ["good"]


@pytest.mark.django_db
def test_a_row_stored_before_the_check_must_be_renamed_to_change() -> None:
    """The check does not refuse the migration over an old row (NOT VALID), but any write
    of that row must give it a routable tag; the rename itself goes through."""
    bad = _stored_before_the_check("tac 2015.v2")
    assert not bad.routable
    with pytest.raises(IntegrityError), transaction.atomic():
        Corpus.objects.filter(pk=bad.pk).update(description="kept as it was")
    with pytest.raises(ValidationError, match="not allowed in URLs: rename it"):
        Corpus(pk=bad.pk, tag=bad.tag).validate_constraints()
    Corpus.objects.filter(pk=bad.pk).update(tag="tac2015-v2", description="renamed")
    assert Corpus.objects.get(pk=bad.pk).routable


@pytest.mark.django_db
def test_pages_survive_a_stored_bad_tag(client: Client) -> None:
    make_corpus("good")
    bad = _stored_before_the_check("tac 2015.v2")
    owner = make_user("ada")
    sub = make_submission(bad, [], owner=owner)
    resp = client.get(reverse("leaderboard-index"))
    assert resp.status_code == 200
    html = resp.content.decode()
    assert 'href="/leaderboard/good/"' in html  # the others keep their links
    assert "tac 2015.v2" in html and "No leaderboard page: this tag is not allowed" in html
    resp = client.get(reverse("submission-format"))
    assert resp.status_code == 200 and "no download: the tag is not allowed" in \
        resp.content.decode()
    client.force_login(owner)
    resp = client.get(reverse("submission-evaluation", args=[sub.pk]))
    assert resp.status_code == 200, resp.status_code
    # Renaming it (what the note asks for) gives it its links back.
    bad.tag = "tac2015-v2"
    bad.save()
    assert 'href="/leaderboard/tac2015-v2/"' in client.get(
        reverse("leaderboard-index")).content.decode()
