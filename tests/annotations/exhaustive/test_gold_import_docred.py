"""Import of a DocRED-format file: documents, offsets, types, mapping, skip counts."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotations.exhaustive.docred import detokenize, import_docred
from annotations.models import ExhaustiveDocument, ExhaustiveStage, GoldMention, GoldRelation
from kbpo.core.models import Corpus, Document, Sentence
from kbpo.core.schema import canonicalize

FIXTURE = Path(__file__).parent / "fixtures" / "docred_small.json"


def records() -> list[dict]:
    return json.loads(FIXTURE.read_text())


@pytest.fixture
def imported(db):
    corpus = Corpus.objects.create(tag="docred")
    return corpus, import_docred(corpus, FIXTURE)


def test_detokenisation_rule_and_offsets() -> None:
    text, offsets = detokenize([["Ada", "(", "born", "1815", ")", "said", "\"", "hi", ",",
                                 "no", "."], ["Next", "one", "."]])
    assert text == "Ada (born 1815) said \" hi, no. Next one."
    for sent, spans in zip([["Ada", "(", "born", "1815", ")", "said", "\"", "hi", ",", "no",
                             "."], ["Next", "one", "."]], offsets, strict=True):
        assert [text[b:e] for b, e in spans] == sent


def test_documents_sentences_and_mention_offsets(imported) -> None:
    corpus, report = imported
    docs = {d.doc_id: d for d in Document.objects.filter(corpus=corpus)}
    assert set(docs) == {"Ada_Lovelace", "Acme_Corporation", "Nolda_a_town"}
    ada = docs["Ada_Lovelace"]
    assert ada.text.startswith("Ada Lovelace (born 10 December 1815) was an English "
                               "mathematician. She was born in London")
    assert ada.length == len(ada.text) and ada.title == "Ada Lovelace"
    for rec in records()[:3]:
        doc = docs[rec["title"].replace(": ", "_").replace(" ", "_")]
        sents = list(Sentence.objects.filter(document=doc).order_by("index"))
        assert len(sents) == len(rec["sents"])
        for sent, tokens in zip(sents, rec["sents"], strict=True):
            assert [doc.text[b:e] for b, e in sent.token_spans()] == tokens
        # every imported mention is an exact span of its DocRED name
        names = {(m["name"], m["type"]) for v in rec["vertexSet"] for m in v}
        for gm in GoldMention.objects.filter(document=doc):
            raw = {"GPE": "LOC", "DATE": "TIME"}.get(gm.type, gm.type)
            assert (doc.text[gm.begin:gm.end], raw) in names
    # each entity has exactly one canonical mention, the longest
    acme = GoldMention.objects.filter(document=docs["Acme_Corporation"], entity="E0")
    assert [(docs["Acme_Corporation"].text[m.begin:m.end], m.canonical) for m in acme] == [
        ("Acme Corporation", True), ("Acme", False), ("Acme", False)]
    assert report.documents_created == 3


def test_types_mapping_and_canonical_direction(imported) -> None:
    corpus, _ = imported
    got = {}
    for r in GoldRelation.objects.filter(document__corpus=corpus).select_related("document"):
        t = r.document.text
        got[(t[r.subject_begin:r.subject_end], r.predicate, t[r.object_begin:r.object_end])] = r
        # stored relations are canonical: canonicalize leaves them unchanged
        s = GoldMention.objects.get(document=r.document, begin=r.subject_begin)
        o = GoldMention.objects.get(document=r.document, begin=r.object_begin)
        c = canonicalize(("d", r.subject_begin, r.subject_end), s.type, r.predicate,
                         ("d", r.object_begin, r.object_end), o.type)
        assert (c.predicate, c.subject[1]) == (r.predicate, r.subject_begin)
        assert r.sentence is not None and r.sentence.begin <= min(
            r.subject_begin, r.object_begin) and max(r.subject_end, r.object_end) <= r.sentence.end
        assert r.subject_entity == s.entity and r.source == "import"
    assert set(got) == {
        ("Ada Lovelace", "per:date_of_birth", "10 December 1815"),
        ("Lovelace", "per:spouse", "William King"),        # P26 both ways: one instance
        ("Lovelace", "per:employee_or_member_of", "Analytical Society"),
        ("Wile Coyote", "per:organizations_founded", "Acme Corporation"),  # P112 inverted
        ("Wile Coyote", "per:employee_or_member_of", "Acme Corporation"),
        ("Acme Corporation", "org:date_founded", "1920"),
        ("Acme", "org:place_of_headquarters", "Phoenix"),
        ("Acme", "org:place_of_headquarters", "Arizona"),
        ("Roadrunner Inc.", "org:shareholders", "Coyote Holdings"),  # no evidence: co-mention
        ("Ida Moss", "per:place_of_residence", "Nolda"),
    }
    assert set(GoldMention.objects.filter(document__corpus=corpus).values_list(
        "type", flat=True)) == {"PER", "ORG", "GPE", "DATE"}
    assert not GoldMention.objects.filter(document__corpus=corpus, type__in=["NUM", "MISC"])
    assert all(e.stage == ExhaustiveStage.IMPORTED and e.state == "complete"
               for e in ExhaustiveDocument.objects.filter(corpus=corpus))


def test_skip_counts_by_reason(imported) -> None:
    _, report = imported
    assert (report.documents_read, report.documents_imported) == (4, 3)
    assert dict(report.skipped_documents) == {"malformed document": 1}
    assert report.mentions == 25 and report.relations == 10
    assert dict(report.skipped_mentions) == {
        "entity type MISC not in the KBP schema": 1,
        "entity type NUM not in the KBP schema": 1,
        "position outside its sentence": 2,
    }
    assert (report.labels, report.labels_mapped, report.merged_instances) == (24, 11, 1)
    assert dict(report.skipped_labels) == {
        "evidence sentences do not mention both entities (cross-sentence)": 3,
        "property without a KBP counterpart": 4,
        "no evidence and no sentence mentions both entities": 1,
        "argument of type MISC (not in the KBP schema)": 1,
        "types do not fit the mapped predicate": 2,
        "entity index out of range": 1,
        "relation of an entity with itself": 1,
    }
    assert report.labels_mapped + sum(report.skipped_labels.values()) == report.labels
    assert dict(report.unmapped_properties) == {"P27": 1, "P1128": 1, "P131": 1, "P17": 1}
    assert any("document [3].sents" in m for m in report.messages)


def test_reimport_is_idempotent(imported) -> None:
    corpus, _ = imported
    before = (set(GoldMention.objects.values_list("document_id", "begin", "end", "type")),
              set(GoldRelation.objects.values_list("document_id", "subject_begin",
                                                   "object_begin", "predicate")))
    again = import_docred(corpus, FIXTURE)
    assert (again.documents_created, again.documents_imported, again.documents_unchanged) == (
        0, 0, 3)
    after = (set(GoldMention.objects.values_list("document_id", "begin", "end", "type")),
             set(GoldRelation.objects.values_list("document_id", "subject_begin",
                                                  "object_begin", "predicate")))
    assert before == after and Document.objects.count() == 3


def test_changed_text_under_same_title_is_refused(imported, tmp_path: Path) -> None:
    corpus, _ = imported
    recs = records()[:1]
    recs[0]["sents"][0][0] = "Augusta"
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(recs))
    report = import_docred(corpus, path)
    assert dict(report.skipped_documents) == {"document id exists with another text": 1}
    assert Document.objects.get(doc_id="Ada_Lovelace").text.startswith("Ada Lovelace")


def test_command_reports_and_rejects_bad_files(db, tmp_path: Path) -> None:
    out = StringIO()
    call_command("import_gold", str(FIXTURE), format="docred", corpus="dr", stdout=out,
                 stderr=StringIO())
    text = out.getvalue()
    assert "25 gold mentions and 10 gold relations" in text
    assert "4 × property without a KBP counterpart" in text
    bad = tmp_path / "bad.json"
    bad.write_text('{"title": "x"}')
    with pytest.raises(CommandError, match="expected a JSON list of documents"):
        call_command("import_gold", str(bad), format="docred", corpus="dr")
    bad.write_text("[1, 2")
    with pytest.raises(CommandError, match="not valid JSON"):
        call_command("import_gold", str(bad), format="docred", corpus="dr")
    with pytest.raises(CommandError, match="does not exist"):
        call_command("import_gold", str(FIXTURE), format="kbpo", corpus="nope")
