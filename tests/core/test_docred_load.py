"""`load_corpus --format docred`: a DocRED file as a corpus on the DocRED schema."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from kbpo.core.corpus import LoadReport
from kbpo.core.docred_load import DocredLoadError, load_docred_corpus
from kbpo.core.jsonlist import JsonListError, iter_list
from kbpo.core.models import Corpus, Document, DocumentEntity
from kbpo.core.schemas import DOCRED, TAC_KBP


def m(name: str, sent: int, pos: list[int], typ: str) -> dict:
    return {"name": name, "sent_id": sent, "pos": pos, "type": typ}


DOCS = [
    {"title": "Ada Byron: a life",
     "sents": [["Ada", "Byron", "(", "born", "1815", ")", "was", "born", "in", "London", "."],
               ["Her", "father", ",", "Lord", "Byron", ",", "left", "\u00a0", "England", "."]],
     "vertexSet": [[m("Ada Byron", 0, [0, 2], "PER")],
                   [m("1815", 0, [4, 5], "TIME")],
                   [m("London", 0, [9, 10], "LOC")],
                   [m("Lord Byron", 1, [3, 5], "PER"), m("Byron", 0, [1, 2], "PER")],
                   [m("England", 1, [8, 9], "LOC")],
                   # DocRED lists an entity twice now and then: the same mentions
                   [m("England", 1, [8, 9], "LOC")]],
     "labels": [{"h": 0, "t": 3, "r": "P22", "evidence": [1]}]},
    {"title": "Acme",
     "sents": [["Acme", "is", "based", "in", "Lisbon", "."]],
     "vertexSet": [[m("Acme", 0, [0, 1], "ORG")], [m("Lisbon", 0, [4, 5], "LOC")]],
     "labels": []},
]


def write(path: Path, docs: object, gz: bool = False, indent: int | None = 1) -> Path:
    data = json.dumps(docs, indent=indent).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.django_db
@pytest.mark.parametrize("gz", [False, True])
def test_loads_documents_sentences_tokens_and_every_entity(tmp_path: Path, gz: bool) -> None:
    report = load_docred_corpus("redocred", write(tmp_path / "dev.json", DOCS, gz))
    assert (report.created, report.errors) == (2, [])
    corpus = Corpus.objects.get(tag="redocred")
    assert corpus.schema == DOCRED
    doc = Document.objects.get(corpus=corpus, doc_id="Ada_Byron_a_life")
    assert doc.title == "Ada Byron: a life"
    assert doc.text.startswith("Ada Byron (born 1815) was born in London. Her father")
    sentences = list(doc.sentences.order_by("index"))
    assert len(sentences) == 2  # DocRED's own split, not re-split
    for sent, tokens in zip(sentences, DOCS[0]["sents"], strict=True):
        assert [doc.text[b:e] for b, e in sent.token_spans()] == tokens
    entities = list(DocumentEntity.objects.filter(document=doc).order_by("index"))
    assert [e.index for e in entities] == [0, 1, 2, 3, 4, 5]  # none dropped or renumbered
    byron = entities[3]
    assert byron.type == "PER" and byron.name == "Lord Byron"
    assert [doc.text[b:e] for _, b, e in byron.mention_spans()] == ["Byron", "Lord Byron"]
    # the anchor is the first mention in text order, unique among the entities
    assert doc.text[byron.anchor_begin:byron.anchor_end] == "Byron"
    anchors = [(e.anchor_begin, e.anchor_end) for e in entities]
    assert len(set(anchors)) == 6
    twin = entities[5]  # its only mention is entity 4's anchor: an empty span inside it
    assert twin.anchor_begin == twin.anchor_end
    assert entities[4].anchor_begin <= twin.anchor_begin <= entities[4].anchor_end


@pytest.mark.django_db
def test_reloading_changes_nothing_and_a_changed_text_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "dev.json", DOCS)
    load_docred_corpus("redocred", path)
    again = load_docred_corpus("redocred", path)
    assert (again.created, again.unchanged, again.errors) == (0, 2, [])
    changed = json.loads(json.dumps(DOCS))
    changed[1]["sents"][0][0] = "Acne"
    report = load_docred_corpus("redocred", write(tmp_path / "v2.json", changed))
    assert report.created == 0 and len(report.errors) == 1
    assert "[1]: document Acme is already loaded with a different text" in str(report.errors[0])
    assert DocumentEntity.objects.count() == 8


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["vertexSet"][3][0].update(pos=[3, 12]),
     "[0].vertexSet[3][0].pos: [3, 12] must be [start, end) token positions with 0 <= start "
     "< end <= 10 (the length of sentence 1)"),
    (lambda d: d["vertexSet"][2][0].update(sent_id=2),
     "[0].vertexSet[2][0].sent_id: 2 is not a sentence index"),
    (lambda d: d["vertexSet"][1][0].update(type="DATE"),
     "[0].vertexSet[1][0].type: 'DATE' is not a DocRED entity type"),
    (lambda d: d.update(sents="Ada Byron"), "[0].sents: expected a non-empty list"),
    (lambda d: d.pop("title"), "[0].title: expected a non-empty string"),
])
def test_a_bad_document_is_refused_by_json_path_and_line_and_the_rest_loads(
        tmp_path: Path, change: object, message: str) -> None:
    docs = json.loads(json.dumps(DOCS))
    change(docs[0])  # type: ignore[operator]
    report = load_docred_corpus("redocred", write(tmp_path / "dev.json", docs))
    assert report.created == 1 and len(report.errors) == 1
    err = report.errors[0]
    assert err.line == 2  # `[` on line 1, the first document from line 2 (indent=1)
    assert message in err.message
    with pytest.raises(CommandError, match="1 line"):
        call_command("load_corpus", "--tag", "redocred2", "--format", "docred",
                     str(tmp_path / "dev.json"), "--quiet-progress")


@pytest.mark.django_db
def test_malformed_json_names_the_element_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    text = json.dumps(DOCS, indent=1)
    cut = text.index('"Acme"')  # break the second document
    path.write_text(text[:cut] + text[cut + 1:])
    line = text[:cut].count("\n") + 1
    with pytest.raises(CommandError, match=rf"line {line}, column \d+: \[1\]: not valid JSON"):
        call_command("load_corpus", "--tag", "redocred", "--format", "docred", str(path))
    assert not Document.objects.exists()


@pytest.mark.django_db
def test_a_docred_file_does_not_load_into_a_tac_corpus(tmp_path: Path) -> None:
    Corpus.objects.create(tag="kbp2016")
    with pytest.raises(DocredLoadError, match="choose a new tag"):
        load_docred_corpus("kbp2016", write(tmp_path / "dev.json", DOCS))
    assert Corpus.objects.get(tag="kbp2016").schema == TAC_KBP
    assert not Document.objects.exists()


@pytest.mark.django_db
def test_the_command_loads_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    call_command("load_corpus", "--tag", "redocred", "--format", "docred",
                 str(write(tmp_path / "dev.json", DOCS, indent=None)), "--quiet-progress")
    assert "2 documents read, 2 documents created" in capsys.readouterr().out
    assert Corpus.objects.get(tag="redocred").documents.count() == 2
    assert LoadReport(corpus="x").summary().startswith("corpus x: 0 lines read")


@pytest.mark.parametrize(("text", "message"), [
    ("", "the file is empty"),
    ('{"title": "x"}', "starts with an object"),
    ("[1, 2", "the file ends early"),
    ("[1 2]", "after [0]: expected ',' or ']' at line 1, column 4"),
    ("[1]\n]", "text after the end of the list at line 2, column 1"),
    ("[1,\n {]", "[1]: not valid JSON"),
])
def test_json_list_errors(text: str, message: str) -> None:
    with pytest.raises(JsonListError) as exc:
        list(iter_list(text))
    assert message in str(exc.value)


def test_json_list_elements_know_their_lines() -> None:
    found = [(str(w), v) for w, v in iter_list('[\n {"a": 1},\n\n  2, [3]\n]')]
    assert found == [('[0] (line 2, column 2)', {"a": 1}), ("[1] (line 4, column 3)", 2),
                     ("[2] (line 4, column 6)", [3])]
    assert list(iter_list(" [ ] ")) == []
