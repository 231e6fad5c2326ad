"""What validation keeps in memory while it streams a KB file: the current batch's
entities with their mention spans (the rest wait in temporary tables, `ingest_nodes`),
and the corpus documents' texts and sentence bounds (an LRU cache of DOC_CACHE)."""

from __future__ import annotations

import bisect
import contextlib
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
    """Document ids, lengths, texts and sentence boundaries of one corpus, cached.

    The cache keeps DOC_CACHE documents of each kind, least recently used out first,
    but never the documents of the last two batches `prefetch_batch` loaded: pass 2
    loads a batch ahead (the look-ahead), so the one the caller works on is the one
    before, and evicting its documents would make each a query of its own. So the
    cache can hold up to two batches' documents when they exceed DOC_CACHE."""

    def __init__(self, corpus_id: int) -> None:
        self.ids: dict[str, tuple[int, int]] = {
            doc_id: (pk, length) for doc_id, pk, length in
            Document.objects.filter(corpus_id=corpus_id).values_list("doc_id", "id", "length")}
        self._texts: OrderedDict[int, str] = OrderedDict()
        self._sentences: OrderedDict[int, tuple[list[int], list[int], list[int]]] = \
            OrderedDict()
        self._batch: set[int] = set()  # the documents of the batch loaded last
        self._keep: set[int] = set()   # ... and of the one before: never evicted
        # Held around every query: the ingestor sets the stager's lock, which the
        # look-ahead thread holds for a lookup.
        self.lock: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()

    def prefetch_batch(self, sentences: set[int], texts: set[int]) -> None:
        """Load a batch's sentence bounds and texts, keeping the previous batch's."""
        batch = sentences | texts
        self._keep = self._batch | batch
        self._batch = batch
        self.prefetch(sentences, sentences=True)
        self.prefetch(texts, texts=True)
        self._trim(self._sentences)  # back to the bound when older batches were kept
        self._trim(self._texts)

    def prefetch(self, pks: Iterable[int], texts: bool = False,
                 sentences: bool = False) -> None:
        """Load the uncached texts and/or sentence bounds of `pks`, PREFETCH documents
        a query: fetching them one document at a time costs a round trip each."""
        pks = set(pks)
        if texts:
            missing = [pk for pk in pks if pk not in self._texts][:DOC_CACHE]
            for i in range(0, len(missing), PREFETCH):
                with self.lock:
                    rows = list(Document.objects.filter(
                        pk__in=missing[i:i + PREFETCH]).values_list("id", "text"))
                for pk, text in rows:
                    self._texts[pk] = text
                self._trim(self._texts)
        if sentences:
            every = [pk for pk in pks if pk not in self._sentences][:DOC_CACHE]
            for i in range(0, len(every), PREFETCH):
                missing = every[i:i + PREFETCH]
                rows: dict[int, tuple[list[int], list[int], list[int]]] = {
                    pk: ([], [], []) for pk in missing}
                with self.lock:
                    found = list(Sentence.objects.filter(document_id__in=missing)
                                 .order_by("document_id", "begin")
                                 .values_list("document_id", "begin", "end", "id"))
                for doc, begin, end, sid in found:
                    begins, ends, ids = rows[doc]
                    begins.append(begin)
                    ends.append(end)
                    ids.append(sid)
                self._sentences.update(rows)
                self._trim(self._sentences)

    def _trim(self, cache: OrderedDict[int, Any]) -> None:
        """Evict the least recently used beyond DOC_CACHE, the kept batches' excepted
        (moved to the recent end instead)."""
        keep, kept = self._keep, []
        while len(cache) + len(kept) > DOC_CACHE and cache:
            pk, value = cache.popitem(last=False)
            if pk in keep:
                kept.append((pk, value))
        for pk, value in kept:
            cache[pk] = value

    def text(self, pk: int) -> str:
        cached = self._texts.get(pk)
        if cached is None:
            with self.lock:
                cached = Document.objects.values_list("text", flat=True).get(pk=pk)
            self._texts[pk] = cached
            self._trim(self._texts)
        else:
            self._texts.move_to_end(pk)
        return cached

    def sentence_of(self, pk: int, begin: int, end: int) -> tuple[int, int, int] | None:
        """(sentence id, begin, end) of the sentence containing [begin, end), if any."""
        cached = self._sentences.get(pk)
        if cached is None:
            with self.lock:
                rows = list(Sentence.objects.filter(document_id=pk).order_by("begin")
                            .values_list("begin", "end", "id"))
            cached = ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
            self._sentences[pk] = cached
            self._trim(self._sentences)
        else:
            self._sentences.move_to_end(pk)
        begins, ends, ids = cached
        i = bisect.bisect_right(begins, begin) - 1
        if i < 0 or end > ends[i]:
            return None
        return ids[i], begins[i], ends[i]
