"""Tests of the demo-world generator: determinism, gold consistency, KB files, truth."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from syntok import segmenter

from kbpo.core import schema
from kbpo.demo.world import generate as demo_world
from kbpo.demo.world.common import SCHEMES
from kbpo.demo.world.truth import scheme_probabilities

DOCS, SYSTEMS, SEED = 120, 8, 5


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("world")
    demo_world.generate(out, DOCS, SYSTEMS, SEED)
    return out


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def corpus(world: Path) -> dict[str, str]:
    return {d["id"]: d["text"] for d in _jsonl(world / "corpus.jsonl")}


@pytest.fixture(scope="module")
def gold(world: Path) -> list[dict]:
    return _jsonl(world / "gold.jsonl")


# --- determinism -----------------------------------------------------------


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_same_seed_same_bytes_other_seed_differs(tmp_path: Path) -> None:
    demo_world.generate(tmp_path / "a", 30, 5, 11)
    demo_world.generate(tmp_path / "b", 30, 5, 11)
    demo_world.generate(tmp_path / "c", 30, 5, 12)
    a, b, c = (_files(tmp_path / x) for x in "abc")
    assert a == b
    assert len(a) == 5 + 4  # corpus, gold, truth, index, 5 KB files
    assert a["corpus.jsonl"] != c["corpus.jsonl"]
    assert a["systems/sys01_baseline.kb"] != c["systems/sys01_baseline.kb"]


# --- corpus and gold ---------------------------------------------------------


def test_documents_look_like_news(corpus: dict[str, str], world: Path) -> None:
    docs = _jsonl(world / "corpus.jsonl")
    assert len(docs) == DOCS
    assert docs[0]["id"] == "NYT_DEMO_000001"
    assert all(set(d) == {"id", "title", "text", "date"} for d in docs)
    lengths = [len(t) for t in corpus.values()]
    assert 1800 <= np.median(lengths) <= 5000


def test_gold_sentences_match_syntok(corpus: dict[str, str], gold: list[dict]) -> None:
    for g in gold[:25]:
        text = corpus[g["doc"]]
        ours = [tuple(s) for s in g["sentences"]]
        theirs = [
            (s[0].offset, s[-1].offset + len(s[-1].value))
            for para in segmenter.analyze(text)
            for s in para
        ]
        assert ours == theirs, g["doc"]


def test_gold_mentions_are_exact_and_inside_one_sentence(
    corpus: dict[str, str], gold: list[dict]
) -> None:
    for g in gold:
        text = corpus[g["doc"]]
        sentences = g["sentences"]
        seen_in_sentence = set()
        for m in g["mentions"]:
            b, e = m["span"]
            assert text[b:e] == m["text"] and m["text"].strip() == m["text"]
            assert m["type"] in schema.ENTITY_TYPES
            inside = [i for i, (sb, se) in enumerate(sentences) if sb <= b and e <= se]
            assert len(inside) == 1
            # An entity is mentioned at most once per sentence.
            assert (inside[0], m["entity"]) not in seen_in_sentence
            seen_in_sentence.add((inside[0], m["entity"]))


def test_links_are_stable_per_entity(gold: list[dict]) -> None:
    links: dict[str, set] = defaultdict(set)
    for g in gold:
        for m in g["mentions"]:
            links[m["entity"]].add(m.get("link"))
    assert all(len(v) == 1 for v in links.values())
    assert any(None not in v for v in links.values())


def test_gold_relations_are_canonical_and_typed(gold: list[dict]) -> None:
    predicates: Counter[str] = Counter()
    for g in gold:
        doc = g["doc"]
        mentions = {tuple(m["span"]): m for m in g["mentions"]}
        keys = set()
        for r in g["relations"]:
            s, o, (sb, se) = tuple(r["subject"]), tuple(r["object"]), r["sentence"]
            assert s in mentions and o in mentions
            assert sb <= s[0] and s[1] <= se and sb <= o[0] and o[1] <= se
            st, ot = mentions[s]["type"], mentions[o]["type"]
            assert r["predicate"] in schema.CANONICAL[(st, ot)]
            c = schema.canonicalize((doc, *s), st, r["predicate"], (doc, *o), ot)
            assert (c.subject, c.predicate, c.object) == ((doc, *s), r["predicate"], (doc, *o))
            key = (s, o, r["predicate"])
            assert key not in keys
            keys.add(key)
            predicates[r["predicate"]] += 1
    assert len(predicates) >= 24  # the rarest may be missing in a small world


def test_every_canonical_predicate_occurs(tmp_path: Path) -> None:
    demo_world.generate(tmp_path, 300, 1, SEED)
    found = {r["predicate"] for g in _jsonl(tmp_path / "gold.jsonl") for r in g["relations"]}
    assert found == schema.CANONICAL_PREDICATES


# --- KB files, re-derived independently ------------------------------------


def _span(prov: str) -> tuple[str, int, int]:
    doc, offsets = prov.rsplit(":", 1)
    b, e = offsets.split("-")
    return doc, int(b), int(e) + 1  # inclusive end -> half-open


def _argument(mentions: list, sent: tuple[str, int, int]) -> tuple[str, int, int]:
    """The entity's one mention inside the provenance sentence."""
    inside = {
        sp for sp, _ in mentions if sp[0] == sent[0] and sent[1] <= sp[1] and sp[2] <= sent[2]
    }
    assert len(inside) == 1, sent
    return inside.pop()


def _read_kb(path: Path) -> tuple[str, list[tuple]]:
    """A tiny reference reader: canonical instances (pair key, predicate, subject id)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    run_id, types, mentions = lines[0], {}, defaultdict(list)
    relations = []
    for line in lines[1:]:
        f = line.split("\t")
        if f[1] == "type":
            types[f[0]] = f[2]
        elif f[1] in ("mention", "canonical_mention"):
            mentions[f[0]].append((_span(f[3]), f[2].strip('"')))
        elif f[1] != "link":
            relations.append(f)
    instances = []
    for subj, pred, obj, provs, conf in relations:
        assert 0.0 <= float(conf) <= 1.0
        provs = [_span(p) for p in provs.split(",")]
        sent = provs[-1]

        s_span, s_type = _argument(mentions[subj], sent), types[subj]
        if obj.startswith(":E"):
            o_span, o_type = _argument(mentions[obj], sent), types[obj]
        else:  # string filler: the first provenance is its span
            o_span = provs[0]
            o_type = (
                schema.DATE if schema.slot(schema.fold(pred)).startswith("date") else schema.TITLE
            )
        assert schema.is_known(pred), pred
        c = schema.canonicalize(s_span, s_type, pred, o_span, o_type)
        subject_id = subj if c.subject == s_span else obj
        key = f"{c.subject[0]}:{c.subject[1]}-{c.subject[2]}:{c.object[1]}-{c.object[2]}"
        instances.append((key, c.predicate, subject_id))
    return run_id, sorted(set(instances))


@pytest.fixture(scope="module")
def kbs(world: Path) -> dict[str, list[tuple]]:
    out = {}
    for path in sorted((world / "systems").glob("*.kb")):
        run_id, instances = _read_kb(path)
        assert run_id == path.stem
        out[run_id] = instances
    return out


@pytest.fixture(scope="module")
def gold_instances(gold: list[dict]) -> list[tuple]:
    out = []
    for g in gold:
        entity = {tuple(m["span"]): m["entity"] for m in g["mentions"]}
        for r in g["relations"]:
            (sb, se), (ob, oe) = r["subject"], r["object"]
            out.append((f"{g['doc']}:{sb}-{se}:{ob}-{oe}", r["predicate"], entity[(sb, se)]))
    return out


def _weights(scheme: str, instances: list[tuple]) -> list[float]:
    """Scheme probabilities computed the slow, obvious way."""
    n = len(instances)
    by_pred = Counter(p for _, p, _ in instances)
    by_subj = Counter(s for _, _, s in instances)
    if scheme == "instance":
        return [1 / n] * n
    if scheme == "predicate":
        return [1 / (len(by_pred) * by_pred[p]) for _, p, _ in instances]
    if scheme == "entity":
        return [1 / (len(by_subj) * by_subj[s]) for _, _, s in instances]
    # entity_relation: a subject uniformly, one of its predicates, one instance of the cell.
    cells = Counter((s, p) for _, p, s in instances)
    preds_of = Counter(s for s, _ in cells)
    return [1 / (len(by_subj) * preds_of[s] * cells[(s, p)]) for _, p, s in instances]


def test_truth_matches_kb_files_and_gold(world: Path, kbs: dict, gold_instances: list) -> None:
    truth = json.loads((world / "truth.json").read_text())
    assert truth["schemes"] == list(SCHEMES)
    assert truth["true_instances"] == len(gold_instances)
    gold_keys = {(k, p) for k, p, _ in gold_instances}
    assert set(truth["systems"]) == set(kbs)
    for name, instances in kbs.items():
        keys = [(k, p) for k, p, _ in instances]
        assert len(set(keys)) == len(keys)
        correct = [k in gold_keys for k in keys]
        found = {k for k in keys}
        for scheme in SCHEMES:
            t = truth["systems"][name][scheme]
            precision = sum(
                w for w, c in zip(_weights(scheme, instances), correct, strict=True) if c
            )
            recall = sum(
                w
                for w, (k, p, _) in zip(
                    _weights(scheme, gold_instances), gold_instances, strict=True
                )
                if (k, p) in found
            )
            assert t["instances"] == len(instances)
            assert t["true_instances"] == sum(correct)
            assert t["precision"] == pytest.approx(precision, abs=1e-6), (name, scheme)
            assert t["recall"] == pytest.approx(recall, abs=1e-6), (name, scheme)


def test_systems_overlap_differ_and_spread(world: Path, kbs: dict, gold_instances: list) -> None:
    gold_keys = {(k, p) for k, p, _ in gold_instances}
    true_sets = {n: {(k, p) for k, p, _ in inst} & gold_keys for n, inst in kbs.items()}
    names = sorted(true_sets)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert true_sets[a] != true_sets[b]
    # Novel true instances: found by exactly one system (the pooling-bias case).
    counts = Counter(x for s in true_sets.values() for x in s)
    novel = {n: sum(counts[x] == 1 for x in s) for n, s in true_sets.items()}
    assert sum(v > 0 for v in novel.values()) >= len(names) // 2

    def jaccard(a: set, b: set) -> float:
        return len(a & b) / len(a | b)

    baseline, outsider = names[0], names[1]
    assert outsider.endswith("_outsider")
    others = [n for n in names if n != outsider]
    outsider_overlap = max(jaccard(true_sets[outsider], true_sets[n]) for n in others)
    typical_overlap = max(
        jaccard(true_sets[baseline], true_sets[n]) for n in others if n != baseline
    )
    assert outsider_overlap < 0.5 * typical_overlap
    # Near-duplicates are near: high overlap with their source.
    index = json.loads((world / "systems" / "index.json").read_text())["systems"]
    for prof in index:
        if prof["duplicate_of"]:
            assert jaccard(true_sets[prof["name"]], true_sets[prof["duplicate_of"]]) > 0.6
    truth = json.loads((world / "truth.json").read_text())["systems"]
    precisions = [v["instance"]["precision"] for v in truth.values()]
    recalls = [v["instance"]["recall"] for v in truth.values()]
    assert min(precisions) < 0.4 and max(precisions) > 0.85
    assert max(recalls) - min(recalls) > 0.3


def test_kb_files_use_inverse_and_fine_grained_names(world: Path) -> None:
    names: Counter[str] = Counter()
    for path in (world / "systems").glob("*.kb"):
        for line in path.read_text().splitlines()[1:]:
            names[line.split("\t")[1]] += 1
    assert names["per:city_of_birth"] and names["org:top_members_employees"]
    assert any(n.startswith("gpe:") for n in names)
    assert names["link"] and names["canonical_mention"]


# --- the scheme function ------------------------------------------------------


def test_scheme_probabilities_small_example() -> None:
    pairs = np.array(["a", "b", "c", "d"])
    preds = np.array(["p", "p", "q", "p"])
    subj = np.array([1, 1, 1, 2])
    for scheme in SCHEMES:
        p = scheme_probabilities(scheme, pairs, preds, subj)
        assert p.sum() == pytest.approx(1.0)
    assert scheme_probabilities("predicate", pairs, preds, subj) == pytest.approx(
        [1 / 6, 1 / 6, 1 / 2, 1 / 6]
    )
    assert scheme_probabilities("entity", pairs, preds, subj) == pytest.approx(
        [1 / 6, 1 / 6, 1 / 6, 1 / 2]
    )
    # Subject 1 (p: 2 instances, q: 1) and subject 2 (p: 1), each with probability 1/2.
    assert scheme_probabilities("entity_relation", pairs, preds, subj) == pytest.approx(
        [1 / 8, 1 / 8, 1 / 4, 1 / 2]
    )
    with pytest.raises(ValueError):
        scheme_probabilities("nope", pairs, preds, subj)


def test_main_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert (
        demo_world.main(["--out", str(tmp_path), "--docs", "5", "--systems", "2", "--seed", "1"])
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["docs"] == 5 and (tmp_path / "systems" / "sys02_outsider.kb").exists()
