"""The real-text world on DocRED's own terms: a Re-DocRED (or DocRED) file as a DocRED
corpus with its 96 relations, systems that write the DocRED result format, and their
exact scores (truth.json) against the file's labels as complete gold.

Pure Python + numpy, like the rest of the world (no Django, no estimation code):

    DIR/docs.json            the chosen documents, as the source has them (load_corpus
                             --format docred, import_gold --format docred and
                             simulate_crowd --gold all read this one file)
    DIR/systems/NAME.json    K systems' predictions, DocRED result format
    DIR/systems/index.json   each system's profile
    DIR/truth.json           exact precision / recall / F1 per system and scheme

An instance is a (document, head entity, tail entity, relation) fact; the entity
scheme's subject is the head entity within its document. A system finds each gold fact
with a probability set by its recall and a difficulty shared by all systems (a
Gaussian copula), and adds false facts between other entity pairs, with relations the
pair's entity types usually take, up to its target precision. Every prediction is
valid, so every one is accepted.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np

from kbpo.core.docred_docs import DocredDocument, DocredProblem, parse_document
from kbpo.core.jsonlist import iter_list
from kbpo.core.schemas import DOCRED, get_schema

from .common import Progress
from .systems_out import Encoded, fresh_systems_dir, write_systems

Fact = tuple[int, int, int, str]  # document index, head, tail, relation id


@dataclass(frozen=True)
class NativeProfile:
    name: str
    recall: float
    target_precision: float
    correlation: float = 0.6


def make_profiles(systems: int, seed: int) -> list[NativeProfile]:
    """Recall spread from 0.25 to 0.75, precision drawn in 0.45–0.9."""
    rng = random.Random(f"native-profiles-{seed}")
    return [NativeProfile(f"docred_sys_{k + 1}", round(0.25 + 0.5 * k / max(1, systems - 1), 2),
                          round(rng.uniform(0.45, 0.9), 2)) for k in range(systems)]


def read_source(path: Path) -> tuple[list[dict], list[DocredDocument]]:
    """The source's well-formed documents (records and parsed), in file order."""
    records, parsed = [], []
    seen: Counter = Counter()
    for where, rec in iter_list(Path(path).read_text(encoding="utf-8"), "document"):
        try:
            doc = parse_document(where, rec, seen)
        except DocredProblem:
            continue  # (a malformed source document is left out of the world)
        records.append(rec)
        parsed.append(doc)
    return records, parsed


def gold_facts(docs: list[DocredDocument], relations: frozenset[str]) -> list[Fact]:
    """Every valid label once, in document order."""
    out: dict[Fact, None] = {}
    for i, doc in enumerate(docs):
        n = len(doc.entities)
        for label in doc.labels:
            if not isinstance(label, dict):
                continue
            h, t, r = label.get("h"), label.get("t"), label.get("r")
            if (isinstance(h, int) and isinstance(t, int) and 0 <= h < n and 0 <= t < n
                    and h != t and r in relations):
                out[(i, h, t, str(r))] = None
    return list(out)


def _false_facts(docs: list[DocredDocument], gold: set[Fact], want: int,
                 rng: random.Random) -> list[Fact]:
    schema = get_schema(DOCRED)
    ids = list(schema.relations)
    out: set[Fact] = set()
    tries = 0
    while len(out) < want and tries < 50 * want + 100:
        tries += 1
        i = rng.randrange(len(docs))
        ents = docs[i].entities
        if len(ents) < 2:
            continue
        h, t = rng.sample(range(len(ents)), 2)
        usual = [r.id for r in schema.candidates(ents[h].type, ents[t].type)]
        fact = (i, h, t, rng.choice(usual or ids))
        if fact not in gold:
            out.add(fact)
    return sorted(out)


def choose(profile: NativeProfile, k: int, gold: list[Fact], easy: np.ndarray,
           docs: list[DocredDocument], seed: int) -> list[Fact]:
    """One system's facts: the gold it finds and its false ones, sorted."""
    noise = np.random.default_rng([seed, 2, k]).standard_normal(len(gold))
    c = profile.correlation
    score = c * easy + (1 - c * c) ** 0.5 * noise
    found = [f for f, s in zip(gold, score, strict=True)
             if NormalDist().cdf(float(s)) < profile.recall]
    n_false = round(len(found) * (1 - profile.target_precision) / profile.target_precision)
    rng = random.Random(f"native-false-{seed}-{k}")
    return sorted(set(found) | set(_false_facts(docs, set(gold), n_false, rng)))


def result_rows(facts: list[Fact], docs: list[DocredDocument], gold_evidence: dict,
                rng: random.Random) -> list[dict]:
    """The facts in the DocRED result format, in a shuffled order (as systems emit them),
    with the gold evidence for found facts and the head's first sentence otherwise."""
    rows = []
    for i, h, t, r in facts:
        doc = docs[i]
        evidence = gold_evidence.get((i, h, t, r)) or [doc.entities[h].mentions[0][0]]
        rows.append({"title": doc.title, "h_idx": h, "t_idx": t, "r": r,
                     "evidence": sorted(evidence)})
    rng.shuffle(rows)
    return rows


def generate(source: Path, out_dir: Path, docs: int, systems: int, seed: int,
             progress: Progress | None = None) -> dict:
    """Write docs.json, systems/*.json, systems/index.json and truth.json."""
    out = Path(out_dir)
    systems_dir = fresh_systems_dir(out, docs, systems, ".json")
    say = progress or (lambda stage, done, total: None)
    records, parsed = read_source(source)
    chosen = sorted(random.Random(f"native-docs-{seed}").sample(range(len(parsed)),
                                                                min(docs, len(parsed))))
    records = [records[i] for i in chosen]
    parsed = [parsed[i] for i in chosen]
    (out / "docs.json").write_text(json.dumps(records, ensure_ascii=False) + "\n",
                                   encoding="utf-8")
    say("documents", len(parsed), len(parsed))
    relations = get_schema(DOCRED).relations
    code = {r: c for c, r in enumerate(relations)}
    gold = gold_facts(parsed, frozenset(relations))
    evidence = {}
    for i, doc in enumerate(parsed):
        for label in doc.labels:
            if isinstance(label, dict) and isinstance(label.get("evidence"), list):
                evidence[(i, label.get("h"), label.get("t"), label.get("r"))] = label["evidence"]

    pair_ids: dict[tuple[int, int, int], int] = {}
    subject_ids: dict[tuple[int, int], int] = {}

    def encode(facts: list[Fact]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        pairs = np.asarray([pair_ids.setdefault(f[:3], len(pair_ids)) for f in facts], np.int64)
        preds = np.asarray([code[f[3]] for f in facts], np.int64)
        subjects = np.asarray([subject_ids.setdefault(f[:2], len(subject_ids))
                               for f in facts], np.int64)
        return pairs * len(code) + preds, pairs, preds, subjects

    g_encoded = encode(gold)
    easy = np.random.default_rng([seed, 1]).standard_normal(len(gold))

    def write_one(k: int, prof: NativeProfile) -> Encoded:
        facts = choose(prof, k, gold, easy, parsed, seed)
        rows = result_rows(facts, parsed, evidence, random.Random(f"native-order-{seed}-{k}"))
        (systems_dir / f"{prof.name}.json").write_text(
            json.dumps(rows, ensure_ascii=False) + "\n", encoding="utf-8")
        return encode(facts)

    write_systems(out, make_profiles(systems, seed), g_encoded, len(gold), write_one, say)
    return {"out": str(out), "docs": len(parsed), "systems": systems, "seed": seed,
            "true_instances": len(gold)}
