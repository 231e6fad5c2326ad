"""Incremental recompute (stored instance arrays, the population kept in memory) gives
exactly the numbers of a full rebuild, through label batches, new draws, a new
submission and a withdrawal; and a stale stored row is never used."""

from __future__ import annotations

import io
from unittest import mock

import numpy as np
import pytest
from django.core.management import call_command

from annotations.models import (
    ExhaustiveDocument,
    ExhaustiveStage,
    GoldRelation,
    PairLabel,
    SampleDraw,
)
from estimation import instance_cache, scoring
from estimation.data import PREDICATES, load_corpus_data, system_name
from estimation.models import InstanceCache, SystemScore
from kbpo.core.models import Document, Sentence
from submissions.models import (
    MentionPair,
    RelationInstance,
    State,
    Submission,
    SubmissionEntity,
    SubmissionEvent,
)
from submissions.services import withdraw
from tests.factories import make_corpus, make_user

N_PAIRS = 160
PREDS = PREDICATES[:6]
SKIP = {"id", "run", "run_id", "submission", "submission_id", "scheme"}
FIELDS = [f.attname for f in SystemScore._meta.concrete_fields if f.attname not in SKIP]


class World:
    """A random corpus: pairs in two documents (one exhaustively annotated), systems
    predicting random pairs, draws, and crowd labels that equal a hidden truth."""

    def __init__(self, seed: int = 3) -> None:
        self.rng = np.random.default_rng(seed)
        self.corpus = make_corpus("inc", {"D1": "x" * 3000, "D2": "y" * 3000})
        docs = list(Document.objects.filter(corpus=self.corpus).order_by("doc_id"))
        pairs = []
        for k in range(N_PAIRS):
            doc = docs[k % 2]
            sent = Sentence.objects.filter(document=doc).first()
            pairs.append(MentionPair(document=doc, sentence=sent, subject_begin=10 * k,
                                     subject_end=10 * k + 3, object_begin=10 * k + 5,
                                     object_end=10 * k + 8, subject_type="PER",
                                     object_type="ORG"))
        self.pairs = MentionPair.objects.bulk_create(pairs)
        self.truth = np.where(self.rng.random(N_PAIRS) < 0.5,
                              self.rng.integers(0, len(PREDS), N_PAIRS), -1)
        self.owner = make_user("inc")
        self.subs = [self.add_system(f"S{i}") for i in range(5)]
        ExhaustiveDocument.objects.create(corpus=self.corpus, document=docs[0],
                                          stage=ExhaustiveStage.SEED,
                                          state=ExhaustiveDocument.State.COMPLETE)
        for k in range(0, N_PAIRS, 2):  # the first document's pairs
            if self.truth[k] >= 0:
                p = self.pairs[k]
                GoldRelation.objects.create(
                    document=docs[0], subject_begin=p.subject_begin, subject_end=p.subject_end,
                    object_begin=p.object_begin, object_end=p.object_end,
                    predicate=PREDS[self.truth[k]], subject_entity=f"e{k % 7}")

    def add_system(self, name: str) -> Submission:
        sub = Submission.objects.create(owner=self.owner, corpus=self.corpus, name=name,
                                        state=State.SCORING, file="submissions/t.kb")
        ents = SubmissionEntity.objects.bulk_create(
            SubmissionEntity(submission=sub, node=f":E{e}", type="PER") for e in range(6))
        picks = self.rng.choice(N_PAIRS, size=int(self.rng.integers(40, 90)), replace=False)
        good = self.rng.random(len(picks)) < self.rng.uniform(0.3, 0.9)
        RelationInstance.objects.bulk_create(
            RelationInstance(submission=sub, pair=self.pairs[p], line=i + 2,
                             subject_entity=ents[int(self.rng.integers(0, 6))],
                             predicate=PREDS[self.truth[p] if g and self.truth[p] >= 0
                                             else int(self.rng.integers(0, len(PREDS)))])
            for i, (p, g) in enumerate(zip(picks, good, strict=True)))
        self.draw(sub, 12)
        return sub

    def draw(self, sub: Submission, n: int) -> None:
        inst = list(RelationInstance.objects.filter(submission=sub).order_by("pk"))
        start = SampleDraw.objects.filter(submission=sub).count()
        SampleDraw.objects.bulk_create(
            SampleDraw(submission=sub, scheme="instance", index=start + i,
                       instance=inst[int(self.rng.integers(0, len(inst)))]) for i in range(n))

    def label(self, n: int) -> None:
        """Label up to n drawn pairs that have no label yet, with their truth."""
        drawn = set(SampleDraw.objects.filter(submission__corpus=self.corpus)
                    .values_list("instance__pair_id", flat=True))
        done = set(PairLabel.objects.values_list("pair_id", flat=True))
        index = {p.pk: k for k, p in enumerate(self.pairs)}
        todo = sorted(drawn - done)[:n]
        PairLabel.objects.bulk_create(
            PairLabel(pair_id=p, n_answers=3, support=1.0,
                      predicates=[PREDS[self.truth[index[p]]]] if self.truth[index[p]] >= 0
                      else ["no_relation"]) for p in todo)


def _scores(run) -> dict:
    return {(s.submission_id, s.scheme): tuple(getattr(s, f) for f in FIELDS)
            for s in SystemScore.objects.filter(run=run)}


def _check_equal_to_full(world: World) -> dict:
    incremental = _scores(scoring.recompute(world.corpus, trigger="incremental"))
    full = _scores(scoring.recompute(world.corpus, trigger="full", full=True))
    assert incremental.keys() == full.keys()
    for key, values in incremental.items():
        assert values == full[key], key  # the same floats, not merely close
    return incremental


@pytest.mark.django_db
def test_incremental_recompute_equals_full_rebuild_step_by_step() -> None:
    world = World()
    world.label(25)
    first = _check_equal_to_full(world)
    assert len(first) == 5 * 4
    reads: list[list[int]] = []
    real_read = instance_cache.read_instances

    def spy(ids, codes):
        reads.append(sorted(ids))
        return real_read(ids, codes)

    with mock.patch.object(instance_cache, "read_instances", spy):
        # Two label batches and new draws, scored incrementally before comparing.
        world.label(15)
        scoring.recompute(world.corpus)
        world.draw(world.subs[1], 8)
        world.draw(world.subs[3], 5)
        scoring.recompute(world.corpus)
        world.label(20)
        assert reads == [[], []]  # nothing reread: the arrays and population were kept
        second = _check_equal_to_full(world)
        assert second != first
        reads.clear()
        # A new submission: only its rows are read.
        new = world.add_system("S-new")
        incremental = _scores(scoring.recompute(world.corpus))
        assert reads == [[new.pk]]
        world.label(15)
        scoring.recompute(world.corpus)
        full = _check_equal_to_full(world)
        assert {k[0] for k in incremental} == {k[0] for k in full} == (
            {s.pk for s in world.subs} | {new.pk})
        reads.clear()
        # A withdrawal: nothing is read, the system leaves the population.
        withdraw(world.subs[2])
        after = _check_equal_to_full(world)
        assert reads[0] == []
        assert world.subs[2].pk not in {k[0] for k in after}
        assert not InstanceCache.objects.filter(submission=world.subs[2]).exists()


@pytest.mark.django_db
def test_a_stale_stored_row_is_rebuilt() -> None:
    world = World(seed=5)
    world.label(20)
    scoring.recompute(world.corpus)
    sub = world.subs[0]
    before = InstanceCache.objects.get(submission=sub)
    # Rows added outside ingestion (above the watermark) are seen.
    entity = SubmissionEntity.objects.filter(submission=sub).first()
    taken = set(RelationInstance.objects.filter(submission=sub).values_list("pair_id", flat=True))
    extra = next(p for p in world.pairs if p.pk not in taken)
    RelationInstance.objects.create(submission=sub, pair=extra, predicate=PREDS[0],
                                    subject_entity=entity, line=999)
    data = load_corpus_data(world.corpus, hot=True)
    assert data.extra["reloaded"] == [sub.pk]
    k = data.population.index_of(system_name(sub.pk))
    assert len(data.population.system_instances(k)[0]) == before.n_instances + 1
    # A re-ingestion (a new `ingested` event) invalidates the row even with no new id.
    scoring.recompute(world.corpus)
    SubmissionEvent.objects.create(submission=world.subs[1], from_state=State.VALIDATING,
                                   to_state=State.INGESTED)
    data = load_corpus_data(world.corpus, hot=True)
    assert data.extra["reloaded"] == [world.subs[1].pk] and not data.extra["hot"]
    # Another worker rewrote a row: this process's population is not reused.
    scoring.recompute(world.corpus)
    assert load_corpus_data(world.corpus, hot=True).extra["hot"]
    InstanceCache.objects.filter(submission=world.subs[3]).update(token=12345)
    data = load_corpus_data(world.corpus, hot=True)
    assert not data.extra["hot"] and data.extra["reloaded"] == []


@pytest.mark.django_db
def test_recompute_scores_full_rebuilds_the_stored_arrays() -> None:
    world = World(seed=7)
    world.label(10)
    scoring.recompute(world.corpus)
    before = dict(InstanceCache.objects.values_list("submission_id", "token"))
    out = io.StringIO()
    call_command("recompute_scores", corpus="inc", full=True, stdout=out)
    after = dict(InstanceCache.objects.values_list("submission_id", "token"))
    assert after.keys() == before.keys() == {s.pk for s in world.subs}
    assert all(after[k] != before[k] for k in before)  # every row rewritten
    assert "Run " in out.getvalue()


@pytest.mark.django_db
def test_a_recompute_that_finds_nothing_new_stores_nothing() -> None:
    from django.contrib.auth.models import AnonymousUser

    from estimation import leaderboard as lb
    from estimation import snapshot
    from estimation.models import BoardSnapshot, ScoreRun

    world = World(seed=11)
    Submission.objects.filter(corpus=world.corpus).update(public=True)
    world.label(20)
    first = scoring.recompute(world.corpus, trigger="first")
    boards = set(BoardSnapshot.objects.values_list("pk", flat=True))
    counts = (ScoreRun.objects.count(), SystemScore.objects.count())
    # No new label, draw or system: incrementally, in a new worker, or rebuilt in full.
    again = scoring.recompute(world.corpus, trigger="again")
    instance_cache._HOT.clear()
    rebuilt = scoring.recompute(world.corpus, trigger="full", full=True)
    assert again.pk == rebuilt.pk == first.pk
    assert (ScoreRun.objects.count(), SystemScore.objects.count()) == counts
    assert set(BoardSnapshot.objects.values_list("pk", flat=True)) == boards
    assert ScoreRun.latest(world.corpus).pk == first.pk
    # The stored board still shows that run and the same rows as the reference build.
    for scheme in lb.BOARD_SCHEMES:
        ref = lb.board_dict(lb.build(world.corpus, AnonymousUser(), scheme, "f1", "joint"))
        got = snapshot.api_dict(snapshot.visible(
            snapshot.load("inc", scheme, "f1", "joint", "api"), AnonymousUser()))
        assert got["systems"] == ref["systems"] and len(got["systems"]) == 5
        assert got["run"]["id"] == ref["run"]["id"] == first.pk
        assert got["run"]["labels"] == first.n_labels
    # New labels, new draws (pending counts) and a withdrawal each store a new run.
    seen = {first.pk}
    for change in (lambda: world.label(10), lambda: world.draw(world.subs[0], 3),
                   lambda: withdraw(world.subs[4])):
        change()
        run = scoring.recompute(world.corpus)
        assert run.pk not in seen and ScoreRun.latest(world.corpus).pk == run.pk
        seen.add(run.pk)
        assert SystemScore.objects.filter(run=run).count() == 4 * len(
            Submission.objects.active().filter(corpus=world.corpus))


@pytest.mark.django_db
def test_exhaustive_found_counts_each_systems_matches() -> None:
    world = World(seed=13)
    world.label(20)
    data = load_corpus_data(world.corpus)
    found = scoring.exhaustive_found(data)
    pop = data.population
    width = len(PREDICATES)
    dense = pop.lookup_pairs(data.exhaustive_pairs)
    keys = np.where(dense >= 0, dense * width + data.exhaustive_preds, -1)
    assert len(keys) > 5
    for sub in world.subs:
        pairs, codes, _ = pop.system_instances(pop.index_of(system_name(sub.pk)))
        hit = np.isin(keys, pairs * width + codes)
        expect = {}
        for c in np.unique(data.exhaustive_preds):
            mine = data.exhaustive_preds == c
            expect[PREDICATES[c]] = [int(mine.sum()), int((mine & hit).sum())]
        assert found[sub.pk] == expect
    assert any(v[1] for f in found.values() for v in f.values())
    # With the run's evidence (as recompute passes it) the counts are the same.
    assert scoring.exhaustive_found(data, data.evidence()) == found


@pytest.mark.django_db
def test_the_logged_text_of_the_stored_arrays_is_cut_under_debug(monkeypatch) -> None:
    """Django's query log (DEBUG) would keep the INSERT of the packed arrays whole."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    world = World(seed=5)
    monkeypatch.setattr(instance_cache, "LOGGED_SQL_MAX", 2000)
    with CaptureQueriesContext(connection) as logged:
        scoring.recompute(world.corpus, trigger="full", full=True)
    table = InstanceCache._meta.db_table
    inserts = [q["sql"] for q in logged.captured_queries
               if q["sql"].startswith(f'INSERT INTO "{table}"')]
    assert inserts  # five systems' arrays: far above 2,000 characters whole
    assert all(len(q) < 1100 and q.endswith("characters)") for q in inserts)
