"""Recall from imported exhaustive gold on the demo world, and lenient matching."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from annotations.exhaustive.gold import import_kbpo
from annotations.models import ExhaustiveDocument, ExhaustiveStage, GoldRelation
from estimation.core import estimate, prepare_evidence
from estimation.data import PREDICATE_CODE, load_corpus_data, load_exhaustive, system_name
from kbpo.core.corpus import load_corpus
from kbpo.core.models import Corpus, Document
from submissions.models import RelationInstance, State
from submissions.processing import run_ingestion
from submissions.services import create_submission
from tests.factories import make_corpus, make_pair, make_submission, make_user, span
from tests.stat_checks import assert_coverage, assert_unbiased

# 600 trials, one interval each (120 per system): the coverage band is 0.9 ± 0.040.
TRIALS, N0, DRAWS = 600, 150, 120
KINDS = ("simple", "joint")
UNDRAWN = "sys02_outsider"


@pytest.fixture
def demo(db, world: Path, settings, tmp_path: Path) -> tuple[Corpus, dict, dict[str, int]]:
    settings.MEDIA_ROOT = tmp_path / "media"
    load_corpus("rec", world / "corpus.jsonl", workers=1)
    corpus = Corpus.objects.get(tag="rec")
    owner = make_user("team")
    subs: dict[str, int] = {}
    for kb in sorted((world / "systems").glob("*.kb")):
        with open(kb, "rb") as fh:
            sub = create_submission(owner=owner, corpus=corpus, name=kb.stem, file=fh,
                                    original_name=kb.name, compressed=False,
                                    enforce_limits=False)
        run_ingestion(sub.pk)  # the test transaction never commits, so run it here
        sub.refresh_from_db()
        assert sub.state == State.INGESTED, sub.report
        subs[kb.stem] = sub.pk
    truth = json.loads((world / "truth.json").read_text())
    return corpus, truth, subs


def test_demo_world_import_counts_and_exact_recall(demo, world: Path) -> None:
    corpus, truth, subs = demo
    report = import_kbpo(corpus, world / "gold.jsonl")
    gold = [json.loads(line) for line in (world / "gold.jsonl").read_text().splitlines()]
    assert report.documents_imported == len(gold) and not report.skipped_documents
    assert report.mentions == sum(len(d["mentions"]) for d in gold)
    assert report.relations == truth["true_instances"] and not report.skipped_labels
    assert import_kbpo(corpus, world / "gold.jsonl").documents_unchanged == len(gold)
    ex_pairs, ex_preds, _, n_docs = load_exhaustive(corpus)
    assert n_docs == len(gold) and len(ex_pairs) == truth["true_instances"]
    # with every document exhaustively annotated, simple recall is the exact recall
    for name, pk in subs.items():
        found = set(RelationInstance.objects.filter(submission_id=pk).values_list(
            "pair_id", "predicate"))
        codes = {(p, PREDICATE_CODE[x]) for p, x in found}
        hits = sum((int(p), int(c)) in codes for p, c in zip(ex_pairs, ex_preds, strict=True))
        assert hits / len(ex_pairs) == pytest.approx(truth["systems"][name]["instance"]["recall"],
                                                     abs=1e-6)


def test_recall_is_unbiased_and_covers_at_the_nominal_rate(demo, world: Path) -> None:
    """Simple and joint recall against truth.json, one independent trial per interval.

    Every trial draws fresh samples for the drawn systems and a fresh Ŷ0 (a uniform
    sample of the true instances) and counts the interval of one system, the systems
    taking turns, so the counted intervals are independent. The outsider never gets
    draws of its own: its joint recall is θ·ν + ρ with ρ ≈ 0.19 of its 0.20, so
    dropping or doubling the ρ term shows here as a bias of about ±0.19.
    """
    corpus, truth, subs = demo
    import_kbpo(corpus, world / "gold.jsonl")
    data = load_corpus_data(corpus)
    pop = data.population
    # labels from gold: every predicted pair gets its gold relations or no_relation
    gold_preds: dict[int, list[int]] = {}
    for p, c in zip(data.exhaustive_pairs, data.exhaustive_preds, strict=True):
        if p >= 0:
            gold_preds.setdefault(int(p), []).append(int(c))
    all_pairs = sorted({int(p) for p, _ in RelationInstance.objects.filter(
        submission__corpus=corpus).values_list("pair_id", "predicate")})
    label_pairs = np.array([p for p in all_pairs for _ in gold_preds.get(p, [-1])])
    label_preds = np.array([c for p in all_pairs for c in gold_preds.get(p, [-1])])
    instances = {name: np.array(RelationInstance.objects.filter(submission_id=pk)
                                .values_list("pair_id", flat=True), np.int64)
                 for name, pk in subs.items()}
    names = sorted(subs)
    assert UNDRAWN in names
    rng = np.random.default_rng(2024)
    n = len(data.exhaustive_pairs)
    hits = {kind: np.zeros(TRIALS, bool) for kind in KINDS}
    estimates = {(kind, name): [] for kind in KINDS for name in names}
    rhos = []
    for trial in range(TRIALS):
        name = names[trial % len(names)]
        draws = {system_name(pk): (rng.choice(instances[other], DRAWS) if other != UNDRAWN
                                   else np.zeros(0, np.int64))
                 for other, pk in subs.items()}
        idx = rng.integers(0, n, N0)  # Ŷ0: a uniform sample of the true instances
        ev = prepare_evidence(pop, draws, label_pairs, label_preds,
                              data.exhaustive_pairs[idx], data.exhaustive_preds[idx],
                              data.exhaustive_subjects[idx])
        res = estimate(pop, ev, schemes=["instance"])
        i = res.names.index(system_name(subs[name]))
        r = truth["systems"][name]["instance"]["recall"]
        for kind in KINDS:
            iv = res.results["instance"]["recall"][kind]
            assert iv.lo[i] <= iv.hi[i]
            hits[kind][trial] = iv.lo[i] <= r <= iv.hi[i]
            estimates[kind, name].append(iv.estimate[i])
        if name == UNDRAWN:
            rhos.append(_rho(pop, ev, pop.index_of(system_name(subs[UNDRAWN]))))
    # the outsider's recall really rests on ρ (what makes this test see the ρ term)
    assert np.mean(rhos) > 0.5 * truth["systems"][UNDRAWN]["instance"]["recall"]
    assert_unbiased({f"{kind} recall, {name}": (v, truth["systems"][name]["instance"]["recall"])
                     for (kind, name), v in estimates.items()})
    for kind in KINDS:
        assert_coverage(f"{kind} recall", hits[kind])


def _rho(pop, ev, k: int) -> float:
    """Share of Ŷ0 that system k found on pairs no drawn system predicted (ρ_k)."""
    drawn = np.flatnonzero(ev.n > 0)
    reached = set()
    for j in drawn:
        reached.update(pop.system_instances(int(j))[0].tolist())
    pairs, preds, _ = pop.system_instances(k)
    found = set(zip(pairs.tolist(), preds.tolist(), strict=True))
    return float(np.mean([(p, c) in found and p not in reached
                          for p, c in zip(ev.y_pairs.tolist(), ev.y_preds.tolist(),
                                          strict=True)]))


@pytest.mark.django_db
def test_lenient_matching_same_sentence_overlap() -> None:
    corpus = make_corpus()
    doc = Document.objects.get(doc_id="D1")
    born = make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE")
    make_submission(corpus, [(born, "per:place_of_birth")], name="A")
    ExhaustiveDocument.objects.create(corpus=corpus, document=doc, stage=ExhaustiveStage.SEED,
                                      state=ExhaustiveDocument.State.COMPLETE)
    b, e = span(doc, "Ada Byron")
    lb, le = span(doc, "London")
    sentence = born.sentence
    # gold marked only "Byron" and "in London": overlaps the predicted pair
    GoldRelation.objects.create(document=doc, subject_begin=b + 4, subject_end=e,
                                object_begin=lb - 3, object_end=le, predicate="per:place_of_birth",
                                subject_entity="E1", sentence=sentence)
    # same spans shifted into another sentence: never matched
    ob, oe = span(doc, "London", 1)
    GoldRelation.objects.create(document=doc, subject_begin=span(doc, "Acme", 1)[0],
                                subject_end=span(doc, "Acme", 1)[1], object_begin=ob,
                                object_end=oe, predicate="org:place_of_headquarters",
                                subject_entity="E3")
    exact, _, _, _ = load_exhaustive(corpus)
    lenient, preds, _, _ = load_exhaustive(corpus, match="lenient")
    assert exact[0] < 0 and lenient[0] == born.pk and lenient[1] < 0
    assert preds[0] == PREDICATE_CODE["per:place_of_birth"]
    data = load_corpus_data(corpus, match="lenient")
    res = estimate(data.population, data.evidence(), schemes=["instance"])
    assert res.results["instance"]["recall"]["simple"].estimate[0] == pytest.approx(0.5)
    exact_data = load_corpus_data(corpus)
    res = estimate(exact_data.population, exact_data.evidence(), schemes=["instance"])
    assert res.results["instance"]["recall"]["simple"].estimate[0] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="match must be one of"):
        load_exhaustive(corpus, match="fuzzy")


def test_import_command_kbpo_only_planned(db, world: Path) -> None:
    load_corpus("cmd", world / "corpus.jsonl", workers=1)
    call_command("plan_exhaustive", corpus="cmd", docs=10, seed_fraction=0.3, no_tasks=True,
                 stdout=StringIO())
    out = StringIO()
    call_command("import_gold", str(world / "gold.jsonl"), format="kbpo", corpus="cmd",
                 only_planned=True, stdout=out, stderr=StringIO())
    assert "3 imported" in out.getvalue()
    assert "37 × not in the exhaustive plan (--only-planned)" in out.getvalue()
