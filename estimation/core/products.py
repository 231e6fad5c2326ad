"""Products of dense weights with sparse system × pair matrices, at chosen entries.

Importance sampling needs q_i(u) = Σ_j w_ij pt_ju (and sums like it) only where
system i has mass on pair u; the dense (pairs × systems) product grows with the square
of the systems. These helpers take such products in blocks of pairs, remember what
depends only on the sparsity patterns, and sum each entry's terms in ascending j from
0, as a dense row of `pt.T @ w.T` does: the same floats.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

# Memory of one block of products (pairs × 2m doubles), here and in the importance
# estimator's draw means: 8 MiB, 5k pairs at m = 100 (a recompute computes it beside
# the replicates' work: scoring.py).
BLOCK_BYTES = 8 << 20
# Pairs predicted by at most this many systems are summed entry by entry, not densely.
_FEW_SYSTEMS = 8


def canonical(x: sp.spmatrix) -> sp.csr_matrix:
    """CSR with sorted, summed indices, without modifying the caller's matrix."""
    x = sp.csr_matrix(x)
    if not x.has_canonical_format:
        x = x.copy()
        x.sum_duplicates()
    return x


def values_at(x: sp.csr_matrix, like: sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
    """x at the nonzeros of ``like`` (rows: their row indices), 0 where x has none.

    Both canonical CSR of one shape.
    """
    if np.array_equal(x.indptr, like.indptr) and np.array_equal(x.indices, like.indices):
        # The usual case: two schemes of one population share the pattern.
        return x.data
    if x.nnz == 0:
        return np.zeros(like.nnz)
    ncol = np.int64(x.shape[1])
    keys = np.repeat(np.arange(x.shape[0], dtype=np.int64), np.diff(x.indptr)) * ncol
    keys += x.indices
    want = rows.astype(np.int64) * ncol + like.indices
    pos = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
    return np.where(keys[pos] == want, x.data[pos], 0.0)


# Derived from a matrix's sparsity pattern only, keyed by its content, so repeated
# estimates over one population (every label batch) skip two ~nnz conversions; the
# values are always gathered afresh, so the results are the same floats.
_PATTERNS: OrderedDict[tuple, tuple] = OrderedDict()
_PATTERNS_LOCK = threading.Lock()
_PATTERN_ENTRIES = 4


def pattern_key(x: sp.csr_matrix, *extra: object) -> tuple:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.ascontiguousarray(x.indptr).view(np.uint8))
    digest.update(np.ascontiguousarray(x.indices).view(np.uint8))
    return (x.shape, x.nnz, digest.digest(), *extra)


def content_key(*arrays: np.ndarray) -> tuple:
    """A key naming these arrays by content (shape, dtype and a digest of the bytes)."""
    digest = hashlib.blake2b(digest_size=16)
    meta = []
    for x in arrays:
        x = np.ascontiguousarray(x)
        meta.append((x.shape, x.dtype.str))
        digest.update(x.view(np.uint8).ravel())
    return (tuple(meta), digest.digest())


def frozen(x: np.ndarray) -> np.ndarray:
    """x made read-only: a memoised array is shared by every later caller."""
    x.flags.writeable = False
    return x


def remember(key: tuple, make, superseded=None) -> tuple:
    """``make()``, kept under ``key`` among the newest _PATTERN_ENTRIES. On a miss the
    entries ``superseded(their key)`` names are dropped before ``make`` runs, so that
    what they hold is not alive beside what replaces them."""
    with _PATTERNS_LOCK:  # two threads of one recompute may ask (scoring.py)
        hit = _PATTERNS.get(key)
        if hit is not None:
            _PATTERNS.move_to_end(key)
            return hit
        if superseded is not None:
            for old in [k for k in _PATTERNS if superseded(k)]:
                del _PATTERNS[old]
    hit = make()
    with _PATTERNS_LOCK:
        _PATTERNS[key] = hit
        while len(_PATTERNS) > _PATTERN_ENTRIES:
            _PATTERNS.popitem(last=False)
    return hit


class _ProductPlan(NamedTuple):
    """Everything `products_at` derives from the sparsity patterns of ps and pt and
    the systems used: label batches leave it valid, only the values change."""

    few_pos: np.ndarray  # ps entries (CSR positions) on pairs of a few systems
    # Per system rank t on such a pair: (which of few_pos, flat i·m + j, pt.data position).
    few_steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    # Per dense block of the other pairs: (PTᵀ rows: indptr from 0, indices, pt.data
    # positions), where the block's ps entries sit in its product, and their positions.
    blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    width: int


def _product_plan(ps: sp.csr_matrix, pt: sp.csr_matrix, used: np.ndarray,
                  n_lefts: int) -> _ProductPlan:
    n_cols = ps.shape[1]
    m = pt.shape[0]
    order = sp.csr_matrix(
        (np.arange(ps.nnz, dtype=np.int64), ps.indices, ps.indptr), shape=ps.shape
    ).tocsc()
    col = np.repeat(np.arange(n_cols, dtype=np.int64), np.diff(order.indptr))
    # pt[used].T (pairs × used systems, ascending within a pair), as positions in pt.data.
    ptt = sp.csr_matrix(
        (np.arange(pt.nnz, dtype=np.int64), pt.indices, pt.indptr), shape=pt.shape
    )[used].T.tocsr()
    sizes = np.diff(ptt.indptr)
    few = sizes[col] <= _FEW_SYSTEMS
    few_pos = order.data[few]
    e_row, e_col = order.indices[few], col[few]
    start, count = ptt.indptr[e_col], sizes[e_col]
    steps = []
    for t in range(int(count.max(initial=0))):
        live = np.flatnonzero(count > t)
        p = start[live] + t
        steps.append((live, e_row[live].astype(np.int64) * m + used[ptt.indices[p]],
                      ptt.data[p]))
    blocks = []
    many = np.flatnonzero(sizes > _FEW_SYSTEMS)
    # A block's product has a row per pair of n_lefts·k columns (k: rows of ps), not
    # n_lefts·len(used): they differ when some system is unused (no draws) or ps is a
    # subset of the systems (unreached_mass).
    width = n_lefts * ps.shape[0]
    if len(many):
        ptt = ptt[many]
        rank = np.full(n_cols, -1, dtype=np.int64)
        rank[many] = np.arange(len(many))
        sel = np.flatnonzero(~few)  # entries (in column order) on those pairs
        e_rank, e_row, e_pos = rank[col[sel]], order.indices[sel], order.data[sel]
        step = max(1, BLOCK_BYTES // (8 * width))
        cuts = np.searchsorted(e_rank, np.arange(0, len(many) + step, step))
        for b, c0 in enumerate(range(0, len(many), step)):
            s, e = cuts[b], cuts[b + 1]
            if s == e:
                continue
            lo, hi = ptt.indptr[c0], ptt.indptr[min(c0 + step, len(many))]
            blocks.append((ptt.indptr[c0:c0 + step + 1] - lo, ptt.indices[lo:hi],
                           ptt.data[lo:hi], (e_rank[s:e] - c0) * width + e_row[s:e],
                           e_pos[s:e]))
    return _ProductPlan(few_pos, steps, blocks, width)


def products_at(
    ps: sp.csr_matrix, pt: sp.csr_matrix, lefts: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """(L·PT)_iu at the nonzeros of ps (in ps's CSR order), for each L in lefts.

    ps: (k × pairs), pt: (m × pairs), each L: (k × m). Walks the pairs in column
    blocks: the block of PTᵀ (CSR, pairs × systems j) times the dense [L₁ᵀ | L₂ᵀ …]
    in C, summing each pair's systems in ascending j (the order of a per-entry
    sum over j), then picks the entries of ps in the block. Memory is one block,
    never the (i, u, j) triples. Systems j that every L leaves out are skipped.
    The index work depends on the patterns only and is remembered (`_ProductPlan`).
    """
    k = ps.shape[0]
    out = [np.zeros(ps.nnz) for _ in lefts]
    used = np.flatnonzero(np.any([(L != 0).any(axis=0) for L in lefts], axis=0))
    if len(used) == 0 or ps.nnz == 0:
        return out
    key = (pattern_key(ps, "plan"), pattern_key(pt), used.tobytes(), len(lefts))

    def superseded(old: tuple) -> bool:
        # The same systems' plan over fewer pairs: an earlier label batch's (the
        # labelled drawn pairs only grow), which no later estimate asks for again.
        return (old[2:] == key[2:] and old[0][-1] == "plan"
                and old[0][0][0] == ps.shape[0] and old[1][0][0] == pt.shape[0]
                and old[0][0][1] < ps.shape[1])

    plan = remember(key, lambda: _product_plan(ps, pt, used, len(lefts)), superseded)
    # Pairs of a few systems: a dense row of k·len(lefts) sums would be mostly waste.
    # Their entries add the same terms in the same order (from 0, ascending j).
    if len(plan.few_pos):
        flat_lefts = [np.ascontiguousarray(L).ravel() for L in lefts]
        sums = [np.zeros(len(plan.few_pos)) for _ in lefts]
        for live, ij, at in plan.few_steps:
            v = pt.data[at]
            for acc, L in zip(sums, flat_lefts, strict=True):
                acc[live] += v * L[ij]
        for values, acc in zip(out, sums, strict=True):
            values[plan.few_pos] = acc
    if not plan.blocks:
        return out
    rhs = np.ascontiguousarray(np.hstack([L[:, used].T for L in lefts]))
    for indptr, indices, at, where, pos in plan.blocks:
        block = sp.csr_matrix((pt.data[at], indices, indptr),
                              shape=(len(indptr) - 1, len(used)))
        flat = (block @ rhs).ravel()  # row u - c0: every L's column block
        for r, values in enumerate(out):
            values[pos] = flat.take(where + r * k)
    return out


# (w·pt) at a pattern's entries, by content: a recompute's plan and its estimate ask
# for the same one (the draw scheme's q at the labelled pairs).
_WEIGHTED: OrderedDict[tuple, np.ndarray] = OrderedDict()
_WEIGHTED_ENTRIES = 2


def weighted_at(ps: sp.csr_matrix, pt: sp.csr_matrix, w: np.ndarray) -> np.ndarray:
    """(w·pt)_iu at the entries of canonical ``ps`` (read-only; `products_at` with one
    left), remembered by the content of ps's pattern, pt and w."""
    pt = canonical(pt)
    key = (pattern_key(ps), pattern_key(pt), content_key(pt.data, np.asarray(w, float)))
    with _PATTERNS_LOCK:
        hit = _WEIGHTED.get(key)
        if hit is not None:
            _WEIGHTED.move_to_end(key)
            return hit
    (out,) = products_at(ps, pt, [w])
    with _PATTERNS_LOCK:
        _WEIGHTED[key] = frozen(out)
        while len(_WEIGHTED) > _WEIGHTED_ENTRIES:
            _WEIGHTED.popitem(last=False)
    return out
