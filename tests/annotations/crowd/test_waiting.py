"""The operator's "still waiting" page lists everything not yet final, with the reason."""

from __future__ import annotations

import json

import pytest

from annotations.crowd import periodic, waiting
from annotations.models import Assignment, AssignmentState, Hit, HitState, PagePost
from estimation import planning
from tests.annotations.crowd.helpers import small_world, system
from tests.annotations.crowd.test_hostile_crowd import choices, fake  # noqa: F401
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_still_waiting_lists_each_item_with_its_reason(fake, client,  # noqa: F811
                                                       django_capture_on_commit_callbacks,
                                                       settings):
    settings.KBPO_MTURK_MAX_ATTEMPTS = 1   # no retry backoff while MTurk "fails"
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born", "wed", "work", "hq"])
    fake.set_balance("0.60")   # room for the first HIT only: the second is held
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    hit = Hit.objects.get(submission=sub, state=HitState.POSTED)
    PagePost.objects.create(hit=hit, assignment_external_id="INVENTED1",
                            worker_external_id="AFORGER1", payload={"answers": []})
    honest = json.dumps({"answers": choices(hit)})
    fake.worker_submits(hit.external_id, "AHONEST1", {"answers": honest})
    fake.worker_submits(hit.external_id, "AGARBAGE1", {"answers": "garbage"})
    fake.inject("RejectAssignment", "ServiceFault", times=20)   # MTurk down for rejections
    with django_capture_on_commit_callbacks(execute=True):
        result = periodic.sync_all([hit.pk])
    assert "not given yet" in result.errors[0]
    # The replacement slot is owed too; MTurk refuses it for lack of funds, so the next
    # sync asks again (our MaxAssignments is already raised, MTurk's is compared to it).
    assert "insufficient funds" in result.errors[-1]
    assert Hit.objects.get(pk=hit.pk).max_assignments == 4
    assert Assignment.objects.get(worker__external_id="AGARBAGE1").state == \
        AssignmentState.SUBMITTED

    sections = {s.title: s for s in waiting.report()}
    assert sections["Task-page posts waiting for MTurk"].total == 1
    assert sections["Refused work without its verdict"].total == 1
    assert sections["Confirmed work waiting for review"].total == 1
    assert sections["HITs held before posting"].total == 1
    assert sections["HITs waiting for answers"].total == 1
    assert sections["Open questions without a live HIT"].total == 0

    url = "/admin/annotations/hit/waiting/"
    assert client.get(url).status_code == 302            # staff only
    op = make_user("op", staff=True)
    op.is_superuser = True
    op.save()
    client.force_login(op)
    page = client.get(url).content.decode()
    assert "claimed by worker AFORGER1" in page and "MTurk has not confirmed it" in page
    assert "its rejection on MTurk failed so far" in page
    assert "still has 4 open question(s)" not in page and "open question(s)" in page
    assert "balance" in page                              # why the second HIT is held
    assert "Still waiting, and why" in client.get("/admin/annotations/hit/").content.decode()
