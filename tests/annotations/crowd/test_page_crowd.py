"""Issue 38: a yes-biased simulated crowd answering through the real task pages (GET the
page MTurk frames, POST its form, submit to the fake MTurk): the answers are stored only
once MTurk confirms them, exactly as the workers chose them, and reach the crowd model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from annotations.crowd.live import truth_for
from annotations.crowd.simulation import GoldKey, make_pool, simulate_answer
from annotations.interfaces.answers import allowed_choices
from annotations.models import Assignment, PagePost, PagePostState, PairLabel, Response
from annotations.quality.workers import update_worker_quality
from tests.annotations.crowd.page_crowd import PageCrowd, mturk_worker_id
from tests.annotations.crowd.test_hostile_crowd import fake as fake  # the fixture
from tests.annotations.crowd.test_hostile_crowd import plan

pytestmark = pytest.mark.django_db
SPOUSE = "per:spouse"


def test_biased_answers_posted_on_the_pages_are_confirmed_and_reach_the_model(
        fake, django_capture_on_commit_callbacks) -> None:
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    pairs = {i.question.pair.object_type: i.question.pair for i in
             hit.items.select_related("question__pair__document")}
    # Gold: born and work hold their relation; Ada Byron and Tom King ("wed") hold none.
    truth = {"GPE": "per:place_of_birth", "ORG": "per:employee_or_member_of"}
    key = GoldKey({(p.document.doc_id, p.subject_begin, p.subject_end, p.object_begin,
                    p.object_end): frozenset({truth[t]}) for t, p in pairs.items()
                   if t in truth}, {})
    # Three careful workers; every one says "spouse" on a PER-PER pair holding none.
    pool = [replace(w, yes={SPOUSE: 1.0}) for w in make_pool(3, 0.0, seed=5,
                                                             spammer_fraction=0.0)]
    crowd = PageCrowd(fake, key, pool, seed=5, capture=lambda: django_capture_on_commit_callbacks(
        execute=True))

    assert crowd.round(1) == 3 and crowd.counts["posted"] == 3
    # Posted, not counted: the ids on a page post are claims until MTurk confirms them.
    assert not Response.objects.exists()
    assert PagePost.objects.filter(state=PagePostState.WAITING).count() == 3
    crowd.sync()
    assert Assignment.objects.filter(hit=hit).count() == 3
    assert set(PagePost.objects.values_list("state", flat=True)) == {PagePostState.CONFIRMED}
    assert {fake.assignment_status(a) for a in fake.assignments} <= {"Submitted", "Approved"}

    # Stored as each worker chose on the page: the biased "spouse" included.
    stored = {(r.worker.external_id, r.question_id): r.choices
              for r in Response.objects.select_related("worker")}
    assert len(stored) == 9 and set(Response.objects.values_list("counted", flat=True)) == {True}
    for w in pool:
        for item in hit.items.select_related("question__pair__document", "question__corpus"):
            q = item.question
            want = simulate_answer(w, truth_for(key, q), sorted(allowed_choices(q)), 5, q.pk, 1)
            assert stored[(mturk_worker_id(w), q.pk)] == sorted(want)
    wed = pairs["PER"]
    assert list(Response.objects.filter(question__pair=wed).values_list(
        "choices", flat=True)) == [[SPOUSE]] * 3

    # The crowd model fits on them: every answer counted, a posterior on each label.
    report = update_worker_quality(hit.corpus_id)
    assert report.answers == 9 and report.workers == 3
    label = PairLabel.objects.get(pair=wed)
    assert label.predicates == [SPOUSE] and label.posterior.get(SPOUSE, 0) > 0.5
