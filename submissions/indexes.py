"""What validation keeps in memory while it streams a KB file: the current batch's
entities with their mention spans (the rest wait in temporary tables, `ingest_nodes`),
and the corpus documents' texts and sentence bounds (an LRU cache of DOC_CACHE)."""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from kbpo.core.models import Document, Sentence

MASK = (1 << 32) - 1
DOC_CACHE = 20_000
PREFETCH = 500  # documents per query when a batch's documents are loaded at once


class Entity:
    """What pass 2 needs to know about one entity node, kept small.

    Mentions are packed ints `doc<<64 | begin<<32 | end` in a plain list; an entity
    with many mentions switches to a per-document dict so lookups stay fast.
    """

    __slots__ = ("canonical", "line", "link", "mentions", "skip", "type", "type_error")
    SPLIT = 32

    def __init__(self, line: int) -> None:
        self.line = line
        self.type: str | None = None
        self.skip = False
        self.type_error = False  # an invalid type line was reported already
        self.link = ""
        self.canonical = 0  # packed span of the first canonical_mention; 0 = none
        self.mentions: list[int] | dict[int, list[int]] = []

    def add(self, packed: int) -> None:
        ms = self.mentions
        if isinstance(ms, list):
            ms.append(packed)
            if len(ms) > self.SPLIT:
                by_doc: dict[int, list[int]] = {}
                for m in ms:
                    by_doc.setdefault(m >> 64, []).append(m)
                self.mentions = by_doc
        else:
            ms.setdefault(packed >> 64, []).append(packed)

    def in_document(self, pk: int) -> Iterable[int]:
        ms = self.mentions
        if isinstance(ms, list):
            return [m for m in ms if m >> 64 == pk]
        return ms.get(pk, ())

    def first(self) -> int:
        ms = self.mentions
        if isinstance(ms, list):
            return ms[0] if ms else 0
        return next(iter(ms.values()))[0]


class DocumentIndex:
    """Document ids, lengths, texts and sentence boundaries of one corpus, cached."""

    def __init__(self, corpus_id: int) -> None:
        self.ids: dict[str, tuple[int, int]] = {
            doc_id: (pk, length) for doc_id, pk, length in
            Document.objects.filter(corpus_id=corpus_id).values_list("doc_id", "id", "length")}
        self._texts: OrderedDict[int, str] = OrderedDict()
        self._sentences: OrderedDict[int, tuple[list[int], list[int], list[int]]] = \
            OrderedDict()

    def prefetch(self, pks: Iterable[int], texts: bool = False,
                 sentences: bool = False) -> None:
        """Load the uncached texts and/or sentence bounds of `pks`, PREFETCH documents
        a query: fetching them one document at a time costs a round trip each."""
        pks = set(pks)
        if texts:
            missing = [pk for pk in pks if pk not in self._texts][:DOC_CACHE]
            for i in range(0, len(missing), PREFETCH):
                for pk, text in Document.objects.filter(
                        pk__in=missing[i:i + PREFETCH]).values_list("id", "text"):
                    self._remember(self._texts, pk, text)
        if sentences:
            every = [pk for pk in pks if pk not in self._sentences][:DOC_CACHE]
            for i in range(0, len(every), PREFETCH):
                missing = every[i:i + PREFETCH]
                rows: dict[int, tuple[list[int], list[int], list[int]]] = {
                    pk: ([], [], []) for pk in missing}
                for doc, begin, end, sid in Sentence.objects.filter(
                        document_id__in=missing).order_by("document_id", "begin").values_list(
                        "document_id", "begin", "end", "id"):
                    begins, ends, ids = rows[doc]
                    begins.append(begin)
                    ends.append(end)
                    ids.append(sid)
                for pk, bounds in rows.items():
                    self._remember(self._sentences, pk, bounds)

    @staticmethod
    def _remember(cache: OrderedDict[int, Any], pk: int, value: Any) -> None:
        cache[pk] = value
        if len(cache) > DOC_CACHE:
            cache.popitem(last=False)

    def text(self, pk: int) -> str:
        cached = self._texts.get(pk)
        if cached is None:
            cached = Document.objects.values_list("text", flat=True).get(pk=pk)
            self._texts[pk] = cached
            if len(self._texts) > DOC_CACHE:
                self._texts.popitem(last=False)
        else:
            self._texts.move_to_end(pk)
        return cached

    def sentence_of(self, pk: int, begin: int, end: int) -> tuple[int, int, int] | None:
        """(sentence id, begin, end) of the sentence containing [begin, end), if any."""
        cached = self._sentences.get(pk)
        if cached is None:
            rows = list(Sentence.objects.filter(document_id=pk).order_by("begin")
                        .values_list("begin", "end", "id"))
            cached = ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
            self._sentences[pk] = cached
            if len(self._sentences) > DOC_CACHE:
                self._sentences.popitem(last=False)
        else:
            self._sentences.move_to_end(pk)
        begins, ends, ids = cached
        i = bisect.bisect_right(begins, begin) - 1
        if i < 0 or end > ends[i]:
            return None
        return ids[i], begins[i], ends[i]

