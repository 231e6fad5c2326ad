"""The demo world in the database, with draws, crowd labels taken from gold and Ŷ0.

Stands in for the crowd pipeline in scoring tests: draws come from each system's
sampling distribution (`estimation.core.sample_draws`), labels are the gold truth of
the drawn pairs (a perfect crowd), and a random share of documents is "exhaustively
annotated" by copying their gold relations.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.contrib.auth.models import User

from annotations.models import (
    ExhaustiveDocument,
    ExhaustiveStage,
    GoldRelation,
    PairLabel,
    SampleDraw,
)
from annotations.simulation import GoldKey
from estimation.core import sample_draws, scheme_weights
from estimation.data import PREDICATE_CODE
from kbpo import demo_world
from kbpo.corpus import load_corpus
from kbpo.models import Corpus, Document
from submissions.models import MentionPair, RelationInstance, State, Submission
from submissions.services import create_submission
from submissions.tasks import run_ingestion


@dataclass
class DemoDB:
    corpus: Corpus
    out: Path
    submissions: dict[str, Submission]
    truth: dict[str, dict]
    gold: GoldKey


def load_demo(out: Path, owner: User, docs: int = 60, systems: int = 5, seed: int = 3,
              tag: str = "demo", ingest: bool = True) -> DemoDB:
    """Generate the demo world, load its corpus and ingest every system (synchronously)."""
    if not (out / "truth.json").exists():
        demo_world.generate(out, docs=docs, systems=systems, seed=seed)
    load_corpus(tag, out / "corpus.jsonl", workers=1)
    corpus = Corpus.objects.get(tag=tag)
    subs = {}
    for path in sorted((out / "systems").glob("*.kb")):
        with open(path, "rb") as fh:
            sub = create_submission(owner=owner, corpus=corpus, name=path.stem, file=fh,
                                    original_name=path.name, compressed=False, public=True,
                                    enforce_limits=False)
        if ingest:
            run_ingestion(sub.pk)
            sub.refresh_from_db()
            assert sub.state == State.INGESTED, (sub.state, sub.report[:3])
        subs[path.stem] = sub
    truth = json.loads((out / "truth.json").read_text())["systems"]
    return DemoDB(corpus, out, subs, truth, GoldKey.load(out / "gold.jsonl"))


def draw(sub: Submission, n: int, rng: np.random.Generator, scheme: str = "instance") -> None:
    """Replace a submission's draws with `n` fresh i.i.d. draws from its scheme."""
    SampleDraw.objects.filter(submission=sub).delete()
    rows = list(RelationInstance.objects.filter(submission=sub).order_by("pk").values_list(
        "pk", "predicate", "subject_entity_id"))
    ids = np.array([r[0] for r in rows])
    preds = np.array([PREDICATE_CODE[r[1]] for r in rows])
    subjects = np.array([r[2] for r in rows])
    p = scheme_weights(scheme, preds, subjects)
    picks = ids[sample_draws(p, n, rng)]
    SampleDraw.objects.bulk_create(
        SampleDraw(submission=sub, scheme=scheme, index=i, instance_id=int(pk))
        for i, pk in enumerate(picks))


def label_from_gold(demo: DemoDB, pair_ids: set[int] | None = None) -> int:
    """Perfect-crowd labels for every drawn pair (or `pair_ids`) without one yet."""
    if pair_ids is None:
        pair_ids = set(SampleDraw.objects.filter(submission__corpus=demo.corpus)
                       .values_list("instance__pair_id", flat=True))
    have = set(PairLabel.objects.filter(pair_id__in=pair_ids).values_list("pair_id", flat=True))
    new = []
    for pk, doc_id, sb, se, ob, oe in MentionPair.objects.filter(
            pk__in=pair_ids - have).values_list("pk", "document__doc_id", "subject_begin",
                                                "subject_end", "object_begin", "object_end"):
        truth = sorted(demo.gold.truth((doc_id, sb, se, ob, oe)))
        new.append(PairLabel(pair_id=pk, predicates=truth, support=1.0, n_answers=3))
    PairLabel.objects.bulk_create(new)
    return len(new)


def exhaustive(demo: DemoDB, fraction: float, seed: int) -> int:
    """Mark a random `fraction` of documents exhaustively annotated (gold relations)."""
    ExhaustiveDocument.objects.filter(corpus=demo.corpus).delete()
    GoldRelation.objects.filter(document__corpus=demo.corpus).delete()
    docs = list(Document.objects.filter(corpus=demo.corpus).order_by("doc_id"))
    chosen = random.Random(seed).sample(docs, max(1, round(fraction * len(docs))))
    by_id = {d.doc_id: d for d in chosen}
    ExhaustiveDocument.objects.bulk_create(
        ExhaustiveDocument(corpus=demo.corpus, document=d, stage=ExhaustiveStage.SEED,
                           state=ExhaustiveDocument.State.COMPLETE) for d in chosen)
    gold = []
    for (doc_id, sb, se, ob, oe), predicates in demo.gold.relations.items():
        if doc_id not in by_id:
            continue
        # The world entity of the subject (what truth.json's entity schemes use).
        entity = next((m["entity"] for m in demo.gold.mentions[doc_id]
                       if m["span"] == [sb, se]), f"{sb}-{se}")
        for predicate in predicates:
            gold.append(GoldRelation(document=by_id[doc_id], subject_begin=sb,
                                     subject_end=se, object_begin=ob, object_end=oe,
                                     predicate=predicate, subject_entity=entity))
    GoldRelation.objects.bulk_create(gold)
    return len(chosen)
