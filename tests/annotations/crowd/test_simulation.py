"""The simulated crowd: deterministic, as accurate as configured, reads gold.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotations.crowd.simulation import (
    NO_RELATION,
    GoldKey,
    assign_workers,
    make_pool,
    simulate_answer,
)


def test_pool_is_deterministic_with_spammers() -> None:
    pool = make_pool(20, 0.1, seed=3)
    assert pool == make_pool(20, 0.1, seed=3)
    assert sum(w.spammer for w in pool) == 2
    honest = [w.accuracy for w in pool if not w.spammer]
    assert 0.8 < sum(honest) / len(honest) < 1.0
    with pytest.raises(ValueError):
        make_pool(0, 0.1, 1)


def test_answers_match_accuracy_and_are_deterministic() -> None:
    pool = make_pool(10, 0.2, seed=1, spammer_fraction=0)
    truth = frozenset({"per:spouse"})
    options = ["per:spouse", "per:siblings", "per:parents", "per:children", "per:other_family"]
    n = 4000
    correct = sum(simulate_answer(pool[q % 10], truth, options, 5, q) == ["per:spouse"]
                  for q in range(n))
    expected = sum(w.accuracy for w in pool) / 10
    # Binomial tolerance: 4 standard errors.
    assert abs(correct / n - expected) < 4 * (expected * (1 - expected) / n) ** 0.5
    assert simulate_answer(pool[0], truth, options, 5, 7) == \
        simulate_answer(pool[0], truth, options, 5, 7)
    wrong = {a[0] for q in range(300) if (a := simulate_answer(pool[1], truth, options, 9, q))
             != ["per:spouse"]}
    assert wrong <= (set(options) | {NO_RELATION}) - {"per:spouse"}


def test_assign_workers_distinct_and_excluding() -> None:
    pool = make_pool(5, 0.1, seed=1)
    chosen = [w.worker_id for w in assign_workers(pool, 3, 1, 42, exclude={"sim-000"})]
    assert len(set(chosen)) == 3 and "sim-000" not in chosen


def test_gold_key_reads_demo_world_format(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    mentions = [{"span": [0, 3], "type": "PER", "entity": "a"},
                {"span": [10, 15], "type": "ORG", "entity": "b"}]
    path.write_text(json.dumps({"doc": "D1", "mentions": mentions, "relations": [
        {"subject": [0, 3], "object": [10, 15], "predicate": "per:organizations_founded",
         "sentence": [0, 20]},
        {"subject": [0, 3], "object": [10, 15], "predicate": "per:employee_or_member_of",
         "sentence": [0, 20]}]}) + "\n")
    key = GoldKey.load(path)
    assert key.truth(("D1", 0, 3, 10, 15)) == {"per:organizations_founded",
                                               "per:employee_or_member_of"}
    assert key.truth(("D1", 0, 3, 16, 19)) == {NO_RELATION}
    path.write_text('{"doc": "D1", "relations": [{"subject": 5}]}\n')
    with pytest.raises(ValueError, match="line 1"):
        GoldKey.load(path)


# Gold written in the other direction, with inverse, symmetric and folded predicates:
# (stated relation, the canonical pair and predicate ingestion would store).
BOTH_WAYS = [
    (([30, 40], "per:parents", [0, 10]), (0, 10, 30, 40, "per:children")),
    (([0, 10], "per:children", [30, 40]), (0, 10, 30, 40, "per:children")),
    (([30, 40], "per:siblings", [0, 10]), (0, 10, 30, 40, "per:siblings")),
    (([30, 40], "per:spouse", [0, 10]), (0, 10, 30, 40, "per:spouse")),
    (([50, 60], "org:founded_by", [0, 10]), (0, 10, 50, 60, "per:organizations_founded")),
    (([70, 80], "gpe:births_in_city", [0, 10]), (0, 10, 70, 80, "per:place_of_birth")),
    (([0, 10], "per:city_of_birth", [70, 80]), (0, 10, 70, 80, "per:place_of_birth")),
    (([50, 60], "org:employees_or_members", [30, 40]),
     (30, 40, 50, 60, "per:employee_or_member_of")),
]
MENTIONS = [{"span": [0, 10], "type": "PER", "entity": "a"},
            {"span": [30, 40], "type": "PER", "entity": "b"},
            {"span": [50, 60], "type": "ORG", "entity": "c"},
            {"span": [70, 80], "type": "GPE", "entity": "d"}]


@pytest.mark.parametrize(("stated", "canonical"), BOTH_WAYS)
def test_gold_key_canonicalizes_gold_written_either_way(
        tmp_path: Path, stated: tuple, canonical: tuple) -> None:
    subject, predicate, obj = stated
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps({"doc": "D1", "mentions": MENTIONS, "relations": [
        {"subject": subject, "object": obj, "predicate": predicate}]}) + "\n")
    key = GoldKey.load(path)
    *pair, want = canonical
    assert key.truth(("D1", *pair)) == {want}
    assert key.relations == {("D1", *pair): frozenset({want})}


def test_gold_key_refuses_a_relation_it_cannot_orient(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps({"doc": "D1", "mentions": MENTIONS, "relations": [
        {"subject": [0, 10], "object": [50, 60], "predicate": "per:spouse"}]}) + "\n")
    with pytest.raises(ValueError, match="line 1: per:spouse does not relate a PER subject"):
        GoldKey.load(path)


def test_a_perfect_crowd_is_exactly_perfect() -> None:
    pool = make_pool(10, 0.0, seed=1, spammer_fraction=0)
    assert {w.accuracy for w in pool} == {1.0}
