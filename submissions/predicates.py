"""Which relation lines ingestion skips on their predicate alone, before any other check:
sentiment assertions, the lines of nodes that are not evaluated, and TAC slots outside
the reduced schema; and the error for a predicate nobody knows."""

from __future__ import annotations

from collections import Counter

from kbpo.core import schema

from .indexes import Entity
from .kbformat import Report, SyntaxProblem, clip

SKIPPED_NODE_LINES = "lines of skipped nodes (FAC/LOC entities, events)"
SENTIMENT_LINES = "sentiment assertions"


def skip_by_predicate(number: int, cols: list[str], entities: dict[str, Entity],
                      report: Report, skipped: Counter[str]) -> bool:
    """Whether the relation line `cols` is skipped on its predicate (warning and count
    recorded); raises UNKNOWN_PREDICATE for a predicate that is no TAC predicate we know.
    `entities` holds (at least) the line's nodes."""
    pred = cols[1]
    if schema.is_sentiment(pred):
        # First, whatever its arguments (a FAC entity, an event, an undeclared node, a
        # bad column): a sentiment line never makes a file fail.
        report.add(number, "SENTIMENT_NOT_EVALUATED",
                   f"{pred} is a sentiment assertion (TAC 2017 BeSt); sentiment is not "
                   "evaluated, so the line is skipped")
        skipped[SENTIMENT_LINES] += 1
        return True
    known = schema.is_known(pred)
    if not known and any(ent is not None and ent.skip for ent in (
            entities.get(cols[0]), entities.get(cols[2]))):
        # A FAC/LOC entity's or an event's line (a realis mention, an event argument, in
        # either direction), whatever predicate name it uses: not evaluated. (With a
        # schema predicate, the caller skips it once it has its arguments.)
        skipped[SKIPPED_NODE_LINES] += 1
        return True
    if schema.is_unsupported(pred):
        report.add(number, "UNSUPPORTED_PREDICATE",
                   f"predicate {pred} is not part of the evaluated schema")
        skipped["unsupported predicates"] += 1
        return True
    if not known:
        lower = pred.lower()  # "PER:Title": predicate names are lower case
        meant = (f"; predicates are lower case: did you mean {lower}?"
                 if lower != pred and (schema.is_known(lower) or schema.is_unsupported(lower)
                                       or schema.is_sentiment(lower)) else "")
        raise SyntaxProblem("UNKNOWN_PREDICATE", f"unknown predicate {clip(pred)}{meant}")
    return False
