"""Loading corpora: offsets, idempotence, refusals, bad lines by number."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from kbpo.core.corpus import load_corpus, split_text
from kbpo.core.models import Corpus, Document, Sentence

DOCS = [
    {"id": "NYT_1", "title": "Ada", "date": "2016-03-01",
     "text": "Ada Byron was born in London. She joined Acme Corp. in Lisbon in 2001!\n\n"
             "Mr. Smith, the chief engineer of U.S. Steel, didn't comment."},
    {"id": "NYT_2", "title": "Zoë", "text": "Zoë Saldaña visited São Paulo — \"quoted\" text. "
                                           "Then naïve café 😀 emoji here. It rained."},
]


def write_jsonl(path: Path, rows: list[object], gz: bool = False) -> Path:
    data = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    if gz:
        path.write_bytes(gzip.compress(data.encode()))
    else:
        path.write_text(data, encoding="utf-8")
    return path


def assert_offsets_round_trip(doc: Document) -> None:
    sentences = list(doc.sentences.order_by("index"))
    assert sentences, doc.doc_id
    prev_end = 0
    for s in sentences:
        assert 0 <= prev_end <= s.begin < s.end <= len(doc.text)
        spans = s.token_spans()
        assert spans[0][0] == s.begin and spans[-1][1] == s.end
        for b, e in spans:
            token = doc.text[b:e]
            assert token and token == token.strip(), (b, e, token)
        prev_end = s.end


@pytest.mark.django_db
@pytest.mark.parametrize("gz", [False, True])
def test_load_plain_and_gzip_offsets_round_trip(tmp_path: Path, gz: bool) -> None:
    path = write_jsonl(tmp_path / ("c.jsonl.gz" if gz else "c.jsonl"), DOCS, gz=gz)
    report = load_corpus("t", path)
    assert report.created == 2 and not report.errors
    doc = Document.objects.get(doc_id="NYT_1")
    assert doc.date.isoformat() == "2016-03-01" and doc.length == len(DOCS[0]["text"])
    texts = [doc.text[s.begin:s.end] for s in doc.sentences.order_by("index")]
    assert texts[0] == "Ada Byron was born in London."
    assert any(t.startswith("Mr. Smith") for t in texts)  # the abbreviation does not split
    for d in Document.objects.all():
        assert_offsets_round_trip(d)
    text2 = Document.objects.get(doc_id="NYT_2").text
    tokens = [text2[b:e] for s in Sentence.objects.filter(document__doc_id="NYT_2")
              for b, e in s.token_spans()]
    assert "São" in tokens and "😀" in tokens


@pytest.mark.django_db
def test_reload_is_idempotent(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", DOCS)
    load_corpus("t", path)
    before = (Document.objects.count(), Sentence.objects.count(),
              list(Sentence.objects.values_list("id", "begin", "end", "tokens")))
    report = load_corpus("t", path)
    assert (report.created, report.unchanged, report.errors) == (0, 2, [])
    after = (Document.objects.count(), Sentence.objects.count(),
             list(Sentence.objects.values_list("id", "begin", "end", "tokens")))
    assert before == after


@pytest.mark.django_db
def test_changed_text_under_existing_id_is_refused(tmp_path: Path) -> None:
    load_corpus("t", write_jsonl(tmp_path / "a.jsonl", DOCS))
    changed = [DOCS[0], dict(DOCS[1], text="A different text. Offsets would move.")]
    report = load_corpus("t", write_jsonl(tmp_path / "b.jsonl", changed))
    assert [e.line for e in report.errors] == [2]
    assert "different text" in report.errors[0].message
    assert Document.objects.get(doc_id="NYT_2").text == DOCS[1]["text"]
    # The same id in another corpus is a different document.
    assert load_corpus("other", tmp_path / "b.jsonl").created == 2


@pytest.mark.django_db
def test_title_and_date_corrections_are_applied(tmp_path: Path) -> None:
    load_corpus("t", write_jsonl(tmp_path / "a.jsonl", DOCS))
    report = load_corpus("t", write_jsonl(tmp_path / "b.jsonl",
                                          [dict(DOCS[0], title="New"), DOCS[1]]))
    assert (report.updated, report.unchanged) == (1, 1)
    assert Document.objects.get(doc_id="NYT_1").title == "New"


@pytest.mark.django_db
def test_bad_lines_are_reported_by_number_and_good_lines_load(tmp_path: Path) -> None:
    rows: list[object] = [
        DOCS[0],                                   # 1 ok
        "{not json",                               # 2
        "[1, 2]",                                  # 3
        {"title": "no id", "text": "x"},           # 4
        {"id": "A B", "text": "space in id."},     # 5
        {"id": "X1", "text": ""},                  # 6
        {"id": "X2", "text": "ok.", "date": "yesterday"},  # 7
        "",                                        # 8 blank: ignored
        DOCS[1],                                   # 9 ok
        dict(DOCS[1], title="dup"),                # 10 duplicate id
        {"id": "X3", "text": "fine text.", "title": 5},  # 11
    ]
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with path.open("ab") as fh:
        fh.write(b'{"id": "X4", "text": "caf\xe9"}\n')  # 12: Latin-1 byte
    report = load_corpus("t", path)
    assert [e.line for e in report.errors] == [2, 3, 4, 5, 6, 7, 10, 11, 12]
    messages = {e.line: e.message for e in report.errors}
    assert "not valid JSON" in messages[2]
    assert "'id'" in messages[4] and "'date'" in messages[7]
    assert "line 9" in messages[10] and "UTF-8" in messages[12]
    assert report.created == 2
    assert set(Document.objects.values_list("doc_id", flat=True)) == {"NYT_1", "NYT_2"}


@pytest.mark.django_db
def test_command_prints_errors_and_summary_and_fails(tmp_path: Path, capsys) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [DOCS[0], "oops"])
    with pytest.raises(CommandError, match="1 line"):
        call_command("load_corpus", str(path), tag="t", quiet_progress=True)
    out, err = capsys.readouterr()
    assert "line 2: not valid JSON" in err
    assert "1 documents created" in out
    call_command("load_corpus", str(write_jsonl(tmp_path / "d.jsonl", DOCS)), tag="t",
                 quiet_progress=True, description="Demo corpus")
    assert Corpus.objects.get(tag="t").description == "Demo corpus"


@pytest.mark.django_db
def test_parallel_split_matches_serial(tmp_path: Path) -> None:
    rows = [{"id": f"D{i}", "text": f"Sentence one of {i}. Sentence two here. Third one!"}
            for i in range(600)]
    path = write_jsonl(tmp_path / "big.jsonl", rows)
    report = load_corpus("par", path, workers=2)
    assert report.created == 600 and report.sentences == 1800
    for d in Document.objects.filter(corpus__tag="par")[:50]:
        expected = split_text(d.text)
        got = [(s.begin, s.end, s.tokens) for s in d.sentences.order_by("index")]
        assert got == [(b, e, t) for b, e, t in expected]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300))
def test_split_text_offsets_always_round_trip(text: str) -> None:
    prev = 0
    for b, e, toks in split_text(text):
        assert prev <= b < e <= len(text)
        for i in range(0, len(toks), 2):
            tb, te = toks[i], toks[i + 1]
            assert b <= tb < te <= e and text[tb:te].strip()
        prev = e
