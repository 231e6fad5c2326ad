"""The compiled kernels give the floats of the numpy they replaced, bit for bit; the
ahead-of-time build is what the estimators load, and numba's fallback agrees with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from estimation.core import compiled
from estimation.core.shares import fixed_point_shares


def numpy_shares(cells, lr, weight, fixed, total, start, solve, floor, tol=1e-12):
    """The vectorised solver the kernel replaced: every cell's Newton step at once."""
    n = len(fixed)
    at, w, lrs = cells, weight, lr
    if not solve.all():
        keep = solve.take(at)
        at, lrs = at[keep], lrs[keep]
        w = None if w is None else w[keep]
    wlr, lrm1 = (lrs if w is None else w * lrs), lrs - 1.0

    def psi(pi):
        p = pi.take(at)
        inv = p * lrm1
        inv += 1.0
        np.reciprocal(inv, out=inv)
        df = wlr * inv
        f = df * p
        df *= inv
        return (np.bincount(at, weights=f, minlength=n) + fixed - pi * total,
                np.bincount(at, weights=df, minlength=n) - total)

    lo, hi = np.full(n, floor), np.full(n, 1.0 - floor)
    pi = np.where(solve, np.clip(start, lo, hi), 0.5)
    f, df = psi(pi)
    probe = np.where(f > 0, hi, lo)
    at_end = solve & (f != 0) & (np.sign(psi(probe)[0]) * np.sign(f) >= 0)
    pi = np.where(at_end, probe, pi)
    active = solve & ~at_end & (f != 0)
    for _ in range(200):
        if not active.any():
            break
        lo = np.where(active & (f > 0), pi, lo)
        hi = np.where(active & (f < 0), pi, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = pi - f / df
        inside = np.isfinite(step) & (step > lo) & (step < hi)
        new = np.where(active, np.where(inside, step, 0.5 * (lo + hi)), pi)
        done = (np.abs(new - pi) <= tol) | (hi - lo <= tol)
        pi = new
        active &= ~done
        if not active.any():
            break
        f, df = psi(pi)
        active &= f != 0
    return np.where(solve, pi, start)


@pytest.mark.parametrize("seed", range(6))
def test_shares_match_the_vectorised_solver(seed):
    rng = np.random.default_rng(seed)
    n_cells, n_items = 300, 20_000
    cells = rng.integers(0, n_cells, n_items)
    # Ratios from near 0 to very large (shares pushed to the floor or the ceiling).
    lr = np.exp(rng.normal(0, 3 if seed % 2 else 1, n_items))
    weight = None if seed % 3 == 0 else rng.uniform(0.1, 5, n_items)
    size = np.bincount(cells, minlength=n_cells).astype(float)
    fixed = rng.uniform(0, 1, n_cells) * size * rng.uniform(0, 0.3)
    total = size + 5.0 + fixed
    start = rng.uniform(0, 1, n_cells)
    solve = rng.uniform(size=n_cells) > 0.1
    solve[:3] = True
    total[:3] = 5.0  # cells without items, only pseudo-items
    cells[cells < 3] = 3
    got = fixed_point_shares(cells, lr, weight, fixed, total, start, solve, 1e-3)
    want = numpy_shares(cells, lr, weight, fixed, total, start, solve, 1e-3)
    assert np.array_equal(got, want)
    assert np.array_equal(got[~solve], start[~solve])
    assert np.all((got[solve] >= 1e-3) & (got[solve] <= 1 - 1e-3))


def test_shares_of_one_cell_solve_its_equation():
    # π = (Σ f_j(π) + A) / T with f_j(π) = π·lr / (1 + π(lr − 1)): checked at the answer.
    lr = np.array([0.5, 2.0, 4.0, 9.0])
    cells = np.zeros(4, np.int64)
    pi = fixed_point_shares(cells, lr, None, np.array([1.0]), np.array([7.0]),
                            np.array([0.5]), np.array([True]), 1e-3)[0]
    f = pi * lr / (1 + pi * (lr - 1))
    assert abs((f.sum() + 1.0) / 7.0 - pi) < 1e-12


def numpy_reprior(prior, index, lr, live, base):
    own = prior.take(index)
    t = own * lr
    den = t + 1
    den -= own
    with np.errstate(divide="ignore", invalid="ignore"):
        t /= den
    return np.where(live & np.isfinite(t), t, base)


def numpy_moving_items(cells, lr, live, base, n_cells):
    moving = live & np.isfinite(lr)
    fixed = np.bincount(cells, weights=np.where(moving, 0.0, base), minlength=n_cells)
    return fixed, cells[moving], lr[moving]


def numpy_spread_soft(keys, pairs, true_prob, prob, ratio, has_ratio, hard):
    soft = ~np.isnan(true_prob[pairs])
    p = prob[keys]
    return (ratio[keys] if has_ratio else np.zeros(0), np.where(soft, p, hard.astype(float)),
            soft & (p > 0) & (p < 1))


def _items(seed):
    rng = np.random.default_rng(seed)
    n, n_cells, n_keys, n_pairs = 50_000, 400, 9_000, 3_000
    lr = np.exp(rng.normal(0, 4, n))
    lr[rng.uniform(size=n) < 0.01] = np.inf
    lr[rng.uniform(size=n) < 0.01] = np.nan
    prior = rng.uniform(0, 1, n_cells)
    prior[rng.uniform(size=n_cells) < 0.05] = np.nan  # systems without a prior
    prob = rng.choice([0.0, 1.0, 0.3, 0.97], n_keys) * rng.uniform(0.5, 1, n_keys)
    prob[rng.uniform(size=n_keys) < 0.2] = 1.0
    true_prob = rng.uniform(size=n_pairs)
    true_prob[rng.uniform(size=n_pairs) < 0.3] = np.nan
    return dict(rng=rng, n=n, cells=rng.integers(0, n_cells, n), n_cells=n_cells, lr=lr,
                prior=prior, live=rng.uniform(size=n) < 0.8, base=rng.uniform(size=n),
                keys=rng.integers(0, n_keys, n), pairs=rng.integers(0, n_pairs, n),
                prob=prob, ratio=np.exp(rng.normal(0, 3, n_keys)), true_prob=true_prob,
                hard=rng.uniform(size=n) < 0.5)


@pytest.mark.parametrize("seed", range(4))
def test_item_kernels_match_numpy(seed):
    kernels = compiled.kernels()

    x = _items(seed)
    for index in (x["cells"], x["cells"].astype(np.int32)):
        got = kernels.reprior(x["prior"], index, x["lr"], x["live"], x["base"])
        want = numpy_reprior(x["prior"], index, x["lr"], x["live"], x["base"])
        assert np.array_equal(got, want)
    got = kernels.moving_items(x["cells"], x["lr"], x["live"], x["base"], x["n_cells"])
    want = numpy_moving_items(x["cells"], x["lr"], x["live"], x["base"], x["n_cells"])
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)
    for has_ratio in (True, False):
        got = kernels.spread_soft(x["keys"], x["pairs"], x["true_prob"], x["prob"],
                                  x["ratio"], has_ratio, x["hard"])
        want = numpy_spread_soft(x["keys"], x["pairs"], x["true_prob"], x["prob"],
                                 x["ratio"], has_ratio, x["hard"])
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w)


@pytest.mark.parametrize("soft", [True, False])
def test_scheme_sums_match_the_summing_matrices(soft):
    """The precision sums equal those of `RowSums` layouts (csr_matvec), bit for bit,
    also where the systems' rows come unsorted."""
    from estimation.core import kernels
    from estimation.core.precision import RowSums

    rng = np.random.default_rng(11)
    m, n = 40, 30_000
    rows = rng.integers(0, m, n).astype(np.int32)
    right = rng.uniform(size=n) * (rng.uniform(size=n) < 0.9)
    on = np.flatnonzero(rng.uniform(size=n) < 0.7).astype(np.int32)
    on_rows = rows[on]
    simple, joint, q = rng.uniform(size=len(on)), rng.exponential(size=len(on)), rng.uniform(size=n)
    own = rng.uniform(size=n) < 0.5
    got = kernels.scheme_sums(on_rows, on, simple, joint, rows, q, right, own, soft, m)
    on_sums = RowSums(on_rows, m, on, n)
    judged = RowSums(rows, m, np.arange(n), n).matrix(q)
    mine = right * own
    want = [on_sums.matrix(simple) @ right, on_sums.matrix(joint) @ right, judged @ right,
            judged @ (q * (right * (1 - right))) if soft else np.zeros(m),
            judged @ mine, judged @ (q * (mine * (1 - right))) if soft else np.zeros(m)]
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_nu_sums_match_numpy(mode):
    from estimation.core import kernels
    from estimation.core.precision import RowSums

    rng = np.random.default_rng(5 + mode)
    m, n_pairs, n = 30, 500, 20_000
    sys_of = np.sort(rng.integers(0, m, n))
    pair_of = rng.integers(0, n_pairs, n)
    cell, inv = np.unique(sys_of * n_pairs + pair_of, return_inverse=True)
    row, col = cell // n_pairs, cell % n_pairs
    right = rng.uniform(size=n) * 0.8
    cells = RowSums(inv.ravel(), len(cell), np.arange(n), n).matrix()
    a = rng.exponential(size=n_pairs) * (rng.uniform(size=n_pairs) < 0.9)
    draws = rng.integers(0, 4, n_pairs).astype(float)[col]
    scale = rng.uniform(0.2, 3, n_pairs)
    g = cells @ right
    over = None
    if mode == 2:
        g *= scale.take(col)
        over = np.maximum(g - 1.0, 0.0) * a.take(col) * draws
    elif mode == 1:
        g /= scale.take(col)
    weight = a.take(col) * g * draws
    num, extra = kernels.nu_sums(cells.indptr, cells.indices, right, row, col, draws, a,
                                 scale, mode, m)
    assert np.array_equal(num, np.bincount(row, weights=weight, minlength=m))
    want = np.zeros(m) if over is None else np.bincount(row, weights=over, minlength=m)
    assert np.array_equal(extra, want)


def test_the_estimators_load_the_ahead_of_time_build():
    """`make` builds the module (python -m estimation.core.build_kernels): loading it
    imports no numba, and the loops come from it."""
    import subprocess
    import sys

    from tests import ROOT

    code = ("from estimation.core import compiled, _kernels_aot; import sys; "
            "k = compiled.kernels(); "
            "assert k.moving_items is _kernels_aot.moving_items, 'stale build: run make test'; "
            "assert 'numba' not in sys.modules, 'numba imported'")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_a_stale_build_falls_back_to_numba(monkeypatch, caplog):
    from estimation.core import build_kernels

    monkeypatch.setattr(compiled, "_LOADED", None)
    monkeypatch.setattr(build_kernels, "source_digest", lambda: -1)
    with caplog.at_level("WARNING", logger="estimation.core.compiled"):
        loops = compiled.kernels()
    assert "another kernels.py" in caplog.text
    assert type(loops.moving_items).__name__ == "CPUDispatcher"  # numba's, compiled here
    monkeypatch.setattr(compiled, "_LOADED", None)  # the next test loads the build again


@pytest.mark.parametrize("seed", range(2))
def test_the_fallback_gives_the_builds_floats(seed):
    built = compiled._ahead_of_time()
    assert built is not None
    jit = compiled._just_in_time()
    x = _items(seed)
    for width in ("i4", "i8"):
        index = x["cells"].astype(np.int32 if width == "i4" else np.int64)
        args = (x["prior"], index, x["lr"], x["live"], x["base"])
        assert np.array_equal(getattr(built, f"reprior_{width}")(*args),
                              jit[f"reprior_{width}"](*args))
    args = (x["cells"], x["lr"], x["live"], x["base"], x["n_cells"])
    for g, w in zip(built.moving_items(*args), jit["moving_items"](*args), strict=True):
        assert np.array_equal(g, w)
    size = np.bincount(x["cells"], minlength=x["n_cells"]).astype(float)
    lr = np.where(np.isfinite(x["lr"]), x["lr"], 1.0)
    args = (x["cells"], lr, x["base"], True, size * 0.1, size + 5.0,
            np.full(x["n_cells"], 0.5), np.ones(x["n_cells"], np.bool_), 1e-3, 1e-12)
    assert np.array_equal(built.fixed_point_shares(*args), jit["fixed_point_shares"](*args))


def test_the_built_loops_give_the_gil_up():
    """The build compiles each loop to release the GIL while it runs (as the fallback's
    nogil=True does), so a recompute's replicates overlap its final estimate
    (estimation/beside.py): the module's wrappers hand the GIL over and take it back."""
    built = compiled._ahead_of_time()
    assert built is not None
    binary = Path(built.__file__).read_bytes()
    assert b"PyEval_SaveThread" in binary and b"PyEval_RestoreThread" in binary
