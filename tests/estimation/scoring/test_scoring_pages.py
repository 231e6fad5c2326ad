"""Leaderboard page, API, CSV, visibility, the evaluation report and the commands."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotations.models import PairLabel
from estimation import scoring
from estimation.models import interval_ends
from submissions.models import Submission
from tests.estimation.scoring.scoring_world import World
from tests.factories import make_user


def _client(user: object | None = None) -> Client:
    c = Client()
    if user is not None:
        c.force_login(user)
    return c


@pytest.mark.django_db
def test_leaderboard_ranks_by_f1_with_error_bars(scored: World) -> None:
    resp = _client().get(reverse("leaderboard", args=["t"]))
    assert resp.status_code == 200
    html = resp.content.decode()
    assert html.index("Alpha") < html.index("Beta")  # Alpha has higher F1
    assert html.count('class="errbar"') == 2 and "<circle" in html
    assert "refining" in html  # Beta is still annotating
    # Sorting by recall and another scheme keeps working.
    for q in ("?sort=recall", "?sort=precision&scheme=entity", "?kind=simple&scheme=predicate"):
        assert _client().get(reverse("leaderboard", args=["t"]) + q).status_code == 200


@pytest.mark.django_db
def test_bad_parameters_are_explained_not_500(scored: World) -> None:
    resp = _client().get(reverse("leaderboard", args=["t"]) + "?sort=bogus")
    assert resp.status_code == 400 and "sort=&#x27;bogus&#x27; is not offered" in \
        resp.content.decode()
    api = _client().get(reverse("api-leaderboard", args=["t"]) + "?scheme=nope")
    assert api.status_code == 400 and "scheme" in api.json()
    assert _client().get(reverse("api-leaderboard", args=["nope"])).status_code == 404
    assert _client().get(reverse("leaderboard", args=["nope"])).status_code == 404


@pytest.mark.django_db
def test_private_systems_only_for_owner_and_staff(scored: World) -> None:
    Submission.objects.filter(pk=scored.b.pk).update(public=False)
    url = reverse("api-leaderboard", args=["t"])
    names = lambda c: [s["name"] for s in c.get(url).json()["systems"]]  # noqa: E731
    assert names(_client()) == ["Alpha"]
    assert names(_client(make_user("carol"))) == ["Alpha"]
    assert sorted(names(_client(make_user("bob")))) == ["Alpha", "Beta"]
    assert sorted(names(_client(make_user("staff", staff=True)))) == ["Alpha", "Beta"]
    page = _client().get(reverse("leaderboard", args=["t"])).content.decode()
    assert "Beta" not in page
    csv_body = _client().get(reverse("leaderboard-csv", args=["t"])).content.decode()
    assert "Beta" not in csv_body


@pytest.mark.django_db
def test_api_json_and_csv(scored: World) -> None:
    data = _client().get(reverse("api-leaderboard", args=["t"]) + "?sort=precision").json()
    assert data["corpus"] == "t" and data["sort"] == "precision" and data["confidence"] == 0.9
    first = data["systems"][0]
    assert first["rank"] == 1 and first["leader"] and first["name"] == "Alpha"
    assert set(first["precision"]) == {"estimate", "lo", "hi", "exact"}
    assert first["precision"]["lo"] <= first["precision"]["estimate"] <= first["precision"]["hi"]
    # Every pair is labelled: precision is exact, recall (2 of 3 gold found) is not.
    assert first["precision"]["exact"] is True and first["recall"]["exact"] is False
    resp = _client().get(reverse("leaderboard-csv", args=["t"]))
    assert resp["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(resp.content.decode())))
    assert [r["name"] for r in rows] == ["Alpha", "Beta"] and rows[0]["f1"]
    assert rows[0]["precision_exact"] == "True" and rows[0]["recall_exact"] == "False"


@pytest.mark.django_db
def test_csv_defuses_formulas_and_pages_escape_names(scored: World) -> None:
    Submission.objects.filter(pk=scored.a.pk).update(name='=HYPERLINK("x")<script>')
    body = _client().get(reverse("leaderboard-csv", args=["t"])).content.decode()
    assert "'=HYPERLINK" in body
    html = _client().get(reverse("leaderboard", args=["t"])).content.decode()
    assert "<script>" not in html and "&lt;script&gt;" in html


@pytest.mark.django_db
def test_openapi_schema_lists_the_leaderboard(scored: World) -> None:
    resp = _client(make_user("staff", staff=True)).get(reverse("api-schema") + "?format=json")
    schema = json.loads(resp.content)
    assert "/api/leaderboard/{tag}/" in schema["paths"]


@pytest.mark.django_db
def test_index_lists_corpora_with_leader(scored: World) -> None:
    html = _client().get(reverse("leaderboard-index")).content.decode()
    assert "Leader: <strong><bdi>Alpha</bdi></strong>" in html


@pytest.mark.django_db
def test_report_visibility_and_contents(scored: World) -> None:
    Submission.objects.filter(pk=scored.a.pk).update(public=False)
    url = reverse("submission-evaluation", args=[scored.a.pk])
    assert _client(make_user("carol")).get(url).status_code == 404
    # A private report does not exist for anyone else, signed in or not.
    assert _client().get(url).status_code == 404
    resp = _client(make_user("ada")).get(url)
    assert resp.status_code == 200
    html = resp.content.decode()
    assert 'id="progress-fill"' in html and "2 of" in html
    assert html.count("<polygon") + html.count("whisker-") >= 3  # history per metric
    assert "per:place_of_birth" in html and '<mark class="subject"' in html
    assert "✓ correct" in html
    prog = _client(make_user("ada")).get(
        reverse("submission-evaluation-progress", args=[scored.a.pk])).json()
    assert prog["drawn_pairs"] == 2 and prog["labelled_pairs"] == 2 and prog["percent"] == 100
    assert prog["precision"]["estimate"] == pytest.approx(1.0)
    assert _client(make_user("carol")).get(
        reverse("submission-evaluation-progress", args=[scored.a.pk])).status_code == 404


@pytest.mark.django_db
def test_report_explorer_filters_and_history(scored: World) -> None:
    # A second run with other numbers (one that changes nothing stores nothing): Alpha's
    # "wed" turns out false. The history has two points.
    PairLabel.objects.filter(pair=scored.pairs["wed"]).update(predicates=["no_relation"])
    scoring.recompute(scored.corpus)
    c = _client(make_user("bob"))
    url = reverse("submission-evaluation", args=[scored.b.pk])
    wrong = c.get(url + "?verdict=wrong").content.decode().split('id="samples"')[1]
    assert "per:place_of_death" in wrong and "per:employee_or_member_of" not in wrong
    assert "2 recomputations" in c.get(url).content.decode()
    assert c.get(url + "?verdict=zzz&page=99&scheme=bad").status_code == 200


@pytest.mark.django_db
def test_scores_command_table_and_json(scored: World) -> None:
    out = io.StringIO()
    call_command("scores", "--corpus", "t", stdout=out)
    text = out.getvalue()
    assert "Alpha" in text and "Beta" in text and "refining" in text
    out = io.StringIO()
    call_command("scores", "--corpus", "t", "--format", "json", "--sort", "precision",
                 stdout=out)
    data = json.loads(out.getvalue())
    assert [s["name"] for s in data["systems"]] == ["Alpha", "Beta"]
    with pytest.raises(CommandError, match="no such corpus"):
        call_command("scores", "--corpus", "nope")


@pytest.mark.django_db
def test_recompute_scores_command(world: World) -> None:
    out = io.StringIO()
    call_command("recompute_scores", "--corpus", "t", stdout=out)
    assert "2 active systems" in out.getvalue() and "Run " in out.getvalue()
    assert scoring.latest_run(world.corpus) is not None


@pytest.mark.django_db
def test_exact_values_read_exact_not_a_zero_width_interval(scored: World) -> None:
    """Labels on every pair decide precision: pages, API, CSV, the command and the
    e-mail say "exact" instead of showing an interval like 1.000–1.000."""
    board = _client().get(reverse("leaderboard", args=["t"]) + "?sort=precision")
    html = board.content.decode()
    assert 'class="ci exact"' in html and "1.000–1.000" not in html and "0.500–0.500" not in html
    assert '<span class="ci">' in html  # recall and F1 are still intervals
    report = _client(make_user("ada")).get(
        reverse("submission-evaluation", args=[scored.a.pk])).content.decode()
    assert 'class="ci exact"' in report and "1.000–1.000" not in report
    prog = _client(make_user("ada")).get(
        reverse("submission-evaluation-progress", args=[scored.a.pk])).json()
    assert prog["precision"]["exact"] is True and prog["recall"]["exact"] is False
    out = io.StringIO()
    call_command("scores", "--corpus", "t", stdout=out)
    alpha = next(line for line in out.getvalue().splitlines() if "Alpha" in line)
    assert "exact" in alpha and "[1.000,1.000]" not in alpha
    assert scoring.fmt_interval(1.0, 1.0, 1.0) == "1.000  (exact: every prediction is labelled)"
    assert "interval 0.200–0.700" in scoring.fmt_interval(0.5, 0.2, 0.7)
    # Narrow but not exact (a tiny system's recall): enough decimals to tell the ends apart.
    assert "interval 0.0006–0.0014" in scoring.fmt_interval(0.001, 0.0006, 0.0014)
    assert interval_ends(0.00121, 0.00124) == ("0.00121", "0.00124")
    assert interval_ends(0.25, 0.5) == ("0.250", "0.500")
