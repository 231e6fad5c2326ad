"""Test data for the scoring tests: a tiny corpus with two systems, draws and labels."""

from __future__ import annotations

from dataclasses import dataclass

from annotations.models import (
    ExhaustiveDocument,
    ExhaustiveStage,
    GoldRelation,
    PairLabel,
    SampleDraw,
)
from kbpo.core.models import Corpus, Document
from submissions.models import MentionPair, RelationInstance, State, Submission
from tests.factories import make_corpus, make_pair, make_submission, make_user, span


@dataclass
class World:
    corpus: Corpus
    pairs: dict[str, MentionPair]
    a: Submission
    b: Submission


def draw_all(sub: Submission) -> None:
    """One draw per instance (enough for deterministic tests)."""
    for i, inst in enumerate(RelationInstance.objects.filter(submission=sub).order_by("pk")):
        SampleDraw.objects.create(submission=sub, scheme="instance", index=i, instance=inst)


def label(pair: MentionPair, *predicates: str) -> PairLabel:
    return PairLabel.objects.create(pair=pair, predicates=list(predicates), support=2 / 3,
                                    n_answers=3)


def scored_with_beta_private(world: World) -> World:
    """Two true pairs labelled and scored, then Beta made private: the stored-report
    tests' world (a public and a private report on one corpus)."""
    from estimation import scoring

    label(world.pairs["born"], "per:place_of_birth")
    label(world.pairs["wed"], "per:spouse")
    scoring.recompute(world.corpus)
    Submission.objects.filter(pk=world.b.pk).update(public=False)
    return world


def build_world(tag: str = "t", state_a: str = State.SCORING,
                state_b: str = State.ANNOTATING) -> World:
    corpus = make_corpus(tag)
    doc = Document.objects.get(corpus=corpus, doc_id="D1")
    pairs = {
        "born": make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE"),
        "wed": make_pair(doc, span(doc, "Ada Byron", 1), "PER", span(doc, "Tom King"), "PER"),
        "work": make_pair(doc, span(doc, "Tom King", 1), "PER", span(doc, "Acme"), "ORG"),
    }
    ada = make_user("ada")
    bob = make_user("bob")
    a = make_submission(corpus, [(pairs["born"], "per:place_of_birth"),
                                 (pairs["wed"], "per:spouse")], owner=ada, name="Alpha",
                        state=state_a)
    b = make_submission(corpus, [(pairs["born"], "per:place_of_death"),
                                 (pairs["work"], "per:employee_or_member_of")], owner=bob,
                        name="Beta", state=state_b)
    Submission.objects.filter(pk__in=[a.pk, b.pk]).update(public=True)
    a.refresh_from_db()
    b.refresh_from_db()
    draw_all(a)
    draw_all(b)
    # The document is exhaustively annotated: three true relations (recall is estimable).
    ExhaustiveDocument.objects.create(corpus=corpus, document=doc, stage=ExhaustiveStage.SEED,
                                      state=ExhaustiveDocument.State.COMPLETE)
    for key, predicate in [("born", "per:place_of_birth"), ("wed", "per:spouse"),
                           ("work", "per:employee_or_member_of")]:
        p = pairs[key]
        GoldRelation.objects.create(document=doc, subject_begin=p.subject_begin,
                                    subject_end=p.subject_end, object_begin=p.object_begin,
                                    object_end=p.object_end, predicate=predicate,
                                    subject_entity=key)
    return World(corpus, pairs, a, b)
