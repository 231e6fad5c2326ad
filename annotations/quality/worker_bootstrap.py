"""The soft-label model's replicates from a bootstrap over workers (crowd-bias.md §18):
measured in the validation battery and the demo bench, not used by the service, whose
replicates are `aggregation.parameter_replicates`."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from annotations.quality import aggregation
from annotations.quality.aggregation import OneCoinResult


def worker_replicates(fit: OneCoinResult, items: np.ndarray, workers: np.ndarray,
                      answers: Sequence, replicates: int,
                      rng: np.random.Generator, *, n_options: np.ndarray,
                      known: dict[int, object] | None, strata: np.ndarray | None,
                      none: object | None,
                      offered: Sequence[Collection[str] | None] | None = None
                      ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(posterior, corpus-wide class shares, each item's shares) under ``replicates``
    bootstrap replicates over *workers*: each draws the workers who answered with
    replacement (one drawn twice answers twice, as two workers), refits the model on
    the drawn workers' answers (EM started at the fit's posterior, the fit's
    categories) and takes that refit's posterior of every item. An item none of the
    drawn workers answered gets its class shares.

    Unlike `parameter_replicates` the answers themselves are redrawn, so the
    replicates also carry what one worker's errors share across the items it
    answered: a biased worker's answers move many of a system's instances together,
    which a bootstrap over questions with the answers held fixed cannot show."""
    items, workers, answers = aggregation.offered_answers(items, workers, answers, strata,
                                                          none, offered)
    known = known or {}
    n_options = np.asarray(n_options, dtype=float)
    shrink = fit.params.type_shrink if fit.params is not None else aggregation.LABEL_TYPE_SHRINK
    order = np.argsort(workers, kind="stable")
    ids, starts = np.unique(workers[order], return_index=True)
    ends = np.append(starts[1:], len(order))
    out = []
    for _ in range(replicates):
        pick = rng.integers(0, len(ids), len(ids))
        take = np.concatenate([order[starts[k]:ends[k]] for k in pick]) if len(ids) \
            else np.zeros(0, np.int64)
        renamed = np.repeat(np.arange(len(pick)), ends[pick] - starts[pick])
        refit = aggregation.one_coin(
            items[take], renamed, [answers[k] for k in take], len(n_options),
            max(len(pick), 1), n_options=n_options, known=known or None,
            categories=fit.categories, none=none, strata=strata, tol=1e-4,
            init=fit.posterior, type_shrink=shrink, offered=offered)
        out.append((refit.posterior, refit.priors,
                    aggregation.item_priors(refit.params, refit.priors, strata, len(n_options))))
    return out
