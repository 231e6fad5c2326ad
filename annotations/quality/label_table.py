"""Every pair label of a corpus as arrays, kept by this process and refreshed by reading
only the rows written since it last read them.

A database trigger stamps each PairLabel row with the transaction that last inserted or
updated it (`changed_xid`, migration annotations 0011), whatever path wrote it: the ORM,
bulk_update, COPY, the admin, raw SQL. A read first notes its snapshot's horizon, the
oldest transaction still running when the snapshot was taken (`pg_snapshot_xmin`): every
transaction below it had ended, so its rows are in this read or never will be. The next
read takes the rows stamped at or above the horizon, which also brings in a transaction
that was running during the last read and committed after it. A kept label that is gone
— deleted, or moved off the corpus by a write (stamped: it would be read were it still
the corpus's) — is found by `kept_rows_gone` (which looks for deleted rows only when a
trigger's count of deletions moved): then everything is read again, as it is on a
database without the triggers (SQLite). A label's pair's document never changes corpus.

Scoring reads the labels four ways per run (hard labels, soft labels, the correction's
replicates, the crowd section); all of them now come from one table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from django.db import connection
from django.db.backends.utils import CursorWrapper

from annotations.models import PairLabel
from kbpo.core.binary import copy_binary
from kbpo.core.kept import Kept
from kbpo.core.models import Document
from submissions.models import MentionPair

# Corpora whose labels this process keeps (a worker serves one or two).
_TABLES: Kept[int, LabelTable] = Kept(2)

_SELECT = (
    "SELECT l.id, l.pair_id, coalesce(l.question_id, -1), l.predicates::text, "
    "l.majority::text, l.posterior::text, l.prior::text, l.type_prior::text "
    'FROM "{label}" l JOIN "{pair}" p ON p.id = l.pair_id '
    'JOIN "{document}" d ON d.id = p.document_id WHERE d.corpus_id = %s')
_SINCE = " AND (l.changed_xid IS NULL OR l.changed_xid >= %s)"


def _sql(template: str) -> str:
    return template.format(label=PairLabel._meta.db_table, pair=MentionPair._meta.db_table,
                           document=Document._meta.db_table)


def horizon_and_deletions(cursor: CursorWrapper, table: str) -> tuple[int, int]:
    """`snapshot_horizon`, and in the same snapshot the number of statements that have
    deleted rows of ``table`` (kept by a trigger, migration annotations 0013): read
    before the rows, a deletion committed after it moves the number seen next time."""
    cursor.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, "
                   "coalesce((SELECT deletions FROM kbpo_deletions WHERE table_name = %s), 0)",
                   [table])
    horizon, deletions = cursor.fetchone()
    return int(horizon), int(deletions)


def snapshot_horizon(cursor: CursorWrapper) -> int:
    """The oldest transaction still running when the cursor's snapshot was taken: rows
    stamped (`changed_xid`) below it were written by transactions that had ended."""
    cursor.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
    return int(cursor.fetchone()[0])


def json_many(texts: Sequence[str]) -> list:
    """Each JSON text decoded, by one parse of their array: the same values as a
    `json.loads` per text, without its per-call overhead (~half the time on 45k)."""
    return json.loads("[" + ",".join(texts) + "]") if len(texts) else []


@dataclass(frozen=True)
class LabelTable:
    """A corpus's labels, one entry per label in label-id order, and their posteriors,
    one row per (label, answer name) in label-id order and each posterior's own order.

    Texts (the stored JSON of `predicates` and `majority`) and answer names are numbered
    in ``texts`` and ``names``: a crowd gives few distinct ones.
    """

    ids: np.ndarray        # PairLabel ids, ascending
    pairs: np.ndarray      # its mention pair
    questions: np.ndarray  # its question (-1: none)
    predicates: np.ndarray  # index into texts
    majority: np.ndarray   # index into texts
    texts: tuple[str, ...]
    soft_ids: np.ndarray   # per posterior row: its label's id
    soft_names: np.ndarray  # index into names
    soft_probs: np.ndarray  # P as stored
    soft_priors: np.ndarray  # the crowd-wide share stored beside it (0.5 where none)
    soft_type_priors: np.ndarray  # the pair type's share stored beside it (NaN where none)
    names: tuple[str, ...]
    horizon: int = -1      # rows stamped at or above it are read again (-1: no trigger)
    deletions: int = -1    # `horizon_and_deletions`'s count when read

    def __len__(self) -> int:
        return len(self.ids)

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Each label id's position in ``ids`` (every id must be in the table)."""
        return np.searchsorted(self.ids, ids)


def _build(rows: list[tuple], texts: dict[str, int], names: dict[str, int]) -> LabelTable:
    """The table of ``rows`` (id, pair, question, predicates, majority, posterior, prior,
    type prior as text), numbering texts and names on from ``texts`` and ``names``."""
    n = len(rows)
    ids = np.fromiter((r[0] for r in rows), np.int64, n)
    pairs = np.fromiter((r[1] for r in rows), np.int64, n)
    questions = np.fromiter((r[2] for r in rows), np.int64, n)
    preds = np.fromiter((texts.setdefault(r[3], len(texts)) for r in rows), np.int64, n)
    votes = np.fromiter((texts.setdefault(r[4], len(texts)) for r in rows), np.int64, n)
    posteriors = json_many([r[5] for r in rows])
    shares: dict[str, dict] = {}  # the priors: few distinct texts (one crowd-wide, per type)
    s_ids, s_names, s_probs, s_priors, s_types = [], [], [], [], []
    for (label_id, _, _, _, _, _, prior_text, type_text), post in zip(rows, posteriors,
                                                                      strict=True):
        if not post:
            continue
        prior = shares.get(prior_text)
        if prior is None:
            prior = shares[prior_text] = json.loads(prior_text)
        own = shares.get(type_text)
        if own is None:
            own = shares[type_text] = json.loads(type_text)
        for name, p in post.items():
            s_ids.append(label_id)
            s_names.append(names.setdefault(name, len(names)))
            s_probs.append(float(p))
            s_priors.append(float(prior.get(name, 0.5)))
            s_types.append(float(own.get(name, np.nan)))
    order = np.argsort(ids, kind="stable")
    soft_ids = np.asarray(s_ids, np.int64)
    s_order = np.argsort(soft_ids, kind="stable")  # label-id order, each posterior's kept
    return LabelTable(ids[order], pairs[order], questions[order], preds[order], votes[order],
                      tuple(texts), soft_ids[s_order],
                      np.asarray(s_names, np.int64)[s_order],
                      np.asarray(s_probs, float)[s_order], np.asarray(s_priors, float)[s_order],
                      np.asarray(s_types, float)[s_order], tuple(names))


def _merge(old: LabelTable, new: LabelTable) -> LabelTable:
    """``old`` with the labels of ``new`` added or replacing those of the same id."""
    if not len(new):
        return old
    keep = ~np.isin(old.ids, new.ids)
    soft_keep = ~np.isin(old.soft_ids, new.ids)

    def joined(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.concatenate([a[mask], b])

    ids = joined(old.ids, new.ids, keep)
    order = np.argsort(ids, kind="stable")
    soft_ids = joined(old.soft_ids, new.soft_ids, soft_keep)
    s_order = np.argsort(soft_ids, kind="stable")
    return LabelTable(
        ids[order], joined(old.pairs, new.pairs, keep)[order],
        joined(old.questions, new.questions, keep)[order],
        joined(old.predicates, new.predicates, keep)[order],
        joined(old.majority, new.majority, keep)[order], new.texts, soft_ids[s_order],
        joined(old.soft_names, new.soft_names, soft_keep)[s_order],
        joined(old.soft_probs, new.soft_probs, soft_keep)[s_order],
        joined(old.soft_priors, new.soft_priors, soft_keep)[s_order],
        joined(old.soft_type_priors, new.soft_type_priors, soft_keep)[s_order], new.names)


def kept_rows_gone(table: str, kept: np.ndarray, read: np.ndarray, horizon: int,
                   deleted: bool = True) -> bool:
    """Whether a row of ``table`` kept for a corpus (``kept``: ids, ascending) and not
    among those read again for it (``read``: its rows written at or above ``horizon``)
    is gone: written since the horizon (then it would have been read, were it still the
    corpus's: the ids written since, by changed_xid's index), or, if rows of the table
    may have been deleted since it was read (``deleted``: `horizon_and_deletions`
    moved), deleted (the ids in the kept ids' range, by the primary key). Either
    instead of counting the corpus's rows through a join."""
    rest = kept[~np.isin(kept, read)]
    if not len(rest):
        return False
    if deleted:
        present = copy_binary(f'SELECT id FROM "{table}" WHERE id BETWEEN %s AND %s '
                              "ORDER BY id", [int(rest[0]), int(rest[-1])], 1)[:, 0]
        at = np.minimum(np.searchsorted(present, rest), max(len(present) - 1, 0))
        if not len(present) or (present[at] != rest).any():
            return True
    written = copy_binary(f'SELECT id FROM "{table}" WHERE changed_xid >= %s '
                          "OR changed_xid IS NULL", [horizon], 1)[:, 0]
    return bool(np.isin(rest, written).any())


def forget(corpus_id: int | None = None) -> None:
    """Drop the labels kept for a corpus (None: every corpus)."""
    _TABLES.forget(corpus_id)


def label_table(corpus_id: int) -> LabelTable:
    """The corpus's labels as the current snapshot has them. Rows read before by this
    process are not read again unless written since (see the module's docstring)."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_sql(_SELECT).replace("::text", ""), [corpus_id])
            rows = [r[:3] + tuple(v if isinstance(v, str) else json.dumps(v) for v in r[3:])
                    for r in cursor.fetchall()]
        return _build(rows, {}, {})
    kept = _TABLES.kept(corpus_id)
    with connection.cursor() as cursor:
        # First: a later read sees all they promise.
        horizon, deletions = horizon_and_deletions(cursor, PairLabel._meta.db_table)
        table = None
        if kept is not None:
            cursor.execute(_sql(_SELECT) + _SINCE, [corpus_id, kept.horizon])
            # Texts and names keep their numbers; new ones are numbered on.
            since = _build(cursor.fetchall(), {t: i for i, t in enumerate(kept.texts)},
                           {n: i for i, n in enumerate(kept.names)})
            table = _merge(kept, since)
            if kept_rows_gone(PairLabel._meta.db_table, kept.ids, since.ids, kept.horizon,
                              deletions != kept.deletions):
                table = None  # a label was deleted or left the corpus: read them all
        if table is None:
            cursor.execute(_sql(_SELECT), [corpus_id])
            table = _build(cursor.fetchall(), {}, {})
    table = replace(table, horizon=horizon, deletions=deletions)
    _TABLES.keep(corpus_id, table)
    return table
