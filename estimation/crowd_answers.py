"""Crowd answers in a CLI problem (``python -m estimation estimate``): the crowd model
fitted on them, soft labels and the correction's uncertainty, without Django.

The model is the service's, through the same function (`crowd_model.fit_crowd`): false
yes per worker and relation on the relations each pair type offers, miss rates per
worker and relation, class shares per pair type, anchored by the control questions
(docs/internals/crowd-bias.md §7). The soft labels replace the answered pairs' hard
labels, and the parameters' bootstrap widens every interval
(docs/internals/noisy-crowds.md §2).
"""

from __future__ import annotations

from typing import Any

from annotations.quality.aggregation import NO_RELATION as NONE_KEY
from annotations.quality.aggregation import item_priors

from .core import estimate
from .core.estimators import Estimates
from .core.noise import (
    SoftLabels,
    correction_variance,
    self_consistent,
    widen,
    with_soft_labels,
)
from .core.problem import NO_RELATION, Problem, results_json
from .core.schemes import SCHEMES
from .correction_rows import soft_rows
from .crowd_model import CrowdFit, fit_crowd

REPLICATES = 8  # the parameters' bootstrap, as in production


def crowd_soft_labels(problem: Problem, replicates: int = REPLICATES
                      ) -> tuple[SoftLabels, list[SoftLabels], CrowdFit]:
    """The answered pairs' soft labels under the fit, under each bootstrap replicate,
    and the fit itself: the service's model on the problem's answers, as answer keys
    (relation names, "no_relation")."""
    crowd = problem.crowd
    assert crowd is not None
    def key(code: int) -> str:
        return NONE_KEY if code == NO_RELATION else crowd.names[code]

    keys = [key(int(a)) for a in crowd.answers]
    known = {i: key(t) for i, t in crowd.known.items()}
    n, n_items = len(crowd.pairs), len(crowd.pairs) + len(crowd.truth)
    model = fit_crowd(crowd.items, crowd.workers, keys, n_items, crowd.n_workers,
                      n_options=crowd.n_options, strata=crowd.strata, known=known,
                      replicates=replicates, offered=crowd.offered)
    fit, codes = model.fit, {name: k for k, name in enumerate(crowd.names)}
    own = item_priors(fit.params, fit.priors, crowd.strata, n_items)
    main = soft_rows(fit.categories, fit.posterior[:n], fit.priors, own[:n], crowd.pairs,
                     codes)
    reps = [soft_rows(fit.categories, post[:n], priors, o[:n], crowd.pairs, codes)
            for post, priors, o in model.replicates]
    return main, reps, model


def solve_with_crowd(problem: Problem, schemes: list[str] | None = None,
                     estimator: str = "importance") -> dict[str, Any]:
    """`problem.solve` with the answered pairs' labels from the crowd model."""
    crowd = problem.crowd
    assert crowd is not None
    schemes = list(SCHEMES) if schemes is None else list(schemes)
    if problem.scheme not in schemes:
        schemes.insert(0, problem.scheme)
    main, soft, model = crowd_soft_labels(problem)
    pop = problem.population
    ev = self_consistent(pop, with_soft_labels(pop, problem.evidence, main))
    res: Estimates = estimate(pop, ev, problem.scheme, schemes, problem.confidence,
                              estimator=estimator)
    if len(soft) >= 2:
        res = widen(res, correction_variance(pop, ev, soft, problem.scheme, schemes,
                                             problem.confidence, estimator=estimator),
                    problem.confidence)
    out = results_json(problem, res)
    out["estimator"] = estimator
    out["crowd"] = {"answers": len(crowd.answers), "workers": crowd.n_workers,
                    "controls": len(crowd.truth), "pair_types": int(crowd.strata.max()) + 1
                    if len(crowd.strata) else 0,
                    # Answers naming a relation outside their type's "offered" list.
                    "refused": model.refused,
                    "converged": bool(model.fit.converged)}
    return out
