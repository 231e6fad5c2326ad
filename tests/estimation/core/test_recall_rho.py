"""Recall of a system with no draws of its own, most of whose true instances lie
where no sampled system predicts (docs/internals/estimation.md §3: r = θ·ν + ρ).

There ρ carries most of the recall and most of its variance, so the test fails
if ρ is dropped, doubled, or left out of the variance (checked by mutating
estimation/core/recall.py by hand). Independent trials: fresh draws and fresh
exhaustive documents each time; the truth is counted directly from the world.
"""

import numpy as np
import pytest

from estimation.core import Population, estimate, prepare_evidence
from estimation.core.intervals import covers

TRIALS = 400
N_PAIRS, N_DOCS = 6000, 1500
SAMPLED_REGION = 4000  # pairs 0..3999 are predicted by the sampled systems A and B


def _world():
    rng = np.random.default_rng(2024)
    label = np.where(rng.random(N_PAIRS) < 0.3, rng.integers(0, 5, N_PAIRS), -1)
    doc = np.arange(N_PAIRS) % N_DOCS  # every document has pairs of both regions
    true = np.flatnonzero(label >= 0)
    inside, outside = true[true < SAMPLED_REGION], true[true >= SAMPLED_REGION]
    wrong = np.flatnonzero(label < 0)

    def system(found, n_wrong):
        # Wrong predictions on pairs without a relation: any predicate is wrong.
        fp = rng.choice(wrong[wrong < SAMPLED_REGION], n_wrong, replace=False)
        pairs = np.concatenate([found, fp])
        return pairs, np.concatenate([label[found], rng.integers(0, 5, n_wrong)])

    a = system(rng.choice(inside, int(0.4 * len(inside)), replace=False), 600)
    b = system(rng.choice(inside, int(0.4 * len(inside)), replace=False), 600)
    # C: a little of the sampled region, half of the region nobody sampled.
    c_found = np.concatenate(
        [
            rng.choice(inside, int(0.1 * len(inside)), replace=False),
            rng.choice(outside, int(0.5 * len(outside)), replace=False),
        ]
    )
    c = (c_found, label[c_found])
    return label, doc, {"A": a, "B": b, "C": c}


def _truth_recall(label, pairs, preds):
    """Share of all true instances the system found, counted directly."""
    found = {(int(u), int(r)) for u, r in zip(pairs, preds, strict=True) if label[u] == r}
    return len(found) / int((label >= 0).sum())


def _trials(seed):
    label, doc, systems = _world()
    pop = Population()
    for name, (pairs, preds) in systems.items():
        pop.add_system(name, pairs, preds)
    truth = _truth_recall(label, *systems["C"])
    rng = np.random.default_rng(seed)
    by_doc = [np.flatnonzero((doc == d) & (label >= 0)) for d in range(N_DOCS)]
    out = np.zeros((TRIALS, 3))
    for t in range(TRIALS):
        draws = {
            name: systems[name][0][rng.integers(0, len(systems[name][0]), 150)]
            for name in ("A", "B")
        }
        lab = np.unique(np.concatenate(list(draws.values())))
        docs = rng.choice(N_DOCS, 80, replace=False)  # 5% of the documents
        y = np.concatenate([by_doc[d] for d in docs])
        ev = prepare_evidence(
            pop, draws, lab, label[lab], y, label[y], exhaustive_docs=doc[y]
        )
        iv = estimate(pop, ev).results["instance"]["recall"]["joint"]
        out[t] = iv.estimate[2], iv.lo[2], iv.hi[2]
    return truth, out


# Seeds 1-8 were run locally: coverage 0.895-0.930, |bias| <= 1.3 standard errors.
@pytest.mark.parametrize("seed", [7])
def test_recall_of_an_undrawn_system_rests_on_rho(seed):
    truth, out = _trials(seed)
    est, lo, hi = out.T
    assert truth > 0.2  # ρ part ~0.17, θ·ν part ~0.07
    # Unbiased: 4 standard errors of the mean over independent trials.
    se = est.std(ddof=1) / np.sqrt(TRIALS)
    assert abs(est.mean() - truth) <= 4 * se, (est.mean(), truth, se)
    # Two-sided coverage: the 0.87-0.93 target widened by 2.5 standard errors
    # sqrt(c(1-c)/T) of a coverage measured over T trials.
    cover = float(covers(lo, hi, truth).mean())
    tol = 2.5 * np.sqrt(0.9 * 0.1 / TRIALS)
    assert 0.87 - tol <= cover <= 0.93 + tol, cover
    assert np.all(hi > lo)
