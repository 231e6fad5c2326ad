"""The crowd model behind the soft labels, one function for every caller: the service's
noise correction (`estimation.correction.soft_label_replicates`) and the CLI's crowd
answers (`estimation.crowd_answers`). Pure numpy, no Django.

The model is the quality pass's calibrated fit (`annotations.quality.aggregation.one_coin`
with `SOFT_TYPE_SHRINK`): lopsided rates per worker, miss rates per (worker, relation),
false yes per (worker, relation) on the relations each pair type offers
(docs/internals/crowd-bias.md §7), class shares per pair type, anchored by the control
questions. Its uncertainty is the parameters' bootstrap over questions, labelled and
control questions drawn separately (`parameter_replicates`), seeded from the answers.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from annotations.quality.aggregation import (
    NO_RELATION,
    SOFT_TYPE_SHRINK,
    OneCoinParams,
    OneCoinResult,
    one_coin,
    parameter_replicates,
    within_offered,
)

from .core.noise import data_seed

# (posterior of every question, corpus-wide class shares, each question's shares)
Replicate = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class CrowdFit:
    fit: OneCoinResult          # the fit on every answer (its posterior: the soft labels)
    replicates: list[Replicate]  # the parameters' bootstrap replicates
    params: list[OneCoinParams]  # each replicate's refitted parameters (to store)
    refused: int = 0             # answers outside their question's offered relations


def fit_crowd(items: np.ndarray, workers: np.ndarray, answers: Sequence[str],
              n_items: int, n_workers: int, *, n_options: np.ndarray, strata: np.ndarray,
              known: dict[int, str], replicates: int,
              offered: Sequence[Collection[str] | None] | None = None) -> CrowdFit:
    """The soft-label model on these answers, and ``replicates`` bootstrap replicates.

    ``answers``: answer keys (a relation name, "a|b" for two, `NO_RELATION`);
    ``n_options`` and ``strata`` per question: the answers its question offered
    (relations and none) and its pair type; ``known``: control question → its answer.
    ``offered``: per stratum, the relations its questions offered (the page's options);
    an answer naming another is refused here, before anything is fitted or seeded, so
    it cannot move the fit nor its bootstrap. Without it the model reads the offered
    relations off the answers.
    """
    refused = 0
    if offered is not None:
        inside = within_offered(answers, np.asarray(strata, np.int64)[items], offered,
                                NO_RELATION)
        refused = int(len(inside) - inside.sum())
        if refused:
            items, workers = np.asarray(items)[inside], np.asarray(workers)[inside]
            answers = [a for a, ok in zip(answers, inside.tolist(), strict=True) if ok]
    # Seeded from the answers' shape, not from ids: the same answers give the same
    # intervals wherever they were numbered (another database, a test order, the CLI).
    codes_of = {a: i for i, a in enumerate(sorted(set(answers)))}
    rng = np.random.default_rng(data_seed(items, workers,
                                          np.asarray([codes_of[a] for a in answers])))
    fit = one_coin(items, workers, answers, n_items, n_workers, n_options=n_options,
                   known=known or None, none=NO_RELATION, strata=strata,
                   type_shrink=SOFT_TYPE_SHRINK, offered=offered)
    is_ctrl = np.zeros(n_items, dtype=bool)
    is_ctrl[list(known)] = True
    groups = [np.flatnonzero(~is_ctrl), np.flatnonzero(is_ctrl)]
    params: list[OneCoinParams] = []
    reps = parameter_replicates(fit, items, workers, answers, n_workers, groups, replicates,
                                rng, n_options=n_options, known=known, strata=strata,
                                none=NO_RELATION, fits=params,
                                offered=offered) if replicates else []
    return CrowdFit(fit, reps, params, refused)
