"""Turning crowd answers into labels: majority vote, Dawid–Skene, agreement.

Pure numpy (no Django): the crowd app loads answers into arrays and stores results.

An answer to a relation question is a *set* of predicates (workers may mark more than
one when two relations hold, DESIGN §2) or the set {"no_relation"}. The majority label
of a question is every predicate a strict majority of its workers marked; when none
reaches a majority, the question is *tied* and deserves another assignment.

Dawid–Skene is fitted on the answers as categorical values (each distinct answer set is
one category). We implement it here rather than depend on crowd-kit, whose requirements
(pandas, pyarrow, scikit-learn, transformers, nltk) are out of proportion for one EM.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import krippendorff
import numpy as np

NO_RELATION = "no_relation"


def answer_key(choices: Iterable[str]) -> str:
    """A canonical string for an answer set (sorted, '|'-joined)."""
    items = sorted(set(choices))
    return "|".join(items) if items else NO_RELATION


@dataclass(frozen=True)
class MajorityResult:
    labels: frozenset[str]      # the predicates a strict majority marked, or {no_relation}
    tied: bool                  # no choice reached a strict majority
    support: float              # share of workers who gave exactly the majority answer


def majority_vote(answers: Sequence[Iterable[str]]) -> MajorityResult:
    """Aggregate one question's answers (each a set of choices) by strict majority."""
    sets = [frozenset(a) or frozenset({NO_RELATION}) for a in answers]
    n = len(sets)
    if n == 0:
        return MajorityResult(frozenset(), True, 0.0)
    counts = Counter(c for s in sets for c in s)
    winners = frozenset(c for c, k in counts.items() if 2 * k > n)
    if NO_RELATION in winners and len(winners) > 1:  # cannot happen with consistent answers
        winners = frozenset({NO_RELATION})
    if not winners:
        return MajorityResult(frozenset(), True, 0.0)
    support = sum(1 for s in sets if s == winners) / n
    return MajorityResult(winners, False, support)


@dataclass
class DawidSkeneResult:
    categories: list[str]              # category names, index = column
    posterior: np.ndarray              # (items, categories) P(true category | answers)
    labels: list[str]                  # argmax category per item
    worker_accuracy: np.ndarray        # (workers,) estimated P(answer == truth)
    confusion: np.ndarray              # (workers, categories, categories)
    priors: np.ndarray                 # (categories,)
    iterations: int


def dawid_skene(items: np.ndarray, workers: np.ndarray, answers: Sequence[str],
                n_items: int | None = None, n_workers: int | None = None,
                max_iter: int = 100, tol: float = 1e-6,
                smoothing: float = 0.01) -> DawidSkeneResult:
    """Fit the Dawid–Skene model by EM.

    `items[k]`, `workers[k]` and `answers[k]` describe the k-th answer (integer item
    and worker indices, categorical answer strings). Initialised from per-item vote
    shares; `smoothing` is a Dirichlet pseudo-count that keeps confusion rows of
    workers with few answers away from 0/1.
    """
    items = np.asarray(items, dtype=np.int64)
    workers = np.asarray(workers, dtype=np.int64)
    categories = sorted(set(answers))
    cat_index = {c: i for i, c in enumerate(categories)}
    obs = np.fromiter((cat_index[a] for a in answers), dtype=np.int64, count=len(answers))
    n_i = int(n_items if n_items is not None else items.max() + 1)
    n_w = int(n_workers if n_workers is not None else workers.max() + 1)
    n_c = len(categories)

    # Initial posterior: vote shares per item.
    post = np.zeros((n_i, n_c))
    np.add.at(post, (items, obs), 1.0)
    post = _normalise_rows(post + 1e-9)

    iterations = 0
    confusion = np.zeros((n_w, n_c, n_c))
    priors = np.full(n_c, 1.0 / n_c)
    for it in range(1, max_iter + 1):
        iterations = it
        # M-step: class priors and per-worker confusion matrices.
        priors = post.sum(axis=0) + smoothing
        priors /= priors.sum()
        confusion = np.full((n_w, n_c, n_c), smoothing)
        for c_true in range(n_c):
            np.add.at(confusion[:, c_true, :], (workers, obs), post[items, c_true])
        confusion /= confusion.sum(axis=2, keepdims=True)
        # E-step: item posteriors from priors and the likelihood of observed answers.
        log_post = np.tile(np.log(priors), (n_i, 1))
        np.add.at(log_post, items, np.log(confusion[workers, :, obs]))
        log_post -= log_post.max(axis=1, keepdims=True)
        new_post = _normalise_rows(np.exp(log_post))
        delta = np.abs(new_post - post).max()
        post = new_post
        if delta < tol:
            break
    accuracy = np.einsum("wcc,c->w", confusion, priors)
    labels = [categories[i] for i in post.argmax(axis=1)]
    return DawidSkeneResult(categories, post, labels, accuracy, confusion, priors, iterations)


def _normalise_rows(a: np.ndarray) -> np.ndarray:
    s = a.sum(axis=1, keepdims=True)
    s[s == 0] = 1.0
    return a / s


def krippendorff_alpha(items: np.ndarray, workers: np.ndarray, answers: Sequence[str],
                       n_items: int, n_workers: int) -> float | None:
    """Nominal Krippendorff's alpha over categorical answers (None if undefined)."""
    if len(answers) == 0:
        return None
    categories = sorted(set(answers))
    if len(categories) < 2:
        return 1.0
    cat_index = {c: i for i, c in enumerate(categories)}
    data = np.full((n_workers, n_items), np.nan)
    data[np.asarray(workers), np.asarray(items)] = [cat_index[a] for a in answers]
    # Items answered by fewer than two workers carry no agreement information.
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any():
        return None
    return float(krippendorff.alpha(reliability_data=data[:, pairable],
                                    level_of_measurement="nominal"))


def worker_agreement(items: np.ndarray, workers: np.ndarray, answers: Sequence[str],
                     n_workers: int) -> tuple[np.ndarray, np.ndarray]:
    """Per worker: how often their answer is the plurality of the *other* workers.

    Returns (agreement rate, number of comparable answers); NaN where a worker has no
    item shared with others. Leaving the worker out avoids rewarding self-agreement. A
    tie among the others earns a share of the credit (1 / number of tied answers), not
    none: with three answers per question, one careless co-worker would otherwise make
    every honest worker look like a dissenter.
    """
    items = np.asarray(items)
    workers = np.asarray(workers)
    by_item: dict[int, list[int]] = {}
    for k, i in enumerate(items.tolist()):
        by_item.setdefault(i, []).append(k)
    credit = np.zeros(n_workers)
    total = np.zeros(n_workers)
    for ks in by_item.values():
        if len(ks) < 2:
            continue
        for k in ks:
            others = Counter(answers[j] for j in ks if j != k)
            top = max(others.values())
            plurality = [a for a, c in others.items() if c == top]
            total[workers[k]] += 1
            if answers[k] in plurality:
                credit[workers[k]] += 1 / len(plurality)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(total > 0, credit / np.maximum(total, 1), np.nan)
    return rate, total
