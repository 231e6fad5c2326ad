"""What validation keeps in memory while it streams a KB file: the current batch's
entities with their mention spans (the rest wait in temporary tables, `ingest_nodes`),
and the corpus documents' texts and sentence bounds (an LRU cache of DOC_CACHE)."""

from __future__ import annotations

import bisect
import contextlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator
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


class _Cache:
    """One kind of cached document data: an LRU part and the pinned entries taken out
    of it. `trim` moves a kept entry it reaches to `pinned` (a kept one is never
    evicted) instead of back to the recent end, so a cache that is mostly kept is not
    walked through again on every miss: each entry is popped once per insertion or
    unpinning, O(1) amortised."""

    __slots__ = ("lru", "pinned")

    def __init__(self) -> None:
        self.lru: OrderedDict[int, Any] = OrderedDict()
        self.pinned: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.lru) + len(self.pinned)

    def __contains__(self, pk: object) -> bool:
        return pk in self.lru or pk in self.pinned

    def __iter__(self) -> Iterator[int]:
        yield from self.lru
        yield from self.pinned

    def clear(self) -> None:
        self.lru.clear()
        self.pinned.clear()

    def get(self, pk: int) -> Any:
        """The cached value (None if absent), marked the most recently used."""
        value = self.pinned.get(pk)
        if value is None:
            value = self.lru.get(pk)
            if value is not None:
                self.lru.move_to_end(pk)
        return value

    def put(self, pk: int, value: Any) -> None:
        if pk in self.pinned:
            self.pinned[pk] = value
        else:
            self.lru[pk] = value

    def unpin(self, keep: set[int]) -> None:
        """Return the pinned entries no longer kept to the LRU part, as the most
        recently used (they were in one of the last batches). O(pinned), which is at
        most the two batches before: amortised over their prefetch."""
        pinned = self.pinned
        for pk in [pk for pk in pinned if pk not in keep]:
            self.lru[pk] = pinned.pop(pk)

    def trim(self, keep: set[int]) -> None:
        """Evict the least recently used beyond DOC_CACHE, the kept excepted (pinned)."""
        lru, pinned = self.lru, self.pinned
        while len(lru) + len(pinned) > DOC_CACHE and lru:
            pk, value = lru.popitem(last=False)
            if pk in keep:
                pinned[pk] = value


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
        self._texts = _Cache()      # pk -> text
        self._sentences = _Cache()  # pk -> (begins, ends, sentence ids)
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
        self._texts.unpin(self._keep)
        self._sentences.unpin(self._keep)
        self.prefetch(sentences, sentences=True)
        self.prefetch(texts, texts=True)
        self._sentences.trim(self._keep)  # back to the bound when older batches were kept
        self._texts.trim(self._keep)

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
                    self._texts.put(pk, text)
                self._texts.trim(self._keep)
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
                for pk, row in rows.items():
                    self._sentences.put(pk, row)
                self._sentences.trim(self._keep)

    def text(self, pk: int) -> str:
        cached = self._texts.get(pk)
        if cached is None:
            with self.lock:
                cached = Document.objects.values_list("text", flat=True).get(pk=pk)
            self._texts.put(pk, cached)
            self._texts.trim(self._keep)
        return cached

    def sentence_of(self, pk: int, begin: int, end: int) -> tuple[int, int, int] | None:
        """(sentence id, begin, end) of the sentence containing [begin, end), if any."""
        cached = self._sentences.get(pk)
        if cached is None:
            with self.lock:
                rows = list(Sentence.objects.filter(document_id=pk).order_by("begin")
                            .values_list("begin", "end", "id"))
            cached = ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
            self._sentences.put(pk, cached)
            self._sentences.trim(self._keep)
        begins, ends, ids = cached
        i = bisect.bisect_right(begins, begin) - 1
        if i < 0 or end > ends[i]:
            return None
        return ids[i], begins[i], ends[i]
