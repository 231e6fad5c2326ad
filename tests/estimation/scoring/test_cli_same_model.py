"""The CLI's crowd answers and the service's noise correction fit one model: on the same
answers (a yes-biased worker among them), `python -m estimation estimate`'s soft labels
under the parameters' bootstrap are the service's (estimation/crowd_model.py)."""

from __future__ import annotations

import numpy as np
import pytest

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
from estimation import correction
from estimation.core.noise import SoftLabels
from estimation.core.problem import load_problem
from estimation.crowd_answers import crowd_soft_labels
from estimation.data import PREDICATE_CODE, PREDICATES
from kbpo.core.schema import predicates_for
from tests.estimation.scoring.scoring_world import World
from tests.factories import make_hit, make_pair, span

BORN, WED, WORK = "per:place_of_birth", "per:spouse", "per:employee_or_member_of"
HQ, NONE = "org:city_of_headquarters", "no_relation"
# Per question, each worker's answer (a, b, c, d): c misses relations, d names
# place_of_birth where the pair holds none (the last control).
ANSWERS = {"born": [BORN, BORN, NONE, BORN], "wed": [WED, WED, WED, WED],
           "work": [WORK, WORK, NONE, WORK]}
CONTROLS = {"hq": (HQ, [HQ, HQ, NONE, HQ]), "paris": (NONE, [NONE, NONE, NONE, BORN])}
TRUTH = {"born": BORN, "wed": WED, "work": WORK}


def _crowd(world: World) -> dict[str, tuple[str, str]]:
    """The answers in the database, question by question (the order the service reads
    them in, as the CLI's problem lists them); each question's pair types."""
    doc = world.pairs["born"].document
    pairs = {**world.pairs,
             "hq": make_pair(doc, span(doc, "Acme", 1), "ORG", span(doc, "London", 1), "GPE"),
             "paris": make_pair(doc, span(doc, "Ada Byron", 1), "PER", span(doc, "Paris"),
                                "GPE")}
    hit = make_hit(world.corpus, [pairs[k] for k in ANSWERS])
    questions = {list(ANSWERS)[hq.position]: hq.question
                 for hq in HitQuestion.objects.filter(hit=hit)}
    for key, (truth, _) in CONTROLS.items():
        questions[key] = Question.objects.create(
            corpus=world.corpus, kind=TaskKind.RELATION, pair=pairs[key],
            control_answer=[truth], state=QuestionState.COMPLETE)
    asg = {}
    for name in "abcd":
        worker = CrowdWorker.objects.create(backend=Backend.SIMULATED, external_id=name)
        asg[name] = Assignment.objects.create(hit=hit, worker=worker, external_id=f"as-{name}")
    said = {**ANSWERS, **{k: v for k, (_, v) in CONTROLS.items()}}
    for key, answers in said.items():
        for name, choice in zip("abcd", answers, strict=True):
            Response.objects.create(assignment=asg[name], question=questions[key],
                                    worker=asg[name].worker, choices=[choice])
    for key, truth in TRUTH.items():
        PairLabel.objects.create(pair=pairs[key], question=questions[key], predicates=[truth],
                                 support=0.75, n_answers=4)
    return {k: (p.subject_type, p.object_type) for k, p in pairs.items()}


def _problem(types: dict[str, tuple[str, str]]) -> dict:
    kind = {k: f"{s}|{o}" for k, (s, o) in types.items()}
    return {
        "systems": [{"name": "A", "instances": [["born", BORN], ["wed", WED]]},
                    {"name": "B", "instances": [["born", "per:place_of_death"],
                                                ["work", WORK]]}],
        "draws": {"A": ["born", "wed"], "B": ["born", "work"]},
        "exhaustive": [[k, p] for k, p in TRUTH.items()],
        "answers": {k: [[w, a] for w, a in zip("abcd", v, strict=True)]
                    for k, v in ANSWERS.items()},
        "controls": [{"answers": [[w, a] for w, a in zip("abcd", v, strict=True)],
                      "truth": t, "pair_type": kind[k]} for k, (t, v) in CONTROLS.items()],
        "pair_types": {k: kind[k] for k in ANSWERS},
        "offered": {kind[k]: predicates_for(*types[k]) for k in kind},
    }


def _rows(soft: SoftLabels, pair: dict[int, str], name: dict[int, str]
          ) -> dict[tuple[str, str], float]:
    return {(pair[int(p)], name[int(c)]): float(x)
            for p, c, x in zip(soft.pairs, soft.predicates, soft.probs, strict=True)}


@pytest.mark.django_db
def test_the_cli_gives_the_services_soft_labels_on_the_same_answers(world: World) -> None:
    types = _crowd(world)
    service, _ = correction.soft_label_replicates(world.corpus, 4, PREDICATE_CODE)
    problem = load_problem(_problem(types))
    _, cli, model = crowd_soft_labels(problem, replicates=4)
    assert model.fit.params.offered is not None  # the false-yes model, per pair type
    by_pk = {p.pk: k for k, p in world.pairs.items()}
    names = {**{i: p for i, p in enumerate(PREDICATES)}, -1: NONE}
    crowd = problem.crowd
    cli_pairs = dict(zip(crowd.pairs.tolist(), ANSWERS, strict=True))
    cli_names = {**dict(enumerate(crowd.names)), -1: NONE}
    assert len(service) == len(cli) == 4
    spread = []
    for s, c in zip(service, cli, strict=True):
        a, b = _rows(s, by_pk, names), _rows(c, cli_pairs, cli_names)
        # The service leaves out relations its estimators do not know (here the
        # control's org:city_of_headquarters); the CLI knows every relation named.
        b = {k: x for k, x in b.items() if k[1] in PREDICATE_CODE or k[1] == NONE}
        assert a.keys() == b.keys()
        for k in a:
            assert a[k] == pytest.approx(b[k], abs=1e-9), k
        spread.append(a[("born", BORN)])
    # The replicates differ (the comparison is not of constants).
    assert np.ptp(spread) > 1e-4
