"""progress.json in one query says what the report's own functions say, and only to
those who may see the report."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from django.urls import reverse

from annotations.models import Assignment, CrowdWorker, Question, QuestionState, Response
from estimation import report_progress, scoring
from estimation.report_progress import progress_body
from submissions.models import RelationInstance, Submission
from tests.estimation.scoring.scoring_world import World, label
from tests.factories import make_hit, make_user


def _reference(sub: Submission) -> dict:
    """The body as the report's own functions give it (report.progress, latest_scores,
    scoring.latest_run): the path SQLite takes, and the view's before one query."""
    return report_progress._portable_body(sub.pk, make_user("reference", staff=True))


def _crowd(world: World) -> None:
    """Draws drawn twice, labels on some pairs, over- and under-answered questions and
    a cancelled one."""
    a = world.a
    first = RelationInstance.objects.filter(submission=a).order_by("pk").first()
    from annotations.models import SampleDraw

    for i in (10, 11):
        SampleDraw.objects.create(submission=a, scheme="instance", index=i, instance=first)
    label(world.pairs["born"], "per:place_of_birth")
    hit = make_hit(world.corpus, [world.pairs["wed"], world.pairs["work"]], submission=a)
    qs = list(Question.objects.filter(requested_by=a).order_by("pk"))
    for i in range(4):
        w = CrowdWorker.objects.create(backend="simulated", external_id=f"sim-{i}")
        asg = Assignment.objects.create(hit=hit, worker=w, external_id=f"asg-{i}")
        Response.objects.create(assignment=asg, question=qs[0], worker=w, choices=["x"])
        if i == 0:
            Response.objects.create(assignment=asg, question=qs[1], worker=w, choices=["x"])
    Question.objects.create(corpus=world.corpus, pair=world.pairs["born"], requested_by=a,
                            state=QuestionState.CANCELLED)


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # the one-query body is Postgres SQL
def test_one_query_body_equals_the_reference_through_a_submission_life(
        world: World, django_assert_num_queries) -> None:
    staff = make_user("staff", staff=True)
    for sub in (world.a, world.b):  # nothing scored yet
        assert progress_body(sub.pk, staff) == _reference(sub)
    _crowd(world)
    got = progress_body(world.a.pk, staff)
    assert got == _reference(world.a)
    assert got["answers_received"] == 4 and got["run"] is None and "precision" not in got
    scoring.recompute(world.corpus)
    label(world.pairs["wed"], "per:spouse")
    scoring.recompute(world.corpus)
    for sub in (world.a, world.b):
        sub.refresh_from_db()
        got = progress_body(sub.pk, staff)
        assert got == _reference(sub) and got["run"] is not None and "f1" in got, sub.name
    with django_assert_num_queries(1):
        progress_body(world.a.pk, staff)


@pytest.mark.django_db
def test_visibility_is_that_of_the_report(world: World) -> None:
    owner = Submission.objects.get(pk=world.a.pk).owner
    viewers = {"anonymous": AnonymousUser(), "other": make_user("carol"), "owner": owner,
               "staff": make_user("staff", staff=True)}
    for public, allowed in ((True, set(viewers)), (False, {"owner", "staff"})):
        Submission.objects.filter(pk=world.a.pk).update(public=public)
        for who, user in viewers.items():
            assert (progress_body(world.a.pk, user) is not None) == (who in allowed), \
                (public, who)
    assert progress_body(10**9, viewers["staff"]) is None
    url = reverse("submission-evaluation-progress", args=[world.a.pk])
    assert Client().get(url).status_code == 404
    c = Client()
    c.force_login(owner)
    assert c.get(url).json()["submission"] == world.a.pk
    assert Client().get(reverse("submission-evaluation-progress",
                                args=[10**9])).status_code == 404


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # the one-query body is Postgres SQL
def test_a_signed_in_poll_of_a_public_report_is_one_query(
        world: World, django_assert_num_queries) -> None:
    url = reverse("submission-evaluation-progress", args=[world.a.pk])
    c = Client()
    c.force_login(make_user("carol"))
    first = c.get(url)  # computed, then stored under the report's key
    assert first.json() == report_progress.progress_body(world.a.pk, AnonymousUser())
    with django_assert_num_queries(1):  # no session or user read: the report is public
        again = c.get(url)
    assert again.content == first.content and again["Content-Type"] == "application/json"
    Submission.objects.filter(pk=world.a.pk).update(public=False)
    # The session and user reads are prepared statements: the first on a connection
    # also checks and PREPAREs them (two more queries), depending on the tests before.
    # The first read of this session learns whose it is; later ones join the user's row.
    for _ in range(2):
        assert c.get(url).status_code == 404
    with django_assert_num_queries(2):  # private: the session and user (one read) decide
        assert c.get(url).status_code == 404
