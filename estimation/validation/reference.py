"""Reference truth and sampling distributions, written independently of the core.

Plain Python (dicts and loops), written straight from the definitions in
docs/internals/estimation.md §2, so that the battery never checks the estimators against
numbers computed by the code under test. Slow but obviously right.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from .worlds import World


def scheme_probabilities(scheme: str, predicates: list[int], subjects: list[int]) -> list[float]:
    """p(x) of each element under a sampling scheme, by nested uniform choices.

    instance: one element uniformly. predicate: a predicate uniformly, then one of
    its elements. entity: a subject uniformly, then one of its elements.
    entity_relation: a subject uniformly, one of its predicates uniformly, then
    one of that (subject, predicate) cell's elements.
    """
    n = len(predicates)
    if n == 0:
        return []
    if scheme == "instance":
        return [1.0 / n] * n
    if scheme in ("predicate", "entity"):
        keys = predicates if scheme == "predicate" else subjects
        size: dict[int, int] = defaultdict(int)
        for k in keys:
            size[k] += 1
        return [1.0 / (len(size) * size[k]) for k in keys]
    if scheme == "entity_relation":
        cell: dict[tuple[int, int], int] = defaultdict(int)
        for s, r in zip(subjects, predicates, strict=True):
            cell[(s, r)] += 1
        relations: dict[int, int] = defaultdict(int)
        for s, _ in cell:
            relations[s] += 1
        n_subjects = len(relations)
        return [
            1.0 / (n_subjects * relations[s] * cell[(s, r)])
            for s, r in zip(subjects, predicates, strict=True)
        ]
    raise ValueError(f"unknown scheme {scheme!r}")


def _system(world: World, k: int) -> tuple[list[int], list[int]]:
    _, pairs, preds = world.systems[k]
    # Keep each (pair, predicate) once, as a system's set of instances.
    seen: dict[tuple[int, int], None] = {}
    for x in zip(pairs.tolist(), preds.tolist(), strict=True):
        seen.setdefault(x, None)
    return [x[0] for x in seen], [x[1] for x in seen]


def true_scores(world: World, scheme: str) -> dict[str, np.ndarray]:
    """Exact precision, recall and F1 of every system under ``scheme``."""
    label = world.label.tolist()
    subject = world.subject.tolist()
    y = [u for u, r in enumerate(label) if r >= 0]
    p_y = scheme_probabilities(scheme, [label[u] for u in y], [subject[u] for u in y])
    precision, recall = [], []
    for k in range(len(world.systems)):
        pairs, preds = _system(world, k)
        p = scheme_probabilities(scheme, preds, [subject[u] for u in pairs])
        correct = [label[u] == r for u, r in zip(pairs, preds, strict=True)]
        precision.append(sum(pk for pk, ok in zip(p, correct, strict=True) if ok))
        found = {u for u, ok in zip(pairs, correct, strict=True) if ok}
        recall.append(sum(py for u, py in zip(y, p_y, strict=True) if u in found))
    prec, rec = np.array(precision), np.array(recall)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(prec + rec > 0, 2 * prec * rec / (prec + rec), 0.0)
    return {"precision": prec, "recall": rec, "f1": f1}


class Exactness:
    """Whether a system's precision or recall is known exactly from the labels."""

    def __init__(self, world: World) -> None:
        self.pairs, self.any_right = [], []
        for k in range(len(world.systems)):
            pairs, preds = _system(world, k)
            self.pairs.append(np.array(pairs, dtype=np.int64))
            right = (world.label[u] == r for u, r in zip(pairs, preds, strict=True))
            self.any_right.append(any(right))

    def precision(self, k: int, labelled: np.ndarray) -> bool:
        """Every pair of system k has a label (labelled: boolean mask over pairs)."""
        return bool(len(self.pairs[k]) and labelled[self.pairs[k]].all())

    def recall(self, k: int, labelled: np.ndarray) -> bool:
        """Recall is known only when it is surely 0: every pair labelled, none right."""
        return bool(labelled[self.pairs[k]].all() and not self.any_right[k])
