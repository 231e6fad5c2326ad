"""Stored report pages (estimation/stored_pages.py, `ReportBody`): the same bytes as a
fresh render, shared by everyone allowed to see the report and no one else, with the
navigation, messages and "x minutes ago" filled in per request, and never served after
anything the page shows has changed."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.contrib.messages import constants
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse

from annotations.models import (
    Assignment,
    Bonus,
    BudgetSettings,
    CrowdWorker,
    GoldRelation,
    Hit,
    HitState,
    PairLabel,
    Question,
    Response,
    SampleDraw,
    SubmissionBudget,
)
from estimation import scoring, stored_pages
from estimation.models import ReportBody, ScoreRun, SystemScore
from kbpo.core.models import Corpus
from submissions.models import RelationInstance, State, Submission
from tests.estimation.scoring.scoring_world import World, label, scored_with_beta_private
from tests.factories import make_hit, make_user

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')
SINCE = re.compile(r"Recomputation (\d+) \((now|[^()<]* ago)\)")


def _norm(page: bytes | str) -> str:
    """A page without what two renders a moment apart may differ in: the CSRF token's
    mask and how long ago the run finished (checked apart)."""
    text = page.decode() if isinstance(page, bytes) else page
    return SINCE.sub(r"Recomputation \1 (…)", TOKEN.sub("", text))


@pytest.fixture
def scored(world: World) -> World:
    return scored_with_beta_private(world)


def _url(sub: Submission, query: str = "") -> str:
    return reverse("submission-evaluation", args=[sub.pk]) + query


def _poison(sub: Submission) -> None:
    """Mark the stored bodies, so a test can tell a stored answer from a fresh one."""
    for body in ReportBody.objects.filter(submission=sub):
        assert sub.name in body.body
        ReportBody.objects.filter(pk=body.pk).update(
            body=body.body.replace("Evaluation · ", "STORED · "))


def _fresh(client: Client, url: str, monkeypatch) -> str:
    """The page as rendered without any stored body."""
    with monkeypatch.context() as m:
        m.setattr(stored_pages, "report_lookup", lambda *a: None)
        return client.get(url).content.decode()


def _login(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_stored_once_then_served_with_identical_bytes(scored: World, monkeypatch) -> None:
    url = _url(scored.a)
    first = Client().get(url)
    assert first.status_code == 200 and ReportBody.objects.count() == 1
    second = Client().get(url)
    assert _norm(second.content) == _norm(first.content)
    assert _norm(second.content) == _norm(_fresh(Client(), url, monkeypatch))
    assert SINCE.search(second.content.decode())
    # Middleware still runs on a stored answer, and caches keep viewers apart.
    for h in ("Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options"):
        assert second.has_header(h), h
    assert "Cookie" in second["Vary"] and second["Content-Type"] == "text/html; charset=utf-8"
    _poison(scored.a)
    assert "STORED" in Client().get(url).content.decode()
    # What is stored holds markers, never a viewer's navigation or a relative time.
    stored = ReportBody.objects.get().body
    for marker in stored_pages.SLOTS.values():
        assert stored.count(marker) == 1, marker
    assert "Log in" not in stored and "csrfmiddlewaretoken" not in stored
    assert not SINCE.search(stored) and SINCE.search(second.content.decode())


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_signed_in_viewers_share_the_body_with_their_own_navigation(
        scored: World, monkeypatch) -> None:
    url = _url(scored.a)
    Client().get(url)
    _poison(scored.a)
    for user in (make_user("carol"), make_user("staff", staff=True),
                 Submission.objects.get(pk=scored.a.pk).owner):
        c = _login(user)
        page = c.get(url).content.decode()
        assert "STORED" in page and user.username in page and "Log out" in page
        assert ("Operator" in page) == user.is_staff
        assert TOKEN.search(page) and "Log in" not in page
        ReportBody.objects.all().delete()
        fresh = _fresh(c, url, monkeypatch)
        stored = c.get(url).content.decode()  # renders, stores, fills
        served = c.get(url).content.decode()  # from the stored body
        assert _norm(served) == _norm(stored) == _norm(fresh)
        _poison(scored.a)


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_private_reports_only_for_owner_and_staff(scored: World) -> None:
    url = _url(scored.b)
    owner = Submission.objects.get(pk=scored.b.pk).owner
    assert _login(owner).get(url).status_code == 200
    assert ReportBody.objects.filter(submission=scored.b).count() == 1
    _poison(scored.b)
    assert Client().get(url).status_code == 404
    assert _login(make_user("carol")).get(url).status_code == 404
    assert "STORED" in _login(make_user("staff", staff=True)).get(url).content.decode()
    assert "STORED" in _login(owner).get(url).content.decode()
    assert Client().get(_url(scored.b, "?page=2")).status_code == 404
    assert Client().get(reverse("submission-evaluation", args=[999999])).status_code == 404


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_each_query_has_its_body_and_only_real_pages_are_stored(scored: World) -> None:
    for q in ("", "?scheme=predicate", "?verdict=correct", "?page=1&verdict=pending"):
        assert Client().get(_url(scored.a, q)).status_code == 200
    assert sorted(ReportBody.objects.values_list("view", flat=True)) == [
        "instance|all|1", "instance|correct|1", "instance|pending|1", "predicate|all|1"]
    # The default query and its spelled-out form are one body.
    assert Client().get(_url(scored.a, "?scheme=instance&page=1")).status_code == 200
    # Odd values, and a page past the end (it shows the last page), are not kept.
    for q in ("?page=x", "?page=0", "?page=99999", "?page=-1", "?page=2"):
        assert Client().get(_url(scored.a, q)).status_code == 200
    assert ReportBody.objects.count() == 4


def _add_message(client: Client, text: str) -> None:
    """A notice waiting in the messages cookie, as a redirecting view leaves it."""
    storage = CookieStorage(RequestFactory().get("/"))
    storage.add(constants.SUCCESS, text)
    resp = HttpResponse()
    storage.update(resp)
    client.cookies["messages"] = resp.cookies["messages"].value


@pytest.mark.django_db
def test_messages_and_csrf_still_work(scored: World) -> None:
    url = _url(scored.a)
    user = make_user("carol")
    c = Client(enforce_csrf_checks=True)
    c.force_login(user)
    c.get(url)  # stores the body
    _add_message(c, "Your file is in.")
    page = c.get(url)
    assert "Your file is in." in page.content.decode()
    assert "Your file is in." not in page.cookies["messages"].value  # shown once, then gone
    c.cookies.pop("messages", None)
    assert "Your file is in." not in c.get(url).content.decode()
    token = TOKEN.search(c.get(url).content.decode()).group(0).split('value="')[1][:-1]
    assert c.post(reverse("logout"), {"csrfmiddlewaretoken": token}).status_code == 302
    assert "Log in" in c.get(url).content.decode()


def _answer_elsewhere(world: World, worker: str = "sim-y", p_right: float | None = None) -> None:
    """A crowd answer on a pair only Beta drew ("work"), on a question Beta asked, and
    the pair's label (made the first time): crowd accuracy moves, nothing else Alpha's
    report shows does. `p_right`: the label's posterior, as the quality pass stores it."""
    pair = world.pairs["work"]
    label_row = PairLabel.objects.filter(pair=pair).first()
    if label_row is None:
        hit = make_hit(world.corpus, [pair], submission=world.b)
        q = Question.objects.get(hit_items__hit=hit)
        label_row = PairLabel.objects.create(pair=pair, question=q, n_answers=1, support=1.0,
                                             predicates=["per:employee_or_member_of"])
    q = label_row.question
    hit = Hit.objects.get(items__question=q)
    w = CrowdWorker.objects.create(backend="simulated", external_id=worker)
    asg = Assignment.objects.create(hit=hit, worker=w, external_id=f"asg-{worker}")
    Response.objects.create(assignment=asg, question=q, worker=w,
                            choices=["per:employee_or_member_of"])
    if p_right is not None:
        PairLabel.objects.filter(pk=label_row.pk).update(posterior={
            "per:employee_or_member_of": p_right, "no_relation": round(1 - p_right, 6)})


def _change(world: World, what: str) -> None:
    a = world.a
    first = RelationInstance.objects.filter(submission=a).order_by("pk").first()
    if what == "rename":
        Submission.objects.filter(pk=a.pk).update(name="Alpha two")
    elif what == "state":
        Submission.objects.filter(pk=a.pk).update(state=State.SCORED)
    elif what == "corpus":
        Corpus.objects.filter(pk=world.corpus.pk).update(tag="t2")
    elif what == "draw":
        SampleDraw.objects.create(submission=a, scheme="instance", index=9, instance=first)
    elif what == "label":
        PairLabel.objects.filter(pair=world.pairs["born"]).update(predicates=["per:spouse"])
    elif what == "recompute":
        # A run that changes nothing stores nothing: this one labels a pair no system
        # drew, so only the recall side (and the run) are new.
        label(world.pairs["work"], "per:employee_or_member_of")
        scoring.recompute(world.corpus)
    elif what in ("question", "answer", "hit", "assignment", "bonus"):
        hit = make_hit(world.corpus, [world.pairs["wed"]], submission=a)
        if what != "question":
            Hit.objects.filter(pk=hit.pk).update(state=HitState.COMPLETE,
                                                 cost_estimate=Decimal("1.50"))
        if what in ("answer", "assignment", "bonus"):
            w = CrowdWorker.objects.create(backend="simulated", external_id="sim-x")
            asg = Assignment.objects.create(hit=hit, worker=w, external_id="asg-x",
                                            paid=Decimal("0.25"))
            if what == "answer":
                Response.objects.create(assignment=asg, question=Question.objects.get(
                    requested_by=a), worker=w, choices=["per:spouse"])
            if what == "bonus":
                Bonus.objects.create(assignment=asg, amount=Decimal("0.10"))
    elif what == "cap":
        SubmissionBudget.objects.create(submission=a, cap_usd=Decimal("7.00"))
    elif what == "default cap":
        BudgetSettings.objects.update_or_create(pk=1, defaults={
            "cap_usd": Decimal("500.00"), "per_submission_default_usd": Decimal("9.00")})
    elif what == "crowd elsewhere":
        # An answer and a label on a pair only another submission drew: crowd accuracy
        # moves (the test runs it on a run that predates the stored crowd section).
        _answer_elsewhere(world)
    elif what == "gold":
        GoldRelation.objects.filter(predicate="per:spouse").delete()
    else:
        raise AssertionError(what)


CHANGES = ["rename", "state", "corpus", "draw", "label", "recompute", "question", "answer",
           "hit", "assignment", "bonus", "cap", "default cap", "crowd elsewhere", "gold"]


@pytest.mark.django_db
@pytest.mark.parametrize("what", CHANGES)
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_a_change_of_what_the_report_shows_is_never_served_stale(
        scored: World, what: str, monkeypatch) -> None:
    url = _url(scored.a)
    if what == "gold":  # a run from before score rows stored the recall counts
        SystemScore.objects.update(exhaustive_found=None)
    if what == "crowd elsewhere":  # a run from before runs stored the crowd section
        ScoreRun.objects.update(crowd=None)
    Client().get(url)
    _poison(scored.a)
    assert "STORED" in Client().get(url).content.decode()
    _change(scored, what)
    page = Client().get(url).content.decode()
    assert "STORED" not in page, what
    assert _norm(page) == _norm(_fresh(Client(), url, monkeypatch)), what
    # Stored again under the new key, and served from then on.
    _poison(scored.a)
    assert "STORED" in Client().get(url).content.decode()


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_the_gold_is_not_in_the_key_when_the_run_stored_its_counts(
        scored: World, monkeypatch) -> None:
    url = _url(scored.a)
    assert SystemScore.objects.filter(submission=scored.a,
                                      exhaustive_found__isnull=False).exists()
    Client().get(url)
    _change(scored, "gold")  # the page shows the run's stored counts, not the gold
    first = Client().get(url).content
    assert _norm(first) == _norm(_fresh(Client(), url, monkeypatch))
    _poison(scored.a)
    assert "STORED" in Client().get(url).content.decode()


@pytest.mark.django_db
def test_a_deploy_changes_every_key(scored: World, monkeypatch) -> None:
    url = _url(scored.a)
    Client().get(url)
    _poison(scored.a)
    monkeypatch.setattr(stored_pages, "render_version", lambda: "templates of a new deploy")
    assert "STORED" not in Client().get(url).content.decode()


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_the_key_is_one_query(scored: World, django_assert_num_queries) -> None:
    Client().get(_url(scored.a))
    with django_assert_num_queries(1):
        found = stored_pages.report_lookup(scored.a.pk, "instance|all|1")
    assert found is not None and found.body is not None and found.since is not None
    assert stored_pages.report_lookup(999999, "instance|all|1") is None


def _key(world: World) -> str:
    return stored_pages.report_lookup(world.a.pk, "instance|all|1").key


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_the_key_reads_no_label_or_answer_elsewhere_on_the_corpus(
        scored: World, monkeypatch) -> None:
    """The crowd section comes from the run: crowd work on other submissions' pairs
    leaves Alpha's key (and page) as they were until a run measures it."""
    url = _url(scored.a)
    assert ScoreRun.objects.get().crowd is not None
    Client().get(url)
    before = _key(scored)
    _answer_elsewhere(scored)
    assert _key(scored) == before
    _poison(scored.a)
    page = Client().get(url).content.decode()
    assert "STORED" in page  # and still what a render shows: the run's crowd section
    assert _norm(page.replace("STORED · ", "Evaluation · ")) == _norm(
        _fresh(Client(), url, monkeypatch))
    assert "No crowd answers on labelled pairs yet." in page
    run = scoring.recompute(scored.corpus)  # a new label: a new run
    assert run.crowd["agreement"]["answers"] == 1 and _key(scored) != before
    page = Client().get(url).content.decode()
    assert "STORED" not in page and "1 answers from 1 worker on labelled pairs" in page
    assert _norm(page) == _norm(_fresh(Client(), url, monkeypatch))
    # A recompute that finds nothing new writes nothing: the key stays.
    after = _key(scored)
    assert scoring.recompute(scored.corpus).pk == run.pk and _key(scored) == after
    # A run that predates the stored section: the corpus's answers are in the key again.
    ScoreRun.objects.update(crowd=None)
    legacy = _key(scored)
    _answer_elsewhere(scored, "sim-z")
    assert _key(scored) != legacy


@pytest.mark.django_db
def test_a_crowd_section_moved_on_the_kept_run_is_never_served_stale(
        scored: World, settings, monkeypatch) -> None:
    """Same scores, new crowd figures (a quality pass that moved only posteriors): the
    recompute stores no new run but updates the kept run's section, and the page and
    the API both show the new figures."""
    settings.KBPO_SOFT_LABELS = False  # the posterior then moves no score
    url = _url(scored.a)
    _answer_elsewhere(scored, p_right=0.9)
    run = scoring.recompute(scored.corpus)
    assert run.crowd["accuracy"]["estimate"] == pytest.approx(0.9)
    assert '<span class="score">90%</span>' in Client().get(url).content.decode()
    _poison(scored.a)
    PairLabel.objects.filter(pair=scored.pairs["work"]).update(
        posterior={"per:employee_or_member_of": 0.4, "no_relation": 0.6})
    n_runs = ScoreRun.objects.count()
    again = scoring.recompute(scored.corpus)
    assert again.pk == run.pk and ScoreRun.objects.count() == n_runs
    assert ScoreRun.objects.get(pk=run.pk).crowd["accuracy"]["estimate"] == pytest.approx(0.4)
    page = Client().get(url).content.decode()
    assert "STORED" not in page and '<span class="score">40%</span>' in page
    assert _norm(page) == _norm(_fresh(Client(), url, monkeypatch))
    api = Client().get(reverse("api-submission-scores", args=[scored.a.pk])).json()
    assert api["crowd"]["accuracy"]["estimate"] == pytest.approx(0.4)
    assert api["run"]["id"] == run.pk


@pytest.mark.django_db
@pytest.mark.parametrize("what", CHANGES)
def test_the_prepared_key_is_never_stale_under_a_generic_plan(
        scored: World, what: str, monkeypatch, needs_postgres: None) -> None:
    """The key query is a prepared statement (kbpo/core/prepared.py); Postgres may run
    it with one plan for every submission. Forced here (for this test's transaction),
    every change still moves the key."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SET LOCAL plan_cache_mode = force_generic_plan")
    for sub in (scored.a, scored.b, scored.a):
        stored_pages.report_lookup(sub.pk, "instance|all|1")
    test_a_change_of_what_the_report_shows_is_never_served_stale(scored, what, monkeypatch)
