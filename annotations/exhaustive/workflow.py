"""The exhaustive-annotation workflow of one document.

`planned` → an entity task (one `entity` question, k workers, reward per token) →
token-level majority (`annotations.quality.mentions`) → `GoldMention`s → `relations`:
one exhaustive task over every same-sentence pair of aggregated mentions with
compatible types (reward per pair) → majority per pair → `GoldRelation`s → `complete`,
and `labels_changed` so scores are recomputed. On a DocRED-schema corpus the entities are
given: `planned` → one fact question and HIT per group of head entities (`docred_facts`)
→ majority per fact within each group, once all groups are answered → the document's
gold, stored as imported DocRED gold is → `complete`. Every step is a Celery task that
re-reads the database under a row lock, so it is safe to run twice; new HITs are posted
only after their rows are committed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotations.crowd.backends import post_hit
from annotations.crowd.review import enqueue_review
from annotations.interfaces.candidates import document_pairs
from annotations.models import (
    ExhaustiveDocument,
    ExhaustiveStage,
    GoldMention,
    GoldRelation,
    Hit,
    HitQuestion,
    HitState,
    Question,
    QuestionState,
    Response,
    TaskKind,
)
from annotations.quality.mentions import aggregate_mentions, document_tokens
from annotations.signals import labels_changed
from kbpo.core import jobs
from kbpo.core.models import Corpus, Document, Sentence
from kbpo.core.schema import NO_RELATION, predicates_for
from kbpo.core.schemas import get_schema

from . import docred_facts
from .gold import store_document_gold

State = ExhaustiveDocument.State
# Task names (exhaustive/tasks.py): services queue work by name.
START_TASK = "annotations.exhaustive.start_entity_task"
POST_TASK = "annotations.exhaustive.post_document_hit"
AGGREGATE_TASK = "annotations.exhaustive.aggregate_document_question"


DOCUMENT_KINDS = (TaskKind.ENTITY, TaskKind.EXHAUSTIVE)
CENT = Decimal("0.01")
# --- tasks: creation ---------------------------------------------------------------


def _dollars(value: float) -> Decimal:
    return max(CENT, Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP))


def entity_reward(n_tokens: int) -> Decimal:
    """Reward per assignment of an entity task: tokens × the per-token rate."""
    return _dollars(n_tokens * settings.KBPO_EXHAUSTIVE_REWARD_PER_TOKEN_USD)


def exhaustive_reward(n_pairs: int) -> Decimal:
    """Reward per assignment of an exhaustive-relations task: pairs × the per-pair rate."""
    return _dollars(n_pairs * settings.KBPO_EXHAUSTIVE_REWARD_PER_PAIR_USD)


def fact_reward(n_tokens: int, n_heads: int, n_entities: int) -> Decimal:
    """Reward per assignment of a DocRED exhaustive task: the document's tokens × the
    per-token rate (it is read whole) + the ordered entity pairs it covers (its heads ×
    the other entities) × the per-entity-pair rate."""
    return _dollars(n_tokens * settings.KBPO_EXHAUSTIVE_REWARD_PER_TOKEN_USD
                    + n_heads * max(0, n_entities - 1)
                    * settings.KBPO_EXHAUSTIVE_REWARD_PER_ENTITY_PAIR_USD)


def _new_hit(corpus_id: int, kind: str, question: Question, reward: Decimal) -> Hit:
    k = question.answers_needed
    hit = Hit.objects.create(corpus_id=corpus_id, kind=kind, backend=settings.KBPO_CROWD_BACKEND,
                             state=HitState.PENDING, max_assignments=k, reward=reward,
                             cost_estimate=reward * k)
    HitQuestion.objects.create(hit=hit, question=question, position=0)
    return hit


def _enqueue_post(hit_id: int) -> None:
    jobs.enqueue(POST_TASK, hit_id)


def create_entity_task(exdoc_id: int) -> int | None:
    """Create the entity question and HIT of a planned document; its HIT id, or None."""
    with transaction.atomic():
        exdoc = (ExhaustiveDocument.objects.select_for_update(of=("self",))
                 .select_related("document")
                 .filter(pk=exdoc_id).first())
        if exdoc is None or exdoc.state != State.PLANNED:
            return None
        doc = exdoc.document
        if Question.objects.filter(document=doc, kind__in=DOCUMENT_KINDS,
                                   state=QuestionState.OPEN).exists():
            return None
        n_tokens = sum(len(t) // 2 for t in Sentence.objects.filter(document=doc)
                       .values_list("tokens", flat=True))
        if docred_facts.is_document_level(exdoc.corpus):
            return _create_fact_tasks(exdoc, n_tokens)
        question = Question.objects.create(corpus_id=exdoc.corpus_id, kind=TaskKind.ENTITY,
                                           document=doc,
                                           answers_needed=settings.KBPO_ANSWERS_PER_QUESTION)
        hit = _new_hit(exdoc.corpus_id, TaskKind.ENTITY, question, entity_reward(n_tokens))
        exdoc.state = State.ENTITIES
        exdoc.save(update_fields=["state"])
        _enqueue_post(hit.pk)
    return hit.pk


def _create_fact_tasks(exdoc: ExhaustiveDocument, n_tokens: int) -> int | None:
    """A DocRED document (entities given): its gold mentions from the vertexSet (so stage
    2 can search the seed entities' names at once), then one fact question and HIT per
    head group (`docred_facts`); the first HIT's id. Fewer than two entities: complete
    with no facts. Called under the document's row lock."""
    doc = exdoc.document
    entities = docred_facts.document_entities(doc)
    GoldMention.objects.filter(document=doc).delete()
    GoldMention.objects.bulk_create(
        GoldMention(document=doc, begin=m.begin, end=m.end, type=m.type, entity=m.entity,
                    canonical=m.canonical, source="crowd")
        for m in docred_facts.entity_mentions(entities))
    groups = docred_facts.head_groups(len(entities))
    if not groups:
        _complete_facts(exdoc, entities, set())
        return None
    hits = []
    for heads in groups:
        question = Question.objects.create(
            corpus_id=exdoc.corpus_id, kind=TaskKind.EXHAUSTIVE, document=doc,
            answers_needed=settings.KBPO_ANSWERS_PER_QUESTION, head_entities=heads)
        hits.append(_new_hit(exdoc.corpus_id, TaskKind.EXHAUSTIVE, question,
                             fact_reward(n_tokens, len(heads), len(entities))))
    exdoc.state = State.RELATIONS
    exdoc.save(update_fields=["state"])
    for hit in hits:
        _enqueue_post(hit.pk)
    return hits[0].pk


def start_planned(corpus: Corpus) -> int:
    """Enqueue entity-task creation for every planned document of the corpus."""
    ids = list(ExhaustiveDocument.objects.filter(corpus=corpus, state=State.PLANNED)
               .values_list("pk", flat=True))
    for pk in ids:
        jobs.send(START_TASK, pk)
    return len(ids)


def post_hit_safely(hit_id: int) -> str:
    """Post a pending document HIT through the configured backend; errors are kept."""
    hit = Hit.objects.filter(pk=hit_id).first()
    if hit is None or hit.state != HitState.PENDING:
        return "skipped"
    try:
        post_hit(hit)
    except ValueError as exc:  # e.g. a backend this deployment cannot post to
        Hit.objects.filter(pk=hit_id).update(post_error=str(exc)[:2000])
        return "error"
    return "posted"


# --- candidate pairs ---------------------------------------------------------------


@dataclass(frozen=True)
class CandidatePair:
    """A same-sentence pair of gold mentions in canonical order (subject first)."""

    subject: tuple[int, int]
    subject_type: str
    object: tuple[int, int]
    object_type: str
    sentence_id: int
    subject_entity: str

    @property
    def options(self) -> list[str]:
        return predicates_for(self.subject_type, self.object_type)


def exhaustive_candidate_pairs(document: Document) -> list[CandidatePair]:
    """The pairs an exhaustive-relations task asks about, as the task page shows them.

    The pair list itself comes from `annotations.interfaces.candidates.document_pairs`, which the
    page and the intake validation use too, so the three can never disagree.
    """
    sentence_ids = list(Sentence.objects.filter(document=document).order_by("index")
                        .values_list("pk", flat=True))
    return [CandidatePair((p.subject.begin, p.subject.end), p.subject.type,
                          (p.object.begin, p.object.end), p.object.type,
                          sentence_ids[p.sentence_index], p.subject.entity)
            for p in document_pairs(document)]


# --- aggregation -------------------------------------------------------------------


def _pair_answers(extra: object) -> dict[tuple[int, int, int, int], set[str]]:
    """One worker's exhaustive answer as {(sb, se, ob, oe): choices}; malformed items dropped."""
    out: dict[tuple[int, int, int, int], set[str]] = {}
    items = extra.get("relations") if isinstance(extra, dict) else None
    if not isinstance(items, list):
        return out
    for item in items:
        try:
            (sb, se), (ob, oe) = item["subject"], item["object"]
            choices = item["choices"]
            key = (int(sb), int(se), int(ob), int(oe))
        except (KeyError, TypeError, ValueError):
            continue
        if isinstance(choices, list):
            out[key] = {c for c in choices if isinstance(c, str)}
    return out


def aggregate_relations(candidates: Sequence[CandidatePair], answers: Sequence[object]
                        ) -> dict[CandidatePair, list[str]]:
    """Majority per candidate pair over the workers' `extra` payloads.

    A predicate holds when more than half of the workers marked it (several may, as
    in relation verification); a pair a worker left out counts as `no_relation` from
    that worker, and choices not valid for the pair's types are ignored.
    """
    k = len(answers)
    per_worker = [_pair_answers(a) for a in answers]
    out: dict[CandidatePair, list[str]] = {}
    for c in candidates:
        key = (*c.subject, *c.object)
        options = set(c.options)
        votes: Counter = Counter()
        for ans in per_worker:
            chosen = ans.get(key, {NO_RELATION})
            if NO_RELATION in chosen:
                continue
            votes.update(chosen & options)
        held = sorted(p for p, n in votes.items() if 2 * n > k)
        if held:
            out[c] = held
    return out


def _finish_hit(hit_ids: Iterable[int]) -> None:
    """Mark HITs complete whose questions are all answered (no further assignments)."""
    for hit_id in hit_ids:
        if not Question.objects.filter(hits__pk=hit_id, state=QuestionState.OPEN).exists():
            done = Hit.objects.filter(pk=hit_id, state__in=[HitState.POSTED, HitState.PENDING]
                                      ).update(state=HitState.COMPLETE)
            if done:  # approve and pay the workers, as for verification HITs
                transaction.on_commit(lambda h=hit_id: enqueue_review(h))


def _answers(question: Question) -> list[object]:
    # A rejected assignment's answers do not count (crowd/discount.py).
    return list(Response.objects.filter(question=question, counted=True).order_by("pk")
                .values_list("extra", flat=True))


def complete_document_question(question_id: int) -> str:
    """Aggregate an entity or exhaustive question once it has its answers (idempotent)."""
    with transaction.atomic():
        q = (Question.objects.select_for_update(of=("self",)).select_related("document")
             .filter(pk=question_id, kind__in=DOCUMENT_KINDS).first())
        if q is None or q.document is None:
            return "missing"
        if q.state != QuestionState.OPEN:
            return f"skipped ({q.state})"
        answers = _answers(q)
        if len(answers) < q.answers_needed:
            return f"waiting ({len(answers)}/{q.answers_needed} answers)"
        exdoc = ExhaustiveDocument.objects.select_for_update().filter(
            document=q.document).first()
        q.state = QuestionState.COMPLETE
        q.completed_at = timezone.now()
        q.save(update_fields=["state", "completed_at"])
        _finish_hit(q.hits.values_list("pk", flat=True))
        if exdoc is None or exdoc.state == State.COMPLETE:
            return "document already complete"
        if q.kind == TaskKind.ENTITY:
            return _entities_done(exdoc, q, answers)
        if q.head_entities is not None:
            return _facts_done(exdoc)
        return _relations_done(exdoc, answers)


def _entities_done(exdoc: ExhaustiveDocument, q: Question, answers: list[object]) -> str:
    doc = q.document
    assert doc is not None
    tokens = document_tokens(Sentence.objects.filter(document=doc).order_by("index")
                             .values_list("tokens", flat=True))
    result = aggregate_mentions(
        tokens, [a.get("mentions") if isinstance(a, dict) else None for a in answers],
        length=doc.length)
    GoldMention.objects.filter(document=doc).delete()
    GoldMention.objects.bulk_create(
        GoldMention(document=doc, begin=m.begin, end=m.end, type=m.type, entity=m.entity,
                    canonical=m.canonical, link=m.link[:500], source="crowd")
        for m in result.mentions)
    pairs = exhaustive_candidate_pairs(doc)
    if not pairs:  # nothing can be related: the document has no true instances
        return _complete(exdoc, [])
    question = Question.objects.create(corpus_id=exdoc.corpus_id, kind=TaskKind.EXHAUSTIVE,
                                       document=doc, answers_needed=q.answers_needed)
    hit = _new_hit(exdoc.corpus_id, TaskKind.EXHAUSTIVE, question,
                   exhaustive_reward(len(pairs)))
    exdoc.state = State.RELATIONS
    exdoc.save(update_fields=["state"])
    _enqueue_post(hit.pk)
    return f"{len(result.mentions)} mentions, {len(pairs)} candidate pairs"


def _relations_done(exdoc: ExhaustiveDocument, answers: list[object]) -> str:
    doc = exdoc.document
    held = aggregate_relations(exhaustive_candidate_pairs(doc), answers)
    rows = [GoldRelation(document=doc, subject_begin=c.subject[0], subject_end=c.subject[1],
                         object_begin=c.object[0], object_end=c.object[1], predicate=p,
                         subject_entity=c.subject_entity, sentence_id=c.sentence_id,
                         source="crowd")
            for c, preds in held.items() for p in preds]
    return _complete(exdoc, rows)


def _facts_done(exdoc: ExhaustiveDocument) -> str:
    """A DocRED document's gold once every head group is answered: per group, the facts
    most of its workers listed; their union is the document's complete gold."""
    doc = exdoc.document
    groups = list(Question.objects.filter(document=doc, kind=TaskKind.EXHAUSTIVE,
                                          head_entities__isnull=False)
                  .exclude(state=QuestionState.CANCELLED).order_by("pk"))
    waiting = sum(1 for g in groups if g.state == QuestionState.OPEN)
    if waiting:
        return f"waiting for {waiting} of {len(groups)} head groups"
    entities = docred_facts.document_entities(doc)
    relations = frozenset(get_schema(exdoc.corpus.schema).relations)
    facts: set[docred_facts.Fact] = set()
    for g in groups:
        facts |= docred_facts.aggregate_facts(g.head_entities, len(entities), relations,
                                              _answers(g))
    return _complete_facts(exdoc, entities, facts)


def _complete_facts(exdoc: ExhaustiveDocument, entities: list[docred_facts.Entity],
                    facts: set[docred_facts.Fact]) -> str:
    """Store a DocRED document's facts as its complete gold, exactly as imported gold
    is stored (anchors' pairs, every mention), with source `crowd`."""
    store_document_gold(exdoc.corpus, exdoc.document, docred_facts.entity_mentions(entities),
                        docred_facts.gold_relations(entities, facts), source="crowd")
    corpus_id = exdoc.corpus_id
    transaction.on_commit(lambda: labels_changed.send(sender=ExhaustiveDocument,
                                                      corpus_id=corpus_id))
    return f"complete: {len(facts)} true facts"


def _complete(exdoc: ExhaustiveDocument, relations: list[GoldRelation]) -> str:
    GoldRelation.objects.filter(document=exdoc.document).delete()
    GoldRelation.objects.bulk_create(relations)
    exdoc.state = State.COMPLETE
    exdoc.completed_at = timezone.now()
    exdoc.save(update_fields=["state", "completed_at"])
    corpus_id = exdoc.corpus_id
    transaction.on_commit(lambda: labels_changed.send(sender=ExhaustiveDocument,
                                                      corpus_id=corpus_id))
    return f"complete: {len(relations)} true instances"


def on_answers_stored(sender: object, hit_id: int, question_ids: list[int],
                      **kwargs: object) -> None:
    """Aggregate document questions that may now have all their answers.

    Only entity and exhaustive questions are handled here; relation questions belong
    to the crowd pipeline.
    """
    ready = (Question.objects.filter(pk__in=question_ids, kind__in=DOCUMENT_KINDS,
                                     state=QuestionState.OPEN)
             .annotate(n=Count("responses", filter=Q(responses__counted=True)))
             .values_list("pk", "n", "answers_needed"))
    for pk, n, needed in ready:
        if n >= needed:
            jobs.send(AGGREGATE_TASK, pk)

# --- progress ----------------------------------------------------------------------


def progress(corpus: Corpus) -> dict:
    """Counts per stage and state, gold totals and crowd cost, for operators."""
    rows = (ExhaustiveDocument.objects.filter(corpus=corpus).values("stage", "state")
            .annotate(n=Count("pk")))
    table: dict[str, dict[str, int]] = {s: dict.fromkeys(State.values, 0)
                                        for s in ExhaustiveStage.values}
    for r in rows:
        table[r["stage"]][r["state"]] = r["n"]
    hits = Hit.objects.filter(corpus=corpus, kind__in=DOCUMENT_KINDS)
    cost = sum((reward * n for reward, n in hits.annotate(n=Count("assignments"))
                .values_list("reward", "n")), Decimal("0"))
    complete = Q(document__exhaustive__state=State.COMPLETE, document__corpus=corpus)
    return {
        "stages": table,
        "totals": {s: sum(table[s].values()) for s in table},
        "complete": sum(table[s][State.COMPLETE] for s in table),
        "documents": sum(sum(v.values()) for v in table.values()),
        "mentions": GoldMention.objects.filter(complete).count(),
        "relations": GoldRelation.objects.filter(complete).count(),
        # Imported gold completes planned documents in their own stage (the sample design
        # stays); the `imported` stage counts only documents the import added outside it.
        "from_import": len(
            set(GoldMention.objects.filter(complete, source="import")
                .values_list("document_id", flat=True).distinct())
            | set(GoldRelation.objects.filter(complete, source="import")
                  .values_list("document_id", flat=True).distinct())),
        "open_hits": hits.filter(state__in=[HitState.PENDING, HitState.POSTED]).count(),
        "failed_posts": hits.filter(state=HitState.PENDING).exclude(post_error="").count(),
        "spent_usd": cost,
        "estimated_usd": sum(hits.values_list("cost_estimate", flat=True), Decimal("0")),
    }

