"""A rejected assignment's answers stop counting once they were counted
(crowd/discount.py, labels.recount): by the review's spam rejection, an operator's
rejection in the admin, or a rejection on MTurk's site copied by the sync. The rows stay
stored (`counted = False`); the labels they made are recounted, their questions
reopened and asked again when too few answers remain, and the scores recomputed."""

from __future__ import annotations

import importlib
import threading
import time
from decimal import Decimal

import pytest
from django.apps import apps as django_apps
from django.db import connection, connections
from django.urls import reverse

from annotations.crowd import labels, mturk, periodic, slots
from annotations.crowd.discount import RECOUNT_TASK
from annotations.crowd.verdicts import reject_assignment
from annotations.models import (
    Assignment,
    AssignmentState,
    CrowdWorker,
    Hit,
    HitState,
    PairLabel,
    Question,
    QuestionState,
    Response,
)
from annotations.quality import aggregation
from annotations.quality import workers as quality_workers
from annotations.quality.accuracy import crowd_accuracy
from annotations.signals import labels_changed
from estimation.scoring import latest_run
from kbpo.core import jobs
from submissions.models import State
from tests.annotations.crowd.helpers import (
    TRUTH,
    WRONG,
    add_control,
    answer,
    planned_hit,
    small_world,
)
from tests.annotations.crowd.test_mturk_backend import answers_json
from tests.annotations.crowd.test_mturk_backend import fake as fake  # the fixture
from tests.factories import make_hit, make_user

pytestmark = pytest.mark.django_db

def truth(q: Question) -> list[str]:
    return TRUTH[q.pair.object_type]


def wrong(q: Question) -> list[str]:
    return WRONG[q.pair.object_type]


def splitting(q: Question) -> list[str]:
    """Right but on the spouse pair, where it gives a third answer: a tie keeps the HIT
    posted (and its assignments unreviewed) after the other two pairs are labelled."""
    return ["per:children"] if q.pair.object_type == "PER" else truth(q)


@pytest.fixture
def crowd_settings(settings):
    settings.KBPO_QUESTIONS_PER_HIT = 3
    settings.KBPO_ANSWERS_PER_QUESTION = 3
    settings.KBPO_MAX_EXTRA_ANSWERS = 2
    settings.KBPO_REJECT_MIN_QUESTIONS = 3
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return settings


@pytest.fixture
def planned(crowd_settings, django_capture_on_commit_callbacks):
    crowd_settings.KBPO_CROWD_BACKEND = "simulated"
    return planned_hit(django_capture_on_commit_callbacks)


@pytest.fixture
def label_log():
    """The labels as each `labels_changed` found them: (n_answers, support) per pair type."""
    seen: list[dict[str, tuple[int, float]]] = []

    def snap(sender, corpus_id, **kw) -> None:
        seen.append({lab.pair.object_type: (lab.n_answers, lab.support)
                     for lab in PairLabel.objects.select_related("pair")})

    labels_changed.connect(snap, weak=False, dispatch_uid="test-rejected")
    yield seen
    labels_changed.disconnect(dispatch_uid="test-rejected")


def _not_counted(worker: str, n: int = 3) -> None:
    rows = Response.objects.filter(worker__external_id=worker)
    assert rows.count() == n and not rows.filter(counted=True).exists()  # kept, for audit


def _labels() -> dict[str, PairLabel]:
    return {lab.pair.object_type: lab for lab in PairLabel.objects.select_related("pair")}


def test_spam_rejected_by_the_review_no_longer_counts(
        planned, label_log, django_capture_on_commit_callbacks) -> None:
    sub, hit = planned
    add_control(hit)  # spam is rejected only on a question whose answer is known
    for name, choose in (("good1", truth), ("spam", wrong), ("good2", truth)):
        with django_capture_on_commit_callbacks(execute=True):
            answer(hit, name, choose)
    # The labels were made with the spammer's answers (3 answers, 2 agreeing) ...
    assert label_log[0] == {t: (3, pytest.approx(2 / 3)) for t in TRUTH}
    # ... then the review of the complete HIT rejected it: its answers no longer count,
    # two remain for three needed, so the labels are gone and the questions reopened.
    spam = Assignment.objects.get(worker__external_id="spam")
    assert spam.state == AssignmentState.REJECTED and spam.paid == 0
    _not_counted("spam", 4)
    assert not PairLabel.objects.exists() and label_log[-1] == {}
    assert set(Question.objects.filter(requested_by=sub).values_list("state", flat=True)) \
        == {QuestionState.OPEN}
    # Asked again as missing answers are: a new HIT for the one answer each lacks.
    again = Hit.objects.exclude(pk=hit.pk).get(submission=sub)
    assert again.state == HitState.POSTED and again.max_assignments == 1
    assert Hit.objects.get(pk=hit.pk).state == HitState.COMPLETE
    sub.refresh_from_db()
    # Scored with the spammer's answers; back to annotating, its drawn pairs unlabelled.
    assert label_log[0] and sub.state == State.ANNOTATING
    # The quality pass reads only the answers that count.
    report = quality_workers.update_worker_quality(sub.corpus_id)
    assert report.answers == 8  # good1 and good2, on 3 questions and the control
    assert CrowdWorker.objects.get(external_id="spam").accuracy_ds is None
    with django_capture_on_commit_callbacks(execute=True):
        answer(again, "good3", truth)
    labels = _labels()
    assert {t: (lab.n_answers, lab.support, lab.predicates) for t, lab in labels.items()} \
        == {t: (3, 1.0, TRUTH[t]) for t in TRUTH}
    assert all(lab.majority == lab.predicates for lab in labels.values())
    # The crowd accuracy, and the score run the new labels asked for, count 9 answers
    # (good1, good2, good3), all agreeing: not the spammer's 3.
    agreement = crowd_accuracy(sub.corpus_id).agreement
    assert (agreement.answers, agreement.estimate) == (9, 1.0)
    run = latest_run(sub.corpus_id)
    assert run.crowd["agreement"]["answers"] == 9
    sub.refresh_from_db()
    assert sub.state != State.ANNOTATING  # labelled again: on to scoring
    assert not Response.objects.filter(worker__external_id="spam", counted=True).exists()


def _committing(capture):
    """An answer function whose commit callbacks (aggregation, recounts) run."""
    def submit(h, name, choose):
        with capture(execute=True):
            answer(h, name, choose)
    return submit


def _tied_then_labelled(hit: Hit, submit, bad: str = "bad") -> None:
    """good1, bad (wrong everywhere) and split: two pairs labelled with bad's answers,
    the spouse pair tied (one more answer asked), the HIT still posted."""
    for name, choose in (("good1", truth), ("bad", wrong), ("split", splitting)):
        submit(hit, name, choose)
    assert {t: lab.n_answers for t, lab in _labels().items()} == {"GPE": 3, "ORG": 3}
    assert Assignment.objects.get(worker__external_id=bad).state == AssignmentState.SUBMITTED


def test_an_operators_rejection_in_the_admin_takes_the_same_path(
        client, planned, label_log, django_capture_on_commit_callbacks) -> None:
    sub, hit = planned

    submit = _committing(django_capture_on_commit_callbacks)

    _tied_then_labelled(hit, submit)
    staff = make_user("op", staff=True)
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    bad = Assignment.objects.get(worker__external_id="bad")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("admin:annotations_assignment_changelist"),
                    {"action": "reject_selected", "_selected_action": [bad.pk],
                     "confirm": "1", "reason": "random clicks"})
    bad.refresh_from_db()
    assert bad.state == AssignmentState.REJECTED
    _not_counted("bad")
    assert not PairLabel.objects.exists() and label_log[-1] == {}
    # The HIT is still posted: it gets the slots its questions now lack (the spouse
    # pair needs 4 answers and has 2 that count) rather than a new HIT.
    hit.refresh_from_db()
    assert hit.state == HitState.POSTED and Hit.objects.filter(submission=sub).count() == 1
    assert hit.max_assignments == 5 and slots.still_needed(hit) == 2
    for name in ("good3", "good4"):
        submit(hit, name, truth)
    labels = _labels()
    assert {t: (lab.n_answers, lab.support) for t, lab in labels.items()} == {
        "GPE": (3, 1.0), "ORG": (3, 1.0), "PER": (4, 0.75)}
    assert {t: lab.predicates for t, lab in labels.items()} == TRUTH
    hit.refresh_from_db()
    assert hit.state == HitState.COMPLETE
    assert Assignment.objects.get(pk=bad.pk).paid == Decimal("0")


def test_a_rejection_on_mturks_site_copied_by_the_sync_takes_the_same_path(
        crowd_settings, fake, label_log, django_capture_on_commit_callbacks) -> None:
    _sub, hit = planned_hit(django_capture_on_commit_callbacks)  # posted on the fake MTurk
    ids: dict[str, str] = {}

    def submit(h, name, choose):
        ids[name] = fake.worker_submits(h.external_id, "A" + name.upper(),
                                        answers_json(h, choose))
        with django_capture_on_commit_callbacks(execute=True):
            periodic.sync_all()

    _tied_then_labelled(hit, submit, bad="ABAD")
    # The requester rejects BAD on MTurk's own site; the next sync copies the verdict.
    mturk.reject(mturk.make_client(fake.endpoint_url), ids["bad"], "random clicks")
    with django_capture_on_commit_callbacks(execute=True):
        result = periodic.sync_all()
    assert result.status_copied == 1 and not result.errors
    bad = Assignment.objects.get(worker__external_id="ABAD")
    assert bad.state == AssignmentState.REJECTED
    _not_counted("ABAD")
    assert not PairLabel.objects.exists() and label_log[-1] == {}
    # Slots replaced on MTurk as for refused work: the two answers the spouse pair lacks.
    hit.refresh_from_db()
    remote = fake.hits[hit.external_id]
    assert remote.max_assignments == hit.max_assignments == 5
    for name in ("good3", "good4"):
        submit(hit, name, truth)
    labels = _labels()
    assert {t: (lab.n_answers, lab.support) for t, lab in labels.items()} == {
        "GPE": (3, 1.0), "ORG": (3, 1.0), "PER": (4, 0.75)}
    assert Hit.objects.get(pk=hit.pk).state == HitState.COMPLETE
    assert fake.assignment_status(ids["bad"]) == "Rejected"


def test_a_recount_lost_after_the_rejection_is_done_by_the_re_drive(
        planned, django_capture_on_commit_callbacks) -> None:
    _sub, hit = planned

    submit = _committing(django_capture_on_commit_callbacks)

    _tied_then_labelled(hit, submit)
    bad = Assignment.objects.get(worker__external_id="bad")
    # The process dies after the rejection commits: its queued recount never goes out.
    with django_capture_on_commit_callbacks(execute=False) as lost:
        reject_assignment(bad, "random clicks")
    assert lost and not Response.objects.filter(assignment=bad, counted=True).exists()
    assert {t: lab.n_answers for t, lab in _labels().items()} == {"GPE": 3, "ORG": 3}
    assert sorted(labels.stale_labels()) == sorted(
        Question.objects.filter(pair__object_type__in=("GPE", "ORG")).values_list(
            "pk", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        out = periodic.redrive()
    assert out.recounted == 2 and not PairLabel.objects.exists()
    assert labels.stale_labels() == []
    hit.refresh_from_db()
    assert hit.max_assignments == 5  # the slots the reopened questions lack


def _labelled_born(names: str) -> tuple[Question, dict[str, Assignment]]:
    """One question on the birthplace pair, answered by one assignment per name (the
    right answer, but "c"'s), and labelled with all of them (posterior fitted)."""
    corpus, pairs = small_world()
    hit = make_hit(corpus, [pairs["born"]])
    q = hit.items.get().question
    assignments = {}
    for name in names:
        worker = CrowdWorker.objects.create(backend="simulated", external_id=name)
        assignments[name] = Assignment.objects.create(hit=hit, worker=worker,
                                                      external_id=f"as-{name}")
        Response.objects.create(assignment=assignments[name], question=q, worker=worker,
                                choices=WRONG["GPE"] if name == "c" else TRUTH["GPE"])
    Question.objects.filter(pk=q.pk).update(state=QuestionState.COMPLETE)
    PairLabel.objects.create(pair=pairs["born"], question=q, predicates=TRUTH["GPE"],
                             majority=TRUTH["GPE"], support=(len(names) - 1) / len(names),
                             n_answers=len(names), posterior={"per:place_of_birth": 0.9},
                             p_correct=0.9)
    return q, assignments


def test_enough_answers_left_update_the_label_in_place(
        crowd_settings, label_log, django_capture_on_commit_callbacks) -> None:
    """Four answers (one came late), three still counting after the rejection: the same
    label row, its vote from those three, its stale posterior cleared; a retried
    recount changes nothing."""
    q, assignments = _labelled_born("abcd")
    label = PairLabel.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        reject_assignment(assignments["c"], "random clicks")
    after = PairLabel.objects.get()
    assert after.pk == label.pk and after.predicates == after.majority == TRUTH["GPE"]
    assert (after.n_answers, after.support, after.method) == (3, 1.0, "majority")
    assert after.posterior == {} and after.p_correct is None
    assert label_log == [{"GPE": (3, 1.0)}]  # the scores are recomputed
    with django_capture_on_commit_callbacks(execute=True):
        assert labels.recount([q.pk]).labelled == []
    assert len(label_log) == 1 and labels.stale_labels() == []


def _marked() -> set[int]:
    return set(Question.objects.filter(recount_pending_since__isnull=False)
               .values_list("pk", flat=True))


def _question(object_type: str) -> Question:
    return Question.objects.get(pair__object_type=object_type)


def test_a_lost_recount_is_found_though_a_late_answer_made_up_the_count(
        planned, django_capture_on_commit_callbacks) -> None:
    """The late answer the tied spouse pair asked for also answers the two labelled
    pairs: after the rejection they still have as many counted answers as their labels
    count, yet those labels count the rejected answers."""
    _sub, hit = planned

    submit = _committing(django_capture_on_commit_callbacks)

    _tied_then_labelled(hit, submit)
    submit(hit, "late", truth)
    bad = Assignment.objects.get(worker__external_id="bad")
    with django_capture_on_commit_callbacks(execute=False) as lost:
        reject_assignment(bad, "random clicks")
    assert lost
    for t in ("GPE", "ORG"):
        q = _question(t)
        assert q.responses.filter(counted=True).count() == _labels()[t].n_answers == 3
    assert {t: lab.support for t, lab in _labels().items()} == {
        "GPE": pytest.approx(2 / 3), "ORG": pytest.approx(2 / 3)}
    stale = {_question("GPE").pk, _question("ORG").pk}
    assert set(labels.stale_labels()) == stale
    with django_capture_on_commit_callbacks(execute=True):
        out = periodic.redrive()
    assert out.recounted == 2
    # good1, split and late: the rejected answers no longer count.
    assert {t: (lab.n_answers, lab.support) for t, lab in _labels().items()} == {
        "GPE": (3, 1.0), "ORG": (3, 1.0)}
    assert labels.stale_labels() == [] and not _marked() & stale


def test_the_mark_is_set_by_the_rejection_and_cleared_by_the_recount(
        planned, monkeypatch, django_capture_on_commit_callbacks) -> None:
    _sub, hit = planned

    submit = _committing(django_capture_on_commit_callbacks)

    _tied_then_labelled(hit, submit)
    assert not _marked()
    bad = Assignment.objects.get(worker__external_id="bad")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        reject_assignment(bad, "random clicks")
    assert _marked() == set(Question.objects.values_list("pk", flat=True))
    # A recount that fails rolls its clearing back with its relabelling.
    real_vote = aggregation.majority_vote

    def broken(answers):
        raise RuntimeError("worker died")

    monkeypatch.setattr(aggregation, "majority_vote", broken)
    with pytest.raises(RuntimeError):
        labels.recount([_question("GPE").pk])
    assert _question("GPE").pk in _marked()
    monkeypatch.setattr(aggregation, "majority_vote", real_vote)
    with django_capture_on_commit_callbacks(execute=True):
        for send in queued:
            send()  # the recount the rejection queued
    assert not _marked() and not PairLabel.objects.exists()


postgres_only = pytest.mark.skipif("connection.vendor != 'postgresql'",
                                   reason="row locks need Postgres")


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_rejection_during_a_recount_leaves_the_question_marked(
        crowd_settings, monkeypatch) -> None:
    """A recount has read the answers (e's still counting) when e is rejected: the
    recount commits a label counting e, so the question must stay marked for it."""
    q, assignments = _labelled_born("abcde")
    queued: list[tuple] = []
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kw: queued.append(args))
    reject_assignment(assignments["c"], "random clicks")  # its recount is lost
    assert queued == [(RECOUNT_TASK, [q.pk])] and _marked() == {q.pk}
    read, release = threading.Event(), threading.Event()
    real_vote = aggregation.majority_vote

    def paused(answers):
        if threading.current_thread().name == "recount":
            read.set()
            release.wait(30)
        return real_vote(answers)

    monkeypatch.setattr(aggregation, "majority_vote", paused)
    errors: list[BaseException] = []

    def run(fn) -> None:
        try:
            fn()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    recount = threading.Thread(target=run, name="recount",
                               args=(lambda: labels.recount([q.pk]),))
    rejection = threading.Thread(target=run, name="rejection", args=(
        lambda: reject_assignment(assignments["e"], "random clicks"),))
    recount.start()
    assert read.wait(30)
    rejection.start()
    deadline = time.monotonic() + 10  # until it waits for the recount's lock (or is done)
    while rejection.is_alive() and time.monotonic() < deadline:
        with connection.cursor() as cur:
            cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                        "current_database() AND wait_event_type = 'Lock'")
            if cur.fetchone()[0]:
                break
        time.sleep(0.05)
    release.set()
    recount.join(30)
    rejection.join(30)
    assert not errors and not recount.is_alive() and not rejection.is_alive()
    # The recount's label still counts e (a, b, d, e); the mark stays for e's recount.
    assert (PairLabel.objects.get().n_answers, len(queued)) == (4, 2)
    assert _marked() == {q.pk} and labels.stale_labels() == [q.pk]
    labels.recount([q.pk])
    label = PairLabel.objects.get()
    assert (label.n_answers, label.support) == (3, 1.0) and not _marked()


def test_answers_discounted_before_the_mark_existed_are_marked_by_the_migration(
        planned, django_capture_on_commit_callbacks) -> None:
    _sub, hit = planned

    submit = _committing(django_capture_on_commit_callbacks)

    _tied_then_labelled(hit, submit)
    with django_capture_on_commit_callbacks(execute=False):
        reject_assignment(Assignment.objects.get(worker__external_id="bad"), "spam")
    Question.objects.update(recount_pending_since=None)  # as before migration 0013
    migration = importlib.import_module(
        "annotations.migrations.0013_question_recount_pending")
    migration.mark_discounted(django_apps, None)
    # The labelled questions; the spouse pair is open (no label to fix).
    assert _marked() == {_question("GPE").pk, _question("ORG").pk}
