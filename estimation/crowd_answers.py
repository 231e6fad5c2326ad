"""Crowd answers in a CLI problem (``python -m estimation estimate``): the crowd model
fitted on them, soft labels and the correction's uncertainty, without Django.

The same fit as the quality pass and the battery's crowd (the lopsided one-coin model,
`annotations.quality.aggregation.one_coin`), anchored by the control questions; the
soft labels replace the answered pairs' hard labels, and the parameters' bootstrap
widens every interval (docs/internals/noisy-crowds.md §2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotations.quality.aggregation import one_coin, parameter_replicates

from .core import estimate
from .core.estimators import Estimates
from .core.noise import (
    correction_variance,
    from_posterior,
    self_consistent,
    widen,
    with_soft_labels,
)
from .core.problem import NO_RELATION, CrowdAnswers, Problem, results_json
from .core.schemes import SCHEMES

REPLICATES = 8  # the parameters' bootstrap, as in production


def _categories(crowd: CrowdAnswers) -> list[int]:
    return [NO_RELATION, *range(crowd.n_predicates)]


def solve_with_crowd(problem: Problem, schemes: list[str] | None = None,
                     seed: int = 0) -> dict[str, Any]:
    """`problem.solve` with the answered pairs' labels from the crowd model."""
    crowd = problem.crowd
    assert crowd is not None
    schemes = list(SCHEMES) if schemes is None else list(schemes)
    if problem.scheme not in schemes:
        schemes.insert(0, problem.scheme)
    cats = _categories(crowd)
    n_items = len(crowd.pairs) + len(crowd.truth)
    fit = one_coin(crowd.items, crowd.workers, crowd.answers.tolist(), n_items,
                   crowd.n_workers, known=crowd.known, categories=cats, none=NO_RELATION)
    n = len(crowd.pairs)
    pop = problem.population
    ev = with_soft_labels(pop, problem.evidence,
                          from_posterior(crowd.pairs, cats, fit.posterior[:n], fit.priors))
    ev = self_consistent(pop, ev)
    res: Estimates = estimate(pop, ev, problem.scheme, schemes, problem.confidence)
    reps = parameter_replicates(fit, crowd.items, crowd.workers, crowd.answers.tolist(),
                                crowd.n_workers, [np.arange(n), np.arange(n, n_items)],
                                REPLICATES, np.random.default_rng(seed),
                                n_options=np.full(n_items, float(len(cats))),
                                known=crowd.known, strata=None, none=NO_RELATION)
    soft = [from_posterior(crowd.pairs, cats, post[:n], priors) for post, priors, _ in reps]
    if len(soft) >= 2:
        res = widen(res, correction_variance(pop, ev, soft, problem.scheme, schemes,
                                        problem.confidence),
                    problem.confidence)
    out = results_json(problem, res)
    out["crowd"] = {"answers": len(crowd.answers), "workers": crowd.n_workers,
                    "controls": len(crowd.truth), "converged": bool(fit.converged)}
    return out
