"""The noise correction's own uncertainty in production: a bootstrap of the fitted
parameters.

The soft labels stored by the quality pass rest on the workers' fitted rates and the
class shares, estimated from a finite number of questions. Here the corpus's relation
answers are reloaded and the quality pass's lopsided one-coin model fitted once; then
each replicate draws the questions with replacement (labelled and control questions
separately, `aggregation.parameter_replicates`), refits the model on them (EM started at the
fit's posterior) and computes the posterior of the *original* answers under the
refitted parameters. Each replicate's posteriors become soft-label rows;
`noise.correction_variance` recomputes the estimates on them and `noise.widen` adds
their spread to the intervals. Only the parameters vary between replicates: each
pair's own answer noise is already in its probability and in the label bounds. The
generator is seeded from the answers themselves, so a recompute on the same data gives
the same intervals.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from annotations.models import PairLabel, Question, Response, TaskKind
from annotations.quality.aggregation import (
    NO_RELATION,
    SOFT_TYPE_SHRINK,
    answer_key,
    one_coin,
    parameter_replicates,
)
from annotations.quality.workers import offered
from kbpo.core.models import Corpus

from .core.noise import SoftLabels, data_seed


def _answers(corpus: Corpus) -> tuple[np.ndarray, np.ndarray, list[str], list[int], int]:
    """(items, workers, answer keys, question ids by item, workers) of the relation answers."""
    rows = (Response.objects.filter(question__corpus=corpus, question__kind=TaskKind.RELATION)
            .values_list("question_id", "worker_id", "choices").order_by("pk"))
    q_index: dict[int, int] = {}
    w_index: dict[int, int] = {}
    items, workers, answers = [], [], []
    for q, w, choices in rows.iterator(chunk_size=5000):
        items.append(q_index.setdefault(q, len(q_index)))
        workers.append(w_index.setdefault(w, len(w_index)))
        answers.append(answer_key(choices))
    return (np.asarray(items, np.int64), np.asarray(workers, np.int64), answers,
            list(q_index), len(w_index))


def soft_label_replicates(corpus: Corpus, replicates: int,
                          codes: Mapping[str, int]) -> list[SoftLabels]:
    """Soft labels of the corpus's labelled pairs under ``replicates`` bootstrap
    replicates of the model's parameters (fewer than 2, or no answers: none);
    ``codes``: predicate name → the estimators' code."""
    if replicates < 2:
        return []
    items, workers, answers, qids, n_workers = _answers(corpus)
    if not len(items):
        return []
    index = {q: i for i, q in enumerate(qids)}
    known = {index[q]: answer_key(a) for q, a in
             Question.objects.filter(pk__in=qids, control_answer__isnull=False)
             .values_list("pk", "control_answer")}
    labelled = [(index[q], pair) for q, pair in
                PairLabel.objects.filter(question_id__in=qids).values_list("question_id",
                                                                           "pair_id")]
    rows = np.asarray([i for i, _ in labelled], np.int64)
    pair_of = np.asarray([p for _, p in labelled], np.int64)
    # Seeded from the answers' shape, not from database ids: the same answers give the
    # same intervals wherever their rows were numbered (another database, a test order).
    codes_of = {a: i for i, a in enumerate(sorted(set(answers)))}
    rng = np.random.default_rng(data_seed(items, workers,
                                          np.asarray([codes_of[a] for a in answers])))
    # The model behind the stored posteriors (offered answers, shares per pair type,
    # the calibrated miss rates of the quality pass's soft fit).
    n_options, strata = offered(qids)
    fit = one_coin(items, workers, answers, len(qids), n_workers, n_options=n_options,
                   known=known or None, none=NO_RELATION, strata=strata,
                   type_shrink=SOFT_TYPE_SHRINK)
    cats = fit.categories  # replicates keep them: an answer a replicate lacks stays known
    is_ctrl = np.zeros(len(qids), dtype=bool)
    is_ctrl[list(known)] = True
    groups = [np.flatnonzero(~is_ctrl), np.flatnonzero(is_ctrl)]
    reps = parameter_replicates(fit, items, workers, answers, n_workers, groups, replicates,
                                rng, n_options=n_options, known=known, strata=strata,
                                none=NO_RELATION)
    return [_rows(cats, post[rows], priors, pair_of, codes) for post, priors in reps]


def _rows(categories: list, posterior: np.ndarray, priors: np.ndarray,
          pair_of: np.ndarray, predicate_codes: Mapping[str, int]) -> SoftLabels:
    """Soft-label rows per (pair, predicate), as the quality pass stores them: an answer
    key naming two relations ("a|b") gives its probability to both."""
    codes: list[list[int]] = []
    for key in categories:
        names = str(key).split("|")
        codes.append([-1 if n == NO_RELATION else predicate_codes.get(n, -2) for n in names])
    pairs, preds, probs, prior_rows = [], [], [], []
    share: dict[int, float] = {}
    for c, code_list in enumerate(codes):
        for code in code_list:
            share[code] = share.get(code, 0.0) + float(priors[c])
    for c, code_list in enumerate(codes):
        col = posterior[:, c]
        keep = col > 1e-6
        for code in code_list:
            if code == -2:  # a predicate unknown to the estimators
                continue
            pairs.append(pair_of[keep])
            preds.append(np.full(int(keep.sum()), code, np.int64))
            probs.append(col[keep])
            prior_rows.append(np.full(int(keep.sum()), share[code]))
    if not pairs:
        z = np.zeros(0)
        return SoftLabels(z.astype(np.int64), z.astype(np.int64), z, z)
    p, k = np.concatenate(pairs), np.concatenate(preds)
    # Rows of one (pair, predicate) from several answer keys add up, as stored posteriors do.
    key = p * (1 << 20) + (k + 1)
    uniq, inv = np.unique(key, return_inverse=True)
    prob = np.minimum(np.bincount(inv, weights=np.concatenate(probs)), 1.0)
    first = np.unique(inv, return_index=True)[1]
    return SoftLabels(uniq >> 20, (uniq & ((1 << 20) - 1)) - 1, prob,
                      np.concatenate(prior_rows)[first])
