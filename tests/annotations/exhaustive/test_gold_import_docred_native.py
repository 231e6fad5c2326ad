"""`import_gold --format docred` into a DocRED corpus: labels as gold for all relations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotations.models import ExhaustiveDocument, GoldMention, GoldRelation
from kbpo.core.models import Document, DocumentEntity
from tests.core.test_docred_load import DOCS, m, write


def docs_with_labels() -> list[dict]:
    docs = json.loads(json.dumps(DOCS))
    docs[0]["labels"] = [
        {"h": 0, "t": 3, "r": "P22", "evidence": [1]},   # father, across sentences
        {"h": 0, "t": 1, "r": "P569", "evidence": [0]},
        {"h": 0, "t": 2, "r": "P19"},                    # no evidence: still a fact
        {"h": 0, "t": 3, "r": "P22", "evidence": [0]},   # the same fact again: merged
        {"h": 0, "t": 9, "r": "P19"},                    # entity index out of range
        {"h": 2, "t": 2, "r": "P17"},                    # self
        {"h": 2, "t": 4, "r": "P9999"},                  # not a DocRED relation
        {"h": 0, "r": "P19"},                            # malformed
    ]
    docs[1]["labels"] = [{"h": 0, "t": 1, "r": "P159", "evidence": [0]}]
    return docs


def load(tmp_path: Path, docs: list[dict]) -> Path:
    path = write(tmp_path / "dev.json", docs)
    call_command("load_corpus", "--tag", "redocred", "--format", "docred", str(path),
                 "--quiet-progress")
    return path


@pytest.mark.django_db
def test_every_label_of_the_schema_becomes_a_document_level_gold_fact(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = load(tmp_path, docs_with_labels())
    call_command("import_gold", "--format", "docred", "--corpus", "redocred", str(path))
    out, err = capsys.readouterr()
    assert "2 imported" in out
    assert "[0].labels[4]: h=0 t=9: the document has 6 entities (0 to 5)" in err
    assert "[0].labels[6].r: 'P9999' is not one of DocRED's 96 relations" in err
    doc = Document.objects.get(doc_id="Ada_Byron_a_life")
    ents = {e.index: (e.anchor_begin, e.anchor_end) for e in DocumentEntity.objects.filter(
        document=doc)}
    facts = {((r.subject_begin, r.subject_end), (r.object_begin, r.object_end), r.predicate,
              r.subject_entity) for r in GoldRelation.objects.filter(document=doc)}
    # pairs are the head's and the tail's anchors, in the label's direction, unmapped
    assert facts == {(ents[0], ents[3], "P22", "E0"), (ents[0], ents[1], "P569", "E0"),
                     (ents[0], ents[2], "P19", "E0")}
    # every mention of every entity (a span listed under two entities counted once)
    assert GoldMention.objects.filter(document=doc).count() == 6
    assert set(GoldMention.objects.filter(document=doc, entity="E3").values_list(
        "begin", "end", "type", "canonical")) == {(*ents[3], "PER", True),
                                                  (doc.text.index("Lord Byron"),
                                                   doc.text.index("Lord Byron") + 10, "PER",
                                                   False)}
    assert ExhaustiveDocument.objects.filter(state="complete").count() == 2
    # re-importing changes nothing
    call_command("import_gold", "--format", "docred", "--corpus", "redocred", str(path))
    assert "2 unchanged" in capsys.readouterr().out


@pytest.mark.django_db
def test_only_planned_imports_the_planned_documents(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    path = load(tmp_path, docs_with_labels())
    doc = Document.objects.get(doc_id="Acme")
    ExhaustiveDocument.objects.create(corpus=doc.corpus, document=doc, stage="seed")
    call_command("import_gold", "--format", "docred", "--corpus", "redocred", "--only-planned",
                 str(path))
    assert "1 imported" in capsys.readouterr().out
    assert list(GoldRelation.objects.values_list("document__doc_id", "predicate")) == [
        ("Acme", "P159")]


@pytest.mark.django_db
def test_gold_from_another_file_is_refused_per_document(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    load(tmp_path, docs_with_labels())
    other = docs_with_labels()
    other[1]["vertexSet"].append([m("Acme", 0, [0, 1], "ORG")])
    other.append({"title": "Unknown", "sents": [["x"]], "vertexSet": [], "labels": []})
    path = write(tmp_path / "other.json", other)
    call_command("import_gold", "--format", "docred", "--corpus", "redocred", str(path))
    out, err = capsys.readouterr()
    assert "1 imported" in out
    assert "document 'Acme' has another text or other entities than the one loaded" in err
    assert "document 'Unknown' is not in corpus redocred; load the file first" in err
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_gold", "--format", "docred", "--corpus", "redocred",
                     str(write(tmp_path / "x.json", other[2:])))


@pytest.mark.django_db
def test_a_tac_corpus_keeps_the_kbp_mapping(tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    # No DocRED corpus under the tag: the documents are created and labels mapped to KBP.
    call_command("import_gold", "--format", "docred", "--corpus", "mapped",
                 str(write(tmp_path / "dev.json", docs_with_labels())))
    assert set(GoldRelation.objects.values_list("predicate", flat=True)) <= {
        "per:parents", "per:date_of_birth", "per:place_of_birth", "org:place_of_headquarters"}
    assert GoldRelation.objects.filter(predicate="per:date_of_birth").exists()
    assert not DocumentEntity.objects.exists()
