"""Loading a corpus's evaluation data from the database into the estimation core.

The planner (how many draws a new submission needs) and the score recomputation both
start here, so they always see the same population, draws, labels and exhaustive
sample. Pair ids are `MentionPair` primary keys; predicate codes follow the sorted
canonical predicate list, so they are stable across runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import OuterRef, Subquery

from annotations.models import ExhaustiveDocument, GoldRelation, PairLabel, SampleDraw
from annotations.quality.label_table import LabelTable, label_table
from kbpo.core.kept import Kept
from kbpo.core.models import Corpus
from kbpo.core.schema import CANONICAL_PREDICATES, NO_RELATION
from kbpo.core.schemas import DOCRED, get_schema
from submissions.models import MentionPair, RelationInstance, Submission

from . import instance_cache
from .core import Evidence, Population, prepare_evidence
from .core.noise import SoftLabels, self_consistent, with_soft_labels
from .core.points import PointPlan
from .correction import soft_label_replicates

# Codes for every built-in schema's relations: TAC KBP's first (their codes unchanged),
# then DocRED's ids. The names never collide (`per:spouse`, `P26`), so one table serves
# every corpus whatever its schema, and a corpus only ever uses its own schema's codes.
PREDICATES: tuple[str, ...] = (tuple(sorted(CANONICAL_PREDICATES))
                               + tuple(get_schema(DOCRED).relations))
PREDICATE_CODE: dict[str, int] = {p: i for i, p in enumerate(PREDICATES)}
CHUNK = 100_000


def system_name(submission_id: int) -> str:
    """The population name of a submission (its primary key as text)."""
    return str(submission_id)


@dataclass
class CorpusData:
    """Everything the estimators need about one corpus, as arrays."""

    corpus: Corpus
    submissions: list[Submission]
    population: Population
    draws: dict[str, np.ndarray]
    label_pairs: np.ndarray
    label_preds: np.ndarray
    exhaustive_pairs: np.ndarray
    exhaustive_preds: np.ndarray
    exhaustive_subjects: np.ndarray
    # Document of each exhaustive instance (same order), so that recall variances are
    # document-level (Ŷ0 is a cluster sample); None: every instance its own cluster.
    exhaustive_docs: np.ndarray | None = None
    n_labels: int = 0
    exhaustive_documents: int = 0
    extra: dict = field(default_factory=dict)
    soft: SoftLabels | None = None  # with KBPO_SOFT_LABELS, where the quality pass stored them
    # With soft labels: the labels' posteriors under the model's parameters refitted on
    # bootstrap replicates over questions (estimation/correction.py).
    soft_replicates: list[SoftLabels] = field(default_factory=list)

    def evidence(self) -> Evidence:
        return self.evidence_and_plan()[0]

    def evidence_and_plan(self, draw_scheme: str = "instance"
                          ) -> tuple[Evidence, PointPlan | None]:
        """The evidence, and with soft labels the `PointPlan` its systems' priors were
        fixed with, when made under ``draw_scheme`` (else None): its label-free part
        serves any soft labels on these draws (the correction's replicates)."""
        ev = prepare_evidence(
            self.population, self.draws, self.label_pairs, self.label_preds,
            self.exhaustive_pairs, self.exhaustive_preds, self.exhaustive_subjects,
            self.exhaustive_docs)
        if self.soft is None or not len(self.soft.pairs):
            return ev, None
        soft = with_soft_labels(self.population, ev, self.soft)
        plan = PointPlan(self.population, soft, "instance")  # self_consistent's scheme
        ev = self_consistent(self.population, soft, plan=plan)
        return ev, plan if draw_scheme == "instance" else None


def _label_codes(predicates: list[str]) -> list[int]:
    codes = sorted(PREDICATE_CODE[p] for p in predicates if p in PREDICATE_CODE)
    return [-1] if not codes or NO_RELATION in predicates else codes


def load_labels(corpus: Corpus, table: LabelTable | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Aggregated crowd labels: pair ids and predicate codes (-1 = no relation), by pair.

    A pair whose label holds two relations appears twice (primary first). ``table``:
    the corpus's labels if already read (`label_table`).
    """
    table = label_table(corpus.pk) if table is None else table
    # Codes per distinct label text, then spread over the labels (by pair id).
    per_text = [_label_codes(json.loads(t)) for t in table.texts]
    lens = np.asarray([len(c) for c in per_text], np.int64)
    flat = np.asarray([c for codes in per_text for c in codes], np.int64)
    first = np.cumsum(lens) - lens
    order = np.argsort(table.pairs, kind="stable")
    text = table.predicates[order]
    n = lens[text]  # codes per label; each label's run of codes starts at first[text]
    within = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    return np.repeat(table.pairs[order], n), flat[np.repeat(first[text], n) + within]


def load_soft_labels(corpus: Corpus, table: LabelTable | None = None) -> SoftLabels:
    """The stored posteriors of the corpus's labels, as soft-label rows (by pair id, each
    posterior in its stored order). ``table``: the corpus's labels if already read."""
    table = label_table(corpus.pk) if table is None else table
    # An answer name unknown to the estimators (-2) has no row.
    code_of = np.asarray([-1 if name == NO_RELATION else PREDICATE_CODE.get(name, -2)
                          for name in table.names], np.int64)
    codes = code_of[table.soft_names]
    keep = np.flatnonzero(codes != -2)
    pairs = table.pairs[table.positions(table.soft_ids[keep])]
    order = np.argsort(pairs, kind="stable")
    at = keep[order]
    # A label stored before pair-type shares were kept has NaN there: the crowd-wide used.
    return SoftLabels(pairs[order], codes[at],
                      np.clip(table.soft_probs[at], 0.0, 1.0), table.soft_priors[at],
                      table.soft_type_priors[at])


MATCH_MODES = ("exact", "lenient")


def _lenient_pair(d: int, sentence: int | None, sb: int, se: int, ob: int, oe: int,
                  predicate: str, by_doc: dict[int, list[tuple]],
                  predicted: set[tuple[int, str]]) -> int | None:
    """The mention pair a gold instance matches leniently, or None.

    Lenient: same document and sentence, the subject spans overlap and the object spans
    overlap. Among several, a pair some active system predicted with the gold predicate
    wins, then the largest total overlap, then the lowest id (deterministic).
    """
    best: tuple | None = None
    for pk, psent, psb, pse, pob, poe in by_doc.get(d, ()):
        if sentence is not None and psent != sentence:
            continue
        so = min(se, pse) - max(sb, psb)
        oo = min(oe, poe) - max(ob, pob)
        if so <= 0 or oo <= 0:
            continue
        key = ((pk, predicate) in predicted, so + oo, -pk)
        if best is None or key > best[0]:
            best = (key, pk)
    return None if best is None else best[1]


def _complete_documents(corpus: Corpus) -> list[int]:
    return list(ExhaustiveDocument.objects.filter(
        corpus=corpus, state=ExhaustiveDocument.State.COMPLETE).values_list("document_id",
                                                                            flat=True))


def _gold_rows(doc_ids: list[int], pairs: bool = False) -> list[tuple]:
    """The gold relations of these documents that enter Ŷ0, in Ŷ0's order; ``pairs``:
    each with the id of the mention pair of exactly its spans last (None: none)."""
    rows = GoldRelation.objects.filter(document_id__in=doc_ids)
    fields = ["document_id", "subject_begin", "subject_end", "object_begin", "object_end",
              "predicate", "subject_entity", "sentence_id"]
    if pairs:
        # A document has at most one pair of given spans (MentionPair's constraint):
        # looked up by its index, rather than every pair of the documents read.
        rows = rows.annotate(exact_pair=Subquery(MentionPair.objects.filter(
            document_id=OuterRef("document_id"), subject_begin=OuterRef("subject_begin"),
            subject_end=OuterRef("subject_end"), object_begin=OuterRef("object_begin"),
            object_end=OuterRef("object_end")).values("pk")[:1]))
        fields.append("exact_pair")
    return [r for r in rows.values_list(*fields).order_by("id") if r[5] in PREDICATE_CODE]


def exhaustive_documents(corpus: Corpus) -> np.ndarray:
    """The document id of each instance of Ŷ0, in the order `load_exhaustive` returns.

    The recall variances treat documents as clusters (docs/internals/estimation.md §4.3).
    """
    rows = _gold_rows(_complete_documents(corpus))
    return np.asarray([r[0] for r in rows], np.int64)


def load_exhaustive(corpus: Corpus, match: str = "exact"
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The true-instance sample Ŷ0 from completed exhaustive documents.

    Instances are matched to mention pairs by exact spans (`match="exact"`, the
    default) or leniently (`match="lenient"`: same sentence, overlapping subject and
    object spans; the predicate is compared by the estimators as always, so a match
    also needs the same predicate). An instance matching no MentionPair gets a negative
    id (unknown to the population). Subjects are coded by (document, subject entity
    label).
    """
    return _exhaustive(corpus, match)[:4]


Exhaustive = tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]
# Per corpus: Ŷ0 as last read by exact matching, keyed by what it was read from — the
# complete documents, and a fingerprint of their gold relations (count, sums of ids and
# row versions, as `stored_pages._fp`: any write changes one) and of their mention
# pairs (count and sum of ids: a pair is written once, at ingestion, and never edited).
_EXHAUSTIVE: Kept[int, tuple[tuple, Exhaustive]] = Kept(2)
_EXHAUSTIVE_FP = (
    "SELECT (SELECT count(*) || ':' || coalesce(sum(g.id), 0) || ':' || "
    f'coalesce(sum(g.xmin::text::bigint), 0) FROM "{GoldRelation._meta.db_table}" g '
    "WHERE g.document_id = ANY(%s)), (SELECT count(*) || ':' || coalesce(sum(p.id), 0) "
    f'FROM "{MentionPair._meta.db_table}" p WHERE p.document_id = ANY(%s))')


def _exhaustive(corpus: Corpus, match: str = "exact") -> Exhaustive:
    """`load_exhaustive`, and each instance's document (`exhaustive_documents`), from one
    read of the gold relations; with exact matching, on Postgres, the last read's while
    the complete documents, their gold relations and mention pairs are unchanged."""
    if match not in MATCH_MODES:
        raise ValueError(f"match must be one of {', '.join(MATCH_MODES)}, got {match!r}")
    doc_ids = _complete_documents(corpus)
    if not doc_ids:
        z = np.zeros(0, np.int64)
        return z, z, z, 0, z
    if match != "exact" or connection.vendor != "postgresql":
        return _read_exhaustive(corpus, doc_ids, match)
    with connection.cursor() as cursor:
        cursor.execute(_EXHAUSTIVE_FP, [doc_ids, doc_ids])
        key = (tuple(sorted(doc_ids)), cursor.fetchone())
    kept = _EXHAUSTIVE.kept(corpus.pk)
    if kept is not None and kept[0] == key:
        return kept[1]
    out = _read_exhaustive(corpus, doc_ids, match)
    for a in out:
        if isinstance(a, np.ndarray):
            a.flags.writeable = False  # kept: shared with later runs
    _EXHAUSTIVE.keep(corpus.pk, (key, out))
    return out


def _read_exhaustive(corpus: Corpus, doc_ids: list[int], match: str) -> Exhaustive:
    gold = _gold_rows(doc_ids, pairs=True)
    by_doc: dict[int, list[tuple]] = {}
    predicted: set[tuple[int, str]] = set()
    if match == "lenient":
        pair_rows = MentionPair.objects.filter(document_id__in=doc_ids).values_list(
            "pk", "document_id", "subject_begin", "subject_end", "object_begin", "object_end",
            "sentence_id").iterator(chunk_size=CHUNK)
        for pk, d, sb, se, ob, oe, sent in pair_rows:
            by_doc.setdefault(d, []).append((pk, sent, sb, se, ob, oe))
        active = Submission.objects.active().filter(corpus=corpus)
        predicted = set(RelationInstance.objects.filter(
            submission__in=active, pair__document_id__in=doc_ids).values_list(
            "pair_id", "predicate").distinct().iterator(chunk_size=CHUNK))
    pairs, preds, subjects = [], [], []
    subject_code: dict[tuple[int, str], int] = {}
    for k, (d, sb, se, ob, oe, predicate, subj, sent, pair) in enumerate(gold):
        if pair is None and match == "lenient":
            pair = _lenient_pair(d, sent, sb, se, ob, oe, predicate, by_doc, predicted)
        pairs.append(pair if pair is not None else -(k + 1))
        preds.append(PREDICATE_CODE[predicate])
        key = (d, subj or f"{sb}-{se}")
        subjects.append(subject_code.setdefault(key, len(subject_code)))
    return (np.asarray(pairs, np.int64), np.asarray(preds, np.int64),
            np.asarray(subjects, np.int64), len(doc_ids),
            np.asarray([r[0] for r in gold], np.int64))


def _load_draws(ids: list[int], index: dict[int, tuple[np.ndarray, np.ndarray]]
                ) -> dict[str, np.ndarray]:
    """Each submission's drawn pair ids, in draw order.

    On Postgres the draws' instance ids are placed on pairs with the instance arrays
    already in hand (`index`: instance ids, pair ids), sparing a join with a million
    instance rows; a draw of an instance not in them falls back to the join.
    """
    out = {system_name(i): np.zeros(0, np.int64) for i in ids}
    if not ids:
        return out
    if connection.vendor == "postgresql":
        table = instance_cache.copy_binary(
            f'SELECT submission_id::bigint, instance_id::bigint FROM "{SampleDraw._meta.db_table}"'
            ' WHERE submission_id = ANY(%s) ORDER BY submission_id, "index"', [ids], 2)
        cut = np.searchsorted(table[:, 0], np.asarray(ids, np.int64), side="left")
        ends = np.append(cut[1:], len(table))
        placed = True
        for sid, a, b in zip(ids, cut, ends, strict=True):
            inst_ids, pairs = index[sid]
            drawn = table[a:b, 1]
            pos = np.minimum(np.searchsorted(inst_ids, drawn), max(len(inst_ids) - 1, 0))
            if len(drawn) and (not len(inst_ids) or (inst_ids[pos] != drawn).any()):
                placed = False
                break
            out[system_name(sid)] = pairs[pos] if len(drawn) else np.zeros(0, np.int64)
        if placed:
            return out
    qs = (SampleDraw.objects.filter(submission_id__in=ids)
          .values_list("submission_id", "instance__pair_id").order_by("submission_id", "index"))
    if connection.vendor == "postgresql":
        table = instance_cache.copy_binary(
            f'SELECT d.submission_id::bigint, r.pair_id::bigint FROM "{SampleDraw._meta.db_table}"'
            f' d JOIN "{RelationInstance._meta.db_table}" r ON r.id = d.instance_id '
            'WHERE d.submission_id = ANY(%s) ORDER BY d.submission_id, d."index"', [ids], 2)
    else:
        table = np.asarray(list(qs.iterator(chunk_size=CHUNK)), np.int64).reshape(-1, 2)
    for sid in ids:
        out[system_name(sid)] = table[table[:, 0] == sid, 1].copy()
    return out


# Per corpus: the draws as last read, keyed by the systems, the instance arrays they
# were placed with (their tokens) and the count and sum of ids of the draw rows: a draw
# is written once (planning) and never edited, so a change adds or removes rows (a
# re-ingestion deletes and writes them again, with new ids). Row versions (`xmin`)
# would cost three times as much to sum.
_DRAWS: Kept[int, tuple[tuple, dict[str, np.ndarray]]] = Kept(2)
_DRAWS_FP = (f'SELECT count(*), coalesce(sum(id), 0) FROM "{SampleDraw._meta.db_table}" '
             "WHERE submission_id = ANY(%s)")


def _kept_draws(corpus_id: int, ids: list[int], tokens: tuple,
                index: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
    """`_load_draws`, or on Postgres the last read's while its draw rows are unchanged."""
    if connection.vendor != "postgresql" or not ids:
        return _load_draws(ids, index)
    with connection.cursor() as cursor:
        cursor.execute(_DRAWS_FP, [ids])
        key = (tuple(ids), tokens, cursor.fetchone())
    kept = _DRAWS.kept(corpus_id)
    if kept is not None and kept[0] == key:
        return dict(kept[1])
    out = _load_draws(ids, index)
    for a in out.values():
        a.flags.writeable = False  # kept: shared with later runs
    _DRAWS.keep(corpus_id, (key, dict(out)))
    return out


def forget(corpus_id: int | None = None) -> None:
    """Drop the draws and exhaustive sample kept for a corpus (None: every corpus)."""
    _DRAWS.forget(corpus_id)
    _EXHAUSTIVE.forget(corpus_id)


def load_corpus_data(corpus: Corpus, only: Iterable[int] | None = None,
                     match: str = "exact", hot: bool = False) -> CorpusData:
    """Load the active submissions (or `only` these ids) with their draws and labels.

    `match` chooses how true instances meet predicted pairs (see `load_exhaustive`).
    Instances come from the stored per-submission arrays (`instance_cache`); the rows
    that had to be rebuilt are in ``extra["instance_cache"]`` for `store_instance_cache`
    (this load may run in a read-only transaction). `hot` reuses the population this
    process last built for the same stored rows (recompute only: it is kept in memory).
    """
    qs = Submission.objects.active().filter(corpus=corpus).order_by("pk")
    if only is not None:
        qs = qs.filter(pk__in=list(only))
    submissions = list(qs)
    ids = [s.pk for s in submissions]
    use_hot = hot and only is None

    def want_arrays(tokens: tuple) -> bool:
        return not (use_hot and instance_cache.hot_population(corpus.pk, tokens) is not None)

    loaded = instance_cache.load(corpus, ids, PREDICATE_CODE, want_arrays,
                                 all_active=only is None)
    if loaded.arrays is None:
        entry = instance_cache.hot_population(corpus.pk, loaded.tokens)
        assert entry is not None
        population, index = entry
    else:
        population = Population()
        for sub_id in ids:  # in id order, so every load builds the same population
            _, pairs, codes, subjects = loaded.arrays[sub_id]
            population.add_system(system_name(sub_id), pairs, codes, subjects)
        index = {i: loaded.arrays[i][:2] for i in ids}
        if use_hot:
            instance_cache.keep_population(corpus.pk, loaded.tokens, population, index)
    draws = _kept_draws(corpus.pk, ids, loaded.tokens, index)
    labels = label_table(corpus.pk)  # read once for every use below
    label_pairs, label_preds = load_labels(corpus, labels)
    y_pairs, y_preds, y_subjects, n_docs, y_docs = _exhaustive(corpus, match=match)
    soft = load_soft_labels(corpus, labels) if settings.KBPO_SOFT_LABELS else None
    replicates: list[SoftLabels] = []
    refitted = None  # replicate parameters to store (estimation/correction.py)
    answers: list = []  # the relation answers, if the replicates read them
    weak: list = []  # the fit's weak relations (the report's crowd section)
    if soft is not None and len(soft.pairs):
        replicates, refitted = soft_label_replicates(
            corpus, settings.KBPO_SOFT_LABEL_BOOTSTRAP, PREDICATE_CODE, read=answers,
            labels=labels, weak=weak)
    return CorpusData(
        corpus=corpus, submissions=submissions, population=population,
        draws=draws,
        label_pairs=label_pairs, label_preds=label_preds, exhaustive_pairs=y_pairs,
        exhaustive_preds=y_preds, exhaustive_subjects=y_subjects,
        exhaustive_docs=y_docs if len(y_pairs) else None,
        n_labels=len(np.unique(label_pairs)), exhaustive_documents=n_docs,
        soft=soft, soft_replicates=replicates,
        extra={"instance_cache": loaded.pending, "correction_fit": refitted,
               "answers": answers[0] if answers else None, "labels": labels,
               "weak_relations": weak[0] if weak else [],
               "reloaded": loaded.reloaded,
               "hot": loaded.arrays is None})


def unlabelled_pairs(pair_ids: Iterable[int]) -> set[int]:
    """Which of these mention pairs have no aggregated label yet."""
    ids = set(pair_ids)
    labelled = set(PairLabel.objects.filter(pair_id__in=ids).values_list("pair_id", flat=True))
    return ids - labelled


def store_instance_cache(data: CorpusData) -> None:
    """Store the instance arrays a load had to rebuild (outside its read-only snapshot)."""
    pending = data.extra.get("instance_cache")
    if pending is not None:
        instance_cache.store(pending)
    refitted = data.extra.get("correction_fit")
    if refitted is not None:
        refitted.store()


__all__ = ["MATCH_MODES", "PREDICATES", "PREDICATE_CODE", "CorpusData",
           "exhaustive_documents", "load_corpus_data", "load_exhaustive", "load_labels",
           "store_instance_cache", "system_name", "unlabelled_pairs"]
