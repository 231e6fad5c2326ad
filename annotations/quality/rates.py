"""The workers' rate models behind the one-coin and lopsided fits: each model's M-step
(rates from the current posteriors) and its log-likelihood of every item's answers under
each true category. Pure numpy; `aggregation` runs the EM around them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

# `shrink` value that selects the blind-or-seen mixture per (worker, type) cell
# (`blind_spot_rates`) instead of a per-type rate shrunk towards the worker's own.
BLIND_SPOT_MIXTURE = -1.0


def coin_rates(post: np.ndarray, items: np.ndarray, workers: np.ndarray, obs: np.ndarray,
                n_w: int, alpha: float, beta: float) -> np.ndarray:
    right = np.bincount(workers, weights=post[items, obs], minlength=n_w)
    total = np.bincount(workers, minlength=n_w)
    return np.clip((right + alpha) / (total + alpha + beta), 1e-6, 1 - 1e-6)


def coin_loglik(acc: np.ndarray, items: np.ndarray, workers: np.ndarray, obs: np.ndarray,
                 k_opt: np.ndarray, n_i: int, n_c: int) -> np.ndarray:
    # log P(answers | c) = Σ log((1-a)/(K-1)) + Σ_{answers = c} log(a (K-1)/(1-a))
    wrong = np.log1p(-acc[workers]) - np.log(np.maximum(k_opt[items] - 1, 1))
    out = np.tile(np.bincount(items, weights=wrong, minlength=n_i)[:, None], (1, n_c))
    np.add.at(out, (items, obs), np.log(acc[workers]) - wrong)
    return out


class Incidence:
    """Sparse answer matrices of one set of answers: worker × item (all answers, answers
    "none") and item × worker (answers "none", answers a relation)."""

    def __init__(self, items: np.ndarray, workers: np.ndarray, obs: np.ndarray, nc: int,
                 n_i: int, n_w: int) -> None:
        said_none = obs == nc
        rel = ~said_none
        self.by_worker = sp.csr_matrix((np.ones(len(items)), (workers, items)),
                                       shape=(n_w, n_i))
        self.worker_nones = sp.csr_matrix((said_none.astype(float), (workers, items)),
                                          shape=(n_w, n_i))
        self.item_nones = sp.csr_matrix((said_none.astype(float), (items, workers)),
                                        shape=(n_i, n_w))
        self.item_rels = sp.csr_matrix((rel.astype(float), (items, workers)),
                                       shape=(n_i, n_w))


def lopsided_rates(post: np.ndarray, items: np.ndarray, workers: np.ndarray,
                    obs: np.ndarray, nc: int, n_w: int, alpha: float,
                    beta: float, shrink: float,
                    inc: Incidence | None = None) -> tuple[np.ndarray, ...]:
    p_none = post[items, nc]
    said_none = obs == nc
    neg = np.bincount(workers, weights=p_none, minlength=n_w)
    neg_right = np.bincount(workers, weights=p_none * said_none, minlength=n_w)
    pos = np.bincount(workers, weights=1 - p_none, minlength=n_w)
    pos_right = np.bincount(workers, weights=post[items, obs] * ~said_none, minlength=n_w)
    pos_miss = np.bincount(workers, weights=(1 - p_none) * said_none, minlength=n_w)
    spec = (neg_right + alpha) / (neg + alpha + beta)
    # Dirichlet(α, β/2, β/2) over right / missed / another relation.
    sens = (pos_right + alpha) / (pos + alpha + beta)
    miss = np.clip((pos_miss + beta / 2) / (pos + alpha + beta), 1e-6, 1 - 1e-6)
    # Per type: (misses of type c + shrink · overall rate) / (answers on type c + shrink).
    inc = inc or Incidence(items, workers, obs, nc, post.shape[0], n_w)
    if np.isinf(shrink):  # one miss rate per worker, whatever the type
        per_type = np.repeat(miss[:, None], post.shape[1], axis=1)
    elif shrink == BLIND_SPOT_MIXTURE:
        per_type = blind_spot_rates(np.asarray(inc.worker_nones @ post),
                                     np.asarray(inc.by_worker @ post), nc, alpha, beta)
    else:
        per_type = (((inc.worker_nones @ post) + shrink * miss[:, None])
                    / ((inc.by_worker @ post) + shrink))
    return (np.clip(spec, 1e-6, 1 - 1e-6), np.clip(sens, 1e-6, 1 - 1e-6), miss,
            np.clip(per_type, 1e-6, 1 - 1e-6))


def blind_spot_rates(missed: np.ndarray, seen: np.ndarray, nc: int, alpha: float,
                      beta: float, rounds: int = 50) -> np.ndarray:
    """(workers × categories) miss rates under a two-point prior per (worker, type) cell.

    ``missed``/``seen``: each cell's expected answers "none" / all answers on pairs whose
    truth is that type. A cell is blind (rate b, one for the crowd) with probability π,
    else it has the worker's own rate s_w; π, b and s_w are fitted by EM over the cells
    (b ~ Beta(8, 2), π ~ Beta(1, 9), s_w with the worker rates' prior), and a cell's rate
    is its posterior mean γ b + (1 − γ) s_w. Unlike a per-cell rate shrunk towards the
    worker's, a cell seen a few times is not given a rate in between: its answers decide
    which of the two it is.
    """
    rel = np.ones(missed.shape[1], dtype=bool)
    if 0 <= nc < len(rel):
        rel[nc] = False
    m, n = missed[:, rel], seen[:, rel]
    k = n - m
    s = np.clip((m.sum(axis=1) + beta / 2) / (n.sum(axis=1) + alpha + beta), 1e-6, 0.5)
    b, pi = 0.9, 0.1
    gamma = np.zeros_like(m)
    for _ in range(rounds):
        lb = m * np.log(b) + k * np.log1p(-b)
        ls = m * np.log(s)[:, None] + k * np.log1p(-s)[:, None]
        logit = np.log(pi / (1 - pi)) + lb - ls
        gamma = 1.0 / (1.0 + np.exp(-np.clip(logit, -500, 500)))
        new_pi = float((gamma.sum() + 1.0) / (gamma.size + 10.0))
        b = float(np.clip(((gamma * m).sum() + 8.0) / ((gamma * n).sum() + 10.0), 0.5, 1 - 1e-3))
        s = np.clip((((1 - gamma) * m).sum(axis=1) + beta / 2)
                    / (((1 - gamma) * n).sum(axis=1) + alpha + beta), 1e-6, b)
        done = abs(new_pi - pi) < 1e-7
        pi = new_pi
        if done:
            break
    out = np.repeat(s[:, None], missed.shape[1], axis=1)
    out[:, rel] = gamma * b + (1 - gamma) * s[:, None]
    return out


def lopsided_loglik(rates: tuple[np.ndarray, ...], items: np.ndarray, workers: np.ndarray,
                     obs: np.ndarray, k_opt: np.ndarray, nc: int, n_i: int,
                     n_c: int, inc: Incidence | None = None) -> np.ndarray:
    spec, sens, miss = (r[workers] for r in rates[:3])
    per_type = rates[3]
    n_w = per_type.shape[0]
    k = k_opt[items]
    said_none = obs == nc
    # Truth = relation c: none → miss(w, c); c → (1 − miss(w, c)) ρ_w; another relation →
    # (1 − miss(w, c)) (1 − ρ_w)/(K − 2), ρ_w the worker's share right when not missing.
    rho = np.clip(sens / np.clip(1 - miss, 1e-6, 1.0), 1e-6, 1 - 1e-6)
    off = np.log1p(-rho) - np.log(np.maximum(k - 2, 1))
    rel = ~said_none
    inc = inc or Incidence(items, workers, obs, nc, n_i, n_w)
    out = (np.asarray(inc.item_nones @ np.log(per_type))
           + np.asarray(inc.item_rels @ np.log1p(-per_type)))
    out += np.bincount(items, weights=np.where(rel, off, 0.0), minlength=n_i)[:, None]
    np.add.at(out, (items[rel], obs[rel]), np.log(rho[rel]) - off[rel])
    # Truth = none: none → spec; any relation → (1 − spec)/(K − 1).
    neg = np.where(said_none, np.log(spec), np.log1p(-spec) - np.log(np.maximum(k - 1, 1)))
    out[:, nc] = np.bincount(items, weights=neg, minlength=n_i)
    return out
