"""The demo's simulated crowd that keeps working (annotations/crowd/live.py, serve_demo)."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotations.crowd import live
from annotations.crowd.simulation import GoldKey, make_pool
from annotations.models import Assignment, Backend, Hit, PairLabel, SampleDraw
from estimation import leaderboard
from kbpo.core import jobs
from kbpo.core.corpus import load_corpus
from kbpo.core.models import Corpus
from kbpo.demo.management.commands import serve_demo
from kbpo.demo.world import generate as demo_world
from submissions.models import MentionPair, State, Submission
from submissions.services import create_submission
from tests.factories import make_user


@pytest.fixture(autouse=True)
def _fresh_status() -> Iterator[None]:
    """STATUS belongs to the process: each test starts from a stopped crowd."""
    saved = live.STATUS
    live.STATUS = live.Status()
    yield
    live.STATUS = saved


@pytest.fixture
def world(tmp_path: Path) -> Path:
    out = tmp_path / "world"
    demo_world.generate(out, docs=25, systems=2, seed=11)
    load_corpus("demo", out / "corpus.jsonl", workers=1)
    return out


@pytest.fixture
def small_samples(settings) -> None:
    """Samples planned for a ±0.1 interval (about 70 draws a system, not 270): for the
    tests whose point is what the crowd does, not how long a full sample takes it."""
    settings.KBPO_TARGET_HALFWIDTH = 0.1


def upload(out: Path, system: str = "sys01_baseline", owner: str = "researcher") -> Submission:
    with open(out / "systems" / f"{system}.kb", "rb") as fh:
        sub = create_submission(owner=make_user(owner),
                                corpus=Corpus.objects.get(tag="demo"), name=system, file=fh,
                                original_name=f"{system}.kb", compressed=False,
                                enforce_limits=False)
    sub.refresh_from_db()
    return sub


def crowd_for(out: Path, pace: float = 1.0) -> live.LiveCrowd:
    return live.LiveCrowd(key=GoldKey.load(out / "gold.jsonl"),
                          pool=make_pool(20, 0.05, 2017), seed=2017, pace=pace,
                          corpus_id=Corpus.objects.get(tag="demo").pk)


def all_labelled(sub: Submission) -> bool:
    pairs = set(SampleDraw.objects.filter(submission=sub).values_list("instance__pair_id",
                                                                      flat=True))
    return bool(pairs) and PairLabel.objects.filter(pair_id__in=pairs).count() == len(pairs)


@pytest.mark.django_db(transaction=True)
def test_new_upload_is_labelled_at_a_crowd_pace_within_minutes(world: Path) -> None:
    """Driven by a made-up clock: no answer sooner than a person could read the HIT, and
    the whole sample labelled within the five minutes the README promises."""
    sub = upload(world)
    assert sub.state == State.ANNOTATING
    crowd = crowd_for(world)
    posted_at: dict[int, float] = {}  # HIT -> the time the crowd could first see it
    submitted_at: dict[int, float] = {}
    with jobs.coalesced():  # one recomputation at the end, as the thread does per period
        clock = 0.0
        while clock <= 300 and not all_labelled(sub):
            for pk in Hit.objects.exclude(pk__in=posted_at).values_list("pk", flat=True):
                posted_at[pk] = clock
            crowd.tick(clock)
            for a in Assignment.objects.exclude(pk__in=submitted_at):
                submitted_at[a.pk] = clock
            clock += 1.0
    hits = {h.pk: h.items.count() for h in Hit.objects.filter(submission=sub)}
    assert all_labelled(sub), f"not labelled after {clock:.0f} s of crowd time"
    assert Submission.objects.get(pk=sub.pk).state in {State.SCORING, State.SCORED}
    # Paced: an assignment arrives no sooner than two seconds per question after its
    # HIT was posted (a person reading), spammers included.
    for a in Assignment.objects.filter(hit__submission=sub):
        took = submitted_at[a.pk] - posted_at[a.hit_id]
        assert took >= live.SECONDS_PER_QUESTION[0] * hits[a.hit_id]
    assert len(set(submitted_at.values())) > 10  # labels arrive over time, not at once
    assert Submission.objects.get(pk=sub.pk).state == State.SCORED


@pytest.mark.django_db(transaction=True)
def test_the_crowd_answers_only_simulated_hits_of_its_corpus(world: Path) -> None:
    sub = upload(world)
    Hit.objects.filter(submission=sub).update(backend=Backend.LOCAL)
    crowd = crowd_for(world)
    for clock in range(0, 400, 5):
        crowd.tick(float(clock))
    assert not Assignment.objects.exists()  # local HITs wait for in-house annotators
    assert not crowd.jobs


@pytest.mark.django_db(transaction=True)
def test_the_thread_labels_and_scores_a_new_upload(world: Path, small_samples: None) -> None:
    """The real thread, ten times faster than the demo's pace: an upload it never saw
    is labelled and scored with no other command, and the thread stops when told."""
    sub = upload(world)
    stop = threading.Event()
    thread = live.start(crowd_for(world, pace=0.02), "demo", stop=stop, poll=0.05)
    try:
        deadline = time.monotonic() + 120
        while Submission.objects.get(pk=sub.pk).state != State.SCORED:
            assert time.monotonic() < deadline, "the crowd thread did not finish in 120 s"
            assert thread.is_alive()
            time.sleep(0.2)
        assert live.STATUS.submitted >= Hit.objects.filter(submission=sub).count()
        assert not live.STATUS.last_error
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()


@pytest.mark.django_db(transaction=True)
def test_operator_and_submission_pages_say_who_answers(world: Path, settings) -> None:
    sub = upload(world)
    admin = Client()
    admin.force_login(make_user("op", staff=True))
    page = admin.get("/operator/").content.decode()
    assert "No simulated crowd runs in this server" in page
    assert "manage.py simulate_crowd" in admin.get(f"/submissions/{sub.pk}/").content.decode()
    live.STATUS.running, live.STATUS.workers, live.STATUS.corpus = True, 20, "demo"
    live.STATUS.started_at = sub.created_at
    page = admin.get("/operator/").content.decode()
    assert "A simulated crowd of 20 workers answers new HITs of corpus" in page
    settings.KBPO_CROWD_BACKEND = "mturk"
    assert 'id="simulated-crowd"' not in admin.get("/operator/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_serve_demo_refuses_what_its_crowd_cannot_serve(world: Path, settings,
                                                       tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"gold\.jsonl"):
        call_command("serve_demo", "127.0.0.1:8199", world=tmp_path / "nowhere")
    with pytest.raises(CommandError, match="crowd-pace"):
        call_command("serve_demo", "127.0.0.1:8199", world=world, crowd_pace=0)
    settings.PRODUCTION = True
    with pytest.raises(CommandError, match="production"):
        call_command("serve_demo", "127.0.0.1:8199", world=world)


@pytest.mark.django_db(transaction=True)
def test_serve_demo_starts_one_crowd_in_the_serving_process(world: Path, monkeypatch,
                                                            settings) -> None:
    served = []
    monkeypatch.setattr(serve_demo.RunserverCommand, "inner_run",
                        lambda self, *a, **o: served.append(True))
    monkeypatch.setattr(serve_demo.RunserverCommand, "run",
                        lambda self, **o: self.inner_run(None, **o))
    started = []
    monkeypatch.setattr(live, "start", lambda crowd, tag, **kw: started.append((crowd, tag)))
    monkeypatch.delenv("KBPO_PUBLIC_URL", raising=False)
    settings.KBPO_SITE_ORIGIN, settings.KBPO_PUBLIC_URL = "", "http://localhost:8000"
    call_command("serve_demo", "127.0.0.1:8199", world=world, crowd_pace=0.5)
    assert served and len(started) == 1
    # E-mails link to this server's port, not to the default 8000.
    assert settings.KBPO_PUBLIC_URL == "http://127.0.0.1:8199"
    crowd, tag = started[0]
    assert tag == "demo" and crowd.pace == 0.5 and len(crowd.pool) == 20
    started.clear()
    call_command("serve_demo", "127.0.0.1:8199", world=world, no_crowd=True)
    assert not started
    # Local and MTurk HITs are people's work: served, never answered by the crowd.
    for backend in ("local", "mturk"):
        settings.KBPO_CROWD_BACKEND = backend
        err = io.StringIO()
        call_command("serve_demo", "127.0.0.1:8199", world=world, stderr=err)
        assert not started and "serving without the simulated crowd" in err.getvalue()


@pytest.mark.django_db(transaction=True)
def test_a_system_being_labelled_is_on_the_board_as_refining(world: Path) -> None:
    """Planned with half its sample already labelled (by an earlier upload of the same
    system), a submission has scores at once: a refining row on the leaderboard and
    numbers on its report, not "No scores yet" while labels exist."""
    first = upload(world)
    key = GoldKey.load(world / "gold.jsonl")
    pairs = sorted(set(SampleDraw.objects.filter(submission=first).values_list(
        "instance__pair_id", flat=True)))
    PairLabel.objects.bulk_create(
        PairLabel(pair_id=p.pk, predicates=sorted(key.truth(
            (p.document.doc_id, p.subject_begin, p.subject_end, p.object_begin, p.object_end))),
            support=1.0, n_answers=3)
        for p in MentionPair.objects.filter(pk__in=pairs[::2]).select_related("document"))
    sub = upload(world, owner="grace")
    assert sub.state == State.ANNOTATING
    board = leaderboard.build(sub.corpus, sub.owner)
    row = next((r for r in board.rows if r.submission.pk == sub.pk), None)
    assert row is not None, "the submission being labelled is missing from the board"
    assert row.refining and row.metrics["precision"].estimate is not None
    client = Client()
    client.force_login(sub.owner)
    report = client.get(f"/submissions/{sub.pk}/report/").content.decode()
    assert "No scores yet" not in report and "Not scored yet" not in report


@pytest.mark.django_db(transaction=True)
def test_simulate_crowd_prices_a_label_from_its_own_run(world: Path) -> None:
    """"$ per new label" divided the corpus's whole spend by this run's labels: a
    second upload looked twice as dear as the first."""
    crowd = {"gold": str(world / "gold.jsonl"), "corpus": "demo", "seed": 3,
             "error_rate": 0.0, "spammers": 0.0}
    upload(world)
    call_command("simulate_crowd", **crowd, stdout=io.StringIO())
    first = set(Assignment.objects.values_list("pk", flat=True))
    labels_before = PairLabel.objects.count()
    upload(world, "sys02_outsider", owner="grace")
    out = io.StringIO()
    call_command("simulate_crowd", **crowd, stdout=out)
    paid = sum(a.hit.reward for a in Assignment.objects.exclude(pk__in=first)
               .select_related("hit"))
    new = PairLabel.objects.count() - labels_before
    assert paid > 0 and new > 0
    per_label = (paid / new).quantize(Decimal("0.001"))
    assert f"this run's answers ${paid}, ${per_label} per new label" in out.getvalue(), \
        out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_a_blocked_worker_is_not_sent_again(world: Path, small_samples: None) -> None:
    """The intake refuses a blocked worker: the crowd stops sending them instead of
    holding HIT slots with work that is refused every time."""
    from annotations.interfaces.intake import worker_for

    upload(world)
    crowd = crowd_for(world)
    blocked = {w.worker_id for w in crowd.pool[:5]}
    for worker_id in blocked:
        w = worker_for(Backend.SIMULATED, worker_id)
        w.blocked = True
        w.save(update_fields=["blocked"])
    for clock in range(0, 120, 2):
        crowd.tick(float(clock))
    assert Assignment.objects.exists() and live.STATUS.refused == 0
    assert not Assignment.objects.filter(worker__external_id__in=blocked).exists()
