"""The report's data in the API: scores, per-predicate P and R, history, samples, progress;
the per-predicate CSV; who may read them."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from annotations.models import Hit
from estimation import scoring
from submissions.models import Submission
from tests.estimation.scoring.scoring_world import World, label
from tests.factories import make_hit, make_user


@pytest.fixture
def scored(world: World) -> World:
    label(world.pairs["born"], "per:place_of_birth")
    label(world.pairs["wed"], "per:spouse")
    scoring.recompute(world.corpus)
    label(world.pairs["work"], "per:employee_or_member_of")
    scoring.recompute(world.corpus)
    return world


def _get(name: str, pk: int, user: object | None = None, **query: str):
    c = Client()
    if user is not None:
        c.force_login(user)
    return c.get(reverse(name, args=[pk]), query)


@pytest.mark.django_db
def test_scores_every_scheme_joint_and_simple_with_per_predicate_recall(scored: World) -> None:
    body = _get("api-submission-scores", scored.a.pk).json()
    assert body["submission"] == scored.a.pk and body["run"]["labels"] == 3
    schemes = {s["scheme"]: s for s in body["schemes"]}
    assert set(schemes) == {"instance", "predicate", "entity", "entity_relation"}
    inst = schemes["instance"]
    # Alpha's two predictions are both right and it found 2 of the 3 true relations.
    assert inst["precision"]["joint"]["estimate"] == pytest.approx(1.0)
    assert inst["recall"]["simple"]["estimate"] == pytest.approx(2 / 3)
    for metric in ("precision", "recall", "f1"):
        for kind in ("joint", "simple"):
            iv = inst[metric][kind]
            assert iv["lo"] <= iv["hi"]
    preds = {p["predicate"]: p for p in body["predicates"]}
    assert preds["per:spouse"]["precision"]["estimate"] == 1.0
    assert preds["per:spouse"]["recall"]["estimate"] == 1.0
    assert preds["per:spouse"]["found"] == preds["per:spouse"]["exhaustive"] == 1
    # A predicate Alpha never predicted still has its recall: 0 of 1.
    miss = preds["per:employee_or_member_of"]
    assert miss["instances"] == 0 and miss["recall"]["estimate"] == 0.0
    assert miss["recall"]["hi"] > 0 and miss["precision"]["estimate"] is None


@pytest.mark.django_db
def test_history_samples_and_progress(scored: World) -> None:
    hist = _get("api-submission-history", scored.a.pk, scheme="instance").json()
    assert [p["labels"] for p in hist["points"]] == [2, 3]
    assert set(hist["points"][0]) >= {"run", "finished_at", "precision", "recall", "f1"}
    bad = _get("api-submission-history", scored.a.pk, scheme="bogus")
    assert bad.status_code == 400 and "scheme" in bad.json()

    samples = _get("api-submission-samples", scored.b.pk).json()
    assert samples["count"] == 2 and samples["next"] is None
    verdicts = {s["predicate"]: s["verdict"] for s in samples["results"]}
    assert verdicts == {"per:place_of_death": "wrong", "per:employee_or_member_of": "correct"}
    wrong = _get("api-submission-samples", scored.b.pk, verdict="wrong").json()
    assert [s["subject"] for s in wrong["results"]] == ["Ada Byron"]
    assert wrong["results"][0]["label"] == ["per:place_of_birth"]
    for query, field in (({"verdict": "maybe"}, "verdict"), ({"page": "9"}, "page"),
                         ({"page": "x"}, "page")):
        resp = _get("api-submission-samples", scored.b.pk, **query)
        assert resp.status_code == 400 and field in resp.json()

    prog = _get("api-submission-progress", scored.a.pk).json()
    assert prog["percent"] == 100 and prog["drawn_pairs"] == prog["labelled_pairs"] == 2
    assert (prog["spend_usd"], prog["budget_usd"]) == ("0.00", "100.00")
    # Spend: the cost of the HITs charged to the submission, as the report page shows it.
    hit = make_hit(scored.corpus, [scored.pairs["born"]], submission=scored.a)
    Hit.objects.filter(pk=hit.pk).update(cost_estimate=Decimal("0.75"))
    make_hit(scored.corpus, [scored.pairs["wed"]], submission=scored.b)  # not a's
    prog = _get("api-submission-progress", scored.a.pk).json()
    assert (prog["spend_usd"], prog["budget_usd"]) == ("0.75", "100.00")


@pytest.mark.django_db
def test_private_reports_are_hidden_from_others_and_public_ones_open(scored: World) -> None:
    Submission.objects.filter(pk=scored.a.pk).update(public=False)
    eve = make_user("eve")
    for name in ("api-submission-scores", "api-submission-history", "api-submission-samples",
                 "api-submission-progress", "submission-predicates-csv",
                 "submission-evaluation", "submission-evaluation-progress"):
        assert _get(name, scored.a.pk).status_code == 404, name
        assert _get(name, scored.a.pk, eve).status_code == 404, name
        assert _get(name, scored.a.pk, scored.a.owner).status_code == 200, name
        # Beta is public: everyone may read its report, signed in or not.
        assert _get(name, scored.b.pk).status_code == 200, name
    assert _get("api-submission-scores", 999_999).status_code == 404


@pytest.mark.django_db
def test_predicate_csv_has_precision_and_recall(scored: World) -> None:
    resp = _get("submission-predicates-csv", scored.a.pk)
    rows = list(csv.DictReader(io.StringIO(resp.content.decode())))
    spouse = next(r for r in rows if r["predicate"] == "per:spouse")
    assert float(spouse["precision"]) == 1.0 and float(spouse["recall"]) == 1.0
    assert {"precision_lo", "recall_lo", "recall_hi", "found", "exhaustive"} <= set(spouse)
    page = _get("submission-evaluation", scored.a.pk).content.decode()
    assert "Simple recall" in page and "predicates.csv" in page


@pytest.mark.django_db
def test_schema_documents_the_report_endpoints() -> None:
    schema = Client().get(reverse("api-schema"), HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    for path in ("/api/submissions/{id}/scores/", "/api/submissions/{id}/history/",
                 "/api/submissions/{id}/samples/", "/api/submissions/{id}/progress/",
                 "/api/compare/{tag}/"):
        key = path.replace("{id}", "{pk}")
        assert key in paths or path in paths, (path, sorted(paths))
    upload = paths["/api/submissions/"]["post"]
    assert {"201", "409", "422", "429"} <= set(upload["responses"])
    assert "poll" in upload["description"]


@pytest.mark.django_db
def test_my_submissions_list_shows_the_latest_scores(scored: World) -> None:
    c = Client()
    c.force_login(scored.a.owner)
    html = c.get(reverse("submission-list")).content.decode()
    run_score = scored.a.scores.filter(scheme="instance").order_by("-run_id").first()
    assert f"{run_score.f1_joint:.3f}" in html and f"{run_score.p_joint:.3f}" in html
    assert reverse("submission-evaluation", args=[scored.a.pk]) in html
    # A submission without scores says so.
    scored.a.scores.all().delete()
    assert "not scored yet" in c.get(reverse("submission-list")).content.decode()


@pytest.mark.django_db
def test_a_system_without_draws_shows_what_others_labels_say(scored: World) -> None:
    """Scored jointly from other systems' labels, a system has no draws of its own: its
    per-predicate precision stays null (no sample of its own to estimate from), and the
    API and the report say how many of its instances those labels cover and confirm."""
    from annotations.models import SampleDraw

    # (`scored` labelled born, wed and work; Beta drew born and work.)
    SampleDraw.objects.filter(submission=scored.b).delete()
    body = _get("api-submission-scores", scored.b.pk).json()
    preds = {p["predicate"]: p for p in body["predicates"]}
    work, death = preds["per:employee_or_member_of"], preds["per:place_of_death"]
    assert work["draws"] == 0 and work["precision"]["estimate"] is None
    assert (work["labelled_instances"], work["correct_instances"]) == (1, 1)
    # Born is labelled per:place_of_birth: Beta's place_of_death there is wrong.
    assert (death["labelled_instances"], death["correct_instances"]) == (1, 0)
    client = Client()
    client.force_login(scored.b.owner)
    html = client.get(f"/submissions/{scored.b.pk}/report/").content.decode()
    assert "no draws of its own; 1 of 1 labelled by other samples right" in html
    assert "no draws of its own; 0 of 1 labelled by other samples right" in html
