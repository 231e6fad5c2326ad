"""truth.json's reference implementation agrees with the estimation core, byte for byte.

`kbpo.demo.world.truth` computes the scheme probabilities with plain counting, never
with `estimation.core` (import-linter forbids it), because the statistical tests use
truth.json as the independent truth. The core's `scheme_weights` is what the estimators
estimate; if the two ever read a scheme differently, these tests say so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from estimation.core import scheme_weights
from kbpo.demo.world import generate as demo_world
from kbpo.demo.world import truth
from kbpo.demo.world.common import SCHEMES


def _core_probabilities(scheme: str, pair_keys, predicates, subject_ids) -> np.ndarray:
    """The scheme as the estimation core computes it (truth.py's former implementation)."""
    if len(pair_keys) == 0:
        return np.zeros(0)
    _, pred_codes = np.unique(np.asarray(predicates), return_inverse=True)
    _, subj_codes = np.unique(np.asarray(subject_ids), return_inverse=True)
    return scheme_weights(scheme, pred_codes.ravel(), subj_codes.ravel())


@pytest.mark.parametrize(("docs", "systems", "seed"), [(30, 5, 11), (60, 5, 3)])
def test_truth_json_is_byte_identical_to_the_core_computation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: int, systems: int, seed: int
) -> None:
    demo_world.generate(tmp_path / "reference", docs, systems, seed)
    with monkeypatch.context() as m:
        m.setattr(truth, "scheme_probabilities", _core_probabilities)
        m.setattr(demo_world, "scheme_probabilities", _core_probabilities)
        demo_world.generate(tmp_path / "core", docs, systems, seed)
    reference = (tmp_path / "reference" / "truth.json").read_bytes()
    assert reference == (tmp_path / "core" / "truth.json").read_bytes()
    # and the world itself did not change with the truth's implementation
    for name in ("corpus.jsonl", "gold.jsonl"):
        assert (tmp_path / "reference" / name).read_bytes() == (
            tmp_path / "core" / name).read_bytes()


@pytest.mark.parametrize("seed", range(20))
def test_probabilities_equal_the_core_scheme_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    # few subjects and predicates, so strata have many and unequal sizes
    preds = rng.integers(0, int(rng.integers(1, 12)), n)
    subjects = rng.zipf(1.6, n) % 50
    pairs = np.arange(n)
    for scheme in SCHEMES:
        ours = truth.scheme_probabilities(scheme, pairs, preds, subjects)
        core = _core_probabilities(scheme, pairs, preds, subjects)
        assert ours.tobytes() == core.tobytes(), scheme
        assert ours.sum() == pytest.approx(1.0, abs=1e-12)


def test_edges_one_instance_empty_and_bad_input() -> None:
    for scheme in SCHEMES:
        assert truth.scheme_probabilities(scheme, ["a"], ["p"], [1]).tolist() == [1.0]
        assert truth.scheme_probabilities(scheme, [], [], []).shape == (0,)
    # one subject with two relations (3 + 1 instances) and a lone subject
    p = truth.scheme_probabilities("entity_relation", list("abcde"), list("ppqpp"),
                                   [1, 1, 1, 2, 1])
    assert p.tolist() == pytest.approx([1 / 12, 1 / 12, 1 / 4, 1 / 2, 1 / 12])
    with pytest.raises(ValueError, match="unknown scheme"):
        truth.scheme_probabilities("pooled", ["a"], ["p"], [1])
    with pytest.raises(ValueError, match="same length"):
        truth.scheme_probabilities("instance", ["a", "b"], ["p"], [1])


def test_system_scores_by_hand() -> None:
    # Y: keys 1, 2, 3 (subjects 7, 7, 8); the system predicts 1, 3 and a wrong 9.
    p_y = {s: truth.scheme_probabilities(s, [1, 2, 3], [0, 1, 0], [7, 7, 8]) for s in SCHEMES}
    out = truth.system_scores(np.array([1, 3, 9]), np.array([1, 3, 9]), np.array([0, 0, 1]),
                              np.array([7, 8, 8]), np.array([1, 2, 3]), np.array([1, 2, 3]),
                              np.array([0, 1, 0]), np.array([7, 7, 8]), p_y)
    assert out["instance"] == {"precision": 0.666667, "recall": 0.666667, "f1": 0.666667,
                               "instances": 3, "true_instances": 2}
    # predicate: P = 1/(2·2) + 1/(2·2) (predicate 0 holds two of three instances);
    # R over Y = p(1) + p(3) = 1/4 + 1/4 (predicate 1 holds one of Y's three)
    assert out["predicate"]["precision"] == 0.5 and out["predicate"]["recall"] == 0.5
    # entity: subject 7 has 1 instance, subject 8 has 2 → P = 1/2 + 1/4; Y: 1/4 + 1/2
    assert out["entity"]["precision"] == 0.75 and out["entity"]["recall"] == 0.75
