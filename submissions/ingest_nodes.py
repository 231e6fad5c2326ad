"""Entity nodes of a file being ingested, kept in the database rather than in memory.

Pass 1 reads the file in batches of lines: it loads the state of the batch's nodes
(first line, type, FAC/LOC skip, invalid-type flag) from a temporary table, applies
the batch's entity lines in file order, and writes back what changed. Pass 2 loads,
per batch of relation lines, only the nodes those lines name and their mentions in the
documents the lines cite. So the ingestor's memory is bounded by the batch size, not
by the number of entities in the file (`Ingestor` drives this; `ingest_sql` owns the
whole-file checks).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from django.db import connection

from .indexes import Entity
from .kbformat import Report
from .staging import Stager

# One batch holds at most this many lines, or about this many characters of them.
BATCH_LINES = 20_000
BATCH_CHARS = 4 << 20

SEEN_BITS = 1 << 24  # 2 MB: about 6% false "maybe known" at a million nodes
SEEN_MASK = SEEN_BITS - 1

NodeState = tuple[str | None, bool, bool]  # type, skip (FAC/LOC), type_error
Batch = TypeVar("Batch")


def state_of(ent: Entity) -> NodeState:
    return ent.type, ent.skip, ent.type_error


class NodeStore:
    """Reads and writes the per-node state of one ingestion (temporary tables)."""

    def __init__(self, cursor: Any, stager: Stager) -> None:
        self.cursor = cursor
        self.stager = stager
        # One bit per hash bucket, set for every node written to `kbpo_stage_node`: a
        # clear bit proves a node new, so pass 1 only looks up nodes that may be known
        # (most of a batch's are new). Fixed size, whatever the number of nodes.
        self.seen = bytearray(max(SEEN_BITS >> 3, 1))
        self.postgres = stager.postgres
        if self.postgres:  # the planner settings `_by_index` restores
            cursor.execute("SELECT current_setting('enable_hashjoin'), "
                           "current_setting('enable_mergejoin'), "
                           "current_setting('enable_seqscan')")
            self.joins = list(cursor.fetchone())

    def _by_index(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run a per-batch lookup by the batch's keys as index probes. The planner
        otherwise hashes the keys and scans the whole node or mention table for every
        batch, which makes a file's lookups grow with its size squared."""
        if not self.postgres:
            self.cursor.execute(sql, params)
            return self.cursor.fetchall()
        self.cursor.execute("SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off;"
                            " SET LOCAL enable_seqscan = off")
        self.cursor.execute(sql, params)
        rows = self.cursor.fetchall()
        # (After an error the rollback restores them.)
        self.cursor.execute("SELECT set_config('enable_hashjoin', %s, true), "
                            "set_config('enable_mergejoin', %s, true), "
                            "set_config('enable_seqscan', %s, true)", self.joins)
        return rows

    def _nodes(self, nodes: set[str], extra: str = "") -> list[tuple[Any, ...]]:
        """The stored state of `nodes` (those known). On Postgres the nodes go as one
        array parameter: an index probe each, with no table to fill and analyze per
        batch (the keys table and `_by_index` serve the other databases)."""
        cols = "node, line, type, skip" + (f", {extra}" if extra else "")
        if self.postgres:
            return self._by_index(f"SELECT {cols} FROM kbpo_stage_node WHERE node = ANY(%s)",
                                  [list(nodes)])
        self._keys((node, None) for node in nodes)
        return self._by_index(f"""
            SELECT {cols} FROM kbpo_stage_node
            WHERE node IN (SELECT node FROM kbpo_stage_keys)""")

    def _keys(self, rows: Iterable[tuple[str, int | None]]) -> None:
        """Replace the batch's keys: (node, document pk or NULL)."""
        self.stager.clear("kbpo_stage_keys")
        for row in rows:
            self.stager.add("kbpo_stage_keys", row)
        self.stager.flush("kbpo_stage_keys")
        self.stager.analyze("kbpo_stage_keys")

    # -- pass 1 --

    def load(self, nodes: set[str]) -> tuple[dict[str, Entity], dict[str, NodeState]]:
        """The known nodes among `nodes`, and their state as loaded (to spot changes)."""
        seen = self.seen
        nodes = {node for node in nodes
                 if seen[(h := hash(node) & SEEN_MASK) >> 3] & (1 << (h & 7))}
        if not nodes:
            return {}, {}
        ents: dict[str, Entity] = {}
        for node, line, typ, skip, type_error in self._nodes(nodes, "type_error"):
            ent = ents[node] = Entity(line)
            ent.type, ent.skip, ent.type_error = typ, bool(skip), bool(type_error)
        return ents, {node: state_of(ent) for node, ent in ents.items()}

    def save(self, ents: dict[str, Entity], loaded: dict[str, NodeState]) -> None:
        """Write back the nodes that are new or whose state changed: new ones (absent
        from `loaded`, so from the table) are appended as they are, changed ones
        upserted through `kbpo_stage_node_batch`."""
        changed = False
        seen, add = self.seen, self.stager.add
        for node, ent in ents.items():
            state = loaded.get(node)
            if state != state_of(ent):
                h = hash(node) & SEEN_MASK
                seen[h >> 3] |= 1 << (h & 7)
                row = (node, ent.line, ent.type, int(ent.skip), int(ent.type_error))
                if state is None:
                    add("kbpo_stage_node", row)
                else:
                    add("kbpo_stage_node_batch", row)
                    changed = True
        self.stager.flush("kbpo_stage_node")  # the next batch's `load` reads them
        if not changed:
            return
        self.stager.flush("kbpo_stage_node_batch")
        # `WHERE true` lets SQLite parse the upsert of an INSERT ... SELECT.
        self.cursor.execute("""
            INSERT INTO kbpo_stage_node (node, line, type, skip, type_error)
            SELECT node, line, type, skip, type_error FROM kbpo_stage_node_batch WHERE true
            ON CONFLICT (node) DO UPDATE SET type = excluded.type, skip = excluded.skip,
                type_error = excluded.type_error""")
        self.stager.clear("kbpo_stage_node_batch")

    def skipped(self) -> int:
        """How many entities are FAC/LOC (not evaluated)."""
        self.cursor.execute("SELECT COUNT(*) FROM kbpo_stage_node WHERE skip = 1")
        return int(self.cursor.fetchone()[0])

    def untyped(self) -> Iterator[tuple[str, int]]:
        """(node, first line) of entities without any type line, in file order."""
        self.cursor.execute("""
            SELECT node, line FROM kbpo_stage_node
            WHERE type IS NULL AND skip = 0 AND type_error = 0 ORDER BY line""")
        while rows := self.cursor.fetchmany(5000):
            yield from rows

    def stage_entities(self) -> None:
        """Stage the typed, evaluated entities with their first non-empty link and
        canonical span (the first canonical_mention, else the first mention)."""
        self.stager.flush("kbpo_stage_mention")
        self.stager.flush("kbpo_stage_link")
        self.cursor.execute("""
            INSERT INTO kbpo_stage_entity (node, type, link, cdoc, cb, ce, ord)
            SELECT n.node, n.type, COALESCE(l.link, ''), c.doc, c.b, c.e, n.line
            FROM kbpo_stage_node n
            LEFT JOIN (SELECT node, link,
                              ROW_NUMBER() OVER (PARTITION BY node ORDER BY line) AS r
                       FROM kbpo_stage_link) l ON l.node = n.node AND l.r = 1
            LEFT JOIN (SELECT node, doc, b, e, ROW_NUMBER() OVER (
                                  PARTITION BY node ORDER BY canon DESC, first) AS r
                       FROM kbpo_stage_mention WHERE node IS NOT NULL) c
                 ON c.node = n.node AND c.r = 1
            WHERE n.type IS NOT NULL AND n.skip = 0""")
        # Pass 2 looks mentions up by node and document.
        self.cursor.execute(
            "CREATE INDEX kbpo_stage_mention_node ON kbpo_stage_mention (node, doc)")
        for table in ("kbpo_stage_mention", "kbpo_stage_node", "kbpo_stage_entity"):
            self.stager.analyze(table)

    # -- pass 2 --

    def lookup(self, keys: set[tuple[str, int | None]]) -> dict[str, Entity]:
        """The nodes named in `keys` (node, document pk), each with its mentions in
        the documents given for it; unknown nodes are absent."""
        if not keys:
            return {}
        ents: dict[str, Entity] = {}
        for node, line, typ, skip in self._nodes({node for node, _ in keys}):
            ent = ents[node] = Entity(line)
            ent.type, ent.skip = typ, bool(skip)
        if self.postgres:
            pairs = [(node, doc) for node, doc in keys if doc is not None]
            rows = self._by_index("""
                SELECT DISTINCT m.node, m.doc, m.b, m.e FROM kbpo_stage_mention m
                JOIN unnest(%s::text[], %s::bigint[]) k (node, doc)
                     ON k.node = m.node AND k.doc = m.doc""",
                                  [[node for node, _ in pairs], [doc for _, doc in pairs]])
        else:
            self._keys(keys)
            rows = self._by_index("""
                SELECT DISTINCT m.node, m.doc, m.b, m.e FROM kbpo_stage_mention m
                JOIN (SELECT DISTINCT node, doc FROM kbpo_stage_keys) k
                     ON k.node = m.node AND k.doc = m.doc""")
        for node, doc, b, e in rows:
            ents[node].add((doc << 64) | (b << 32) | e)
        return ents


    @contextlib.contextmanager
    def looking_up(self, batches: Iterable[Batch],
                   keys_of: Callable[[Batch], set[tuple[str, int | None]]]
                   ) -> Iterator[Iterator[tuple[Batch, dict[str, Entity]]]]:
        """Each batch with `lookup(keys_of(batch))`. On Postgres the lookup of the next
        batch runs in a helper thread while the caller works on the current one: the
        thread has a cursor of its own on the same connection (so the same transaction
        and temporary tables; the driver runs one statement at a time), and the server
        answers while the caller's Python runs. `keys_of` runs in the caller's thread, never
        during a lookup (whose SET LOCAL planner settings its queries would run under);
        so must every other statement of the caller's (the stager's COPY and the document
        index take `stager.lock`, as the lookup does).

        Leaving the `with` waits for the thread, whether the caller finished or failed,
        so nothing runs on the connection after it (the caller's rollback included). If
        the caller failed and a lookup had failed too, the lookup's error is raised, the
        caller's as its context: a failed statement aborts the transaction, so the
        caller's error is then most likely only "current transaction is aborted"."""
        if not self.postgres:
            yield ((batch, self.lookup(keys_of(batch))) for batch in batches)
            return
        futures: list[Future[dict[str, Entity]]] = []
        with contextlib.closing(connection.connection.cursor()) as cursor, \
                ThreadPoolExecutor(1) as pool:
            ahead = NodeStore(cursor, self.stager)

            def lookup(keys: set[tuple[str, int | None]]) -> dict[str, Entity]:
                with self.stager.lock:  # not while the caller's thread runs a statement
                    return ahead.lookup(keys)

            def pairs() -> Iterator[tuple[Batch, dict[str, Entity]]]:
                pending: tuple[Batch, Future[dict[str, Entity]]] | None = None
                for batch in batches:
                    # keys_of queries too: not while the thread's lookup has its planner
                    # settings (SET LOCAL: the whole transaction's) switched off.
                    with self.stager.lock:
                        keys = keys_of(batch)
                    submitted = (batch, pool.submit(lookup, keys))
                    futures[:] = [submitted[1]] if pending is None else \
                        [pending[1], submitted[1]]
                    if pending is not None:
                        yield pending[0], pending[1].result()
                    pending = submitted
                if pending is not None:
                    yield pending[0], pending[1].result()

            try:
                yield pairs()
            except BaseException:
                pool.shutdown(wait=True)
                failed = next((exc for f in futures if (exc := f.exception()) is not None),
                              None)
                if failed is not None:
                    raise failed  # noqa: B904 (the caller's error stays its __context__)
                raise


def report_untyped(store: NodeStore, report: Report, bad_nodes: set[str]) -> None:
    """ENTITY_WITHOUT_TYPE for every entity with no type line (in file order)."""
    for node, line in store.untyped():
        report.add(line, "ENTITY_WITHOUT_TYPE", f"entity {node} has no type line")
        bad_nodes.add(node)
