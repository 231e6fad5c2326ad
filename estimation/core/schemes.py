"""Sampling distributions over a system's instances (docs/internals/estimation.md §2).

Every scheme is computed from multiplicities ``counts`` so that the same code
gives a system's distribution (each instance once), the distribution of a
sample of true instances with repeats, and of each bootstrap resample of it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

SCHEMES: tuple[str, ...] = ("instance", "predicate", "entity", "entity_relation")


def check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise ValueError(
            f"unknown scheme {scheme!r}; expected one of {', '.join(SCHEMES)}"
        )
    return scheme


def _onehot(keys: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """Indicator matrix (n × strata) of the stratum of each element, and the stratum index."""
    _, inv = np.unique(keys, return_inverse=True)
    inv = inv.ravel()
    n = len(inv)
    k = int(inv.max()) + 1 if n else 0
    return sp.csr_matrix((np.ones(n), (np.arange(n), inv)), shape=(n, k)), inv


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den > 0)
    return out


def scheme_weights(
    scheme: str,
    predicates: np.ndarray,
    subjects: np.ndarray,
    counts: np.ndarray | None = None,
) -> np.ndarray:
    """Probability of each element under ``scheme``.

    predicates, subjects: (n,) integer codes of the elements.
    counts: (B, n) multiplicities (B resamples) or None for one copy of each.
    Returns (B, n) probabilities (rows sum to 1), or (n,) when counts is None.
    Elements with multiplicity 0 get probability 0.

    instance         p ∝ 1
    predicate        p = 1 / (#predicates · #instances of the predicate)
    entity           p = 1 / (#subjects · #instances of the subject)
    entity_relation  p = 1 / (#subjects · #predicates of the subject ·
                              #instances of the (subject, predicate) cell):
                     a subject uniformly, then one of its relations uniformly,
                     then one of that relation's instances.
    """
    check_scheme(scheme)
    predicates = np.asarray(predicates)
    subjects = np.asarray(subjects)
    n = len(predicates)
    single = counts is None
    c = np.ones((1, n)) if single else np.asarray(counts, dtype=float)
    if n == 0:
        out = np.zeros((c.shape[0], 0))
    elif scheme == "instance":
        out = _safe_div(c, c.sum(axis=1, keepdims=True))
    elif scheme in ("predicate", "entity"):
        onehot, inv = _onehot(predicates if scheme == "predicate" else subjects)
        stratum = np.asarray((onehot.T @ c.T).T)  # (B, strata) multiplicity per stratum
        present = (stratum > 0).sum(axis=1, keepdims=True)
        out = _safe_div(c, present * stratum[:, inv])
    else:
        # Cells are (subject, predicate); code them as one key via the stratum indices.
        _, subj_inv = np.unique(subjects, return_inverse=True)
        _, pred_inv = np.unique(predicates, return_inverse=True)
        cell_key = (
            subj_inv.ravel().astype(np.int64) * (int(pred_inv.max()) + 1)
            + pred_inv.ravel()
        )
        cell_onehot, cell_inv = _onehot(cell_key)
        cell = np.asarray((cell_onehot.T @ c.T).T)  # (B, cells)
        # Subject of each cell, to count the present relations per subject.
        cell_subj = np.zeros(cell.shape[1], dtype=np.int64)
        cell_subj[cell_inv] = subj_inv.ravel()
        subj_onehot = sp.csr_matrix(
            (np.ones(len(cell_subj)), (np.arange(len(cell_subj)), cell_subj)),
            shape=(len(cell_subj), int(cell_subj.max()) + 1),
        )
        rel_per_subj = np.asarray(
            (cell > 0).astype(float) @ subj_onehot
        )  # (B, subjects)
        n_subj = (rel_per_subj > 0).sum(axis=1, keepdims=True)
        den = n_subj * rel_per_subj[:, subj_inv.ravel()] * cell[:, cell_inv]
        out = _safe_div(c, den)
    return out[0] if single else out


def sample_draws(probs: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``n`` i.i.d. draws with replacement from the distribution ``probs``."""
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    cdf = np.cumsum(probs)
    cdf /= cdf[-1]
    return np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), len(probs) - 1)
