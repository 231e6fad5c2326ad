"""Exact scores of a simulated system against the world's gold (truth.json).

The targets are those of docs/internals/estimation.md §2: precision under a scheme is the
system's mass on its correct instances, recall the true set's mass on what it found.

This is a reference implementation, deliberately independent of `estimation.core`:
the statistical tests compare the estimators with truth.json, so truth.json must not
be computed by the code under test. Each probability is one over a product of counts
read off plain `Counter`s; tests/demo/test_truth.py checks that the estimation core's
`scheme_weights` gives the same truth.json, byte for byte.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from .common import SCHEMES


def scheme_probabilities(
    scheme: str,
    pair_keys: np.ndarray | Sequence,
    predicates: np.ndarray | Sequence,
    subject_ids: np.ndarray | Sequence,
) -> np.ndarray:
    """Sampling probability of every instance of one deduplicated instance set.

    The arrays are parallel, one entry per instance (pair key, canonical predicate,
    subject entity id); the result is in the same order.

    instance         1 / |X|
    predicate        1 / (#predicates · #instances with x's predicate)
    entity           1 / (#subjects · #instances with x's subject)
    entity_relation  1 / (#subjects · #predicates of x's subject ·
                          #instances with x's subject and predicate):
                     a subject uniformly, then one of its relations, then one instance.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    n = len(pair_keys)
    if not n == len(predicates) == len(subject_ids):
        raise ValueError("pair_keys, predicates and subject_ids must have the same length")
    if n == 0:
        return np.zeros(0)
    preds = [_plain(p) for p in predicates]
    subjects = [_plain(s) for s in subject_ids]
    if scheme == "instance":
        denominators = [n] * n
    elif scheme == "predicate":
        per_pred = Counter(preds)
        denominators = [len(per_pred) * per_pred[p] for p in preds]
    elif scheme == "entity":
        per_subj = Counter(subjects)
        denominators = [len(per_subj) * per_subj[s] for s in subjects]
    else:
        cells = Counter(zip(subjects, preds, strict=True))
        relations_of = Counter(s for s, _ in cells)
        denominators = [len(relations_of) * relations_of[s] * cells[(s, p)]
                        for s, p in zip(subjects, preds, strict=True)]
    # Every denominator is an exact integer, so 1/d is the correctly rounded float.
    return 1.0 / np.asarray(denominators, dtype=float)


def _plain(x: object) -> object:
    """A hashable plain value (numpy scalars become Python ones)."""
    return x.item() if isinstance(x, np.generic) else x


def system_scores(
    keys: np.ndarray,
    pairs: np.ndarray,
    preds: np.ndarray,
    subjects: np.ndarray,
    gold_keys: np.ndarray,
    g_pairs: np.ndarray,
    g_preds: np.ndarray,
    g_subjects: np.ndarray,
    p_y: dict[str, np.ndarray],
) -> dict:
    """truth.json's entry for one system: per scheme P, R, F1 and instance counts.

    keys: the system's distinct instance keys (pair · #predicates + predicate), parallel
    to pairs/preds/subjects; gold_keys: the keys of Y, parallel to g_pairs/g_preds/
    g_subjects and to each p_y[scheme] (the scheme over Y).
    """
    gold = {int(k) for k in gold_keys}
    mine = {int(k) for k in keys}
    correct = np.array([int(k) in gold for k in keys], dtype=bool)
    hit = np.array([int(k) in mine for k in gold_keys], dtype=bool)
    out = {}
    for s in SCHEMES:
        p = scheme_probabilities(s, pairs, preds, subjects)
        precision = float(np.sum(p * correct))
        recall = float(np.sum(p_y[s] * hit))
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[s] = {
            "precision": round(precision, 6),
            "recall": round(recall, 6),
            "f1": round(f1, 6),
            "instances": len(keys),
            "true_instances": int(np.count_nonzero(correct)),
        }
    return out
