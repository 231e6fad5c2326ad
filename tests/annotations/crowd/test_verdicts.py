"""annotations/crowd/verdicts.py: an assignment is approved (paid) or rejected once; a
rejected assignment's answers stop counting."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotations.crowd import verdicts
from annotations.models import Assignment, AssignmentState, Response
from tests.annotations.crowd.helpers import answer
from tests.factories import make_corpus, make_hit, make_pair, span

pytestmark = pytest.mark.django_db


@pytest.fixture
def assignment() -> Assignment:
    from kbpo.core.models import Document

    corpus = make_corpus()
    doc = Document.objects.get(doc_id="D1")
    pair = make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE")
    return answer(make_hit(corpus, [pair]), "w1", lambda q: ["per:place_of_birth"])


def test_approval_pays_once(assignment) -> None:
    assert verdicts.approve_assignment(assignment, "Thank you.") is True
    assignment.refresh_from_db()
    first = (assignment.state, assignment.paid, assignment.reviewed_at)
    assert first[:2] == (AssignmentState.APPROVED, Decimal("0.25"))
    # A retried task: nothing again, and a rejection cannot follow an approval.
    assert verdicts.approve_assignment(assignment, "Thank you.") is False
    assert verdicts.reject_assignment(assignment, "Too late") is False
    assignment.refresh_from_db()
    assert (assignment.state, assignment.paid, assignment.reviewed_at) == first


def test_rejection_has_a_reason_and_stops_the_answers_counting(assignment) -> None:
    with pytest.raises(ValueError, match="reason"):
        verdicts.reject_assignment(assignment, "  ")
    assert verdicts.reject_assignment(assignment, "Random clicking.") is True
    assignment.refresh_from_db()
    assert (assignment.state, assignment.paid, assignment.feedback) == (
        AssignmentState.REJECTED, 0, "Random clicking.")
    assert list(Response.objects.values_list("counted", flat=True)) == [False]  # kept
    assert verdicts.approve_assignment(assignment) is False  # never paid afterwards
