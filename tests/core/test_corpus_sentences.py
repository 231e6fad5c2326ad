"""A corpus line may carry the source's sentence boundaries: used instead of the
splitter, validated with line-numbered errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbpo.core.corpus import load_corpus, split_text
from kbpo.core.models import Document

TEXT = "The painting was restored by F. A. Wenderoth in 1850. It hangs in Bath."
SOURCE = [[0, 53], [54, 71]]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_splitter_alone_breaks_the_source_sentence() -> None:
    # Why the field exists: syntok ends a sentence after "F.".
    assert len(split_text(TEXT)) == 3


@pytest.mark.django_db
def test_given_sentences_replace_the_splitter_and_tokens_stay_inside(tmp_path: Path) -> None:
    report = load_corpus("src", write(tmp_path / "c.jsonl", [
        {"id": "D1", "text": TEXT, "sentences": SOURCE},
        {"id": "D2", "text": TEXT}]), workers=1)
    assert not report.errors and report.created == 2
    given = list(Document.objects.get(doc_id="D1").sentences.order_by("index"))
    assert [[s.begin, s.end] for s in given] == SOURCE
    for s in given:
        spans = s.token_spans()
        assert spans and all(s.begin <= b < e <= s.end for b, e in spans)
        assert [TEXT[b:e] for b, e in spans][:3] == (["The", "painting", "was"]
                                                     if s.index == 0 else ["It", "hangs", "in"])
    assert "Wenderoth" in [TEXT[b:e] for b, e in given[0].token_spans()]
    split = Document.objects.get(doc_id="D2").sentences.count()
    assert split == 3


@pytest.mark.django_db
@pytest.mark.parametrize(("value", "needle"), [
    ([], "non-empty list"),
    ("0-53", "non-empty list"),
    ([[0, 53], [54]], "sentences[1] must be a pair of integers"),
    ([[0, 53], [54, "71"]], "sentences[1] must be a pair of integers"),
    ([[0, True]], "sentences[0] must be a pair of integers"),
    ([[0, 53], [54, 72]], "<= 71 (the text length)"),
    ([[10, 10]], "0 <= begin < end"),
    ([[0, 53], [50, 71]], "starts before the previous sentence ends (53)"),
    ([[54, 71], [0, 53]], "starts before the previous sentence ends (71)"),
])
def test_bad_sentences_are_refused_by_line_and_field(tmp_path: Path, value: object,
                                                      needle: str) -> None:
    report = load_corpus("bad", write(tmp_path / "c.jsonl", [
        {"id": "OK", "text": TEXT, "sentences": SOURCE},
        {"id": "BAD", "text": TEXT, "sentences": value}]), workers=1)
    [error] = report.errors
    assert error.line == 2 and needle in error.message and "document BAD" in error.message
    assert list(Document.objects.values_list("doc_id", flat=True)) == ["OK"]
