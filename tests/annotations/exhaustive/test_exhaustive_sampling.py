"""Two-stage document sampling: proportions, uniformity, matching and determinism."""

from __future__ import annotations

import re
from collections import Counter
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from scipy import stats

from annotations.exhaustive.gold import import_kbpo
from annotations.exhaustive.sampling import (
    PlanError,
    documents_mentioning,
    plan_exhaustive,
    seed_entity_names,
)
from annotations.models import ExhaustiveDocument, ExhaustiveStage, GoldMention, GoldRelation
from kbpo.core.corpus import load_corpus
from kbpo.core.models import Corpus
from tests.factories import make_corpus


@pytest.fixture
def demo(db, world: Path) -> Corpus:
    load_corpus("exh", world / "corpus.jsonl", workers=1)
    return Corpus.objects.get(tag="exh")


def sample_ids(corpus: Corpus, stage: str) -> list[str]:
    return sorted(ExhaustiveDocument.objects.filter(corpus=corpus, stage=stage)
                  .values_list("document__doc_id", flat=True))


def reset(corpus: Corpus) -> None:
    ExhaustiveDocument.objects.filter(corpus=corpus).delete()
    GoldMention.objects.filter(document__corpus=corpus).delete()
    GoldRelation.objects.filter(document__corpus=corpus).delete()


def test_two_stages_proportions_matching_and_determinism(demo: Corpus, world: Path) -> None:
    first = plan_exhaustive(demo, 20, 0.25, seed=3, start_tasks=False)
    assert first.action == "seeded" and first.created == 5
    seeds = sample_ids(demo, ExhaustiveStage.SEED)
    # stage 2 must wait for the seed documents' entities
    waiting = plan_exhaustive(demo, 20, 0.25, seed=3, start_tasks=False)
    assert waiting.action == "waiting" and "0 of 5 seed documents" in waiting.summary()
    report = import_kbpo(demo, world / "gold.jsonl", only_planned=True)
    assert report.documents_imported == 5
    assert all(e.stage == ExhaustiveStage.SEED for e in ExhaustiveDocument.objects.all())
    second = plan_exhaustive(demo, 20, 0.25, seed=3, start_tasks=False)
    assert second.action == "matched" and second.created == 15 and second.shortfall == 0
    names = set(seed_entity_names(demo))
    assert second.seed_names == len(names) > 0
    for ex in ExhaustiveDocument.objects.filter(corpus=demo, stage=ExhaustiveStage.MATCHED):
        assert ex.matched_entity in names and ex.sample_seed == 3
        if connection.vendor == "postgresql":
            words = r"\W+".join(map(re.escape, re.findall(r"\w+", ex.matched_entity)))
            assert re.search(rf"(?<!\w){words}(?!\w)", ex.document.text, re.IGNORECASE)
        else:
            assert ex.matched_entity in ex.document.text
    # all candidates really mention a seed name; nothing sampled twice
    assert ExhaustiveDocument.objects.filter(corpus=demo).count() == 20
    matched = sample_ids(demo, ExhaustiveStage.MATCHED)
    assert not set(matched) & set(seeds)
    done = plan_exhaustive(demo, 20, 0.25, seed=3, start_tasks=False)
    assert done.action == "planned" and done.created == 0
    with pytest.raises(PlanError, match="planned with --seed 3"):
        plan_exhaustive(demo, 20, 0.25, seed=4, start_tasks=False)

    # the same seed draws the same documents again; another seed draws others
    reset(demo)
    plan_exhaustive(demo, 20, 0.25, seed=3, start_tasks=False)
    assert sample_ids(demo, ExhaustiveStage.SEED) == seeds
    import_kbpo(demo, world / "gold.jsonl", only_planned=True)
    plan_exhaustive(demo, 20, 0.25, seed=3, start_tasks=False)
    assert sample_ids(demo, ExhaustiveStage.MATCHED) == matched
    reset(demo)
    plan_exhaustive(demo, 20, 0.25, seed=4, start_tasks=False)
    assert sample_ids(demo, ExhaustiveStage.SEED) != seeds


def test_stage_one_is_uniform(db) -> None:
    corpus = make_corpus("uni", {f"D{i:02d}": f"Document number {i} ." for i in range(12)})
    counts: Counter = Counter()
    reps = 300
    for seed in range(reps):
        plan_exhaustive(corpus, 6, 0.5, seed=seed, start_tasks=False)
        counts.update(sample_ids(corpus, ExhaustiveStage.SEED))
        ExhaustiveDocument.objects.all().delete()
    assert sum(counts.values()) == reps * 3
    observed = [counts[f"D{i:02d}"] for i in range(12)]
    # each document is included with probability 3/12
    assert stats.chisquare(observed).pvalue > 0.001


def test_matching_fallback_and_full_text(db) -> None:
    corpus = make_corpus("m", {"A": "Ada Byron met Tom King .", "B": "Tom Kingsley spoke .",
                               "C": "Nobody here .", "D": "ada byron was there ."})
    found = {Corpus.objects.get(tag="m").documents.get(pk=k).doc_id: v for k, v in
             documents_mentioning(corpus, ["Tom King", "Ada Byron"]).items()}
    if connection.vendor == "postgresql":  # whole words, any case
        assert found == {"A": "Ada Byron", "D": "Ada Byron"}
    else:  # exact substring
        assert found == {"A": "Ada Byron", "B": "Tom King"}


def test_plan_errors_name_the_option(db) -> None:
    corpus = make_corpus("e", {"A": "One .", "B": "Two ."})
    with pytest.raises(PlanError, match="--docs 5 exceeds the 2 documents"):
        plan_exhaustive(corpus, 5, 0.2)
    with pytest.raises(PlanError, match="--seed-fraction"):
        plan_exhaustive(corpus, 2, 1.5)
    with pytest.raises(CommandError, match="does not exist"):
        call_command("plan_exhaustive", corpus="nope", docs=3)
    out = StringIO()
    call_command("plan_exhaustive", corpus="e", docs=2, seed_fraction=0.5, no_tasks=True,
                 stdout=out)
    assert "stage 1: drew 1 seed documents" in out.getvalue()
    assert "seed: 1 planned" in out.getvalue()
