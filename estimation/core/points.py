"""Point estimates alone, for evidence that differs only in its soft labels.

The noise correction's replicates (noise.correction_variance) need each replicate's
point estimates, not intervals: recomputing the full `estimate` per replicate spends
nearly all its time on variances, effective sizes and interval ends it then drops.
What changes between replicates is only P(right) of the instances on labelled pairs,
P(pair true) of the labelled pairs and the systems' priors; every estimate is a sum
linear in those probabilities (precision), a ratio of such sums (ν of joint recall),
clipped into bounds that are themselves such sums, or a function of those (F1). So
`PointPlan` computes once, per population and draws, each instance's coefficient in
those sums; a replicate then costs a few gathers and sparse sums.

The numbers are `estimate(...)`'s point estimates up to the order of floating-point
additions (the importance sums run over instances here, over draws there: equal to
~1e-15 relative, tests/estimation/core/test_points.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np
import scipy.sparse as sp

from . import intervals as ci
from .compiled import kernels
from .evidence import AGREE_GROUPS, ALSO_TRUE_STRIDE, Evidence, agreement_groups, likelihood_ratio
from .importance import mixing_weights, unreached_mass
from .population import Population
from .precision import MIN_BORROWED, LabelState, RowSums
from .products import weighted_at
from .recall import exhaustive_hits, pair_true_share, predicted_relations
from .schemes import SCHEMES, check_scheme, scheme_weights
from .shares import fixed_point_shares

T = TypeVar("T")

Key = tuple[str, str, str]  # (scheme, metric, kind)
# Pseudo-instances at the system's precision in each agreement group's prior (noise.py).
GROUP_STRENGTH = 5.0
# The group priors stay within [PRIOR_FLOOR, 1 − PRIOR_FLOOR] (as the systems' do).
PRIOR_FLOOR = 1e-3


def _gather(x: sp.spmatrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """x[rows, cols] elementwise (0 where x has no entry), by search in canonical CSR."""
    x = sp.csr_matrix(x)
    x.sum_duplicates()
    x.sort_indices()
    width = np.int64(max(x.shape[1], 1))
    keys = np.repeat(np.arange(x.shape[0], dtype=np.int64), np.diff(x.indptr)) * width \
        + x.indices
    want = rows.astype(np.int64) * width + cols
    pos = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
    found = (keys[pos] == want) if len(keys) else np.zeros(len(want), bool)
    return np.where(found, x.data[pos] if len(keys) else 0.0, 0.0)


def _cells_of(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]
              ) -> tuple[sp.csr_matrix, np.ndarray]:
    """The distinct cells of entries that may repeat (several instances of a system on
    one pair), as a canonical pattern, and each entry's cell."""
    width = np.int64(max(shape[1], 1))
    cells, inv = np.unique(rows.astype(np.int64) * width + cols, return_inverse=True)
    r = cells // width
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=shape[0]), out=indptr[1:])
    return sp.csr_matrix((np.ones(len(cells)), cells % width, indptr), shape=shape), inv.ravel()


def _at_entries(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int],
                pt: sp.csr_matrix, w: np.ndarray,
                cells: tuple[sp.csr_matrix, np.ndarray] | None = None) -> np.ndarray:
    """(w·pt)[rows, cols]: `weighted_at` over the entries' distinct cells (``cells``:
    `_cells_of` theirs, if made before), spread back. Each value is the same float as a
    dense row of pt.T·w.T (ascending j from 0), whose blocks cost nnz(pt)·m however
    few entries were wanted."""
    pattern, inv = _cells_of(rows, cols, shape) if cells is None else cells
    return weighted_at(pattern, pt, w)[inv]


class PointPlan:
    """The label-free part of every point estimate over one population, its draws and
    labels (``ev``: any evidence on them; the soft labels may differ per call)."""

    def __init__(self, pop: Population, ev: Evidence, draw_scheme: str = "instance") -> None:
        self.pop, self.ev, self.draw_scheme = pop, ev, check_scheme(draw_scheme)
        self.m = len(pop)
        n = ev.n
        self.none = n == 0
        # Instances on labelled pairs (LabelState's "judged" ones) and, among them,
        # those on the labelled drawn pairs U (at_pairs's).
        # Soft labels unused, no verdicts: `right` gives them per call.
        self.state = LabelState(pop, replace(ev, true_prob=None), verdicts=False)
        inst = pop.instances()
        st = self.state
        self.j_pairs = inst["pairs"][st.judged]
        # Positions and systems in LabelState's index dtype (int32 while it fits): the
        # plan lives through every replicate, these are among its largest arrays.
        small = st.judged.dtype
        self.j_sys = inst["system"][st.judged].astype(small)
        preds = inst["predicates"][st.judged]
        hard = replace(ev, true_prob=None, soft_keys=None, soft_probs=None)
        self._hard = hard.correct(self.j_pairs, preds, self.j_sys)
        # The instances' distinct soft-label keys (sorted), searched once per call, and
        # each instance's among them (several systems predict the same pair and relation).
        self._ukeys, self._uinv = np.unique(self.j_pairs * ALSO_TRUE_STRIDE + preds,
                                            return_inverse=True)
        self._uinv = self._uinv.ravel()
        keys, groups = agreement_groups(pop)
        self.j_group = groups[np.searchsorted(keys, self._ukeys)][self._uinv].astype(small) \
            if len(keys) else np.zeros(len(self._uinv), small)
        self._cells = self.j_sys.astype(np.int64) * AGREE_GROUPS + self.j_group
        del preds
        where = np.full(pop.n_pairs, -1, dtype=np.int64)
        where[ev.pairs] = np.arange(len(ev.pairs))
        col = where[self.j_pairs]
        self.on = np.flatnonzero(col >= 0).astype(small)  # positions among the judged
        self.on_sys, self.on_col = self.j_sys[self.on], col[self.on].astype(small)
        self.on_inst = st.judged[self.on]
        self.n_u = len(ev.pairs)
        # The proposal rows at U and the draws per pair, shared by every scheme.
        self.b = pop.stacked(draw_scheme)[:, ev.pairs].tocsr()
        self.cpd = (sp.diags(np.where(n > 0, 1.0 / np.maximum(n, 1), 0.0)) @ ev.counts).tocsr()
        self._coef: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._parts: dict | None = None
        self._fixed: dict[tuple[str, bool], tuple] = {}
        self._own_at: tuple | None = None
        # The simple bounds' labels, per judged instance: the instance's system drew it.
        self._use_j = st.own[st.judged_at]
        self._last: tuple | None = None
        # (verdicts, {scheme: `_sums`}) for the verdicts last seen.
        self._xy: tuple[np.ndarray, dict] | None = None
        self._scheme_recall: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._base: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0, dtype=bool))
        self._cell_size: np.ndarray | None = None
        self._groups: tuple | None = None  # (lr, `_group_terms`) of the last lookup
        # Label-free parts other estimators make from these draws (`keep`).
        self._kept: dict[tuple, object] = {}
        self._kept_lock = threading.Lock()

    def keep(self, key: tuple, make: Callable[[], T]) -> T:
        """``make()`` once per plan: a part every evidence on these draws and labels
        shares (the distinct estimator's design), asked for by each replicate, in
        either thread of a recompute."""
        with self._kept_lock:
            if key not in self._kept:
                self._kept[key] = make()
            return self._kept[key]  # type: ignore[return-value]

    # ---- precision ----------------------------------------------------------------

    def _coefficients(self, scheme: str
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(simple coefficients, joint coefficients, joint NaN mask, joint mass) under
        ``scheme``, the coefficients of P(right) of the judged instances on U (``on``) in
        the systems' sums, and the label-free mass the joint estimate is divided by.

        The importance estimate Σ_j (w_ij/n_j) Σ_draws p_i f/q_i is Σ over system i's
        instances x on U of f(x) · p_i(x)/q_i(u) · Σ_j w_ij cpd_ju: the coefficient. The
        joint estimate is that sum over the mass Σ_u p_i(u)/q_i(u) · Σ_j w_ij cpd_ju
        (precision._self_normalised).
        """
        if scheme in self._coef:
            return self._coef[scheme]
        pop, ev, n = self.pop, self.ev, self.ev.n
        rows, cols = self.on_sys, self.on_col
        p = pop.instance_probs(scheme)[self.on_inst]
        # Simple: w = diag(n > 0), so q_i = b_i and the draw weight is cpd_i.
        if self._own_at is None:  # scheme-free: the same for every scheme
            own = (~self.none).astype(float)[rows]
            self._own_at = (_gather(self.b, rows, cols) * own,
                            _gather(self.cpd, rows, cols) * own,
                            _cells_of(rows, cols, (self.m, self.n_u)))
        q_s, c_s, cells = self._own_at
        simple = np.divide(p, q_s, out=np.zeros(len(p)), where=q_s > 0) * c_s
        w = mixing_weights(pop.overlap(scheme, self.draw_scheme), n)
        shape = (self.m, self.n_u)
        q_j = _at_entries(rows, cols, shape, self.b, w, cells)  # q_i(u)
        joint = np.divide(p, q_j, out=np.zeros(len(p)), where=q_j > 0) \
            * _at_entries(rows, cols, shape, self.cpd, w, cells)  # Σ_j w_ij cpd_ju
        nan = np.zeros(self.m, dtype=bool)
        # Σ_u p_i(u)/q_i(u) · Σ_j w_ij cpd_ju is the coefficients' sum: p_i(u) is the sum
        # of p_i(x) over i's instances on u, and every instance on U is judged.
        mass = np.bincount(rows, weights=joint, minlength=self.m)
        if self.none.any():
            # Systems without draws: no estimate when the others' draws carry little
            # weight (Kish size below MIN_BORROWED) or miss part of their pairs.
            a = sp.coo_matrix(pop.stacked(scheme)[:, ev.pairs])
            qa = _at_entries(a.row, a.col, shape, self.b, w)
            z = np.divide(a.data, qa, out=np.zeros(len(qa)), where=qa > 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                coef = np.where(n > 0, w * w / n[None, :], 0.0)
            spread = np.bincount(a.row, weights=z * z * _at_entries(a.row, a.col, shape,
                                                                     self.cpd, coef),
                                 minlength=self.m)
            with np.errstate(divide="ignore", invalid="ignore"):
                kish = np.where(spread > 0, mass * mass / spread, 0.0)
            nan |= self.none & (kish < MIN_BORROWED)
            idx, missing = unreached_mass(pop.stacked(scheme), pop.stacked(self.draw_scheme),
                                          w, self.none)
            nan[idx[np.asarray(missing) > 1e-12]] = True
        self._coef[scheme] = (simple, joint, nan, mass)
        return self._coef[scheme]

    def settle(self, schemes: Sequence[str]) -> None:
        """Make every part ``schemes``' estimates need and drop what only made them (the
        own draws' gathers and the judged cells, ~20 MB at 1M predictions): a
        recompute keeps the plan through its final estimate (scoring.py)."""
        for scheme in schemes:
            self._coefficients(check_scheme(scheme))
        self._own_at = None

    def _label_part(self, scheme: str, own: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(labelled mass, exact, p(x) of each judged instance): the verdict-free part of
        precision.label_bounds under ``scheme`` (``own``: the simple bounds' labels)."""
        st = self.state
        if (scheme, own) not in self._fixed:
            use = st._use(own)
            lab_data, judged_p = st.masses(self.pop, scheme)
            lab_mass = np.bincount(st.lab_rows, weights=lab_data * use, minlength=self.m)
            exact = (st.n_lab[own] == st.sizes) & (st.sizes > 0)
            self._fixed[(scheme, own)] = (lab_mass, exact, judged_p)
            if (scheme, not own) in self._fixed:
                st.gathered.pop(scheme, None)  # kept above what is read again
        return self._fixed[(scheme, own)]

    def _sums(self, scheme: str, right: np.ndarray, soft: bool) -> tuple[np.ndarray, ...]:
        """Every per-system sum of ``scheme``'s precision over the verdicts ``right``, in
        one compiled pass (kernels.scheme_sums: the sums the summing matrices gave, in
        their order): (simple, joint, then for the joint and the simple bounds each Σ p·x
        and Σ p·(p·x(1 − r)), x = r, or r on the system's own draws)."""
        if self._xy is None or self._xy[0] is not right:
            self._xy = (right, {})
        got = self._xy[1].get(scheme)
        if got is None:
            simple, joint, _, _ = self._coefficients(scheme)
            q = self._label_part(scheme, False)[2]
            got = self._xy[1][scheme] = kernels().scheme_sums(
                self.on_sys, self.on, simple, joint, self.state.judged_rows, q, right,
                self._use_j, soft, self.m)
        return got

    def _bounds(self, scheme: str, own: bool, right: np.ndarray, z: float, soft: bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(known, exact, lower, upper): precision.label_bounds widened as apply_bounds does."""
        lab_mass, exact, _ = self._label_part(scheme, own)
        sums = self._sums(scheme, right, soft)
        # use is 0/1: p·(r·use) is label_bounds's (p·use)·r to the bit; the spread
        # Σ p·(p·r(1 − r)·use) is its Σ q·q·r·(1 − r) to rounding (~1e-16).
        known, square = sums[4:6] if own else sums[2:4]
        wrong = np.maximum(lab_mass - known, 0.0)
        sd: np.ndarray | float = np.sqrt(square) if soft else 0.0
        known = np.minimum(known, 1.0)
        upper = np.where(exact, known, np.clip(1.0 - wrong, known, 1.0))
        spread = z * np.asarray(sd)
        return known, exact, np.maximum(known - spread, 0.0), np.minimum(upper + spread, 1.0)

    def _precision(self, scheme: str, right: np.ndarray, z: float, kinds: Sequence[str],
                   soft: bool, bounds: dict | None = None) -> dict[str, np.ndarray]:
        _, _, joint_nan, mass = self._coefficients(scheme)
        sums = self._sums(scheme, right, soft)
        # The joint estimate is self-normalised where the draws carried mass.
        joint = np.divide(sums[1], mass, out=sums[1].copy(), where=mass > 0)
        out = {}
        for kind in kinds:
            if kind == "simple":
                raw = np.where(self.none, np.nan, sums[0])
            else:
                raw = np.where(joint_nan, np.nan, joint)
            own = kind == "simple"
            cache = {} if bounds is None else bounds  # the same right and z
            if (scheme, own) not in cache:
                cache[(scheme, own)] = self._bounds(scheme, own, right, z, soft)
            known, exact, lo, hi = cache[(scheme, own)]
            out[kind] = np.where(exact, known, np.clip(raw, lo, hi))
        return out

    def right(self, ev: Evidence) -> np.ndarray:
        """P(right) of every instance on a labelled pair under ``ev``'s labels:
        `Evidence.correct`'s values, with the instances' keys searched in sorted order
        (computed once: the searches are most of a replicate's time otherwise)."""
        ok = self._hard
        if ev.true_prob is None or ev.soft_keys is None or ev.soft_probs is None:
            return ok.astype(float)
        lr = self._lookup(ev)  # sets self._base too
        base, live = self._base
        if ev.system_prior is None or lr is None:
            return base
        # reprior_lr's floats in fewer passes (this runs per fixed-point round and per
        # replicate): new·lr / ((new·lr + 1) − new), kept where the instance is soft,
        # its P strictly inside (0, 1), its system's prior known and the result finite;
        # elsewhere P (soft) or the hard verdict, as reprior_lr's own fallback does.
        # The group priors by each instance's cell (system · AGREE_GROUPS + group): one
        # flat gather rather than a two-index one, all in one compiled pass.
        if ev.group_prior is None:
            return kernels().reprior(np.asarray(ev.system_prior, float), self.j_sys, lr, live,
                                   base)
        return kernels().reprior(np.ascontiguousarray(ev.group_prior, float).ravel(),
                               self._cells, lr, live, base)

    def _lookup(self, ev: Evidence) -> np.ndarray | None:
        """The likelihood ratio of each instance's soft-label P to its prior (None
        without priors), and `_base`: the part of `right` that does not depend on the
        systems' priors, kept for the soft labels last seen (a replicate's fixed-point
        round and its estimates share them). Computed per distinct key, then spread to
        the instances in one compiled pass."""
        arrays = (ev.soft_keys, ev.soft_probs, ev.soft_prior, ev.soft_type_prior, ev.true_prob)
        if self._last is not None and all(a is b for a, b in zip(self._last[0], arrays,
                                                                   strict=True)):
            return self._last[1]
        assert ev.soft_keys is not None and ev.soft_probs is not None
        assert ev.true_prob is not None
        n, keys = len(self._ukeys), self._ukeys
        pos, found = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        if len(ev.soft_keys):
            pos = np.minimum(np.searchsorted(ev.soft_keys, keys), len(ev.soft_keys) - 1)
            found = ev.soft_keys[pos] == keys
        prob = np.where(found, ev.soft_probs[pos] if len(ev.soft_probs) else 0.0, 0.0)
        ratio = None if ev.soft_prior is None \
            else likelihood_ratio(prob, ev.reweight_prior(pos, found))
        lr, base, live = kernels().spread_soft(
            self._uinv, self.j_pairs, np.asarray(ev.true_prob, float), prob,
            np.zeros(0) if ratio is None else ratio, ratio is not None, self._hard)
        # Without the systems' priors, and where `right` keeps P or the hard verdict.
        base.flags.writeable = False  # returned as is when there are no priors
        self._base = (base, live)
        self._last = (arrays, None if ratio is None else lr)
        return self._last[1]

    def group_priors(self, ev: Evidence, prior: np.ndarray, guess: np.ndarray | None = None,
                     tol: float = 1e-12) -> np.ndarray:
        """(m × AGREE_GROUPS) priors: per system and agreement group, the share at which
        the group's judged instances, re-weighted to it, average to it (EM's fixed point
        for a class share), shrunk towards the system's ``prior`` by GROUP_STRENGTH
        pseudo-instances, within [PRIOR_FLOOR, 1 − PRIOR_FLOOR]. NaN where the system has
        no prior. ``guess``: (m × AGREE_GROUPS) where to start looking (e.g. the last
        answer); the answer does not depend on it beyond ``tol``.

        That is the one maximiser of a concave log-likelihood, solved directly
        (`shares.fixed_point_shares`): plain EM creeps towards a share near 0 (a hundred
        rounds stopped up to 2.5e-4 short on a 100-system world).
        """
        m = self.m
        target = np.repeat(np.asarray(prior, float), AGREE_GROUPS)
        if ev.true_prob is None or not len(self._cells):
            return target.reshape(m, AGREE_GROUPS)
        lr = self._lookup(ev)  # sets self._base too
        if lr is None:
            return target.reshape(m, AGREE_GROUPS)
        ok = np.isfinite(target)
        goal = np.clip(np.where(ok, target, 0.5), 0.0, 1.0)
        size, fixed, cells, ratios = self._group_terms(lr)
        start = goal if guess is None else np.where(np.isfinite(np.ravel(guess)),
                                                    np.ravel(guess), goal)
        pi = fixed_point_shares(cells, ratios, None, fixed + GROUP_STRENGTH * goal,
                                size + GROUP_STRENGTH, start, ok, PRIOR_FLOOR, tol)
        return np.where(ok, pi, np.nan).reshape(m, AGREE_GROUPS)

    def _group_terms(self, lr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                     np.ndarray]:
        """`group_priors`' prior-free terms under the soft labels last looked up: per
        cell its size and the P(right) of its instances that do not move with the prior,
        and the cell and likelihood ratio of each instance that does (soft, P strictly
        inside (0, 1), a finite ratio: elsewhere `right` keeps the base value)."""
        if self._groups is not None and self._groups[0] is lr:
            return self._groups[1]
        n_cells = self.m * AGREE_GROUPS
        cells = self._cells
        if self._cell_size is None:
            self._cell_size = np.bincount(cells, minlength=n_cells).astype(float)
        base, live = self._base
        fixed, at, ratio = kernels().moving_items(cells, lr, live, base, n_cells)
        terms = (self._cell_size, fixed, at, ratio)
        self._groups = (lr, terms)
        return terms

    def joint_precision(self, ev: Evidence, scheme: str = "instance",
                        confidence: float = 0.9) -> np.ndarray:
        """The joint precision estimate (as `estimate`'s) under ``ev``'s labels."""
        out = self._precision(scheme, self.right(ev), ci.z_value(confidence), ["joint"],
                              ev.true_prob is not None)["joint"]
        self._xy = None  # these verdicts are not seen again
        return out

    # ---- recall -------------------------------------------------------------------

    def _recall_parts(self) -> dict:
        if self._parts is None:
            pop, ev, n = self.pop, self.ev, self.ev.n
            gy = exhaustive_hits(pop, ev)
            n0 = len(ev.y_pairs)
            drawn = np.flatnonzero(n > 0)
            known = ev.y_pairs >= 0
            covered = np.zeros(n0, dtype=bool)
            pt = pop.stacked(self.draw_scheme)
            if len(drawn) and n0:
                covered[known] = np.asarray(
                    (pt[drawn][:, ev.y_pairs[known]] > 0).sum(axis=0)).ravel() > 0
            total = n.sum()
            q = np.asarray(self.b.T @ (n / max(total, 1))).ravel()
            # Cells (system, pair of U) of the instances on U: g sums per cell.
            cell, inv = np.unique(self.on_sys.astype(np.int64) * max(self.n_u, 1) + self.on_col,
                                  return_inverse=True)
            self._parts = {
                "gy": gy, "n0": n0, "cov_f": covered.astype(float)[None, :], "q": q,
                "c_tot": np.asarray(ev.counts.sum(axis=0)).ravel(),
                "cell_row": cell // max(self.n_u, 1), "cell_col": cell % max(self.n_u, 1),
                "cells": RowSums(inv.ravel(), len(cell), self.on, len(self.j_pairs)).matrix(),
                "k": np.asarray((self.b > 0).sum(axis=0)).ravel(),  # systems per pair
                "predicted": predicted_relations(pop, ev.pairs)}
            self._parts["c_col"] = self._parts["c_tot"][self._parts["cell_col"]]  # per cell
        return self._parts

    def _nu(self, ev: Evidence, right: np.ndarray) -> np.ndarray:
        """ν̂ of joint recall (recall.recall_instance) under ``ev``'s labels."""
        r = self._recall_parts()
        q, n = r["q"], self.ev.n
        # The plan's draws with ``ev``'s labels (a replicate's evidence shares them).
        here = replace(ev, pairs=self.ev.pairs, counts=self.ev.counts)
        t = pair_true_share(here, self.b, n, q, k=r["k"], drawn=r["c_tot"],
                            predicted=r["predicted"])
        kappa = here.relations_per_true(self.ev.pairs)  # true predicates if true
        tk = t * kappa
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where((t > 0) & (q > 0), tk / q, 0.0)
        den = float(r["c_tot"] @ a)
        if den <= 0:
            return np.full(self.m, np.nan)
        # Per cell (system, pair of U): g = Σ right over its instances; then, soft, g over
        # the pair's P(true)·κ and i's own P(pair true) there (recall_instance) added to
        # the denominator, or hard, g over κ (the share of the pair's true predicates).
        if ev.true_prob is not None:
            mode, scale = 2, np.where(t > 0, 1.0 / np.maximum(tk, 1e-300), 0.0)
        elif (kappa != 1).any():
            mode, scale = 1, np.asarray(kappa, float)
        else:
            mode, scale = 0, a
        cells = r["cells"]
        num, over = kernels().nu_sums(cells.indptr, cells.indices, right, r["cell_row"],
                                    r["cell_col"], r["c_col"], a, scale, mode, self.m)
        return num / (den + over if mode == 2 else den)

    def _recall(self, scheme: str, ev: Evidence, right: np.ndarray) -> dict[str, np.ndarray]:
        r = self._recall_parts()
        gy, n0 = r["gy"], r["n0"]
        if n0 == 0:
            nan = np.full(self.m, np.nan)
            return {"simple": nan, "joint": nan}
        if scheme != "instance":
            # From the exhaustive sample alone: the same for every replicate's labels.
            kept = self._scheme_recall.get(scheme)
            if kept is None or kept[0] is not ev.y_preds or kept[1] is not ev.y_subjects:
                est = gy @ scheme_weights(scheme, ev.y_preds, ev.y_subjects)
                est.flags.writeable = False
                kept = self._scheme_recall[scheme] = (ev.y_preds, ev.y_subjects, est)
            return {"simple": kept[2], "joint": kept[2]}
        nu = self._nu(ev, right)
        cov_f = r["cov_f"]
        joint = (nu[:, None] * cov_f + gy * (1 - cov_f)).mean(axis=1)
        return {"simple": gy.mean(axis=1), "joint": np.where(np.isfinite(joint), joint, np.nan)}

    # ---- all of them --------------------------------------------------------------

    def estimates(self, ev: Evidence, schemes: Sequence[str] | None = None,
                  confidence: float = 0.9) -> dict[Key, np.ndarray]:
        """Every point estimate `estimate(pop, ev, draw_scheme, schemes, confidence)`
        reports, keyed (scheme, metric, kind)."""
        schemes = [self.draw_scheme] if schemes is None else [check_scheme(s) for s in schemes]
        z = ci.z_value(confidence)
        out: dict[Key, np.ndarray] = {}
        if self.m == 0:
            return out
        right, soft = self.right(ev), ev.true_prob is not None
        # Recall is surely 0 where every pair is labelled and none right (instance bounds).
        bounds = {("instance", False): self._bounds("instance", False, right, z, soft)}
        known, exact, _, _ = bounds[("instance", False)]
        zero = exact & (known == 0)
        for s in SCHEMES:
            if s not in schemes:
                continue
            prec = self._precision(s, right, z, ["simple", "joint"], soft, bounds)
            rec = self._recall(s, ev, right)
            for kind in ("simple", "joint"):
                p, r = prec[kind], np.where(zero, 0.0, rec[kind])
                f1 = ci.f1_score(np.nan_to_num(p), np.nan_to_num(r))
                out[(s, "precision", kind)] = p
                out[(s, "recall", kind)] = r
                out[(s, "f1", kind)] = np.where(np.isnan(p) | np.isnan(r), np.nan, f1)
        self._xy = None  # this call's verdicts are not seen again
        return out


def consistent(plan: PointPlan, ev: Evidence, rounds: int = 4,
               start: np.ndarray | None = None, confidence: float = 0.9,
               start_group: np.ndarray | None = None) -> Evidence:
    """noise.self_consistent on the plan's point estimates (same fixed point): each
    round the systems' precision, then each system's agreement groups' priors
    (`PointPlan.group_priors`) around it, which the next round's P(right) use."""
    if ev.true_prob is None or ev.soft_prior is None or plan.m == 0:
        return ev
    keys, groups = agreement_groups(plan.pop)
    ev = replace(ev, agree_keys=keys, agree_group=groups)
    prior = np.full(plan.m, np.nan) if start is None else np.asarray(start, float)
    group = None if start is None else plan.group_priors(ev, prior, guess=start_group)
    for _ in range(rounds):
        cur = replace(ev, system_prior=prior, group_prior=group)
        new = np.clip(plan.joint_precision(cur, confidence=confidence), PRIOR_FLOOR,
                      1 - PRIOR_FLOOR)
        if np.allclose(np.nan_to_num(new, nan=-1), np.nan_to_num(prior, nan=-1), atol=1e-4):
            break
        prior = new
        group = plan.group_priors(ev, prior, guess=group)
    return replace(ev, system_prior=prior, group_prior=group)
