"""The estimators' hot loops, in the subset of Python numba compiles.

A score recompute evaluates the same per-item sums many times (the correction's
replicates, the fixed points of the systems' priors); in numpy each evaluation is a
dozen passes over ~10⁶ items with a temporary array per pass. These loops make one
pass each and give the same floats as the numpy they replace: every sum adds its
items in the order `np.bincount` or the summing matrices do, and no fast-math
reassociation is allowed.

They are compiled ahead of time into an extension module (`build_kernels`, run by
`make` and by the image's build), which the estimators load through `compiled.py`:
no numba and no LLVM in the serving processes. This module itself is imported only by
that build and by `compiled.py`'s fallback (numba's just-in-time compiler, when the
built module is missing or was built from another version of this file).
"""

from __future__ import annotations

import numba as nb
import numpy as np

# Also the fallback's options (compiled.py): no fast-math, errors as numpy gives them.
JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


@nb.njit(**JIT)
def _cell_sums(lo: int, hi: int, pi: float, wlr: np.ndarray, lrm1: np.ndarray
               ) -> tuple[float, float]:
    """Σ f and Σ f' over one cell's items at share ``pi`` (shares.fixed_point_shares)."""
    f = 0.0
    df = 0.0
    for k in range(lo, hi):
        inv = 1.0 / (pi * lrm1[k] + 1.0)
        d = wlr[k] * inv
        f += d * pi
        df += d * inv
    return f, df


def fixed_point_shares(cells: np.ndarray, lr: np.ndarray, weight: np.ndarray, weighted: bool,
                       fixed: np.ndarray, total: np.ndarray, start: np.ndarray,
                       solve: np.ndarray, floor: float, tol: float) -> np.ndarray:
    """`shares.fixed_point_shares`, cell by cell (see there); ``weight`` is read only
    when ``weighted``."""
    n = len(fixed)
    # The solved cells' items grouped by cell, stably: a cell's sums add its items in
    # their original order.
    bounds = np.zeros(n + 1, np.int64)
    for i in range(len(cells)):
        if solve[cells[i]]:
            bounds[cells[i] + 1] += 1
    for c in range(n):
        bounds[c + 1] += bounds[c]
    fill = bounds[:-1].copy()
    wlr = np.empty(bounds[n])
    lrm1 = np.empty(bounds[n])
    for i in range(len(cells)):
        c = cells[i]
        if solve[c]:
            k = fill[c]
            fill[c] += 1
            wlr[k] = weight[i] * lr[i] if weighted else lr[i]
            lrm1[k] = lr[i] - 1.0
    out = start.copy()
    for c in range(n):
        if not solve[c]:
            continue
        lo, hi = floor, 1.0 - floor
        s, e = bounds[c], bounds[c + 1]
        pi = min(max(start[c], lo), hi)
        sf, sd = _cell_sums(s, e, pi, wlr, lrm1)
        f = sf + fixed[c] - pi * total[c]
        df = sd - total[c]
        # The root lies on the side ψ's sign points to; it is that end if ψ keeps its sign.
        probe = hi if f > 0 else lo
        fp = _cell_sums(s, e, probe, wlr, lrm1)[0] + fixed[c] - probe * total[c]
        if f != 0 and np.sign(fp) * np.sign(f) >= 0:
            out[c] = probe
            continue
        for _ in range(200):
            if f == 0:
                break
            if f > 0:
                lo = pi
            else:
                hi = pi
            # A zero slope gives no step (numpy's ±inf/NaN would not be finite either).
            step = pi - f / df if df != 0.0 else np.nan
            new = step if np.isfinite(step) and lo < step < hi else 0.5 * (lo + hi)
            done = abs(new - pi) <= tol or hi - lo <= tol
            pi = new
            if done:
                break
            sf, sd = _cell_sums(s, e, pi, wlr, lrm1)
            f = sf + fixed[c] - pi * total[c]
            df = sd - total[c]
        out[c] = pi
    return out


def reprior(prior: np.ndarray, index: np.ndarray, lr: np.ndarray, live: np.ndarray,
            base: np.ndarray) -> np.ndarray:
    """Per item, P re-weighted to the prior ``prior[index]``: π·lr / ((π·lr + 1) − π)
    where ``live`` and that is finite, else ``base`` (`points.PointPlan.right`)."""
    out = np.empty(len(lr))
    for i in range(len(lr)):
        own = prior[index[i]]
        t = own * lr[i]
        den = (t + 1.0) - own
        t = t / den if den != 0.0 else np.nan  # as numpy's ±inf/NaN: not kept
        out[i] = t if live[i] and np.isfinite(t) else base[i]
    return out


def moving_items(cells: np.ndarray, lr: np.ndarray, live: np.ndarray, base: np.ndarray,
                 n_cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(per cell Σ base over the items that do not move with the prior, the moving
    items' cells, their ratios): moving = ``live`` with a finite ratio."""
    fixed = np.zeros(n_cells)
    at = np.empty(len(lr), np.int64)
    ratio = np.empty(len(lr))
    k = 0
    for i in range(len(lr)):
        if live[i] and np.isfinite(lr[i]):
            at[k] = cells[i]
            ratio[k] = lr[i]
            k += 1
        else:
            fixed[cells[i]] += base[i]
    return fixed, at[:k].copy(), ratio[:k].copy()


def spread_soft(keys: np.ndarray, pairs: np.ndarray, true_prob: np.ndarray, prob: np.ndarray,
                ratio: np.ndarray, has_ratio: bool, hard: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item (its distinct key ``keys[i]``, its pair ``pairs[i]``): (the key's
    ``ratio`` if ``has_ratio``, else empty; P where its pair is soft-labelled — its
    ``true_prob`` is not NaN — else the hard verdict; whether it is soft with P strictly
    inside (0, 1))."""
    n = len(keys)
    lr = np.empty(n if has_ratio else 0)
    base = np.empty(n)
    live = np.empty(n, np.bool_)
    for i in range(n):
        u = keys[i]
        p = prob[u]
        soft = not np.isnan(true_prob[pairs[i]])
        base[i] = p if soft else (1.0 if hard[i] else 0.0)
        live[i] = soft and 0.0 < p < 1.0
        if has_ratio:
            lr[i] = ratio[u]
    return lr, base, live


def scheme_sums(on_rows: np.ndarray, on_cols: np.ndarray, simple: np.ndarray,
                joint: np.ndarray, rows: np.ndarray, q: np.ndarray, right: np.ndarray,
                own: np.ndarray, soft: bool, m: int) -> tuple[np.ndarray, ...]:
    """One scheme's per-system precision sums over the verdicts ``right`` (judged
    instances; ``rows`` their systems, ``q`` their p(x)): Σ simple·r and Σ joint·r over
    the instances on U (system ``on_rows``, instance ``on_cols``); then Σ q·x and, if
    ``soft``, Σ q·(q·x(1 − r)) for x = r and for x = r on the system's ``own`` draws.
    Each sum adds its terms in array order."""
    raw_s, raw_j = np.zeros(m), np.zeros(m)
    known, square = np.zeros(m), np.zeros(m)
    known_own, square_own = np.zeros(m), np.zeros(m)
    for k in range(len(on_rows)):
        r = on_rows[k]
        x = right[on_cols[k]]
        raw_s[r] += simple[k] * x
        raw_j[r] += joint[k] * x
    for k in range(len(rows)):
        r = rows[k]
        x = right[k]
        p = q[k]
        mine = x * (1.0 if own[k] else 0.0)
        known[r] += p * x
        known_own[r] += p * mine
        if soft:
            square[r] += p * (p * (x * (1 - x)))
            square_own[r] += p * (p * (mine * (1 - x)))
    return raw_s, raw_j, known, square, known_own, square_own


def nu_sums(indptr: np.ndarray, indices: np.ndarray, right: np.ndarray,
            cell_row: np.ndarray, cell_col: np.ndarray, draws: np.ndarray, a: np.ndarray,
            scale: np.ndarray, mode: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Joint recall's ν sums per system (`points.PointPlan._nu`): per cell (system
    ``cell_row``, pair ``cell_col``, its instances' verdicts given as CSR rows), g = Σ
    right; mode 2 (soft): g·scale[pair] and the excess max(g − 1, 0)·a·draws summed
    apart; mode 1: g / scale[pair]; mode 0: g. Returns (Σ a·g·draws, Σ excess)."""
    num = np.zeros(m)
    over = np.zeros(m)
    for c in range(len(indptr) - 1):
        g = 0.0
        for e in range(indptr[c], indptr[c + 1]):
            g += right[indices[e]]
        col = cell_col[c]
        w = a[col]
        if mode == 2:
            g = g * scale[col]
            o = g - 1.0
            if not o >= 0.0 and not np.isnan(o):  # np.maximum(o, 0.0)
                o = 0.0
            o = o * w
            over[cell_row[c]] += o * draws[c]
        elif mode == 1:
            g = g / scale[col]
        w = w * g
        num[cell_row[c]] += w * draws[c]
    return num, over


def rows_dense_add(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                   dense: np.ndarray, out: np.ndarray) -> None:
    """out += A @ dense for the CSR matrix A (``indptr``, ``indices``, ``data``), in
    place: row i adds data[e]·dense[indices[e], :] for its entries e in stored order,
    each product as its own term, as scipy's CSR × dense product sums them."""
    width = dense.shape[1]
    for i in range(len(indptr) - 1):
        for e in range(indptr[i], indptr[i + 1]):
            a = data[e]
            j = indices[e]
            for k in range(width):
                out[i, k] += a * dense[j, k]


I4, I8 = "i4[:]", "i8[:]"
F8, B1 = "f8[:]", "b1[:]"
F8_2D = "f8[:, ::1]"


def _variants(name: str, fn: object, template: str) -> dict[str, tuple[object, str]]:
    """One export per index width ({i}: the index arrays' type)."""
    return {f"{name}_{w}": (fn, template.format(i=t)) for w, t in (("i4", I4), ("i8", I8))}


# name → (function, numba signature) of every export of the built module.
EXPORTS: dict[str, tuple[object, str]] = {
    "fixed_point_shares": (fixed_point_shares,
                           f"{F8}({I8}, {F8}, {F8}, b1, {F8}, {F8}, {F8}, {B1}, f8, f8)"),
    **_variants("reprior", reprior, f"{F8}({F8}, {{i}}, {F8}, {B1}, {F8})"),
    "moving_items": (moving_items, f"Tuple(({F8}, {I8}, {F8}))({I8}, {F8}, {B1}, {F8}, i8)"),
    "spread_soft": (spread_soft,
                    f"Tuple(({F8}, {F8}, {B1}))({I8}, {I8}, {F8}, {F8}, {F8}, b1, {B1})"),
    **_variants("scheme_sums", scheme_sums,
                f"UniTuple({F8}, 6)({{i}}, {{i}}, {F8}, {F8}, {{i}}, {F8}, {F8}, {B1}, b1, i8)"),
    **_variants("nu_sums", nu_sums,
                f"UniTuple({F8}, 2)({{i}}, {{i}}, {F8}, {I8}, {I8}, {F8}, {F8}, {F8}, i8, i8)"),
    "rows_dense_add": (rows_dense_add, f"void({I8}, {I8}, {F8}, {F8_2D}, {F8_2D})"),
}
