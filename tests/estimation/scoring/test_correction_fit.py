"""The noise correction's replicate parameters are stored and refitted only when the
answers grew past KBPO_SOFT_LABEL_REFIT_GROWTH, changed, or brought a new worker with
more than KBPO_SOFT_LABEL_NEW_WORKER_ANSWERS answers (estimation/correction.py,
models.CorrectionFit)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from annotations.models import (
    Assignment,
    Backend,
    CrowdWorker,
    HitQuestion,
    PairLabel,
    Question,
    QuestionState,
    Response,
)
from estimation import correction, scoring
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
def test_a_changed_answer_or_a_busy_new_worker_refits(world: World, settings) -> None:
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
    # A worker the fit has no rates for, with one answer: the stored parameters still
    # apply (the worker takes a fitted worker's rates in each replicate), and give the
    # same soft labels run after run, in this process and in a new one.
    _answer(world, ["d"])
    kept = load_corpus_data(world.corpus)
    assert kept.extra["correction_fit"] is None
    assert _same(kept.soft_replicates, load_corpus_data(world.corpus).soft_replicates)
    correction.forget_answers()
    assert _same(kept.soft_replicates, load_corpus_data(world.corpus).soft_replicates)
    # More answers of theirs than KBPO_SOFT_LABEL_NEW_WORKER_ANSWERS: refitted.
    settings.KBPO_SOFT_LABEL_NEW_WORKER_ANSWERS = 0
    assert load_corpus_data(world.corpus).extra["correction_fit"] is not None
    settings.KBPO_SOFT_LABEL_NEW_WORKER_ANSWERS = 1
    # More replicates than stored: refitted.
    scoring.recompute(world.corpus)
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 8
    assert load_corpus_data(world.corpus).extra["correction_fit"] is not None


def stored_fit_counting_posteriors(world: World, settings, monkeypatch,
                                   growth: float) -> list[int]:
    """A crowd on ``world``, its correction fitted and stored (4 replicates, refitted
    past ``growth``); returns the list that receives the number of questions of every
    posterior computed from then on."""
    _crowd(world)
    settings.KBPO_SOFT_LABELS = True
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 4
    settings.KBPO_SOFT_LABEL_REFIT_GROWTH = growth
    correction.forget_answers()
    scoring.recompute(world.corpus)  # fits and stores the parameters
    computed: list[int] = []
    real = correction.coin_posterior

    def spy(params, items, workers, answers, n_items, **kw):
        computed.append(n_items)
        return real(params, items, workers, answers, n_items, **kw)

    monkeypatch.setattr(correction, "coin_posterior", spy)
    return computed


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql",
                    reason="posteriors are kept with the answers, kept only on Postgres")
def test_only_questions_with_new_answers_get_their_posteriors_computed_again(
        world: World, settings, monkeypatch) -> None:
    """Under stored parameters each replicate's posterior of a question depends on its
    own answers alone: a worker keeps the rows and computes those of labels on new or
    newly answered questions only, and gives the floats a computation from scratch
    gives (which computes the labelled questions' posteriors: no other is used)."""
    computed = stored_fit_counting_posteriors(world, settings, monkeypatch, growth=1.0)

    def load() -> list:
        data = load_corpus_data(world.corpus)
        assert data.extra["correction_fit"] is None  # the stored parameters serve
        return data.soft_replicates

    def scratch() -> list:
        correction.forget_answers()
        return load()

    first = load()
    n_questions = Question.objects.filter(corpus=world.corpus).count()
    assert computed == []  # the refit's run computed them under the stored parameters
    assert _same(first, scratch()) and computed == [n_questions] * 4
    computed.clear()
    assert _same(load(), first) and computed == []
    _answer(world, ["a", "b"])  # a new question, which the label of "born" moves to
    question = Response.objects.order_by("pk").last().question
    PairLabel.objects.filter(pair=world.pairs["born"]).update(question=question)
    grown = load()
    assert computed == [1] * 4
    computed.clear()
    # The label moved off its first question: that one's posterior is not needed.
    assert _same(grown, scratch()) and computed == [n_questions] * 4
    computed.clear()
    # A new answer on a question answered before: that question alone.
    worker = CrowdWorker.objects.get(external_id="c")
    asg = Assignment.objects.create(hit=HitQuestion.objects.get(question=question).hit,
                                    worker=worker, external_id="as3-c")
    Response.objects.create(assignment=asg, question=question, worker=worker,
                            choices=["no_relation"])
    more = load()
    assert computed == [1] * 4
    computed.clear()
    assert _same(more, scratch()) and not _same(more, grown)
    assert computed == [n_questions] * 4
    correction.forget_answers()
