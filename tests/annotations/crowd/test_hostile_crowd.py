"""A hostile crowd against the fake MTurk requester and our real answer endpoint.

Honest workers accept a HIT on MTurk, post their answers through the task page's
endpoint and then to MTurk (externalSubmit), as the page does. Hostile ones invent
worker and assignment ids, claim another worker's assignment, replay posts, answer
full HITs, return or abandon what they accepted, submit garbage or made-up labels to
MTurk directly, or hammer the endpoint. `test_hostile_crowd_scenario` plays them all
together, while MTurk throttles us, and measures what the issue asks: forged labels
stored, honest workers rejected, questions left open, refused work paid — all 0.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field

import pytest
from django.test import Client
from django.utils import timezone

from annotations.crowd import backends, periodic, sync
from annotations.models import (
    Assignment,
    AssignmentState,
    CrowdWorker,
    Hit,
    HitState,
    PagePost,
    PagePostState,
    Question,
    QuestionState,
    Response,
)
from estimation import planning
from tests import ROOT
from tests.annotations.crowd.fake_mturk import FakeMTurk, WorkerCannotAccept
from tests.annotations.crowd.helpers import small_world, system

pytestmark = pytest.mark.django_db
PUBLIC = "https://kbpo.example.org"
SANDBOX = "https://workersandbox.mturk.com"
WINDOW = 10**9  # fixed rate-limit windows: a test never straddles two
TRUTH = {"GPE": ["per:place_of_birth"], "PER": ["per:spouse"],
         "ORG": ["per:employee_or_member_of"]}


@pytest.fixture
def fake(monkeypatch, settings):
    for k, v in {"AWS_ACCESS_KEY_ID": "AKIDKBPOTESTKEY", "AWS_SECRET_ACCESS_KEY": "not-secret",
                 "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
                 "AWS_EC2_METADATA_DISABLED": "true", "NO_PROXY": "127.0.0.1,localhost"}.items():
        monkeypatch.setenv(k, v)
    with FakeMTurk(balance="100.00") as server:
        settings.KBPO_CROWD_BACKEND = "mturk"
        settings.MTURK_ENDPOINT_URL = server.endpoint_url
        settings.KBPO_PUBLIC_URL = PUBLIC
        settings.KBPO_MTURK_MAX_ATTEMPTS = 4
        settings.KBPO_QUESTIONS_PER_HIT = 3
        settings.KBPO_ANSWERS_PER_QUESTION = 3
        settings.KBPO_REJECT_MIN_QUESTIONS = 3
        yield server
    assert not server.internal_errors, server.internal_errors


def later(seconds: float) -> dt.datetime:
    return timezone.now() + dt.timedelta(seconds=seconds)


def plan(names: list[str], capture, tag: str = "c") -> Hit:
    corpus, pairs = small_world(tag)
    sub = system(corpus, pairs, names)
    with capture(execute=True):
        planning.plan_submission(sub.pk)
    return Hit.objects.get(submission=sub)


def choices(hit: Hit, choose=lambda q: TRUTH[q.pair.object_type]) -> list[dict]:
    items = hit.items.select_related("question__pair").order_by("position")
    return [{"question": i.question_id, "choices": choose(i.question), "seconds": 4.0}
            for i in items]


@dataclass
class Crowd:
    """Plays workers: the page's post to us, and what MTurk sees."""

    fake: FakeMTurk
    client: Client
    capture: object
    honest: set[str] = field(default_factory=set)
    hostile: set[str] = field(default_factory=set)
    statuses: list[int] = field(default_factory=list)

    def post(self, hit: Hit, worker: str, assignment: str, answers: list[dict],
             ip: str = "198.51.100.1", hit_id: str | None = None) -> int:
        body = {"assignmentId": assignment, "workerId": worker, "turkSubmitTo": SANDBOX,
                "hitId": hit.external_id if hit_id is None else hit_id, "answers": answers}
        with self.capture(execute=True):   # the post's confirmation check runs, as live
            response = self.client.post(f"/annotate/hit/{hit.url_key}/answers/",
                                        data=json.dumps(body),
                                        content_type="application/json", REMOTE_ADDR=ip)
        self.statuses.append(response.status_code)
        return response.status_code

    def work(self, hit: Hit, worker: str, answers: list[dict] | None = None,
             ip: str = "198.51.100.1") -> str:
        """An honest worker: accept on MTurk, post through the page, submit to MTurk."""
        self.honest.add(worker)
        answers = answers or choices(hit)
        aid = self.fake.worker_accepts(hit.external_id, worker)
        assert self.post(hit, worker, aid, answers, ip=ip) == 200
        self.fake.worker_submits(hit.external_id, worker, {"answers": json.dumps(
            {"answers": answers})})
        return aid

    def sync(self):
        with self.capture(execute=True):
            return periodic.sync_all()


@pytest.fixture
def crowd(fake, client, django_capture_on_commit_callbacks) -> Crowd:
    return Crowd(fake, client, django_capture_on_commit_callbacks)


# --- One attack at a time -----------------------------------------------------------------


def test_invented_ids_are_kept_aside_and_expire(crowd, fake, settings,
                                                django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    wrong = choices(hit, lambda q: ["no_relation"])
    for i in range(3):  # three invented workers would have decided every label before
        assert crowd.post(hit, f"AFORGER{i}", f"INVENTED{i:026d}", wrong) == 200
    assert PagePost.objects.filter(state=PagePostState.WAITING).count() == 3
    assert not Assignment.objects.exists() and not Response.objects.exists()
    # One confirmation check for the HIT, not one per post: nothing there.
    assert not fake.calls_of("GetAssignment")
    assert len(fake.calls_of("ListAssignmentsForHIT")) == 1
    result = crowd.sync()
    assert result.reconciled == 0 and not Response.objects.exists()
    assert Question.objects.filter(state=QuestionState.OPEN).count() == 3
    # The honest crowd still decides; the forged posts expire unused.
    for w in ("AHONEST1", "AHONEST2", "AHONEST3"):
        crowd.work(hit, w)
    crowd.sync()
    assert not Question.objects.filter(state=QuestionState.OPEN).exists()
    assert set(Response.objects.values_list("worker__external_id", flat=True)) == {
        "AHONEST1", "AHONEST2", "AHONEST3"}
    assert sync.expire_page_posts() == 0          # not yet: within KBPO_PAGE_POST_TTL
    assert sync.expire_page_posts(later(settings.KBPO_PAGE_POST_TTL + 1)) == 3
    assert set(PagePost.objects.filter(worker_external_id__startswith="AFORGER")
               .values_list("state", flat=True)) == {PagePostState.EXPIRED}
    # Their answers are dropped at expiry; the rows a day later.
    assert [p for p in PagePost.objects.filter(state=PagePostState.EXPIRED)
            .values_list("payload", flat=True) if p] == []
    assert {fake.assignment_status(a) for a in fake.assignments} == {"Approved"}


@pytest.mark.parametrize("assignment", ["invented-1", "a1b2c3", "A 1", "Ä1"])
def test_assignment_ids_mturk_never_issues_are_refused_at_once(
        crowd, fake, django_capture_on_commit_callbacks, assignment) -> None:
    """MTurk's assignment ids are capital letters and digits. A post with any other id
    is made up: a 400 naming the field, nothing kept, and MTurk is never asked about
    it (GetAssignment refuses such an id as malformed, which failed the check task)."""
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    assert crowd.post(hit, "AFORGER1", assignment, choices(hit)) == 400
    assert not PagePost.objects.exists()
    assert not fake.calls_of("GetAssignment")


def test_another_workers_assignment_and_replays(crowd, fake,
                                                django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    aid = fake.worker_accepts(hit.external_id, "AHONEST1")
    honest = choices(hit)
    wrong = choices(hit, lambda q: ["no_relation"])
    # A forger who saw the honest assignment id claims it first, under its own id...
    assert crowd.post(hit, "AFORGER1", aid, wrong) == 200
    # ...and under the honest worker's id, after the honest post (the last post wins
    # locally), but MTurk's copy of the answer decides.
    assert crowd.post(hit, "AHONEST1", aid, honest) == 200
    assert crowd.post(hit, "AHONEST1", aid, wrong, ip="203.0.113.66") == 200
    fake.worker_submits(hit.external_id, "AHONEST1",
                        {"answers": json.dumps({"answers": honest})})
    post = PagePost.objects.get(worker_external_id="AHONEST1")
    assert sync.confirm_page_post(post.pk) == PagePostState.CONFIRMED
    post.refresh_from_db()
    assert "differs" in post.note
    assert PagePost.objects.get(worker_external_id="AFORGER1").state == PagePostState.FORGED
    a = Assignment.objects.get()
    assert a.worker.external_id == "AHONEST1" and a.source == "confirm"
    assert sorted(r.choices for r in a.responses.all()) == sorted(x["choices"] for x in honest)
    # Replays: the same post again changes nothing; once confirmed, another worker's
    # claim is refused; a post naming another HIT id is refused.
    assert crowd.post(hit, "AHONEST1", aid, honest) == 200
    assert crowd.post(hit, "AFORGER2", aid, wrong) == 403
    assert crowd.post(hit, "AHONEST1", aid, honest, hit_id="3" * 30) == 400
    crowd.sync()
    assert Assignment.objects.count() == 1 and Response.objects.count() == 3


def test_answers_keyed_as_the_page_numbers_them_count_on_the_questions_shown(
        crowd, fake, django_capture_on_commit_callbacks) -> None:
    """The page numbers a HIT's questions 0, 1, … (never by id: a control's id gives it
    away); its post and MTurk's copy, keyed so, count on the questions shown."""
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    shown = [i.question for i in hit.items.select_related("question__pair")
             .order_by("position", "pk")]
    page = crowd.client.get(f"/annotate/hit/{hit.url_key}/", {
        "assignmentId": "A1", "hitId": hit.external_id, "workerId": "AHONEST1",
        "turkSubmitTo": SANDBOX}).content.decode()
    assert [q["id"] for q in json.loads(page.split('id="task-data" type="application/json">')[1]
                                        .split("</script>")[0])["questions"]] == [0, 1, 2]
    answers = [{"question": n, "choices": TRUTH[q.pair.object_type]}
               for n, q in enumerate(shown)]
    crowd.work(hit, "AHONEST1", answers)
    crowd.sync()
    post = PagePost.objects.get()
    assert (post.state, post.note) == (PagePostState.CONFIRMED, "")
    assert dict(Response.objects.values_list("question_id", "choices")) == {
        q.pk: TRUTH[q.pair.object_type] for q in shown}


def test_answers_after_a_hit_is_full(crowd, fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    with pytest.MonkeyPatch.context() as mp:
        # Keep the HIT open on our side while its slots are full: review waits.
        mp.setattr("annotations.crowd.labels.settle_hits", lambda ids: [])
        for w in ("AHONEST1", "AHONEST2", "AHONEST3"):
            crowd.work(hit, w)
        crowd.sync()
        hit.refresh_from_db()
        assert hit.state == HitState.POSTED
        assert crowd.post(hit, "ALATE1", "LATE0000000000000000000000001", choices(hit)) == 409
    with pytest.raises(WorkerCannotAccept):
        fake.worker_accepts(hit.external_id, "ALATE2")  # MTurk has no slot for them either
    assert not PagePost.objects.filter(worker_external_id__startswith="ALATE").exists()


def test_returned_abandoned_and_expired(crowd, fake, settings,
                                        django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    # One worker posts to us, then returns the HIT on MTurk instead of submitting it.
    aid = fake.worker_accepts(hit.external_id, "ARETURN1")
    assert crowd.post(hit, "ARETURN1", aid, choices(hit)) == 200
    fake.worker_returns(hit.external_id, "ARETURN1")
    # The HIT then runs out of lifetime with its questions open: the sync extends it.
    backends.expire(hit)
    assert fake.hit_status(hit.external_id) == "Reviewable"
    result = crowd.sync()
    assert result.extended == 1 and fake.hit_status(hit.external_id) == "Assignable"
    # Another worker accepts and walks away: MTurk puts the slot back after the
    # assignment's duration.
    fake.worker_accepts(hit.external_id, "AABANDON1")
    fake.advance(settings.KBPO_MTURK_ASSIGNMENT_DURATION + 1)
    assert fake.hits[hit.external_id].max_assignments == 3   # nothing for us to add
    assert crowd.sync().replaced == 0
    for w in ("AHONEST1", "AHONEST2", "AHONEST3"):
        crowd.work(hit, w)
    crowd.sync()
    assert not Question.objects.filter(state=QuestionState.OPEN).exists()
    assert not Response.objects.filter(worker__external_id="ARETURN1").exists()
    assert PagePost.objects.get(worker_external_id="ARETURN1").state == PagePostState.WAITING
    assert sync.expire_page_posts(later(settings.KBPO_PAGE_POST_TTL + 1)) == 1


def submit_on_mturk(fake: FakeMTurk, hit: Hit, worker: str, answers: object) -> str:
    """Work that reaches MTurk without our page (externalSubmit posted by hand)."""
    value = answers if isinstance(answers, str) else json.dumps({"answers": answers})
    return fake.worker_submits(hit.external_id, worker, {"answers": value})


def test_refused_work_is_rejected_with_a_reason_and_replaced(
        crowd, fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    made_up = choices(hit, lambda q: ["per:made_up_relation"])
    bad = submit_on_mturk(fake, hit, "AMADEUP1", made_up)
    short = submit_on_mturk(fake, hit, "ASHORT1", [  # as the page numbers them, one short
        {"question": n, "choices": ["no_relation"]} for n in range(2)])
    result = crowd.sync()
    assert (result.refused, result.replaced) == (2, 2)
    assert fake.assignment_status(bad) == fake.assignment_status(short) == "Rejected"
    assert "'per:made_up_relation' is not an option" in fake.assignments[bad].feedback
    assert "has no answer" in fake.assignments[short].feedback
    assert fake.hits[hit.external_id].max_assignments == 5
    for w in ("AHONEST1", "AHONEST2", "AHONEST3"):
        crowd.work(hit, w)
    crowd.sync()
    assert not Question.objects.filter(state=QuestionState.OPEN).exists()
    assert {a.worker.external_id: a.state for a in Assignment.objects.all()} == {
        "AMADEUP1": "rejected", "ASHORT1": "rejected", "AHONEST1": "approved",
        "AHONEST2": "approved", "AHONEST3": "approved"}
    # No bonus on rejected work, ever.
    from decimal import Decimal

    from annotations.crowd import review

    with pytest.raises(ValueError, match="approved work only"):
        review.grant_bonus(Assignment.objects.get(worker__external_id="AMADEUP1"),
                           Decimal("0.10"), "nice try")
    assert not fake.calls_of("SendBonus")


@pytest.mark.parametrize("why", ["blocked", "closed"])
def test_malformed_work_is_rejected_even_when_the_refusal_would_be_ours(
        crowd, fake, django_capture_on_commit_callbacks, why) -> None:
    """A blocked worker, or one whose HIT closed, is paid for work we cannot count (our
    fault) — but not for a made-up label or a left-out question: that is theirs, and
    was approved and paid because the intake refused on the first reason it found."""
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    fake.worker_accepts(hit.external_id, "ABAD1")
    fake.worker_accepts(hit.external_id, "AFAIR1")
    if why == "blocked":
        CrowdWorker.objects.create(backend="mturk", external_id="ABAD1", blocked=True)
        CrowdWorker.objects.create(backend="mturk", external_id="AFAIR1", blocked=True)
    else:
        Hit.objects.filter(pk=hit.pk).update(state=HitState.EXPIRED)
    bad = submit_on_mturk(fake, hit, "ABAD1", choices(hit, lambda q: ["per:made_up"]))
    fair = submit_on_mturk(fake, hit, "AFAIR1", choices(hit))
    crowd.sync()
    assert (fake.assignment_status(bad), fake.assignment_status(fair)) == (
        "Rejected", "Approved")
    assert "'per:made_up' is not an option" in fake.assignments[bad].feedback
    assert Assignment.objects.get(external_id=bad).paid == 0
    assert not Response.objects.exists()


def test_the_same_worker_twice_is_paid_but_not_counted(
        crowd, fake, django_capture_on_commit_callbacks) -> None:
    from annotations.crowd import slots

    first = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    for w in ("AHONEST1", "AHONEST2"):
        crowd.work(first, w)
    crowd.sync()
    with django_capture_on_commit_callbacks(execute=True):
        second = slots.repost(first)   # an operator retired it: same questions, new HIT
    assert second is not None and second.pk != first.pk and second.max_assignments == 1
    assert {fake.assignment_status(a) for a in fake.assignments} == {"Approved"}
    # The page tells a worker who already answered these questions to return the HIT.
    aid = fake.worker_accepts(second.external_id, "AHONEST1")
    assert crowd.post(second, "AHONEST1", aid, choices(second)) == 409
    # Submitting on MTurk anyway: our fault (we offered it), so paid and not counted.
    submit_on_mturk(fake, second, "AHONEST1", choices(second))
    result = crowd.sync()
    assert (result.refused, result.replaced) == (1, 1)
    assert fake.assignment_status(aid) == "Approved"
    assert "already answered" in fake.assignments[aid].feedback
    repeat = Assignment.objects.get(external_id=aid)
    assert (repeat.refusal, repeat.state, repeat.responses.count()) == ("pay", "approved", 0)
    crowd.work(second, "AHONEST3")
    crowd.sync()
    assert not Question.objects.filter(state=QuestionState.OPEN).exists()


def test_a_hit_that_cannot_grow_is_posted_again(crowd, fake,
                                                django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    for i in range(7):   # each garbage submission is rejected and its slot replaced
        submit_on_mturk(fake, hit, f"AGARBAGE{i}", "not json")
        crowd.sync()
    hit.refresh_from_db()
    # 3 + 6 replacements = 9; the 7th would take MTurk from 9 to 10 assignments, which it
    # refuses: the HIT is retired and its questions posted again.
    assert hit.state == HitState.EXPIRED and fake.hits[hit.external_id].max_assignments == 9
    new = Hit.objects.get(submission=hit.submission, state=HitState.POSTED)
    assert new.max_assignments == 3 and new.items.count() == 3
    assert not fake.calls_of("CreateAdditionalAssignmentsForHIT")[6:]
    for w in ("AHONEST1", "AHONEST2", "AHONEST3"):
        crowd.work(new, w)
    crowd.sync()
    assert not Question.objects.filter(state=QuestionState.OPEN).exists()
    garbage = [a for a in fake.assignments.values() if a.worker_id.startswith("AGARBAGE")]
    assert len(garbage) == 7 and {a.status for a in garbage} == {"Rejected"}


# --- Everything at once: the figures ------------------------------------------------------


def test_hostile_crowd_scenario(crowd, fake, settings,
                                django_capture_on_commit_callbacks) -> None:
    settings.KBPO_ANSWER_RATE_PER_IP = 30
    settings.KBPO_ANSWER_RATE_WINDOW = WINDOW
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born", "wed", "work", "hq", "mborn", "mwork"])
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    hits = list(Hit.objects.filter(submission=sub).order_by("pk"))
    assert len(hits) == 2
    truth_of = {"GPE": "per:place_of_birth", "PER": "per:spouse",
                "ORG": "per:employee_or_member_of"}

    def truth(q):
        if q.pair.subject_type == "ORG":
            return ["org:place_of_headquarters"]
        return [truth_of[q.pair.object_type]]

    def wrong(q):
        return ["no_relation"]

    refused_workers: set[str] = set()
    for n, hit in enumerate(hits):
        # Invented workers and assignments, from many addresses, all answering wrong.
        for i in range(4):
            crowd.hostile.add(f"AFORGER{n}{i}")
            crowd.post(hit, f"AFORGER{n}{i}", f"INVENTED{n}{i:025d}", choices(hit, wrong),
                       ip=f"203.0.113.{10 * n + i}")
        # A burst from one address: throttled.
        for i in range(40):
            crowd.post(hit, f"ABURST{n}{i}", f"BURST{n}{i:028d}", choices(hit, wrong),
                       ip="192.0.2.99")
        # A worker who claims the first honest worker's assignment, before and after.
        honest_aid = fake.worker_accepts(hit.external_id, f"AHONEST{n}0")
        crowd.honest.add(f"AHONEST{n}0")
        crowd.hostile.add(f"ACLAIM{n}")
        crowd.post(hit, f"ACLAIM{n}", honest_aid, choices(hit, wrong), ip="203.0.113.200")
        answers = choices(hit, truth)
        assert crowd.post(hit, f"AHONEST{n}0", honest_aid, answers) == 200
        crowd.post(hit, f"AHONEST{n}0", honest_aid, choices(hit, wrong), ip="203.0.113.201")
        submit_on_mturk(fake, hit, f"AHONEST{n}0", answers)
        # Garbage and made-up labels straight to MTurk; a return; an abandonment.
        aid = fake.worker_accepts(hit.external_id, f"ARETURN{n}")
        crowd.post(hit, f"ARETURN{n}", aid, choices(hit, wrong), ip="203.0.113.202")
        fake.worker_returns(hit.external_id, f"ARETURN{n}")
        refused_workers |= {f"AGARBAGE{n}", f"AMADEUP{n}"}
        submit_on_mturk(fake, hit, f"AGARBAGE{n}", "<script>")
        submit_on_mturk(fake, hit, f"AMADEUP{n}", choices(hit, lambda q: ["per:invented"]))
    crowd.hostile |= refused_workers | {f"ARETURN{n}" for n in range(2)}
    assert 429 in crowd.statuses
    # MTurk throttles us meanwhile: every call is retried (botocore), nothing doubles.
    for operation in ("ListAssignmentsForHIT", "GetAssignment", "RejectAssignment",
                      "ApproveAssignment", "CreateAdditionalAssignmentsForHIT", "GetHIT"):
        fake.inject(operation, "ThrottlingException")
    crowd.sync()
    backends.expire(hits[1])                      # one HIT runs out of lifetime
    pool = [f"AHONEST{i}" for i in range(2, 12)]
    for _ in range(6):                            # honest workers until nothing is open
        crowd.sync()
        open_hits = Hit.objects.filter(state=HitState.POSTED,
                                       items__question__state=QuestionState.OPEN).distinct()
        if not open_hits:
            break
        for hit in open_hits:
            for w in pool:
                if fake.hit_status(hit.external_id) != "Assignable":
                    break
                if Assignment.objects.filter(hit=hit, worker__external_id=w).exists():
                    continue
                try:
                    crowd.work(hit, w, choices(hit, truth), ip=f"198.51.100.{pool.index(w)}")
                except WorkerCannotAccept:
                    continue
    crowd.sync()
    with django_capture_on_commit_callbacks(execute=True):
        periodic.redrive()
    sync.expire_page_posts(later(settings.KBPO_PAGE_POST_TTL + 1))

    from annotations.models import PairLabel

    labels = {lab.pair_id: lab.predicates for lab in PairLabel.objects.select_related("pair")}
    questions = Question.objects.filter(requested_by=sub).select_related("pair")
    figures = {
        "forged labels stored": sum(labels.get(q.pair_id) not in (None, truth(q))
                                    for q in questions)
        + Response.objects.filter(worker__external_id__in=crowd.hostile).count(),
        "honest workers rejected": sum(a.status == "Rejected" for a in fake.assignments.values()
                                       if a.worker_id in crowd.honest),
        "questions left open": Question.objects.filter(state=QuestionState.OPEN).count(),
        "refused work paid": sum(a.status == "Approved" for a in fake.assignments.values()
                                 if a.worker_id in refused_workers)
        + sum(b["WorkerId"] in crowd.hostile for b in fake.bonuses),
    }
    counts = {
        "page posts": len(crowd.statuses),
        "answered 429": crowd.statuses.count(429),
        "posts forged": PagePost.objects.filter(state=PagePostState.FORGED).count(),
        "posts expired": PagePost.objects.filter(state=PagePostState.EXPIRED).count(),
        "refused on MTurk": sum(a.status == "Rejected" for a in fake.assignments.values()),
        "honest assignments approved": sum(a.status == "Approved"
                                           for a in fake.assignments.values()
                                           if a.worker_id in crowd.honest),
        "labels": len(labels),
    }
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    (ROOT / "test-artifacts" / "hostile-crowd.json").write_text(
        json.dumps({"figures": figures, "counts": counts}, indent=2))
    print("\nhostile crowd:", figures, counts)
    assert figures == {"forged labels stored": 0, "honest workers rejected": 0,
                       "questions left open": 0, "refused work paid": 0}
    assert counts["labels"] == 6 and counts["answered 429"] > 0
    assert counts["posts forged"] == 2 and counts["refused on MTurk"] == 4
    assert not Assignment.objects.filter(state=AssignmentState.SUBMITTED).exists()
    # Each stored assignment is MTurk's, once; each MTurk assignment got one verdict.
    assert sorted(Assignment.objects.values_list("external_id", flat=True)) == sorted(
        a.id for a in fake.assignments.values() if a.status != "Accepted")
    assert all(a.status in ("Approved", "Rejected") for a in fake.assignments.values())


def test_a_lost_replacement_call_is_repaired_once(crowd, fake, settings,
                                                 django_capture_on_commit_callbacks) -> None:
    settings.KBPO_MTURK_MAX_ATTEMPTS = 1
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    submit_on_mturk(fake, hit, "AGARBAGE1", "not json")
    fake.inject("CreateAdditionalAssignmentsForHIT", "ServiceUnavailable")
    result = crowd.sync()
    assert result.refused == 1 and "CreateAdditionalAssignmentsForHIT" in result.errors[0]
    assert (Hit.objects.get(pk=hit.pk).max_assignments,
            fake.hits[hit.external_id].max_assignments) == (4, 3)
    for _ in range(2):   # repaired by the next sync, and never added twice
        crowd.sync()
    assert fake.hits[hit.external_id].max_assignments == 4
    assert len(fake.calls_of("CreateAdditionalAssignmentsForHIT")) == 2
