"""Which controls a batch gets: the pair types its test questions ask about, more of
them where the crowd's control answers leave a usual relation's false-yes rate least
sure, and a weighted draw that gives each control its weight's share."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from django.test import override_settings

from annotations.crowd import controls
from annotations.crowd.controls import Control
from annotations.models import ExhaustiveDocument, ExhaustiveStage, Hit, Question
from estimation import planning
from kbpo.core.schemas import TAC_KBP, get_schema
from tests.annotations.crowd.helpers import small_world, system

TAC = get_schema(TAC_KBP)
PO, PP = ("PER", "ORG"), ("PER", "PER")
SPOUSE, EMPLOYEE = "per:spouse", "per:employee_or_member_of"


def _answers(types, relation, said, n):
    """n control answers on none pairs of these types, ``said`` of them naming relation."""
    return [(["no_relation"], [relation] if k < said else ["no_relation"], types)
            for k in range(n)]


def test_a_relation_said_on_false_pairs_is_less_sure_until_measured_often():
    prior = controls.false_yes_spread([], TAC)[SPOUSE]
    p = controls.PRIOR_RATE
    assert prior == pytest.approx(math.sqrt(p * (1 - p) / (controls.PRIOR_ANSWERS + 1)))
    biased = controls.false_yes_spread(_answers(PP, SPOUSE, 12, 30), TAC)
    honest = controls.false_yes_spread(_answers(PP, SPOUSE, 0, 30), TAC)
    assert biased[SPOUSE] > prior > honest[SPOUSE]
    # Only the pairs whose types usually take the relation measure it.
    assert controls.false_yes_spread(_answers(PO, SPOUSE, 12, 30), TAC)[SPOUSE] == prior
    # A known answer holding the relation is no exposure to a false yes.
    true_pairs = [([SPOUSE], [SPOUSE], PP)] * 30
    assert controls.false_yes_spread(true_pairs, TAC)[SPOUSE] == prior
    # More measurement, surer: the same rate over 10× the answers.
    many = controls.false_yes_spread(_answers(PP, SPOUSE, 120, 300), TAC)
    assert many[SPOUSE] < biased[SPOUSE] / 2.5


def test_controls_follow_the_batchs_types_and_the_crowds_weak_spots():
    pool = [PO] * 50 + [PP] * 50
    spread = controls.false_yes_spread([], TAC)
    # Asked only about PER–ORG pairs: their types get the demand's share, PER–PER the
    # pool's floor.
    w = controls.type_weights(pool, {PO: 20}, spread, TAC)
    share = {t: sum(x for x, u in zip(w, pool, strict=True) if u == t) for t in (PO, PP)}
    assert sum(w) == pytest.approx(1.0)
    assert share[PP] == pytest.approx(controls.POOL_SHARE / 2)
    # Asked about both alike, the controls so far showing spouse said on 40% of false
    # PER–PER pairs and PER–ORG's relations never said: PER–PER gets more, in
    # proportion to the two types' least sure relations' spread.
    weak = controls.false_yes_spread(_answers(PP, SPOUSE, 12, 30)
                                     + _answers(PO, EMPLOYEE, 0, 30), TAC)
    w = controls.type_weights(pool, {PO: 10, PP: 10}, weak, TAC)
    share = {t: sum(x for x, u in zip(w, pool, strict=True) if u == t) for t in (PO, PP)}
    ratio = weak[SPOUSE] / max(weak[r.id] for r in TAC.candidates(*PO))
    want = controls.POOL_SHARE / 2 + (1 - controls.POOL_SHARE) * ratio / (1 + ratio)
    assert share[PP] == pytest.approx(want)
    assert share[PP] > 0.75
    # A batch whose types the pool lacks: the pool's own mix.
    w = controls.type_weights(pool, {("ORG", "GPE"): 5}, spread, TAC)
    assert w == pytest.approx([0.01] * 100)


def test_the_weighted_order_draws_each_control_at_its_weights_share():
    """First draw of 3 controls weighted 6:3:1, 6,000 orders (seed 9): each share within
    4 binomial standard errors."""
    pool = [Control(k, ["no_relation"], PO) for k in range(3)]
    weights = [0.6, 0.3, 0.1]
    rng = random.Random(9)
    trials = 6000
    first = Counter(controls.ordered(pool, weights, rng)[-1].pair_id for _ in range(trials))
    for k, p in enumerate(weights):
        se = math.sqrt(p * (1 - p) / trials)
        assert abs(first[k] / trials - p) < 4 * se
    # Without replacement: every control once.
    assert sorted(c.pair_id for c in controls.ordered(pool, weights, rng)) == [0, 1, 2]


@pytest.mark.django_db
@override_settings(KBPO_CROWD_BACKEND="simulated", KBPO_QUESTIONS_PER_HIT=1,
                   KBPO_CONTROL_SHARE=0.5)
def test_posting_places_the_batchs_weighted_controls(django_capture_on_commit_callbacks):
    """A submission's batch takes its controls from the top of `batch_pool`'s order for
    its own test pairs (seeded by the batch), and that order weights the types asked."""
    corpus, pairs = small_world()
    doc = pairs["born"].document
    ExhaustiveDocument.objects.create(corpus=corpus, document=doc, stage=ExhaustiveStage.SEED,
                                      state=ExhaustiveDocument.State.COMPLETE)
    tested = ["born", "wed", "work"]
    sub = system(corpus, pairs, tested)
    with django_capture_on_commit_callbacks(execute=True):
        planning.plan_submission(sub.pk)
    hits = Hit.objects.filter(submission=sub)
    placed = set(Question.objects.filter(control_answer__isnull=False, hits__submission=sub)
                 .values_list("pair_id", flat=True))
    assert len(placed) == hits.count() == 3  # one control beside each test question
    order = controls.batch_pool(corpus.pk, [pairs[k].pk for k in tested],
                                random.Random(hits.first().batch_id))
    assert placed == {c.pair_id for c in order[-3:]}
    # The pool's one type nobody asked about (ORG–GPE) has the floor's weight only.
    pool = controls.controls_of(corpus.pk)
    weights = controls.type_weights(
        [c.types for c in pool], Counter((pairs[k].subject_type, pairs[k].object_type)
                                         for k in tested),
        controls.false_yes_spread([], get_schema(corpus.schema)), get_schema(corpus.schema))
    by_type = dict(zip((c.types for c in pool), weights, strict=True))
    assert by_type[("ORG", "GPE")] == pytest.approx(controls.POOL_SHARE / len(pool))
