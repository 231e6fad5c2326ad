"""The compare page's difference carries the noise correction's uncertainty, as the
leaderboard's intervals do: the replicates' variance of A − B (core/difference.py
`with_correction`)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from estimation import scoring
from estimation.core.difference import compare, with_correction
from estimation.core.intervals import rounded_outward
from estimation.core.noise import replicate_estimates
from estimation.core.points import PointPlan
from estimation.data import load_corpus_data, system_name
from tests.estimation.scoring.scoring_world import World
from tests.estimation.scoring.test_report_crowd import _controls, _crowd


@pytest.mark.django_db
def test_the_difference_is_widened_by_the_corrections_replicates(world: World,
                                                                  settings) -> None:
    settings.KBPO_SOFT_LABELS = True
    settings.KBPO_SOFT_LABEL_BOOTSTRAP = 8
    _crowd(world)
    _controls(world)
    _doubter(world)
    estimator = scoring.recompute(world.corpus).estimator  # the board's, the default
    assert estimator == "distinct"
    body = Client().get(reverse("api-compare", args=[world.corpus.tag]),
                        {"a": world.a.pk, "b": world.b.pk}).json()
    data = load_corpus_data(world.corpus)
    assert len(data.soft_replicates) == 8
    pop, ev = data.population, data.evidence()
    a, b = pop.index_of(system_name(world.a.pk)), pop.index_of(system_name(world.b.pk))
    bare = compare(pop, ev, a, b, "instance", "instance", 0.9, estimator=estimator)
    plan = PointPlan(pop, ev, "instance")
    full = with_correction(bare, [replicate_estimates(pop, ev, s, "instance", ["instance"],
                                                      0.9, plan, estimator)
                                  for s in data.soft_replicates])
    moved = 0
    for m, d in full.differences.items():
        got, old = body["difference"][m], bare.differences[m]
        assert (got["lo"], got["hi"]) == rounded_outward(d.lo, d.hi)
        assert d.hi - d.lo >= old.hi - old.lo
        # Four answers per pair: the replicates barely move the figures (recall's
        # difference widens by 2.2e-6), but the printed ends do move.
        moved += (got["lo"], got["hi"]) != rounded_outward(old.lo, old.hi)
    assert moved


def _doubter(world: World) -> None:
    """A fourth worker, right on the controls, who answers none to every test pair. With
    the relations each pair's type offers taken from the schema (issue 38), _crowd's
    three workers alone left the replicates so alike that recall's difference widened
    by 2e-7 (1.2e-6 before), below the printed ends' resolution."""
    from annotations.models import Assignment, Backend, CrowdWorker, Question, Response, TaskKind

    hit = Assignment.objects.filter(hit__corpus=world.corpus).first().hit
    worker = CrowdWorker.objects.create(backend=Backend.SIMULATED, external_id="d")
    asg = Assignment.objects.create(hit=hit, worker=worker, external_id="as-d")
    for q in Question.objects.filter(corpus=world.corpus, kind=TaskKind.RELATION):
        Response.objects.create(assignment=asg, question=q, worker=worker,
                                choices=q.control_answer or ["no_relation"])
