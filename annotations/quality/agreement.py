"""How much the crowd's workers agree: Krippendorff's alpha over a corpus's answers, and
each worker's agreement with the others' plurality (the quality pass reports both).

Pure numpy (no Django), like aggregation.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import krippendorff
import numpy as np


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
