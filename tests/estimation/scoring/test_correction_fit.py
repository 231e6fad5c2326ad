"""The noise correction's replicate parameters are stored and refitted only when the
answers grew past KBPO_SOFT_LABEL_REFIT_GROWTH, changed, or brought a new worker
(estimation/correction.py, models.CorrectionFit)."""

from __future__ import annotations

import numpy as np
import pytest

from annotations.models import (
    Assignment,
    Backend,
    CrowdWorker,
    HitQuestion,
    Question,
    QuestionState,
    Response,
)
from estimation import scoring
from estimation.data import load_corpus_data
from estimation.models import CorrectionFit
from tests.estimation.scoring.scoring_world import World
from tests.estimation.scoring.test_report_crowd import TRUTH, _crowd
from tests.factories import make_hit


def _answer(world: World, names: list[str]) -> None:
    """A new question on "born", answered by these workers (created when new)."""
    Question.objects.filter(pair=world.pairs["born"]).update(state=QuestionState.COMPLETE)
    hit = make_hit(world.corpus, [world.pairs["born"]])
    question = HitQuestion.objects.get(hit=hit).question
    for name in names:
        worker, _ = CrowdWorker.objects.get_or_create(backend=Backend.SIMULATED,
                                                      external_id=name)
        asg = Assignment.objects.create(hit=hit, worker=worker, external_id=f"as2-{name}")
        Response.objects.create(assignment=asg, question=question, worker=worker,
                                choices=[TRUTH["born"]])


def _same(a, b) -> bool:
    return all(np.array_equal(x.pairs, y.pairs) and np.array_equal(x.probs, y.probs)
               for x, y in zip(a, b, strict=True))


@pytest.mark.django_db
def test_replicates_refit_only_past_the_growth_threshold(world: World, settings) -> None:
    _crowd(world)
    settings.KBPO_SOFT_LABELS = True
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 8
    settings.KBPO_SOFT_LABEL_REFIT_GROWTH = 0.5
    first = load_corpus_data(world.corpus)
    assert first.extra["correction_fit"] is not None  # nothing stored: refitted
    assert not CorrectionFit.objects.exists()  # a load stores nothing itself
    scoring.recompute(world.corpus)
    fit = CorrectionFit.objects.get(corpus=world.corpus)
    assert fit.n_answers == 9 and fit.n_workers == 3
    # The same answers: the stored parameters give the refit's replicates exactly.
    again = load_corpus_data(world.corpus)
    assert again.extra["correction_fit"] is None
    assert _same(first.soft_replicates, again.soft_replicates)
    # Two more answers (22% < 50%) by known workers: the stored parameters still apply.
    _answer(world, ["a", "b"])
    kept = load_corpus_data(world.corpus)
    assert kept.extra["correction_fit"] is None and _same(first.soft_replicates,
                                                          kept.soft_replicates)
    # Below the threshold (22% > 10%): refitted on the 11 answers.
    settings.KBPO_SOFT_LABEL_REFIT_GROWTH = 0.1
    refit = load_corpus_data(world.corpus)
    assert refit.extra["correction_fit"].n_answers == 11
    assert not _same(first.soft_replicates, refit.soft_replicates)


@pytest.mark.django_db
def test_a_new_worker_or_a_changed_answer_refits(world: World, settings) -> None:
    _crowd(world)
    settings.KBPO_SOFT_LABELS = True
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 4
    settings.KBPO_SOFT_LABEL_REFIT_GROWTH = 1.0
    scoring.recompute(world.corpus)
    assert load_corpus_data(world.corpus).extra["correction_fit"] is None
    # An earlier answer changed: the stored fit's answers are not these.
    r = Response.objects.order_by("pk").first()
    r.choices = ["no_relation"]
    r.save()
    assert load_corpus_data(world.corpus).extra["correction_fit"] is not None
    scoring.recompute(world.corpus)
    assert load_corpus_data(world.corpus).extra["correction_fit"] is None
    _answer(world, ["d"])  # a worker the fit has no rates for
    assert load_corpus_data(world.corpus).extra["correction_fit"] is not None
    # More replicates than stored: refitted.
    scoring.recompute(world.corpus)
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 8
    assert load_corpus_data(world.corpus).extra["correction_fit"] is not None
