"""No public payload reveals a private system: not its name, its id, nor a count."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from estimation import scoring
from submissions.models import Submission
from tests.estimation.scoring.scoring_world import World, label
from tests.factories import make_user


@pytest.fixture
def private(world: World) -> World:
    label(world.pairs["born"], "per:place_of_birth")
    label(world.pairs["wed"], "per:spouse")
    label(world.pairs["work"], "per:employee_or_member_of")
    Submission.objects.filter(pk=world.b.pk).update(public=False, name="SecretSauce")
    scoring.recompute(world.corpus)
    return world


def _pages(w: World) -> dict[str, str]:
    tag = w.corpus.tag
    return {
        "home": reverse("home"),
        "index": reverse("leaderboard-index"),
        "board": reverse("leaderboard", args=[tag]),
        "board-recall": reverse("leaderboard", args=[tag]) + "?sort=recall&kind=simple",
        "csv": reverse("leaderboard-csv", args=[tag]),
        "api": reverse("api-leaderboard", args=[tag]),
        "api-entity": reverse("api-leaderboard", args=[tag]) + "?scheme=entity",
        "compare": reverse("compare", args=[tag]),
        "compare-ab": reverse("compare", args=[tag]) + f"?a={w.a.pk}&b={w.b.pk}",
        "api-compare": reverse("api-compare", args=[tag]) + f"?a={w.a.pk}&b={w.b.pk}",
        "report-public": reverse("submission-evaluation", args=[w.a.pk]),
        "scores-public": reverse("api-submission-scores", args=[w.a.pk]),
    }


@pytest.mark.django_db
def test_public_payloads_do_not_reveal_a_private_system(private: World) -> None:
    eve = make_user("eve")
    for who, client in (("anonymous", Client()), ("another user", Client())):
        if who == "another user":
            client.force_login(eve)
        for name, url in _pages(private).items():
            resp = client.get(url)
            body = resp.content.decode()
            assert resp.status_code in (200, 404), (who, name, resp.status_code)
            assert "SecretSauce" not in body, (who, name)
            # The private system's owner, as a word: random tokens (CSRF, nonces, data
            # URIs) hold "bob" now and then.
            assert not re.search(r"\bbob\b", body), (who, name)
        api = client.get(reverse("api-leaderboard", args=["t"])).json()
        assert [r["submission"] for r in api["systems"]] == [private.a.pk]
        # Counts are over what this viewer sees: one system, its draws only.
        assert api["run"]["systems"] == 1
        assert api["run"]["draws"] == 2
        board = client.get(reverse("leaderboard", args=["t"])).content.decode()
        assert "1 system ·" in " ".join(board.split())
        index = client.get(reverse("leaderboard-index")).content.decode()
        assert "1 ranked system" in " ".join(index.split())
        for name in ("api-submission-scores", "api-submission-history",
                     "api-submission-samples", "api-submission-progress",
                     "submission-evaluation", "submission-predicates-csv"):
            assert client.get(reverse(name, args=[private.b.pk])).status_code == 404


@pytest.mark.django_db
def test_owner_and_staff_see_it_and_its_counts(private: World) -> None:
    for user in (private.b.owner, make_user("root", staff=True)):
        c = Client()
        c.force_login(user)
        api = c.get(reverse("api-leaderboard", args=["t"])).json()
        assert api["run"]["systems"] == 2 and api["run"]["draws"] == 4
        assert "SecretSauce" in c.get(reverse("leaderboard", args=["t"])).content.decode()
