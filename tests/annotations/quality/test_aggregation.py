"""Majority vote, Dawid–Skene and agreement on known-answer cases."""

from __future__ import annotations

import numpy as np
import pytest

from annotations.quality.aggregation import (
    NO_RELATION,
    answer_key,
    dawid_skene,
    krippendorff_alpha,
    majority_vote,
    worker_agreement,
)


def test_majority_single_and_multi_label() -> None:
    r = majority_vote([{"per:spouse"}, {"per:spouse"}, {NO_RELATION}])
    assert r.labels == {"per:spouse"} and not r.tied and r.support == pytest.approx(2 / 3)
    # Founder who is also an employee: both predicates marked by a majority.
    r = majority_vote([{"per:organizations_founded", "per:employee_or_member_of"},
                       {"per:organizations_founded", "per:employee_or_member_of"},
                       {"per:organizations_founded"}])
    assert r.labels == {"per:organizations_founded", "per:employee_or_member_of"}
    r = majority_vote([{"per:spouse"}, {"per:siblings"}, {NO_RELATION}])
    assert r.tied and r.labels == frozenset()
    assert majority_vote([set(), set(), {"per:spouse"}]).labels == {NO_RELATION}


def test_answer_key_is_canonical() -> None:
    assert answer_key(["b", "a", "a"]) == "a|b"
    assert answer_key([]) == NO_RELATION


def simulate(n_items: int, accuracies: list[float], n_cat: int, seed: int,
             per_item: int = 3):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_cat, n_items)
    items, workers, answers = [], [], []
    for i in range(n_items):
        for w in rng.choice(len(accuracies), per_item, replace=False):
            if rng.random() < accuracies[w]:
                a = truth[i]
            else:
                a = rng.choice([c for c in range(n_cat) if c != truth[i]])
            items.append(i)
            workers.append(int(w))
            answers.append(f"c{a}")
    return truth, np.array(items), np.array(workers), answers


def test_dawid_skene_recovers_truth_and_worker_accuracy() -> None:
    acc = [0.95] * 6 + [0.85] * 6 + [0.3] * 3  # three spammers
    truth, items, workers, answers = simulate(2000, acc, 4, seed=7)
    ds = dawid_skene(items, workers, answers)
    ds_correct = np.mean([lab == f"c{t}" for lab, t in zip(ds.labels, truth, strict=True)])
    mv = []
    for i in range(len(truth)):
        r = majority_vote([{answers[k]} for k in np.flatnonzero(items == i)])
        mv.append(not r.tied and r.labels == {f"c{truth[i]}"})
    assert ds_correct >= np.mean(mv)
    assert ds_correct > 0.93
    # Estimated accuracies within a few points of the simulated ones.
    assert np.abs(ds.worker_accuracy - np.array(acc)).max() < 0.06
    assert ds.posterior.shape == (2000, 4)
    np.testing.assert_allclose(ds.posterior.sum(axis=1), 1.0)


def test_dawid_skene_unanimous_is_certain() -> None:
    items = np.array([0, 0, 0, 1, 1, 1])
    workers = np.array([0, 1, 2, 0, 1, 2])
    ds = dawid_skene(items, workers, ["a", "a", "a", "b", "b", "b"])
    assert ds.labels == ["a", "b"]
    assert ds.posterior.max(axis=1).min() > 0.95


def test_alpha_and_worker_agreement() -> None:
    items = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    workers = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2])
    same = ["a", "a", "a", "b", "b", "b", "a", "a", "a"]
    assert krippendorff_alpha(items, workers, same, 3, 3) == pytest.approx(1.0)
    noisy = ["a", "a", "b", "b", "b", "a", "a", "a", "b"]
    assert krippendorff_alpha(items, workers, noisy, 3, 3) < 0.5
    # Four workers; worker 3 always contradicts the other three.
    items4 = np.repeat([0, 1, 2], 4)
    workers4 = np.tile([0, 1, 2, 3], 3)
    answers4 = ["a", "a", "a", "b", "b", "b", "b", "a", "c", "c", "c", "a"]
    rate, n = worker_agreement(items4, workers4, answers4, 4)
    assert n.tolist() == [3, 3, 3, 3]
    assert rate.tolist() == [1.0, 1.0, 1.0, 0.0]
    # Three workers, one dissenting: the others of an agreeing worker tie, half credit.
    rate, _ = worker_agreement(np.array([0, 0, 0]), np.array([0, 1, 2]), ["a", "a", "b"], 3)
    assert rate.tolist() == [0.5, 0.5, 0.0]
    assert krippendorff_alpha(np.array([0]), np.array([0]), ["a"], 1, 1) == 1.0
