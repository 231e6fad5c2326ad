"""The soft labels' fit (SOFT_TYPE_SHRINK: blind-or-seen cells, each answer judged by its
cell without its own pair, EM started from the one-rate fit) on crowds like real text:
three pairs in four hold no relation, relations Zipf-distributed, typed pairs."""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from annotations.quality.aggregation import (
    BLIND_SPOT_MIXTURE,
    SOFT_TYPE_SHRINK,
    coin_posterior,
    one_coin,
)
from estimation.validation import crowd

P = 20


@cache
def _world(seed: int, error: float, systematic: bool, zipf: bool = True,
           spammers: float = 0.1, n: int = 3000) -> tuple:
    """75% "none" pairs, relations uniform or Zipf(1), the battery's crowd (8 pair types,
    20 workers, 10% spammers); the first 10% are controls."""
    rng = np.random.default_rng(seed)
    freq = 1.0 / np.arange(1, P + 1) ** (1.0 if zipf else 0.0)
    truth = np.where(rng.random(n) < 0.75, -1, rng.choice(P, n, p=freq / freq.sum()))
    spec = crowd.CrowdSpec(error_rate=error, systematic=systematic, spammer_share=spammers)
    pool = crowd.make_pool(spec, P, rng)
    typed = crowd.pair_types(truth, spec, P, rng)
    got = crowd.answer(truth, pool, spec, P, rng, typed)
    return truth, typed[0], got


@cache
def _fit(seed: int, error: float, systematic: bool, shrink: float, zipf: bool = True,
         spammers: float = 0.1):
    truth, strata, got = _world(seed, error, systematic, zipf, spammers)
    n = len(truth)
    known = {i: int(truth[i]) for i in range(n // 10)}
    return one_coin(got.items, got.workers, got.answers.tolist(), n, 20,
                    n_options=got.n_options, known=known, categories=list(range(-1, P)),
                    none=-1, strata=strata, type_shrink=shrink)


def _excess(seed: int, error: float, systematic: bool, shrink: float, **kw) -> float:
    """(Σ P(pair true) − true pairs) / true pairs over the test questions."""
    truth = _world(seed, error, systematic, kw.get("zipf", True))[0]
    fit = _fit(seed, error, systematic, shrink, **kw)
    test = np.arange(len(truth)) >= len(truth) // 10
    p = 1 - fit.posterior[test, 0]
    y = truth[test] >= 0
    return float((p.sum() - y.sum()) / y.sum())


def test_soft_fit_does_not_inflate_p_pair_true_with_skewed_types() -> None:
    """Blind spots at 20%, Zipf-distributed relations: started from the vote shares, the
    blind-or-seen fit (BLIND_SPOT_MIXTURE) could settle where a rare type is blind for the
    whole crowd and its pair type's all-"none" pairs take its class share: Σ P(pair true)
    +33%, +5%, +4%, +54%, +4%, +20% over the truth (seeds 0–5, 3,000 questions). The soft
    fit: +2.8, +4.1, +3.0, +1.6, +2.4, +5.4% (mean 3.2, sd 1.4). Bound per seed: the mean
    plus 3.5 sd (8%); the mean of three below 3.2 + 3 sd/√3 (5.6%)."""
    got = [_excess(seed, 0.2, True, SOFT_TYPE_SHRINK) for seed in range(3)]
    assert max(got) < 0.08, got
    assert np.mean(got) < 0.056, got
    # The model it replaces fails this on seed 0 (+33%).
    assert _excess(0, 0.2, True, BLIND_SPOT_MIXTURE) > 0.15


def test_soft_fit_converges_with_skewed_types() -> None:
    """EM stops on its tolerance (1e-7) within 200 rounds, where the blind-or-seen fit
    from the vote shares did not (uniform relations, seed 2: 200 rounds, unconverged,
    before the false-yes rates per worker and relation; it converges with them)."""
    for seed in range(3):
        fit = _fit(seed, 0.2, True, SOFT_TYPE_SHRINK)
        assert fit.converged and fit.iterations < 200, (seed, fit.iterations)
    assert _fit(2, 0.2, True, SOFT_TYPE_SHRINK, zipf=False).converged


def test_soft_fit_with_random_errors_is_the_one_rate_fit() -> None:
    """With random errors there are no blind cells to find: P(pair true) is the one-rate
    fit's (20% error, seeds 0–5: mean |ΔP(none)| at most 6e-4, Σ P(pair true) apart by
    at most 0.08% of the true pairs)."""
    for seed in range(2):
        soft = _fit(seed, 0.2, False, SOFT_TYPE_SHRINK)
        one = _fit(seed, 0.2, False, math.inf)
        diff = np.abs(soft.posterior[:, 0] - one.posterior[:, 0])
        assert diff.mean() < 2e-3, diff.mean()
        assert abs(_excess(seed, 0.2, False, SOFT_TYPE_SHRINK)
                   - _excess(seed, 0.2, False, math.inf)) < 0.005


def test_soft_fit_of_a_perfect_crowd_is_the_truth() -> None:
    """No errors, no spammers: every label the truth, every posterior certain (the
    estimators then see hard labels), on the fit and in `coin_posterior`."""
    truth, strata, got = _world(0, 0.0, False, spammers=0.0)
    fit = _fit(0, 0.0, False, SOFT_TYPE_SHRINK, spammers=0.0)
    assert fit.labels == truth.tolist()
    assert fit.posterior.max(axis=1).min() > 0.999
    known = {i: int(truth[i]) for i in range(len(truth) // 10)}
    again = coin_posterior(fit.params, got.items, got.workers, got.answers.tolist(),
                           len(truth), n_options=got.n_options, known=known, strata=strata)
    np.testing.assert_allclose(again, fit.posterior, atol=1e-6)
