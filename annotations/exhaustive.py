"""Exhaustive annotation for recall: the two-stage document sample and its workflow.

**Sampling** (DESIGN §7, docs/exhaustive.md). Stage 1 draws `seed_fraction` of the
planned documents uniformly. Once every seed document has its entities (aggregated
from the crowd or imported), stage 2 draws the rest uniformly from the documents that
mention a seed entity by name — Postgres full-text phrase search in production, exact
substring match elsewhere — so that cross-document entities of medium frequency are
represented. Every draw is deterministic for its seed and recorded on the
`ExhaustiveDocument` rows (stage, seed, matched entity name).

**Workflow** per document: `planned` → an entity task (one `entity` question, k
workers, reward per token) → token-level majority (`mention_aggregation`) →
`GoldMention`s → `relations`: one exhaustive task over every same-sentence pair of
aggregated mentions with compatible types (reward per pair) → majority per pair →
`GoldRelation`s → `complete`, and `labels_changed` so scores are recomputed.
Every step is a Celery task that re-reads the database under a row lock, so it is safe
to run twice; new HITs are posted only after their rows are committed.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from functools import reduce

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q
from django.dispatch import receiver
from django.utils import timezone

from kbpo.models import Corpus, Document, Sentence
from kbpo.schema import GPE, NO_RELATION, ORG, PER, predicates_for

from .candidates import document_pairs
from .intake import answers_stored
from .mention_aggregation import aggregate_mentions, document_tokens
from .models import (
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
from .pipeline import enqueue_review
from .signals import labels_changed

State = ExhaustiveDocument.State
DOCUMENT_KINDS = (TaskKind.ENTITY, TaskKind.EXHAUSTIVE)
NAME_TYPES = (PER, ORG, GPE)   # entities that are searched "by name" in stage 2
MIN_NAME_LENGTH = 3            # shorter names match almost everywhere
FTS_CHUNK = 100                # names OR-ed into one full-text query
CENT = Decimal("0.01")


class PlanError(Exception):
    """A plan request that cannot be satisfied; the message says what to change."""


@dataclass
class PlanReport:
    corpus: str
    action: str                 # "seeded", "matched", "waiting", "planned"
    seed: int
    seed_documents: int = 0
    matched_documents: int = 0
    created: int = 0
    candidates: int = 0         # stage 2: unsampled documents mentioning a seed entity
    seed_names: int = 0
    shortfall: int = 0          # stage 2: documents wanted but no candidate left
    messages: list[str] = field(default_factory=list)

    def summary(self) -> str:
        head = {
            "seeded": f"stage 1: drew {self.created} seed documents uniformly",
            "matched": (f"stage 2: drew {self.created} of {self.candidates} documents that "
                        f"mention one of {self.seed_names} seed entity names"),
            "waiting": "stage 2 waits for the seed documents' entities",
            "planned": "the plan is complete; nothing drawn",
        }[self.action]
        lines = [f"corpus {self.corpus} (seed {self.seed}): {head}",
                 f"  sample: {self.seed_documents} seed + {self.matched_documents} matched "
                 "documents"]
        lines += [f"  {m}" for m in self.messages]
        return "\n".join(lines)


# --- stage 1 and stage 2 sampling --------------------------------------------------


def _rng(seed: int, stage: str) -> random.Random:
    return random.Random(f"kbpo-exhaustive:{seed}:{stage}")


def seed_entity_names(corpus: Corpus) -> list[str]:
    """Canonical names of PER/ORG/GPE entities found in the annotated seed documents."""
    rows = GoldMention.objects.filter(
        document__exhaustive__corpus=corpus, document__exhaustive__stage=ExhaustiveStage.SEED,
        document__exhaustive__state__in=[State.RELATIONS, State.COMPLETE],
        canonical=True, type__in=NAME_TYPES).values_list("document__text", "begin", "end")
    names = {" ".join(text[b:e].split()) for text, b, e in rows}
    return sorted(n for n in names if len(n) >= MIN_NAME_LENGTH)


def _word_pattern(name: str) -> re.Pattern[str]:
    # what 'simple' full-text phrase search matches: the words in order, any case
    words = [re.escape(w) for w in re.findall(r"\w+", name)]
    return re.compile(r"(?<!\w)" + r"\W+".join(words) + r"(?!\w)", re.IGNORECASE)


def documents_mentioning(corpus: Corpus, names: Sequence[str],
                         exclude: Iterable[int] = ()) -> dict[int, str]:
    """Documents of the corpus (minus `exclude`) mentioning one of `names`, with the name.

    Postgres: full-text phrase search (`simple` configuration: case-insensitive, whole
    words, no stemming). Other databases: exact, case-sensitive substring match. The
    recorded name is the first in sorted order that the document mentions.
    """
    docs = Document.objects.filter(corpus=corpus).exclude(pk__in=list(exclude))
    names = sorted(names)
    found: dict[int, str] = {}
    if not names:
        return found
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchQuery, SearchVector

        vector = SearchVector("text", config="simple")
        hits: dict[int, str] = {}
        for start in range(0, len(names), FTS_CHUNK):
            chunk = [n for n in names[start:start + FTS_CHUNK] if re.search(r"\w", n)]
            if not chunk:
                continue
            query = reduce(lambda a, b: a | b, [
                SearchQuery(n, search_type="phrase", config="simple") for n in chunk])
            hits.update(docs.exclude(pk__in=list(hits)).annotate(fts=vector).filter(
                fts=query).values_list("pk", "text"))
        patterns = [(n, _word_pattern(n)) for n in names]
        for pk, text in sorted(hits.items()):
            name = next((n for n, p in patterns if p.search(text)), None)
            if name is None:  # tokenisation differs from our pattern: ask Postgres per name
                name = next(n for n in names if docs.filter(pk=pk).annotate(fts=vector).filter(
                    fts=SearchQuery(n, search_type="phrase", config="simple")).exists())
            found[pk] = name
        return found
    for pk, text in docs.values_list("pk", "text").iterator(chunk_size=500):
        name = next((n for n in names if n in text), None)
        if name is not None:
            found[pk] = name
    return found


def plan_exhaustive(corpus: Corpus, docs: int, seed_fraction: float = 0.2, seed: int = 0,
                    start_tasks: bool = True) -> PlanReport:
    """Advance the two-stage sample of `docs` documents by one step (idempotent).

    First call: stage 1. Later calls: stage 2 once every seed document has its
    entities; otherwise a report of what it waits for. With `start_tasks`, entity
    tasks are created for newly drawn documents (after commit).
    """
    total = Document.objects.filter(corpus=corpus).count()
    if docs < 1:
        raise PlanError("--docs must be at least 1")
    if docs > total:
        raise PlanError(f"--docs {docs} exceeds the {total} documents of corpus {corpus.tag}")
    if not 0 < seed_fraction <= 1:
        raise PlanError("--seed-fraction must be in (0, 1], e.g. 0.2")
    n_seed = max(1, round(docs * seed_fraction))
    existing = ExhaustiveDocument.objects.filter(
        corpus=corpus, stage__in=[ExhaustiveStage.SEED, ExhaustiveStage.MATCHED])
    seeds = list(existing.filter(stage=ExhaustiveStage.SEED))
    matched = existing.filter(stage=ExhaustiveStage.MATCHED).count()
    if seeds and seeds[0].sample_seed is not None and seeds[0].sample_seed != seed:
        raise PlanError(f"corpus {corpus.tag} was planned with --seed {seeds[0].sample_seed}; "
                        "re-run with that seed (a sample cannot change its seed halfway)")
    report = PlanReport(corpus.tag, "planned", seed, len(seeds), matched)
    taken = set(ExhaustiveDocument.objects.filter(corpus=corpus).values_list(
        "document_id", flat=True))

    if not seeds:
        pool = list(Document.objects.filter(corpus=corpus).exclude(pk__in=taken)
                    .order_by("doc_id").values_list("pk", flat=True))
        if len(pool) < n_seed:
            raise PlanError(f"only {len(pool)} documents are not yet exhaustively annotated; "
                            f"stage 1 needs {n_seed}")
        chosen = _rng(seed, "seed").sample(pool, n_seed)
        created = _create(corpus, chosen, ExhaustiveStage.SEED, seed, {}, start_tasks)
        report.action, report.created, report.seed_documents = "seeded", created, created
        report.messages.append(
            f"next: annotate their entities (crowd or import_gold --only-planned), then "
            f"re-run to draw the remaining {docs - n_seed} documents")
        return report

    wanted = docs - len(seeds) - matched
    if wanted <= 0:
        report.messages.append(f"{len(seeds) + matched} documents planned (target {docs})")
        return report
    if matched:
        report.messages.append(f"stage 2 already drawn ({matched} documents); the plan "
                               "is not extended — draw a new sample on a new corpus tag")
        return report
    ready = sum(1 for s in seeds if s.state in (State.RELATIONS, State.COMPLETE))
    if ready < len(seeds):
        report.action = "waiting"
        report.messages.append(f"{ready} of {len(seeds)} seed documents have their entities")
        return report
    names = seed_entity_names(corpus)
    candidates = documents_mentioning(corpus, names, exclude=taken)
    pool = sorted(candidates, key=lambda pk: pk)
    chosen = _rng(seed, "matched").sample(pool, min(wanted, len(pool)))
    created = _create(corpus, chosen, ExhaustiveStage.MATCHED, seed, candidates, start_tasks)
    report.action, report.created = "matched", created
    report.candidates, report.seed_names = len(pool), len(names)
    report.matched_documents = matched + created
    report.shortfall = wanted - created
    if report.shortfall:
        report.messages.append(f"only {len(pool)} unsampled documents mention a seed entity: "
                               f"{report.shortfall} fewer documents than planned")
    return report


def _create(corpus: Corpus, doc_pks: list[int], stage: str, seed: int,
            matched: dict[int, str], start_tasks: bool) -> int:
    with transaction.atomic():
        rows = ExhaustiveDocument.objects.bulk_create(
            [ExhaustiveDocument(corpus=corpus, document_id=pk, stage=stage, sample_seed=seed,
                                matched_entity=matched.get(pk, "")[:300]) for pk in doc_pks],
            ignore_conflicts=True)
        if start_tasks:
            transaction.on_commit(lambda: start_planned(corpus))
    return len(rows)


# --- tasks: creation ---------------------------------------------------------------


def _dollars(value: float) -> Decimal:
    return max(CENT, Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP))


def entity_reward(n_tokens: int) -> Decimal:
    """Reward per assignment of an entity task: tokens × the per-token rate."""
    return _dollars(n_tokens * settings.KBPO_EXHAUSTIVE_REWARD_PER_TOKEN_USD)


def exhaustive_reward(n_pairs: int) -> Decimal:
    """Reward per assignment of an exhaustive-relations task: pairs × the per-pair rate."""
    return _dollars(n_pairs * settings.KBPO_EXHAUSTIVE_REWARD_PER_PAIR_USD)


def _new_hit(corpus_id: int, kind: str, question: Question, reward: Decimal) -> Hit:
    k = question.answers_needed
    hit = Hit.objects.create(corpus_id=corpus_id, kind=kind, backend=settings.KBPO_CROWD_BACKEND,
                             state=HitState.PENDING, max_assignments=k, reward=reward,
                             cost_estimate=reward * k)
    HitQuestion.objects.create(hit=hit, question=question, position=0)
    return hit


def _enqueue_post(hit_id: int) -> None:
    from .exhaustive_tasks import post_document_hit

    transaction.on_commit(lambda: post_document_hit.delay(hit_id))


def create_entity_task(exdoc_id: int) -> int | None:
    """Create the entity question and HIT of a planned document; its HIT id, or None."""
    with transaction.atomic():
        exdoc = (ExhaustiveDocument.objects.select_for_update().select_related("document")
                 .filter(pk=exdoc_id).first())
        if exdoc is None or exdoc.state != State.PLANNED:
            return None
        doc = exdoc.document
        if Question.objects.filter(document=doc, kind=TaskKind.ENTITY,
                                   state=QuestionState.OPEN).exists():
            return None
        n_tokens = sum(len(t) // 2 for t in Sentence.objects.filter(document=doc)
                       .values_list("tokens", flat=True))
        question = Question.objects.create(corpus_id=exdoc.corpus_id, kind=TaskKind.ENTITY,
                                           document=doc,
                                           answers_needed=settings.KBPO_ANSWERS_PER_QUESTION)
        hit = _new_hit(exdoc.corpus_id, TaskKind.ENTITY, question, entity_reward(n_tokens))
        exdoc.state = State.ENTITIES
        exdoc.save(update_fields=["state"])
        _enqueue_post(hit.pk)
    return hit.pk


def start_planned(corpus: Corpus) -> int:
    """Enqueue entity-task creation for every planned document of the corpus."""
    from .exhaustive_tasks import start_entity_task

    ids = list(ExhaustiveDocument.objects.filter(corpus=corpus, state=State.PLANNED)
               .values_list("pk", flat=True))
    for pk in ids:
        start_entity_task.delay(pk)
    return len(ids)


def post_hit_safely(hit_id: int) -> str:
    """Post a pending document HIT through the configured backend; errors are kept."""
    from .backends import post_hit

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

    The pair list itself comes from `annotations.candidates.document_pairs`, which the
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
    return list(Response.objects.filter(question=question).order_by("pk")
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


@receiver(answers_stored, dispatch_uid="exhaustive-answers-stored")
def on_answers_stored(sender: object, hit_id: int, question_ids: list[int],
                      **kwargs: object) -> None:
    """Aggregate document questions that may now have all their answers.

    Only entity and exhaustive questions are handled here; relation questions belong
    to the crowd pipeline.
    """
    from .exhaustive_tasks import aggregate_document_question

    ready = (Question.objects.filter(pk__in=question_ids, kind__in=DOCUMENT_KINDS,
                                     state=QuestionState.OPEN)
             .annotate(n=Count("responses")).values_list("pk", "n", "answers_needed"))
    for pk, n, needed in ready:
        if n >= needed:
            aggregate_document_question.delay(pk)


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
        "open_hits": hits.filter(state__in=[HitState.PENDING, HitState.POSTED]).count(),
        "failed_posts": hits.filter(state=HitState.PENDING).exclude(post_error="").count(),
        "spent_usd": cost,
        "estimated_usd": sum(hits.values_list("cost_estimate", flat=True), Decimal("0")),
    }


__all__ = ["CandidatePair", "PlanError", "PlanReport", "aggregate_relations",
           "complete_document_question", "create_entity_task", "documents_mentioning",
           "entity_reward", "exhaustive_candidate_pairs", "exhaustive_reward", "plan_exhaustive",
           "progress", "seed_entity_names", "start_planned"]
