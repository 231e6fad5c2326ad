"""The document cache of pass 2 (`DocumentIndex`): least recently used out first, the
documents of the last two batches never, and an eviction that does not walk the whole
cache again on each miss when those batches cite more documents than it holds."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest

from kbpo.core.models import Corpus, Document, Sentence
from submissions import indexes


@pytest.fixture
def pks(db) -> list[int]:
    """60 one-sentence documents, their primary keys in order."""
    corpus = Corpus.objects.create(tag="cache")
    Document.objects.bulk_create(
        Document(corpus=corpus, doc_id=f"D{i}", text=f"doc {i}.", text_sha256="0", length=7)
        for i in range(60))
    docs = list(Document.objects.filter(corpus=corpus).order_by("id"))
    Sentence.objects.bulk_create(Sentence(document=d, index=0, begin=0, end=d.length)
                                 for d in docs)
    return [d.pk for d in docs]


def _cached(index: indexes.DocumentIndex) -> set[int]:
    return set(index._sentences)


@pytest.mark.django_db
def test_eviction_order_and_the_kept_batches(pks: list[int],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexes, "DOC_CACHE", 4)
    monkeypatch.setattr(indexes, "PREFETCH", 2)
    index = indexes.DocumentIndex(Document.objects.get(pk=pks[0]).corpus_id)
    a, b, c = set(pks[0:4]), set(pks[4:8]), set(pks[12:15])
    index.prefetch_batch(a, set())
    assert _cached(index) == a
    index.prefetch_batch(b, set())
    assert _cached(index) == a | b  # over the bound: the batch worked on, the next
    assert index.sentence_of(pks[40], 0, 1) is not None  # a miss outside both batches:
    assert _cached(index) == a | b  # the only evictable entry, out at once
    index.prefetch_batch(c, set())
    assert _cached(index) == b | c  # the batch before last released
    index.prefetch_batch(set(), set())
    assert c <= _cached(index) and len(_cached(index)) == 4  # back to the bound
    # Least recently used out first among the entries not kept.
    index.sentence_of(pks[20], 0, 1)
    index.sentence_of(pks[21], 0, 1)
    assert _cached(index) == c | {pks[21]}
    index.prefetch_batch(set(), set())  # nothing kept any more: a plain LRU
    assert _cached(index) == c | {pks[21]}
    # The released batch went back in a set's order (which depends on the pks): 14 and
    # 12 touched, so 21 and 13 are the two least recently used.
    index.sentence_of(pks[14], 0, 1)
    index.sentence_of(pks[12], 0, 1)
    index.sentence_of(pks[22], 0, 1)  # evicts one of them
    index.sentence_of(pks[23], 0, 1)  # and the other
    assert _cached(index) == {pks[12], pks[14], pks[22], pks[23]}
    # Texts are cached the same way, apart from sentences.
    assert index.text(pks[30]) == "doc 30."
    assert set(index._texts) == {pks[30]}


class _CountingDict(OrderedDict):  # type: ignore[type-arg]
    pops = 0

    def popitem(self, last: bool = True) -> Any:
        _CountingDict.pops += 1
        return super().popitem(last)


@pytest.mark.django_db
def test_misses_beyond_the_bound_cost_no_walk_of_the_cache(
        pks: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Two kept batches of 25 documents with a cache of 5: each document of the second
    loaded by a miss (one by one) used to pop the whole cache and put it back."""
    monkeypatch.setattr(indexes, "DOC_CACHE", 5)
    monkeypatch.setattr(indexes, "OrderedDict", _CountingDict)
    _CountingDict.pops = 0
    index = indexes.DocumentIndex(Document.objects.get(pk=pks[0]).corpus_id)
    index.prefetch_batch(set(pks[:25]), set())  # 5 loaded (the prefetch's own bound)...
    index.prefetch_batch(set(pks[25:50]), set())
    for pk in pks[:50]:  # ... and the rest on a miss each
        index.sentence_of(pk, 0, 1)
    index.prefetch_batch(set(), set())
    assert _cached(index) == set(pks[25:50])
    # At most one pop per entry put in, plus one per entry released (the first batch).
    assert _CountingDict.pops <= 50 + 25
