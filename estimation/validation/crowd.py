"""A simulated crowd for the validation battery: noisy labels of mention pairs.

Vectorised numpy, the same error model as the Django side's simulated crowd
(annotations.crowd.simulation): honest workers answer right with their own
accuracy (drawn around 1 − error rate) and otherwise pick one of the pair's other
offered answers uniformly; spammers answer uniformly at random. With
``systematic`` an honest worker's errors on true pairs are blind spots instead: they
miss each relation type with probability ``error_rate``, and miss it every time
(answering "no relation"), so extra answers from the same worker never wash it out.

Pairs are typed, as in production where a pair's two entity types decide the
relations its question offers: each type offers a fixed set of relations, and types
differ in how often their pairs hold a relation at all. The model is fitted with its
class shares per type, as the quality pass fits it.

Labels follow the production rule (annotations.crowd.labels): three answers, a
strict majority wins; without one, another answer, up to two more; then the
plurality. Codes: predicates 0..P−1, NO_RELATION = −1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from annotations.quality import aggregation
from annotations.quality.aggregation import one_coin, parameter_replicates
from annotations.quality.worker_bootstrap import worker_replicates

from ..core import Evidence, Population, prepare_evidence
from ..core import evidence as evidence_module
from ..core.estimators import Estimates
from ..core.evidence import odds_between
from ..core.noise import (
    as_instances,
    calibration_multiplier,
    correction_variance,
    from_posterior,
    self_consistent,
    widen,
    with_soft_labels,
)

NO_RELATION = -1
# Scale the soft labels' variance by the controls' calibration multiplier φ
# (`CrowdLabeller.calibration`; crowd-bias.md §17). Off: as the service scores.
ANSWER_NOISE = False
# The correction's replicates from a bootstrap over workers (`worker_replicates`;
# crowd-bias.md §18) instead of over questions: True beside precision's Bernoulli term
# for the labels, "alone" without it. False: as the service scores.
WORKER_BOOTSTRAP: bool | str = False
# > 1: the controls' posteriors for φ from that many refits, each without one fold's
# known answers; 0: from the fit's parameters (which counted them).
CALIBRATION_FOLDS = 0


@dataclass(frozen=True)
class CrowdSpec:
    error_rate: float = 0.1  # mean error rate of honest workers
    spammer_share: float = 0.1  # workers answering at random
    n_workers: int = 20
    answers: int = 3  # per question, before ties ask for more
    max_extra: int = 2
    n_options: int = 6  # relations an untyped pair offers (pair_types=0), besides none
    # Pair types (the two entity types of a pair): each offers a fixed set of relations,
    # and types differ in how often their pairs hold one (PER-PER pairs rarely do, say).
    # 0: untyped, every question offers a random set.
    pair_types: int = 8
    type_options: int = 4  # relations each pair type offers, besides none
    type_spread: float = 1.0  # sd of a type's log odds of holding no relation
    systematic: bool = False
    # Share of every HIT's questions with a known answer (KBPO_CONTROL_SHARE): 0.09 is
    # 0.09/0.91 = 9.9% questions on top of the labels.
    control_share: float = 0.09
    bootstrap: int = 8  # replicates over questions for the correction's uncertainty (0: none)
    # Attractive relations (the world's most frequent ones, codes 0..attractive−1): an
    # honest worker names relation r on a question that offers it and whose pair holds
    # no relation with the worker's own rate, drawn uniformly from ``attractive_rate``
    # per (worker, relation): a yes-bias per worker and relation, beside the other
    # errors. (On a pair holding another relation the worker names that one.)
    attractive: int = 0
    attractive_rate: tuple[float, float] = (0.2, 0.6)


@dataclass
class CrowdLabels:
    """Answers to a set of questions and the production labels made from them."""

    items: np.ndarray  # (A,) question index of each answer
    workers: np.ndarray  # (A,) worker index
    answers: np.ndarray  # (A,) answer code
    labels: np.ndarray  # (n,) majority/plurality label per question
    n_options: np.ndarray  # (n,) answers offered per question (incl. no relation)


@dataclass
class Pool:
    accuracy: np.ndarray  # (W,)
    spammer: np.ndarray  # (W,) bool
    blind: np.ndarray  # (W, P) bool: relation types the worker always misses (systematic)
    # (W, P) chance that the worker names relation r where it is offered and the pair
    # holds no relation (0 but for attractive relations; spammers answer at random).
    yes: np.ndarray | None = None


def make_pool(spec: CrowdSpec, n_predicates: int, rng: np.random.Generator) -> Pool:
    w = spec.n_workers
    n_spam = round(w * spec.spammer_share) if w > 3 else 0
    spammer = np.arange(w) >= w - n_spam
    acc = np.clip(rng.normal(1 - spec.error_rate, 0.05, w), 0.0, 1.0)
    if spec.error_rate == 0:
        acc[:] = 1.0
    blind = np.zeros((w, n_predicates), dtype=bool)
    if spec.systematic:
        blind = rng.random((w, n_predicates)) < spec.error_rate
    yes = np.zeros((w, n_predicates))
    k = min(spec.attractive, n_predicates)
    if k:
        lo, hi = spec.attractive_rate
        yes[:, :k] = rng.uniform(lo, hi, (w, k))
        yes[spammer] = 0.0
    return Pool(np.where(spammer, 0.0, acc), spammer, blind, yes)


def pair_types(truth: np.ndarray, spec: CrowdSpec, n_predicates: int,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(type of each pair, (types × k) relations each type offers).

    Every relation belongs to some type; a pair holding relation r gets a type that
    offers r, a pair holding none any type, with type-specific odds: how common each
    relation is against "no relation" depends on the pair's types, as in a real corpus.
    """
    truth = np.asarray(truth, dtype=np.int64)
    k = min(spec.type_options, n_predicates)
    t = spec.pair_types
    # As in a schema, each relation belongs to one or two types: overlapping windows
    # over a shuffled relation list (every relation in some window when t·k ≥ P).
    order = rng.permutation(n_predicates)
    starts = (np.arange(t) * n_predicates) // t
    sets = order[(starts[:, None] + np.arange(k)[None, :]) % n_predicates]
    has = np.zeros((t, n_predicates), dtype=bool)
    np.put_along_axis(has, sets, True, axis=1)
    popular = rng.lognormal(0.0, 0.5, t)
    falsity = popular * rng.lognormal(0.0, spec.type_spread, t)
    types = np.empty(len(truth), np.int64)
    none = truth < 0
    types[none] = rng.choice(t, int(none.sum()), p=falsity / falsity.sum())
    for r in np.unique(truth[~none]):
        rows = np.flatnonzero(truth == r)
        w = popular * has[:, r]
        types[rows] = rng.choice(t, len(rows), p=w / w.sum())
    return types, sets


def _options(truth: np.ndarray, spec: CrowdSpec, n_predicates: int,
             rng: np.random.Generator, typed: tuple[np.ndarray, np.ndarray] | None = None,
             ) -> np.ndarray:
    """(n × k) relation types offered per question; the true one among them.
    ``typed``: (types, sets) from ``pair_types``: each pair offers its type's set."""
    if typed is not None:
        return typed[1][typed[0]]
    k = min(spec.n_options, n_predicates)
    offered = np.argsort(rng.random((len(truth), n_predicates)), axis=1)[:, :k]
    true = truth >= 0
    missing = true & ~(offered == truth[:, None]).any(axis=1)
    offered[missing, 0] = truth[missing]
    return offered


def _answer(truth: np.ndarray, worker: np.ndarray, offered: np.ndarray, pool: Pool,
            spec: CrowdSpec, rng: np.random.Generator) -> np.ndarray:
    """One answer per (question, worker) row."""
    n, k = offered.shape
    choices = np.concatenate([offered, np.full((n, 1), NO_RELATION)], axis=1)
    pick_any = choices[np.arange(n), rng.integers(0, k + 1, n)]
    # A wrong answer: one of the k offered answers other than the truth.
    is_true = choices == truth[:, None]
    order = np.argsort(is_true + rng.random((n, k + 1)), axis=1)  # the truth sorts last
    wrong = choices[np.arange(n), order[np.arange(n), rng.integers(0, k, n)]]
    right = rng.random(n) < pool.accuracy[worker]
    out = np.where(right, truth, wrong)
    if spec.systematic:
        honest_true = ~pool.spammer[worker] & (truth >= 0)
        blind = honest_true & pool.blind[worker, np.maximum(truth, 0)]
        # Blind spots replace the random errors on true pairs.
        out = np.where(honest_true, np.where(blind, NO_RELATION, truth), out)
    if pool.yes is not None and pool.yes.any():
        # Yes-bias: an attractive relation offered on a pair holding none is named at
        # the worker's rate for it (checked in the order offered: the first one said is
        # the answer).
        for j in range(k):
            r = offered[:, j]
            rate = pool.yes[worker, r]
            said = (truth == NO_RELATION) & (rng.random(n) < rate) & (rate > 0)
            out = np.where(said & ~_said_before(out, offered[:, :j], truth), r, out)
    return np.where(pool.spammer[worker], pick_any, out)


def _said_before(out: np.ndarray, earlier: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Whether an answer already names an earlier offered relation that is false (a
    bias checked before this one already decided the answer)."""
    if earlier.shape[1] == 0:
        return np.zeros(len(out), dtype=bool)
    return ((earlier == out[:, None]) & (earlier != truth[:, None])).any(axis=1)


def _strict_majority(answers: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Label and whether a strict majority of the first n answers agrees on it."""
    head = answers[:, :n]
    agree = (head[:, :, None] == head[:, None, :]).sum(axis=2)
    best = agree.argmax(axis=1)
    return head[np.arange(len(head)), best], agree.max(axis=1) * 2 > n


def _plurality(answers: np.ndarray) -> np.ndarray:
    """Most frequent answer; ties to the smallest code (a deterministic rule)."""
    agree = (answers[:, :, None] == answers[:, None, :]).sum(axis=2)
    top = agree == agree.max(axis=1, keepdims=True)
    return np.where(top, answers, np.iinfo(np.int64).max).min(axis=1)


def answer(truth: np.ndarray, pool: Pool, spec: CrowdSpec, n_predicates: int,
           rng: np.random.Generator,
           typed: tuple[np.ndarray, np.ndarray] | None = None) -> CrowdLabels:
    """The crowd answers every question (true codes ``truth``), ties asking for more.
    ``typed``: pair types and their relation sets (``pair_types``); None: random sets."""
    truth = np.asarray(truth, dtype=np.int64)
    n, most = len(truth), spec.answers + spec.max_extra
    offered = _options(truth, spec, n_predicates, rng, typed)
    w = len(pool.accuracy)
    most = min(most, w)
    workers = np.argsort(rng.random((n, w)), axis=1)[:, :most]
    ans = np.stack([_answer(truth, workers[:, j], offered, pool, spec, rng)
                    for j in range(most)], axis=1)
    used = np.full(n, min(spec.answers, most))
    labels, done = _strict_majority(ans, used[0])
    for extra in range(spec.answers + 1, most + 1):
        lab, ok = _strict_majority(ans, extra)
        todo = ~done
        used[todo] = extra
        labels = np.where(todo, lab, labels)
        done = done | ok
    if (~done).any():
        for size in np.unique(used[~done]):
            rows = np.flatnonzero(~done & (used == size))
            labels[rows] = _plurality(ans[rows, :size])
    mask = np.arange(most)[None, :] < used[:, None]
    items = np.repeat(np.arange(n), used)
    return CrowdLabels(items, workers[mask], ans[mask], labels,
                       np.full(n, offered.shape[1] + 1))


class CrowdLabeller:
    """One trial's crowd: answers every pair once, labels any labelled set.

    Every pair of the world gets its answers up front (a pair is asked once, so a
    label never changes when more pairs are labelled later). ``evidence`` builds the
    estimators' input from the crowd's majority labels and, with ``correct``, the soft
    labels of the production model (annotations.quality.aggregation.one_coin, with
    separate rates for missed relations, class shares per pair type), fitted on the
    labelled pairs plus control
    questions: a share ``control_share`` of extra pairs with known answers, answered by
    the same workers, which anchor the fit and never count as labels.
    """

    def __init__(self, spec: CrowdSpec, label: np.ndarray, n_predicates: int,
                 rng: np.random.Generator, correct: bool = True) -> None:
        self.spec, self.truth, self.correct = spec, label, correct
        self.n_predicates = n_predicates
        self.pool = make_pool(spec, n_predicates, rng)
        typed = pair_types(label, spec, n_predicates, rng) if spec.pair_types > 0 else None
        self.types = None if typed is None else typed[0]
        self.got = answer(label, self.pool, spec, n_predicates, rng, typed)
        self.start = np.concatenate([[0], np.cumsum(np.bincount(self.got.items,
                                                                minlength=len(label)))])
        self.control_order = rng.permutation(len(label))
        self.controls = 0
        self.answers = 0
        self.priors = np.zeros(0)
        self.type_priors = np.zeros((0, 0))

    def labels(self, pairs: np.ndarray) -> np.ndarray:
        return self.got.labels[pairs]

    def _answers_of(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lo, hi = self.start[pairs], self.start[pairs + 1]
        idx = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi, strict=True)]) \
            if len(pairs) else np.zeros(0, np.int64)
        local = np.repeat(np.arange(len(pairs)), hi - lo)
        return local, self.got.workers[idx], self.got.answers[idx]

    def soft(self, pairs: np.ndarray) -> np.ndarray:
        """(pairs × categories) posterior, categories −1..P−1 (controls anchor it)."""
        share = self.spec.control_share
        n_ctrl = round(len(pairs) * share / (1 - share)) if share > 0 else 0
        ctrl = self.control_order[:n_ctrl]
        both = np.concatenate([pairs, ctrl])
        items, workers, answers = self._answers_of(both)
        self.controls, self.answers = n_ctrl, len(answers)
        known = {len(pairs) + k: int(self.truth[u]) for k, u in enumerate(ctrl)}
        self._last = (pairs, both, items, workers, answers, known)
        fit = self._fit(both, items, workers, answers, known, len(self.pool.accuracy))
        self._last_fit = fit
        self.priors = fit.priors
        # Each pair's type's shares, with which its posterior was computed.
        self.type_priors = aggregation.item_priors(fit.params, fit.priors,
                                                   self._strata(both), len(both))[: len(pairs)]
        return fit.posterior[: len(pairs)]

    def _fit(self, both: np.ndarray, items: np.ndarray, workers: np.ndarray,
             answers: np.ndarray, known: dict[int, int], n_workers: int, tol: float = 1e-6):
        # As in production (annotations.quality.workers.offered): class shares per pair
        # type, and the soft labels' calibrated miss rates per type.
        return one_coin(items, workers, answers.tolist(), len(both), n_workers,
                        n_options=self.got.n_options[both], known=known,
                        categories=list(range(-1, self.n_predicates)), none=NO_RELATION,
                        strata=self._strata(both), tol=tol,
                        type_shrink=aggregation.SOFT_TYPE_SHRINK)

    def _strata(self, both: np.ndarray) -> np.ndarray | None:
        return None if self.types is None else self.types[both]

    def replicates(self, rng: np.random.Generator) -> list:
        """Soft labels of the last ``soft`` call under ``spec.bootstrap`` replicates of
        the fitted parameters: the model refitted on a bootstrap over questions (labelled
        and control questions drawn separately, each with its answers; EM started at
        the fit's posterior), then the original answers' posterior under the refit."""
        pairs, both, items, workers, answers, known = self._last
        cats = list(range(-1, self.n_predicates))
        n = len(pairs)
        if WORKER_BOOTSTRAP:
            reps = worker_replicates(self._last_fit, items, workers, answers.tolist(),
                                     self.spec.bootstrap, rng,
                                     n_options=self.got.n_options[both], known=known,
                                     strata=self._strata(both), none=NO_RELATION)
        else:
            reps = parameter_replicates(self._last_fit, items, workers, answers.tolist(),
                                        len(self.pool.accuracy),
                                        [np.arange(n), np.arange(n, len(both))],
                                        self.spec.bootstrap, rng,
                                        n_options=self.got.n_options[both], known=known,
                                        strata=self._strata(both), none=NO_RELATION)
        return [from_posterior(pairs, cats, post[:n], priors, own[:n])
                for post, priors, own in reps]

    def widen(self, pop: Population, ev: Evidence, res: Estimates, draw_scheme: str,
              schemes: list[str], rng: np.random.Generator,
              estimator: str = "importance") -> Estimates:
        """``res`` with the correction's uncertainty (the parameters' bootstrap) added."""
        if not self.correct or self.spec.bootstrap < 2:
            return res
        var = correction_variance(pop, ev, self.replicates(rng), draw_scheme, schemes,
                                  estimator=estimator)
        return widen(res, var)

    def evidence(self, pop: Population, draws: Mapping[str, np.ndarray], lab: np.ndarray,
                 *exhaustive: np.ndarray) -> Evidence:
        """prepare_evidence on the crowd's labels (soft ones when correcting)."""
        ev = prepare_evidence(pop, draws, lab, self.labels(lab), *exhaustive)
        if not self.correct:
            return ev
        cats = list(range(-1, self.n_predicates))
        post = self.soft(lab)
        ev = with_soft_labels(pop, ev, from_posterior(lab, cats, post, self.priors,
                                                      self.type_priors))
        ev = self_consistent(pop, ev)
        if ANSWER_NOISE:
            ev = replace(ev, label_scale=self.calibration(pop, ev))
        if WORKER_BOOTSTRAP == "alone":
            # The workers' replicates redraw the answers, so they carry each answer's own
            # noise: precision's Bernoulli term for it is left out, not counted twice.
            ev = replace(ev, label_scale=0.0)
        return ev

    def calibration(self, pop: Population, ev: Evidence) -> float:
        """φ of the last ``soft`` call's controls (`noise.calibration_multiplier`): each
        control's posterior under the fit's parameters with its known answer left out
        (the fit itself counted it), every relation scored as an instance naming it
        would be (`noise.as_instances`: each system's precision ``ev.system_prior`` as
        prior, weighted by how many of its instances name the relation)."""
        pairs, both, items, workers, answers, known = self._last
        fit = self._last_fit
        n, cats = len(pairs), len(fit.priors)
        if len(both) == n or ev.system_prior is None:
            return 1.0
        strata = self._strata(both)
        if CALIBRATION_FOLDS > 1:
            # Each fold of controls refitted without its known answers: their posterior
            # then owes nothing to them (the fit's own parameters did count them).
            post = np.zeros((len(both) - n, cats))
            for f in range(CALIBRATION_FOLDS):
                out = np.arange(n + f, len(both), CALIBRATION_FOLDS)
                kept = {i: a for i, a in known.items() if (i - n - f) % CALIBRATION_FOLDS}
                post[out - n] = self._fit(both, items, workers, answers, kept,
                                          len(self.pool.accuracy)).posterior[out]
        else:
            post = aggregation.coin_posterior(fit.params, items, workers, answers.tolist(),
                                              len(both), n_options=self.got.n_options[both],
                                              strata=strata)[n:]
        own = aggregation.item_priors(fit.params, fit.priors, strata, len(both))[n:]
        divisor = odds_between(np.broadcast_to(fit.priors, own.shape), own,
                               evidence_module.REWEIGHT_BETA)
        truth = np.array([known[i] for i in range(n, len(both))], np.int64)
        inst = pop.instances()
        # Column j is code j − 1 (NO_RELATION first); instances never name none.
        named = np.zeros((cats, len(pop)))
        np.add.at(named, (inst["predicates"] + 1, inst["system"]), 1.0)
        ctrl, col = np.nonzero(np.ones((len(truth), cats - 1), bool))
        col = col + 1
        p = as_instances(post[ctrl, col], divisor[ctrl, col], ev.system_prior, named[col])
        return calibration_multiplier(p, (truth[ctrl] == col - 1).astype(float))
