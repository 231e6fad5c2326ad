"""Shared constants of the demo-world generator: schemes, predicate codes, ids."""

from __future__ import annotations

from collections.abc import Callable

from kbpo.core import schema

Progress = Callable[[str, int, int], None]

SCHEMES: tuple[str, ...] = ("instance", "predicate", "entity", "entity_relation")
PREDICATES: tuple[str, ...] = tuple(sorted(schema.CANONICAL_PREDICATES))
PRED_CODE: dict[str, int] = {p: i for i, p in enumerate(PREDICATES)}
DOC_PREFIX = "NYT_DEMO_"


