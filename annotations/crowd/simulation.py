"""A simulated crowd answering from a gold key: the demo world's gold.jsonl, or a DocRED
file's labels (recognised by content: a JSON list), keyed by the head and tail anchors
a DocRED corpus stores its pairs on (`kbpo.core.docred_docs`).

Pure Python (no Django): the `simulate_crowd` command feeds these answers through the
same intake code as real workers' answers.

Workers differ: each honest worker's accuracy is drawn around `1 - error_rate`; a few
spammers answer uniformly at random. A wrong answer is a uniformly chosen wrong option
among those the interface offers for the pair's types, so errors look like real ones.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from kbpo.core.docred_docs import DocredProblem, parse_document
from kbpo.core.gold import GoldProblem, canonical_relations
from kbpo.core.jsonlist import JsonListError, iter_list

NO_RELATION = "no_relation"
PairSpans = tuple[str, int, int, int, int]  # doc id, subject begin/end, object begin/end


@dataclass(frozen=True)
class SimWorker:
    worker_id: str
    accuracy: float
    spammer: bool
    # Per relation (`load_confusion`): P(naming it on a pair holding none whose question
    # offers it) and P(answering none on a pair holding it). Empty: the plain coin.
    yes: dict[str, float] = field(default_factory=dict, hash=False)
    miss: dict[str, float] = field(default_factory=dict, hash=False)


def make_pool(n_workers: int, error_rate: float, seed: int,
              spammer_fraction: float = 0.1) -> list[SimWorker]:
    """A deterministic pool: honest accuracies ~ 1 - error_rate ± min(0.05, error_rate / 2),
    some spammers. The spread shrinks with the error rate so that a perfect crowd
    (error_rate 0) is exactly perfect: with a fixed spread half its workers would err."""
    if n_workers < 1:
        raise ValueError("the pool needs at least one worker")
    if not 0.0 <= error_rate < 1.0:
        raise ValueError("error rate must be in [0, 1)")
    rng = random.Random(seed)
    n_spam = min(n_workers - 1, round(n_workers * spammer_fraction)) if n_workers > 3 else 0
    pool = []
    for i in range(n_workers):
        spammer = i >= n_workers - n_spam
        acc = min(1.0, max(0.0, rng.gauss(1.0 - error_rate, min(0.05, error_rate / 2))))
        pool.append(SimWorker(f"sim-{i:03d}", 0.0 if spammer else acc, spammer))
    return pool


class GoldKey:
    """The true predicates of every gold mention pair, read from gold.jsonl.

    Relations are canonicalized exactly as ingestion canonicalizes submissions
    (`kbpo.core.gold`): gold may state a fact in either direction or with an inverse or
    fine-grained predicate, and the crowd still answers for the pair it is shown.
    """

    def __init__(self, relations: dict[PairSpans, frozenset[str]],
                 mentions: dict[str, list[dict]]) -> None:
        self.relations = relations
        self.mentions = mentions

    @classmethod
    def load(cls, path: Path) -> GoldKey:
        with open(path, "rb") as fh:
            head = fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
        if head.startswith(b"["):
            return cls.load_docred(path)
        relations: dict[PairSpans, set[str]] = {}
        mentions: dict[str, list[dict]] = {}
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                    doc_id = doc["doc"]
                    mentions[doc_id] = doc.get("mentions", [])
                    types = {tuple(m["span"]): m["type"] for m in mentions[doc_id]}
                    stated = [(tuple(r["subject"]), r["predicate"], tuple(r["object"]))
                              for r in doc.get("relations", [])]
                    for pair, preds in canonical_relations(doc_id, types, stated).items():
                        relations.setdefault((doc_id, *pair), set()).update(preds)
                except GoldProblem as exc:
                    raise ValueError(f"{path}: line {number}: {exc}") from exc
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"{path}: line {number}: not a gold.jsonl record "
                                     f"({exc}); see docs/reference/demo-world.md") from exc
        return cls({k: frozenset(v) for k, v in relations.items()}, mentions)

    @classmethod
    def load_docred(cls, path: Path) -> GoldKey:
        """A DocRED file's labels: each (h, t, r) a relation of the pair (head anchor, tail
        anchor) of the document as `load_corpus --format docred` stores it."""
        relations: dict[PairSpans, set[str]] = {}
        mentions: dict[str, list[dict]] = {}
        seen: Counter = Counter()
        try:
            for where, rec in iter_list(path.read_text(encoding="utf-8"), "document"):
                doc = parse_document(where, rec, seen)
                n = len(doc.entities)
                for k, label in enumerate(doc.labels):
                    h, t, r = (label.get(x) if isinstance(label, dict) else None
                               for x in ("h", "t", "r"))
                    if not (isinstance(h, int) and isinstance(t, int) and 0 <= h < n
                            and 0 <= t < n and h != t and isinstance(r, str)):
                        raise ValueError(f"{path}: {where.path}.labels[{k}]: needs entity "
                                         f"indices h != t in 0..{n - 1} and a relation r")
                    ha, ta = doc.entities[h].anchor, doc.entities[t].anchor
                    relations.setdefault((doc.doc_id, *ha, *ta), set()).add(r)
                # Every mention of every entity, as the gold import stores them: the
                # exhaustive simulation knows which documents the file holds.
                mentions[doc.doc_id] = [
                    {"span": [b, end], "type": e.type, "entity": f"E{e.index}"}
                    for e in doc.entities for _, b, end in e.mentions]
        except (JsonListError, DocredProblem, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: {exc}") from exc
        return cls({k: frozenset(v) for k, v in relations.items()}, mentions)

    def truth(self, pair: PairSpans) -> frozenset[str]:
        """The gold predicates of a canonical pair, or {no_relation}."""
        return self.relations.get(pair) or frozenset({NO_RELATION})


def _rng(seed: int, *parts: object) -> random.Random:
    digest = hashlib.sha256(repr((seed, *parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def simulate_answer(worker: SimWorker, truth: frozenset[str], options: list[str],
                    seed: int, question_id: int, cap: int | None = None) -> list[str]:
    """One worker's answer to one relation question (deterministic per seed/question).

    `cap`: the most relations the page lets an answer mark (KBPO_MAX_RELATIONS_PER_ANSWER);
    a right answer to a pair with more true relations marks the first `cap` of them.
    """
    rng = _rng(seed, worker.worker_id, question_id)
    choices = sorted(set(options) | {NO_RELATION})
    if worker.spammer:
        return [rng.choice(choices)]
    # The worker's own confusion first; a rate of 0 draws nothing, so a worker without
    # one answers exactly as before.
    if truth == {NO_RELATION}:
        for r in choices:
            if worker.yes.get(r, 0.0) > 0 and rng.random() < worker.yes[r]:
                return [r]
    else:
        kept = [t for t in sorted(truth)
                if not (worker.miss.get(t, 0.0) > 0 and rng.random() < worker.miss[t])]
        if len(kept) < len(truth):
            return kept[:cap] or [NO_RELATION]
    if rng.random() < worker.accuracy:
        return sorted(truth)[:cap]
    wrong = [c for c in choices if c not in truth]
    return [rng.choice(wrong)] if wrong else sorted(truth)


class ConfusionProblem(ValueError):
    """A --confusion file that is not of the documented form."""


def load_confusion(path: Path, pool: list[SimWorker]) -> list[SimWorker]:
    """``pool`` with each honest worker's confusion from a JSON file of the form
    ``{"default": {"yes": {relation: rate}, "miss": {relation: rate}},
    "workers": {worker_id: {"yes": {...}, "miss": {...}}}}`` (every key optional): a
    worker listed takes its own rates over the default's, relation by relation.
    Spammers keep answering at random (docs/operators/crowd.md)."""
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfusionProblem(f"--confusion {path}: {exc}") from exc
    if not isinstance(spec, dict) or set(spec) - {"default", "workers"}:
        raise ConfusionProblem(f"--confusion {path}: expected an object with 'default' "
                               "and/or 'workers'")
    ids = {w.worker_id for w in pool}
    workers = spec.get("workers", {})
    if not isinstance(workers, dict) or set(workers) - ids:
        raise ConfusionProblem(f"--confusion {path}: 'workers' must map worker ids of the "
                               f"pool ({min(ids)}..{max(ids)}) to rates")

    def rates(entry: object, where: str) -> dict[str, dict[str, float]]:
        if not isinstance(entry, dict) or set(entry) - {"yes", "miss"}:
            raise ConfusionProblem(f"--confusion {path}: {where}: expected 'yes'/'miss'")
        out = {}
        for kind in ("yes", "miss"):
            table = entry.get(kind, {})
            if not isinstance(table, dict) or not all(
                    isinstance(v, int | float) and 0 <= v <= 1 for v in table.values()):
                raise ConfusionProblem(f"--confusion {path}: {where}.{kind}: relation → "
                                       "rate in [0, 1]")
            out[kind] = {str(k): float(v) for k, v in table.items()}
        return out

    base = rates(spec.get("default", {}), "default")
    out = []
    for w in pool:
        own = rates(workers.get(w.worker_id, {}), w.worker_id)
        out.append(w if w.spammer else replace(
            w, yes={**base["yes"], **own["yes"]}, miss={**base["miss"], **own["miss"]}))
    return out


def assign_workers(pool: list[SimWorker], k: int, seed: int, question_id: int,
                   exclude: set[str] | frozenset[str] = frozenset()) -> Iterator[SimWorker]:
    """k distinct workers for a question, never one who already answered it."""
    candidates = [w for w in pool if w.worker_id not in exclude]
    _rng(seed, "assign", question_id).shuffle(candidates)
    yield from candidates[:k]
