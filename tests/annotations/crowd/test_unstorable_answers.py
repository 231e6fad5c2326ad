"""Work posted to MTurk's externalSubmit by hand carries whatever the worker wrote:
answers the database cannot store or the parser cannot read are refused with a reason
(like any invalid work), and the sync goes on, instead of failing on every run."""

from __future__ import annotations

import json

import pytest

from annotations.models import Assignment, Response
from tests.annotations.crowd.test_hostile_crowd import (  # noqa: F401 - fixtures
    choices,
    crowd,
    fake,
    plan,
    submit_on_mturk,
)

pytestmark = pytest.mark.django_db


def test_unstorable_mturk_answers_are_refused_and_the_sync_goes_on(
        crowd, fake, django_capture_on_commit_callbacks) -> None:  # noqa: F811
    hit = plan(["born", "wed", "work"], django_capture_on_commit_callbacks)
    nul = choices(hit)
    nul[0]["extra"] = {"note": "a\x00b"}
    bad_nul = submit_on_mturk(fake, hit, "ANUL1", nul)
    bad_deep = submit_on_mturk(fake, hit, "ADEEP1", "[" * 100_000 + "]" * 100_000)
    honest = submit_on_mturk(fake, hit, "AHONEST1", choices(hit))
    result = crowd.sync()
    assert result.refused == 2
    assert fake.assignment_status(bad_nul) == fake.assignment_status(bad_deep) == "Rejected"
    assert "cannot be stored" in fake.assignments[bad_nul].feedback
    assert "not JSON" in fake.assignments[bad_deep].feedback
    assert fake.assignment_status(honest) != "Rejected"
    stored = Assignment.objects.get(external_id=honest)
    assert Response.objects.filter(assignment=stored).count() == 3
    assert not Response.objects.exclude(assignment=stored).exists()
    assert json.dumps(list(Response.objects.values_list("extra", flat=True)))
