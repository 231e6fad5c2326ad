"""Pass 2's look-ahead: the next batch's lookup runs in a helper thread on the same
connection. The caller's document cache keeps the batch it works on, the caller runs no
statement during a lookup, and a lookup's error is the one raised."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, transaction

from submissions import indexes, ingest_lines, ingest_nodes
from submissions.ingest import Ingestor
from submissions.models import Submission
from submissions.processing import run_ingestion

from .kb import to_bytes, valid_lines

pytestmark = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="the look-ahead thread needs Postgres")


def _misses(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Record every document the cache did not hold when pass 2 asked for it."""
    missed: list[tuple[str, int]] = []
    text, sentence_of = indexes.DocumentIndex.text, indexes.DocumentIndex.sentence_of

    def spy_text(self, pk):  # type: ignore[no-untyped-def]
        if pk not in self._texts:
            missed.append(("text", pk))
        return text(self, pk)

    def spy_sentence(self, pk, begin, end):  # type: ignore[no-untyped-def]
        if pk not in self._sentences:
            missed.append(("sentences", pk))
        return sentence_of(self, pk, begin, end)

    monkeypatch.setattr(indexes.DocumentIndex, "text", spy_text)
    monkeypatch.setattr(indexes.DocumentIndex, "sentence_of", spy_sentence)
    return missed


@pytest.mark.django_db
def test_loading_the_next_batch_keeps_the_current_batchs_documents(
        stored: Callable[..., Submission], monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache of one document and one relation line a batch: the file's relations
    move from D1 to D2, so loading the line on D2 ahead used to evict D1 while the line
    on D1 still needed it (one query per document, from the caller's thread)."""
    monkeypatch.setattr(indexes, "DOC_CACHE", 1)
    monkeypatch.setattr(ingest_lines, "BATCH_LINES", 1)
    missed = _misses(monkeypatch)
    sub = stored(to_bytes(valid_lines()))
    assert run_ingestion(sub.pk) == "ingested"
    assert missed == []
    # The bound holds again once the two batches are past.
    docs = indexes.DocumentIndex(sub.corpus_id)
    pks = [pk for pk, _ in docs.ids.values()]
    docs.prefetch_batch({pks[0]}, set())
    docs.prefetch_batch({pks[1]}, set())
    assert len(docs._sentences) == 2  # both kept: the one before is being worked on
    docs.prefetch_batch(set(), set())  # the second is now the one worked on
    assert list(docs._sentences) == [pks[1]]


@pytest.mark.django_db
def test_the_callers_document_queries_wait_for_the_lookup(
        stored: Callable[..., Submission], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each relation line waits until the thread is inside a lookup, then finds its
    documents gone from the cache: its queries must not run until the lookup ends."""
    inside = threading.Event()
    overlapped: list[str] = []
    lookup = ingest_nodes.NodeStore.lookup

    def slow_lookup(self, keys):  # type: ignore[no-untyped-def]
        inside.set()
        try:
            threading.Event().wait(0.05)  # widen the window
            return lookup(self, keys)
        finally:
            inside.clear()

    relation_line = Ingestor._relation_line

    def evicting_line(self, number, cols, stager):  # type: ignore[no-untyped-def]
        inside.wait(0.5)  # (the last batch has no lookup after it)
        self.docs._texts.clear()
        self.docs._sentences.clear()
        return relation_line(self, number, cols, stager)

    def watch(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        if inside.is_set() and threading.current_thread() is threading.main_thread():
            overlapped.append(sql)
        return execute(sql, params, many, context)

    monkeypatch.setattr(ingest_nodes.NodeStore, "lookup", slow_lookup)
    monkeypatch.setattr(Ingestor, "_relation_line", evicting_line)
    monkeypatch.setattr(ingest_lines, "BATCH_LINES", 2)
    sub = stored(to_bytes(valid_lines()))
    with connection.execute_wrapper(watch):
        assert run_ingestion(sub.pk) == "ingested"
    assert overlapped == []


@pytest.mark.django_db(transaction=True)
def test_a_failed_lookup_is_the_error_raised(stored: Callable[..., Submission],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread's lookup fails (aborting the transaction) while the caller works:
    the caller's next statement fails as "transaction aborted", and the lookup's own
    error is the one raised, with the caller's as its context; the thread is done."""
    failed = threading.Event()
    calls: list[int] = []
    lookup = ingest_nodes.NodeStore.lookup

    def broken_lookup(self, keys):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:  # the first look-ahead
            try:
                self.cursor.execute("SELECT 1 / 0")
            finally:
                failed.set()
        return lookup(self, keys)

    relation_line = Ingestor._relation_line

    def waiting_line(self, number, cols, stager):  # type: ignore[no-untyped-def]
        failed.wait(2)
        with connection.cursor() as cur:  # any statement of the caller's
            cur.execute("SELECT 1")
        return relation_line(self, number, cols, stager)

    monkeypatch.setattr(ingest_nodes.NodeStore, "lookup", broken_lookup)
    monkeypatch.setattr(Ingestor, "_relation_line", waiting_line)
    monkeypatch.setattr(ingest_lines, "BATCH_LINES", 2)
    sub = stored(to_bytes(valid_lines()))
    with pytest.raises(Exception, match="division by zero") as raised, transaction.atomic():
        Ingestor(sub).run()
    assert "current transaction is aborted" in str(raised.value.__context__)
    assert len(calls) == 2  # nothing ran after the failure
