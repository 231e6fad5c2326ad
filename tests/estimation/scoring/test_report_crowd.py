"""The report's crowd section: measured accuracy with its interval, and how far the
soft-label correction moved each score (page and API)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotations.models import (
    Assignment,
    Backend,
    CrowdWorker,
    HitQuestion,
    PairLabel,
    Question,
    QuestionState,
    Response,
    TaskKind,
)
from estimation import scoring
from estimation.models import ReportBody, ScoreRun, SystemScore
from tests.estimation.scoring.scoring_world import World
from tests.factories import make_hit, make_pair, span

TRUTH = {"born": "per:place_of_birth", "wed": "per:spouse",
         "work": "per:employee_or_member_of"}
# P(truth) the quality pass would store: "born" is doubtful (one of three said none).
POSTERIOR = {"born": 0.6, "wed": 0.97, "work": 0.97}


def _crowd(world: World) -> None:
    """Three workers answer the three pairs; "c" says none on "born"; soft labels."""
    keys = list(TRUTH)
    hit = make_hit(world.corpus, [world.pairs[k] for k in keys])
    questions = {keys[hq.position]: hq.question for hq in HitQuestion.objects.filter(hit=hit)}
    for name in ("a", "b", "c"):
        worker = CrowdWorker.objects.create(backend=Backend.SIMULATED, external_id=name)
        asg = Assignment.objects.create(hit=hit, worker=worker, external_id=f"as-{name}")
        for key, q in questions.items():
            choice = ["no_relation"] if (name, key) == ("c", "born") else [TRUTH[key]]
            Response.objects.create(assignment=asg, question=q, worker=worker, choices=choice)
    for key, q in questions.items():
        p = POSTERIOR[key]
        PairLabel.objects.create(pair=world.pairs[key], question=q, predicates=[TRUTH[key]],
                                 support=2 / 3 if key == "born" else 1.0, n_answers=3,
                                 posterior={TRUTH[key]: p, "no_relation": round(1 - p, 6)},
                                 prior={TRUTH[key]: 0.5, "no_relation": 0.5}, p_correct=p)


def _scores(pk: int) -> dict:
    return Client().get(reverse("api-submission-scores", args=[pk])).json()


@pytest.mark.django_db
def test_hard_labels_report_accuracy_and_no_correction(world: World, settings) -> None:
    settings.KBPO_SOFT_LABELS = False
    _crowd(world)
    scoring.recompute(world.corpus)
    body = _scores(world.a.pk)
    crowd = body["crowd"]
    assert crowd["soft_labels"] is False
    assert crowd["agreement"]["answers"] == 9 and crowd["agreement"]["workers"] == 3
    assert crowd["agreement"]["estimate"] == pytest.approx(8 / 9)
    # Model accuracy: every answer's P(right) from the stored posteriors.
    expected = (2 * 0.6 + 0.4 + 6 * 0.97) / 9
    acc = crowd["accuracy"]
    assert acc["estimate"] == pytest.approx(expected)
    assert acc["lo"] < expected < acc["hi"] and acc["hi"] <= 1
    assert acc["effective_answers"] <= 9
    assert all(s["correction"] is None for s in body["schemes"])
    assert not SystemScore.objects.filter(p_joint_hard__isnull=False).exists()
    page = Client().get(reverse("submission-evaluation", args=[world.a.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and 'id="crowd-accuracy"' in html
    assert "Agreement with the label" in html and "89%" in html
    assert f"{100 * expected:.0f}%" in html and "no noise correction" in html
    assert 'id="correction"' not in html


@pytest.mark.django_db
def test_soft_labels_show_how_far_the_correction_moved_each_score(world: World,
                                                                 settings) -> None:
    _crowd(world)
    settings.KBPO_SOFT_LABELS = False
    scoring.recompute(world.corpus)
    hard = {s["scheme"]: s for s in _scores(world.a.pk)["schemes"]}
    settings.KBPO_SOFT_LABELS = True
    scoring.recompute(world.corpus)
    body = _scores(world.a.pk)
    assert body["crowd"]["soft_labels"] is True
    for s in body["schemes"]:
        for metric in ("precision", "recall", "f1"):
            shift = s["correction"][metric]
            # The stored hard twin is what a hard-label run reports.
            assert shift["hard"] == pytest.approx(hard[s["scheme"]][metric]["joint"]["estimate"])
            assert shift["shift"] == pytest.approx(s[metric]["joint"]["estimate"] - shift["hard"])
    inst = next(s for s in body["schemes"] if s["scheme"] == "instance")
    # Alpha's "born" is doubtful: soft precision falls below the hard 1.0 (only a little:
    # the estimator re-weights Alpha's instances to its own, high, precision as prior).
    assert inst["correction"]["precision"]["hard"] == pytest.approx(1.0)
    assert inst["correction"]["precision"]["shift"] < 0
    html = Client().get(reverse("submission-evaluation", args=[world.a.pk])).content.decode()
    assert 'id="correction"' in html and "From hard labels" in html
    shift = inst["correction"]["precision"]["shift"]
    assert f"{shift:+.3f}" in html


@pytest.mark.django_db
def test_crowd_section_without_answers(world: World) -> None:
    body = _scores(world.a.pk)
    assert body["run"] is None and body["crowd"]["agreement"]["estimate"] is None
    assert body["crowd"]["accuracy"]["answers"] == 0 and body["crowd"]["soft_labels"] is False
    controls = body["crowd"]["controls"]
    assert controls["accuracy"]["estimate"] is None and controls["relation_answers"] == 0
    assert controls["share_of_answers"] is None
    html = Client().get(reverse("submission-evaluation", args=[world.a.pk])).content.decode()
    assert "No crowd answers on labelled pairs yet." in html
    assert "no answers to control questions on this corpus yet" in html


@pytest.mark.django_db
def test_labels_moved_off_the_majority_vote_are_counted(world: World, settings) -> None:
    settings.KBPO_SOFT_LABELS = False
    settings.KBPO_LABEL_AGGREGATION = "lopsided"
    _crowd(world)
    for label in PairLabel.objects.all():  # the vote was the stored label...
        label.majority = label.predicates
        label.save(update_fields=["majority"])
    # ... except "born", which the worker model moved to c's answer.
    PairLabel.objects.filter(pair=world.pairs["born"]).update(
        predicates=["no_relation"], method="lopsided")
    scoring.recompute(world.corpus)
    crowd = _scores(world.a.pk)["crowd"]
    assert crowd["aggregator"] == "lopsided"
    assert crowd["labels"] == 3 and crowd["differs_from_majority"] == 1
    assert crowd["agreement"]["estimate"] == pytest.approx(7 / 9)
    assert crowd["majority_agreement"]["estimate"] == pytest.approx(8 / 9)
    html = Client().get(reverse("submission-evaluation", args=[world.a.pk])).content.decode()
    assert '<span id="differs-from-majority">1 of 3 labelled pairs</span>' in html
    assert "lopsided one-coin" in html and "agreement with the majority vote 89%" in html


@pytest.mark.django_db
def test_parameter_bootstrap_widens_the_soft_label_intervals(world: World, settings) -> None:
    """The correction's own uncertainty: the labelled pairs' soft labels under the
    model refitted on a bootstrap over questions (estimation/correction.py),
    reproducible, and only ever widening."""
    from estimation.core.noise import correction_variance
    from estimation.data import PREDICATE_CODE, load_corpus_data

    _crowd(world)
    settings.KBPO_SOFT_LABELS = True
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 0
    assert load_corpus_data(world.corpus).soft_replicates == []
    scoring.recompute(world.corpus)
    plain = {s["scheme"]: s for s in _scores(world.a.pk)["schemes"]}
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 8
    first = load_corpus_data(world.corpus).soft_replicates
    again = load_corpus_data(world.corpus).soft_replicates
    assert len(first) == 8
    for a, b in zip(first, again, strict=True):  # seeded from the answers
        assert list(a.pairs) == list(b.pairs) and list(a.probs) == list(b.probs)
    labelled = {world.pairs[k].pk for k in TRUTH}
    for rep in first:
        assert set(rep.pairs) <= labelled
        assert set(rep.predicates) <= {-1} | {PREDICATE_CODE[p] for p in TRUTH.values()}
        assert all(0 <= p <= 1 for p in rep.probs)
    # Three questions: the refits' rates differ, and so do the replicates' estimates
    # (recall's variance 4.2e-7 here, 1.4e-5 before a true pair's class leaned on the
    # relations systems predict on it; float noise is ~1e-12, precision's here).
    data = load_corpus_data(world.corpus)
    var = correction_variance(data.population, data.evidence(), first, "instance")
    assert var[("instance", "recall", "joint")].max() > 1e-8
    scoring.recompute(world.corpus)
    wide = {s["scheme"]: s for s in _scores(world.a.pk)["schemes"]}
    for scheme, s in wide.items():
        for metric in ("precision", "recall"):
            iv, old = s[metric]["joint"], plain[scheme][metric]["joint"]
            if old["estimate"] is None:
                continue
            assert iv["estimate"] == pytest.approx(old["estimate"])
            assert iv["lo"] <= old["lo"] + 1e-12 and iv["hi"] >= old["hi"] - 1e-12
    # Recall's interval here is already [0, 1] and precision's instances are near
    # certain under every refit (variance ~1e-12): the widening cannot show on the page.


def _live(world: World, confidence: float = 0.9) -> dict:
    from annotations.quality import accuracy

    return accuracy.crowd_accuracy(world.corpus.pk, confidence).as_dict()


@pytest.mark.django_db
def test_the_run_stores_the_crowd_section_the_page_and_api_show(world: World,
                                                              settings) -> None:
    settings.KBPO_SOFT_LABELS = False
    _crowd(world)
    run = scoring.recompute(world.corpus)
    # No fitted false-yes rates with hard labels: no weak relations.
    assert run.crowd == {**_live(world, run.confidence), "weak_relations": []}
    assert ScoreRun.objects.get(pk=run.pk).crowd == run.crowd  # survives the JSON column
    assert _scores(world.a.pk)["crowd"] == {**run.crowd, "soft_labels": False}
    # Page and API read the run, not the corpus: a figure only the run holds shows.
    moved = {**run.crowd, "labels": 777, "differs_from_majority": 5}
    ScoreRun.objects.filter(pk=run.pk).update(crowd=moved)
    assert _scores(world.a.pk)["crowd"]["labels"] == 777
    html = Client().get(reverse("submission-evaluation", args=[world.a.pk])).content.decode()
    assert '<span id="differs-from-majority">5 of 777 labelled pairs</span>' in html
    # A run from before the stored section: measured live, as before.
    ScoreRun.objects.filter(pk=run.pk).update(crowd=None)
    assert _scores(world.a.pk)["crowd"] == {**_live(world), "soft_labels": False}


@pytest.mark.django_db
def test_the_quality_pass_leads_to_a_current_crowd_section(
        world: World, settings, django_capture_on_commit_callbacks) -> None:
    """The periodic quality pass refits the worker model: whether it moved labels or
    only their posteriors, the report then shows what a live measurement gives."""
    from annotations.crowd.tasks import worker_quality_task

    settings.KBPO_SOFT_LABELS = False
    _crowd(world)
    # Posteriors the pass will refit (the ones _crowd stored are not the model's).
    PairLabel.objects.update(posterior={"no_relation": 0.5})
    scoring.recompute(world.corpus)
    before = _scores(world.a.pk)["crowd"]
    with django_capture_on_commit_callbacks(execute=True):
        worker_quality_task()
    after = _scores(world.a.pk)["crowd"]
    assert after != before
    assert after == {**_live(world), "soft_labels": False, "weak_relations": []}
    html = Client().get(reverse("submission-evaluation", args=[world.a.pk])).content.decode()
    assert f'<span class="score">{100 * after["accuracy"]["estimate"]:.0f}%</span>' in html
    # A pass over the same answers refits the same posteriors: it asks for nothing.
    from estimation.models import ScoringState

    generation = ScoringState.objects.get(corpus=world.corpus).generation
    with django_capture_on_commit_callbacks(execute=True):
        worker_quality_task()
    assert ScoringState.objects.get(corpus=world.corpus).generation == generation


@pytest.mark.django_db
def test_answers_arriving_lead_to_a_current_crowd_section(
        world: World, settings, django_capture_on_commit_callbacks) -> None:
    """Answers completing a question label its pair: the recompute that follows stores
    the crowd section with them."""
    from annotations.crowd import labels

    settings.KBPO_SOFT_LABELS = False
    scoring.recompute(world.corpus)
    assert _scores(world.a.pk)["crowd"]["agreement"]["answers"] == 0
    hit = make_hit(world.corpus, [world.pairs["work"]], submission=world.b)
    q = HitQuestion.objects.get(hit=hit).question
    for name in ("d", "e", "f"):
        worker = CrowdWorker.objects.create(backend=Backend.SIMULATED, external_id=name)
        asg = Assignment.objects.create(hit=hit, worker=worker, external_id=f"as-{name}")
        Response.objects.create(assignment=asg, question=q, worker=worker,
                                choices=["no_relation"] if name == "f" else [TRUTH["work"]])
    with django_capture_on_commit_callbacks(execute=True):
        labels.aggregate([q.pk])
    assert PairLabel.objects.filter(pair=world.pairs["work"], question=q).exists()
    crowd = _scores(world.a.pk)["crowd"]
    assert crowd == {**_live(world), "soft_labels": False, "weak_relations": []}
    assert crowd["agreement"]["answers"] == 3 and crowd["agreement"]["workers"] == 3
    assert crowd["agreement"]["estimate"] == pytest.approx(2 / 3)




def _controls(world: World) -> None:
    """Two controls on pairs under no test, answered by _crowd's workers: a and b are
    right on both; c says no relation to both, wrong on the relation."""
    doc = world.pairs["born"].document
    known = {"org:city_of_headquarters": make_pair(doc, span(doc, "Acme", 1), "ORG",
                                                   span(doc, "London", 1), "GPE"),
             "no_relation": make_pair(doc, span(doc, "Ada Byron", 1), "PER",
                                      span(doc, "Paris"), "GPE")}
    for answer, pair in known.items():
        q = Question.objects.create(corpus=world.corpus, kind=TaskKind.RELATION, pair=pair,
                                    control_answer=[answer], state=QuestionState.COMPLETE)
        for asg in Assignment.objects.filter(hit__corpus=world.corpus):
            name = asg.worker.external_id
            Response.objects.create(assignment=asg, question=q, worker=asg.worker,
                                    choices=["no_relation"] if name == "c" else [answer])


def _page(world: World) -> str:
    page = Client().get(reverse("submission-evaluation", args=[world.a.pk]))
    assert page.status_code == 200
    return page.content.decode()


@pytest.mark.django_db
def test_accuracy_on_control_questions_on_the_page_and_api(world: World, settings) -> None:
    settings.KBPO_SOFT_LABELS = False
    _crowd(world)
    scoring.recompute(world.corpus)
    ctl = _scores(world.a.pk)["crowd"]["controls"]  # no controls yet: measured as none
    assert ctl["accuracy"]["answers"] == 0 and ctl["share_of_answers"] == 0.0
    assert "no answers to control questions on this corpus yet" in _page(world)
    _controls(world)
    run = scoring.recompute(world.corpus)
    ctl = _scores(world.a.pk)["crowd"]["controls"]
    assert ctl == run.crowd["controls"]
    assert ctl["accuracy"]["answers"] == 6 and ctl["accuracy"]["workers"] == 3
    assert ctl["accuracy"]["estimate"] == pytest.approx(5 / 6)
    assert ctl["accuracy"]["lo"] < 5 / 6 < ctl["accuracy"]["hi"]
    assert ctl["on_relation"]["estimate"] == pytest.approx(2 / 3)
    assert ctl["on_no_relation"]["estimate"] == pytest.approx(1.0)
    assert ctl["relation_answers"] == 15 and ctl["share_of_answers"] == pytest.approx(6 / 15)
    # The labelled answers' figures are the controls-free ones.
    assert _scores(world.a.pk)["crowd"]["agreement"]["answers"] == 9
    html = _page(world)
    assert "Accuracy on control questions" in html and '<span class="score">83%</span>' in html
    assert '<span class="score">67%</span>' in html and '<span class="score">100%</span>' in html
    assert "<span id=\"control-share\">40% of the corpus's 15 relation answers</span>" in html
    assert "(3 answers on relations, 3 on no relation)" in html
    # Weighted to the labelled pairs' mix: their posteriors say 85% hold a relation.
    share = sum(POSTERIOR.values()) / 3
    rw = ctl["reweighted"]
    assert rw["relation_share"] == pytest.approx(share) and rw["pairs"] == 3
    assert rw["estimate"] == pytest.approx(share * 2 / 3 + (1 - share) * 1.0)
    assert rw["lo"] < rw["estimate"] < rw["hi"]
    assert ('<div id="control-reweighted"><dt>On the tested pairs\' mix</dt><dd>'
            f'<span class="score">{100 * rw["estimate"]:.0f}%</span>') in html
    assert "85% holding a relation, from the 3 labels\' posteriors" in html


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_a_run_from_before_the_control_figures_says_not_available(world: World,
                                                                  settings) -> None:
    """A run stored without `controls` renders (no 500), says the figure is not
    available, and the API gives null; the next recompute stores it on the same run and
    the stored report body follows."""
    settings.KBPO_SOFT_LABELS = False
    _crowd(world)
    _controls(world)
    run = scoring.recompute(world.corpus)
    old = {k: v for k, v in run.crowd.items() if k != "controls"}
    ScoreRun.objects.filter(pk=run.pk).update(crowd=old)
    html = _page(world)
    assert "Accuracy on control questions: not available for this run" in html
    assert 'id="crowd-accuracy"' in html and "Agreement with the label" in html
    api = Client().get(reverse("api-submission-scores", args=[world.a.pk]))
    assert api.status_code == 200 and api.json()["crowd"]["controls"] is None
    assert "not available for this run" in ReportBody.objects.get(submission=world.a).body
    again = scoring.recompute(world.corpus)  # same scores: the kept run's section moves
    assert again.pk == run.pk and ScoreRun.objects.get(pk=run.pk).crowd == run.crowd
    html = _page(world)
    assert "not available for this run" not in html and '<span class="score">83%</span>' in html
    body = ReportBody.objects.get(submission=world.a).body  # the stored body is the new one
    assert "Accuracy on control questions" in body and "40% of the corpus" in body
    assert _scores(world.a.pk)["crowd"]["controls"]["accuracy"]["answers"] == 6


@pytest.mark.django_db
def test_a_run_from_before_the_reweighted_figure_says_not_available(world: World,
                                                                    settings) -> None:
    settings.KBPO_SOFT_LABELS = False
    _crowd(world)
    _controls(world)
    run = scoring.recompute(world.corpus)
    assert run.crowd["controls"]["reweighted"]["estimate"] is not None
    old = {**run.crowd, "controls": {k: v for k, v in run.crowd["controls"].items()
                                     if k != "reweighted"}}
    ScoreRun.objects.filter(pk=run.pk).update(crowd=old)
    html = _page(world)
    assert ("<dt>On the tested pairs' mix</dt><dd><span class=\"muted\">not available for "
            "this run</span>") in html and 'id="control-reweighted-help"' not in html
    api = Client().get(reverse("api-submission-scores", args=[world.a.pk])).json()
    assert api["crowd"]["controls"]["reweighted"] is None
    assert api["crowd"]["controls"]["accuracy"]["answers"] == 6  # the rest as stored


@pytest.mark.django_db
def test_weak_relations_and_biased_workers_on_the_page_and_api(world: World,
                                                               settings) -> None:
    """The run names the relations the crowd says where they do not hold and the
    workers biased on them (the stored fit's false-yes rates per worker and relation),
    and the page and API show what the run stored."""
    _crowd(world)
    settings.KBPO_SOFT_LABELS = True
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 4
    run = scoring.recompute(world.corpus)
    # Nobody said a relation on a pair holding none: no weak relation.
    assert run.crowd["weak_relations"] == []
    weak = [{"relation": "per:spouse", "false_yes": 0.31,
             "workers": [{"worker": "b", "false_yes": 0.52}]}]
    ScoreRun.objects.filter(pk=run.pk).update(crowd={**run.crowd, "weak_relations": weak})
    assert _scores(world.a.pk)["crowd"]["weak_relations"] == weak
    html = Client().get(reverse("submission-evaluation", args=[world.a.pk])).content.decode()
    assert "<strong>per:spouse</strong> named on 31" in html
    assert "<code>b</code> 52" in html
