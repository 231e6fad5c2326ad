"""The bootstrap over questions that the crowd model's parameter replicates draw
(aggregation.parameter_replicates): pure numpy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def resample_questions(items: np.ndarray, groups: Sequence[np.ndarray],
                       rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One bootstrap replicate over questions: (indices of the answers it holds, their
    new item ids, the original item of each new id). Each group of item ids (labelled
    questions, control questions) is drawn with replacement to its own size, so a
    replicate keeps as many controls; an item drawn twice gives its answers twice, as
    two items (ids 0.. by draw)."""
    items = np.asarray(items, dtype=np.int64)
    n = int(max((g.max() for g in groups if len(g)), default=-1)) + 1
    n = max(n, int(items.max()) + 1 if len(items) else 0)
    order = np.argsort(items, kind="stable")
    bounds = np.searchsorted(items[order], np.arange(n + 1))
    pick = np.concatenate([np.asarray(g, np.int64)[rng.integers(0, len(g), len(g))]
                           for g in groups if len(g)] or [np.zeros(0, np.int64)])
    sizes = bounds[pick + 1] - bounds[pick]
    idx = np.concatenate([order[bounds[i]:bounds[i + 1]] for i in pick]) if len(pick) \
        else np.zeros(0, np.int64)
    return idx, np.repeat(np.arange(len(pick)), sizes), pick
