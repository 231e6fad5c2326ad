"""Importance sampling over mention pairs: mixing weights, estimates, effective sizes.

Everything is computed over the distinct labelled drawn pairs U (columns) and the
systems (rows), with sparse matrices; p_i is needed only at U, the overlap matrix
comes from the Population (notation of docs/internals/estimation.md §3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

import numpy as np
import scipy.sparse as sp

from . import products
from .compiled import kernels
from .evidence import Evidence
from .population import Population
from .products import canonical as _canonical
from .products import products_at, weighted_at
from .products import values_at as _values_at


class Verdicts(Protocol):
    """What `verdicts_at` reads of a `precision.LabelState` (not imported: no cycle)."""

    judged: np.ndarray
    right: np.ndarray | None


def mixing_weights(overlap: np.ndarray, n: np.ndarray) -> np.ndarray:
    """w_ij ∝ n_j O_ij, normalised over j; rows without any overlap stay 0."""
    w = overlap * np.asarray(n, dtype=float)[None, :]
    total = w.sum(axis=1, keepdims=True)
    np.divide(w, total, out=w, where=total > 0)
    return w


def per_draw_variance(m1: np.ndarray, m2: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Unbiased per-draw variance from first/second moments of n_j draws (rows j).

    With a single draw the variance is not estimable; the second moment bounds it.
    """
    n = n[:, None].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        s2 = np.where(n >= 2, (m2 - m1 * m1) * n / (n - 1), m2)
    return np.maximum(s2, 0)


class PairTerms(NamedTuple):
    """The scheme-free part of `at_pairs`: the instances on labelled drawn pairs that
    are (possibly) right, their (system, column of U) and their P(right), ordered by
    (system, column); and the CSR pattern they sum into (several instances of a system
    may share a pair): each one's entry ``slot``, the rows' ``indptr``, the ``indices``."""

    sel: np.ndarray  # positions in pop.instances()
    rows: np.ndarray
    cols: np.ndarray
    right: np.ndarray
    slot: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray


def verdicts_at(pop: Population, ev: Evidence, on: np.ndarray,
                state: Verdicts | None = None) -> np.ndarray:
    """`ev.correct` of the instances at positions ``on`` (ascending). ``state``: a
    `LabelState` of this evidence whose verdicts are known: they are read from it (the
    same values, computed once per instance) when every instance of ``on`` is judged."""
    if state is not None and state.right is not None and len(state.judged):
        pos = np.minimum(np.searchsorted(state.judged, on), len(state.judged) - 1)
        if np.array_equal(state.judged[pos], on):
            return state.right[pos]
    inst = pop.instances()
    return ev.correct(inst["pairs"][on], inst["predicates"][on], inst["system"][on])


def _on_drawn(pop: Population, ev: Evidence, state: Verdicts | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The instances on U (positions, ascending), their columns of U and `ev.correct`.

    U's pairs are labelled, so with a `LabelState` of ``ev`` its judged instances (those
    on labelled pairs, ascending, with their verdicts) hold them all: only those are
    looked at, not every instance of the population."""
    inst = pop.instances()
    where = np.full(pop.n_pairs, -1, dtype=np.int64)
    where[ev.pairs] = np.arange(len(ev.pairs))
    if state is not None and state.right is not None:
        col = where[inst["pairs"][state.judged]]
        keep = col >= 0
        return state.judged[keep].astype(np.int64), col[keep], state.right[keep]
    col = where[inst["pairs"]]
    on = np.flatnonzero(col >= 0)
    return on, col[on], verdicts_at(pop, ev, on, state)


def pair_terms(pop: Population, ev: Evidence, state: Verdicts | None = None) -> PairTerms:
    # 0/1 with hard labels; with soft labels the probability the instance is right.
    on, col, right = _on_drawn(pop, ev, state)
    right = np.asarray(right, dtype=float)  # hard verdicts are bool
    nz = right > 0
    sel, col, right = on[nz], col[nz], right[nz]
    rows = pop.instances()["system"][sel]
    # One sort per evidence; every scheme's matrices are then made without one.
    key = rows * max(len(ev.pairs), 1) + col
    order = np.argsort(key, kind="stable")
    sel, rows, col, right, key = sel[order], rows[order], col[order], right[order], key[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    slot = np.cumsum(first) - 1
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[first], minlength=len(pop)))])
    return PairTerms(sel, rows, col, right, slot, indptr, col[first])


def at_pairs(
    pop: Population, ev: Evidence, scheme: str, terms: PairTerms | None = None
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """p_i(x)·f(x) summed per (system, pair in U), and the correct-instance indicator.

    Returns (PF, G) as canonical CSR (m × nU): PF_iu = Σ_{x of i on u, correct} p_{i,s}(x),
    G_iu = 1 if i predicted the true relation of u. ``terms``: `pair_terms(pop, ev)`,
    computed once for several schemes.
    """
    t = pair_terms(pop, ev) if terms is None else terms
    shape = (len(pop), len(ev.pairs))

    def matrix(values: np.ndarray) -> sp.csr_matrix:
        data = np.bincount(t.slot, values, minlength=len(t.indices))
        return sp.csr_matrix((data, t.indices, t.indptr), shape=shape)

    return matrix(pop.instance_probs(scheme)[t.sel] * t.right), matrix(t.right)


def label_variance_at_pairs(pop: Population, ev: Evidence, scheme: str,
                            shared: dict | None = None, state: Verdicts | None = None
                            ) -> sp.coo_matrix | None:
    """Σ p_i(x)² c(1 − c) φ per (system, pair in U) under soft labels (None with hard
    ones); φ = ``ev.label_scale``, 1 for calibrated posteriors.

    A soft label c is the mean of a 0/1 truth: the per-draw second moment of the
    true terms is E[(p/q)² c], not E[(p c/q)²]; this is the difference, so that the
    variance counts the labels' own uncertainty. ``shared``: a dict kept across the
    schemes of one evidence; the scheme-free part (which instances, their c) is
    computed once into it. ``state``: the evidence's `LabelState`, whose verdicts serve.
    """
    if ev.true_prob is None:
        return None
    parts = None if shared is None else shared.get("label_var_terms")
    if parts is None:
        on, col, c = _on_drawn(pop, ev, state)
        small = np.int32 if len(pop.instances()["pairs"]) < 2**31 else np.int64  # half the memory
        parts = (on.astype(small), pop.instances()["system"][on].astype(small),
                 col.astype(small), c)
        if shared is not None:
            shared["label_var_terms"] = parts
    on, rows, cols, c = parts
    p = pop.instance_probs(scheme)[on]
    shape = (len(pop), len(ev.pairs))
    # ev.label_scale: the posteriors' squared error over their own variance (φ, noise.py).
    return sp.coo_matrix((p * p * c * (1 - c) * ev.label_scale, (rows, cols)), shape=shape)


class ImportanceResult(NamedTuple):
    estimate: np.ndarray  # (m,)
    variance: np.ndarray  # (m,)
    neff: np.ndarray  # (m,) effective sample size of the weights
    r: sp.csr_matrix  # (m × nU) per-draw terms p_i f_i / q_i
    mean_r: np.ndarray  # (j × i) mean of r_i over system j's draws
    kish: np.ndarray  # (m,) Kish size of the weights the draws actually carried
    landed: np.ndarray  # (m,) draws (of systems with w_ij > 0) that landed on i's pairs
    mass: np.ndarray  # (m,) Σ_j (w_ij/n_j) Σ_d p_i/q_i: the mass the draws carried, 1 on average
    # (m,) the self-normalised (ratio) estimate estimate/mass and its linearised variance
    # Σ_j (w_ij²/n_j) Var_{p_j}[(p_i f_i − ratio·p_i)/q_i] / mass² (NaN where mass = 0).
    ratio: np.ndarray | None = None
    ratio_variance: np.ndarray | None = None
    z: sp.csr_matrix | None = None  # (m × nU) per-draw mass terms p_i / q_i


def importance_estimate(
    a: sp.csr_matrix,
    pf: sp.coo_matrix,
    b: sp.csr_matrix,
    w: np.ndarray,
    counts_per_draw: sp.csr_matrix,
    n: np.ndarray,
    label_var: sp.coo_matrix | None = None,
    *,
    shared: dict | None = None,
) -> ImportanceResult:
    """Σ_j (w_ij/n_j) Σ_{u∈X̂_j} pf_i(u)/q_i(u) with q_i = Σ_j w_ij b_j, for every i.

    a, pf: target mass and target mass on correct instances at U (m × nU);
    b: proposal rows at U; counts_per_draw: counts / n_j.
    Besides estimate and variance it returns the effective size
    1 / Σ_j (w_ij²/n_j) E_{p_j}[(p_i/q_i)²], i.e. the n of a plain proportion with
    the same variance when labels are unrelated to the weights; the number of
    draws that landed on i's pairs and the Kish size (Σ weights)² / Σ weights² of
    their weights: both 0 when no draw reached system i, whose empirical variance
    (0) is then no evidence. With a diagonal w (the simple estimator) only the
    diagonal of ``mean_r`` is computed (the rest is 0): nothing else is used.

    ``shared``: a dict kept by the caller across estimates over one evidence (every
    scheme, simple and joint); what depends only on b and on a's sparsity pattern
    is computed once into it. The floats are the same with or without it.
    """
    shared = {} if shared is None else shared
    a = _canonical(a)
    at = shared.get("positions")
    if at is None or not at.matches(a):
        rows_a = np.repeat(np.arange(a.shape[0], dtype=np.int64), np.diff(a.indptr))
        at = shared["positions"] = _Positions(a, rows_a)
    rows_a = at.rows
    diagonal = np.count_nonzero(w - np.diag(np.diagonal(w))) == 0
    b_at = shared.get("b_at") if shared.get("b") is b else None
    if diagonal and b_at is None:
        bc = _canonical(b)
        if at.matches(bc):
            b_at = bc.data
            shared["b"], shared["b_at"] = b, b_at
    if diagonal and b_at is not None:
        # q_i(u) = Σ_j w_ij b_ju = w_ii b_iu: the terms j ≠ i of the dense product are
        # exact zeros, so this is the same float without the (nU × m) product.
        q_a = b_at * np.diagonal(w)[rows_a]
    else:
        # q_i(u) only at a's entries (every term's lies among them), in blocks: the
        # same sums over ascending j as the dense (nU × m) b.T·w.T it replaces.
        if shared.get("bc_of") is not b:
            shared["bc_of"], shared["bc"] = b, _canonical(b)
        q_a = weighted_at(a, shared["bc"], w)  # the plan's (points.py), if it made it

    def at_entries(m: sp.coo_matrix, power: int = 1) -> np.ndarray:
        """Σ m/q^power per entry of a (m's entries lie among a's), summed in m's order
        by bincount rather than through a CSR, whose duplicate sum sorts every row
        first (most of this call's time once): the CSR's sums to the bit up to two
        terms per entry, to rounding beyond."""
        pos = at.found(m.row, m.col)  # one lookup, kept for the next estimate's terms
        # q = 0 only where no draw can reach (systems without a donor): no term.
        q = q_a[pos] ** power
        vals = np.divide(m.data, q, out=np.zeros(len(q)), where=q > 0)
        return np.bincount(pos, weights=vals, minlength=at.pattern.nnz)

    # z = a/q on a's own entries; r = pf/q on a's pattern (pf's entries lie among a's).
    z = np.divide(a.data, q_a, out=np.zeros(len(q_a)), where=q_a > 0)
    r_at = at_entries(sp.coo_matrix(pf))
    r = sp.csr_matrix((r_at, at.pattern.indices.copy(), at.pattern.indptr.copy()), shape=a.shape)
    # The squares and counts are made one at a time as the means need them, not all held.
    terms: list[np.ndarray | Callable[[], np.ndarray]] = [r_at, lambda: r_at * r_at]
    if label_var is not None:
        # Soft labels: add E[(p/q)² c(1 − c)], the truth's spread around c.
        terms.append(at_entries(label_var.tocoo(), 2))
    terms += [lambda: r_at * z, z, lambda: z * z, lambda: (z > 0).astype(float)]
    means = _draw_means(sp.csr_matrix(counts_per_draw), at, terms, diagonal)
    m1, m2 = means[0], means[1]  # (j × i): mean of r_i, r_i² under p_j
    if label_var is not None:
        m2 += means[2]
    rz, z1, z2, hits = means[-4:]  # hits: share of j's draws on X_i
    est = (w * m1.T).sum(axis=1)
    mass = (w * z1.T).sum(axis=1)
    landed = ((w > 0) * (hits * n[:, None]).T).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        coef = np.where(n > 0, w * w / n[None, :], 0.0)  # (i × j): w_ij² / n_j
    var = (coef * per_draw_variance(m1, m2, n).T).sum(axis=1)
    spread = (coef * z2.T).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        neff = 1.0 / spread
        kish = np.where(spread > 0, mass * mass / spread, 0.0)
        # The ratio estimate's per-draw term is e = r − ratio·z (linearisation of
        # Σ r / Σ z): its moments under p_j from those of r, z and r·z.
        ratio = np.where(mass > 0, est / mass, np.nan)
        k = np.nan_to_num(ratio)[None, :]
        e1 = m1 - k * z1
        e2 = np.maximum(m2 - 2 * k * rz + k * k * z2, 0.0)
        ratio_var = np.where(mass > 0, (coef * per_draw_variance(e1, e2, n).T).sum(axis=1)
                             / (mass * mass), np.nan)
    zm = sp.csr_matrix((z, a.indices, a.indptr), shape=a.shape)
    return ImportanceResult(est, var, neff, r, m1, kish, landed, mass, ratio, ratio_var, zm)


class _Positions:
    """Where each (row, column) sits among a canonical CSR pattern's entries (m × nU):
    a `RankBitmap` of the cells up to _BITMAP_CELLS cells, else a search in the sorted
    keys."""

    def __init__(self, pattern: sp.csr_matrix, rows: np.ndarray) -> None:
        self.pattern, self.rows = pattern, rows
        self.shape = pattern.shape
        m, n_u = self.shape
        # Sorted: rows ascend and a canonical row's columns ascend.
        self.flat = rows * np.int64(n_u) + pattern.indices
        self.index: RankBitmap | None = None
        if m * n_u <= max(_BITMAP_CELLS, 64 * pattern.nnz):
            self.index = RankBitmap(self.flat, m * n_u)
        self._transposed: sp.csr_matrix | None = None
        self._found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def transposed(self) -> sp.csr_matrix:
        """The pattern transposed (nU × m), each entry's value its position in it."""
        if self._transposed is None:
            p = self.pattern
            self._transposed = sp.csr_matrix(
                (np.arange(p.nnz, dtype=np.int64), p.indices, p.indptr), shape=self.shape
            ).T.tocsr()
        return self._transposed

    def found(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """`find` for entries that must all be present, remembered for the last few
        arrays (the simple and joint estimates of every scheme look up the same ones)."""
        for r, c, pos in self._found:
            if r is rows and c is cols:
                return pos
        pos = self.find(rows, cols)
        if len(pos) and pos.min() < 0:
            raise ValueError("terms outside the target's entries")
        self._found = [*self._found[-3:], (rows, cols, pos)]
        return pos

    def matches(self, x: sp.csr_matrix) -> bool:
        """Whether canonical x has exactly this sparsity pattern."""
        p = self.pattern
        return (x.shape == p.shape and x.nnz == p.nnz and np.array_equal(x.indptr, p.indptr)
                and np.array_equal(x.indices, p.indices))

    def find(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Entry of each (row, col), -1 where the pattern has none."""
        want = rows.astype(np.int64) * np.int64(self.shape[1]) + cols
        if self.index is not None:
            return self.index.rank(want)
        if len(self.flat) == 0:
            return np.full(len(want), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.flat, want), len(self.flat) - 1)
        return np.where(self.flat[pos] == want, pos, -1)


def _draw_means(
    cpd: sp.csr_matrix,
    at: _Positions,
    values: Sequence[np.ndarray | Callable[[], np.ndarray]],
    diagonal: bool,
) -> list[np.ndarray]:
    """For each x given by its values at the entries of ``at.pattern`` (m × nU), or by a
    function making them when needed: the (j × i) means Σ_u cpd_ju x_iu of x_i under
    system j's draws.

    Each sum runs over j's stored draws in their stored order, starting from 0, as
    ``cpd @ x.T.toarray()`` does: the same floats. ``diagonal``: only the i = j sums
    (the simple estimator), from the draws' own entries (terms x = 0 add nothing).
    """
    m, n_u = at.shape
    out = [np.zeros((m, m)) for _ in values]
    if cpd.nnz == 0 or at.pattern.nnz == 0:
        return out
    draw_rows = np.repeat(np.arange(cpd.shape[0], dtype=np.int64), np.diff(cpd.indptr))
    if diagonal:
        # Entry (j, u) of the pattern for each draw entry (j, u), if any.
        pos = at.find(draw_rows, cpd.indices)
        hit = pos >= 0
        pos, owner, weight = pos[hit], draw_rows[hit], cpd.data[hit]
        for x, o in zip(values, out, strict=True):
            x = x() if callable(x) else x
            np.fill_diagonal(o, np.bincount(owner, weights=weight * x[pos], minlength=m))
        return out
    # cpd · x.T in blocks of pairs, each block's products added into ``o`` in place
    # (`rows_dense_add`): every (j, i) sum adds j's draws in stored
    # order from 0, as the whole `cpd @ x.T.toarray()` did, to the bit, with a
    # (block × m) buffer instead of the dense nU × m x.T (840 MB at 1,000 systems).
    # The blocks go the way each row's draws are stored (a scipy product stores them
    # descending); rows stored in no one order are taken whole, as before.
    d = np.diff(cpd.indices.astype(np.int64))[draw_rows[1:] == draw_rows[:-1]]
    up, down = bool((d > 0).all()), bool((d < 0).all())
    step = max(1, products.BLOCK_BYTES // (8 * m)) if up or down else n_u
    block_of = cpd.indices // step
    order = np.argsort(block_of, kind="stable")  # by block, stored order within one
    starts = list(enumerate(range(0, n_u, step)))
    cuts = np.searchsorted(block_of[order], np.arange(len(starts) + 1))
    t = at.transposed()
    dense = np.zeros((min(step, n_u), m))
    for x, o in zip(values, out, strict=True):
        x = x() if callable(x) else x
        for k, u0 in (starts if up or not down else starts[::-1]):
            e = order[cuts[k]:cuts[k + 1]]
            if len(e) == 0:
                continue
            u1 = min(u0 + step, n_u)
            lo, hi = t.indptr[u0], t.indptr[u1]
            sub = dense[:u1 - u0]
            sub.fill(0.0)
            sub[np.repeat(np.arange(u1 - u0), np.diff(t.indptr[u0:u1 + 1])),
                t.indices[lo:hi]] = x[t.data[lo:hi]]
            indptr = np.zeros(m + 1, dtype=np.int64)
            np.cumsum(np.bincount(draw_rows[e], minlength=m), out=indptr[1:])
            kernels().rows_dense_add(indptr, cpd.indices[e].astype(np.int64) - u0,
                                     np.ascontiguousarray(cpd.data[e], dtype=float), sub, o)
    return out


def exact_effective_size(
    ps: sp.csr_matrix, pt: sp.csr_matrix, w: np.ndarray, n: np.ndarray
) -> np.ndarray:
    """1 / Σ_j (w_ij²/n_j) E_{p_j}[(p_i/q_i)²] computed over all of X_i, not the draws.

    Reweighting to another scheme gives heavy-tailed weights; a sample that misses
    the rare heavy elements underestimates both the estimate and its variance, so
    the interval must not rely on the draws alone for its width.

    With a = ps, the sum for system i is Σ_u a_iu² v_iu / q_iu² over i's pairs, where
    q_iu = Σ_j w_ij pt_ju and v_iu = Σ_j (w_ij²/n_j) pt_ju are entries of the
    products W·PT and W2N·PT, needed only at the nonzeros of ps. A diagonal w (the
    simple estimator) makes them multiples of pt_iu itself; otherwise the products
    are taken in column blocks (see ``_products_at``), never expanding the
    (i, u, j) triples, whose number grows with the square of the overlap.
    """
    ps, pt = _canonical(ps), _canonical(pt)
    m = ps.shape[0]
    w = np.asarray(w, dtype=float)
    n = np.asarray(n)
    if ps.shape != pt.shape or w.shape != (m, m) or n.shape != (m,):
        raise ValueError(
            f"shapes differ: ps {ps.shape}, pt {pt.shape}, w {w.shape}, n {n.shape}; "
            "expected two stacked matrices of one population, m × m weights, m counts"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        w2n = np.where(n > 0, w * w / n[None, :], 0.0)
    rows = np.repeat(np.arange(m), np.diff(ps.indptr))
    if np.count_nonzero(w - np.diag(np.diagonal(w))) == 0:
        p_own = _values_at(pt, ps, rows)
        q = np.diagonal(w)[rows] * p_own
        v = np.diagonal(w2n)[rows] * p_own
    else:
        q, v = products_at(ps, pt, [w, w2n])
    terms = _terms(ps.data, q, v)
    with np.errstate(divide="ignore"):
        return 1.0 / np.bincount(rows, weights=terms, minlength=m)


def _terms(a: np.ndarray, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """a² v / q² per (system, pair); no term where no draw can reach (q = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(q > 0, a**2 * v / q**2, 0.0)


# `_Positions` keeps a bitmap of the cells up to this many (or 64 per entry): a search
# instead took ~1 s per lookup of every judged instance at 1,000 systems. The bitmap
# is 1/32 of the int32 index of every cell it replaced (420 MB at 1,000 systems).
_BITMAP_CELLS = 1 << 30


class RankBitmap:
    """Membership and rank of cells among a sorted set of distinct cells of [0, size):
    one bit per cell and, per 64-bit word, the set bits before it. rank(k) is k's
    position among the set's cells (its index in the sorted keys), −1 if absent: what
    an index array of every cell holding the positions gives, in ~1/32 of its bytes."""

    def __init__(self, cells: np.ndarray, size: int) -> None:
        cells = np.asarray(cells, dtype=np.int64)
        words = np.zeros((size + 63) // 64, dtype=np.uint64)
        word = cells >> 6
        if len(cells):
            # The cells are distinct, so within a word the bits add like an OR.
            starts = np.flatnonzero(np.r_[True, word[1:] != word[:-1]])
            bits = np.left_shift(np.uint64(1), (cells & 63).astype(np.uint64))
            words[word[starts]] = np.add.reduceat(bits, starts)
        self.words = words
        self.before = np.zeros(len(words), dtype=np.int32 if len(cells) < 2**31 else np.int64)
        np.cumsum(np.bitwise_count(words[:-1]), out=self.before[1:])

    def rank(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.int64)
        w = self.words[keys >> 6]
        bit = (keys & 63).astype(np.uint64)
        present = (np.right_shift(w, bit) & np.uint64(1)).astype(bool)
        below = w & (np.left_shift(np.uint64(1), bit) - np.uint64(1))
        return np.where(present, self.before[keys >> 6].astype(np.int64)
                        + np.bitwise_count(below), -1)


def unreached_mass(
    ps: sp.csr_matrix, pt: sp.csr_matrix, w: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, list[float]]:
    """For each selected system i: its mass on pairs no donor (w_ij > 0) predicted.

    A pair u of i is reached when Σ_j [w_ij > 0]·[pt_ju > 0] ≥ 1, an integer count
    taken for all selected systems in one blocked product.
    """
    rows = np.flatnonzero(rows) if rows.dtype == bool else np.asarray(rows)
    if len(rows) == 0:
        return rows, []
    sub = ps[rows]
    reach = sp.csr_matrix(pt, copy=True)
    reach.data = (reach.data > 0).astype(float)
    (count,) = products_at(sub, reach, [(w[rows] > 0).astype(float)])
    missing = []
    for k in range(len(rows)):
        lo, hi = sub.indptr[k], sub.indptr[k + 1]
        mass = sub.data[lo:hi]
        missing.append(float(mass[count[lo:hi] == 0].sum()))
    return rows, missing
