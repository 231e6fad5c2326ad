"""Live scoring (KBPO_SCORE_FOLLOW_UP): a recompute task estimates the draw scheme and
carries the reweighted schemes' rows of the previous run, stamped with the label
generation they reflect; the queued follow-up replaces them. Boards, the report and the
API say which generation each scheme reflects and show a carried one as updating; after
the follow-up every number equals a run that estimated every scheme at once."""

from __future__ import annotations

import threading
from unittest import mock

import pytest
from django.db import connections
from django.test import Client, TestCase, override_settings
from django.urls import reverse
from django.utils import timezone

from estimation import scoring, snapshot
from estimation.models import BoardSnapshot, ScoreRun, ScoringState, SystemScore
from tests.estimation.scoring.scoring_world import World
from tests.estimation.scoring.test_incremental import World as RandomWorld
from tests.estimation.scoring.test_incremental import _scores
from tests.estimation.scoring.test_report_crowd import _crowd
from tests.estimation.scoring.test_scoring_recovery import WAIT, _wait_for

REWEIGHTED = ("predicate", "entity", "entity_relation")


def _live(corpus_id: int) -> tuple[ScoreRun, list[int]]:
    """A recompute task's run after a label change; the follow-up it queues is caught."""
    queued: list[int] = []
    with mock.patch.object(scoring, "_enqueue"), \
            mock.patch.object(scoring, "_enqueue_follow_up",
                              lambda cid, countdown: queued.append(cid)), \
            TestCase.captureOnCommitCallbacks(execute=True):
        scoring.request_recompute(corpus_id, "test")
        out = scoring.run_scheduled(corpus_id)
    assert out.status == "complete" and out.run is not None
    return out.run, queued


def _board(tag: str, scheme: str) -> dict:
    return Client().get(reverse("api-leaderboard", args=[tag]), {"scheme": scheme}).json()


@pytest.mark.django_db
def test_live_run_carries_the_reweighted_schemes_until_the_follow_up(world: World,
                                                                     settings) -> None:
    settings.KBPO_SOFT_LABELS = True
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 8
    first, queued = _live(world.corpus.pk)
    # No run to carry from: every scheme estimated at once, nothing to follow up.
    assert queued == [] and not scoring.behind(first)
    before = {(r.submission_id, r.scheme): r for r in SystemScore.objects.filter(run=first)}
    _crowd(world)  # new labels, with the crowd's answers: soft labels and replicates
    run, queued = _live(world.corpus.pk)
    assert run.pk != first.pk and queued == [world.corpus.pk]
    rows = {(r.submission_id, r.scheme): r for r in SystemScore.objects.filter(run=run)}
    assert rows.keys() == before.keys()
    for (sid, scheme), row in rows.items():
        if scheme == "instance":
            assert row.generation == run.generation > first.generation
        else:  # carried: the previous run's numbers, stamped with its generation
            old = before[(sid, scheme)]
            assert row.generation == first.generation
            assert all(getattr(row, f) == getattr(old, f) for f in scoring._SCORE_FIELDS)
    assert scoring.behind(run)
    # Every reader says which generation it shows; a carried scheme is never fresh.
    live, carried = _board(world.corpus.tag, "instance"), _board(world.corpus.tag, "entity")
    assert live["run"]["updating"] is False
    assert live["run"]["scheme_generation"] == run.generation
    assert carried["run"]["updating"] is True
    assert carried["run"]["scheme_generation"] == first.generation
    assert carried["run"]["generation"] == run.generation
    page = Client().get(reverse("leaderboard", args=[world.corpus.tag]), {"scheme": "entity"})
    assert b'id="scheme-updating"' in page.content
    page = Client().get(reverse("leaderboard", args=[world.corpus.tag]))
    assert b'id="scheme-updating"' not in page.content
    scores = Client().get(reverse("api-submission-scores", args=[world.a.pk])).json()
    assert scores["run"]["generation"] == run.generation
    stamps = {s["scheme"]: (s["generation"], s["updating"]) for s in scores["schemes"]}
    assert stamps["instance"] == (run.generation, False)
    assert stamps["entity"] == (first.generation, True)
    report = Client().get(reverse("submission-evaluation", args=[world.a.pk]),
                          {"scheme": "entity"})
    assert b'id="scheme-updating"' in report.content

    assert scoring.run_follow_up(world.corpus.pk).run == run
    assert not scoring.behind(run)
    assert set(SystemScore.objects.filter(run=run).values_list("generation", flat=True)) \
        == {run.generation}
    assert _board(world.corpus.tag, "entity")["run"]["updating"] is False
    stamps = {s["scheme"]: s["updating"] for s in Client().get(
        reverse("api-submission-scores", args=[world.a.pk])).json()["schemes"]}
    assert not any(stamps.values())
    assert b'id="scheme-updating"' not in Client().get(
        reverse("submission-evaluation", args=[world.a.pk]), {"scheme": "entity"}).content
    # Every number as one run of every scheme gives, to the last bit (it stores nothing).
    full = scoring.recompute(world.corpus, full=True)
    assert full.pk == run.pk and ScoreRun.objects.filter(corpus=world.corpus).count() == 2
    assert scoring.run_follow_up(world.corpus.pk).status == "up to date"


@pytest.mark.django_db
@override_settings(KBPO_TOP_UP_ROUNDS=0)  # a top-up's draws would land between the runs
def test_live_and_follow_up_equal_one_full_run_through_batches() -> None:
    world = RandomWorld()
    world.label(25)
    cid = world.corpus.pk
    _live(cid)
    for step in range(3):
        world.label(12)
        if step == 1:
            world.draw(world.subs[0], 6)
        run, queued = _live(cid)
        assert queued == [cid] and scoring.behind(run)
        assert scoring.run_follow_up(cid).run == run
        incremental = _scores(run)
        full = _scores(scoring.recompute(world.corpus, trigger="full", full=True))
        assert incremental == full  # the same floats, not merely close


@pytest.mark.django_db
def test_a_new_system_is_estimated_in_every_scheme_at_once() -> None:
    world = RandomWorld()
    world.label(25)
    cid = world.corpus.pk
    _live(cid)
    world.add_system("S5")
    world.label(10)
    run, queued = _live(cid)
    # The previous run has no rows of the new system to carry: nothing is behind.
    assert queued == [] and not scoring.behind(run)
    assert SystemScore.objects.filter(run=run).count() == 6 * 4


@pytest.mark.django_db
def test_the_follow_up_waits_for_a_lease_and_skips_another_set_of_systems() -> None:
    world = RandomWorld()
    world.label(25)
    cid = world.corpus.pk
    _live(cid)
    world.label(10)
    run, _ = _live(cid)
    ScoringState.objects.filter(corpus_id=cid).update(
        lease_until=ScoreRun.objects.get(pk=run.pk).started_at.replace(year=2999))
    queued: list[float] = []
    with mock.patch.object(scoring, "_enqueue_follow_up",
                           lambda c, countdown: queued.append(countdown)), \
            TestCase.captureOnCommitCallbacks(execute=True):
        assert scoring.run_follow_up(cid).status == "busy"
    assert queued and queued[0] >= 1.0  # asked again after the running one
    assert scoring.behind(run)
    ScoringState.objects.filter(corpus_id=cid).update(lease_until=None)
    world.add_system("S5")  # the live run it queues will estimate every scheme
    assert scoring.run_follow_up(cid).run is None
    assert scoring.behind(run)
    assert ScoringState.objects.get(corpus_id=cid).lease_until is None


@pytest.mark.django_db
def test_the_redrive_queues_a_lost_follow_up() -> None:
    world = RandomWorld()
    world.label(25)
    cid = world.corpus.pk
    _live(cid)
    world.label(10)
    _live(cid)
    sent: list[int] = []
    with mock.patch.object(scoring, "_enqueue"), \
            mock.patch.object(scoring, "_enqueue_follow_up", lambda c, cd: sent.append(c)):
        scoring.redrive_scores()
    assert sent == [cid]


def _boards(run: ScoreRun) -> dict:
    return {(b.scheme, b.kind, b.metric): (b.head, b.rows, b.html, b.api, b.csv)
            for b in BoardSnapshot.objects.filter(run=run)}


@pytest.mark.django_db
def test_a_live_run_copies_the_carried_boards_as_they_would_render(needs_postgres: None) -> None:
    # Boards are copied only on Postgres (board_rows.copyable).
    world = RandomWorld()
    world.label(25)
    cid = world.corpus.pk
    _live(cid)
    world.label(10)
    rendered: list[str] = []
    real = snapshot._render_kind

    def spy(head, pct, scheme, *args):
        rendered.append(scheme)
        return real(head, pct, scheme, *args)

    with mock.patch.object(snapshot, "_render_kind", spy):
        run, _ = _live(cid)
    assert set(rendered) == {"instance"}  # the carried schemes' boards were copied
    copied = _boards(run)
    assert len(copied) == 4 * 2 * 3
    snapshot.write_snapshots(run)  # every board rendered from the rows read back
    assert _boards(run) == copied


@pytest.mark.django_db(transaction=True)
def test_the_follow_up_renews_its_lease_while_it_runs(needs_postgres: None, settings) -> None:
    """A follow-up takes longer than one lease on a large corpus; without renewal its
    lease lapsed mid-run and a second delivery took the corpus, the two runs overlapping.
    Held inside the reweighted schemes past three leases, it must still hold the lease."""
    settings.KBPO_SCORE_LEASE_SECONDS = 0.6  # renewed every 0.2 s
    world = RandomWorld()
    world.label(25)
    cid = world.corpus.pk
    _live(cid)
    world.label(10)
    run, _ = _live(cid)
    inside, release = threading.Event(), threading.Event()
    real = scoring.complete_reweighted

    def held(*args, **kwargs):  # type: ignore[no-untyped-def]
        inside.set()
        assert release.wait(WAIT), "the test never released the follow-up"
        return real(*args, **kwargs)

    outcome: list[object] = []

    def follow_up() -> None:
        try:
            outcome.append(scoring.run_follow_up(cid).status)
        except Exception as exc:
            outcome.append(exc)
        finally:
            connections.close_all()

    with mock.patch.object(scoring, "complete_reweighted", held), \
            mock.patch.object(scoring, "_enqueue_follow_up"):
        thread = threading.Thread(target=follow_up)
        thread.start()
        try:
            assert inside.wait(WAIT)
            first = ScoringState.objects.get(corpus_id=cid).lease_until
            assert first is not None
            # Three leases later it is still held, its end moved on.
            _wait_for("renewals", lambda: (
                ScoringState.objects.get(corpus_id=cid).lease_until
                > first + timezone.timedelta(seconds=1.8)), timeout=WAIT / 2)
            assert timezone.now() > first  # the lease it started with is over
            assert scoring.run_follow_up(cid).status == "busy"
        finally:
            release.set()
            thread.join(WAIT)
    assert outcome == ["complete"]
    assert ScoringState.objects.get(corpus_id=cid).lease_until is None
    assert not scoring.behind(ScoreRun.objects.get(pk=run.pk))
