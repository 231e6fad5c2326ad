"""The real-text world on DocRED's own terms: a Re-DocRED (or DocRED) file as a DocRED
corpus with its 96 relations, systems that write the DocRED result format, and their
exact scores (truth.json) against the file's labels as complete gold: the world of
issue 37's figures (docs/internals/docred-coverage.md).

Pure Python + numpy, like the rest of the world (no Django, no estimation code):

    DIR/docs.json            the chosen documents, as the source has them (load_corpus
                             --format docred, import_gold --format docred and
                             simulate_crowd --gold all read this one file)
    DIR/systems/NAME.json    K systems' predictions, DocRED result format
    DIR/systems/index.json   each system's profile
    DIR/truth.json           exact precision / recall / F1 per system and scheme

An instance is a (document, head entity, tail entity, relation) fact; the entity
scheme's subject is the head entity within its document. The systems, as published
systems are:

- easy facts first: a system finds a gold fact when its score passes the system's
  recall quantile; the score is the fact's ease (higher for intra-sentence facts and
  frequent relations, the same for every system: a Gaussian copula) plus noise;
- teams: systems of a team share half their noise and half their false facts;
- a near copy: the last system keeps ~93% of the one before it and replaces the rest;
- false facts on the documents' own entities, up to the target precision: reversed true
  pairs (t, h, r), other relations on true pairs, other entity pairs (relations the
  pair's types usually take).

Every prediction is valid, so every one is accepted.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Set as AbstractSet
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
    correlation: float = 0.6  # weight of the facts' shared ease in finding them
    team: str = ""  # a team's systems share a base of found and of false facts
    copy_of: str = ""  # a near copy: that system's facts, a few replaced


TEAM_SHARE = 0.5  # share of a member's non-ease variance, and of its false facts, common
COPY_KEEP = 0.93  # share of the original's facts a near copy keeps
# A false fact's kind: the reverse (t, h, r) of a true (h, t, r); another relation on a
# true pair; any other pair of the document's entities.
FALSE_MIX = (("reversed", 0.3), ("relation", 0.2), ("pair", 0.5))


def make_profiles(systems: int, seed: int) -> list[NativeProfile]:
    """Recall spread from 0.25 to 0.75, precision drawn in 0.45–0.9; teams of two in
    order; with three systems or more the last is a near copy of the one before it (its
    recall and precision are the original's)."""
    rng = random.Random(f"native-profiles-{seed}")
    out: list[NativeProfile] = []
    for k in range(systems):
        name = f"docred_sys_{k + 1}"
        recall = round(0.25 + 0.5 * k / max(1, systems - 1), 2)
        precision = round(rng.uniform(0.45, 0.9), 2)
        if systems >= 3 and k == systems - 1:
            base = out[-1]
            out.append(NativeProfile(name, base.recall, base.target_precision,
                                     team=base.team, copy_of=base.name))
        else:
            out.append(NativeProfile(name, recall, precision, team=f"team_{k // 2 + 1}"))
    return out


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


def intra_sentence(doc: DocredDocument, h: int, t: int) -> bool:
    """Whether some sentence mentions both entities."""
    return bool({m[0] for m in doc.entities[h].mentions}
                & {m[0] for m in doc.entities[t].mentions})


def ease(gold: list[Fact], docs: list[DocredDocument], seed: int) -> np.ndarray:
    """Each gold fact's ease, standard normal: intra-sentence facts and facts of frequent
    relations are found more often, by every system (what document-level extractors
    show: cross-sentence facts and rare relations are where they fail)."""
    n = len(gold)
    if n == 0:
        return np.zeros(0)
    intra = np.asarray([intra_sentence(docs[i], h, t) for i, h, t, _ in gold], float)
    counts = Counter(f[3] for f in gold)
    freq = np.log(np.asarray([counts[f[3]] for f in gold], float))

    def z(x: np.ndarray) -> np.ndarray:
        sd = x.std()
        return (x - x.mean()) / sd if sd > 0 else np.zeros_like(x)

    raw = (0.6 * z(intra) + 0.4 * z(freq)
           + 0.7 * np.random.default_rng([seed, 1]).standard_normal(n))
    # Normal scores of the ranks: exactly N(0, 1) margins, so a profile's recall holds.
    rank = np.argsort(np.argsort(raw, kind="stable"), kind="stable")
    dist = NormalDist()
    return np.asarray([dist.inv_cdf((r + 0.5) / n) for r in rank.tolist()])


class _FalseFacts:
    """False facts on the world's documents, drawn by kind (FALSE_MIX); never gold."""

    def __init__(self, docs: list[DocredDocument], gold: list[Fact]) -> None:
        self.docs = docs
        self.gold = set(gold)
        self.schema = get_schema(DOCRED)
        self.ids = list(self.schema.relations)
        self.reversed = [(i, t, h, r) for i, h, t, r in gold if (i, t, h, r) not in self.gold]

    def _usual(self, i: int, h: int, t: int, rng: random.Random) -> str:
        ents = self.docs[i].entities
        usual = [r.id for r in self.schema.candidates(ents[h].type, ents[t].type)]
        return rng.choice(usual or self.ids)

    def draw(self, want: int, found: list[Fact], rng: random.Random,
             avoid: AbstractSet[Fact] = frozenset()) -> list[Fact]:
        """`want` false facts: reversals of the facts this system found (direction is
        what it confuses; of any true fact when it found none), other relations on true
        pairs and other entity pairs, in FALSE_MIX's shares; none in `avoid`."""
        reversals = [(i, t, h, r) for i, h, t, r in found if (i, t, h, r) not in self.gold]
        if not reversals:
            reversals = self.reversed
        true_pairs = sorted({f[:3] for f in (found or list(self.gold))})
        out: dict[Fact, None] = {}
        tries = 0
        while len(out) < want and tries < 50 * want + 100:
            tries += 1
            kind = rng.choices([k for k, _ in FALSE_MIX], [w for _, w in FALSE_MIX])[0]
            if kind == "reversed" and reversals:
                fact = rng.choice(reversals)
            elif kind == "relation" and true_pairs:
                i, h, t = rng.choice(true_pairs)
                fact = (i, h, t, self._usual(i, h, t, rng))
            else:
                i = rng.randrange(len(self.docs))
                if len(self.docs[i].entities) < 2:
                    continue
                h, t = rng.sample(range(len(self.docs[i].entities)), 2)
                fact = (i, h, t, self._usual(i, h, t, rng))
            if fact not in self.gold and fact not in avoid:
                out[fact] = None
        return list(out)


def _n_false(true: int, precision: float) -> int:
    return round(true * (1 - precision) / precision)


def systems_facts(profiles: list[NativeProfile], gold: list[Fact], docs: list[DocredDocument],
                  seed: int) -> list[list[Fact]]:
    """Every system's facts (found gold and false ones), sorted, in profile order.

    A gold fact is found when its score, the shared ease (weight `correlation`) plus a
    noise that team members share in part (TEAM_SHARE), passes the system's recall
    quantile. A team's members draw TEAM_SHARE of their false facts from one team pool
    (the same facts, in the same order) and the rest alone. A near copy keeps COPY_KEEP
    of the original's facts and replaces the others with facts of its own at the
    original's precision.
    """
    easy = ease(gold, docs, seed)
    false = _FalseFacts(docs, gold)
    teams = sorted({p.team for p in profiles if p.team})
    team_noise = {team: np.random.default_rng([seed, 3, n]).standard_normal(len(gold))
                  for n, team in enumerate(teams)}
    dist = NormalDist()
    out: list[list[Fact]] = []
    by_name: dict[str, list[Fact]] = {}
    team_pools: dict[str, list[Fact]] = {}
    for k, prof in enumerate(profiles):
        own = np.random.default_rng([seed, 2, k]).standard_normal(len(gold))
        shared = team_noise.get(prof.team, own)
        w = TEAM_SHARE if prof.team else 0.0
        noise = w ** 0.5 * shared + (1 - w) ** 0.5 * own
        c = prof.correlation
        score = c * easy + (1 - c * c) ** 0.5 * noise
        rng = random.Random(f"native-false-{seed}-{k}")
        if prof.copy_of:
            facts = _near_copy(by_name[prof.copy_of], prof, gold, score, false, rng)
        else:
            cut = dist.inv_cdf(min(max(1 - prof.recall, 1e-12), 1 - 1e-12))
            found = [f for f, s in zip(gold, score.tolist(), strict=True) if s > cut]
            n_false = _n_false(len(found), prof.target_precision)
            n_shared = round(TEAM_SHARE * n_false) if prof.team else 0
            pool = team_pools.setdefault(prof.team, [])
            if len(pool) < n_shared:
                pool.extend(false.draw(n_shared - len(pool), found,
                                       random.Random(f"native-team-{seed}-{prof.team}-{k}"),
                                       avoid=set(pool)))
            common = pool[:n_shared]
            alone = false.draw(n_false - len(common), found, rng, avoid=set(common))
            facts = sorted(set(found) | set(common) | set(alone))
        by_name[prof.name] = facts
        out.append(facts)
    return out


def _near_copy(base: list[Fact], prof: NativeProfile, gold: list[Fact], score: np.ndarray,
               false: _FalseFacts, rng: random.Random) -> list[Fact]:
    """The original's facts, each kept with chance COPY_KEEP; the dropped ones replaced by
    as many others, true ones (the copy's easiest gold it lacks) at the original's
    precision."""
    kept = [f for f in base if rng.random() < COPY_KEEP]
    dropped = len(base) - len(kept)
    have = set(kept) | set(base)
    n_true = round(dropped * prof.target_precision)
    order = np.argsort(-score, kind="stable")
    new_true = [gold[j] for j in order.tolist() if gold[j] not in have][:n_true]
    new_false = false.draw(dropped - len(new_true), [f for f in kept if f in false.gold], rng,
                           avoid=have)
    return sorted(set(kept) | set(new_true) | set(new_false))


def world_facts(docs: list[DocredDocument], systems: int, seed: int
                ) -> tuple[list[NativeProfile], list[Fact], list[list[Fact]]]:
    """The profiles, the gold and every system's facts of a world over `docs`."""
    gold = gold_facts(docs, frozenset(get_schema(DOCRED).relations))
    profiles = make_profiles(systems, seed)
    return profiles, gold, systems_facts(profiles, gold, docs, seed)


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
    profiles, gold, all_facts = world_facts(parsed, systems, seed)
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

    def write_one(k: int, prof: NativeProfile) -> Encoded:
        facts = all_facts[k]
        rows = result_rows(facts, parsed, evidence, random.Random(f"native-order-{seed}-{k}"))
        (systems_dir / f"{prof.name}.json").write_text(
            json.dumps(rows, ensure_ascii=False) + "\n", encoding="utf-8")
        return encode(facts)

    write_systems(out, profiles, g_encoded, len(gold), write_one, say)
    return {"out": str(out), "docs": len(parsed), "systems": systems, "seed": seed,
            "true_instances": len(gold)}
