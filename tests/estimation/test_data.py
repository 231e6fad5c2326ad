"""Loading evaluation data from the database into the estimation core."""

from __future__ import annotations

import numpy as np
import pytest

from annotations.models import (
    ExhaustiveDocument,
    ExhaustiveStage,
    GoldRelation,
    PairLabel,
    SampleDraw,
)
from estimation.core import estimate, prepare_evidence
from estimation.data import PREDICATE_CODE, load_corpus_data, system_name
from kbpo.core.models import Document
from submissions.models import MentionPair, RelationInstance, State
from tests.factories import TEXT, make_corpus, make_pair, make_submission, span


@pytest.mark.django_db
def test_load_and_estimate() -> None:
    _load_and_estimate()


def _load_and_estimate() -> tuple:
    corpus = make_corpus()
    doc = Document.objects.get(doc_id="D1")
    born = make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE")
    wed = make_pair(doc, span(doc, "Ada Byron", 1), "PER", span(doc, "Tom King"), "PER")
    work = make_pair(doc, span(doc, "Tom King", 1), "PER", span(doc, "Acme"), "ORG")
    a = make_submission(corpus, [(born, "per:place_of_birth"), (wed, "per:spouse")], name="A")
    b = make_submission(corpus, [(born, "per:place_of_death"), (work, "per:holds_shares_in")],
                        name="B")
    make_submission(corpus, [(work, "per:employee_or_member_of")], name="gone",
                    state=State.WITHDRAWN)
    for sub in (a, b):
        for i, inst in enumerate(RelationInstance.objects.filter(submission=sub).order_by("pk")):
            SampleDraw.objects.create(submission=sub, scheme="instance", index=i, instance=inst)
    PairLabel.objects.create(pair=born, predicates=["per:place_of_birth"], support=1,
                             n_answers=3)
    PairLabel.objects.create(pair=wed, predicates=["per:spouse"], support=1, n_answers=3)
    # Tom King founded and works for Acme: two relations on one pair.
    PairLabel.objects.create(pair=work, predicates=["per:employee_or_member_of",
                                                    "per:holds_shares_in"],
                             support=1, n_answers=3)
    ExhaustiveDocument.objects.create(corpus=corpus, document=doc, stage=ExhaustiveStage.SEED,
                                      state=ExhaustiveDocument.State.COMPLETE)
    GoldRelation.objects.create(document=doc, subject_begin=born.subject_begin,
                                subject_end=born.subject_end, object_begin=born.object_begin,
                                object_end=born.object_end, predicate="per:place_of_birth",
                                subject_entity="ada")
    GoldRelation.objects.create(document=doc, subject_begin=0, subject_end=3, object_begin=5,
                                object_end=9, predicate="per:title", subject_entity="ada")

    data = load_corpus_data(corpus)
    assert [s.name for s in data.submissions] == ["A", "B"]  # withdrawn drops out
    assert data.population.names == [system_name(a.pk), system_name(b.pk)]
    assert data.n_labels == 3 and len(data.label_pairs) == 4
    assert data.exhaustive_pairs[0] == born.pk and data.exhaustive_pairs[1] < 0
    assert data.exhaustive_preds[0] == PREDICATE_CODE["per:place_of_birth"]
    res = estimate(data.population, data.evidence())
    simple = res.results["instance"]["precision"]["simple"].estimate
    np.testing.assert_allclose(simple, [1.0, 0.5])
    recall = res.results["instance"]["recall"]["simple"].estimate
    np.testing.assert_allclose(recall, [0.5, 0.0])
    return corpus, born


@pytest.mark.django_db
def test_soft_labels_from_the_quality_pass(settings) -> None:
    """With KBPO_SOFT_LABELS the stored posteriors replace the 0/1 verdicts."""
    corpus, born = _load_and_estimate()
    # The crowd is only 60% sure Ada was born in London; 40% for no relation.
    PairLabel.objects.filter(pair=born).update(
        posterior={"per:place_of_birth": 0.6, "no_relation": 0.4},
        prior={"per:place_of_birth": 0.3, "no_relation": 0.7}, p_correct=0.6)
    settings.KBPO_SOFT_LABELS = False
    assert load_corpus_data(corpus).soft is None
    settings.KBPO_SOFT_LABELS = True
    data = load_corpus_data(corpus)
    assert len(data.soft.pairs) == 2
    ev = data.evidence()
    assert ev.true_prob is not None and ev.system_prior is not None
    simple = estimate(data.population, ev).results["instance"]["precision"]["simple"]
    # System A: born (soft, under A's own precision as prior) and wed (certain).
    assert 0.5 < simple.estimate[0] < 1.0
    assert simple.lo[0] < simple.estimate[0] < simple.hi[0]
    # Stored before pair-type shares were kept: the crowd-wide share is divided out.
    assert np.isnan(data.soft.type_priors).all()
    one = (np.zeros(1, np.int64), np.ones(1, bool))
    np.testing.assert_allclose(ev.reweight_prior(*one), [0.3])
    # With its pair type's share, the divisor lies between the two (odds halfway).
    PairLabel.objects.filter(pair=born).update(
        type_prior={"per:place_of_birth": 0.7, "no_relation": 0.3})
    data = load_corpus_data(corpus)
    ev = data.evidence()
    np.testing.assert_allclose(ev.soft_type_prior, [0.7])
    # Odds 0.3/0.7 and 0.7/0.3 halfway on the log scale: 1.
    np.testing.assert_allclose(ev.reweight_prior(*one), [0.5])
    again = estimate(data.population, ev).results["instance"]["precision"]["simple"]
    # A larger prior share divided out: the answers' evidence for A's instance is weaker.
    assert again.estimate[0] < simple.estimate[0]


@pytest.mark.django_db
def test_recall_variances_from_the_database_are_document_level() -> None:
    """The production loader passes each exhaustive instance's document to the
    estimators: a system that finds every relation of two documents and none of two
    others gets the (wider) cluster-robust recall interval, not the i.i.d. one."""
    corpus = make_corpus(texts={f"D{i}": TEXT for i in range(1, 5)})
    docs = list(Document.objects.filter(corpus=corpus).order_by("doc_id"))
    facts = [("Ada Byron", 0, "PER", "London", 0, "GPE", "per:place_of_birth"),
             ("Ada Byron", 1, "PER", "Tom King", 0, "PER", "per:spouse"),
             ("Tom King", 1, "PER", "Acme", 0, "ORG", "per:employee_or_member_of")]
    pairs = {(d.doc_id, f[6]): make_pair(d, span(d, f[0], f[1]), f[2], span(d, f[3], f[4]), f[5])
             for d in docs for f in facts}
    found = [(pairs[d.doc_id, f[6]], f[6]) for d in docs[:2] for f in facts]
    sub = make_submission(corpus, found, name="A")
    for i, inst in enumerate(RelationInstance.objects.filter(submission=sub).order_by("pk")):
        SampleDraw.objects.create(submission=sub, scheme="instance", index=i, instance=inst)
        PairLabel.objects.create(pair=inst.pair, predicates=[inst.predicate], support=1,
                                 n_answers=3)
    for d in docs:
        ExhaustiveDocument.objects.create(corpus=corpus, document=d, stage=ExhaustiveStage.SEED,
                                          state=ExhaustiveDocument.State.COMPLETE)
    # Interleaved across documents, with a predicate outside the schema that Ŷ0 skips:
    # the document ids must stay aligned with the instances.
    for f in facts:
        for d in docs:
            p = pairs[d.doc_id, f[6]]
            for predicate in (f[6], "per:not_in_schema"):
                GoldRelation.objects.create(
                    document=d, subject_begin=p.subject_begin, subject_end=p.subject_end,
                    object_begin=p.object_begin, object_end=p.object_end, predicate=predicate,
                    subject_entity=f[0])

    data = load_corpus_data(corpus)
    assert len(data.exhaustive_pairs) == 12
    pair_doc = dict(MentionPair.objects.filter(document__corpus=corpus)
                    .values_list("pk", "document_id"))
    assert data.exhaustive_docs.tolist() == [pair_doc[p] for p in data.exhaustive_pairs]
    ev = data.evidence()
    assert ev.n_docs == 4
    stored = estimate(data.population, ev).results["instance"]["recall"]
    iid = estimate(data.population, prepare_evidence(
        data.population, data.draws, data.label_pairs, data.label_preds, data.exhaustive_pairs,
        data.exhaustive_preds, data.exhaustive_subjects)).results["instance"]["recall"]
    for kind in ("simple", "joint"):
        np.testing.assert_allclose(stored[kind].estimate, 0.5)
        assert stored[kind].hi[0] - stored[kind].lo[0] > iid[kind].hi[0] - iid[kind].lo[0] + 0.1
