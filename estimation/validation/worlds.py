"""Synthetic shared tasks with documents, for the validation battery.

A world is a fixed universe of candidate mention pairs, each in one document,
with a subject entity and a true relation (or none), plus the systems that
predict on it. Systems favour salient pairs; salience comes from the pair, its
document (so a system finds many or few of a document's relations together, the
reason exhaustive documents are a *cluster* sample) and, with heavy-tailed
subjects, its subject's popularity. Everything here is numpy only and knows
nothing about the estimators.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

LATE_KINDS = ("tiny", "novel", "subset")


@dataclass(frozen=True)
class WorldSpec:
    """Parameters of a world (see docs/internals/estimation.md §10 for the scenarios)."""

    n_systems: int = 40  # systems evaluated from the start (not counting late ones)
    n_pairs: int = 30_000  # candidate pairs visible to the ordinary teams
    n_predicates: int = 20
    true_share: float = 0.25
    pairs_per_doc: float = 20.0  # mean document size, in candidate pairs
    doc_size_sigma: float = 0.5  # sd of log document size
    doc_effect: float = 0.5  # sd of a document's log salience
    subjects_per_doc: float = 3.0  # mean number of subject entities per document
    subject_tail: float | None = None  # Zipf exponent of subject popularity; None: flat
    disjoint_pairs: int = 4_000  # pairs only the disjoint team sees
    disjoint_team: int = 1  # systems in the team nobody else overlaps
    dup_share: float = 0.2  # share of systems that are another run of a team
    late: tuple[str, ...] = ()  # systems arriving last, sized by the planner
    tiny_size: int = 6
    novel_pairs: int = 1_500
    subset_share: float = 0.3
    # Precisions of the first teams, in order (role "fixed"); the rest draw theirs.
    fixed_precision: tuple[float, ...] = ()


@dataclass
class World:
    label: np.ndarray  # (K,) true predicate code per pair, -1 for no relation
    subject: np.ndarray  # (K,) subject entity of each pair
    doc: np.ndarray  # (K,) document of each pair
    systems: list[tuple[str, np.ndarray, np.ndarray]]  # (name, pair ids, predicates)
    team: np.ndarray  # (m,) team of each system
    late: list[int]  # indices of the systems that arrive last, in arrival order
    roles: dict[str, list[int]] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in self.systems]

    @property
    def n_docs(self) -> int:
        return int(self.doc.max()) + 1 if len(self.doc) else 0


def weighted_choice(rng: np.random.Generator, weights: np.ndarray, k: int) -> np.ndarray:
    """k distinct indices drawn with probability ∝ weights (Gumbel top-k)."""
    k = min(k, int((weights > 0).sum()))
    if k <= 0:
        return np.zeros(0, np.int64)
    with np.errstate(divide="ignore"):
        keys = np.log(weights) + rng.gumbel(size=len(weights))
    return np.argpartition(-keys, k - 1)[:k]


def another_run(rng: np.random.Generator, pairs: np.ndarray, preds: np.ndarray,
                wrong_predicate: Callable[[np.ndarray], np.ndarray],
                ) -> tuple[np.ndarray, np.ndarray]:
    """Another run of a team's system: 95% of its predictions kept, 3% of those changed
    to a wrong predicate (``wrong_predicate(pairs)``)."""
    keep = rng.random(len(pairs)) < 0.95
    pairs, preds = pairs[keep].copy(), preds[keep].copy()
    change = rng.random(len(pairs)) < 0.03
    preds[change] = wrong_predicate(pairs[change])
    return pairs, preds


def _documents(rng: np.random.Generator, n: int, mean: float, sigma: float) -> np.ndarray:
    """Document id of each of n consecutive pairs, sizes lognormal around ``mean``."""
    sizes: list[int] = []
    total = 0
    while total < n:
        s = max(1, round(mean * rng.lognormal(-sigma * sigma / 2, sigma)))
        sizes.append(s)
        total += s
    return np.repeat(np.arange(len(sizes)), sizes)[:n]


def make_world(spec: WorldSpec, rng: np.random.Generator) -> World:
    """Draw a world from ``spec`` (deterministic given the generator's state)."""
    n_main, n_dis = spec.n_pairs, spec.disjoint_pairs
    n_nov = spec.novel_pairs if "novel" in spec.late else 0
    total = n_main + n_dis + n_nov
    # Every team reads the same documents: the disjoint team's pairs (mentions only
    # it detects) and the novel system's are spread over all of them.
    doc = rng.permutation(_documents(rng, total, spec.pairs_per_doc, spec.doc_size_sigma))
    n_docs = int(doc.max()) + 1

    # Subjects: each document is about a few entities, drawn by popularity.
    n_entities = max(total // 5, 1)
    if spec.subject_tail is None:
        popularity = np.ones(n_entities)
    else:
        popularity = 1.0 / np.arange(1, n_entities + 1) ** spec.subject_tail
    popularity /= popularity.sum()
    per_doc = 1 + rng.poisson(max(spec.subjects_per_doc - 1, 0), n_docs)
    start = np.concatenate([[0], np.cumsum(per_doc)])
    doc_subjects = rng.choice(n_entities, int(start[-1]), p=popularity)
    pick = start[doc] + (rng.random(total) * per_doc[doc]).astype(np.int64)
    subject = doc_subjects[pick]

    zipf = 1.0 / np.arange(1, spec.n_predicates + 1)
    zipf /= zipf.sum()
    label = np.where(
        rng.random(total) < spec.true_share,
        rng.choice(spec.n_predicates, total, p=zipf),
        -1,
    )
    salience = rng.lognormal(0.0, 1.2, total) * rng.lognormal(0.0, spec.doc_effect, n_docs)[doc]
    if spec.subject_tail is not None:
        # Famous entities are easier to find: their pairs are more salient.
        salience *= np.sqrt(popularity[subject] * n_entities)

    def wrong_predicate(pairs: np.ndarray) -> np.ndarray:
        pred = rng.choice(spec.n_predicates, len(pairs), p=zipf)
        clash = pred == label[pairs]
        shift = 1 + rng.integers(0, spec.n_predicates - 1, int(clash.sum()))
        pred[clash] = (pred[clash] + shift) % spec.n_predicates
        return pred

    def team_system(pool: np.ndarray, weight: np.ndarray,
                    precision: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        recall = rng.uniform(0.05, 0.3)
        drawn = rng.uniform(0.25, 0.85)
        precision = drawn if precision is None else precision
        true_pool = pool[label[pool] >= 0]
        tp = true_pool[weighted_choice(rng, weight[true_pool], int(recall * len(true_pool)))]
        n_fp = int(len(tp) * (1 - precision) / precision)
        fp_w = weight[pool].copy()
        fp_w[np.isin(pool, tp)] = 0
        fp = pool[weighted_choice(rng, fp_w, n_fp)]
        pairs = np.concatenate([tp, fp])
        return pairs, np.concatenate([label[tp], wrong_predicate(fp)])

    main = np.arange(n_main)
    dis = np.arange(n_main, n_main + n_dis)
    n_dup = int(spec.n_systems * spec.dup_share)
    n_team = spec.disjoint_team if n_dis else 0
    n_base = spec.n_systems - n_dup - n_team
    if n_base < 1:
        raise ValueError("n_systems too small for the duplicates and the disjoint team")
    systems: list[tuple[str, np.ndarray, np.ndarray]] = []
    team: list[int] = []
    for t in range(n_base):
        # A team's novel predictions: a private slice of pairs it favours strongly.
        boost = np.ones(total)
        boost[rng.choice(main, len(main) // 30, replace=False)] = 25.0
        fixed = spec.fixed_precision[t] if t < len(spec.fixed_precision) else None
        systems.append((f"team{t:02d}", *team_system(main, salience * boost, fixed)))
        team.append(t)
    for d in range(n_dup):
        # Another run of a team: most predictions kept, a few dropped or changed.
        src = int(rng.integers(0, n_base))
        pairs, preds = another_run(rng, *systems[src][1:], wrong_predicate)
        systems.append((f"team{src:02d}-run{d}", pairs, preds))
        team.append(src)
    roles: dict[str, list[int]] = {"disjoint": [], "fixed": list(range(
        min(len(spec.fixed_precision), n_base)))}
    for d in range(n_team):
        systems.append((f"disjoint{d}", *team_system(dis, salience)))
        team.append(n_base)
        roles["disjoint"].append(len(systems) - 1)

    late: list[int] = []
    for kind in spec.late:
        if kind not in LATE_KINDS:
            raise ValueError(f"unknown late system {kind!r}; expected one of {LATE_KINDS}")
        if kind == "tiny":
            # Copied from one document of an evaluated system, as a new user might.
            _, pairs, preds = systems[0]
            order = np.lexsort((pairs, doc[pairs]))
            take = order[: spec.tiny_size]
            new = (pairs[take].copy(), preds[take].copy())
        elif kind == "novel":
            pool = np.arange(n_main + n_dis, total)
            new = team_system(pool, salience)
        else:
            _, pairs, preds = systems[0]
            keep = rng.random(len(pairs)) < spec.subset_share
            new = (pairs[keep].copy(), preds[keep].copy())
        systems.append((kind, *new))
        team.append(max(team) + 1)
        late.append(len(systems) - 1)
        roles[kind] = [len(systems) - 1]
    return World(label, subject, doc, systems, np.array(team), late, roles)
