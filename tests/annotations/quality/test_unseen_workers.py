"""Workers a stored crowd-model fit never saw (`rates.with_unseen_workers`): each
takes a fitted worker's rates, drawn per replicate, so the noise correction's replicates
need no refit when a new worker answers, and still spread over that worker's answers."""

from __future__ import annotations

import numpy as np

from annotations.quality import aggregation
from annotations.quality import rates as rate_models
from annotations.quality.aggregation import (
    SOFT_TYPE_SHRINK,
    category_codes,
    coin_posterior,
    one_coin,
    parameter_replicates,
)
from annotations.quality.rates import with_unseen_workers
from tests.annotations.quality.test_aggregation import _typed_crowd

FITTED = 20  # _typed_crowd's workers


def _crowd_with_newcomers(seed: int, n_old: int = 600, newcomers: int = 5,
                          each: int = 10) -> tuple:
    """_typed_crowd, whose last ``newcomers × each`` questions each have one answer given
    by a worker who answered nothing else (workers FITTED, FITTED + 1, ...)."""
    items, workers, answers, truth, stratum, known, k = _typed_crowd(
        seed, n=n_old + newcomers * each, n_workers=FITTED)
    workers = np.array(workers)
    for j, q in enumerate(range(n_old, len(truth))):
        workers[np.flatnonzero(items == q)[0]] = FITTED + j // each
    return items, workers, answers, truth, stratum, known, np.full(len(truth), k), n_old


def _soft_fit(seed: int = 3):
    items, workers, answers, truth, stratum, known, k, _ = _crowd_with_newcomers(seed)
    old = workers < FITTED
    fit = one_coin(items[old], workers[old], [a for a, o in zip(answers, old, strict=True) if o],
                   len(truth), FITTED, n_options=k, known=known, none="no_relation",
                   strata=stratum, type_shrink=SOFT_TYPE_SHRINK)
    return fit, (items, workers, answers, truth, stratum, known, k)


def test_an_unseen_worker_copies_a_fitted_worker_with_empty_cells() -> None:
    """Rows are added only past the fitted workers; each copies one fitted worker's
    rates; under leave-one-out cells its cells are empty, its per-type rates those of an
    empty cell, so its answers get no leave-one-out change at all."""
    fit, (items, workers, answers, truth, *_rest) = _soft_fit()
    params = fit.params
    assert with_unseen_workers(params, FITTED, (1, 0)) is params  # nobody new
    wide = with_unseen_workers(params, FITTED + 5, (1, 0))
    spec, sens, miss, per_type, missed, seen, s_w, mix = wide.rates[:8]
    assert all(len(r) == FITTED + 5 for r in wide.rates[:7])
    assert np.array_equal(mix, params.rates[7])
    for r_new, r_old in zip(wide.rates[:7], params.rates[:7], strict=True):
        assert np.array_equal(r_new[:FITTED], r_old)  # the fitted workers untouched
    for w in range(FITTED, FITTED + 5):
        like = [v for v in range(FITTED) if spec[v] == spec[w] and sens[v] == sens[w]
                and miss[v] == miss[w] and s_w[v] == s_w[w]]
        assert like, f"worker {w} copies no fitted worker"
    assert not missed[FITTED:].any() and not seen[FITTED:].any()
    assert ((per_type[FITTED:] > 0) & (per_type[FITTED:] < 1)).all()
    # Their answers: no leave-one-out change, whatever posterior the cells were counted with.
    mine = workers >= FITTED
    nc = wide.none_index
    obs = category_codes(wide.categories, [a for a, m in zip(answers, mine, strict=True) if m])
    inc = rate_models.Incidence(items[mine], workers[mine], obs, nc, len(truth), FITTED + 5)
    terms = rate_models.loo_cell_terms(wide.rates, items[mine], workers[mine], obs == nc,
                                       fit.posterior, nc, inc)
    assert not terms.any()


def test_an_unseen_workers_draw_depends_on_the_seed_and_the_worker_alone() -> None:
    """Worker w's rates are the same however many unseen workers follow (a later batch's
    newcomer leaves earlier ones' posteriors as they were); replicates' seeds differ,
    and so do their draws."""
    fit, _ = _soft_fit()
    three = with_unseen_workers(fit.params, FITTED + 3, (9, 2))
    six = with_unseen_workers(fit.params, FITTED + 6, (9, 2))
    for a, b in zip(three.rates[:7], six.rates[:7], strict=True):
        assert np.array_equal(a, b[:FITTED + 3])
    picks = {tuple(with_unseen_workers(fit.params, FITTED + 3, (9, r)).rates[0][FITTED:])
             for r in range(8)}
    assert len(picks) > 4


def _spread(posts: list[np.ndarray], rows: np.ndarray) -> float:
    """Between-replicate variance of the posteriors at ``rows``, summed over the
    categories, averaged over the rows."""
    stack = np.stack([p[rows] for p in posts])
    return float(stack.var(axis=0, ddof=1).sum(axis=1).mean())


def test_replicates_spread_over_an_unseen_workers_answers_as_a_refit_does() -> None:
    """The replicates are there to spread as far as the workers' rates are uncertain.
    On questions answered by five newcomers (ten answers each, beside two fitted
    workers'), replicates refitted on every answer spread the posteriors by some
    amount; replicates of a fit that never saw the newcomers, each drawing them
    fitted workers' rates, must spread at least about as far, or the intervals would
    be narrower than the evidence. Measured (16 replicates, 2 seeds): 1.16× the refit's
    spread; with one draw shared by every replicate (no spread of its own) 0.83×, which
    fails here."""
    spread = {"refit": 0.0, "unseen": 0.0}
    for seed in (0, 1):
        items, workers, answers, truth, stratum, known, k, n_old = _crowd_with_newcomers(seed)
        n, everyone = len(truth), workers.max() + 1
        ctrl = np.zeros(n, dtype=bool)
        ctrl[list(known)] = True
        kwargs = {"n_options": k, "known": known, "strata": stratum, "none": "no_relation"}
        fit = one_coin(items, workers, answers, n, everyone, type_shrink=SOFT_TYPE_SHRINK,
                       **kwargs)
        groups = [np.flatnonzero(~ctrl), np.flatnonzero(ctrl)]
        reps = parameter_replicates(fit, items, workers, answers, everyone, groups, 16,
                                    np.random.default_rng(seed), **kwargs)
        newcomers = np.arange(n_old, n)
        spread["refit"] += _spread([post for post, _, _ in reps], newcomers)
        old = workers < FITTED
        o_items, o_workers = items[old], workers[old]
        o_answers = [a for a, o in zip(answers, old, strict=True) if o]
        first = one_coin(o_items, o_workers, o_answers, n, FITTED,
                         type_shrink=SOFT_TYPE_SHRINK, **kwargs)
        fits: list[aggregation.OneCoinParams] = []
        parameter_replicates(first, o_items, o_workers, o_answers, FITTED, groups, 16,
                             np.random.default_rng(seed), fits=fits, **kwargs)
        posts = [coin_posterior(with_unseen_workers(p, everyone, (7, r)), items, workers,
                                answers, n, n_options=k, known=known, strata=stratum)
                 for r, p in enumerate(fits)]
        spread["unseen"] += _spread(posts, newcomers)
    assert spread["unseen"] >= 0.95 * spread["refit"], spread
