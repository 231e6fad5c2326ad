"""Stored leaderboards: the same rows as the reference `leaderboard.build` for every
viewer, private systems (and their count) hidden exactly as before, edits picked up."""

from __future__ import annotations

import csv
import io
import itertools

import pytest
from django.test import Client
from django.urls import reverse

from estimation import leaderboard as lb
from estimation import scoring, snapshot
from estimation.models import METRICS, BoardSnapshot
from submissions.models import State, Submission
from tests.estimation.scoring.scoring_world import World, label
from tests.factories import make_user


def _viewers() -> dict[str, object]:
    from django.contrib.auth.models import AnonymousUser

    return {"anonymous": AnonymousUser(), "other": make_user("carol"),
            "owner": Submission.objects.get(name="Beta").owner,
            "staff": make_user("staff", staff=True)}


@pytest.mark.django_db
def test_every_board_matches_the_reference_for_every_viewer(scored: World) -> None:
    Submission.objects.filter(pk=scored.b.pk).update(public=False)
    assert BoardSnapshot.objects.filter(corpus=scored.corpus).count() == \
        len(lb.BOARD_SCHEMES) * len(lb.KINDS) * len(METRICS)
    for (who, user), scheme, kind, metric in itertools.product(
            _viewers().items(), lb.BOARD_SCHEMES, lb.KINDS, METRICS):
        ref = lb.board_dict(lb.build(scored.corpus, user, scheme, metric, kind))
        snap = snapshot.load("t", scheme, metric, kind, "api")
        got = snapshot.api_dict(snapshot.visible(snap, user))
        assert got["systems"] == ref["systems"], (who, scheme, kind, metric)
        for key in ("id", "systems", "draws", "labels"):
            assert got["run"][key] == ref["run"][key], (who, key)
    names = {who: [r["name"] for r in snapshot.api_dict(snapshot.visible(
        snapshot.load("t", "instance", "f1", "joint", "api"), u))["systems"]]
        for who, u in _viewers().items()}
    assert names["anonymous"] == names["other"] == ["Alpha"]
    assert sorted(names["owner"]) == sorted(names["staff"]) == ["Alpha", "Beta"]


@pytest.mark.django_db
def test_private_rows_and_their_count_stay_hidden_on_every_surface(scored: World) -> None:
    Submission.objects.filter(pk=scored.b.pk).update(public=False)
    owner = Submission.objects.get(pk=scored.b.pk).owner
    for who, user, n in (("anon", None, 1), ("other", make_user("carol"), 1),
                         ("owner", owner, 2)):
        c = Client()
        if user is not None:
            c.force_login(user)
        page = c.get(reverse("leaderboard", args=["t"])).content.decode()
        assert page.count("data-submission=") == n, who
        assert f"{n} system{'s' if n > 1 else ''} ·" in page, who
        assert ("Beta" in page) == (n == 2) and ("private</span>" in page) == (n == 2), who
        index = c.get(reverse("leaderboard-index")).content.decode()
        assert f"{n} ranked system{'s' if n > 1 else ''}" in index, who
        body = c.get(reverse("leaderboard-csv", args=["t"])).content.decode()
        rows = list(csv.DictReader(io.StringIO(body)))
        assert len(rows) == n and ("Beta" in body) == (n == 2), who
        api = c.get(reverse("api-leaderboard", args=["t"]) + "?sort=recall").json()
        assert len(api["systems"]) == n and [s["rank"] for s in api["systems"]] == \
            list(range(1, n + 1)), who


@pytest.mark.django_db
def test_live_state_and_edits_reach_the_stored_board(
        scored: World, django_capture_on_commit_callbacks) -> None:
    # A withdrawal is visible at once, before any recompute.
    Submission.objects.filter(pk=scored.b.pk).update(state=State.WITHDRAWN)
    body = Client().get(reverse("leaderboard-csv", args=["t"])).content.decode()
    assert "Beta" not in body and "Alpha" in body
    # An edit of a baked-in field (admin form: a plain save) re-renders the boards.
    sub = Submission.objects.get(pk=scored.a.pk)
    sub.paper_url = "https://example.org/alpha-paper"
    sub.method_description = "Line one\nline <two>"
    with django_capture_on_commit_callbacks(execute=True):
        sub.save()
    page = Client().get(reverse("leaderboard", args=["t"])).content.decode()
    assert 'href="https://example.org/alpha-paper"' in page
    assert "Line one<br>line &lt;two&gt;" in page
    data = Client().get(reverse("api-leaderboard", args=["t"])).json()
    assert data["systems"][0]["paper_url"] == "https://example.org/alpha-paper"


@pytest.mark.django_db
def test_missing_snapshots_are_built_on_first_read(scored: World) -> None:
    BoardSnapshot.objects.all().delete()
    resp = Client().get(reverse("api-leaderboard", args=["t"]))
    assert resp.status_code == 200 and [s["name"] for s in resp.json()["systems"]] == \
        ["Alpha", "Beta"]
    assert BoardSnapshot.objects.filter(corpus=scored.corpus).exists()


@pytest.mark.django_db
def test_corpus_without_scores_serves_empty_boards(world: World) -> None:
    c = Client()
    assert "No scores yet" in c.get(reverse("leaderboard", args=["t"])).content.decode()
    assert c.get(reverse("api-leaderboard", args=["t"])).json()["systems"] == []
    body = c.get(reverse("leaderboard-csv", args=["t"])).content.decode()
    assert body.startswith("rank,submission,name") and body.count("\n") == 1


@pytest.mark.django_db
def test_csv_carries_the_dropped_lines_like_the_json(world: World) -> None:
    Submission.objects.filter(pk=world.a.pk).update(drop_invalid=True, n_dropped=7)
    label(world.pairs["born"], "per:place_of_birth")
    scoring.recompute(world.corpus)
    body = Client().get(reverse("leaderboard-csv", args=["t"])).content.decode()
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(body))}
    assert rows["Alpha"]["lines_dropped"] == "7"
    assert rows["Beta"]["lines_dropped"] == ""  # all-or-nothing: nothing was dropped
    api = {s["name"]: s for s in Client().get(reverse("api-leaderboard", args=["t"]))
           .json()["systems"]}
    assert api["Alpha"]["lines_dropped"] == 7 and api["Beta"]["lines_dropped"] is None


@pytest.mark.django_db
def test_boards_from_the_rows_in_hand_equal_those_from_the_stored_rows(world: World) -> None:
    # recompute renders from the rows it just stored; a refresh reads them back.
    def boards() -> dict:
        return {(b.scheme, b.kind, b.metric): (b.head, b.rows, b.html, b.api, b.csv)
                for b in BoardSnapshot.objects.filter(corpus=world.corpus)}

    label(world.pairs["born"], "per:place_of_birth")
    label(world.pairs["work"], "no_relation")
    run = scoring.recompute(world.corpus)
    written = boards()
    assert len(written) == len(lb.BOARD_SCHEMES) * len(lb.KINDS) * len(METRICS)
    assert BoardSnapshot.objects.filter(corpus=world.corpus, run=run).count() == len(written)
    snapshot.refresh_corpus(world.corpus.pk)
    assert boards() == written


@pytest.mark.django_db
def test_an_owners_new_username_reaches_the_stored_board(
        scored: World, django_capture_on_commit_callbacks, django_assert_num_queries) -> None:
    """Boards name owners by username: renaming one (the admin's user form: a plain save)
    re-renders every board that lists them; a login's save of last_login alone costs no
    extra query and re-renders nothing."""
    owner = Submission.objects.get(pk=scored.a.pk).owner
    old = owner.get_username()

    def owners() -> set[str]:
        api = Client().get(reverse("api-leaderboard", args=["t"])).json()
        body = Client().get(reverse("leaderboard-csv", args=["t"])).content.decode()
        return {s["owner"] for s in api["systems"]} | {
            r["owner"] for r in csv.DictReader(io.StringIO(body))}

    assert old in owners()
    with (django_capture_on_commit_callbacks(execute=True) as callbacks,
          django_assert_num_queries(1)):  # the UPDATE alone
        owner.save(update_fields=["last_login"])
    assert callbacks == []
    owner.username = "renamed-owner"
    with django_capture_on_commit_callbacks(execute=True):
        owner.save()
    seen = owners()
    assert "renamed-owner" in seen and old not in seen
    page = Client().get(reverse("leaderboard", args=["t"])).content.decode()
    assert "renamed-owner" in page and f">{old}<" not in page


@pytest.mark.django_db
def test_boards_rendered_by_another_deploy_are_rendered_again_once(scored: World) -> None:
    """A stored board keeps the markup of the code and templates that rendered it: after a
    deploy that changed them, the first read renders the run's boards again (the rows'
    markup would otherwise wait for the next recompute); later reads serve them."""
    from estimation.stored_pages import render_version

    stale = BoardSnapshot.objects.filter(corpus=scored.corpus)
    for snap in stale:
        snap.head = {**snap.head, "version": "an-older-deploy",
                     "open": snap.head["open"].replace("<table", "<table data-old-markup")}
        snap.html = [[b, "OLD ROW" + mid, tail] for b, mid, tail in snap.html]
        snap.save()
    page = Client().get(reverse("leaderboard", args=["t"])).content.decode()
    assert "data-old-markup" not in page and "OLD ROW" not in page
    assert {s.head["version"] for s in BoardSnapshot.objects.filter(corpus=scored.corpus)} \
        == {render_version()}
    built = dict(BoardSnapshot.objects.values_list("pk", "built_at"))
    for _ in range(2):
        assert Client().get(reverse("api-leaderboard", args=["t"])).status_code == 200
    assert dict(BoardSnapshot.objects.values_list("pk", "built_at")) == built
