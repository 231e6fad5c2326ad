"""Shared builders for the crowd-pipeline tests (imported by module name)."""

from __future__ import annotations

import random

from annotations.crowd import controls
from annotations.interfaces.intake import AnswerIn, submit_assignment, worker_for
from annotations.models import Hit, Question
from estimation import planning
from kbpo.core.models import Corpus, Document
from submissions.models import MentionPair, State, Submission
from tests.factories import make_corpus, make_pair, make_submission, span

TEXT = ("Ada Byron was born in London. Ada Byron married Tom King in Paris. "
        "Tom King works for Acme. Acme is based in London. Mary Lane was born in Rome. "
        "Mary Lane works for Acme. Bob Stone works for Zeta. Zeta is based in Paris.")


def small_world(tag: str = "c") -> tuple[Corpus, dict[str, object]]:
    corpus = make_corpus(tag, {f"{tag}-D1": TEXT})
    doc = Document.objects.get(doc_id=f"{tag}-D1")
    pairs = {
        "born": make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE"),
        "wed": make_pair(doc, span(doc, "Ada Byron", 1), "PER", span(doc, "Tom King"), "PER"),
        "work": make_pair(doc, span(doc, "Tom King", 1), "PER", span(doc, "Acme"), "ORG"),
        "hq": make_pair(doc, span(doc, "Acme", 1), "ORG", span(doc, "London", 1), "GPE"),
        "mborn": make_pair(doc, span(doc, "Mary Lane"), "PER", span(doc, "Rome"), "GPE"),
        "mwork": make_pair(doc, span(doc, "Mary Lane", 1), "PER", span(doc, "Acme", 2), "ORG"),
        "bwork": make_pair(doc, span(doc, "Bob Stone"), "PER", span(doc, "Zeta"), "ORG"),
    }
    return corpus, pairs


PREDICATE = {"born": "per:place_of_birth", "wed": "per:spouse",
             "work": "per:employee_or_member_of", "hq": "org:place_of_headquarters",
             "mborn": "per:place_of_birth", "mwork": "per:employee_or_member_of",
             "bwork": "per:employee_or_member_of"}


def system(corpus: Corpus, pairs: dict, names: list[str], name: str = "sys",
           state: str = State.INGESTED) -> Submission:
    return make_submission(corpus, [(pairs[n], PREDICATE[n]) for n in names], name=name,
                           state=state)


def planned_hit(capture) -> tuple[Submission, Hit]:
    """The review and rejection tests' world: a system asking about the born, wed and work
    pairs, planned into one HIT (with KBPO_QUESTIONS_PER_HIT = 3). `capture` is the
    django_capture_on_commit_callbacks fixture: the HIT is posted on commit."""
    corpus, pairs = small_world()
    sub = system(corpus, pairs, ["born", "wed", "work"])
    with capture(execute=True):
        planning.plan_submission(sub.pk)
    return sub, Hit.objects.get(submission=sub)


# Answers to `planned_hit`'s questions by the object type (one pair of each): the true
# ones, and a spammer's that differ from the truth on every pair.
TRUTH = {"GPE": ["per:place_of_birth"], "PER": ["per:spouse"],
         "ORG": ["per:employee_or_member_of"]}
WRONG = {"GPE": ["per:place_of_death"], "PER": ["per:siblings"], "ORG": ["no_relation"]}


def answer(hit: Hit, worker: str, choose, assignment_id: str | None = None,
           backend: str = "simulated"):
    """Submit one assignment: `choose(question) -> list of choices`."""
    items = list(hit.items.select_related("question__pair").order_by("position"))
    answers = [AnswerIn(i.question_id, tuple(sorted(choose(i.question)))) for i in items]
    return submit_assignment(hit=hit, worker=worker_for(backend, worker),
                             assignment_id=assignment_id or f"{hit.pk}-{worker}",
                             answers=answers)


def add_control(hit: Hit, subject: str = "Mary Lane", obj: str = "Rome",
                known: str = "per:place_of_birth") -> Question:
    """Mix one control question (a pair of `small_world` no system asked about, with
    its known answer) into a HIT, as the planner does."""
    pair = next(p for p in MentionPair.objects.filter(document__corpus_id=hit.corpus_id)
                .select_related("document")
                if p.document.text[p.subject_begin:p.subject_end] == subject
                and p.document.text[p.object_begin:p.object_end] == obj)
    controls.add_controls(hit, [(pair.pk, [known])], random.Random(0))
    return Question.objects.get(pair=pair, control_answer__isnull=False)
