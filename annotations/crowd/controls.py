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

Which controls a batch gets (`ordered`): the pair types its test questions ask about,
weighted towards the types whose usual relations the crowd's control answers pin down
least (the false-yes rate a relation is said with where it does not hold): a crowd that
says one plausible relation too easily is measured where it errs, and the measurement
moves on once it is sure.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from django.conf import settings

from annotations.models import (
    ExhaustiveDocument,
    GoldRelation,
    Hit,
    HitQuestion,
    Question,
    Response,
    TaskKind,
)
from kbpo.core.models import Corpus
from kbpo.core.schemas import RelationSchema, get_schema
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


class Control(NamedTuple):
    """A pair usable as a control: its id, known answer and (subject, object) types."""

    pair_id: int
    answer: list[str]
    types: tuple[str, str]


def control_pool(corpus_id: int) -> list[tuple[int, list[str]]]:
    """(pair id, known answer) for every pair usable as a control on the corpus.

    The known answer is the gold predicates on exactly the pair's mentions, or
    ['no_relation'] when the gold has none (the document's gold is complete).
    """
    return [(c.pair_id, c.answer) for c in controls_of(corpus_id)]


def controls_of(corpus_id: int) -> list[Control]:
    """`control_pool` with each pair's types."""
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
                          "object_begin", "object_end", "subject_type", "object_type")
             .order_by("pk"))
    known = (Control(pk, sorted(gold.get(tuple(key[:5]), ())) or [NO_RELATION],
                     (key[5], key[6])) for pk, *key in pairs)
    # A pair with more true relations than an answer may mark: no answer could be right.
    cap = relation_cap(Corpus.objects.get(pk=corpus_id).schema)
    return [c for c in known if len(c.answer) <= cap]


# The false-yes rate a relation is assumed to have before any control measured it, and
# the weight of that assumption in answers: a Beta(0.5, 9.5) prior, the crowd model's
# prior mean for the crowd's rate (0.05) held loosely, so a few answers move it.
PRIOR_RATE, PRIOR_ANSWERS = 0.05, 10.0
# Share of the controls drawn in proportion to the pool rather than to the batch's
# demand: every type keeps being measured a little.
POOL_SHARE = 0.1
# Control answers read to judge how sure the crowd's rates are: the latest ones.
RECENT_ANSWERS = 20_000


def false_yes_spread(answers: Iterable[tuple[Sequence[str], Sequence[str],
                                             tuple[str, str]]],
                     schema: RelationSchema) -> dict[str, float]:
    """Per relation, the posterior sd of the rate at which workers name it on control
    pairs whose known answer lacks it, counting only pairs whose types usually take it
    (where a plausible relation is said too easily). ``answers``: (known answer, the
    worker's choices, the pair's types). A relation never measured has the prior's sd."""
    said: Counter[str] = Counter()
    exposed: Counter[str] = Counter()
    usual: dict[tuple[str, str], list[str]] = {}
    for known, chosen, types in answers:
        if types not in usual:
            usual[types] = [r.id for r in schema.candidates(*types)]
        for r in usual[types]:
            if r not in known:
                exposed[r] += 1
                said[r] += r in chosen
    out = {}
    for r in schema.relations:
        n = exposed[r] + PRIOR_ANSWERS
        p = (said[r] + PRIOR_RATE * PRIOR_ANSWERS) / n
        out[r] = math.sqrt(p * (1 - p) / (n + 1))
    return out


def type_weights(pool_types: Sequence[tuple[str, str]], demand: Mapping[tuple[str, str], int],
                 spread: Mapping[str, float], schema: RelationSchema) -> list[float]:
    """A weight per pool control: its type's share of the controls over the type's
    controls in the pool. A type's share: (1 − POOL_SHARE) of them in proportion to the
    batch's test questions of that type (``demand``) times how unsure the least-measured
    relation its types usually take is (``spread``: `false_yes_spread`), POOL_SHARE in
    proportion to the pool."""
    supply = Counter(pool_types)
    # A type that usually takes no relation measures the crowd at large: the mean.
    overall = sum(spread.values()) / len(spread) if spread else 1.0
    unsure = {t: max((spread.get(r.id, 0.0) for r in schema.candidates(*t)), default=overall)
              for t in supply}
    asked = {t: demand.get(t, 0) * unsure[t] for t in supply}
    total_asked, total_pool = sum(asked.values()), sum(supply.values())
    share = {t: POOL_SHARE * supply[t] / total_pool
             + (1 - POOL_SHARE) * (asked[t] / total_asked if total_asked > 0
                                   else supply[t] / total_pool) for t in supply}
    return [share[t] / supply[t] for t in pool_types]


def ordered(pool: list[Control], weights: Sequence[float], rng: random.Random) -> list[Control]:
    """The pool in a weighted random order without replacement, the first to draw
    last (for ``pop()``): each control's key is log(u)/w (Efraimidis and Spirakis)."""
    keys = [math.log(1.0 - rng.random()) / w if w > 0 else -math.inf for w in weights]
    order = sorted(range(len(pool)), key=keys.__getitem__)
    return [pool[k] for k in order]


def batch_pool(corpus_id: int, tested: Sequence[int], rng: random.Random) -> list[Control]:
    """The corpus's controls ordered for a batch whose test questions ask about the
    pairs ``tested`` (their ids): ``pop()`` gives the next control to place."""
    pool = controls_of(corpus_id)
    if not pool:
        return []
    schema = get_schema(Corpus.objects.get(pk=corpus_id).schema)
    demand = Counter(MentionPair.objects.filter(pk__in=list(tested))
                     .values_list("subject_type", "object_type"))
    recent = (Response.objects.filter(question__corpus_id=corpus_id, counted=True,
                                      question__control_answer__isnull=False)
              .order_by("-pk").values_list("question__control_answer", "choices",
                                           "question__pair__subject_type",
                                           "question__pair__object_type")[:RECENT_ANSWERS])
    spread = false_yes_spread(((known, chosen, (s, o)) for known, chosen, s, o in recent),
                              schema)
    return ordered(pool, type_weights([c.types for c in pool], demand, spread, schema), rng)


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


