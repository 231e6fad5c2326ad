"""The workers' rate models behind the one-coin and lopsided fits: each model's M-step
(rates from the current posteriors) and its log-likelihood of every item's answers under
each true category. Pure numpy; `aggregation` runs the EM around them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cached_property
from typing import Any, Protocol, TypeVar

import numpy as np
import scipy.sparse as sp

# `shrink` value that selects the blind-or-seen mixture per (worker, type) cell
# (`blind_spot_rates`) instead of a per-type rate shrunk towards the worker's own.
BLIND_SPOT_MIXTURE = -1.0
# The same mixture, each answer's likelihood taken under its cell's rate *without that
# answer's pair* (`loo_cell_terms`): the rates then carry the cells' counts and the
# mixture's parameters (`BlindSpotCells`).
BLIND_SPOT_LOO = -2.0
# A pair's share of a cell below this is not left out: it moves the pair's posterior on
# that type by less than about 5·share² (the log rate moves by about log(b/s)·share),
# and skipping it keeps the correction sparse (most pairs are surely not most types).
LOO_MIN_SHARE = 1e-4


# The lopsided rates' tuple: (specificity, sensitivity, miss, per type), then under
# BLIND_SPOT_LOO the cells (missed, seen, s_w, mixture), then with offered sets the
# false-yes rates per worker and relation (`false_yes_rates`), last.
def has_cells(rates: tuple[np.ndarray, ...]) -> bool:
    return len(rates) >= 8


def yes_cells(rates: tuple[np.ndarray, ...]) -> np.ndarray | None:
    return rates[-1] if len(rates) in (5, 9) else None


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
    "none") and item × worker (answers "none", answers a relation). Each is built when
    first used: the leave-one-out rounds of `coin_posterior` use none of them."""

    def __init__(self, items: np.ndarray, workers: np.ndarray, obs: np.ndarray, nc: int,
                 n_i: int, n_w: int) -> None:
        self._items, self._workers, self._said_none = items, workers, obs == nc
        self.n_items, self.n_workers = n_i, n_w
        # The answers sorted by item, and where each item's start (`loo_cell_terms`).
        self.item_order = np.argsort(items, kind="stable")
        self.item_bounds = np.searchsorted(items[self.item_order], np.arange(n_i + 1))

    @cached_property
    def by_worker(self) -> sp.csr_matrix:
        return sp.csr_matrix((np.ones(len(self._items)), (self._workers, self._items)),
                             shape=(self.n_workers, self.n_items))

    @cached_property
    def worker_nones(self) -> sp.csr_matrix:
        return sp.csr_matrix((self._said_none.astype(float), (self._workers, self._items)),
                             shape=(self.n_workers, self.n_items))

    @cached_property
    def item_nones(self) -> sp.csr_matrix:
        return sp.csr_matrix((self._said_none.astype(float), (self._items, self._workers)),
                             shape=(self.n_items, self.n_workers))

    @cached_property
    def item_rels(self) -> sp.csr_matrix:
        return sp.csr_matrix(((~self._said_none).astype(float), (self._items, self._workers)),
                             shape=(self.n_items, self.n_workers))


def lopsided_rates(post: np.ndarray, items: np.ndarray, workers: np.ndarray,
                    obs: np.ndarray, nc: int, n_w: int, alpha: float,
                    beta: float, shrink: float,
                    inc: Incidence | None = None,
                    offered: Offered | None = None) -> tuple[np.ndarray, ...]:
    """The rates from the posteriors; with ``offered``, the false-yes rates per worker
    and relation appended (`false_yes_rates`)."""
    p_none = post[items, nc]
    yes = () if offered is None else (
        false_yes_rates(p_none, items, workers, obs, nc, n_w, offered),)
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
    elif shrink in (BLIND_SPOT_MIXTURE, BLIND_SPOT_LOO):
        missed = np.asarray(inc.worker_nones @ post)
        seen = np.asarray(inc.by_worker @ post)
        per_type, s_w, b, pi = blind_spot_fit(missed, seen, nc, alpha, beta)
        if shrink == BLIND_SPOT_LOO:
            cells = (missed, seen, s_w, np.array([b, pi]))
            return (np.clip(spec, 1e-6, 1 - 1e-6), np.clip(sens, 1e-6, 1 - 1e-6), miss,
                    np.clip(per_type, 1e-6, 1 - 1e-6), *cells, *yes)
    else:
        per_type = (((inc.worker_nones @ post) + shrink * miss[:, None])
                    / ((inc.by_worker @ post) + shrink))
    return (np.clip(spec, 1e-6, 1 - 1e-6), np.clip(sens, 1e-6, 1 - 1e-6), miss,
            np.clip(per_type, 1e-6, 1 - 1e-6), *yes)


def blind_spot_rates(missed: np.ndarray, seen: np.ndarray, nc: int, alpha: float,
                      beta: float, rounds: int = 50) -> np.ndarray:
    """(workers × categories) miss rates under a two-point prior per (worker, type) cell
    (`blind_spot_fit`'s first value)."""
    return blind_spot_fit(missed, seen, nc, alpha, beta, rounds)[0]


def blind_spot_fit(missed: np.ndarray, seen: np.ndarray, nc: int, alpha: float,
                   beta: float, rounds: int = 50
                   ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(workers × categories) miss rates under a two-point prior per (worker, type) cell,
    with the mixture's parameters: (rates, s_w per worker, b, π).

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
    return out, s, b, pi


def _cell_rate(m: np.ndarray, k: np.ndarray, s: np.ndarray, b: float,
               pi: float) -> np.ndarray:
    """A cell's posterior-mean miss rate from m misses and k relation answers (the
    mixture's E-step for one cell; `s` the worker's seen rate, broadcast to m)."""
    logit = (np.log(pi / (1 - pi)) + m * (np.log(b) - np.log(s))
             + k * (np.log1p(-b) - np.log1p(-s)))
    gamma = 1.0 / (1.0 + np.exp(-np.clip(logit, -500, 500)))
    return np.clip(gamma * b + (1 - gamma) * s, 1e-6, 1 - 1e-6)


def loo_cell_terms(rates: tuple[np.ndarray, ...], items: np.ndarray, workers: np.ndarray,
                   said_none: np.ndarray, post: np.ndarray | None, nc: int,
                   inc: Incidence) -> np.ndarray:
    """(items × categories) change of log P(answers | truth c) when each answer's miss
    rate on c is its cell's without the answer's own pair (`BLIND_SPOT_LOO`).

    A cell's counts sum every answer of the worker on pairs of its type, weighted by
    ``post`` (the posterior they were counted with); a pair's own "none" then counts as
    a miss of every type it might hold and makes its cells look blind, which makes its
    "none" weaker evidence against those types, which raises their posterior: a loop
    that inflates P(pair true) where most pairs hold none and a worker sees a type only
    a few times. The rate a pair is judged by leaves its own share out — the cell's
    predictive rate given the other pairs (as collapsed variational EM does). Pairs'
    shares below LOO_MIN_SHARE are not left out (the correction stays sparse).
    """
    n_i, n_c = inc.n_items, rates[3].shape[1]
    out = np.zeros((n_i, n_c))
    if post is None or not len(items):
        return out
    per_type, missed, seen, s_w, (b, pi) = rates[3], *rates[4:7], rates[7]
    share = np.array(post, dtype=float, copy=True)
    if 0 <= nc < n_c:
        share[:, nc] = 0.0
    ii, cc = np.nonzero(share > LOO_MIN_SHARE)
    # Every answer of each such (pair, type): the answers sorted by pair.
    lo, hi = inc.item_bounds[ii], inc.item_bounds[ii + 1]
    cnt = hi - lo
    total = int(cnt.sum())
    if not total:
        return out
    first = np.repeat(np.cumsum(cnt) - cnt, cnt)
    ans = inc.item_order[np.repeat(lo, cnt) + np.arange(total) - first]
    i, c = np.repeat(ii, cnt), np.repeat(cc, cnt)
    w, none = workers[ans], said_none[ans]
    p = share[i, c]
    m = missed[w, c]
    k = seen[w, c] - m
    r = _cell_rate(np.maximum(m - p * none, 0.0), np.maximum(k - p * ~none, 0.0), s_w[w],
                   float(b), float(pi))
    full = per_type[w, c]
    diff = np.where(none, np.log(r) - np.log(full), np.log1p(-r) - np.log1p(-full))
    out += np.bincount(i * n_c + c, weights=diff, minlength=n_i * n_c).reshape(n_i, n_c)
    return out


def lopsided_loglik(rates: tuple[np.ndarray, ...], items: np.ndarray, workers: np.ndarray,
                     obs: np.ndarray, k_opt: np.ndarray, nc: int, n_i: int,
                     n_c: int, inc: Incidence | None = None,
                     post: np.ndarray | None = None,
                     offered: Offered | None = None) -> np.ndarray:
    """(items × categories) log P(item's answers | truth c). With the cells of
    `BLIND_SPOT_LOO` in ``rates``, ``post`` is the posterior the cells were counted with
    and each answer's miss rate leaves its own pair out (`loo_cell_terms`). With
    false-yes rates in ``rates`` and ``offered``, truth none is `none_loglik`'s."""
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
    if has_cells(rates):
        out += loo_cell_terms(rates, items, workers, said_none, post, nc, inc)
    out += np.bincount(items, weights=np.where(rel, off, 0.0), minlength=n_i)[:, None]
    np.add.at(out, (items[rel], obs[rel]), np.log(rho[rel]) - off[rel])
    fp = yes_cells(rates)
    if fp is not None and offered is not None:
        out[:, nc] = none_loglik(fp, items, workers, obs, nc, n_i, offered)
        return out
    # Truth = none: none → spec; any relation → (1 − spec)/(K − 1).
    neg = np.where(said_none, np.log(spec), np.log1p(-spec) - np.log(np.maximum(k - 1, 1)))
    out[:, nc] = np.bincount(items, weights=neg, minlength=n_i)
    return out


def unseen_worker_rates(rates: tuple[np.ndarray, ...], like: np.ndarray,
                        nc: int) -> tuple[np.ndarray, ...]:
    """``rates`` with one row added per entry of ``like``: a worker the fit never saw,
    given the rates of the fitted worker ``like[k]`` (a random one, say).

    The fit knows nothing of such a worker, so it stands for a member of the crowd the
    fit did see. Under the leave-one-out layout (`BLIND_SPOT_LOO`) the worker has no
    counted answers: its cells are empty, and its per-type miss rates are the mixture's
    rate of an empty cell around its seen rate — what `loo_cell_terms` computes for it
    too, so its answers get no leave-one-out change (a copied per-type row would be
    pulled back to that rate by it). Elsewhere the whole row is copied.
    """
    like = np.asarray(like, dtype=np.int64)
    if not has_cells(rates):
        return tuple(np.concatenate([r, r[like]]) for r in rates)
    spec, sens, miss, per_type, missed, seen, s_w, mix = rates[:8]
    yes = tuple(np.concatenate([r, r[like]]) for r in rates[8:])
    s = s_w[like]
    empty = np.zeros((len(like), per_type.shape[1]))
    rows = np.repeat(s[:, None], per_type.shape[1], axis=1)
    rel = np.ones(per_type.shape[1], dtype=bool)
    if 0 <= nc < len(rel):
        rel[nc] = False
    rows[:, rel] = _cell_rate(empty[:, rel], empty[:, rel], s[:, None], float(mix[0]),
                              float(mix[1]))
    return (np.concatenate([spec, spec[like]]), np.concatenate([sens, sens[like]]),
            np.concatenate([miss, miss[like]]),
            np.concatenate([per_type, np.clip(rows, 1e-6, 1 - 1e-6)]),
            np.concatenate([missed, empty]), np.concatenate([seen, empty]),
            np.concatenate([s_w, s]), mix, *yes)


class _Fitted(Protocol):
    """What a fit's parameters hold here (`aggregation.OneCoinParams`, a dataclass)."""

    rates: tuple[np.ndarray, ...]
    none_index: int


Fit = TypeVar("Fit", bound=_Fitted)


def with_unseen_workers(params: Fit, n_workers: int, seed: Sequence[int]) -> Fit:
    """``params`` with rates for workers ``len(rates) .. n_workers - 1``, whom the fit
    never saw: each takes the rates of a fitted worker drawn at random, so a set of
    replicates (each with its own ``seed``) gives such a worker the spread of the
    crowd's rates rather than one value (a fixed rate would make the replicates agree
    on the weight of its answers: no spread where nothing is known). Worker w's draw
    depends on ``seed`` and w alone, not on how many unseen workers there are.
    `unseen_worker_rates` makes the rows."""
    n_fit = len(params.rates[0]) if params.rates else 0
    if n_workers <= n_fit or n_fit == 0:
        return params
    like = np.asarray([np.random.default_rng([*seed, w]).integers(n_fit)
                       for w in range(n_fit, n_workers)], dtype=np.int64)
    return replace(params, rates=unseen_worker_rates(  # type: ignore[type-var]
        params.rates, like, params.none_index))


# ---- false "yes" per worker and relation ---------------------------------------------

# A (worker, relation) cell's false-yes rate is shrunk towards the relation's rate
# times the worker's propensity (`false_yes_rates`), and each relation's towards the
# crowd's, by Beta priors whose strength is fitted (empirical Bayes, `_eb_strength`):
# strong where the cells scatter no more than their counts explain (random errors),
# weak where workers differ on a relation (a yes-bias). At least this many pseudo-
# exposures, at most ``YES_MAX_SHRINK``.
YES_MIN_SHRINK = 20.0
YES_MAX_SHRINK = 1e4
# The crowd's rate over every relation has a Beta prior of this mean and this many
# exposures: with a handful of answers (a new corpus) "these pairs hold none and every
# worker names the same relation on them" must not explain as much as "it holds".
YES_PRIOR_RATE = 0.05
YES_PRIOR_EXPOSURES = 100.0
# P(answer none | none) never below this (a worker whose cells sum past 1).
MIN_NONE = 1e-3


class Offered:
    """Which relations each question offered: its stratum (a pair type decides the
    relations) and, per stratum, a 0/1 row over the categories (none's column 0)."""

    def __init__(self, strata: np.ndarray, table: np.ndarray) -> None:
        self.strata, self.table = strata, table

    @classmethod
    def seen(cls, strata: np.ndarray, items: np.ndarray, obs: np.ndarray,
             truth: dict[int, int], n_c: int, nc: int) -> Offered:
        """The relations offered per stratum, read off the answers (and known truths)
        given in it: a relation nobody in a stratum ever named adds no false yes there."""
        st = np.asarray(strata, np.int64)
        table = np.zeros((int(st.max()) + 1 if len(st) else 1, n_c))
        table[st[items], obs] = 1.0
        for i, c in truth.items():
            table[st[i], c] = 1.0
        if 0 <= nc < n_c:
            table[:, nc] = 0.0
        return cls(st, table)

    def of(self, items: np.ndarray) -> np.ndarray:
        """Each item's row of `rows` (a stratum beyond the table: all offered)."""
        return np.minimum(self.strata[items], len(self.table))

    def rows(self) -> np.ndarray:
        """The table with an "everything offered" row last."""
        every = (self.table.sum(axis=0) > 0).astype(float)
        return np.vstack([self.table, every[None, :]])


def false_yes_parts(p_none: np.ndarray, items: np.ndarray, workers: np.ndarray,
                    obs: np.ndarray, nc: int, n_w: int, offered: Offered) -> dict[str, Any]:
    """`false_yes_rates`'s pieces: per (worker, relation) the names ``said`` and the
    ``exposed`` count (answers weighted by P(none)), the ``crowd`` rate, per relation its
    counts ``x_r``, ``n_r``, shrinkage ``s_r`` and ``relation`` rate, the ``worker``
    propensities, each cell's ``prior`` and per relation the cells' shrinkage ``s_c``
    (benches read them to study the fit)."""
    table = offered.rows()
    n_s, n_c = table.shape
    rel = obs != nc
    said = np.bincount(workers[rel] * n_c + obs[rel], weights=p_none[rel],
                       minlength=n_w * n_c).reshape(n_w, n_c).astype(float)
    by_stratum = np.bincount(workers * n_s + offered.of(items), weights=p_none,
                             minlength=n_w * n_s).reshape(n_w, n_s)
    exposed = by_stratum @ table
    if 0 <= nc < n_c:
        said[:, nc] = 0.0
    crowd = ((said.sum() + YES_PRIOR_RATE * YES_PRIOR_EXPOSURES)
             / (exposed.sum() + YES_PRIOR_EXPOSURES))
    # The relation's rate, shrunk towards the crowd's.
    x_r, n_r = said.sum(axis=0), exposed.sum(axis=0)
    s_r = _eb_strength(x_r, n_r, np.full(n_c, crowd))
    relation = (x_r + s_r * crowd) / (n_r + s_r)
    # The worker's propensity: names over the names its exposures would give at the
    # relations' rates (a spammer's is high, an honest worker's near 1).
    expect = exposed @ relation
    worker = (said.sum(axis=1) + 0.5) / (expect + 0.5)
    prior = np.clip(worker[:, None] * relation[None, :], 1e-6, 0.99)
    s_c = np.array([_eb_strength(said[:, r], exposed[:, r], prior[:, r])
                    for r in range(n_c)])
    return {"said": said, "exposed": exposed, "crowd": crowd, "x_r": x_r, "n_r": n_r,
            "s_r": s_r, "relation": relation, "worker": worker, "prior": prior, "s_c": s_c}


def false_yes_rates(p_none: np.ndarray, items: np.ndarray, workers: np.ndarray,
                    obs: np.ndarray, nc: int, n_w: int, offered: Offered) -> np.ndarray:
    """(workers × categories) P(worker names relation r | the pair holds none and its
    question offers r), each answer weighted by its pair's P(none) (``p_none`` per
    answer): the cell's names of r over its exposures to r, shrunk (`YES_SHRINK`)
    towards the worker's rate over all relations and the relation's over all workers.
    """
    f = false_yes_parts(p_none, items, workers, obs, nc, n_w, offered)
    out = (f["said"] + f["s_c"] * f["prior"]) / (f["exposed"] + f["s_c"])
    return np.clip(out, 1e-6, 1 - 1e-3)


def _eb_strength(x: np.ndarray, n: np.ndarray, m: np.ndarray) -> float:
    """Pseudo-exposures of a Beta prior with means ``m`` for rates x/n: its variance τ²
    by moments, E Σ n(x/n − m)² = τ² Σ n + Σ m(1 − m), and strength m̄(1 − m̄)/τ² − 1.
    No spread (the most shrinkage) unless the scatter beats its noise by 3 sd of a
    χ²/k: by chance, a few of many relations would look spread, and a cell fitted
    from few exposures counts its own pair (its rate follows the pair's posterior)."""
    total = float(n.sum())
    seen = n > 0
    k = int(seen.sum())
    if total <= 0 or k < 2:
        return YES_MAX_SHRINK
    dev = float((n[seen] * (x[seen] / n[seen] - m[seen]) ** 2).sum())
    noise = float((m[seen] * (1 - m[seen])).sum())
    var = (dev - noise) / total
    mean = float((n * m).sum()) / total
    if dev <= noise * (1 + 3 * np.sqrt(2 / k)):
        return YES_MAX_SHRINK
    return float(np.clip(mean * (1 - mean) / var - 1, YES_MIN_SHRINK, YES_MAX_SHRINK))


def none_loglik(fp: np.ndarray, items: np.ndarray, workers: np.ndarray, obs: np.ndarray,
                nc: int, n_i: int, offered: Offered) -> np.ndarray:
    """(items,) log P(item's answers | it holds none): a named relation r at the cell's
    rate fp[w, r], none at 1 − Σ fp[w, r] over the relations its question offered."""
    table = offered.rows()
    offered_sum = fp @ table.T  # (workers × strata)
    said_none = obs == nc
    p_none = np.maximum(1.0 - offered_sum[workers, offered.of(items)], MIN_NONE)
    term = np.where(said_none, np.log(p_none), np.log(fp[workers, np.where(said_none, 0, obs)]))
    return np.bincount(items, weights=term, minlength=n_i)


# A relation is "weak" (the report names it) when the crowd names it on at least this
# share of the pairs holding none that offer it; a worker is biased on it when their
# own rate is at least ``BIASED_RATE`` and the relation's median worker's.
WEAK_RATE = 0.1
BIASED_RATE = 0.2


def weak_relations(fp: np.ndarray, categories: Sequence, nc: int, worker_names: Sequence,
                   answered: np.ndarray, top: int = 5, top_workers: int = 5) -> list[dict]:
    """The relations the crowd says most where they do not hold (false-yes rate per
    worker and relation, `false_yes_rates`; ``answered``: workers with answers), with
    the workers most biased on each: [{relation, false_yes, workers: [{worker,
    false_yes}]}], worst first."""
    seen = np.flatnonzero(answered[: len(fp)])
    if not len(seen):
        return []
    median = np.median(fp[seen], axis=0)
    out = []
    for r in np.argsort(-median, kind="stable")[:top]:
        if r == nc or median[r] < WEAK_RATE:
            continue
        rates = fp[seen, r]
        biased = seen[rates >= max(BIASED_RATE, float(median[r]))]
        biased = biased[np.argsort(-fp[biased, r], kind="stable")][:top_workers]
        out.append({"relation": categories[r], "false_yes": round(float(median[r]), 3),
                    "workers": [{"worker": worker_names[w], "false_yes":
                                 round(float(fp[w, r]), 3)} for w in biased]})
    return out
