"""Control questions: pairs whose answer the exhaustive gold already knows, mixed into
relation HITs so that every worker is measured against the truth.

A control is an ordinary relation `Question` with `control_answer` set; the task page
renders it like any other question (it has a pair and a position; the page numbers
questions by position, never by id, as controls are created after their batch's test
questions and their ids would tell), so the worker cannot tell. Its answers feed the
quality pass (per-worker control accuracy, the worker model's anchoring) and never
become a `PairLabel` (labels.aggregate completes it without one). Controls are drawn
from mention pairs in completely annotated exhaustive documents that no test question
ever asked about, so no answer counts twice.
"""

from __future__ import annotations

import random

from django.conf import settings

from annotations.models import (
    ExhaustiveDocument,
    GoldRelation,
    Hit,
    HitQuestion,
    Question,
    TaskKind,
)
from kbpo.core.models import Corpus
from submissions.models import MentionPair

from ..interfaces.caps import relation_cap
from ..quality.aggregation import NO_RELATION


def expected_controls(n_test: int, share: float | None = None) -> float:
    """Controls owed to a HIT of `n_test` test questions so that they are `share` of
    its questions (fractional: the planner carries the remainder to the next HIT)."""
    share = settings.KBPO_CONTROL_SHARE if share is None else share
    if share <= 0 or n_test <= 0:
        return 0.0
    if share >= 1:
        raise ValueError(f"KBPO_CONTROL_SHARE={share}: must be below 1 (a share of each HIT)")
    return share * n_test / (1 - share)


def spread(sizes: list[int], share: float | None = None) -> list[int]:
    """Whole controls per HIT for HITs of these sizes, the fractions carried over so
    that the batch as a whole meets the share (5 questions a HIT at 0.1: every other
    HIT has one control)."""
    owed, out = 0.5, []
    for k in sizes:
        owed += expected_controls(k, share)
        out.append(int(owed))
        owed -= out[-1]
    return out


def control_pool(corpus_id: int) -> list[tuple[int, list[str]]]:
    """(pair id, known answer) for every pair usable as a control on the corpus.

    The known answer is the gold predicates on exactly the pair's mentions, or
    ['no_relation'] when the gold has none (the document's gold is complete).
    """
    docs = list(ExhaustiveDocument.objects.filter(
        corpus_id=corpus_id, state=ExhaustiveDocument.State.COMPLETE)
        .values_list("document_id", flat=True))
    if not docs:
        return []
    gold: dict[tuple[int, ...], set[str]] = {}
    for row in GoldRelation.objects.filter(document_id__in=docs).values_list(
            "document_id", "subject_begin", "subject_end", "object_begin", "object_end",
            "predicate"):
        gold.setdefault(row[:5], set()).add(row[5])
    tested = Question.objects.filter(kind=TaskKind.RELATION, control_answer__isnull=True,
                                     pair__isnull=False).values("pair_id")
    pairs = (MentionPair.objects.filter(document_id__in=docs).exclude(pk__in=tested)
             .values_list("pk", "document_id", "subject_begin", "subject_end",
                          "object_begin", "object_end").order_by("pk"))
    known = ((pk, sorted(gold.get(tuple(key), ())) or [NO_RELATION]) for pk, *key in pairs)
    # A pair with more true relations than an answer may mark: no answer could be right.
    cap = relation_cap(Corpus.objects.get(pk=corpus_id).schema)
    return [(pk, answer) for pk, answer in known if len(answer) <= cap]


def add_controls(hit: Hit, chosen: list[tuple[int, list[str]]],
                 rng: random.Random) -> int:
    """Attach these control pairs to a HIT whose test questions are in place, and
    shuffle all positions so that the controls sit anywhere."""
    if not chosen:
        return 0
    controls = [Question.objects.create(corpus_id=hit.corpus_id, kind=TaskKind.RELATION,
                                        pair_id=pair_id, control_answer=answer,
                                        answers_needed=hit.max_assignments)
                for pair_id, answer in chosen]
    items = list(hit.items.all())
    order = list(range(len(items) + len(controls)))
    rng.shuffle(order)
    for item, pos in zip(items, order, strict=False):
        item.position = pos
    HitQuestion.objects.bulk_update(items, ["position"])
    HitQuestion.objects.bulk_create(
        HitQuestion(hit=hit, question=q, position=pos)
        for q, pos in zip(controls, order[len(items):], strict=True))
    return len(controls)


