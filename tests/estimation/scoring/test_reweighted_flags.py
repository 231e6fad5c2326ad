"""Reweighted schemes (estimated from the draw scheme's draws) are flagged on the
leaderboard, the report and in the API, and kept off the headline: they have not been
made sound under a biased crowd (issue 38; docs/internals/crowd-bias.md §3)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from estimation import leaderboard as lb
from tests.estimation.scoring.scoring_world import World


def _get(name: str, *args: object, **query: object):
    resp = Client().get(reverse(name, args=args), query)
    assert resp.status_code == 200, resp.content[:300]
    return resp


@pytest.mark.django_db
def test_reweighted_schemes_are_flagged_and_the_draw_schemes_are_not(scored: World,
                                                                     settings) -> None:
    assert settings.KBPO_SAMPLING_SCHEME == "instance"
    assert lb.default_scheme() == "instance"  # the headline board is the draw scheme's
    tag = scored.corpus.tag
    for scheme in lb.offered_schemes():
        flagged = scheme != "instance"
        body = _get("api-leaderboard", tag, scheme=scheme).json()
        assert (body["reweighted"], body["reliable"]) == (flagged, not flagged), scheme
        page = _get("leaderboard", tag, scheme=scheme).content.decode()
        assert ('id="reweighted-note"' in page) is flagged, scheme
        # Every tab but the draw scheme's carries the badge, on every scheme's page.
        assert page.count("reweighted-badge") == len(lb.offered_schemes()) - 1
        report = _get("submission-evaluation", scored.a.pk, scheme=scheme).content.decode()
        assert ('id="reweighted-note"' in report) is flagged, scheme
    scores = _get("api-submission-scores", scored.a.pk).json()["schemes"]
    assert {s["scheme"]: (s["reweighted"], s["reliable"]) for s in scores} == {
        s: (s != "instance", s == "instance") for s in lb.BOARD_SCHEMES}
    report = _get("submission-evaluation", scored.a.pk).content.decode()
    assert report.count("reweighted-badge") == len(lb.BOARD_SCHEMES) - 1


def test_the_flags_follow_the_runs_draw_scheme() -> None:
    assert lb.reliability("entity", "entity") == {"reweighted": False, "reliable": True}
    assert lb.reliability("instance", "entity") == {"reweighted": True, "reliable": False}


@pytest.mark.django_db
def test_a_comparison_under_a_reweighted_scheme_is_flagged(scored: World) -> None:
    tag, pks = scored.corpus.tag, {"a": scored.a.pk, "b": scored.b.pk}
    for scheme, flagged in (("instance", False), ("predicate", True)):
        body = _get("api-compare", tag, scheme=scheme, **pks).json()
        assert (body["reweighted"], body["reliable"]) == (flagged, not flagged)
        page = _get("compare", tag, scheme=scheme, **pks).content.decode()
        assert ('id="reweighted-note"' in page) is flagged
