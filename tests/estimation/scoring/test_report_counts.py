"""The report's counts come from database aggregates; they equal a count over every draw."""

from __future__ import annotations

from collections import Counter

import pytest

from annotations.models import (
    Assignment,
    CrowdWorker,
    PairLabel,
    Question,
    QuestionState,
    Response,
    SampleDraw,
)
from estimation import report
from submissions.models import RelationInstance
from tests.estimation.scoring.scoring_world import World, label
from tests.factories import make_hit


def _by_hand(sub) -> tuple[dict, dict, dict]:
    """Progress, per-predicate and verdict counts from a loop over every draw."""
    draws = list(SampleDraw.objects.filter(submission=sub).select_related("instance"))
    labels = {lab.pair_id: lab.predicates for lab in PairLabel.objects.all()}

    def verdict(inst: RelationInstance) -> bool | None:
        lab = labels.get(inst.pair_id)
        return None if lab is None else (inst.predicate in lab and "no_relation" not in lab)

    pairs = {d.instance.pair_id for d in draws}
    needed = received = open_q = 0
    for q in Question.objects.filter(requested_by=sub).exclude(state=QuestionState.CANCELLED):
        got = Response.objects.filter(question=q).count()
        needed += q.answers_needed
        received += min(q.answers_needed, got)
        open_q += q.state == QuestionState.OPEN
    progress = {"drawn_pairs": len(pairs), "labelled_pairs": len(pairs & set(labels)),
                "draws": len(draws), "answers_needed": needed, "answers_received": received,
                "open_questions": open_q}
    per: dict[str, Counter] = {}
    for d in draws:
        c = per.setdefault(d.instance.predicate, Counter())
        v = verdict(d.instance)
        c["draws"] += 1
        c["labelled"] += v is not None
        c["correct"] += bool(v)
    verdicts = Counter()
    for inst in {d.instance for d in draws}:
        v = verdict(inst)
        verdicts["all"] += 1
        verdicts["pending" if v is None else ("correct" if v else "wrong")] += 1
    return progress, per, verdicts


@pytest.mark.django_db
def test_aggregated_counts_equal_a_loop_over_every_draw(world: World) -> None:
    a = world.a
    # Draws are with replacement: the first instance drawn twice more.
    first = RelationInstance.objects.filter(submission=a).order_by("pk").first()
    for i in (10, 11):
        SampleDraw.objects.create(submission=a, scheme="instance", index=i, instance=first)
    label(world.pairs["born"], "per:place_of_birth")  # Alpha right
    label(world.pairs["work"], "no_relation")  # another system's pair
    # Two questions: one over-answered (4 of 3), one with a single answer; one cancelled.
    hit = make_hit(world.corpus, [world.pairs["wed"], world.pairs["work"]], submission=a)
    qs = list(Question.objects.filter(requested_by=a).order_by("pk"))
    workers = [CrowdWorker.objects.create(backend="simulated", external_id=f"sim-{i}")
               for i in range(4)]
    for i, w in enumerate(workers):
        asg = Assignment.objects.create(hit=hit, worker=w, external_id=f"asg-{i}")
        Response.objects.create(assignment=asg, question=qs[0], worker=w, choices=["x"])
        if i == 0:
            Response.objects.create(assignment=asg, question=qs[1], worker=w, choices=["x"])
    Question.objects.create(corpus=world.corpus, pair=world.pairs["born"], requested_by=a,
                            state=QuestionState.CANCELLED)
    progress, per, verdicts = _by_hand(a)
    got = report.progress(a).as_dict()
    assert got.pop("percent") == 50 and got == progress
    assert progress["draws"] == 4 and progress["answers_received"] == 4
    rows = {r.predicate: r for r in report.per_predicate(a)}
    assert {p: (r.draws, r.labelled, r.correct) for p, r in rows.items() if r.draws} == \
        {p: (c["draws"], c["labelled"], c["correct"]) for p, c in per.items()}
    assert rows["per:place_of_birth"].precision == 1.0
    assert report.verdict_counts(a) == {k: verdicts.get(k, 0) for k in report.VERDICTS}
