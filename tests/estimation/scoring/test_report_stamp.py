"""The corpus's draw/label stamp (annotations.DrawLabelStamp, Postgres triggers deferred
to commit) in the stored report's key and progress.json: committed writes, as requests
and workers make them (these tests commit, unlike the rest of the suite, whose
transaction never does and whose key reads the rows' versions instead)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from annotations.models import DrawLabelStamp, PairLabel, SampleDraw
from estimation import report_progress, stored_pages
from estimation.models import ReportBody
from submissions.models import RelationInstance, State, Submission
from tests.estimation.scoring.scoring_world import World, label, scored_with_beta_private

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("needs_postgres")]


@pytest.fixture
def scored(world: World) -> World:
    return scored_with_beta_private(world)


def _stamp(world: World) -> int:
    row = DrawLabelStamp.objects.filter(corpus=world.corpus).first()
    return 0 if row is None else row.version


def _poison(sub: Submission) -> None:
    """Mark the stored bodies (page and progress.json) to tell stored from fresh."""
    for body in ReportBody.objects.filter(submission=sub):
        marked = body.body.replace("Evaluation · ", "STORED · ").replace(
            '"submission"', '"STORED": 1, "submission"')
        assert marked != body.body
        ReportBody.objects.filter(pk=body.pk).update(body=marked)


def _relabel(world: World) -> None:
    # What the quality pass writes when it moves a label (annotations/quality/workers.py).
    lab = PairLabel.objects.get(pair=world.pairs["born"])
    lab.predicates, lab.method = ["no_relation"], "one_coin"
    PairLabel.objects.bulk_update([lab], ["predicates", "method"])


def _change(world: World, what: str) -> None:
    a = world.a
    first = RelationInstance.objects.filter(submission=a).order_by("pk").first()
    if what == "label":
        label(world.pairs["work"], "per:employee_or_member_of")
        PairLabel.objects.filter(pair=world.pairs["wed"]).update(predicates=["no_relation"])
    elif what == "draw":
        SampleDraw.objects.create(submission=a, scheme="instance", index=9, instance=first)
    elif what == "withdrawn":
        Submission.objects.filter(pk=a.pk).update(state=State.WITHDRAWN)
    elif what == "relabel":
        _relabel(world)
    elif what == "unlabel":
        PairLabel.objects.filter(pair=world.pairs["born"]).delete()
    elif what == "redraw":  # a re-ingest deletes the draws first
        SampleDraw.objects.filter(submission=a).delete()
    else:
        raise AssertionError(what)


@pytest.mark.parametrize("what", ["label", "draw", "withdrawn", "relabel", "unlabel",
                                  "redraw"])
def test_committed_draws_and_labels_are_never_served_stale(scored: World, what: str,
                                                           monkeypatch) -> None:
    a = scored.a
    page_url = reverse("submission-evaluation", args=[a.pk])
    poll_url = reverse("submission-evaluation-progress", args=[a.pk])
    c = Client()
    c.get(page_url)
    c.get(poll_url)
    _poison(a)
    assert "STORED" in c.get(page_url).content.decode() and "STORED" in c.get(poll_url).json()
    _change(scored, what)
    page, poll = c.get(page_url).content.decode(), c.get(poll_url).json()
    assert "STORED" not in page and "STORED" not in poll, what
    assert poll == report_progress.progress_body(a.pk, None), what
    with monkeypatch.context() as m:
        m.setattr(stored_pages, "report_lookup", lambda *args: None)
        fresh = c.get(page_url).content.decode()
    assert page.split("Recomputation")[0] == fresh.split("Recomputation")[0], what
    # Stored again under the new key, and served from then on.
    _poison(a)
    assert "STORED" in c.get(page_url).content.decode() and "STORED" in c.get(poll_url).json()


def test_the_stamp_moves_once_per_committed_transaction(scored: World) -> None:
    before = _stamp(scored)
    assert before > 0  # the world's draws and labels were committed
    first = RelationInstance.objects.filter(submission=scored.a).order_by("pk").first()
    with transaction.atomic():
        for i in (20, 21, 22):
            SampleDraw.objects.create(submission=scored.a, scheme="instance", index=i,
                                      instance=first)
        _relabel(scored)
        assert _stamp(scored) == before  # deferred to commit
    assert _stamp(scored) == before + 1
    with transaction.atomic():
        SampleDraw.objects.create(submission=scored.b, scheme="instance", index=30,
                                  instance=first)
        transaction.set_rollback(True)
    assert _stamp(scored) == before + 1  # rolled back: nothing moved
    label(scored.pairs["work"], "per:employee_or_member_of")
    assert _stamp(scored) == before + 2


def test_the_key_reads_the_stamp_not_the_draws(scored: World) -> None:
    """With the triggers switched off for one write, the key does not see it: the
    key no longer reads the draws or labels themselves (one indexed row instead)."""
    key = stored_pages.report_lookup(scored.a.pk, "instance|all|1").key
    with connection.cursor() as cur:
        cur.execute("SET session_replication_role = replica")  # triggers off
        try:
            PairLabel.objects.filter(pair=scored.pairs["born"]).update(predicates=["x"])
        finally:
            cur.execute("SET session_replication_role = DEFAULT")
    assert stored_pages.report_lookup(scored.a.pk, "instance|all|1").key == key
    DrawLabelStamp.objects.filter(corpus=scored.corpus).update(version=10**6)
    assert stored_pages.report_lookup(scored.a.pk, "instance|all|1").key != key


def test_a_private_report_stored_progress_is_only_for_owner_and_staff(scored: World) -> None:
    from tests.factories import make_user

    b = scored.b  # private
    url = reverse("submission-evaluation-progress", args=[b.pk])
    owner = Client()
    owner.force_login(Submission.objects.get(pk=b.pk).owner)
    assert owner.get(url).status_code == 200
    assert ReportBody.objects.filter(submission=b, view=stored_pages.PROGRESS).exists()
    other = Client()
    other.force_login(make_user("carol"))
    assert Client().get(url).status_code == 404 and other.get(url).status_code == 404
    staff = Client()
    staff.force_login(make_user("staff", staff=True))
    assert staff.get(url).content == owner.get(url).content
