"""The real-text demo world: Re-DocRED documents, their gold, and synthetic systems that
write KB files the way real systems do, with exact scores (truth.json).

The formats are the synthetic world's (docs/reference/demo-world.md), so the same commands load,
plan, simulate and score either. What differs is the text (human-written Wikipedia
prose, tokenised; the corpus lines carry DocRED's own sentences) and the systems' habits:

- provenance is the whole sentence, so an entity mentioned twice there is resolved to
  the closest pair of mentions, exactly as ingestion does (`kbpo.core.gold.closest_pair`);
- some relations are written in the inverse direction (`per:parents` for a gold
  `per:children`, `org:founded_by` for `per:organizations_founded`), as systems do;
- a few lines are invalid (a mention whose text does not match its offsets, provenance
  across two sentences, an unknown predicate): submitted with drop-invalid, they are
  dropped and change nothing else.

truth.json is computed from what ingestion keeps of each file (the valid lines, their
instances resolved and canonicalized as ingestion does), with `truth.system_scores`,
never with the estimators. Pure Python + numpy, deterministic for a seed.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist

import numpy as np

from kbpo.core import schema
from kbpo.core.docred import Counts, detokenize, docred_doc_id, docred_gold
from kbpo.core.gold import closest_pair

from .common import PRED_CODE, PREDICATES, Progress
from .systems_out import Encoded, fresh_systems_dir, write_systems

FAMILY = frozenset(schema.CANONICAL[(schema.PER, schema.PER)])
INVERSE_SHARE = 0.3     # relations a system writes in the inverse direction
BAD_LINES = 3           # invalid lines per system, one of each kind
Key = tuple[str, int, int, int, int, str]  # doc, canonical spans, canonical predicate


@dataclass
class Doc:
    """One document: its text, sentences, gold entities and the mentions per sentence."""

    doc_id: str
    text: str
    sentences: list[tuple[int, int]]
    etype: dict[str, str] = field(default_factory=dict)            # entity -> KBP type
    spans: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # entity -> spans
    by_sentence: dict[int, dict[str, list[tuple[int, int]]]] = field(default_factory=dict)

    def sentence_of(self, span: tuple[int, int]) -> int:
        return next(i for i, (b, e) in enumerate(self.sentences)
                    if b <= span[0] and span[1] <= e)


@dataclass(frozen=True)
class Profile:
    name: str
    role: str
    recall: float
    target_precision: float


@dataclass(frozen=True)
class Line:
    """A relation a system states: subject entity, predicate, object entity, sentence."""

    doc: int
    subject: str
    predicate: str
    object: str
    sentence: int
    confidence: float


def load_source(path: Path) -> list[dict]:
    """The DocRED / Re-DocRED JSON list; ValueError naming the problem otherwise."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable DocRED JSON file ({exc})") from exc
    if not isinstance(data, list) or not data:
        raise ValueError(f"{path}: expected a non-empty JSON list of DocRED documents")
    return data


def build_documents(records: list[dict], docs: int, seed: int
                    ) -> tuple[list[Doc], list[dict], list[dict], Counts]:
    """Pick `docs` documents (seeded) and map them: Doc objects, corpus and gold lines."""
    rng = random.Random(seed)
    chosen = sorted(rng.sample(range(len(records)), min(docs, len(records))))
    counts = Counts()
    seen: set[str] = set()
    out_docs, corpus, gold = [], [], []
    for i in chosen:
        rec = records[i]
        if not (isinstance(rec, dict) and isinstance(rec.get("sents"), list)
                and isinstance(rec.get("vertexSet"), list)):
            counts.note(f"document [{i}]: not a DocRED record; skipped")
            continue
        doc_id = docred_doc_id(str(rec.get("title", "")), "DOCRED_")
        while doc_id in seen:
            doc_id += "_"
        seen.add(doc_id)
        text, offsets = detokenize(rec["sents"])
        mentions, relations = docred_gold(doc_id, rec, offsets, counts, i)
        sentences = [(spans[0][0], spans[-1][1]) for spans in offsets if spans]
        doc = Doc(doc_id, text, sentences)
        for m in mentions:
            doc.etype[m.entity] = m.type
            doc.spans.setdefault(m.entity, []).append((m.begin, m.end))
            sid = doc.sentence_of((m.begin, m.end))
            doc.by_sentence.setdefault(sid, {}).setdefault(m.entity, []).append(
                (m.begin, m.end))
        out_docs.append(doc)
        corpus.append({"id": doc_id, "title": rec.get("title", ""), "text": text,
                       "sentences": [list(s) for s in sentences]})
        gold.append({
            "doc": doc_id, "sentences": [list(s) for s in sentences],
            "mentions": [{"id": f"m{k + 1}", "span": [m.begin, m.end], "type": m.type,
                          "entity": m.entity, "text": text[m.begin:m.end]}
                         for k, m in enumerate(mentions)],
            "relations": [{"subject": list(r.subject), "object": list(r.object),
                           "predicate": r.predicate,
                           "sentence": list(sentences[doc.sentence_of(r.subject)])}
                          for r in relations]})
    return out_docs, corpus, gold, counts


def resolve(doc: Doc, line: Line) -> Key | None:
    """The instance ingestion stores for a line with whole-sentence provenance: the
    closest mention pair in the sentence, canonicalized. None if the types do not fit."""
    ms = doc.by_sentence.get(line.sentence, {})
    s_span, o_span = closest_pair(ms[line.subject], ms[line.object])
    try:
        c = schema.canonicalize((doc.doc_id, *s_span), doc.etype[line.subject], line.predicate,
                                (doc.doc_id, *o_span), doc.etype[line.object])
    except ValueError:
        return None
    return (doc.doc_id, c.subject[1], c.subject[2], c.object[1], c.object[2], c.predicate)


def conflicting(p1: str, p2: str, stype: str, otype: str) -> bool:
    """Two canonical predicates ingestion refuses on one pair (CONFLICTING_RELATIONS)."""
    if p1 == p2 or stype != otype:
        return False
    return schema.inverse(p1, stype, otype) == p2 or (p1 in FAMILY and p2 in FAMILY)


def make_profiles(systems: int, seed: int) -> list[Profile]:
    """Recall from low to high, precision varied independently; the first is a baseline."""
    rng = random.Random(f"profiles-{seed}")
    out = []
    for k in range(systems):
        recall = 0.25 + 0.5 * (k / max(1, systems - 1))
        precision = round(rng.uniform(0.45, 0.9), 2)
        role = "baseline" if k == 0 else "system"
        out.append(Profile(f"docred_sys_{k + 1}", role, round(recall, 2), precision))
    return out


class SystemWriter:
    """Chooses one system's relations and writes its KB file."""

    def __init__(self, docs: list[Doc], gold: set[Key], universe: list[tuple[int, str, str, int]],
                 seed: int) -> None:
        self.docs = docs
        self.gold = gold
        self.universe = universe   # (doc, entity a, entity b, sentence), a < b
        self.seed = seed

    def choose(self, profile: Profile, k: int, gold_lines: list[Line], easy: np.ndarray
               ) -> tuple[list[Line], dict[Key, float]]:
        """The valid relation lines of system k and the instances they produce."""
        rng = random.Random(f"{self.seed}-{k}")
        noise = np.random.default_rng([self.seed, 100 + k]).standard_normal(len(gold_lines))
        threshold = NormalDist().inv_cdf(profile.recall)
        lines: list[Line] = []
        kept: dict[Key, float] = {}
        by_pair: dict[tuple, list[str]] = {}

        def add(line: Line) -> bool:
            key = resolve(self.docs[line.doc], line)
            if key is None or key in kept:
                return False
            pair = key[:5]
            types = (self.docs[line.doc].etype[line.subject],
                     self.docs[line.doc].etype[line.object])
            st, ot = sorted(types, key=schema.TYPE_RANK.__getitem__)
            if any(conflicting(key[5], p, st, ot) for p in by_pair.get(pair, ())):
                return False
            by_pair.setdefault(pair, []).append(key[5])
            kept[key] = line.confidence
            lines.append(line)
            return True

        for g, line in enumerate(gold_lines):
            if math.sqrt(0.5) * easy[g] + math.sqrt(0.5) * noise[g] < threshold:
                conf = round(rng.uniform(0.5, 1.0), 3)
                add(self._maybe_inverse(rng, Line(line.doc, line.subject, line.predicate,
                                                  line.object, line.sentence, conf)))
        n_true = sum(1 for key in kept if key in self.gold)
        want_false = round(n_true * (1 - profile.target_precision) / profile.target_precision)
        tries = 0
        while want_false > 0 and tries < 50 * (want_false + 10) and self.universe:
            tries += 1
            d, a, b, sid = self.universe[rng.randrange(len(self.universe))]
            doc = self.docs[d]
            st, ot = sorted((doc.etype[a], doc.etype[b]), key=schema.TYPE_RANK.__getitem__)
            subj, obj = (a, b) if doc.etype[a] == st else (b, a)
            options = schema.predicates_for(st, ot)
            if not options:
                continue
            line = Line(d, subj, rng.choice(options), obj, sid, round(rng.uniform(0.1, 0.9), 3))
            key = resolve(doc, line)
            if key is None or key in self.gold or key in kept:
                continue
            if add(self._maybe_inverse(rng, line)):
                want_false -= 1
        return lines, kept

    def _maybe_inverse(self, rng: random.Random, line: Line) -> Line:
        doc = self.docs[line.doc]
        inv = schema.inverse(line.predicate, doc.etype[line.subject], doc.etype[line.object])
        if inv is None or rng.random() >= INVERSE_SHARE:
            return line
        return Line(line.doc, line.object, inv, line.subject, line.sentence, line.confidence)

    def write(self, path: Path, profile: Profile, lines: list[Line], k: int) -> None:
        """The KB file: entity blocks, relation lines, and BAD_LINES invalid lines."""
        rng = random.Random(f"bad-{self.seed}-{k}")
        nodes: dict[tuple[int, str], str] = {}
        for line in lines:
            for ent in (line.subject, line.object):
                nodes.setdefault((line.doc, ent), f":D{line.doc}_{ent}")
        out = [f"{profile.name}_run"]
        for (d, ent), node in sorted(nodes.items()):
            doc = self.docs[d]
            out.append(f"{node}\ttype\t{doc.etype[ent]}")
            spans = sorted(doc.spans[ent])
            head = max(spans, key=lambda s: (s[1] - s[0], -s[0]))
            for b, e in spans:
                kind = "canonical_mention" if (b, e) == head else "mention"
                out.append(f"{node}\t{kind}\t{_quote(doc.text[b:e])}\t"
                           f"{doc.doc_id}:{b}-{e - 1}")
        for line in lines:
            doc = self.docs[line.doc]
            sb, se = doc.sentences[line.sentence]
            out.append(f"{nodes[(line.doc, line.subject)]}\t{line.predicate}\t"
                       f"{nodes[(line.doc, line.object)]}\t{doc.doc_id}:{sb}-{se - 1}\t"
                       f"{line.confidence}")
        out.extend(self._bad_lines(rng, lines, nodes))
        path.write_text("\n".join(out) + "\n", encoding="utf-8")

    def _bad_lines(self, rng: random.Random, lines: list[Line],
                   nodes: dict[tuple[int, str], str]) -> list[str]:
        """Invalid lines that, dropped, leave every other line's meaning as it was."""
        if not lines:
            return []
        line = lines[rng.randrange(len(lines))]
        doc = self.docs[line.doc]
        subj, obj = nodes[(line.doc, line.subject)], nodes[(line.doc, line.object)]
        b, e = doc.spans[line.subject][0]
        bad = [
            # offsets one character off (a byte/character confusion)
            f"{subj}\tmention\t{_quote(doc.text[b:e])}\t{doc.doc_id}:{b + 1}-{e - 1}",
            # a predicate outside the schema
            f"{subj}\tper:favourite_colour\t{obj}\t{doc.doc_id}:{b}-{e - 1}\t0.5",
        ]
        if len(doc.sentences) > 1:  # provenance spanning two sentences
            s2 = (line.sentence + 1) % len(doc.sentences)
            first, last = sorted((doc.sentences[line.sentence], doc.sentences[s2]))
            bad.append(f"{subj}\t{line.predicate}\t{obj}\t{doc.doc_id}:{first[0]}-"
                       f"{last[1] - 1}\t0.4")
        return bad[:BAD_LINES]


def _quote(text: str) -> str:
    """A TAC string: double quotes with backslash escapes."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def gold_lines_of(docs: list[Doc], gold: list[dict]) -> tuple[list[Line], set[Key]]:
    """Every gold instance as a line with its sentence, and the set of gold keys."""
    lines, keys = [], set()
    for d, (doc, g) in enumerate(zip(docs, gold, strict=True)):
        entity = {tuple(m["span"]): m["entity"] for m in g["mentions"]}
        for r in g["relations"]:
            s, o = tuple(r["subject"]), tuple(r["object"])
            keys.add((doc.doc_id, *s, *o, r["predicate"]))
            lines.append(Line(d, entity[s], r["predicate"], entity[o], doc.sentence_of(s), 1.0))
    return lines, keys


def universe_of(docs: list[Doc]) -> list[tuple[int, str, str, int]]:
    """Every (document, entity, entity, sentence) whose types some predicate relates."""
    out = []
    for d, doc in enumerate(docs):
        for sid in sorted(doc.by_sentence):
            ents = sorted(doc.by_sentence[sid])
            for i, a in enumerate(ents):
                for b in ents[i + 1:]:
                    if schema.pair_types_compatible(doc.etype[a], doc.etype[b]):
                        out.append((d, a, b, sid))
    return out


def generate(source: Path, out_dir: Path, docs: int, systems: int, seed: int,
             progress: Progress | None = None) -> dict:
    """Write corpus.jsonl, gold.jsonl, systems/*.kb, systems/index.json and truth.json."""
    out_dir = Path(out_dir)
    systems_dir = fresh_systems_dir(out_dir, docs, systems, ".kb")
    say = progress or (lambda stage, done, total: None)
    documents, corpus, gold, counts = build_documents(load_source(source), docs, seed)
    _write_jsonl(out_dir / "corpus.jsonl", corpus)
    _write_jsonl(out_dir / "gold.jsonl", gold)
    say("documents", len(documents), len(documents))

    gold_lines, gold_keys = gold_lines_of(documents, gold)
    ordered = sorted(gold_keys)
    pair_ids: dict[tuple, int] = {}
    entity_ids: dict[tuple[str, str], int] = {}
    subject_of = {(doc.doc_id, *span): ent for doc in documents
                  for ent, spans in doc.spans.items() for span in spans}

    def encode(keys: Iterable[Key]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        pairs, preds, subjects = [], [], []
        for key in keys:
            pairs.append(pair_ids.setdefault(key[:5], len(pair_ids)))
            preds.append(PRED_CODE[key[5]])
            subj = (key[0], subject_of[key[:3]])
            subjects.append(entity_ids.setdefault(subj, len(entity_ids)))
        p, r = np.asarray(pairs, dtype=np.int64), np.asarray(preds, dtype=np.int64)
        return p * len(PREDICATES) + r, p, r, np.asarray(subjects, dtype=np.int64)

    g_encoded = encode(ordered)
    easy = np.random.default_rng([seed, 1]).standard_normal(len(gold_lines))
    writer = SystemWriter(documents, gold_keys, universe_of(documents), seed)

    def write_one(k: int, prof: Profile) -> Encoded:
        lines, kept = writer.choose(prof, k, gold_lines, easy)
        writer.write(systems_dir / f"{prof.name}.kb", prof, lines, k)
        return encode(sorted(kept))

    write_systems(out_dir, make_profiles(systems, seed), g_encoded, len(ordered), write_one,
                  say)
    return {"out": str(out_dir), "docs": len(documents), "systems": systems, "seed": seed,
            "mentions": sum(len(g["mentions"]) for g in gold),
            "true_instances": len(ordered), "labels_read": counts.labels,
            "labels_mapped": counts.labels_mapped,
            "labels_skipped": dict(counts.skipped_labels)}


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
