"""`pair_terms` / `at_pairs`: the instances on the labelled drawn pairs U, summed per
(system, pair), read through a `LabelState`'s judged instances or by scanning every
instance, equal the plain sum of each instance's term at its cell; with several
instances of a system on one pair (two relations named), soft labels, and labelled
pairs no system drew (judged, not in U)."""

import numpy as np
import pytest
import scipy.sparse as sp

from estimation.core import Population, prepare_evidence
from estimation.core.importance import at_pairs, label_variance_at_pairs, pair_terms
from estimation.core.noise import SoftLabels, with_soft_labels
from estimation.core.precision import LabelState


def _world(rng: np.random.Generator):
    """6 systems over 80 pairs (relations 1–4), some pairs named twice by one system."""
    pop = Population()
    draws = {}
    for k in range(6):
        pairs = rng.choice(80, 30, replace=False)
        preds = rng.integers(1, 5, len(pairs))
        twice = pairs[:6]  # a second relation on the same pair
        pop.add_system(f"s{k}", np.concatenate([pairs, twice]),
                       np.concatenate([preds, preds[:6] % 4 + 1]))
        draws[f"s{k}"] = rng.choice(pairs, 12)
    truth = rng.integers(-1, 5, 80)  # -1: no relation
    labelled = np.union1d(np.concatenate(list(draws.values())), np.arange(70, 80))
    ev = prepare_evidence(pop, draws, labelled, truth[labelled])
    return pop, ev, labelled, truth


def _reference(pop: Population, ev, scheme: str, right: np.ndarray) -> np.ndarray:
    """Σ over each system's instances on U of p(x)·right(x), by a dense loop."""
    inst = pop.instances()
    col = {int(p): j for j, p in enumerate(ev.pairs)}
    out = np.zeros((len(pop), len(ev.pairs)))
    probs = pop.instance_probs(scheme)
    for x in range(len(inst["pairs"])):
        j = col.get(int(inst["pairs"][x]))
        if j is not None:
            out[inst["system"][x], j] += probs[x] * right[x]
    return out


@pytest.mark.parametrize("soft", [False, True])
def test_terms_through_the_state_equal_the_scan(soft):
    rng = np.random.default_rng(3)
    pop, ev, labelled, truth = _world(rng)
    assert len(np.setdiff1d(pop.lookup_pairs(labelled), ev.pairs))  # judged, not in U
    if soft:
        ev = with_soft_labels(pop, ev, SoftLabels(
            labelled, truth[labelled], rng.uniform(0.55, 1.0, len(labelled))))
    inst = pop.instances()
    right = np.asarray(ev.correct(inst["pairs"], inst["predicates"], inst["system"]), float)
    state = LabelState(pop, ev)
    scanned, through = pair_terms(pop, ev), pair_terms(pop, ev, state)
    for a, b in zip(scanned, through, strict=True):
        np.testing.assert_array_equal(a, b)
    for scheme in ("instance", "predicate"):
        pf, g = at_pairs(pop, ev, scheme, through)
        assert pf.has_canonical_format and g.has_canonical_format
        np.testing.assert_allclose(pf.toarray(), _reference(pop, ev, scheme, right),
                                   rtol=1e-12, atol=0)
        ones = sp.csr_matrix((np.ones(len(inst["pairs"])), (inst["system"], inst["pairs"])))
        assert ones.max() > 1  # some system names two relations on one pair
        assert g.nnz == (g.toarray() > 0).sum()
    if soft:
        lv_scan = label_variance_at_pairs(pop, ev, "instance").toarray()
        lv_state = label_variance_at_pairs(pop, ev, "instance", state=state).toarray()
        np.testing.assert_allclose(lv_state, lv_scan, rtol=1e-15, atol=0)
        assert lv_scan.any()
