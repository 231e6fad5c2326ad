"""The crowd accuracy the report shows: the clustered share and its interval, and the
figures computed from stored answers and soft labels."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import t as student_t

from annotations.models import (
    Assignment,
    Backend,
    CrowdWorker,
    HitQuestion,
    PairLabel,
    Question,
    Response,
    TaskKind,
)
from annotations.quality import accuracy, label_table
from estimation.core.intervals import covers
from tests.factories import make_corpus, make_hit, make_pair, span
from tests.stat_checks import assert_coverage


def test_independent_answers_give_the_wilson_interval() -> None:
    # 20 workers, 5 answers each, every worker right 4 times: no between-worker spread.
    values = [1.0, 1.0, 1.0, 1.0, 0.0] * 20
    clusters = np.repeat(np.arange(20), 5)
    share = accuracy.clustered_share(values, clusters)
    assert share.estimate == pytest.approx(0.8)
    assert share.effective_answers == pytest.approx(100)  # design effect floored at 1
    lo, hi = accuracy._wilson(0.8, 100, student_t.ppf(0.95, 19))  # t on 19 df
    assert (share.lo, share.hi) == pytest.approx((lo, hi))
    assert share.lo < 0.8 < share.hi


def test_clustered_errors_widen_the_interval_and_one_worker_counts_once() -> None:
    # Half the workers always right, half always wrong: 100 answers are worth ~10.
    values = np.repeat([1.0, 0.0] * 5, 10)
    clusters = np.repeat(np.arange(10), 10)
    share = accuracy.clustered_share(values, clusters)
    assert share.effective_answers == pytest.approx(100 / (10 * 10 / 9), rel=1e-6)
    assert share.hi - share.lo > 0.4
    single = accuracy.clustered_share([1.0] * 50, [7] * 50)
    assert single.effective_answers == 1 and single.workers == 1 and single.lo < 0.3
    empty = accuracy.clustered_share([], [])
    assert empty.estimate is None and empty.answers == 0


def test_interval_covers_the_crowds_accuracy_with_systematic_workers() -> None:
    """Workers differ in accuracy (Beta-distributed); the target is the mean accuracy
    of the answers' population, which a binomial interval over answers under-covers."""
    rng = np.random.default_rng(1701)
    trials, workers, per_worker = 400, 12, 25
    hits = np.zeros(trials, dtype=bool)
    naive = np.zeros(trials, dtype=bool)
    for t in range(trials):
        acc = rng.beta(8, 2, size=workers)       # mean 0.8, systematic per worker
        right = rng.random((workers, per_worker)) < acc[:, None]
        share = accuracy.clustered_share(right.ravel().astype(float),
                                         np.repeat(np.arange(workers), per_worker))
        hits[t] = covers(share.lo, share.hi, 0.8)
        lo, hi = accuracy._wilson(share.estimate, right.size, 1.6448536)
        naive[t] = covers(lo, hi, 0.8)
    assert_coverage("crowd accuracy (clustered Wilson)", hits)
    assert naive.mean() < 0.8  # what the answer-level interval would claim


def _two_questions(tag: str) -> tuple:
    """A corpus with two mention pairs asked in one relation HIT: (corpus, pairs, the
    HIT, its questions in HIT order)."""
    corpus = make_corpus(tag)
    doc = corpus.documents.get(doc_id="D1")
    pairs = [make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE"),
             make_pair(doc, span(doc, "Tom King", 1), "PER", span(doc, "Acme"), "ORG")]
    hit = make_hit(corpus, pairs)
    return corpus, pairs, hit, [hq.question for hq in
                                HitQuestion.objects.filter(hit=hit).order_by("position")]


@pytest.mark.django_db
def test_crowd_accuracy_from_answers_and_posteriors() -> None:
    corpus, pairs, hit, questions = _two_questions("acc")
    truth = [["per:place_of_birth"], ["no_relation"]]
    answers = {"a": truth, "b": truth, "c": [["no_relation"], ["no_relation"]]}
    for name, given in answers.items():
        worker = CrowdWorker.objects.create(backend=Backend.SIMULATED, external_id=name)
        asg = Assignment.objects.create(hit=hit, worker=worker, external_id=f"as-{name}")
        for q, choice in zip(questions, given, strict=True):
            Response.objects.create(assignment=asg, question=q, worker=worker, choices=choice)
    PairLabel.objects.create(pair=pairs[0], question=questions[0], predicates=truth[0],
                             support=2 / 3, n_answers=3,
                             posterior={"per:place_of_birth": 0.9, "no_relation": 0.1})
    PairLabel.objects.create(pair=pairs[1], question=questions[1], predicates=truth[1],
                             support=1.0, n_answers=3)  # no posterior yet
    acc = accuracy.crowd_accuracy(corpus.pk)
    assert acc.agreement.answers == 6 and acc.agreement.workers == 3
    assert acc.agreement.estimate == pytest.approx(5 / 6)
    # Only the first pair has a posterior: two answers right with P 0.9, one with 0.1.
    assert acc.accuracy.answers == 3
    assert acc.accuracy.estimate == pytest.approx((0.9 + 0.9 + 0.1) / 3)
    assert acc.accuracy.lo < acc.accuracy.estimate < acc.accuracy.hi
    assert accuracy.p_right(["a", "b"], {"a": 0.7, "b": 0.4}) == 0.4
    assert acc.differs_from_majority == 0 and acc.labels == 2
    assert acc.majority_agreement.estimate == pytest.approx(5 / 6)
    # A label moved away from its vote: agreement with the vote is counted apart.
    PairLabel.objects.filter(pair=pairs[1]).update(majority=["per:place_of_birth"])
    moved = accuracy.crowd_accuracy(corpus.pk)
    assert moved.differs_from_majority == 1
    assert moved.agreement.estimate == pytest.approx(5 / 6)
    assert moved.majority_agreement.estimate == pytest.approx(2 / 6)
    # An answer naming two relations is right with the smaller of their probabilities.
    Response.objects.filter(question=questions[0], worker__external_id="c").update(
        choices=["no_relation", "per:place_of_birth"])
    both = accuracy.crowd_accuracy(corpus.pk)
    assert both.accuracy.estimate == pytest.approx((0.9 + 0.9 + 0.1) / 3)
    Response.objects.filter(question=questions[0], worker__external_id="c").update(
        choices=["per:origin", "per:place_of_birth"])
    assert accuracy.crowd_accuracy(corpus.pk).accuracy.estimate == pytest.approx(
        (0.9 + 0.9 + 0.0) / 3)


def _control_world() -> tuple[list, list]:
    """Two test questions and four controls (two relations, two no relation) answered
    by four workers; returns (test questions, controls)."""
    corpus, pairs, hit, tests = _two_questions("ctl")
    known = [["per:place_of_birth"], ["per:employee_or_member_of", "per:title"],
             ["no_relation"], ["no_relation"]]
    controls = [Question.objects.create(corpus=corpus, kind=TaskKind.RELATION,
                                        pair=pairs[i % 2], control_answer=k)
                for i, k in enumerate(known)]
    # Per worker, per control: the answer given (None: not asked).
    given = {"a": [["per:place_of_birth"], ["per:title", "per:employee_or_member_of"],
                   ["no_relation"], ["no_relation"]],           # 4 of 4 (order irrelevant)
             "b": [["per:place_of_birth"], ["per:title"],
                   ["no_relation"], ["per:place_of_birth"]],    # 2 of 4
             "c": [["no_relation"]] * 4,                        # 2 of 4: the negatives
             "d": [None, None, [], None]}                       # [] is no relation: 1 of 1
    for name, answers in given.items():
        worker = CrowdWorker.objects.create(backend=Backend.SIMULATED, external_id=name)
        asg = Assignment.objects.create(hit=hit, worker=worker, external_id=f"as-{name}")
        for q, choice in zip(controls, answers, strict=True):
            if choice is not None:
                Response.objects.create(assignment=asg, question=q, worker=worker,
                                        choices=choice)
        if name != "d":  # and the test questions, unlabelled
            for q in tests:
                Response.objects.create(assignment=asg, question=q, worker=worker,
                                        choices=["no_relation"])
    return tests, controls


@pytest.mark.django_db
def test_control_accuracy_counts_answers_equal_to_the_known_answer(
        django_assert_num_queries) -> None:
    tests, controls = _control_world()
    corpus_id = controls[0].corpus_id
    with django_assert_num_queries(1):
        ctl = accuracy.control_accuracy(corpus_id)
    assert ctl.accuracy.answers == 13 and ctl.accuracy.workers == 4
    assert ctl.accuracy.estimate == pytest.approx(9 / 13)
    # The same share and interval as the answers clustered by worker, listed by hand.
    right = [1, 1, 1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1]  # a, b, c (four each), d
    who = [0] * 4 + [1] * 4 + [2] * 4 + [3]
    by_hand = accuracy.clustered_share(right, who)
    assert (ctl.accuracy.lo, ctl.accuracy.hi) == pytest.approx((by_hand.lo, by_hand.hi))
    assert ctl.accuracy.lo < 9 / 13 < ctl.accuracy.hi
    # Split by the known answer: c, who says no relation to everything, is right only
    # on the negatives.
    assert ctl.on_relation.answers == 6 and ctl.on_relation.workers == 3
    assert ctl.on_relation.estimate == pytest.approx(3 / 6)
    assert ctl.on_no_relation.answers == 7 and ctl.on_no_relation.workers == 4
    assert ctl.on_no_relation.estimate == pytest.approx(6 / 7)
    # 13 control answers among 13 + 6 relation answers.
    assert ctl.relation_answers == 19 and ctl.share_of_answers == pytest.approx(13 / 19)
    # The crowd section carries it, and the labelled answers' figures ignore controls.
    crowd = accuracy.crowd_accuracy(corpus_id)
    assert crowd.controls == ctl and crowd.agreement.answers == 0
    PairLabel.objects.create(pair=tests[0].pair, question=tests[0], predicates=["no_relation"],
                             support=1.0, n_answers=3)
    assert accuracy.crowd_accuracy(corpus_id).agreement.answers == 3
    assert crowd.as_dict()["controls"]["share_of_answers"] == pytest.approx(13 / 19)
    assert crowd.as_dict()["controls"]["on_relation"]["estimate"] == pytest.approx(0.5)


@pytest.mark.django_db
def test_no_control_answers_measure_nothing() -> None:
    _, controls = _control_world()
    corpus_id = controls[0].corpus_id
    Response.objects.filter(question__in=controls).delete()
    ctl = accuracy.control_accuracy(corpus_id)
    assert ctl.accuracy.answers == 0 and ctl.accuracy.estimate is None
    assert ctl.on_relation.estimate is None and ctl.on_no_relation.estimate is None
    assert ctl.relation_answers == 6 and ctl.share_of_answers == 0.0
    Response.objects.all().delete()
    empty = accuracy.control_accuracy(corpus_id)
    assert empty.relation_answers == 0 and empty.share_of_answers is None
    assert accuracy.control_accuracy(corpus_id + 1000).accuracy.answers == 0  # other corpus


def _row_by_row(corpus_id: int) -> tuple[list, list, list, list, int, int]:
    """crowd_accuracy's figures as it computed them before it was vectorised: one
    answer at a time, with p_right (agreement, its workers, P(right), its workers,
    labels answered, labels off their vote)."""
    labels = {}
    for label in PairLabel.objects.filter(question__corpus_id=corpus_id):
        key = accuracy.answer_key(label.predicates)
        vote = accuracy.answer_key(label.majority) if label.majority else key
        labels[label.question_id] = (key, vote, label.posterior)
    agree, agree_w, right, right_w = [], [], [], []
    answered = set()
    for r in Response.objects.filter(question__corpus_id=corpus_id,
                                     question_id__in=list(labels)).order_by("pk"):
        key, _, post = labels[r.question_id]
        answered.add(r.question_id)
        agree.append(1.0 if accuracy.answer_key(r.choices) == key else 0.0)
        agree_w.append(r.worker_id)
        if post:
            right.append(accuracy.p_right(r.choices, post))
            right_w.append(r.worker_id)
    differs = sum(1 for q in answered if labels[q][0] != labels[q][1])
    return agree, agree_w, right, right_w, len(answered), differs


@pytest.mark.django_db
def test_crowd_accuracy_equals_the_row_by_row_figures() -> None:
    """Random answers (some naming two relations) and posteriors (some missing a
    name, one empty): the vectorised figures are the row-by-row ones."""
    rng = np.random.default_rng(11)
    corpus, pairs, hit, questions = _two_questions("vec")
    options = [["per:place_of_birth"], ["no_relation"], ["per:origin"],
               ["per:origin", "per:place_of_birth"], ["org:founded_by"]]
    for w in range(12):
        worker = CrowdWorker.objects.create(backend=Backend.SIMULATED, external_id=f"w{w}")
        asg = Assignment.objects.create(hit=hit, worker=worker, external_id=f"as-{w}")
        for q in questions:
            Response.objects.create(assignment=asg, question=q, worker=worker,
                                    choices=options[rng.integers(len(options))])
    PairLabel.objects.create(pair=pairs[0], question=questions[0], predicates=options[0],
                             majority=options[2], support=0.5, n_answers=12,
                             posterior={"per:place_of_birth": float(rng.random()),
                                        "no_relation": float(rng.random())})
    PairLabel.objects.create(pair=pairs[1], question=questions[1], predicates=options[3],
                             support=0.5, n_answers=12,
                             posterior={"per:origin": float(rng.random()),
                                        "per:place_of_birth": float(rng.random())})
    for _ in range(2):
        agree, agree_w, right, right_w, n_labels, differs = _row_by_row(corpus.pk)
        got = accuracy.crowd_accuracy(corpus.pk)
        assert got.labels == n_labels == 2 and got.differs_from_majority == differs
        for share, (x, w) in ((got.agreement, (agree, agree_w)),
                              (got.accuracy, (right, right_w))):
            want = accuracy.clustered_share(x, w)
            assert share.answers == want.answers and share.workers == want.workers
            assert share.estimate == pytest.approx(want.estimate, rel=1e-12, abs=1e-15)
            assert share.lo == pytest.approx(want.lo, rel=1e-12, abs=1e-15)
            assert share.hi == pytest.approx(want.hi, rel=1e-12, abs=1e-15)
        # An empty posterior: that label's answers leave the model accuracy.
        PairLabel.objects.filter(pair=pairs[1]).update(posterior={})


def _tested_posteriors(answers: np.ndarray, sens: float, spec: float) -> np.ndarray:
    """P(relation) of tested pairs (rows of yes/no answers) under the crowd-average
    rates and the class share fitted by EM (its fixed point is the mean posterior):
    what the labels' stored posteriors give when the model fits."""
    yes = answers.sum(axis=1)
    no = answers.shape[1] - yes
    like1 = sens ** yes * (1 - sens) ** no
    like0 = (1 - spec) ** yes * spec ** no
    share = 0.5
    for _ in range(200):
        post = share * like1 / (share * like1 + (1 - share) * like0)
        share = float(post.mean())
    return post


# Crowd settings: (workers, controls per worker, tested pairs, answers per pair,
# sensitivity Beta, specificity Beta, tested share holding a relation).
MISSES_RELATIONS = (15, 40, 400, 3, (6, 4), (19, 1), 0.4)
LARGER_CROWD = (30, 30, 800, 5, (7, 3), (18, 2), 0.5)


def _reweighting_trial(rng: np.random.Generator, setting: tuple = MISSES_RELATIONS,
                       with_answers: bool = True
                       ) -> tuple[float, accuracy.Proportion, accuracy.Reweighted]:
    """One simulated crowd whose workers' sensitivity and specificity are systematic
    (Beta per worker) on controls that are 15% relations and tested pairs that hold a
    relation at the setting's share: (the answers' expected accuracy on the tested mix,
    the raw control share, the re-weighted figure; with the tested answers given to it
    unless `with_answers` is off)."""
    workers, per_worker, pairs, per_pair, b_sens, b_spec, truth_share = setting
    sens, spec = rng.beta(*b_sens, workers), rng.beta(*b_spec, workers)
    control_share = 0.15
    # Controls: per worker, each control a relation with probability 0.15.
    positive = rng.random((workers, per_worker)) < control_share
    rate = np.where(positive, sens[:, None], spec[:, None])
    right = (rng.random((workers, per_worker)) < rate).ravel().astype(float)
    ids = rng.permutation(10_000)[:workers]
    who = np.repeat(ids, per_worker)
    # Tested pairs, each answered by distinct random workers.
    holds = rng.random(pairs) < truth_share
    asked = np.argsort(rng.random((pairs, workers)), axis=1)[:, :per_pair]
    says_yes = np.where(holds[:, None], rng.random((pairs, per_pair)) < sens[asked],
                        rng.random((pairs, per_pair)) >= spec[asked])
    pos = positive.ravel()
    post = _tested_posteriors(says_yes, right[pos].mean(), right[~pos].mean())
    tested = accuracy.TestedAnswers(np.repeat(np.arange(pairs), per_pair), ids[asked].ravel(),
                                    says_yes.ravel()) if with_answers else None
    got = accuracy.reweighted_share(right, who, pos, accuracy.tested_mix(post),
                                    tested=tested)
    mean_sens = b_sens[0] / sum(b_sens)
    mean_spec = b_spec[0] / sum(b_spec)
    target = truth_share * mean_sens + (1 - truth_share) * mean_spec  # crowd's mean rates
    return target, accuracy.clustered_share(right, who), got


@pytest.mark.parametrize("setting", [MISSES_RELATIONS, LARGER_CROWD])
def test_reweighted_control_accuracy_is_closer_to_the_accuracy_on_the_tested_mix(
        setting: tuple) -> None:
    rng = np.random.default_rng(2417)
    trials = 300
    raw_err, rw_err = np.zeros(trials), np.zeros(trials)
    hits = np.zeros(trials, dtype=bool)
    raw_hits = np.zeros(trials, dtype=bool)
    for t in range(trials):
        target, raw, got = _reweighting_trial(rng, setting)
        raw_err[t], rw_err[t] = abs(raw.estimate - target), abs(got.estimate - target)
        hits[t] = covers(got.lo, got.hi, target)
        raw_hits[t] = covers(raw.lo, raw.hi, target)
    gain = raw_err - rw_err
    se = gain.std(ddof=1) / np.sqrt(trials)
    # The raw share sits on the controls' mix (≈ 0.90), the target on the tested one.
    assert gain.mean() > 5 * se and gain.mean() > 0.03, (gain.mean(), se)
    # With the worker jackknife the interval covers at the nominal rate: inside
    # 0.9 ± 3.29 binomial standard errors (± 0.057 at 300 trials).
    assert_coverage("re-weighted control accuracy", hits)
    assert raw_hits.mean() < 0.2, raw_hits.mean()


def test_the_worker_jackknife_only_widens_and_needs_two_workers() -> None:
    """With the tested answers the interval is never narrower than without them (the
    jackknife's variance is a floor raised, not a replacement); it is wider on average
    (the observed information alone covered 0.82–0.87 in these settings); one worker or
    no tested answers leave the figure as it was."""
    rng = np.random.default_rng(5)
    widths = []
    for _ in range(40):
        state = rng.bit_generator.state
        _, _, without = _reweighting_trial(rng, MISSES_RELATIONS, with_answers=False)
        rng.bit_generator.state = state
        _, _, with_jk = _reweighting_trial(rng, MISSES_RELATIONS)
        assert with_jk.estimate == without.estimate
        assert with_jk.lo <= without.lo and with_jk.hi >= without.hi
        widths.append((with_jk.hi - with_jk.lo) / (without.hi - without.lo))
    assert np.mean(widths) > 1.1, np.mean(widths)
    right = np.array([1.0, 1.0, 0.0, 1.0])
    pos = np.array([True, False, False, False])
    mix = (0.3, 0.05, 50)
    one = accuracy.TestedAnswers(np.array([0, 1]), np.array([9, 9]), np.array([True, False]))
    assert accuracy.reweighted_share(right, [9] * 4, pos, mix, tested=one) \
        == accuracy.reweighted_share(right, [9] * 4, pos, mix)
    none = accuracy.TestedAnswers(np.zeros(0, int), np.zeros(0, int), np.zeros(0, bool))
    who = np.array([3, 3, 4, 4])
    assert accuracy.reweighted_share(right, who, pos, mix, tested=none) \
        == accuracy.reweighted_share(right, who, pos, mix)


def test_reweighted_interval_counts_the_mix_and_the_clusters() -> None:
    rng = np.random.default_rng(77)
    right = (rng.random(400) < 0.8).astype(float)
    pos = np.arange(400) % 4 == 0
    who = np.repeat(np.arange(40), 10)
    sure = accuracy.reweighted_share(right, who, pos, (0.5, 0.0, 10 ** 9))
    vague = accuracy.reweighted_share(right, who, pos, (0.5, 0.1, 20))
    a1, a0 = right[pos].mean(), right[~pos].mean()
    assert sure.estimate == pytest.approx(0.5 * a1 + 0.5 * a0) == vague.estimate
    # The mix's uncertainty adds (a1 − a0)²·se(π)² to the variance.
    var = lambda r: r.estimate * (1 - r.estimate) / r.effective_answers  # noqa: E731
    assert var(vague) - var(sure) == pytest.approx((a1 - a0) ** 2 * 0.1 ** 2, rel=1e-6)
    # Workers all-right or all-wrong on both parts: their answers count about once each.
    good = np.repeat(rng.random(40) < 0.8, 10).astype(float)
    clustered = accuracy.reweighted_share(good, who, pos, (0.5, 0.0, 10 ** 9))
    assert clustered.effective_answers < 60 < sure.effective_answers
    assert clustered.hi - clustered.lo > sure.hi - sure.lo


def test_reweighting_needs_both_parts_a_share_and_takes_one_worker_as_one_answer() -> None:
    right = np.array([1.0, 1.0, 0.0, 1.0])
    pos = np.array([True, False, False, False])
    who = np.array([3, 3, 4, 4])
    mix = (0.3, 0.05, 50)
    assert accuracy.reweighted_share(right, who, pos, None).estimate is None
    only_neg = accuracy.reweighted_share(right[1:], who[1:], pos[1:], mix)
    assert only_neg.estimate is None and only_neg.relation_share == 0.3
    none = accuracy.reweighted_share(np.zeros(0), np.zeros(0), np.zeros(0, bool), mix)
    assert none.estimate is None and none.workers == 0
    one = accuracy.reweighted_share(right, [9] * 4, pos, mix)
    assert one.estimate == pytest.approx(0.3 * 1 + 0.7 * 2 / 3)
    assert one.workers == 1 and one.effective_answers < 1.01 and one.lo < 0.3
    perfect = accuracy.reweighted_share(np.ones(4), who, pos, mix)
    assert perfect.estimate == 1.0 and perfect.hi == 1.0 and perfect.lo < 1.0


def test_the_tested_mix_is_the_mean_posterior_and_vague_posteriors_widen_it() -> None:
    certain = accuracy.tested_mix(np.array([1.0] * 30 + [0.0] * 70))
    assert certain == pytest.approx((0.3, np.sqrt(0.3 * 0.7 / 100), 100))
    vague = accuracy.tested_mix(np.array([0.6] * 30 + [0.2] * 70))
    assert vague[0] == pytest.approx(0.32) and vague[1] > 2 * certain[1]
    assert accuracy.tested_mix(np.zeros(0)) is None
    assert accuracy.tested_mix(np.zeros(5)) == (0.0, 0.0, 5)
    assert accuracy.tested_mix(np.full(5, 0.5)) is None  # says nothing about the mix


@pytest.mark.django_db
def test_control_accuracy_is_reweighted_to_the_labelled_pairs_posteriors(
        monkeypatch: pytest.MonkeyPatch) -> None:
    tests, controls = _control_world()
    corpus_id = controls[0].corpus_id
    # No posterior yet (quality pass not run): no mix, so no re-weighted figure.
    assert accuracy.crowd_accuracy(corpus_id).controls.reweighted.estimate is None
    for q, post in zip(tests, [{"no_relation": 0.8, "per:title": 0.2},
                               {"per:title": 0.9, "no_relation": 0.1}], strict=True):
        PairLabel.objects.create(pair=q.pair, question=q, predicates=["no_relation"],
                                 support=1.0, n_answers=3, posterior=post)
    ctl = accuracy.crowd_accuracy(corpus_id).controls
    share = (0.2 + 0.9) / 2
    rw = ctl.reweighted
    assert rw.relation_share == pytest.approx(share) and rw.pairs == 2 and rw.workers == 4
    assert rw.estimate == pytest.approx(share * 3 / 6 + (1 - share) * 6 / 7)
    assert rw.lo < rw.estimate < rw.hi
    assert rw.relation_share_se == pytest.approx(accuracy.tested_mix(np.array([0.2, 0.9]))[1])
    assert ctl.as_dict()["reweighted"]["estimate"] == pytest.approx(rw.estimate)
    # The interval's jackknife gets the tested answers (a, b, c: "no relation" to both
    # pairs) and which control answers name a relation (a: 2, b: 3 of their 4).
    seen = []
    jackknife = accuracy._jackknife_variance

    def spy(*args: object) -> float | None:
        seen.append(args)
        return jackknife(*args)

    monkeypatch.setattr(accuracy, "_jackknife_variance", spy)
    accuracy.crowd_accuracy(corpus_id)
    (_, who, _, says, pi, tested), = seen
    ids = {w.external_id: w.pk for w in CrowdWorker.objects.all()}
    assert sorted(tested.workers.tolist()) == sorted([ids[k] for k in "abc"] * 2)
    assert len(set(tested.pairs.tolist())) == 2 and not tested.says_relation.any()
    named = {k: int(says[who == ids[k]].sum()) for k in "abcd"}
    assert named == {"a": 2, "b": 3, "c": 0, "d": 0} and pi == pytest.approx(share)
    # The standalone figure has no labels to weigh by.
    assert accuracy.control_accuracy(corpus_id).reweighted.estimate is None


def test_json_many_decodes_as_one_loads_per_text() -> None:
    texts = ['{"per:spouse": 0.123456789, "no_relation": 1e-7}', "{}", '["a", "b"]',
             '{"x": 0.30000000000000004}']
    assert label_table.json_many(texts) == [json.loads(t) for t in texts]
    assert label_table.json_many([]) == []
