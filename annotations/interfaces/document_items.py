"""Relation questions on document-level pairs (a corpus on a schema whose instances are
entity pairs, such as DocRED): the page items built from the stored entities and the
evidence sentences the requesting system cited."""

from __future__ import annotations

from django.db.models import QuerySet

from annotations.models import Question
from kbpo.core.models import DocumentEntity
from kbpo.core.schemas import ENTITY_PAIR, get_schema
from submissions.models import InstanceEvidence, MentionPair

from . import taskdata


def is_document_level(pair: MentionPair) -> bool:
    return get_schema(pair.document.corpus.schema).unit == ENTITY_PAIR


def _entity(pair: MentionPair, begin: int, end: int) -> taskdata.EntityView:
    # A pair's spans are its entities' anchors, unique within the document.
    entity = DocumentEntity.objects.filter(document_id=pair.document_id, anchor_begin=begin,
                                           anchor_end=end).first()
    if entity is None:  # the page says the task is misconfigured (views.hit_task)
        raise ValueError(f"pair {pair.pk}: no entity of {pair.document.doc_id} is anchored "
                         f"at {begin}-{end}")
    return taskdata.EntityView(entity.name, entity.type,
                               [(b, e) for _, b, e in entity.mention_spans()])


def _evidence(pair: MentionPair, submission_id: int | None, among: QuerySet | None) -> list[int]:
    """The sentences the requesting system cited for any relation on this pair (on the
    try-it pages, `among`'s systems: never a private one's on a public page)."""
    rows = InstanceEvidence.objects.filter(instance__pair=pair)
    if submission_id is not None:
        rows = rows.filter(instance__submission_id=submission_id)
    elif among is not None:
        rows = rows.filter(instance__submission__in=among)
    else:
        return []
    return sorted({i for sentences in rows.values_list("sentences", flat=True) for i in sentences})


def document_relation_item(qid: int, question: Question, view: taskdata.DocView,
                           among: QuerySet | None = None) -> dict:
    pair = question.pair
    assert pair is not None
    return taskdata.document_relation_item(
        qid, view, _entity(pair, pair.subject_begin, pair.subject_end),
        _entity(pair, pair.object_begin, pair.object_end),
        _evidence(pair, question.requested_by_id, among), pair.document.corpus.schema)
