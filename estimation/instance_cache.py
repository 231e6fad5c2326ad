"""The per-submission instance arrays, kept between recomputations.

A recompute needs every active system's relation instances (about a million rows at
100 systems). Those rows never change once a submission is ingested, so they are read
from `RelationInstance` once, packed into an `InstanceCache` row per submission, and
later runs read the packed arrays (one bytea per column) instead — or, in a worker that
already built the population for the same rows, nothing at all (`hot_population`).

A stored row is used only while it is provably current:

- `ingest_key` must equal the id of the submission's latest `ingested` event (every
  ingestion, including a re-ingestion after re-validation, writes one in the same
  transaction as its rows);
- no relation instance of the submission may have an id above the row's `watermark`
  (instances inserted outside ingestion — fixtures, the shell — are caught by this
  check, which reads only the rows added since the oldest watermark).

Anything else reloads that submission's rows from `RelationInstance`. Each stored row
carries a random `token`, rewritten with the arrays; the in-memory population is keyed
by the tokens of the rows it was built from, so a worker never serves a population
another worker has since invalidated. `manage.py recompute_scores --full` drops the
corpus's rows and rebuilds them.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from django.db import connection, transaction
from django.db.models import Max

from kbpo.core.binary import copy_binary
from kbpo.core.models import Corpus
from submissions.models import RelationInstance, State, SubmissionEvent

from .core import Population
from .models import InstanceCache

# Instance ids (ascending), pair ids, predicate codes, subject entity ids.
Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
CHUNK = 100_000
# Populations kept in memory per process (one per corpus and set of systems).
HOT_ENTRIES = 2


@dataclass
class Pending:
    """Rows rebuilt by a read-only load, to be stored by `store` afterwards."""

    corpus_id: int
    watermark: int
    rows: dict[int, tuple[int, int, Arrays]] = field(default_factory=dict)  # sid -> key, token
    advance: list[int] = field(default_factory=list)  # checked rows whose watermark moves on
    active: list[int] | None = None  # every active submission: others' rows are dropped


@dataclass
class Loaded:
    """The arrays of the requested submissions and the tokens identifying them."""

    arrays: dict[int, Arrays] | None  # None: not read (the hot population matched)
    tokens: tuple[tuple[int, int], ...]
    pending: Pending
    reloaded: list[int]


def ingest_keys(ids: list[int]) -> dict[int, int]:
    """Per submission, the id of its latest `ingested` event (0 without one)."""
    rows = (SubmissionEvent.objects.filter(submission_id__in=ids, to_state=State.INGESTED)
            .values("submission_id").annotate(last=Max("id")).order_by())
    out = dict.fromkeys(ids, 0)
    out.update({r["submission_id"]: r["last"] for r in rows})
    return out


def _top_instance_id() -> int:
    return RelationInstance.objects.aggregate(top=Max("id"))["top"] or 0


_DTYPES = ("<i8", "<i8", "<i2", "<i8")


def _pack(arrays: Arrays) -> list[bytes]:
    return [a.astype(t).tobytes() for a, t in zip(arrays, _DTYPES, strict=True)]


def _unpack(*blobs: bytes) -> Arrays:
    return tuple(np.frombuffer(bytes(b), t).astype(np.int64)  # type: ignore[return-value]
                 for b, t in zip(blobs, _DTYPES, strict=True))


def read_instances(ids: list[int], codes: dict[str, int]) -> dict[int, Arrays]:
    """(instance ids, pair ids, predicate codes, subject entity ids) per submission, in
    instance id order.

    Predicates outside `codes` are skipped (they never reach ingestion anyway).
    """
    out: dict[int, Arrays] = {}
    if not ids:
        return out
    if connection.vendor == "postgresql":
        names = list(codes)
        table = copy_binary(
            "SELECT submission_id::bigint, id::bigint, pair_id::bigint, "
            "(array_position(%s::text[], predicate::text) - 1)::bigint, "
            "subject_entity_id::bigint FROM submissions_relationinstance "
            "WHERE submission_id = ANY(%s) AND predicate = ANY(%s) "
            "ORDER BY submission_id, id",
            [names, list(ids), names], 5)
        code_map = np.array([codes[n] for n in names], np.int64)
        table[:, 3] = code_map[table[:, 3]]
        cut = np.searchsorted(table[:, 0], np.asarray(sorted(ids), np.int64), side="left")
        ends = np.append(cut[1:], len(table))
        for sid, a, b in zip(sorted(ids), cut, ends, strict=True):
            part = table[a:b]
            out[sid] = tuple(part[:, k].copy() for k in range(1, 5))  # type: ignore[assignment]
        return out
    rows: dict[int, list[tuple[int, int, int, int]]] = {i: [] for i in ids}
    qs = (RelationInstance.objects.filter(submission_id__in=ids)
          .values_list("submission_id", "id", "pair_id", "predicate", "subject_entity_id")
          .order_by("submission_id", "id"))
    for sub_id, pk, pair_id, predicate, subject in qs.iterator(chunk_size=CHUNK):
        code = codes.get(predicate)
        if code is not None:
            rows[sub_id].append((pk, pair_id, code, subject))
    return {i: tuple(np.asarray(col, np.int64).reshape(-1)  # type: ignore[misc]
                     for col in (zip(*r, strict=True) if r else ([], [], [], [])))
            for i, r in rows.items()}


def load(corpus: Corpus, ids: list[int], codes: dict[str, int],
         want_arrays: Callable[[tuple[tuple[int, int], ...]], bool],
         all_active: bool = False) -> Loaded:
    """Validated instance arrays of submissions `ids` (see the module docstring).

    Reads nothing but the stored rows' keys when `want_arrays(tokens)` says the caller
    already holds a population for exactly these tokens (the hot cache). `all_active`:
    `ids` are all of the corpus's active submissions, so `store` drops the rows of
    withdrawn ones.
    """
    keys = ingest_keys(ids)
    top = _top_instance_id()
    meta = {r[0]: r[1:] for r in InstanceCache.objects.filter(submission_id__in=ids)
            .values_list("submission_id", "ingest_key", "watermark", "token", "pk")}
    stale = {i for i in ids if i not in meta or meta[i][0] != keys[i]}
    behind = [i for i in ids if i not in stale and meta[i][1] < top]
    if behind:
        low = min(meta[i][1] for i in behind)
        touched = set(RelationInstance.objects.filter(id__gt=low, submission_id__in=behind)
                      .values_list("submission_id", flat=True).distinct())
        stale |= {i for i in touched if meta[i][1] < top}
    pending = Pending(corpus.pk, top, active=list(ids) if all_active else None)
    fresh = [i for i in ids if i not in stale]
    # Checked above: nothing new for these, so their watermark moves on.
    pending.advance = [i for i in fresh if meta[i][1] < top]
    reloaded = sorted(stale)
    rebuilt = read_instances(reloaded, codes)
    tokens: dict[int, int] = {i: meta[i][2] for i in fresh}
    for i in reloaded:
        tokens[i] = secrets.randbits(62)
        pending.rows[i] = (keys[i], tokens[i], rebuilt[i])
    token_key = tuple((i, tokens[i]) for i in ids)
    if not want_arrays(token_key):
        return Loaded(None, token_key, pending, reloaded)
    arrays = dict(rebuilt)
    if fresh:
        for sid, *blobs in (InstanceCache.objects.filter(submission_id__in=fresh)
                            .values_list("submission_id", "ids", "pairs", "predicates",
                                         "subjects").iterator(chunk_size=10)):
            arrays[sid] = _unpack(*blobs)
    return Loaded(arrays, token_key, pending, reloaded)


def store(pending: Pending) -> None:
    """Write the rebuilt rows and advance the watermarks (outside read-only loads)."""
    gone = InstanceCache.objects.none()
    if pending.active is not None:
        gone = InstanceCache.objects.filter(corpus_id=pending.corpus_id).exclude(
            submission_id__in=pending.active)
    if not pending.rows and not pending.advance and not gone.exists():
        return
    with transaction.atomic():
        gone.delete()
        if pending.rows:
            InstanceCache.objects.filter(submission_id__in=list(pending.rows)).delete()
            objs = []
            for sid, (key, token, arrays) in pending.rows.items():
                i, p, c, s = _pack(arrays)
                objs.append(InstanceCache(
                    corpus_id=pending.corpus_id, submission_id=sid, ingest_key=key,
                    watermark=pending.watermark, token=token, n_instances=len(arrays[0]),
                    ids=i, pairs=p, predicates=c, subjects=s))
            InstanceCache.objects.bulk_create(objs, batch_size=20)
            del objs
            _shorten_logged_queries()
        if pending.advance:
            # Monotone: a slower run never moves a watermark back.
            InstanceCache.objects.filter(submission_id__in=pending.advance,
                                         watermark__lt=pending.watermark).update(
                watermark=pending.watermark)


# Logged query text kept whole up to this length (see `_shorten_logged_queries`).
LOGGED_SQL_MAX = 100_000


def _shorten_logged_queries() -> None:
    """Under DEBUG, Django keeps the text of the last 9,000 queries until a request
    starts, which never happens in a worker; the packed arrays' INSERTs are tens of MB
    of text (about 50 MB at 1M instances). Their log entries keep a short head."""
    if not connection.queries_logged:
        return
    for entry in connection.queries_log:
        sql = entry.get("sql") or ""
        if len(sql) > LOGGED_SQL_MAX:
            entry["sql"] = f"{sql[:1000]}… ({len(sql):,} characters)"


def clear(corpus: Corpus) -> int:
    """Forget the stored arrays and the in-memory populations of a corpus."""
    with _LOCK:
        for key in [k for k in _HOT if k[0] == corpus.pk]:
            del _HOT[key]
    return InstanceCache.objects.filter(corpus=corpus).delete()[0]


# ---- in-memory populations ----------------------------------------------------------
_LOCK = threading.Lock()
# Per hot population: each submission's (instance ids, pair ids), to place draws.
InstanceIndex = dict[int, tuple[np.ndarray, np.ndarray]]
_HOT: OrderedDict[tuple, tuple[Population, InstanceIndex]] = OrderedDict()


def hot_population(corpus_id: int, tokens: tuple[tuple[int, int], ...]
                   ) -> tuple[Population, InstanceIndex] | None:
    """The population this process built from exactly these stored rows, if any."""
    with _LOCK:
        entry = _HOT.get((corpus_id, tokens))
        if entry is not None:
            _HOT.move_to_end((corpus_id, tokens))
        return entry


def keep_population(corpus_id: int, tokens: tuple[tuple[int, int], ...],
                    pop: Population, index: InstanceIndex) -> None:
    with _LOCK:
        for key in [k for k in _HOT if k[0] == corpus_id]:
            del _HOT[key]  # one population per corpus: the older one is stale
        _HOT[(corpus_id, tokens)] = (pop, index)
        while len(_HOT) > HOT_ENTRIES:
            _HOT.popitem(last=False)
