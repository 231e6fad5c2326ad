"""The crowd's measured accuracy on a corpus, for the evaluation report.

Three figures, and what each measures:

- *agreement*: the share of answers equal to the aggregated label of their pair. It
  measures agreement with the crowd's own verdict, not with the truth: a crowd
  that errs together agrees perfectly.
- *model accuracy*: the mean, over answers, of the probability that the answer is
  right under the quality pass's worker model (the posterior stored on the labels).
  It is an estimate of accuracy against the truth, as good as the model; its
  interval covers the sampling of answers and workers, not the model's misfit.
- *control accuracy*: the share of answers to control questions (known answer from
  the exhaustive gold) equal to the known answer, compared by `answer_key` as the
  quality pass does. A direct measure against the truth, on the controls' mix of
  relations and "no relation"; so it is also split by the known answer (a crowd
  that says "no relation" to everything scores well when most controls are
  negatives). Beside it, the controls' share of all relation answers (their cost).
- *control accuracy on the test mix*: the two parts of the control accuracy
  weighted by the estimated share of tested pairs that hold a relation (the mean of
  1 − P(no relation) over the labels' posteriors), so that the figure answers "how
  often is an answer to a question under test right", not "... to a control". Its
  interval adds the mix's uncertainty to the two parts', at least a jackknife over
  workers that refits the mix without each (`reweighted_share`).

Beside them, the labels: which aggregator decides them (`KBPO_LABEL_AGGREGATION`),
how many labelled pairs there are, on how many the stored label differs from the
majority vote, and the agreement figure computed against the majority vote, so the
two aggregators can be compared on the same answers.

The interval is a Wilson interval on an effective number of answers: a worker's
answers are not independent (their errors are systematic), so the answers are
treated as clustered by worker and the count is divided by the measured design
effect, and the quantile is Student's t on (workers − 1) degrees of freedom. With a
single worker nothing separates the worker from the crowd and the effective count
is one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db.models import Case, Count, Q, TextField, When
from django.db.models.functions import Cast
from scipy.stats import t as student_t

from annotations.models import PairLabel, Response, TaskKind

from .aggregation import NO_RELATION, answer_key
from .label_table import LabelTable, label_table


@dataclass(frozen=True)
class Proportion:
    """A share measured on answers clustered by worker, with its interval."""

    estimate: float | None
    lo: float | None
    hi: float | None
    answers: int
    workers: int
    effective_answers: float

    def as_dict(self) -> dict[str, float | int | None]:
        return {"estimate": self.estimate, "lo": self.lo, "hi": self.hi,
                "answers": self.answers, "workers": self.workers,
                "effective_answers": round(self.effective_answers, 1)}


@dataclass(frozen=True)
class Reweighted:
    """Control accuracy weighted to the tested pairs' mix of relation / no relation."""

    estimate: float | None
    lo: float | None
    hi: float | None
    relation_share: float | None     # estimated share of tested pairs holding a relation
    relation_share_se: float | None  # ... its standard error
    pairs: int                       # tested pairs the share is estimated on
    workers: int
    effective_answers: float

    def as_dict(self) -> dict[str, float | int | None]:
        return {"estimate": self.estimate, "lo": self.lo, "hi": self.hi,
                "relation_share": self.relation_share,
                "relation_share_se": self.relation_share_se, "pairs": self.pairs,
                "workers": self.workers, "effective_answers": round(self.effective_answers, 1)}


NOT_REWEIGHTED = Reweighted(None, None, None, None, None, 0, 0, 0.0)


@dataclass(frozen=True)
class ControlAccuracy:
    """Answers to control questions against their known answers."""

    accuracy: Proportion      # control answers equal to the known answer
    on_relation: Proportion   # ... on controls whose known answer is a relation
    on_no_relation: Proportion  # ... on controls whose known answer is no_relation
    relation_answers: int = 0   # every answer to a relation question, controls included
    # The two parts weighted to the tested pairs' mix (None estimate: not measurable).
    reweighted: Reweighted = NOT_REWEIGHTED

    @property
    def share_of_answers(self) -> float | None:
        if not self.relation_answers:
            return None
        return self.accuracy.answers / self.relation_answers

    def as_dict(self) -> dict[str, object]:
        return {"accuracy": self.accuracy.as_dict(), "on_relation": self.on_relation.as_dict(),
                "on_no_relation": self.on_no_relation.as_dict(),
                "relation_answers": self.relation_answers,
                "share_of_answers": self.share_of_answers,
                "reweighted": self.reweighted.as_dict()}


@dataclass(frozen=True)
class CrowdAccuracy:
    agreement: Proportion      # answers equal to their pair's aggregated label
    accuracy: Proportion       # mean P(answer right) under the worker model
    majority_agreement: Proportion  # answers equal to their pair's majority vote
    aggregator: str = "majority"    # what decides the stored labels
    labels: int = 0                 # labelled pairs with crowd answers
    differs_from_majority: int = 0  # ... whose stored label is not the majority vote
    controls: ControlAccuracy | None = None  # answers to control questions

    def as_dict(self) -> dict[str, object]:
        return {"agreement": self.agreement.as_dict(), "accuracy": self.accuracy.as_dict(),
                "majority_agreement": self.majority_agreement.as_dict(),
                "aggregator": self.aggregator, "labels": self.labels,
                "differs_from_majority": self.differs_from_majority,
                "controls": self.controls.as_dict() if self.controls else None}


def clustered_share(values: Iterable[float], clusters: Iterable[int],
                    confidence: float = 0.9) -> Proportion:
    """Mean of values in [0, 1] with a Wilson interval on the clustered effective n.

    The design effect is the cluster-robust variance of the mean over the variance it
    would have with independent answers (at least 1).
    """
    # Arrays as they are (through a list they take ~40 times as long: the same values).
    x = np.array(values if isinstance(values, np.ndarray) else list(values), dtype=float)
    g = np.asarray(clusters if isinstance(clusters, np.ndarray) else list(clusters))
    n = len(x)
    if n == 0:
        return Proportion(None, None, None, 0, 0, 0.0)
    idx, n_g = _group_index(g)
    m = float(x.mean())
    if n_g < 2:
        n_eff = 1.0
    else:
        resid = np.bincount(idx, weights=x - m, minlength=n_g)
        v_cluster = float((resid ** 2).sum()) / n ** 2 * n_g / (n_g - 1)
        v_srs = m * (1 - m) / n
        deff = max(1.0, v_cluster / v_srs) if v_srs > 0 else 1.0
        n_eff = n / deff
    # Student's t on the workers' degrees of freedom: with a dozen workers the
    # cluster variance is itself uncertain and the normal quantile under-covers.
    z = float(student_t.ppf(0.5 + confidence / 2, max(n_g - 1, 1)))
    lo, hi = _wilson(m, n_eff, z)
    return Proportion(m, lo, hi, n, n_g, n_eff)


def _group_index(g: np.ndarray) -> tuple[np.ndarray, int]:
    """np.unique(g, return_inverse=True)'s inverse and the number of groups; for small
    non-negative integers (ids) by counting rather than sorting every value."""
    if g.dtype.kind in "iu" and int(g.min()) >= 0 and int(g.max()) < 4 * len(g) + 1_000_000:
        present = np.bincount(g) > 0
        return (np.cumsum(present) - 1)[g], int(present.sum())
    _, idx = np.unique(g, return_inverse=True)
    return idx.ravel(), int(idx.max()) + 1


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    z2n = z * z / n
    center = (p + z2n / 2) / (1 + z2n)
    half = z * np.sqrt(p * (1 - p) / n + z2n / (4 * n)) / (1 + z2n)
    lo = 0.0 if p <= 0 else float(np.clip(center - half, 0, 1))
    hi = 1.0 if p >= 1 else float(np.clip(center + half, 0, 1))
    return lo, hi


def tested_mix(p_relation: np.ndarray) -> tuple[float, float, int] | None:
    """(share, standard error, pairs): the share of tested pairs holding a relation,
    the mean of their posterior P(relation) (for a fitted class share that is its
    EM fixed point), with the mixture's observed information for its variance:
    1 / Σ (p/π − (1 − p)/(1 − π))². With certain posteriors that is π(1 − π)/pairs;
    vague ones (few answers, noisy workers) say less about the mix, and it grows."""
    p = np.asarray(p_relation, dtype=float)
    if not len(p):
        return None
    pi = float(p.mean())
    if not 0 < pi < 1:
        return pi, 0.0, len(p)
    info = float(((p / pi - (1 - p) / (1 - pi)) ** 2).sum())
    # Every posterior at the share itself says nothing about the mix: not measured.
    return (pi, float(np.sqrt(1 / info)), len(p)) if info > 1e-12 else None


@dataclass(frozen=True)
class TestedAnswers:
    """The answers to the labelled tested pairs, collapsed to relation / no relation:
    per answer its pair (an index), its worker (the controls' worker ids) and whether
    it names a relation. What the worker jackknife of the re-weighted figure refits
    the mix from (`reweighted_share`)."""

    pairs: np.ndarray
    workers: np.ndarray
    says_relation: np.ndarray


def _mix_by_pattern(counts: np.ndarray, yes: np.ndarray, no: np.ndarray, sens: np.ndarray,
                    spec: np.ndarray, start: float, iters: int = 500) -> np.ndarray:
    """The class share's EM fixed point (the mean posterior P(relation)) of pairs
    summarised by their (relation, no relation) answer counts, for several rate pairs at
    once. `counts`: (replicates, patterns) pairs per count pattern, pattern p having
    `yes[p]` and `no[p]` answers; `sens`, `spec`: per replicate. A pair's posterior
    depends only on its pattern, so each EM step is over a few patterns, not every
    pair."""
    s = np.clip(sens, 1e-6, 1 - 1e-6)[:, None]
    c = np.clip(spec, 1e-6, 1 - 1e-6)[:, None]
    llr = yes[None, :] * np.log(s / (1 - c)) + no[None, :] * np.log((1 - s) / c)
    like = np.exp(np.clip(llr, -700, 700))  # P(pattern | relation) / P(... | none)
    total = counts.sum(axis=1)
    share = np.full(len(counts), start)
    for _ in range(iters):
        odds = like * (share / (1 - share))[:, None]
        new = np.clip((counts * (odds / (1 + odds))).sum(axis=1) / total, 1e-9, 1 - 1e-9)
        if np.max(np.abs(new - share)) < 1e-10:
            return new
        share = new
    return share


def _jackknife_variance(x: np.ndarray, g: np.ndarray, pos: np.ndarray, says: np.ndarray,
                        pi: float, tested: TestedAnswers) -> float | None:
    """Delete-one-worker jackknife variance of π·a₁ + (1 − π)·a₀, π refitted without the
    worker: the worker's control answers leave a₁ and a₀ and the rates the mix is refitted
    with (a crowd-average model: sensitivity the relation controls' share answered
    with a relation, specificity a₀), and its tested answers leave their pairs. Each
    replicate's π is the stored one shifted by the refit's change, so the variance is
    the model's but the estimate stays the stored posteriors'. That carries the
    fitted rates' error, a worker's correlation across tested pairs and the covariance
    between the parts and the mix, which the observed information leaves out. None
    with fewer than two workers."""
    gt = np.asarray(tested.workers)
    ids, cidx = np.unique(np.concatenate([g, gt]), return_inverse=True)
    n_w = len(ids)
    if n_w < 2 or not len(gt):
        return None
    wc, wt = cidx[:len(g)], cidx[len(g):]
    # Per worker: right / said-relation / answers on each control kind, to remove.
    def per(v: np.ndarray, sel: np.ndarray) -> np.ndarray:
        return np.bincount(wc[sel], weights=v[sel], minlength=n_w)
    r1, r0 = per(x, pos), per(x, ~pos)
    y1 = per(says.astype(float), pos)
    m1, m0 = per(np.ones(len(x)), pos), per(np.ones(len(x)), ~pos)
    n1, n0 = m1.sum() - m1, m0.sum() - m0
    ok = (n1 > 0) & (n0 > 0)
    a1 = np.divide(r1.sum() - r1, n1, out=np.zeros(n_w), where=n1 > 0)
    a0 = np.divide(r0.sum() - r0, n0, out=np.zeros(n_w), where=n0 > 0)
    sens = np.divide(y1.sum() - y1, n1, out=np.zeros(n_w), where=n1 > 0)
    # Tested pairs' count patterns, overall and with each worker's answers taken out.
    _, pair = np.unique(np.asarray(tested.pairs), return_inverse=True)
    yes_a = np.asarray(tested.says_relation, dtype=bool)
    n_pairs = int(pair.max()) + 1
    yes = np.bincount(pair, weights=yes_a, minlength=n_pairs).astype(np.int64)
    no = np.bincount(pair, weights=~yes_a, minlength=n_pairs).astype(np.int64)
    cell, inv = np.unique(wt.astype(np.int64) * n_pairs + pair, return_inverse=True)
    w_yes = np.bincount(inv, weights=yes_a, minlength=len(cell)).astype(np.int64)
    w_no = np.bincount(inv, weights=~yes_a, minlength=len(cell)).astype(np.int64)
    c_w, c_p = cell // n_pairs, cell % n_pairs
    # Patterns by code yes·m + no: the full ones and those a worker's removal leaves
    # (a sparse table: a control answered by everyone has a long pattern, not a grid).
    m = int(max(yes.max(), no.max())) + 1
    full, cut = yes * m + no, (yes[c_p] - w_yes) * m + no[c_p] - w_no
    codes, inv_all = np.unique(np.concatenate([full, cut]), return_inverse=True)
    p_full, p_cut = inv_all[:n_pairs], inv_all[n_pairs:]
    counts = np.zeros((n_w + 1, len(codes)))
    counts[-1] = np.bincount(p_full, minlength=len(codes))
    counts[:-1] = counts[-1]
    np.add.at(counts, (c_w, p_full[c_p]), -1)
    np.add.at(counts, (c_w, p_cut), 1)
    full_sens = float(y1.sum() / m1.sum())
    full_spec = float(r0.sum() / m0.sum())
    fits = _mix_by_pattern(counts, (codes // m).astype(float), (codes % m).astype(float),
                           np.append(sens, full_sens), np.append(a0, full_spec),
                           start=min(max(pi, 1e-3), 1 - 1e-3))
    pis = np.clip(pi + fits[:-1] - fits[-1], 0, 1)
    theta = (pis * a1 + (1 - pis) * a0)[ok]
    if len(theta) < 2:
        return None
    k = len(theta)
    return float((k - 1) / k * ((theta - theta.mean()) ** 2).sum())


def reweighted_share(values: np.ndarray, clusters: np.ndarray, positive: np.ndarray,
                     mix: tuple[float, float, int] | None, confidence: float = 0.9,
                     tested: TestedAnswers | None = None,
                     says_relation: np.ndarray | None = None) -> Reweighted:
    """π·a₁ + (1 − π)·a₀: the share right among answers with `positive` (a₁) and without
    (a₀), weighted by π from `mix` = (π, its standard error, pairs it is measured on:
    `tested_mix`).

    Variance: the two parts' sampling variance, clustered by worker (one worker's
    answers in both parts form one cluster, so their covariance is in), at least the
    independent answers' one; plus the mix's, (a₁ − a₀)²·se(π)² (delta method). The
    interval is Wilson's on the effective number of answers that variance gives, with
    Student's t on workers − 1 degrees of freedom, as `clustered_share`. Not
    measurable (estimate None) without answers in both parts or without a mix.

    With `tested` (the answers the mix's posteriors come from) the variance is at least
    the delete-one-worker jackknife's (`_jackknife_variance`): the sum above under-covers
    (0.79–0.84 for a nominal 0.9 in the simulated crowd of the tests) because se(π)
    treats the pairs as independent and the rates as known. `says_relation`: per
    control answer, whether it names a relation (the refit's sensitivity); by default a
    relation control's answer names one when it is right."""
    x = np.asarray(values, dtype=float)
    g = np.asarray(clusters)
    pos = np.asarray(positive, dtype=bool)
    n1, n0 = int(pos.sum()), int((~pos).sum())
    n_g = len(np.unique(g)) if len(g) else 0
    if mix is None or not n1 or not n0:
        share, se, pairs = mix or (None, None, 0)
        return Reweighted(None, None, None, share, se, pairs, n_g, 0.0)
    pi, se, pairs = mix
    a1, a0 = float(x[pos].mean()), float(x[~pos].mean())
    est = pi * a1 + (1 - pi) * a0
    # Each answer's term in the estimator's deviation from its expectation.
    dev = np.where(pos, pi * (x - a1) / n1, (1 - pi) * (x - a0) / n0)
    v_srs = pi ** 2 * a1 * (1 - a1) / n1 + (1 - pi) ** 2 * a0 * (1 - a0) / n0
    n_kish = 1 / (pi ** 2 / n1 + (1 - pi) ** 2 / n0)  # answers' worth, all independent
    if n_g < 2:
        v_samp, n_samp = None, 1.0  # one worker counts as one answer (clustered_share)
    else:
        _, idx = np.unique(g, return_inverse=True)
        v_cl = float((np.bincount(idx, weights=dev, minlength=n_g) ** 2).sum()) \
            * n_g / (n_g - 1)
        v_samp = max(v_cl, v_srs)
        n_samp = n_kish / max(1.0, v_cl / v_srs) if v_srs > 0 else n_kish
    v_mix = (a1 - a0) ** 2 * se ** 2
    if v_samp is None:
        v_samp = est * (1 - est) / n_samp
    var = v_samp + v_mix
    if tested is not None:
        says = np.asarray(says_relation, dtype=bool) if says_relation is not None \
            else np.where(pos, x > 0.5, x < 0.5)
        v_jk = _jackknife_variance(x, g, pos, says, pi, tested)
        if v_jk is not None:
            var = max(var, v_jk)  # never narrower than the sum it replaces
    n_eff = est * (1 - est) / var if est * (1 - est) > 0 and var > 0 else n_samp
    z = float(student_t.ppf(0.5 + confidence / 2, max(n_g - 1, 1)))
    lo, hi = _wilson(est, n_eff, z)
    return Reweighted(est, lo, hi, pi, se, pairs, n_g, n_eff)


def p_right(choices: list[str], posterior: dict[str, float], key: str | None = None
            ) -> float:
    """P(an answer is right) from a label's stored posterior (per predicate).

    The posterior is stored per predicate, so for an answer naming two relations the
    smallest of their probabilities is used (an upper bound on both holding).
    `key`: the answer's `answer_key`, if the caller has it.
    """
    if key is None:
        key = answer_key(choices)
    names = [NO_RELATION] if key == NO_RELATION else list(choices)
    return min(float(posterior.get(name, 0.0)) for name in names)


class Decoder:
    """JSON answer text → (choices, answer key), decoded once per distinct text (a crowd
    gives few distinct answers)."""

    def __init__(self) -> None:
        self._keys: dict[str, tuple[list[str], str]] = {}

    def __call__(self, text: str) -> tuple[list[str], str]:
        if text not in self._keys:
            choices = json.loads(text)
            self._keys[text] = (choices, answer_key(choices))
        return self._keys[text]


@dataclass(frozen=True)
class RelationAnswers:
    """Every answer to the corpus's relation questions, in id order (as a caller that
    read them already has them): question id, worker id and answer key per answer."""

    questions: np.ndarray
    workers: np.ndarray
    keys: Sequence[str]
    # Known answer key per control question among them, read in the same snapshot (None:
    # not read; `control_accuracy` then queries them).
    controls: Mapping[int, str] | None = None
    # The keys numbered, if the caller has them so: per answer its key's index in
    # key_names (distinct keys), spares a look-up per answer.
    key_ids: np.ndarray | None = None
    key_names: Sequence[str] | None = None


def crowd_accuracy(corpus_id: int, confidence: float = 0.9,
                   answers: RelationAnswers | None = None,
                   labels: LabelTable | None = None) -> CrowdAccuracy:
    """The crowd's agreement and model accuracy over the corpus's labelled answers.

    Only answers to relation questions whose label the quality pass has given a
    posterior count in the model accuracy; agreement counts every labelled answer.
    ``answers``: the corpus's relation answers, if the caller read them in the same
    snapshot (they are not read again). The shares sum in answer-id order either way:
    the same floats whoever read the answers.
    ``labels``: the corpus's labels, likewise (`label_table`).
    """
    decode = Decoder()  # JSON text -> (choices, key), once per distinct text

    def as_text(field: str) -> Cast:
        return Cast(field, TextField())

    table = label_table(corpus_id) if labels is None else labels
    # The labels of questions, by question id; each text's answer key and vote.
    asked = np.flatnonzero(table.questions >= 0)
    lab_at = asked[np.argsort(table.questions[asked], kind="stable")]  # table positions
    lab_q = table.questions[lab_at]
    key_id: dict[str, int] = {}  # answer key -> small integer, compared as arrays
    text_key = np.asarray([key_id.setdefault(decode(t)[1], len(key_id)) for t in table.texts],
                          np.int64)
    # The vote: the majority's key, or the label's own where no majority was kept.
    text_vote = np.asarray([key_id.setdefault(decode(t)[1], len(key_id))
                            if t and decode(t)[0] else -1 for t in table.texts], np.int64)
    lab_key = text_key[table.predicates[lab_at]]
    lab_vote = text_vote[table.majority[lab_at]]
    lab_vote = np.where(lab_vote >= 0, lab_vote, lab_key)
    # Per answer, in the rows' order (the shares' sums follow it): its label, worker
    # and distinct answer (text, or key when given the answers).
    text_id: dict[str, int] = {}
    if answers is None:
        rows = list(Response.objects.filter(question__corpus_id=corpus_id, counted=True,
                                            question__kind=TaskKind.RELATION,
                                            question_id__in=PairLabel.objects.filter(
                                                question__corpus_id=corpus_id)
                                            .values("question_id"))
                    .annotate(text=as_text("choices"))
                    .values_list("question_id", "worker_id", "text").order_by("pk"))
        n = len(rows)
        at = np.searchsorted(np.asarray(lab_q, np.int64),
                             np.fromiter((r[0] for r in rows), np.int64, n))
        workers = np.fromiter((r[1] for r in rows), np.int64, n)
        tid = np.fromiter((text_id.setdefault(r[2], len(text_id)) for r in rows), np.int64, n)
        del rows
        texts = [decode(t) for t in text_id]
    else:
        sorted_q = np.asarray(lab_q, np.int64)
        pos = np.minimum(np.searchsorted(sorted_q, answers.questions), max(len(lab_q) - 1, 0))
        mine = np.flatnonzero(sorted_q[pos] == answers.questions) if len(lab_q) \
            else np.zeros(0, np.int64)  # answers to labelled questions
        n = len(mine)
        at, workers = pos[mine], np.asarray(answers.workers, np.int64)[mine]
        if answers.key_ids is not None and answers.key_names is not None:
            # The distinct keys numbered as they first come, as the look-ups below would.
            kid = np.asarray(answers.key_ids, np.int64)[mine]
            first = np.full(len(answers.key_names), n)
            np.minimum.at(first, kid, np.arange(n))
            in_order = np.argsort(first, kind="stable")[:int((first < n).sum())]
            renumber = np.zeros(len(answers.key_names), np.int64)
            renumber[in_order] = np.arange(len(in_order))
            tid = renumber[kid]
            text_id.update((answers.key_names[k], t) for t, k in enumerate(in_order.tolist()))
        else:
            keys = answers.keys
            tid = np.fromiter((text_id.setdefault(keys[j], len(text_id))
                               for j in mine.tolist()), np.int64, n)
        # A key names the answer's distinct choices: the same names for p_right.
        texts = [(k.split("|"), k) for k in text_id]
    given = np.asarray([key_id.setdefault(k, len(key_id)) for _, k in texts], np.int64)[tid]
    agree = (given == np.asarray(lab_key, np.int64)[at]).astype(float)
    vote_agree = (given == np.asarray(lab_vote, np.int64)[at]).astype(float)
    answered = np.flatnonzero(np.bincount(at, minlength=len(lab_q)))  # np.unique(at)
    # The answered labels' posteriors, flattened: cell (label, name) -> P.
    label_of = np.full(len(table), -1, np.int64)  # table position -> label (by question)
    label_of[lab_at] = np.arange(len(lab_at))
    row_label = label_of[table.positions(table.soft_ids)]
    is_answered = np.zeros(len(lab_q), dtype=bool)
    is_answered[answered] = True
    mine = np.flatnonzero(row_label >= 0)
    mine = mine[is_answered[row_label[mine]]]
    has_post = np.zeros(len(lab_q), dtype=bool)
    has_post[row_label[mine]] = True
    cells = row_label[mine] * (1 << 16) + table.soft_names[mine]
    order = np.argsort(cells, kind="stable")
    cell_keys, vals = cells[order], table.soft_probs[mine][order]
    name_id = {name: i for i, name in enumerate(table.names)}

    def prob_of(name: str, labels: np.ndarray) -> np.ndarray:
        """P(name) in each label's posterior (0 where it has none), as p_right reads it."""
        if name not in name_id or not len(cell_keys):
            return np.zeros(len(labels))
        want = labels * (1 << 16) + name_id[name]
        pos = np.minimum(np.searchsorted(cell_keys, want), len(cell_keys) - 1)
        return np.where(cell_keys[pos] == want, vals[pos], 0.0)

    # P(answer right) = p_right: the smallest P of the names the answer gives.
    with_post = has_post[at]
    right = np.zeros(n)
    for t, (choices, key) in enumerate(texts):
        sel = np.flatnonzero(with_post & (tid == t))
        if not len(sel):
            continue
        names = [NO_RELATION] if key == NO_RELATION else list(choices)
        right[sel] = np.minimum.reduce([prob_of(name, at[sel]) for name in names])
    # The tested pairs' mix: the mean P(pair holds a relation) over the posteriors.
    posted = answered[has_post[answered]]
    mix = tested_mix(1 - prob_of(NO_RELATION, posted))
    # ... and the answers those posteriors come from, for the interval's jackknife.
    tested = TestedAnswers(at[with_post], workers[with_post],
                           given[with_post] != key_id.get(NO_RELATION, -1))
    agree_w = workers
    right_w = workers[with_post]
    right = right[with_post]
    differs = int((np.asarray(lab_key, np.int64)[answered]
                   != np.asarray(lab_vote, np.int64)[answered]).sum()) if len(answered) else 0
    return CrowdAccuracy(clustered_share(agree, agree_w, confidence),
                         clustered_share(right, right_w, confidence),
                         clustered_share(vote_agree, agree_w, confidence),
                         aggregator=settings.KBPO_LABEL_AGGREGATION, labels=len(answered),
                         differs_from_majority=differs,
                         controls=control_accuracy(corpus_id, confidence, decode, mix, tested,
                                                   answers))


def control_accuracy(corpus_id: int, confidence: float = 0.9,
                     decode: Decoder | None = None,
                     mix: tuple[float, float, int] | None = None,
                     tested: TestedAnswers | None = None,
                     answers: RelationAnswers | None = None) -> ControlAccuracy:
    """Control answers against their known answers, and the controls' share of answers.

    One query grouped in the database by (worker, answer, known answer): a worker gives
    few distinct answers, so the rows are about workers × answers, not answers. The
    answers to test questions are only counted (their answer is not read).
    `decode`: the caller's JSON text → (choices, answer key) cache, if it has one.
    `mix`: the tested pairs' share holding a relation, its standard error and the
    pairs it is measured on (`tested_mix`), to weight the two parts to the tested
    pairs' mix (`reweighted_share`); `tested`: the answers that mix comes from, for
    its interval's worker jackknife. `answers`: the corpus's relation answers with their
    controls' known answers, if the caller read them (nothing is queried then).
    """
    if answers is not None and answers.controls is not None:
        known = answers.controls
        questions = np.asarray(answers.questions, np.int64)
        at = np.flatnonzero(np.isin(questions, np.fromiter(known, np.int64, len(known))))
        truth = [known[q] for q in questions[at].tolist()]
        given = [answers.keys[j] for j in at.tolist()]
        x = np.asarray([1.0 if k == t else 0.0 for k, t in zip(given, truth, strict=True)])
        w = np.asarray(answers.workers, np.int64)[at]
        pos = np.asarray([t != NO_RELATION for t in truth], dtype=bool)
        return ControlAccuracy(clustered_share(x, w, confidence),
                               clustered_share(x[pos], w[pos], confidence),
                               clustered_share(x[~pos], w[~pos], confidence),
                               relation_answers=len(answers.keys),
                               reweighted=reweighted_share(
                                   x, w, pos, mix, confidence, tested,
                                   np.asarray([k != NO_RELATION for k in given], dtype=bool)))
    decode = decode or Decoder()
    is_control = Q(question__control_answer__isnull=False)
    rows = (Response.objects.filter(question__corpus_id=corpus_id, counted=True,
                                    question__kind=TaskKind.RELATION)
            .annotate(known=Cast("question__control_answer", TextField()),
                      text=Case(When(is_control, then=Cast("choices", TextField())),
                                output_field=TextField()))
            .values_list("worker_id", "known", "text").annotate(n=Count("id")).order_by())
    total = 0
    # Per answer: right (0/1), worker, and whether the known answer is a relation.
    right: list[float] = []
    workers: list[int] = []
    positive: list[bool] = []
    says: list[bool] = []  # ... and whether the answer names a relation
    for wid, known, text, n in rows:
        total += n
        if known is None:
            continue
        truth = decode(known)[1]
        key = decode(text)[1]
        right += [1.0 if key == truth else 0.0] * n
        workers += [wid] * n
        positive += [truth != NO_RELATION] * n
        says += [key != NO_RELATION] * n
    pos = np.asarray(positive, dtype=bool)
    x, w = np.asarray(right), np.asarray(workers)
    return ControlAccuracy(clustered_share(x, w, confidence),
                           clustered_share(x[pos], w[pos], confidence),
                           clustered_share(x[~pos], w[~pos], confidence),
                           relation_answers=total,
                           reweighted=reweighted_share(x, w, pos, mix, confidence, tested,
                                                       np.asarray(says, dtype=bool)))
