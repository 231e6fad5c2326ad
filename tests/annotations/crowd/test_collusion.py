"""Issue 41, hostile crowd: two workers who agree against an honest third must not get
the third rejected. All three assignments are genuine work MTurk confirmed (the fake
requester); only a control question with a known answer may cost a worker their pay."""

from __future__ import annotations

import pytest

from annotations.crowd import periodic
from annotations.models import Assignment, AssignmentState, CrowdWorker, PairLabel
from annotations.quality import workers as quality_workers
from tests.annotations.crowd.helpers import add_control
from tests.annotations.crowd.test_mturk_backend import answers_json, truth
from tests.annotations.crowd.test_mturk_backend import fake as fake  # the fixture
from tests.annotations.crowd.test_mturk_backend import posted as posted  # the fixture

pytestmark = pytest.mark.django_db

COLLUDED = {"GPE": ["per:place_of_death"], "PER": ["per:siblings"], "ORG": ["no_relation"]}


def colluding(q) -> list[str]:
    if q.control_answer is not None:
        return ["per:place_of_death"]  # they miss the control too
    return COLLUDED[q.pair.object_type]


def honest(q) -> list[str]:
    return list(q.control_answer) if q.control_answer is not None else truth(q)


def _work(hit, fake, capture) -> dict[str, str]:
    for worker, choose in (("AHONEST1", honest), ("ACOLLUDE1", colluding),
                           ("ACOLLUDE2", colluding)):
        fake.worker_submits(hit.external_id, worker, answers_json(hit, choose))
    with capture(execute=True):
        result = periodic.sync_all()
    assert result.reconciled == 3 and not result.errors
    return {fake.assignments[a].worker_id: fake.assignment_status(a) for a in fake.assignments}


@pytest.mark.parametrize("with_control", [False, True])
def test_colluders_cannot_get_an_honest_worker_rejected(
        posted, fake, with_control, django_capture_on_commit_callbacks) -> None:
    _sub, hit = posted
    if with_control:
        add_control(hit)
    on_mturk = _work(hit, fake, django_capture_on_commit_callbacks)
    # The colluders carry every label: the honest worker contradicts all of them ...
    assert sorted({tuple(p) for p in PairLabel.objects.values_list("predicates", flat=True)}) \
        == sorted({tuple(v) for v in COLLUDED.values()})
    # ... and is paid all the same: disagreement with peers is no evidence.
    assert on_mturk["AHONEST1"] == "Approved" and not fake.calls_of("RejectAssignment")
    mine = Assignment.objects.get(worker__external_id="AHONEST1")
    assert mine.state == AssignmentState.APPROVED and mine.paid == hit.reward
    # Disagreeing lowers the worker's weight instead, once the quality pass runs.
    quality_workers.update_worker_quality(hit.corpus_id)
    weight = dict(CrowdWorker.objects.values_list("external_id", "accuracy_ds"))
    assert weight["AHONEST1"] < min(weight["ACOLLUDE1"], weight["ACOLLUDE2"])


def test_a_worker_who_misses_the_control_and_every_label_is_rejected(
        posted, fake, django_capture_on_commit_callbacks) -> None:
    """The evidence that still rejects: a known answer missed, named in the feedback."""
    _sub, hit = posted
    add_control(hit)
    for worker, choose in (("AHONEST1", honest), ("AHONEST2", honest),
                           ("ASPAM1", colluding)):
        fake.worker_submits(hit.external_id, worker, answers_json(hit, choose))
    with django_capture_on_commit_callbacks(execute=True):
        periodic.sync_all()
    spam = Assignment.objects.get(worker__external_id="ASPAM1")
    assert spam.state == AssignmentState.REJECTED
    (call,) = fake.calls_of("RejectAssignment")
    assert "the known answer is per:place_of_birth" in call["RequesterFeedback"]
