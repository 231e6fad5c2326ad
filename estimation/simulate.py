"""Synthetic shared task with known truth, to check the estimators (docs/internals/estimation.md).

The world: mention pairs with a true relation (or none) and a subject entity;
systems from teams that share a common core of salient pairs, each team with
novel predictions of its own, a few near-duplicate runs, and one system whose
predictions no other system touches.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from .core import (
    SCHEMES,
    Population,
    estimate,
    plan_sample_size,
    prepare_evidence,
    sample_draws,
    scheme_weights,
)
from .validation.worlds import another_run, weighted_choice


@dataclass
class World:
    label: np.ndarray  # (K,) true predicate code per pair, -1 for no relation
    subject: np.ndarray  # (K,) subject entity of each pair
    systems: list[tuple[str, np.ndarray, np.ndarray]]  # (name, pair ids, predicates)
    team: np.ndarray  # (m,) team of each system (near-duplicates share a team)
    disjoint: np.ndarray  # (m,) True for the system nobody else overlaps

    @property
    def y_pairs(self) -> np.ndarray:
        return np.flatnonzero(self.label >= 0)

    def population(self) -> Population:
        pop = Population()
        for name, pairs, preds in self.systems:
            pop.add_system(name, pairs, preds, self.subject[pairs])
        return pop


def make_world(
    rng: np.random.Generator,
    n_systems: int = 40,
    n_pairs: int = 30_000,
    n_predicates: int = 20,
    true_share: float = 0.25,
    disjoint_pairs: int = 4_000,
) -> World:
    zipf = 1.0 / np.arange(1, n_predicates + 1)
    zipf /= zipf.sum()
    label = np.where(
        rng.random(n_pairs) < true_share, rng.choice(n_predicates, n_pairs, p=zipf), -1
    )
    subject = rng.integers(0, n_pairs // 5, n_pairs)
    shared = np.arange(n_pairs - disjoint_pairs)  # pairs the ordinary teams can see
    reserved = np.arange(n_pairs - disjoint_pairs, n_pairs)
    salience = rng.lognormal(0.0, 1.2, n_pairs)

    def wrong_predicate(pairs: np.ndarray) -> np.ndarray:
        pred = rng.choice(n_predicates, len(pairs), p=zipf)
        clash = pred == label[pairs]
        pred[clash] = (
            pred[clash] + 1 + rng.integers(0, n_predicates - 1, clash.sum())
        ) % (n_predicates)
        return pred

    def team_system(
        pool: np.ndarray, weight: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        recall = rng.uniform(0.05, 0.3)
        precision = rng.uniform(0.25, 0.85)
        true_pool = pool[label[pool] >= 0]
        tp = true_pool[
            weighted_choice(rng, weight[true_pool], int(recall * len(true_pool)))
        ]
        n_fp = int(len(tp) * (1 - precision) / precision)
        fp_w = weight[pool].copy()
        fp_w[np.isin(pool, tp)] = 0
        fp = pool[weighted_choice(rng, fp_w, n_fp)]
        return np.concatenate([tp, fp]), np.concatenate(
            [label[tp], wrong_predicate(fp)]
        )

    n_dup = max(n_systems // 5, 0)
    n_base = n_systems - n_dup - 1
    systems, team, disjoint = [], [], []
    for t in range(n_base):
        # A team's novel predictions: a private slice of pairs it favours strongly.
        boost = np.ones(n_pairs)
        boost[rng.choice(shared, len(shared) // 30, replace=False)] = 25.0
        pairs, preds = team_system(shared, salience * boost)
        systems.append((f"team{t:02d}", pairs, preds))
        team.append(t)
        disjoint.append(False)
    for d in range(n_dup):
        # Another run of an existing team: most predictions kept, a few dropped or changed.
        src = int(rng.integers(0, n_base))
        pairs, preds = another_run(rng, *systems[src][1:], wrong_predicate)
        systems.append((f"team{src:02d}-run{d}", pairs, preds))
        team.append(src)
        disjoint.append(False)
    pairs, preds = team_system(reserved, np.ones(n_pairs))
    systems.append(("novel", pairs, preds))
    team.append(n_base)
    disjoint.append(True)
    return World(label, subject, systems, np.array(team), np.array(disjoint))


def truth(world: World, scheme: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True precision, recall and F1 of every system under ``scheme``.

    Computed by the plain-Python reference of the validation battery, never by the
    weighting code the estimators use.
    """
    from .validation.reference import true_scores

    scores = true_scores(world, scheme)
    return scores["precision"], scores["recall"], scores["f1"]


def pooled(world: World, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """Leave-team-out pooled precision and recall (the classic pooling baseline).

    The pool is every other team's predictions, fully judged; a system's
    predictions outside it count as wrong and the pool's true instances stand in
    for all true instances.
    """
    key = {}
    for k, (_, pairs, preds) in enumerate(world.systems):
        for x in zip(pairs.tolist(), preds.tolist(), strict=True):
            key.setdefault(x, set()).add(int(world.team[k]))
    precision, recall = [], []
    for k, (_, pairs, preds) in enumerate(world.systems):
        t = int(world.team[k])
        in_pool = np.array(
            [
                bool(key[x] - {t})
                for x in zip(pairs.tolist(), preds.tolist(), strict=True)
            ]
        )
        correct = world.label[pairs] == preds
        p = scheme_weights(scheme, preds, world.subject[pairs])
        precision.append(float(p @ (correct & in_pool)))
        pool_true = [
            x for x, teams in key.items() if world.label[x[0]] == x[1] and teams - {t}
        ]
        mine = set(zip(pairs[correct].tolist(), preds[correct].tolist(), strict=True))
        yp = np.array([x[0] for x in pool_true])
        yr = np.array([x[1] for x in pool_true])
        if len(yp) == 0:
            recall.append(0.0)
            continue
        p_y = scheme_weights(scheme, yr, world.subject[yp])
        recall.append(
            float(p_y @ np.array([x in mine for x in pool_true], dtype=float))
        )
    return np.array(precision), np.array(recall)


def draw_evidence(
    world: World,
    pop: Population,
    rng: np.random.Generator,
    n_draws: np.ndarray,
    n0: int,
    scheme: str,
    probs: list[np.ndarray],
):
    """Draws of n_draws[i] pairs from each system, their true labels, and Ŷ0."""
    draws = {}
    for k, (name, pairs, _) in enumerate(world.systems):
        draws[name] = pairs[sample_draws(probs[k], int(n_draws[k]), rng)]
    drawn = np.unique(np.concatenate(list(draws.values()))) if draws else np.zeros(0)
    y = world.y_pairs
    y0 = y[rng.integers(0, len(y), n0)]
    ev = prepare_evidence(
        pop, draws, drawn, world.label[drawn], y0, world.label[y0], world.subject[y0]
    )
    return ev, draws


def _progress(label: str, done: int, total: int, start: float) -> None:
    if done == total or done % max(total // 20, 1) == 0:
        rate = done / max(time.perf_counter() - start, 1e-9)
        print(
            f"\r{label}: {done}/{total} ({rate:.1f}/s)",
            end="",
            file=sys.stderr,
            flush=True,
        )
        if done == total:
            print(file=sys.stderr)


def run_fixed(
    world: World,
    trials: int,
    seed: int,
    n_per_system: int = 125,
    n0: int = 200,
    draw_scheme: str = "instance",
    confidence: float = 0.9,
    progress: bool = True,
) -> dict[tuple[str, str, str], np.ndarray]:
    """Repeat the 'every system sampled n times' experiment.

    Returns estimates[(scheme, metric, kind)] as arrays (trials × m × 3) of
    (estimate, lo, hi).
    """
    pop = world.population()
    probs = [s.probs(draw_scheme) for s in pop._systems]
    m = len(world.systems)
    rng = np.random.default_rng(seed)
    out: dict[tuple[str, str, str], np.ndarray] = {}
    start = time.perf_counter()
    for t in range(trials):
        ev, _ = draw_evidence(
            world, pop, rng, np.full(m, n_per_system), n0, draw_scheme, probs
        )
        res = estimate(pop, ev, draw_scheme, SCHEMES, confidence)
        for s, metrics in res.results.items():
            for metric, kinds in metrics.items():
                for kind, iv in kinds.items():
                    arr = out.setdefault((s, metric, kind), np.zeros((trials, m, 3)))
                    arr[t] = np.stack([iv.estimate, iv.lo, iv.hi], axis=1)
        if progress:
            _progress("fixed-sample trials", t + 1, trials, start)
    return out


def run_adaptive(
    world: World,
    trials: int,
    seed: int,
    reference_n: int = 500,
    draw_scheme: str = "instance",
    confidence: float = 0.9,
    progress: bool = True,
) -> dict[str, np.ndarray]:
    """Systems arrive one by one in random order; each gets the adaptive n.

    The target is the worst-case variance of ``reference_n`` simple samples
    (0.25/reference_n), so the first system gets exactly reference_n draws.
    Returns per trial and arrival step: draws, new distinct labels, and the final
    joint precision estimate/interval of every system.
    """
    pop = world.population()
    probs = [s.probs(draw_scheme) for s in pop._systems]
    m = len(world.systems)
    rng = np.random.default_rng(seed)
    target = 0.25 / reference_n
    n_steps = np.zeros((trials, m), dtype=np.int64)
    new_labels = np.zeros((trials, m), dtype=np.int64)
    final = np.zeros((trials, m, 3))
    start = time.perf_counter()
    for t in range(trials):
        order = rng.permutation(m)
        draws = {name: np.zeros(0, np.int64) for name, _, _ in world.systems}
        labelled = np.zeros(len(world.label), dtype=bool)
        for step, k in enumerate(order):
            name, pairs, _ = world.systems[k]
            lab = np.flatnonzero(labelled)
            ev = prepare_evidence(pop, draws, lab, world.label[lab])
            n = plan_sample_size(
                pop, ev, name, target_variance=target, scheme=draw_scheme
            )
            new = pairs[sample_draws(probs[k], n, rng)]
            draws[name] = new
            n_steps[t, step] = n
            new_labels[t, step] = len(np.unique(new[~labelled[new]]))
            labelled[new] = True
        lab = np.flatnonzero(labelled)
        ev = prepare_evidence(pop, draws, lab, world.label[lab])
        iv = estimate(pop, ev, draw_scheme, [draw_scheme], confidence).results[
            draw_scheme
        ]["precision"]["joint"]
        final[t] = np.stack([iv.estimate, iv.lo, iv.hi], axis=1)
        if progress:
            _progress("adaptive trials", t + 1, trials, start)
    return {"draws": n_steps, "new_labels": new_labels, "final_precision": final}
