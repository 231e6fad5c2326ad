"""The real-text demo world: deterministic, in the demo world's formats, with a truth.json
that is exact for what ingestion keeps of each system's file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.core.management import CommandError, call_command

from annotations.exhaustive.docred import import_docred
from annotations.models import GoldRelation
from kbpo.core.corpus import load_corpus
from kbpo.core.gold import canonical_relations
from kbpo.core.models import Corpus, Document
from kbpo.demo.world import docred as docred_world
from submissions.models import RelationInstance, Submission
from submissions.processing import run_ingestion

from .docred_source import docred_source, written_source

DOCS, SYSTEMS, SEED = 40, 4, 3


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("docred-world")
    out = tmp / "world"
    docred_world.generate(docred_source(tmp), out, DOCS, SYSTEMS, SEED)
    return out


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _gold_keys(world: Path) -> set[tuple]:
    keys = set()
    for g in _jsonl(world / "gold.jsonl"):
        types = {tuple(m["span"]): m["type"] for m in g["mentions"]}
        stated = [(tuple(r["subject"]), r["predicate"], tuple(r["object"]))
                  for r in g["relations"]]
        keys |= {(g["doc"], *pair, p) for pair, preds in
                 canonical_relations(g["doc"], types, stated).items() for p in preds}
    return keys


def test_same_seed_same_files_other_seed_other_files(world: Path, tmp_path: Path) -> None:
    source = docred_source(tmp_path)
    again = tmp_path / "again"
    docred_world.generate(source, again, DOCS, SYSTEMS, SEED)
    names = ["corpus.jsonl", "gold.jsonl", "truth.json", "systems/index.json",
             *(f"systems/{p.name}" for p in sorted((world / "systems").glob("*.kb")))]
    assert len(names) == 4 + SYSTEMS
    for name in names:
        assert (world / name).read_bytes() == (again / name).read_bytes(), name
    other = tmp_path / "other"
    docred_world.generate(source, other, DOCS, SYSTEMS, SEED + 1)
    assert (other / "truth.json").read_bytes() != (world / "truth.json").read_bytes()


def test_formats_match_the_demo_world(world: Path) -> None:
    corpus, gold = _jsonl(world / "corpus.jsonl"), _jsonl(world / "gold.jsonl")
    assert [c["id"] for c in corpus] == [g["doc"] for g in gold]
    for c, g in zip(corpus, gold, strict=True):
        assert c["sentences"] == g["sentences"] and "," not in c["id"]
        for m in g["mentions"]:
            assert c["text"][m["span"][0]:m["span"][1]] == m["text"]
        for r in g["relations"]:
            b, e = r["sentence"]
            assert b <= min(r["subject"][0], r["object"][0])
            assert max(r["subject"][1], r["object"][1]) <= e
    truth = json.loads((world / "truth.json").read_text())
    assert truth["true_instances"] == len(_gold_keys(world)) > 0
    index = json.loads((world / "systems" / "index.json").read_text())
    assert [s["name"] for s in index["systems"]] == sorted(truth["systems"])
    for scores in truth["systems"].values():
        assert set(scores) == set(truth["schemes"])
        assert 0 < scores["instance"]["precision"] <= 1


@pytest.fixture
def loaded(world: Path, db, no_planning: None, eager_unless_worker: None, settings,
           tmp_path: Path) -> Iterator[Corpus]:
    settings.MEDIA_ROOT = tmp_path / "media"
    report = load_corpus("docred", world / "corpus.jsonl", workers=1)
    assert not report.errors, report.errors[:3]
    yield Corpus.objects.get(tag="docred")


@pytest.mark.django_db
def test_corpus_keeps_the_source_sentences(world: Path, loaded: Corpus) -> None:
    for c in _jsonl(world / "corpus.jsonl"):
        doc = Document.objects.get(corpus=loaded, doc_id=c["id"])
        got = list(doc.sentences.order_by("index").values_list("begin", "end"))
        assert [list(s) for s in got] == c["sentences"]


@pytest.mark.django_db
def test_truth_is_exact_for_what_ingestion_keeps(world: Path, loaded: Corpus) -> None:
    """Every system file, ingested with drop-invalid: exactly its bad lines are dropped,
    and the kept instances are truth.json's (count, and how many are true)."""
    truth = json.loads((world / "truth.json").read_text())["systems"]
    gold = _gold_keys(world)
    owner = User.objects.create_user("sys")
    for kb in sorted((world / "systems").glob("*.kb")):
        sub = Submission(owner=owner, corpus=loaded, name=kb.stem, drop_invalid=True)
        sub.file.save("kb.tsv", ContentFile(kb.read_bytes()), save=False)
        sub.save()
        run_ingestion(sub.pk)
        sub.refresh_from_db()
        assert sub.state == "ingested", sub.report[:5]
        codes = sorted(code for _, code, _ in sub.dropped)
        assert codes == sorted(["MENTION_TEXT_MISMATCH", "UNKNOWN_PREDICATE",
                                "PROVENANCE_CROSSES_SENTENCES"][:len(codes)])
        assert len(codes) >= 2
        keys = set(RelationInstance.objects.filter(submission=sub).values_list(
            "pair__document__doc_id", "pair__subject_begin", "pair__subject_end",
            "pair__object_begin", "pair__object_end", "predicate"))
        exact = truth[kb.stem]["instance"]
        assert len(keys) == sub.n_relations == exact["instances"]
        assert len(keys & gold) == exact["true_instances"]


@pytest.mark.django_db
def test_gold_matches_import_gold_docred(tmp_path: Path, settings) -> None:
    """The world's gold and `import_gold --format docred` map DocRED identically."""
    source = written_source(tmp_path)
    out = tmp_path / "w"
    docred_world.generate(source, out, 10, 1, 0)
    report = import_docred(Corpus.objects.create(tag="imported"), source, doc_prefix="DOCRED_")
    assert report.documents_imported == 2
    imported = set(GoldRelation.objects.values_list(
        "document__doc_id", "subject_begin", "subject_end", "object_begin", "object_end",
        "predicate"))
    assert imported == _gold_keys(out)
    # both directions of one fact are one instance; the cross-sentence label is skipped
    preds = sorted(k[5] for k in imported)
    assert preds.count("per:children") == 1 and "per:parents" not in preds
    assert preds.count("per:siblings") == 1 and preds.count("per:spouse") == 1
    assert preds.count("org:subsidiaries") == 1 and "DOCRED_Acme_Inc." in {k[0] for k in imported}


def test_make_docred_world_command(tmp_path: Path) -> None:
    out = tmp_path / "cmd"
    call_command("make_docred_world", str(written_source(tmp_path)), out=str(out), docs=5,
                 systems=2, seed=1, stdout=open(tmp_path / "log", "w"))  # noqa: SIM115
    assert len(list((out / "systems").glob("*.kb"))) == 2
    with pytest.raises(CommandError, match="not a readable DocRED JSON file"):
        call_command("make_docred_world", str(tmp_path / "log"), out=str(out))


def test_demo_docred_needs_a_readable_source(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="--world docred needs --source FILE"):
        call_command("demo", world="docred", out=str(tmp_path / "d"))
    with pytest.raises(CommandError, match="needs --source FILE"):
        call_command("demo", world="docred", source=str(tmp_path / "missing.json"),
                     out=str(tmp_path / "d"))
