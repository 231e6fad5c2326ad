"""annotations/crowd/sync.py: an MTurk assignment counts only once MTurk confirms it —
this HIT, this worker, and a finished status — and MTurk's own verdicts are copied.

The fake requester is told to return work still in progress too (`returns_accepted`),
which MTurk itself never does, so the status check is reached."""

from __future__ import annotations

import json

import pytest

from annotations.crowd import backends, mturk, sync
from annotations.models import Assignment, AssignmentState, PagePost, PagePostState, Response
from tests.annotations.crowd.test_hostile_crowd import choices, plan
from tests.annotations.crowd.test_hostile_crowd import crowd as crowd  # the fixture
from tests.annotations.crowd.test_hostile_crowd import fake as fake  # the fixture

pytestmark = pytest.mark.django_db


def submitted(fake, hit, worker: str) -> str:
    return fake.worker_submits(hit.external_id, worker,
                               {"answers": json.dumps({"answers": choices(hit)})})


def test_work_in_progress_is_left_until_mturk_has_it(
        fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    fake.returns_accepted = True
    aid = fake.worker_accepts(hit.external_id, "AWORKER1")
    (record,) = mturk.list_all_assignments(backends.client(), hit.external_id)
    assert (record.assignment_id, record.status) == (aid, "Accepted")  # it reached us
    result = sync.collect(hit)
    assert (result.reconciled, result.refused, result.errors) == (0, 0, [])
    assert not Assignment.objects.exists()  # neither counted nor refused (and replaced)
    submitted(fake, hit, "AWORKER1")
    assert sync.collect(hit).reconciled == 1
    a = Assignment.objects.get(external_id=aid)
    assert (a.state, a.refusal, a.responses.count()) == (AssignmentState.SUBMITTED, "", 3)


def test_a_page_post_for_work_in_progress_keeps_waiting(
        crowd, fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    fake.returns_accepted = True
    aid = fake.worker_accepts(hit.external_id, "AWORKER1")
    asked = len(fake.calls_of("ListAssignmentsForHIT"))
    assert crowd.post(hit, "AWORKER1", aid, choices(hit)) == 200
    # The post's check reads the HIT's assignments (one call per HIT), told "Accepted".
    assert len(fake.calls_of("ListAssignmentsForHIT")) == asked + 1
    assert PagePost.objects.get(assignment_external_id=aid).state == PagePostState.WAITING
    assert not Assignment.objects.exists()


def test_an_assignment_of_another_hit_is_not_stored_here(
        fake, django_capture_on_commit_callbacks) -> None:
    mine = plan(["born", "wed", "work"], django_capture_on_commit_callbacks, tag="c")
    other = plan(["born", "wed", "work"], django_capture_on_commit_callbacks, tag="d")
    aid = submitted(fake, other, "AWORKER1")
    (record,) = mturk.list_all_assignments(backends.client(), other.external_id)
    assert sync.accept_record(mine, record) is None
    assert not Assignment.objects.exists()
    assert sync.accept_record(other, record).external_id == aid


def test_a_post_claiming_another_workers_assignment_is_forged(
        crowd, fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    aid = fake.worker_accepts(hit.external_id, "AHONEST1")
    wrong = choices(hit, lambda q: ["no_relation"])
    assert crowd.post(hit, "AFORGER1", aid, wrong) == 200
    submitted(fake, hit, "AHONEST1")
    result = sync.collect(hit)
    assert (result.posts_forged, result.posts_confirmed) == (1, 0)
    post = PagePost.objects.get(worker_external_id="AFORGER1")
    assert post.state == PagePostState.FORGED and post.assignment is None
    a = Assignment.objects.get(external_id=aid)
    assert a.worker.external_id == "AHONEST1"
    assert "no_relation" not in {c for r in a.responses.all() for c in r.choices}


def test_a_rejection_made_on_mturks_site_is_copied_and_its_answers_stop_counting(
        fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    aid = submitted(fake, hit, "AWORKER1")
    sync.collect(hit)
    assert Response.objects.filter(counted=True).count() == 3
    mturk.reject(backends.client(), aid, "Rejected on the requester website.")
    result = sync.collect(hit)
    assert result.status_copied == 1
    a = Assignment.objects.get(external_id=aid)
    assert (a.state, a.paid) == (AssignmentState.REJECTED, 0)
    assert not Response.objects.filter(counted=True).exists()
    assert Response.objects.filter(assignment=a).count() == 3  # kept for audit
