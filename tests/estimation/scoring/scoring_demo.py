"""The demo world in the database, with draws, crowd labels taken from gold and Ŷ0.

Stands in for the crowd pipeline in scoring tests: draws come from each system's
sampling distribution (`estimation.core.sample_draws`), labels are the gold truth of
the drawn pairs (a perfect crowd), and Ŷ0 is either whole documents "exhaustively
annotated" by copying their gold relations (`exhaustive`), or a uniform sample of the
true instances (`exhaustive_sample`), the design the recall estimators assume.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from django.contrib.auth.models import User

from annotations.crowd.simulation import GoldKey
from annotations.models import (
    ExhaustiveDocument,
    ExhaustiveStage,
    GoldRelation,
    PairLabel,
    SampleDraw,
)
from estimation.core import sample_draws, scheme_weights
from estimation.data import PREDICATE_CODE
from kbpo.core.corpus import load_corpus
from kbpo.core.models import Corpus, Document
from kbpo.demo.world import generate as demo_world
from submissions.models import MentionPair, RelationInstance, State, Submission
from submissions.processing import run_ingestion
from submissions.services import create_submission

# One gold relation: (doc_id, subject begin, end, object begin, end, predicate, entity).
GoldRow = tuple[str, int, int, int, int, str, str]


@dataclass
class DemoDB:
    corpus: Corpus
    out: Path
    submissions: dict[str, Submission]
    truth: dict[str, dict]
    gold: GoldKey
    _instances: dict[int, tuple[np.ndarray, ...]] = field(default_factory=dict)
    _gold_rows: list[GoldRow] = field(default_factory=list)
    _pair_of: dict[int, int] = field(default_factory=dict)  # instance -> its pair
    _truth_of: dict[int, list[str]] = field(default_factory=dict)  # pair -> gold labels
    _documents: dict[str, Document] = field(default_factory=dict)

    def instances(self, sub: Submission) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(instance ids, predicate codes, subject ids) of a submission, read once."""
        if sub.pk not in self._instances:
            self._instances[sub.pk] = instance_rows(sub)
        return self._instances[sub.pk]

    def pair_of(self) -> dict[int, int]:
        """The pair of each of the corpus's relation instances, read once."""
        if not self._pair_of:
            self._pair_of = dict(RelationInstance.objects.filter(
                submission__corpus=self.corpus).values_list("pk", "pair_id"))
        return self._pair_of

    def truth_of(self) -> dict[int, list[str]]:
        """The gold relations of each of the corpus's pairs, read once."""
        if not self._truth_of:
            for pk, doc_id, sb, se, ob, oe in MentionPair.objects.filter(
                    document__corpus=self.corpus).values_list(
                    "pk", "document__doc_id", "subject_begin", "subject_end",
                    "object_begin", "object_end"):
                self._truth_of[pk] = sorted(self.gold.truth((doc_id, sb, se, ob, oe)))
        return self._truth_of

    def documents(self) -> dict[str, Document]:
        if not self._documents:
            self._documents = {d.doc_id: d for d in Document.objects.filter(corpus=self.corpus)}
        return self._documents

    def gold_rows(self) -> list[GoldRow]:
        """Every true instance of the world (Y), in a fixed order."""
        if not self._gold_rows:
            for (doc_id, sb, se, ob, oe), predicates in sorted(self.gold.relations.items()):
                # The world entity of the subject (what truth.json's entity schemes use).
                entity = next((m["entity"] for m in self.gold.mentions[doc_id]
                               if m["span"] == [sb, se]), f"{sb}-{se}")
                self._gold_rows += [(doc_id, sb, se, ob, oe, p, entity)
                                    for p in sorted(predicates)]
        return self._gold_rows


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


def scored_demo(out: Path, owner: User, docs: int, systems: int,
                draws: int) -> tuple[DemoDB, np.random.Generator]:
    """The world of the researcher-path tests (browser and client): corpus "demo", every
    system scoring, half the documents exhaustively annotated, `draws` draws a system
    labelled from gold, and one run. Returns the world and the draws' generator."""
    from estimation import scoring

    demo = load_demo(out, owner, docs=docs, systems=systems, seed=11, tag="demo")
    Submission.objects.filter(corpus=demo.corpus).update(state=State.SCORING)
    exhaustive(demo, 0.5, seed=3)
    rng = np.random.default_rng(5)
    for sub in demo.submissions.values():
        draw(sub, draws, rng)
    label_from_gold(demo)
    scoring.recompute(demo.corpus)
    return demo, rng


def instance_rows(sub: Submission) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(instance ids, predicate codes, subject entity ids) of a submission."""
    rows = list(RelationInstance.objects.filter(submission=sub).order_by("pk")
                .values_list("pk", "predicate", "subject_entity_id"))
    return (np.array([r[0] for r in rows]), np.array([PREDICATE_CODE[r[1]] for r in rows]),
            np.array([r[2] for r in rows]))


def draw(sub: Submission, n: int, rng: np.random.Generator, scheme: str = "instance",
         demo: DemoDB | None = None) -> None:
    """Replace a submission's draws with `n` fresh i.i.d. draws from its scheme."""
    SampleDraw.objects.filter(submission=sub).delete()
    ids, preds, subjects = demo.instances(sub) if demo is not None else instance_rows(sub)
    p = scheme_weights(scheme, preds, subjects)
    picks = ids[sample_draws(p, n, rng)]
    SampleDraw.objects.bulk_create(
        SampleDraw(submission=sub, scheme=scheme, index=i, instance_id=int(pk))
        for i, pk in enumerate(picks))


def redraw(demo: DemoDB, names: list[str], n: int, rng: np.random.Generator,
           scheme: str = "instance") -> None:
    """The corpus's draws and labels replaced by `n` fresh draws of each of `names` (in
    turn: the draws `draw` would make from `rng`) and their pairs' gold labels, in four
    statements: what `draw` for each and then `label_from_gold` leave."""
    PairLabel.objects.filter(pair__document__corpus=demo.corpus).delete()
    SampleDraw.objects.filter(submission__corpus=demo.corpus).delete()
    draws = []
    for name in names:
        sub = demo.submissions[name]
        ids, preds, subjects = demo.instances(sub)
        picks = ids[sample_draws(scheme_weights(scheme, preds, subjects), n, rng)]
        draws += [SampleDraw(submission=sub, scheme=scheme, index=i, instance_id=int(pk))
                  for i, pk in enumerate(picks)]
    SampleDraw.objects.bulk_create(draws)
    pair_of, truth_of = demo.pair_of(), demo.truth_of()
    pairs = {pair_of[d.instance_id] for d in draws}
    PairLabel.objects.bulk_create(
        PairLabel(pair_id=pk, predicates=truth_of[pk], support=1.0, n_answers=3)
        for pk in sorted(pairs))


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
    docs = list(Document.objects.filter(corpus=demo.corpus).order_by("doc_id"))
    chosen = random.Random(seed).sample(docs, max(1, round(fraction * len(docs))))
    chosen_ids = {d.doc_id for d in chosen}
    _store_exhaustive(demo, [r for r in demo.gold_rows() if r[0] in chosen_ids])
    return len(chosen)


def exhaustive_sample(demo: DemoDB, n0: int, rng: np.random.Generator) -> int:
    """Ŷ0 as a uniform sample of `n0` true instances (without replacement).

    The recall estimators model Ŷ0 as a uniform sample of Y. Whole documents are a
    cluster sample instead, and a large share of a small corpus shrinks the variance
    below what the intervals assume (the finite-population correction). Each sampled
    instance is stored in its document, marked complete. Returns the documents marked.
    """
    rows = demo.gold_rows()
    picked = [rows[i] for i in np.sort(rng.choice(len(rows), n0, replace=False))]
    return _store_exhaustive(demo, picked)


def _store_exhaustive(demo: DemoDB, rows: list[GoldRow]) -> int:
    """Replace the corpus's exhaustive sample by these gold relations."""
    ExhaustiveDocument.objects.filter(corpus=demo.corpus).delete()
    GoldRelation.objects.filter(document__corpus=demo.corpus).delete()
    docs = demo.documents()
    by_id = {doc_id: docs[doc_id] for doc_id in sorted({r[0] for r in rows})}
    ExhaustiveDocument.objects.bulk_create(
        ExhaustiveDocument(corpus=demo.corpus, document=d, stage=ExhaustiveStage.SEED,
                           state=ExhaustiveDocument.State.COMPLETE) for d in by_id.values())
    GoldRelation.objects.bulk_create(
        GoldRelation(document=by_id[doc_id], subject_begin=sb, subject_end=se,
                     object_begin=ob, object_end=oe, predicate=predicate,
                     subject_entity=entity)
        for doc_id, sb, se, ob, oe, predicate, entity in rows)
    return len(by_id)
