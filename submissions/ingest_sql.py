"""The SQL half of ingestion: whole-file checks on the staging tables, writing the
rows of an accepted file, and its statistics. `ingest.Ingestor` drives it."""

from __future__ import annotations

import itertools
from typing import Any

from django.db import connection

from kbpo.core import schema

from .kbformat import Report


def _conflicting_pairs() -> frozenset[tuple[str, str]]:
    """Canonical predicate combinations that cannot both hold for one mention pair.

    1. Both directions of an asymmetric relation between arguments of the same type
       (A parent of B and B parent of A: canonically `per:parents` + `per:children`;
       likewise subsidiaries/parents, member_of/members, holds_shares_in/shareholders,
       organizations_founded/founded_by between organisations).
    2. Two different family relations between the same two people (parent, child,
       spouse, sibling, other family are mutually exclusive).
    """
    pairs: set[tuple[str, str]] = set()
    for (stype, otype), preds in schema.CANONICAL.items():
        if stype != otype:
            continue
        for pred in preds:
            inv = schema.inverse(pred, stype, otype)
            if inv and inv != pred and inv in preds:
                pairs.add(tuple(sorted((pred, inv))))  # type: ignore[arg-type]
    family = sorted(schema.CANONICAL[(schema.PER, schema.PER)])
    pairs.update(itertools.combinations(family, 2))
    return frozenset(pairs)


CONFLICTS = _conflicting_pairs()


def check_types(cursor: Any, report: Report, names: dict[int, str]) -> None:
    """A span used with two types (in two entities, or as an entity and a filler)."""
    cursor.execute("""
        SELECT m.doc, m.b, m.e, MAX(m.line)
        FROM kbpo_stage_mention m LEFT JOIN kbpo_stage_entity e ON e.node = m.node
        GROUP BY m.doc, m.b, m.e
        HAVING COUNT(DISTINCT COALESCE(e.type, m.type)) > 1
        ORDER BY 4""")
    for doc, b, e, line in cursor.fetchall():
        report.add(line, "INCONSISTENT_ENTITY_TYPE",
                   f"span {names.get(doc, doc)}:{b}-{e - 1} is used with different "
                   "types (in different entities or as a string filler)")


def check_conflicts(cursor: Any, report: Report) -> None:
    """Two relations on one mention pair that cannot both hold (kbpo_stage_conflict)."""
    cursor.execute("""
        SELECT a.line, b.line, a.predicate, b.predicate
        FROM kbpo_stage_relation a
        JOIN kbpo_stage_relation b ON a.doc = b.doc AND a.sb = b.sb AND a.se = b.se
             AND a.ob = b.ob AND a.oe = b.oe AND a.predicate < b.predicate
        JOIN kbpo_stage_conflict c ON c.p1 = a.predicate AND c.p2 = b.predicate
        ORDER BY 1, 2""")
    for la, lb, pa, pb in cursor.fetchall():
        first, second = sorted((la, lb))
        report.add(second, "CONFLICTING_RELATIONS",
                   f"{pa if first == la else pb} (line {first}) and "
                   f"{pb if first == la else pa} (line {second}) cannot both hold "
                   "for the same pair of mentions (after folding to canonical "
                   "direction)")


def insert_rows(cursor: Any, sid: int) -> tuple[int, int, int]:
    """Write the staged rows as submission `sid`'s entities, mentions and instances."""
    if connection.vendor == "postgresql":
        # The database does not check the mentions' and entities' document keys row by
        # row (migration 0004): lock the documents they cite as those checks would, so
        # none can be deleted before this transaction ends. The ids come from the
        # corpus (`DocumentIndex`), whose documents the submission keeps (PROTECT).
        cursor.execute("""
            SELECT COUNT(*) FROM (
                SELECT 1 FROM kbpo_document WHERE id IN (
                    SELECT doc FROM kbpo_stage_mention
                    UNION SELECT cdoc FROM kbpo_stage_entity WHERE cdoc IS NOT NULL)
                FOR KEY SHARE) locked""")
    insert_entities = """
        INSERT INTO submissions_submissionentity
            (submission_id, node, type, link, canonical_document_id, canonical_begin,
             canonical_end)
        SELECT %s, node, type, link, cdoc, cb, ce FROM kbpo_stage_entity ORDER BY ord"""
    # The new ids by node, in a small temporary table: the mentions and relations below
    # join it in one hash join instead of probing the entity table's index per row.
    if connection.vendor == "postgresql":  # taken from the insert, not read back
        cursor.execute(f"""
            WITH ins AS ({insert_entities} RETURNING node, id, type)
            INSERT INTO kbpo_stage_ids (node, id, type) SELECT node, id, type FROM ins""",
                       [sid])
        n_entities = cursor.rowcount
        cursor.execute("ANALYZE kbpo_stage_ids")
    else:
        cursor.execute(insert_entities, [sid])
        n_entities = cursor.rowcount
        cursor.execute("""
            INSERT INTO kbpo_stage_ids (node, id, type) SELECT node, id, type
            FROM submissions_submissionentity WHERE submission_id = %s""", [sid])
    # Ordered as the former plan produced them: by entity, then span; fillers last.
    cursor.execute("""
        INSERT INTO submissions_submissionmention
            (submission_id, entity_id, document_id, "begin", "end", type, is_canonical)
        SELECT %s, e.id, m.doc, m.b, m.e, e.type, MAX(m.canon) = 1
        FROM kbpo_stage_mention m JOIN kbpo_stage_ids e ON e.node = m.node
        GROUP BY e.id, m.doc, m.b, m.e, e.type
        UNION ALL
        SELECT %s, NULL, doc, b, e, type, MAX(canon) = 1
        FROM kbpo_stage_mention WHERE node IS NULL
        GROUP BY doc, b, e, type
        ORDER BY 2, 3, 4, 5, 6""", [sid, sid])
    n_mentions = cursor.rowcount
    # Sorted so concurrent ingestions lock shared pairs in the same order.
    cursor.execute("""
        INSERT INTO submissions_mentionpair
            (document_id, sentence_id, subject_begin, subject_end, object_begin,
             object_end, subject_type, object_type)
        SELECT doc, MIN(sent), sb, se, ob, oe, MIN(stype), MIN(otype)
        FROM kbpo_stage_relation WHERE 1 = 1
        GROUP BY doc, sb, se, ob, oe
        ORDER BY doc, sb, se, ob, oe
        ON CONFLICT (document_id, subject_begin, subject_end, object_begin, object_end)
        DO NOTHING""")
    cursor.execute("""
        INSERT INTO submissions_relationinstance
            (submission_id, pair_id, predicate, subject_entity_id, object_entity_id,
             confidence, line)
        SELECT %s, p.id, r.predicate, es.id, eo.id, r.conf, r.line
        FROM (SELECT doc, sb, se, ob, oe, predicate, MIN(subj) AS subj, MIN(obj) AS obj,
                     MAX(conf) AS conf, MIN(line) AS line
              FROM kbpo_stage_relation GROUP BY doc, sb, se, ob, oe, predicate) r
        JOIN submissions_mentionpair p ON p.document_id = r.doc AND p.subject_begin = r.sb
             AND p.subject_end = r.se AND p.object_begin = r.ob AND p.object_end = r.oe
        JOIN kbpo_stage_ids es ON es.node = r.subj
        LEFT JOIN kbpo_stage_ids eo ON eo.node = r.obj
        ORDER BY r.line""", [sid])
    n_relations = cursor.rowcount
    return n_entities, n_mentions, n_relations


def submission_stats(cursor: Any, sid: int, stats: dict[str, Any], staged_relations: int,
                     documents_in_corpus: int) -> dict[str, Any]:
    """Add the ingested rows' counts (by predicate, type pair, type) to `stats`."""

    def grouped(sql: str) -> dict[str, int]:
        cursor.execute(sql, [sid])
        return {str(k): int(v) for k, v in cursor.fetchall()}

    stats["instances_by_predicate"] = grouped(
        "SELECT predicate, COUNT(*) FROM submissions_relationinstance "
        "WHERE submission_id = %s GROUP BY predicate ORDER BY predicate")
    stats["instances_by_types"] = grouped(
        "SELECT p.subject_type || '-' || p.object_type, COUNT(*) "
        "FROM submissions_relationinstance r JOIN submissions_mentionpair p "
        "ON p.id = r.pair_id WHERE r.submission_id = %s GROUP BY 1 ORDER BY 1")
    stats["mentions_by_type"] = grouped(
        "SELECT type, COUNT(*) FROM submissions_submissionmention "
        "WHERE submission_id = %s GROUP BY type ORDER BY type")
    stats["entities_by_type"] = grouped(
        "SELECT type, COUNT(*) FROM submissions_submissionentity "
        "WHERE submission_id = %s GROUP BY type ORDER BY type")
    cursor.execute(
        "SELECT COUNT(DISTINCT p.document_id), COUNT(DISTINCT r.pair_id) "
        "FROM submissions_relationinstance r JOIN submissions_mentionpair p "
        "ON p.id = r.pair_id WHERE r.submission_id = %s", [sid])
    docs, pairs = cursor.fetchone()
    cursor.execute("SELECT COUNT(DISTINCT document_id) FROM submissions_submissionmention "
                   "WHERE submission_id = %s", [sid])
    stats["documents_covered"] = int(docs)
    stats["mention_pairs"] = int(pairs)
    stats["documents_with_mentions"] = int(cursor.fetchone()[0])
    stats["documents_in_corpus"] = documents_in_corpus
    n_instances = sum(stats["instances_by_predicate"].values())
    stats["duplicates_merged"] = staged_relations - n_instances
    return stats
