"""PROBLEM.json: loading, validation with errors that name the field, and results as JSON."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .adaptive import plan_sample_size
from .distinct_estimate import plan_distinct_size
from .estimators import (
    NO_RELATION,
    Estimates,
    Evidence,
    Interval,
    estimate,
    prepare_evidence,
)
from .intervals import rounded_outward
from .population import Population
from .schemes import SCHEMES

INSTANCE_SHAPE = "expected [pair_key, predicate] or [pair_key, predicate, subject_id]"
EXHAUSTIVE_SHAPE = (
    "expected [pair_key, predicate], [pair_key, predicate, subject_id] or "
    "[pair_key, predicate, subject_id, document_id]"
)


class ProblemError(ValueError):
    """Malformed problem; the message starts with the path of the offending field."""


@dataclass
class Problem:
    scheme: str
    confidence: float
    population: Population
    evidence: Evidence
    # Whether any exhaustive instance names its subject: without subject ids each pair
    # is its own subject, and the entity schemes' recall is the instance scheme's.
    exhaustive_subjects: bool = True
    crowd: CrowdAnswers | None = None  # "answers" and "controls", when given


@dataclass
class CrowdAnswers:
    """The crowd's answers of a problem, as codes: questions 0..n_pairs−1 are the
    answered pairs (``pairs``, population pair codes), the rest control questions with
    known answers (``truth``). Relations are the problem's predicate codes, −1 none."""

    pairs: np.ndarray  # (n_pairs,) pair code of each answered pair
    items: np.ndarray  # (A,) question of each answer
    workers: np.ndarray  # (A,) worker code
    answers: np.ndarray  # (A,) relation code, −1 for no relation
    truth: np.ndarray  # (n_controls,) known relation code of each control question
    n_workers: int
    n_predicates: int
    # Per question: its pair type (numbered as the questions first show them; one type
    # when the problem names none) and how many answers it offered (relations and none).
    strata: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n_options: np.ndarray = field(default_factory=lambda: np.zeros(0))
    names: list[str] = field(default_factory=list)  # predicate name of each code
    # Per pair type, the relations its questions offered: its "offered" list, else the
    # relations its answers and truths name (the crowd model refuses any other answer).
    offered: list[frozenset[str]] = field(default_factory=list)

    @property
    def known(self) -> dict[int, int]:
        n = len(self.pairs)
        return {n + k: int(t) for k, t in enumerate(self.truth)}


def _nonempty_str(value: Any, where: str, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ProblemError(
            f"{where}: expected {what} (a non-empty string), got {value!r}"
        )
    return value


class _Codes:
    """Dense integer codes for strings, in order of first appearance."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, key: str) -> int:
        return self.ids.setdefault(key, len(self.ids))


def _instance(value: Any, where: str) -> tuple[str, str, str]:
    if not isinstance(value, list) or len(value) not in (2, 3):
        raise ProblemError(f"{where}: {INSTANCE_SHAPE}")
    pair = _nonempty_str(value[0], f"{where}[0]", "pair_key")
    pred = _nonempty_str(value[1], f"{where}[1]", "predicate")
    if pred == "no_relation":
        raise ProblemError(f"{where}[1]: 'no_relation' is not a predicted relation")
    subj = (
        _nonempty_str(value[2], f"{where}[2]", "subject_id")
        if len(value) == 3
        else pair
    )
    return pair, pred, subj


def load_problem(data: Any) -> Problem:
    """Validate a parsed PROBLEM.json and index it (see docs/internals/estimation.md)."""
    if not isinstance(data, dict):
        raise ProblemError("problem: expected a JSON object")
    known = {"scheme", "systems", "draws", "labels", "exhaustive", "confidence", "answers",
             "controls", "pair_types", "offered"}
    extra = sorted(set(data) - known)
    if extra:
        raise ProblemError(
            f"{extra[0]}: unknown field (expected {', '.join(sorted(known))})"
        )
    scheme = data.get("scheme", "instance")
    if scheme not in SCHEMES:
        raise ProblemError(
            f"scheme: expected one of {', '.join(SCHEMES)}, got {scheme!r}"
        )
    confidence = data.get("confidence", 0.9)
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 < confidence < 1
    ):
        raise ProblemError(
            f"confidence: expected a number between 0 and 1, got {confidence!r}"
        )

    pairs, preds, subjects = _Codes(), _Codes(), _Codes()
    systems = data.get("systems")
    if not isinstance(systems, list):
        raise ProblemError("systems: expected a list of {name, instances}")
    pop = Population()
    pair_sets: dict[str, set[str]] = {}
    for k, system in enumerate(systems):
        where = f"systems[{k}]"
        if not isinstance(system, dict):
            raise ProblemError(f"{where}: expected an object with name and instances")
        name = _nonempty_str(system.get("name"), f"{where}.name", "name")
        if name in pair_sets:
            raise ProblemError(f"{where}.name: duplicate system name {name!r}")
        instances = system.get("instances")
        if not isinstance(instances, list):
            raise ProblemError(f"{where}.instances: expected a list")
        rows = [
            _instance(x, f"{where}.instances[{i}]") for i, x in enumerate(instances)
        ]
        pair_sets[name] = {r[0] for r in rows}
        pop.add_system(
            name,
            np.array([pairs(r[0]) for r in rows], dtype=np.int64),
            np.array([preds(r[1]) for r in rows], dtype=np.int64),
            np.array([subjects(r[2]) for r in rows], dtype=np.int64),
        )

    draws = data.get("draws", {})
    if not isinstance(draws, dict):
        raise ProblemError("draws: expected an object {system name: [pair_key, ...]}")
    draw_ids = {}
    for name, keys in draws.items():
        if name not in pair_sets:
            raise ProblemError(f"draws.{name}: no system of that name")
        if not isinstance(keys, list):
            raise ProblemError(f"draws.{name}: expected a list of pair keys")
        for i, key in enumerate(keys):
            _nonempty_str(key, f"draws.{name}[{i}]", "pair_key")
            if key not in pair_sets[name]:
                raise ProblemError(
                    f"draws.{name}[{i}]: pair_key {key!r} is not among system {name!r}'s instances"
                )
        draw_ids[name] = np.array([pairs.ids[key] for key in keys], dtype=np.int64)

    crowd = _crowd_answers(data, pairs, preds)
    labels = dict(data.get("labels", {})) if isinstance(data.get("labels", {}), dict) else None
    if crowd is not None and labels is not None:
        # An answered pair without a label gets the plurality of its answers (the soft
        # labels replace it in the estimates; the hard label is the fallback).
        for key, votes in data["answers"].items():
            if key not in labels:
                said = [v[1] for v in votes]
                labels[key] = max(sorted(set(said)), key=said.count)
    if labels is None:
        raise ProblemError(
            "labels: expected an object {pair_key: predicate or 'no_relation'}"
        )
    label_pairs, label_preds = [], []
    for key, value in labels.items():
        _nonempty_str(value, f"labels.{key}", "predicate or 'no_relation'")
        label_pairs.append(pairs(key))
        label_preds.append(NO_RELATION if value == "no_relation" else preds(value))

    exhaustive = data.get("exhaustive", [])
    if not isinstance(exhaustive, list):
        raise ProblemError("exhaustive: expected a list of [pair_key, predicate]")
    rows, docs = [], []
    for i, x in enumerate(exhaustive):
        where = f"exhaustive[{i}]"
        # An optional 4th element names the document: documents are clusters (§4.3).
        if isinstance(x, list) and len(x) == 4:
            docs.append(_nonempty_str(x[3], f"{where}[3]", "document_id"))
            x = x[:3]
        elif not isinstance(x, list) or len(x) not in (2, 3):
            raise ProblemError(f"{where}: {EXHAUSTIVE_SHAPE}")
        rows.append(_instance(x, where))
    if docs and len(docs) != len(rows):
        raise ProblemError(
            "exhaustive: give a document_id for every instance or for none "
            f"({len(docs)} of {len(rows)} have one)"
        )
    doc_codes = _Codes()
    evidence = prepare_evidence(
        pop,
        draw_ids,
        np.array(label_pairs, dtype=np.int64),
        np.array(label_preds, dtype=np.int64),
        np.array([pairs(r[0]) for r in rows], dtype=np.int64),
        np.array([preds(r[1]) for r in rows], dtype=np.int64),
        np.array([subjects(r[2]) for r in rows], dtype=np.int64),
        np.array([doc_codes(d) for d in docs], dtype=np.int64) if docs else None,
    )
    subjects_given = any(isinstance(x, list) and len(x) >= 3 for x in exhaustive)
    if crowd is not None:  # every relation the problem names has its code
        crowd = replace(crowd, n_predicates=len(preds.ids), names=list(preds.ids))
    return Problem(scheme, float(confidence), pop, evidence, subjects_given, crowd)


ANSWER_SHAPE = "expected [worker_id, predicate or 'no_relation']"


def _votes(value: Any, where: str, workers: _Codes, preds: _Codes) -> list[tuple[int, int]]:
    if not isinstance(value, list) or not value:
        raise ProblemError(f"{where}: expected a non-empty list of {ANSWER_SHAPE}")
    out = []
    for i, v in enumerate(value):
        if not isinstance(v, list) or len(v) != 2:
            raise ProblemError(f"{where}[{i}]: {ANSWER_SHAPE}")
        w = _nonempty_str(v[0], f"{where}[{i}][0]", "worker_id")
        rel = _nonempty_str(v[1], f"{where}[{i}][1]", "predicate or 'no_relation'")
        out.append((workers(w), NO_RELATION if rel == "no_relation" else preds(rel)))
    return out


def _crowd_answers(data: dict, pairs: _Codes, preds: _Codes) -> CrowdAnswers | None:
    """"answers": {pair_key: [[worker_id, relation], ...]}, "controls": [{"answers":
    [...], "truth": relation(, "pair_type": type)}, ...], "pair_types": {pair_key:
    type}, "offered": {type: [relation, ...]}; None when the problem has no answers."""
    answers, controls = data.get("answers"), data.get("controls", [])
    if answers is None:
        for name in ("controls", "pair_types", "offered"):
            if data.get(name):
                raise ProblemError(f"{name}: given without answers")
        return None
    if not isinstance(answers, dict):
        raise ProblemError(f"answers: expected an object {{pair_key: [{ANSWER_SHAPE}, ...]}}")
    if not isinstance(controls, list):
        raise ProblemError("controls: expected a list of {answers, truth}")
    types = data.get("pair_types", {})
    if not isinstance(types, dict):
        raise ProblemError("pair_types: expected an object {pair_key: type}")
    for key, t in types.items():
        if key not in answers:
            raise ProblemError(f"pair_types.{key}: pair_key has no answers")
        _nonempty_str(t, f"pair_types.{key}", "type")
    workers, strata = _Codes(), _Codes()
    items, who, said, pair_codes, truth, of_type = [], [], [], [], [], []
    for q, (key, votes) in enumerate(answers.items()):
        if key not in pairs.ids:
            raise ProblemError(f"answers.{key}: pair_key is not among the systems' instances")
        pair_codes.append(pairs.ids[key])
        of_type.append(strata(types.get(key, "")))
        for w, a in _votes(votes, f"answers.{key}", workers, preds):
            items.append(q)
            who.append(w)
            said.append(a)
    for k, c in enumerate(controls):
        where = f"controls[{k}]"
        if not isinstance(c, dict) or not {"answers", "truth"} <= set(c) <= {
                "answers", "truth", "pair_type"}:
            raise ProblemError(f"{where}: expected an object with answers, truth "
                               "(and pair_type)")
        t = _nonempty_str(c["truth"], f"{where}.truth", "predicate or 'no_relation'")
        truth.append(NO_RELATION if t == "no_relation" else preds(t))
        of_type.append(strata(_nonempty_str(c["pair_type"], f"{where}.pair_type", "type")
                              if "pair_type" in c else ""))
        for w, a in _votes(c["answers"], f"{where}.answers", workers, preds):
            items.append(len(answers) + k)
            who.append(w)
            said.append(a)
    st = np.array(of_type, np.int64)
    sizes, sets = _options(data.get("offered", {}), strata, st, np.array(items, np.int64),
                           np.array(said, np.int64), truth, preds)
    return CrowdAnswers(np.array(pair_codes, np.int64), np.array(items, np.int64),
                        np.array(who, np.int64), np.array(said, np.int64),
                        np.array(truth, np.int64), len(workers.ids), len(preds.ids), st,
                        sizes, offered=sets)


def _options(offered: Any, strata: _Codes, st: np.ndarray, items: np.ndarray,
             said: np.ndarray, truth: list[int], preds: _Codes
             ) -> tuple[np.ndarray, list[frozenset[str]]]:
    """Answers offered per question (its type's relations and none), and per type its
    relations' names. A type's relations are its "offered" list, else those its
    questions' answers and truths name."""
    if not isinstance(offered, dict):
        raise ProblemError("offered: expected an object {type: [predicate, ...]}")
    named: list[set[int]] = [set() for _ in strata.ids]
    for q, a in zip(items, said, strict=True):
        named[st[q]].add(int(a))
    n = len(st) - len(truth)
    for k, t in enumerate(truth):
        named[st[n + k]].add(t)
    sizes = np.array([len(s - {NO_RELATION}) + 1 for s in named], float)
    names = list(preds.ids)
    sets = [frozenset(names[c] for c in s if c != NO_RELATION) for s in named]
    for t, rels in offered.items():
        where = f"offered.{t}"
        if t not in strata.ids:
            raise ProblemError(f"{where}: no answered pair or control is of that type")
        if not isinstance(rels, list) or not rels:
            raise ProblemError(f"{where}: expected a non-empty list of predicates")
        for i, r in enumerate(rels):
            if _nonempty_str(r, f"{where}[{i}]", "predicate") == "no_relation":
                raise ProblemError(f"{where}[{i}]: list the relations only (none is "
                                   "always offered)")
        sizes[strata.ids[t]] = len(set(rels)) + 1
        sets[strata.ids[t]] = frozenset(rels)
    return (sizes[st] if len(st) else np.zeros(0)), sets


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(float(x), 6)


def _interval_json(iv: Interval, k: int) -> dict[str, float | bool | None]:
    lo, hi = float(iv.lo[k]), float(iv.hi[k])
    exact = hi - lo <= 1e-12  # zero width: the labels decide the value
    if not (math.isnan(lo) or math.isnan(hi)):
        lo, hi = rounded_outward(lo, hi)  # printed ends keep the truth
    return {"estimate": _num(iv.estimate[k]), "lo": _num(lo), "hi": _num(hi), "exact": exact}


def results_json(problem: Problem, result: Estimates) -> dict[str, Any]:
    """The CLI's output: the draw scheme's results per system, every scheme under "schemes"."""
    systems = []
    for k, name in enumerate(result.names):
        per_scheme = {
            s: {
                metric: {kind: _interval_json(iv, k) for kind, iv in kinds.items()}
                for metric, kinds in metrics.items()
            }
            for s, metrics in result.results.items()
        }
        systems.append(
            {
                "name": name,
                "labels_used": int(result.labels_used[k]),
                "draws": int(result.n[k]),
                "pending_draws": int(result.pending[k]),
                **per_scheme[problem.scheme],
                "schemes": per_scheme,
            }
        )
    return {
        "scheme": problem.scheme,
        "confidence": problem.confidence,
        "scheme_notes": {s: scheme_note(problem, s) for s in result.results},
        "systems": systems,
    }


# Measured (docs/internals/crowd-bias.md): instance-scheme recall from entity-scheme
# draws covered 0.80-0.83, reweighted precision intervals were 0.35 wide and single
# systems off by up to 0.057. Such results are reported, never as the headline.
REWEIGHTED_NOTE = ("reweighted from draws of another scheme: heavy-tailed weights, "
                   "intervals not validated to cover; not a headline figure")


def scheme_note(problem: Problem, scheme: str) -> dict[str, Any]:
    """What a scheme's figures are: whether they are reweighted from another scheme's
    draws (and so not reliable), and which quantity its recall estimates."""
    reweighted = scheme != problem.scheme
    recall_of = scheme
    if scheme in ("entity", "entity_relation") and not problem.exhaustive_subjects:
        recall_of = "instance"  # every pair its own subject
    note: dict[str, Any] = {"reweighted": reweighted, "reliable": not reweighted,
                            "recall_of": recall_of}
    if reweighted:
        note["note"] = REWEIGHTED_NOTE
    if recall_of != scheme:
        note["recall_note"] = ("the exhaustive sample names no subject: this recall is "
                               "instance recall; give [pair_key, predicate, subject_id]")
    return note


def solve(problem: Problem, schemes: Sequence[str] | None = None,
          estimator: str = "importance") -> dict[str, Any]:
    schemes = list(SCHEMES) if schemes is None else list(schemes)
    if problem.scheme not in schemes:
        schemes.insert(0, problem.scheme)
    result = estimate(
        problem.population,
        problem.evidence,
        problem.scheme,
        schemes,
        problem.confidence,
        estimator=estimator,
    )
    out = results_json(problem, result)
    out["estimator"] = estimator
    return out


def plan(
    problem: Problem,
    system: str,
    target_halfwidth: float | None = 0.05,
    target_variance: float | None = None,
    bound: str = "worst_case",
    estimator: str = "importance",
) -> dict[str, Any]:
    if system not in problem.population.names:
        raise ProblemError(f"--system: no system named {system!r} in systems")
    if estimator == "distinct":
        n = plan_distinct_size(problem.population, problem.evidence, system,
                               target_halfwidth=target_halfwidth,
                               target_variance=target_variance,
                               confidence=problem.confidence, scheme=problem.scheme)
        return {"system": system, "n": n, "estimator": estimator}
    n = plan_sample_size(
        problem.population,
        problem.evidence,
        system,
        target_halfwidth=target_halfwidth,
        target_variance=target_variance,
        confidence=problem.confidence,
        scheme=problem.scheme,
        bound=bound,
    )
    return {"system": system, "n": n}
