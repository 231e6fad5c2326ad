"""The per-predicate exhaustive counts a score run stores equal what the report computes
from the exhaustive sample; the report reads them, and a run without them still renders."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest
from django.test import Client
from django.urls import reverse

from annotations.models import ExhaustiveDocument, GoldRelation
from estimation import report, scoring
from estimation.models import ScoreRun, SystemScore
from submissions.models import State, Submission
from tests.estimation.scoring.scoring_world import World, label
from tests.factories import make_submission


def _gold(world: World, key: str, predicate: str, shift: int = 0) -> None:
    p = world.pairs[key]
    GoldRelation.objects.create(document=p.document, subject_begin=p.subject_begin + shift,
                                subject_end=p.subject_end, object_begin=p.object_begin,
                                object_end=p.object_end, predicate=predicate,
                                subject_entity=key)


@pytest.fixture
def scored(world: World) -> World:
    # Beyond the three true relations: one Beta found on a pair Alpha gave another
    # predicate, one matching no mention pair (found by nobody).
    _gold(world, "born", "per:place_of_death")
    _gold(world, "work", "per:employee_or_member_of", shift=1)
    label(world.pairs["born"], "per:place_of_birth")
    label(world.pairs["wed"], "per:spouse")
    scoring.recompute(world.corpus)
    label(world.pairs["work"], "per:employee_or_member_of")
    scoring.recompute(world.corpus)
    return world


def _stored(sub: Submission) -> dict[str, list[int]] | None:
    run, scores = report.latest_scores(sub)
    return scores[run.draw_scheme].exhaustive_found


def _computed(sub: Submission) -> dict[str, list[int]]:
    total, found = report._exhaustive_found(sub)
    return {p: [total[p], found[p]] for p in total}


@pytest.mark.django_db
def test_stored_counts_equal_the_computed_ones(scored: World) -> None:
    a, b = scored.a, scored.b
    assert _stored(a) == _computed(a) == {
        "per:place_of_birth": [1, 1], "per:spouse": [1, 1],
        "per:place_of_death": [1, 0], "per:employee_or_member_of": [2, 0]}
    assert _stored(b) == _computed(b) == {
        "per:place_of_birth": [1, 0], "per:spouse": [1, 0],
        "per:place_of_death": [1, 1], "per:employee_or_member_of": [2, 1]}
    # Scheme-free: kept once per run and system, on the draw scheme's row.
    run, _ = report.latest_scores(a)
    rows = SystemScore.objects.filter(run=run)
    assert {r.scheme for r in rows if r.exhaustive_found is not None} == {run.draw_scheme}


@pytest.mark.django_db
def test_without_an_exhaustive_sample_and_for_an_empty_system(world: World) -> None:
    ExhaustiveDocument.objects.all().delete()
    empty = make_submission(world.corpus, [], name="Empty", state=State.SCORING)
    scoring.recompute(world.corpus)
    for sub in (world.a, world.b, empty):
        assert _stored(sub) == _computed(sub) == {}
    ExhaustiveDocument.objects.create(corpus=world.corpus, document=world.pairs["born"].document,
                                      stage="seed", state=ExhaustiveDocument.State.COMPLETE)
    scoring.recompute(world.corpus)
    for sub in (world.a, world.b, empty):
        assert _stored(sub) == _computed(sub)
    assert _stored(empty) == {"per:place_of_birth": [1, 0], "per:spouse": [1, 0],
                              "per:employee_or_member_of": [1, 0]}


def _views(sub: Submission) -> tuple[str, list[list[str]], list[dict]]:
    """The report page's per-predicate table, predicates.csv and the API's predicates."""
    c = Client()
    page = c.get(reverse("submission-evaluation", args=[sub.pk])).content.decode()
    table = page[page.index("<h2>Per predicate</h2>"):]
    table = table[:table.index("</table>")]
    body = c.get(reverse("submission-predicates-csv", args=[sub.pk])).content.decode()
    rows = list(csv.reader(io.StringIO(body)))
    api = c.get(reverse("api-submission-scores", args=[sub.pk])).json()["predicates"]
    return table, rows, api


@pytest.mark.django_db
def test_the_report_reads_the_stored_counts_and_renders_an_older_run_the_same(
        scored: World) -> None:
    a = scored.a
    stored = _views(a)
    rows = stored[1][1:]
    recall = {r[0]: r[8:11] for r in rows}
    assert recall["per:spouse"] == ["1", "1", "1.000000"]
    # A run that predates the stored counts: the report computes them, to the same pages.
    SystemScore.objects.update(exhaustive_found=None)
    assert _views(a) == stored
    # The stored counts are what the report shows (not a recomputation).
    run, _ = report.latest_scores(a)
    SystemScore.objects.filter(run=run, submission=a, scheme=run.draw_scheme).update(
        exhaustive_found={"per:spouse": [4, 3]})
    table, rows, api = _views(a)
    assert [r[8:10] for r in rows[1:] if r[0] == "per:spouse"] == [["4", "3"]]
    assert {p["predicate"]: (p["exhaustive"], p["found"]) for p in api}["per:spouse"] == (4, 3)
    assert "per:employee_or_member_of" not in {p["predicate"] for p in api}
    assert table != stored[0] and "per:employee_or_member_of" not in table


@pytest.mark.django_db
def test_latest_scores_is_the_newest_complete_run_that_scored_the_submission(
        scored: World) -> None:
    a, b = scored.a, scored.b
    assert report.latest_scores(make_submission(scored.corpus, [], name="New")) == (None, {})
    run, scores = report.latest_scores(a)
    assert set(scores) == set(SystemScore.objects.filter(run=run, submission=a)
                              .values_list("scheme", flat=True)) and len(scores) == 4
    # A newer complete run without Alpha (withdrawn meanwhile), and a newer failed one.
    later = ScoreRun.objects.create(corpus=scored.corpus, generation=99, draw_scheme="instance",
                                    confidence=0.9, started_at=run.started_at,
                                    finished_at=run.finished_at + dt.timedelta(minutes=1),
                                    status=ScoreRun.Status.COMPLETE)
    SystemScore.objects.create(run=later, submission=b, scheme="instance")
    failed = ScoreRun.objects.create(corpus=scored.corpus, generation=100, confidence=0.9,
                                     draw_scheme="instance", started_at=run.started_at,
                                     finished_at=run.finished_at + dt.timedelta(minutes=2),
                                     status=ScoreRun.Status.FAILED)
    SystemScore.objects.create(run=failed, submission=a, scheme="instance")
    assert report.latest_scores(a)[0] == run
    newest, rows = report.latest_scores(b)
    assert newest == later and list(rows) == ["instance"]
