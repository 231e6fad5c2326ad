"""`ht_covariance`'s (totals × systems) sums on a design shaped like bench_recompute's, by
core share (estimation/core/distinct.py, `CORE_SHARE`).

    python bench/bench_ht_covariance.py [--systems 1000] [--pairs 1000000]
        [--per-system 10000] [--draws 500] [--shares 0,0.01,0.05,0.2,1] [--repeat 3]

As bench_recompute builds its systems: each predicts 80% of its pairs from a shared
popular core (Zipf(1.3) popularity over the pairs) and 20% at random, and draws
``--draws`` of them uniformly; the design is P (systems × distinct drawn pairs) and the
rows are one residual-like row per system on its own pairs, as in P̂'s variance. For
each share the pairs with (rows on u) × (systems on u) ≥ share × rows × systems go
through GEMM, the rest through the sparse product; share 0 is all GEMM. Prints per share
the core's size, the sparse product's multiply-adds left, CPU seconds (the minimum over
``--repeat`` runs) of `system_sums` and of one whole `ht_covariance` (a variance), and
the peak of the process's RSS. One OpenBLAS thread, as in the image.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimation.core import distinct


def design(systems: int, pairs: int, per_system: int, draws: int,
           rng: np.random.Generator) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """P and one residual row per system over the distinct drawn pairs, and n."""
    popularity = rng.zipf(1.3, pairs).astype(float)
    popularity /= popularity.sum()
    rows, cols, drawn = [], [], []
    for j in range(systems):
        core = rng.choice(pairs, size=int(per_system * 0.8), replace=False, p=popularity)
        picks = np.unique(np.concatenate([core, rng.integers(0, pairs, per_system - len(core))]))
        rows.append(np.full(len(picks), j))
        cols.append(picks)
        drawn.append(picks[rng.integers(0, len(picks), draws)])
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    sizes = np.bincount(rows, minlength=systems)
    S = np.unique(np.concatenate(drawn))
    keep = np.isin(cols, S)
    P = sp.csr_matrix((1.0 / sizes[rows[keep]], (rows[keep], np.searchsorted(S, cols[keep]))),
                      shape=(systems, len(S)))
    Y = P.copy()
    Y.data = Y.data * rng.normal(0, 1, len(Y.data))
    return P, Y, np.full(systems, float(draws))


def cpu(f, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        t = time.process_time()
        f()
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--systems", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--per-system", type=int, default=10_000)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--shares", default="0,0.01,0.05,0.2,1")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    P, Y, n = design(args.systems, args.pairs, args.per_system, args.draws,
                     np.random.default_rng(0))
    dz = distinct.Design.of(P, n)
    pi = dz.pi
    R = Y.multiply(((1 - pi) / pi**2)[None, :]).tocsr()
    a = np.bincount(R.indices, minlength=R.shape[1])
    cost = a * dz.systems_per_pair
    K, J = R.shape[0], P.shape[0]
    print(f"{J} systems × {P.shape[1]:,} drawn pairs, nnz {P.nnz:,}; Σ_u a_u k_u = "
          f"{cost.sum():.3g}; one GEMM column = {K * J:,} multiply-adds; load "
          f"{os.getloadavg()[0]:.2f}")
    print("share | core pairs | sparse multiply-adds left | system_sums CPU | "
          "ht_covariance CPU")
    ref = None
    for share in (float(s) for s in args.shares.split(",")):
        distinct.CORE_SHARE = share
        core = cost >= share * K * J
        sums = distinct.system_sums(R, dz)
        ref = sums if ref is None else ref
        err = np.abs(sums - ref).max() / np.abs(ref).max()
        t_sums = cpu(lambda: distinct.system_sums(R, dz), args.repeat)
        t_cov = cpu(lambda: distinct.ht_covariance(Y, Y, dz), args.repeat)
        print(f"{share:g} | {core.sum():,} | {cost[~core].sum():.3g} | {t_sums:.2f} s | "
              f"{t_cov:.2f} s  (max rel. diff. from share {args.shares.split(',')[0]}: "
              f"{err:.1e})")
    with open("/proc/self/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    print(f"peak RSS {peak / 1024:,.0f} MB; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
