"""The compare page and API: two visible systems, the difference and its verdict."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from submissions.models import Submission
from tests.estimation.scoring.scoring_world import World
from tests.factories import make_user


def _api(user: object | None = None, tag: str = "t", **query: object):
    c = Client()
    if user is not None:
        c.force_login(user)
    return c.get(reverse("api-compare", args=[tag]), query)


@pytest.mark.django_db
def test_difference_matches_the_two_estimates_and_names_the_better(scored: World) -> None:
    body = _api(a=scored.a.pk, b=scored.b.pk).json()
    for metric in ("precision", "recall", "f1"):
        d = body["difference"][metric]
        a, b = body["a"][metric]["estimate"], body["b"][metric]["estimate"]
        assert d["estimate"] == pytest.approx(a - b, abs=2e-6)  # each rounded to 1e-6
        assert d["lo"] <= d["estimate"] <= d["hi"]
        # "better" only when the interval excludes 0, and then the right side.
        if d["lo"] > 0:
            assert d["better"] == "a"
        elif d["hi"] < 0:
            assert d["better"] == "b"
        else:
            assert d["better"] is None
    # Every sampled pair is labelled: Alpha's precision is exactly 1, Beta's exactly 1/2.
    p = body["difference"]["precision"]
    assert p["estimate"] == pytest.approx(0.5) and p["better"] == "a"
    swapped = _api(a=scored.b.pk, b=scored.a.pk).json()["difference"]["precision"]
    assert swapped["estimate"] == pytest.approx(-0.5) and swapped["better"] == "b"


@pytest.mark.django_db
def test_bad_requests_name_the_field(scored: World) -> None:
    cases = [({"b": scored.b.pk}, "a", 400), ({"a": "x", "b": scored.b.pk}, "a", 400),
             ({"a": scored.a.pk, "b": scored.a.pk}, "b", 400),
             ({"a": scored.a.pk, "b": scored.b.pk, "scheme": "zzz"}, "scheme", 400),
             ({"a": scored.a.pk, "b": 999_999}, "b", 404)]
    for query, field, status in cases:
        resp = _api(**query)
        assert resp.status_code == status and field in resp.json(), (query, resp.content)
    assert _api(tag="nope", a=1, b=2).status_code == 404


@pytest.mark.django_db
def test_private_systems_compare_only_for_owner_and_staff(scored: World) -> None:
    Submission.objects.filter(pk=scored.a.pk).update(public=False)
    eve = make_user("eve")
    assert _api(a=scored.a.pk, b=scored.b.pk).status_code == 404
    assert _api(eve, a=scored.a.pk, b=scored.b.pk).status_code == 404
    assert _api(scored.a.owner, a=scored.a.pk, b=scored.b.pk).status_code == 200
    assert _api(make_user("root", staff=True), a=scored.a.pk, b=scored.b.pk).status_code == 200
    page = Client().get(reverse("compare", args=["t"])).content.decode()
    assert "Beta" in page and "Alpha" not in page  # not even offered in the form


@pytest.mark.django_db
def test_compare_page_shows_the_verdict(scored: World) -> None:
    url = reverse("compare", args=["t"])
    resp = Client().get(url, {"a": scored.a.pk, "b": scored.b.pk, "scheme": "instance"})
    html = resp.content.decode()
    assert resp.status_code == 200 and 'id="compare-result"' in html
    assert "<strong><bdi>Alpha</bdi></strong> is better" in html
    bad = Client().get(url, {"a": scored.a.pk, "b": "oops"})
    assert bad.status_code == 400 and "b=&#x27;oops&#x27; is not a submission id" in \
        bad.content.decode()


@pytest.mark.django_db
def test_compare_reads_the_leaderboards_labelled_state(scored: World) -> None:
    """The figures beside the leaderboard are its own; while labels newer than its run
    wait to be scored, a fresh comparison is refused (503) rather than made on them."""
    from django.db.models import F

    from estimation import scoring
    from estimation.core.intervals import rounded_outward
    from estimation.models import ScoreRun, ScoringState, SystemScore

    body = _api(a=scored.a.pk, b=scored.b.pk).json()
    run = ScoreRun.latest(scored.corpus)
    row = SystemScore.objects.get(run=run, submission=scored.a, scheme="instance")
    for metric in ("precision", "recall", "f1"):
        est, lo, hi = row.interval(metric, "joint")
        shown = body["a"][metric]
        assert shown["estimate"] == pytest.approx(est, abs=1e-6)
        assert (shown["lo"], shown["hi"]) == rounded_outward(lo, hi)
    # A label arrives; the board still shows the run before it.
    state, _ = ScoringState.objects.get_or_create(corpus=scored.corpus)
    ScoringState.objects.filter(pk=state.pk).update(generation=F("generation") + 1)
    resp = _api(a=scored.b.pk, b=scored.a.pk)
    assert resp.status_code == 503 and "scores" in resp.json()
    # The comparison made on the board's state is still served for the board it matches.
    assert _api(a=scored.a.pk, b=scored.b.pk).json() == body
    scoring.run_scheduled(scored.corpus.pk)  # scores the newer generation
    assert _api(a=scored.b.pk, b=scored.a.pk).status_code == 200


def test_compare_choices_say_submission_not_rank(scored: World) -> None:
    """"#" means rank on the leaderboard: the drop-downs name the owner and the
    submission id in words instead of "#12"."""
    html = Client().get(reverse("compare", args=["t"])).content.decode()
    options = [o.split(">", 1)[1] for o in html.split("<option")[1:]]
    assert options and not [o for o in options if "#" in o], options
    owner = scored.a.owner.get_username()
    assert any(f"{owner}\u2069, submission {scored.a.pk})" in o for o in options), options
