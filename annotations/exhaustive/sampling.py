"""The two-stage document sample for recall (docs/operators/exhaustive.md).

Stage 1 draws `seed_fraction` of the planned documents uniformly. Once every seed
document has its entities (aggregated from the crowd or imported), stage 2 draws the
rest uniformly from the documents that mention a seed entity by name — Postgres
full-text phrase search in production, exact substring match elsewhere — so that
cross-document entities of medium frequency are represented. Every draw is
deterministic for its seed and recorded on the `ExhaustiveDocument` rows (stage, seed,
matched entity name)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import reduce

from django.db import connection, transaction

from annotations.models import (
    ExhaustiveDocument,
    ExhaustiveStage,
    GoldMention,
)
from kbpo.core.models import Corpus, Document
from kbpo.core.schema import GPE, ORG, PER

from .workflow import start_planned

State = ExhaustiveDocument.State

# Entities that are searched "by name" in stage 2 (LOC: DocRED's places, which TAC KBP
# calls GPE).
NAME_TYPES = (PER, ORG, GPE, "LOC")
MIN_NAME_LENGTH = 3            # shorter names match almost everywhere
FTS_CHUNK = 100                # names OR-ed into one full-text query


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
    """Canonical names of PER/ORG/GPE (LOC) entities found in the annotated seed documents."""
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

