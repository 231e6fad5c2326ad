import itertools

import numpy as np
import pytest

from estimation.core import Population, mixing_weights


def populated(systems):
    """A population of these (pairs, predicates, subjects) systems, named s0, s1, …"""
    pop = Population()
    for k, s in enumerate(systems):
        pop.add_system(f"s{k}", *s)
    return pop


def random_system(rng, n_pairs=60, size=25):
    pairs = rng.choice(n_pairs, size, replace=False) + 1000
    preds = rng.integers(0, 4, size)
    subjects = rng.integers(0, 8, size)
    return pairs, preds, subjects


@pytest.mark.parametrize(
    ("scheme", "draw_scheme"),
    [("instance", "instance"), ("predicate", "entity_relation")],
)
def test_incremental_overlap_equals_full_recompute(scheme, draw_scheme):
    rng = np.random.default_rng(3)
    pop = Population()
    pop.add_system("s0", *random_system(rng))
    pop.overlap(scheme, draw_scheme)  # start maintaining it
    for k in range(1, 8):
        # Later systems also reach pairs no earlier system predicted.
        pop.add_system(f"s{k}", *random_system(rng, n_pairs=60 + 10 * k))
        np.testing.assert_allclose(
            pop.overlap(scheme, draw_scheme), pop.overlap_full(scheme, draw_scheme)
        )
    for name in ("s3", "s0", "s7"):
        pop.remove_system(name)
        np.testing.assert_allclose(
            pop.overlap(scheme, draw_scheme), pop.overlap_full(scheme, draw_scheme)
        )
    pop.add_system("again", *random_system(rng, n_pairs=200))
    np.testing.assert_allclose(
        pop.overlap(scheme, draw_scheme), pop.overlap_full(scheme, draw_scheme)
    )
    assert pop.names == ["s1", "s2", "s4", "s5", "s6", "again"]


def test_overlap_is_over_pairs_whatever_the_predicate():
    pop = Population()
    pop.add_system("a", np.array([1, 2]), np.array([0, 0]))
    pop.add_system("b", np.array([2, 3]), np.array([5, 5]))  # pair 2, other predicate
    pop.add_system("c", np.array([4]), np.array([0]))
    o = pop.overlap()
    assert o[0, 1] == pytest.approx(0.25)
    assert o[0, 2] == 0 and o[1, 2] == 0


def test_duplicate_instances_are_kept_once():
    pop = Population()
    pop.add_system("a", np.array([1, 1, 2]), np.array([0, 0, 1]))
    pairs, _, _ = pop.system_instances(0)
    assert len(pairs) == 2
    with pytest.raises(ValueError, match="already"):
        pop.add_system("a", np.array([3]), np.array([0]))


def test_mixing_weights_disjoint_and_identical():
    pop = Population()
    pairs = np.arange(10)
    preds = np.zeros(10, dtype=int)
    for name in ("x", "y", "z"):
        pop.add_system(name, pairs, preds)  # three identical systems
    pop.add_system("far", np.arange(100, 110), preds)  # disjoint from them
    n = np.array([100, 300, 50, 80])
    w = mixing_weights(pop.overlap(), n)
    np.testing.assert_allclose(w[0, :3], n[:3] / n[:3].sum())
    assert w[0, 3] == 0 and w[3, 0] == 0 and w[3, 3] == 1
    np.testing.assert_allclose(w.sum(axis=1), 1)
    # No draws anywhere it overlaps: the row stays empty.
    assert mixing_weights(pop.overlap(), np.array([5, 5, 5, 0]))[3].sum() == 0


def test_lookup_unknown_pairs():
    pop = Population()
    pop.add_system("a", np.array([5, 9]), np.array([0, 1]))
    assert list(pop.lookup_pairs(np.array([9, 5, 7]))) == [1, 0, -1]
    assert list(itertools.chain(pop.pair_ids)) == [5, 9]


def _estimates(pop, draws, labels):
    from estimation.core import estimate, prepare_evidence

    pairs = np.array(sorted(labels), dtype=np.int64)
    preds = np.array([labels[p] for p in pairs], dtype=np.int64)
    y = pairs[preds >= 0][:12]
    ev = prepare_evidence(pop, draws, pairs, preds, y, preds[preds >= 0][:12])
    res = estimate(pop, ev, "instance", ["instance", "predicate", "entity", "entity_relation"])
    return {(s, m, k, f): getattr(iv, f).tobytes() for s, b in res.results.items()
            for m, kinds in b.items() for k, iv in kinds.items()
            for f in ("estimate", "lo", "hi")}


def test_memoised_terms_give_the_fresh_numbers_and_go_with_the_systems():
    """The population's memo (exhaustive hits, exact effective sizes) is keyed by what
    those depend on: later label batches and draws on a hot population give exactly
    the numbers of a fresh one; adding or withdrawing a system empties it."""
    rng = np.random.default_rng(5)
    systems = [random_system(rng, n_pairs=80, size=30) for _ in range(5)]

    draws = {f"s{k}": rng.choice(s[0], 6) for k, s in enumerate(systems)}
    truth = {int(p): int(rng.integers(-1, 4)) for p in range(1000, 1080)}
    drawn = sorted({int(p) for d in draws.values() for p in d})
    hot = populated(systems)
    for step in range(3):
        labels = {p: truth[p] for p in drawn[: 10 + 12 * step]}
        if step == 2:  # new draws, some on unlabelled pairs
            draws = {k: np.concatenate([d, rng.choice(systems[int(k[1:])][0], 4)])
                     for k, d in draws.items()}
        assert _estimates(hot, draws, labels) == _estimates(populated(systems), draws, labels)
        assert len(hot._memo) > 0
    calls = []
    hot.memo(("probe",), lambda: calls.append(1))
    hot.memo(("probe",), lambda: calls.append(1))
    assert calls == [1]
    hot.add_system("s5", *random_system(rng, n_pairs=90, size=20))
    assert len(hot._memo) == 0
    hot.memo(("probe",), lambda: calls.append(1))
    hot.remove_system("s2")
    assert len(hot._memo) == 0
    hot.memo(("probe",), lambda: calls.append(1))
    assert calls == [1, 1, 1]


def test_arrays_are_held_once_and_keep_their_values_as_systems_come_and_go():
    """The systems' per-scheme arrays are views of the concatenated/stacked ones, the
    schemes' stacked matrices share one pattern, and the numbers stay those of a
    population built afresh when a system is added or withdrawn."""
    rng = np.random.default_rng(11)
    systems = {f"s{k}": random_system(rng, n_pairs=80 + 10 * k) for k in range(6)}
    schemes = ("instance", "predicate", "entity", "entity_relation")
    pop = Population()
    for name, arrays in systems.items():
        pop.add_system(name, *arrays)

    def touch(p):
        p.instances()
        for s in schemes:
            p.instance_probs(s), p.stacked(s)

    def same_as_fresh(p):
        fresh = Population()
        for name in p.names:
            fresh.add_system(name, *systems[name])
        touch(fresh)
        for s in schemes:
            np.testing.assert_array_equal(p.instance_probs(s), fresh.instance_probs(s))
            # Pair ids, not dense indices: a withdrawn system's pairs keep their columns.
            for k in range(len(p)):
                a, b = p.stacked(s)[k], fresh.stacked(s)[k]
                ia, ib = p.pair_ids[a.indices], fresh.pair_ids[b.indices]
                np.testing.assert_array_equal(np.sort(ia), np.sort(ib))
                np.testing.assert_array_equal(a.data[np.argsort(ia)], b.data[np.argsort(ib)])
        for key in ("system", "predicates"):
            np.testing.assert_array_equal(p.instances()[key], fresh.instances()[key])
        np.testing.assert_array_equal(p.pair_ids[p.instances()["pairs"]],
                                      fresh.pair_ids[fresh.instances()["pairs"]])

    touch(pop)
    first = pop._systems[2]
    for s in schemes:
        assert np.shares_memory(first.inst_p[s], pop.instance_probs(s))
        assert np.shares_memory(first.pair_rows[s][1], pop.stacked(s).data)
        assert np.shares_memory(pop.stacked(s).indices, pop.stacked("instance").indices)
    assert np.shares_memory(first.pairs, pop.instances()["pairs"])
    same_as_fresh(pop)
    pop.remove_system("s1")
    touch(pop)
    same_as_fresh(pop)
    systems["late"] = random_system(rng, n_pairs=300)  # new pairs widen the stacks
    pop.add_system("late", *systems["late"])
    same_as_fresh(pop)


def test_two_threads_share_a_population():
    """A recompute reads one population from two threads (the correction's replicates
    beside the final estimate, estimation/beside.py): caches filled from both hold what
    one thread alone fills and the memo, evicting while the other thread reads, gives
    every key's value (a race here is rare: this exercises it, the lock prevents it);
    a pickled population (its lock is not kept) works again."""
    import pickle
    import sys
    import threading

    from estimation.core import population as population_module

    rng = np.random.default_rng(11)
    systems = [random_system(rng, n_pairs=300, size=120) for _ in range(12)]

    alone = populated(systems)
    want = {s: (alone.stacked(s).toarray(), alone.instance_probs(s).copy(),
                alone.overlap(s, "instance").copy())
            for s in ("instance", "predicate", "entity", "entity_relation")}
    shared, errors = populated(systems), []
    start = threading.Barrier(2)

    def read(offset: int) -> None:
        try:
            start.wait(10)
            for rep in range(40):
                for s in want:
                    stacked, probs, overlap = want[s]
                    assert np.array_equal(shared.stacked(s).toarray(), stacked)
                    assert np.array_equal(shared.instance_probs(s), probs)
                    assert np.array_equal(shared.overlap(s, "instance"), overlap)
                # More keys than the memo keeps: evictions race the other thread's reads.
                for k in range(population_module.MEMO_ENTRIES + 3):
                    key = ("probe", (k + offset + rep) % (population_module.MEMO_ENTRIES + 3))
                    assert shared.memo(key, lambda key=key: key[1]) == key[1]
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=read, args=(k,)) for k in range(2)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads between almost any two bytecodes
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    again = pickle.loads(pickle.dumps(shared))
    assert np.array_equal(again.stacked("entity").toarray(), want["entity"][0])
    assert again.memo(("fresh",), lambda: 7) == 7
