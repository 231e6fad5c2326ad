"""How many relations one crowd answer may mark for one pair, per relation schema."""

from __future__ import annotations

from django.conf import settings

from kbpo.core.schemas import get_schema


def relation_cap(schema_name: str) -> int:
    """The schema's own cap (DocRED: 3, for pairs that hold three relations), else
    KBPO_MAX_RELATIONS_PER_ANSWER (TAC KBP). The page stops there; the intake refuses more."""
    return (get_schema(schema_name).max_relations_per_answer
            or settings.KBPO_MAX_RELATIONS_PER_ANSWER)
