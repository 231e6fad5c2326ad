"""Draws, labels and the exhaustive sample, indexed against a Population."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, logit

from .population import Population

NO_RELATION = -1
UNLABELLED = -2
# Predicate codes are below this; pair·stride + predicate is a unique (pair, predicate) key.
ALSO_TRUE_STRIDE = 1 << 20
# Agreement groups of an instance: predicted by 1, 2, or 3+ systems (noise.py: each
# system's instances get one prior per group, not one for all).
AGREE_GROUPS = 3
# Stored posteriors are rounded to 6 decimals: a relation mass this close to P(true)
# is one relation (`Evidence.relations_per_true`).
SOFT_TOL = 1e-5


@dataclass
class Interval:
    """Point estimates and interval ends, one entry per system (NaN = no estimate)."""

    estimate: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass
class Evidence:
    """Draws, labels and exhaustive sample, indexed against a Population.

    n:        (m,) usable draws per system (draws of pairs without a label are dropped)
    pending:  (m,) draws dropped because their pair has no label yet
    pairs:    (nU,) dense pair index of the distinct labelled drawn pairs U
    counts:   (m × nU) CSR, draws of system j landing on pair u
    label:    (n_pairs,) label code per pair: predicate code, -1 no relation, -2 unlabelled.
              Every labelled pair counts, drawn or not: a label decides every
              system's instances on its pair (the sure bounds of docs/internals/estimation.md §4).
    y_pairs:  (n0,) dense pair index of the exhaustive true instances (-1: pair unknown)
    y_preds, y_subjects: (n0,) their predicate and subject codes
    y_docs:   (n0,) cluster (document) code of each exhaustive instance, 0..D-1; with
              no documents given, every instance is its own cluster
    also_true: sorted keys pair·K + predicate of further true predicates on pairs
              whose crowd label holds two relations (a founder who is also an employee)
    soft_keys, soft_probs: soft labels (noise.with_soft_labels): sorted keys
              pair·K + predicate and the probability that the predicate holds there
    true_prob: (n_pairs,) P(the pair holds some relation) where a soft label is
              known, NaN elsewhere (the hard label decides there)
    relation_mass: (n_pairs,) Σ over predicates of P(the predicate holds) where a soft
              label is known: the expected number of true predicates on the pair
    """

    n: np.ndarray
    pending: np.ndarray
    pairs: np.ndarray
    counts: sp.csr_matrix
    label: np.ndarray
    y_pairs: np.ndarray
    y_preds: np.ndarray
    y_subjects: np.ndarray
    also_true: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    y_docs: np.ndarray | None = None
    soft_keys: np.ndarray | None = None
    soft_probs: np.ndarray | None = None
    true_prob: np.ndarray | None = None
    relation_mass: np.ndarray | None = None
    soft_prior: np.ndarray | None = None  # per soft key: the crowd-wide share of that answer
    # Per soft key: that answer's share among pairs of the pair's type (NaN: unknown).
    soft_type_prior: np.ndarray | None = None
    true_prior: float | None = None  # the crowd-wide share of pairs with a relation
    # Per pair (NaN: not known): the P(true) prior its re-weighting divides out, between
    # the crowd-wide share and its pair type's as for a relation (`reweight_prior`).
    true_prior_at: np.ndarray | None = None
    system_prior: np.ndarray | None = None  # (m,) each system's precision (noise.py)
    # (m × AGREE_GROUPS) each system's precision among its instances that 1, 2, 3+
    # systems predict (noise.py), and the sorted instance keys pair·K + predicate with
    # their agreement group (`agreement_groups`); when set, `correct` takes it.
    group_prior: np.ndarray | None = None
    agree_keys: np.ndarray | None = None
    agree_group: np.ndarray | None = None
    # φ ≥ 1: the soft labels' Bernoulli variance times this in precision's sampling
    # variance, the posteriors' miscalibration measured on the controls
    # (noise.calibration_multiplier); 1: posteriors taken as calibrated (shipped); 0:
    # left out, for a bootstrap whose replicates redraw the answers (crowd-bias.md §18).
    label_scale: float = 1.0
    # `reweight_prior` per soft key, made on first use (not copied by `replace`).
    _reweight: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.y_docs is None:
            self.y_docs = np.arange(len(self.y_pairs), dtype=np.int64)

    @property
    def n_docs(self) -> int:
        """Number of clusters (documents) in the exhaustive sample."""
        return int(self.y_docs.max()) + 1 if len(self.y_docs) else 0

    def correct(
        self, pairs: np.ndarray, predicates: np.ndarray, systems: np.ndarray | None = None
    ) -> np.ndarray:
        """Whether each (dense pair index, predicate code) agrees with the crowd label;
        with soft labels, the probability that it is right (float). With
        ``system_prior`` set and the predicting system of each element given, that
        probability uses the system's precision as prior instead of the crowd's
        answer shares (noise.py: a system's instances are not a random pair)."""
        ok = self.label[pairs] == predicates
        if len(self.also_true):
            ok |= np.isin(pairs * ALSO_TRUE_STRIDE + predicates, self.also_true)
        if self.true_prob is None or self.soft_keys is None or self.soft_probs is None:
            return ok
        soft = ~np.isnan(self.true_prob[pairs])
        keys = pairs * ALSO_TRUE_STRIDE + predicates
        pos = np.minimum(np.searchsorted(self.soft_keys, keys), max(len(self.soft_keys) - 1, 0))
        found = (self.soft_keys[pos] == keys) if len(self.soft_keys) else np.zeros(len(keys), bool)
        prob = np.where(found, self.soft_probs[pos] if len(self.soft_probs) else 0.0, 0.0)
        if systems is not None and self.system_prior is not None and self.soft_prior is not None:
            prior = self.reweight_prior(pos, found)
            own = self.system_prior[systems]
            if self.group_prior is not None:
                own = self.group_prior[systems, self.group_of(keys)]
            prob = np.where(np.isnan(own), prob, reprior(prob, prior, own))
        return np.where(soft, prob, ok.astype(float))

    def reweight_prior(self, pos: np.ndarray, found: np.ndarray) -> np.ndarray:
        """The prior share that re-weighting a soft P(instance right) to a system's
        precision divides out, at soft keys ``pos`` (0.5 where not ``found``): between
        the crowd-wide share and the pair type's (`REWEIGHT_BETA`)."""
        if self.soft_prior is None or not len(self.soft_prior):
            return np.full(len(pos), 0.5)
        if self._reweight is None:
            # Once per soft key, then gathered: the callers ask at many more positions
            # (every instance or predicted relation), often the same ones.
            prior = self.soft_prior
            own = self.soft_type_prior
            self._reweight = prior if own is None else np.where(
                np.isnan(own), prior, odds_between(prior, own, REWEIGHT_BETA))
        return np.where(found, self._reweight[pos], 0.5)

    def group_of(self, keys: np.ndarray) -> np.ndarray:
        """The agreement group of each instance key (pair·K + predicate); 0 if unknown."""
        ak, ag = self.agree_keys, self.agree_group
        if ak is None or ag is None or not len(ak):
            return np.zeros(len(keys), np.int64)
        pos = np.minimum(np.searchsorted(ak, keys), len(ak) - 1)
        return np.where(ak[pos] == keys, ag[pos], 0)

    def true_share(self, pairs: np.ndarray) -> np.ndarray:
        """P(each dense pair holds a relation): the label's verdict, or its soft value."""
        hard = (self.label[pairs] >= 0).astype(float)
        if self.true_prob is None:
            return hard
        soft = self.true_prob[pairs]
        return np.where(np.isnan(soft), hard, soft)

    def true_prior_of(self, pairs: np.ndarray) -> np.ndarray:
        """The P(true) prior each dense pair's soft P(true) is re-weighted from: its own
        where known (`true_prior_at`), the crowd-wide share otherwise."""
        base = np.full(len(pairs), np.nan if self.true_prior is None else self.true_prior)
        if self.true_prior_at is None:
            return base
        own = self.true_prior_at[pairs]
        return np.where(np.isnan(own), base, own)

    def relations_per_true(self, pairs: np.ndarray) -> np.ndarray:
        """κ: the number of true predicates on each dense pair if it holds any (1 with
        one relation, the primary label's). Recall counts true *instances*: a pair with
        two true relations is two of them, and a system naming one finds half.

        Hard labels: 1 + the further true predicates (``also_true``). Soft labels: the
        expected count given the pair is true, relation_mass / true_prob (the stored
        posteriors are marginals per predicate, an answer "a|b" giving its probability
        to both); 1 within SOFT_TOL, the stored posteriors' rounding."""
        pairs = np.asarray(pairs, dtype=np.int64)
        out = np.ones(len(pairs))
        at = self.also_true
        if len(at) and len(pairs):
            extra = (np.searchsorted(at, (pairs + 1) * ALSO_TRUE_STRIDE)
                     - np.searchsorted(at, pairs * ALSO_TRUE_STRIDE))
            own = self.label[pairs]
            # The primary predicate listed again among the further ones is no other.
            again = (own >= 0) & np.isin(pairs * ALSO_TRUE_STRIDE + own, at)
            out += extra - again
        if self.true_prob is not None and self.relation_mass is not None and len(pairs):
            tp, mass = self.true_prob[pairs], self.relation_mass[pairs]
            soft = ~np.isnan(tp)
            multi = soft & (tp > 0) & (mass > tp + SOFT_TOL)
            with np.errstate(divide="ignore", invalid="ignore"):
                out = np.where(soft, np.where(multi, mass / np.where(multi, tp, 1.0), 1.0),
                               out)
        return out


def agreement_groups(pop: Population) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct instance keys pair·K + predicate of the population and the
    agreement group of each: how many systems predict it, 1, 2 or 3+ (0, 1, 2)."""
    def build() -> tuple[np.ndarray, np.ndarray]:
        inst = pop.instances()
        keys = inst["pairs"] * ALSO_TRUE_STRIDE + inst["predicates"]
        # One system stating an instance twice counts once.
        per = np.unique(keys * max(len(pop), 1) + inst["system"])
        uniq, count = np.unique(per // max(len(pop), 1), return_counts=True)
        group = np.minimum(count, AGREE_GROUPS) - 1
        for a in (uniq, group):
            a.flags.writeable = False
        return uniq, group
    return pop.memo(("agreement",), build)


def reprior(post: np.ndarray, prior: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The posterior under another prior: odds(post)/odds(prior) is the answers'
    likelihood ratio, the same whatever the prior. 0 and 1 stay put."""
    return reprior_lr(post, likelihood_ratio(post, prior), new)


# The soft labels' posteriors are computed with the class shares of the pair's type; the
# re-weighting to a system's precision treats odds(posterior)/odds(prior) as the answers'
# likelihood ratio, exact only for two classes. Dividing out the type's share (β = 0) or
# the crowd-wide one (β = 1) biases P(right), in opposite directions on the synthetic
# demo world (−0.010…−0.020 and +0.017…+0.027 per system, true priors, six seeds), and
# β = 1 is right in the battery (β = 0: −0.006); the answers' likelihood prefers β = 0 on
# the one and β ≈ 1.4 on the other, so it cannot choose. β = 0.5 is within ±0.006 on
# the demo and −0.004 in the battery (bench/reweight_sweep.py; docs/internals/noisy-crowds.md §3).
# Paired on every noisy battery scenario, β = 0 and 0.25 read precision up to 0.005 lower
# on the uniform and yes-biased crowds, worse overall (bench/beta_battery.py;
# docs/internals/crowd-bias.md §14).
REWEIGHT_BETA = 0.5


def odds_between(a: np.ndarray, b: np.ndarray, beta: float) -> np.ndarray:
    """The share whose odds are odds(a)^β · odds(b)^(1−β)."""
    def lo(p: np.ndarray) -> np.ndarray:
        return logit(np.clip(p, 1e-12, 1 - 1e-12))
    return expit(beta * lo(a) + (1 - beta) * lo(b))


def likelihood_ratio(post: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """odds(post)/odds(prior): `reprior`'s part that does not depend on the new prior."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.clip(post, 1e-300, 1 - 1e-16)
        pr = np.clip(prior, 1e-12, 1 - 1e-12)
        return (p / (1 - p)) / (pr / (1 - pr))


def reprior_lr(post: np.ndarray, lr: np.ndarray, new: np.ndarray) -> np.ndarray:
    """`reprior` given ``lr = likelihood_ratio(post, prior)`` (the same floats)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = new * lr / (new * lr + 1 - new)
    return np.where((post <= 0) | (post >= 1) | ~np.isfinite(out), post, out)


def prepare_evidence(
    pop: Population,
    draws: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    label_pairs: np.ndarray,
    label_preds: np.ndarray,
    exhaustive_pairs: np.ndarray | None = None,
    exhaustive_preds: np.ndarray | None = None,
    exhaustive_subjects: np.ndarray | None = None,
    exhaustive_docs: np.ndarray | None = None,
) -> Evidence:
    """Index raw arrays (pair ids, predicate codes) against the population.

    draws: per system (by name, or a sequence in population order) the pair ids
    drawn i.i.d. from its distribution, repeats allowed. label_pairs/label_preds:
    every aggregated label of the corpus, drawn or not; label_preds uses -1 for
    "no relation"; a pair may appear more than once when its label holds several
    relations (its first row is the primary one). exhaustive_subjects defaults to the
    pair id. exhaustive_docs: the document id (any int64) of each exhaustive true
    instance, so that recall variances treat documents as clusters; without it every
    instance is taken as an independent draw.
    """
    m = len(pop)
    if isinstance(draws, Mapping):
        unknown = set(draws) - set(pop.names)
        if unknown:
            raise ValueError(f"draws given for unknown system(s): {sorted(unknown)}")
        per_system = [np.asarray(draws.get(name, []), dtype=np.int64) for name in pop.names]
    else:
        if len(draws) != m:
            raise ValueError(f"expected draws for {m} systems, got {len(draws)}")
        per_system = [np.asarray(d, dtype=np.int64) for d in draws]

    label = np.full(pop.n_pairs, UNLABELLED, dtype=np.int64)
    lp = pop.lookup_pairs(np.asarray(label_pairs, dtype=np.int64))
    lpred = np.asarray(label_preds, dtype=np.int64)
    known = lp >= 0
    # The first row of each pair is its primary label; later rows add true predicates.
    _, first = np.unique(lp, return_index=True)
    primary = np.zeros(len(lp), dtype=bool)
    primary[first] = True
    label[lp[known & primary]] = lpred[known & primary]
    extra = known & ~primary & (lpred >= 0)
    also_true = np.unique(lp[extra] * ALSO_TRUE_STRIDE + lpred[extra])

    sys_idx, pair_idx = [], []
    pending = np.zeros(m, dtype=np.int64)
    for k, d in enumerate(per_system):
        idx = pop.lookup_pairs(d)
        cols, _ = pop._systems[k].pair_row("instance")
        pos = np.searchsorted(cols, idx)
        ok = (idx >= 0) & (pos < len(cols)) & (cols[np.minimum(pos, len(cols) - 1)] == idx)
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            raise ValueError(
                f"draws[{pop.names[k]!r}][{bad}]: pair {int(d[bad])} is not among the "
                "system's instances"
            )
        has_label = label[idx] != UNLABELLED
        pending[k] = int((~has_label).sum())
        sys_idx.append(np.full(int(has_label.sum()), k, dtype=np.int64))
        pair_idx.append(idx[has_label])
    sys_all = np.concatenate(sys_idx) if sys_idx else np.zeros(0, np.int64)
    pair_all = np.concatenate(pair_idx) if pair_idx else np.zeros(0, np.int64)
    u, u_inv = np.unique(pair_all, return_inverse=True)
    counts = sp.csr_matrix((np.ones(len(pair_all)), (sys_all, u_inv.ravel())), shape=(m, len(u)))
    n = np.bincount(sys_all, minlength=m).astype(np.int64)

    if exhaustive_pairs is None:
        exhaustive_pairs = np.zeros(0, np.int64)
        exhaustive_preds = np.zeros(0, np.int64)
    y_ids = np.asarray(exhaustive_pairs, dtype=np.int64)
    y_subj = y_ids if exhaustive_subjects is None else np.asarray(exhaustive_subjects, np.int64)
    y_docs = None
    if exhaustive_docs is not None:
        docs = np.asarray(exhaustive_docs, dtype=np.int64)
        if docs.shape != y_ids.shape:
            raise ValueError(
                f"exhaustive_docs has {len(docs)} entries for {len(y_ids)} exhaustive instances"
            )
        y_docs = np.unique(docs, return_inverse=True)[1].ravel().astype(np.int64)
    return Evidence(
        n=n,
        pending=pending,
        pairs=u,
        counts=counts,
        label=label,
        y_pairs=pop.lookup_pairs(y_ids),
        y_preds=np.asarray(exhaustive_preds, dtype=np.int64),
        y_subjects=y_subj,
        also_true=also_true,
        y_docs=y_docs,
    )
