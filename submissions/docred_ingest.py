"""Ingesting a DocRED result file into a DocRED corpus, as the existing tables hold a
submission, so that planning, the crowd and scoring take it as they take a TAC KB:

- each (document, entity) a prediction uses becomes a `SubmissionEntity` (node
  `DOCID#index`: the entity scheme's entity is the head entity within its document)
  with all its mentions (`SubmissionMention`);
- each (document, head, tail) a `MentionPair` between the two entities' anchors
  (`kbpo.core.docred_docs`), shared with every other submission and with the gold;
- each fact a `RelationInstance` with its relation id as predicate, in the
  prediction's direction (DocRED relations are directed; nothing is folded), and its
  evidence sentences, when given, an `InstanceEvidence`.

`DocredIngestor` has the interface of `ingest.Ingestor` (drop-invalid re-runs it
without the invalid predictions) and must likewise run inside a transaction.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count

from kbpo.core.jsonstream import StreamError, stream_list
from kbpo.core.models import Document, DocumentEntity, Sentence

from .docred_format import CorpusView, DocView, Prediction, check_predictions
from .ingest_sql import submission_stats
from .kbformat import Outcome, Rejected, Report, open_stream
from .models import (
    InstanceEvidence,
    MentionPair,
    RelationInstance,
    Submission,
    SubmissionEntity,
    SubmissionMention,
)

# The stream's generic problems, as a DocRED result file's report names them.
_STREAM_CODES = {"TOO_MANY_ITEMS": "TOO_MANY_PREDICTIONS", "ITEM_TOO_LONG": "PREDICTION_TOO_LONG"}


class DocredIngestor:
    """Validates one DocRED result file and, if it is clean, writes its rows."""

    def __init__(self, submission: Submission, drop_lines: frozenset[int] = frozenset(),
                 drop_nodes: frozenset[str] = frozenset()) -> None:
        self.sub = submission
        self.drop = drop_lines
        self.max_dropped = settings.KBPO_SUBMISSION_MAX_DROPPED
        self.report = Report(settings.KBPO_SUBMISSION_REPORT_MAX, self.max_dropped + 1)
        self.read = 0
        self.kept = 0

    def run(self) -> Outcome:
        corpus = self.sub.corpus
        view = CorpusView.build(
            DocView(pk, doc_id, title, n_sent, n_ent) for pk, doc_id, title, n_sent, n_ent in
            _document_sizes(corpus.pk))
        try:
            with self.sub.file.storage.open(self.sub.file.name, "rb") as fh:
                stream, _ = open_stream(fh)
                preds, self.read = check_predictions(
                    stream_list(stream, what="prediction",
                                max_bytes=settings.KBPO_SUBMISSION_MAX_BYTES,
                                max_items=settings.KBPO_SUBMISSION_MAX_PREDICTIONS,
                                max_item_bytes=settings.KBPO_SUBMISSION_MAX_LINE_BYTES),
                    view, corpus.relation_schema, self.report, self.drop)
        except StreamError as exc:
            self.read = max(self.read, exc.index)
            self.report.add(exc.index + 1, _STREAM_CODES.get(exc.code, exc.code), str(exc),
                            always=True)
            raise self._rejected() from None
        self.kept = len(preds)
        if self.report.errors == 0 and not preds:
            self.report.add(max(self.read, 1), "NO_RELATIONS",
                            "the file contains no valid prediction to evaluate")
        if self.report.errors:
            raise self._rejected()
        n_entities, n_mentions = self._write(preds)
        with connection.cursor() as cursor:
            stats = submission_stats(cursor, self.sub.pk, self._base_stats(), len(preds),
                                     len(view.by_title))
        stats["duplicates_merged"] = self.report.counts.get("DUPLICATE_PREDICTION", 0)
        return Outcome(self.report, stats, self.sub.run_id, n_entities, n_mentions,
                       len(preds))

    def _rejected(self) -> Rejected:
        return Rejected(self.report, self._base_stats(), self.sub.run_id)

    def _base_stats(self) -> dict[str, Any]:
        return {"format": "docred", "lines": self.read, "predictions": self.read,
                "entity_lines": 0, "relation_lines": self.read, "skipped": {},
                "problems_by_code": dict(self.report.counts)}

    def _write(self, preds: list[Prediction]) -> tuple[int, int]:
        sid = self.sub.pk
        docs = {p.doc.pk for p in preds}
        used = {(p.doc.pk, i) for p in preds for i in (p.h, p.t)}
        entities = {(e.document_id, e.index): e for e in DocumentEntity.objects.filter(
            document_id__in=docs)}
        doc_ids = dict(Document.objects.filter(pk__in=docs).values_list("pk", "doc_id"))
        rows = SubmissionEntity.objects.bulk_create([
            SubmissionEntity(submission_id=sid, node=f"{doc_ids[d]}#{i}"[:200],
                             type=entities[(d, i)].type, canonical_document_id=d,
                             canonical_begin=entities[(d, i)].anchor_begin,
                             canonical_end=entities[(d, i)].anchor_end)
            for d, i in sorted(used)], batch_size=2000)
        node_pk = {(d, i): row.pk for (d, i), row in zip(sorted(used), rows, strict=True)}
        mentions = [
            SubmissionMention(submission_id=sid, entity_id=node_pk[(d, i)], document_id=d,
                              begin=b, end=e, type=entities[(d, i)].type,
                              is_canonical=(b, e) == (entities[(d, i)].anchor_begin,
                                                      entities[(d, i)].anchor_end))
            for d, i in sorted(used) for _, b, e in entities[(d, i)].mention_spans()]
        SubmissionMention.objects.bulk_create(mentions, batch_size=5000)
        pairs = self._pairs(preds, entities)
        ordered = sorted(preds, key=lambda p: p.number)
        instances = RelationInstance.objects.bulk_create([
            RelationInstance(submission_id=sid, predicate=p.r, line=p.number,
                             pair_id=pairs[(p.doc.pk, p.h, p.t)],
                             subject_entity_id=node_pk[(p.doc.pk, p.h)],
                             object_entity_id=node_pk[(p.doc.pk, p.t)])
            for p in ordered], batch_size=5000)
        InstanceEvidence.objects.bulk_create([
            InstanceEvidence(instance_id=row.pk, sentences=sorted(p.evidence))
            for p, row in zip(ordered, instances, strict=True) if p.evidence],
            batch_size=5000)
        return len(rows), len(mentions)

    @staticmethod
    def _pairs(preds: list[Prediction], entities: dict[tuple[int, int], DocumentEntity]
               ) -> dict[tuple[int, int, int], int]:
        """The shared pair of every (document, head, tail), created where missing."""
        def spans(d: int, h: int, t: int) -> tuple[int, int, int, int, int]:
            head, tail = entities[(d, h)], entities[(d, t)]
            return (d, head.anchor_begin, head.anchor_end, tail.anchor_begin, tail.anchor_end)

        wanted = {(p.doc.pk, p.h, p.t): spans(p.doc.pk, p.h, p.t) for p in preds}
        docs = {k[0] for k in wanted}

        def existing() -> dict[tuple[int, int, int, int, int], int]:
            return {tuple(row[1:]): row[0] for row in MentionPair.objects.filter(
                document_id__in=docs).values_list("pk", "document_id", "subject_begin",
                                                  "subject_end", "object_begin",
                                                  "object_end")}

        have = existing()
        missing = sorted({s for s in wanted.values() if s not in have})
        if missing:
            # The sentence of a document-level pair is its head anchor's (a NOT NULL key):
            # where its page starts reading, not a limit on the evidence.
            sentence_of = _sentence_index(docs)
            type_at = {(d, x.anchor_begin, x.anchor_end): x.type
                       for (d, _), x in entities.items()}
            MentionPair.objects.bulk_create([
                MentionPair(document_id=d, subject_begin=sb, subject_end=se,
                            object_begin=ob, object_end=oe,
                            sentence_id=sentence_of(d, sb),
                            subject_type=type_at[(d, sb, se)],
                            object_type=type_at[(d, ob, oe)])
                for d, sb, se, ob, oe in missing], batch_size=5000, ignore_conflicts=True)
            have = existing()
        return {k: have[s] for k, s in wanted.items()}


def _sentence_index(docs: set[int]) -> Any:
    by_doc: dict[int, list[tuple[int, int, int]]] = {}
    for pk, d, b, e in Sentence.objects.filter(document_id__in=docs).values_list(
            "pk", "document_id", "begin", "end").order_by("document_id", "index"):
        by_doc.setdefault(d, []).append((b, e, pk))

    def sentence_of(d: int, begin: int) -> int:
        sents = by_doc[d]
        return next((pk for b, e, pk in sents if b <= begin <= e), sents[0][2])
    return sentence_of


def _document_sizes(corpus_id: int) -> list[tuple[int, str, str, int, int]]:
    """(pk, doc id, title, sentences, entities) of every document of the corpus."""
    sentences = Counter(dict(Sentence.objects.filter(document__corpus_id=corpus_id)
                             .values("document_id").annotate(n=Count("id"))
                             .values_list("document_id", "n")))
    entities = Counter(dict(DocumentEntity.objects.filter(document__corpus_id=corpus_id)
                            .values("document_id").annotate(n=Count("id"))
                            .values_list("document_id", "n")))
    return [(pk, doc_id, title, sentences[pk], entities[pk]) for pk, doc_id, title in
            Document.objects.filter(corpus_id=corpus_id).values_list("pk", "doc_id", "title")]


