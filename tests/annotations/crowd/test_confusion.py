"""`simulate_crowd --confusion`: per-worker, per-relation false yes and misses."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from annotations.crowd.simulation import (
    NO_RELATION,
    ConfusionProblem,
    SimWorker,
    load_confusion,
    make_pool,
    simulate_answer,
)

OPTIONS = ["per:spouse", "per:siblings", "per:title"]
N = 4000


def _share(worker: SimWorker, truth: frozenset[str], answer: list[str]) -> float:
    return sum(simulate_answer(worker, truth, OPTIONS, 3, q) == answer for q in range(N)) / N


def _close(got: float, want: float) -> bool:
    return abs(got - want) < 4 * (want * (1 - want) / N) ** 0.5  # 4 binomial se


def test_a_worker_says_its_attractive_relation_at_its_rate() -> None:
    """On pairs holding none, "per:title" at 0.4, nothing else wrong (accuracy 1); on a
    pair holding "per:spouse", missed at 0.3."""
    w = SimWorker("sim-000", 1.0, False, yes={"per:title": 0.4}, miss={"per:spouse": 0.3})
    none = frozenset({NO_RELATION})
    assert _close(_share(w, none, ["per:title"]), 0.4)
    assert _close(_share(w, none, [NO_RELATION]), 0.6)
    spouse = frozenset({"per:spouse"})
    assert _close(_share(w, spouse, [NO_RELATION]), 0.3)
    assert _close(_share(w, spouse, ["per:spouse"]), 0.7)


def test_a_zero_rate_changes_no_answer() -> None:
    """Rates of 0 (or none) draw nothing: the plain coin's answers are unchanged."""
    w = make_pool(3, 0.2, seed=1, spammer_fraction=0)[0]
    zero = replace(w, yes={"per:title": 0.0}, miss={"per:spouse": 0.0})
    for truth in (frozenset({NO_RELATION}), frozenset({"per:spouse"})):
        assert [simulate_answer(w, truth, OPTIONS, 5, q) for q in range(200)] == \
            [simulate_answer(zero, truth, OPTIONS, 5, q) for q in range(200)]


def test_the_file_gives_defaults_and_per_worker_rates(tmp_path: Path) -> None:
    pool = make_pool(10, 0.1, seed=2)
    path = tmp_path / "confusion.json"
    path.write_text(json.dumps({
        "default": {"yes": {"per:title": 0.3}},
        "workers": {"sim-001": {"yes": {"per:title": 0.6, "per:spouse": 0.2},
                                "miss": {"per:siblings": 1.0}}}}))
    got = {w.worker_id: w for w in load_confusion(path, pool)}
    assert got["sim-000"].yes == {"per:title": 0.3} and got["sim-000"].miss == {}
    assert got["sim-001"].yes == {"per:title": 0.6, "per:spouse": 0.2}
    assert got["sim-001"].miss == {"per:siblings": 1.0}
    spammers = [w for w in pool if w.spammer]
    assert spammers and all(got[w.worker_id] == w and not got[w.worker_id].yes
                            for w in spammers)


@pytest.mark.parametrize("content", [
    "[]", '{"other": {}}', '{"workers": {"nobody": {}}}',
    '{"default": {"yes": {"per:title": 1.5}}}', '{"default": {"often": {}}}', "not json",
])
def test_a_malformed_file_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "confusion.json"
    path.write_text(content)
    with pytest.raises(ConfusionProblem):
        load_confusion(path, make_pool(5, 0.1, seed=1))
