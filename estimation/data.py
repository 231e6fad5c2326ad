"""Loading a corpus's evaluation data from the database into the estimation core.

The planner (how many draws a new submission needs) and the score recomputation both
start here, so they always see the same population, draws, labels and exhaustive
sample. Pair ids are `MentionPair` primary keys; predicate codes follow the sorted
canonical predicate list, so they are stable across runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from annotations.models import ExhaustiveDocument, GoldRelation, PairLabel, SampleDraw
from kbpo.models import Corpus
from kbpo.schema import CANONICAL_PREDICATES, NO_RELATION
from submissions.models import MentionPair, RelationInstance, Submission

from .core import Evidence, Population, prepare_evidence

PREDICATES: tuple[str, ...] = tuple(sorted(CANONICAL_PREDICATES))
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
    n_labels: int = 0
    exhaustive_documents: int = 0
    extra: dict = field(default_factory=dict)

    def evidence(self) -> Evidence:
        return prepare_evidence(
            self.population, self.draws, self.label_pairs, self.label_preds,
            self.exhaustive_pairs, self.exhaustive_preds, self.exhaustive_subjects)


def _instances_by_submission(ids: list[int]) -> dict[int, tuple[np.ndarray, ...]]:
    """(pair ids, predicate codes, subject entity ids) per submission, streamed."""
    rows: dict[int, tuple[list[int], list[int], list[int]]] = {i: ([], [], []) for i in ids}
    qs = (RelationInstance.objects.filter(submission_id__in=ids)
          .values_list("submission_id", "pair_id", "predicate", "subject_entity_id")
          .order_by())
    for sub_id, pair_id, predicate, subject in qs.iterator(chunk_size=CHUNK):
        code = PREDICATE_CODE.get(predicate)
        if code is None:  # a predicate outside the schema never reaches ingestion
            continue
        p, c, s = rows[sub_id]
        p.append(pair_id)
        c.append(code)
        s.append(subject)
    return {i: (np.asarray(p, np.int64), np.asarray(c, np.int64), np.asarray(s, np.int64))
            for i, (p, c, s) in rows.items()}


def load_labels(corpus: Corpus) -> tuple[np.ndarray, np.ndarray]:
    """Aggregated crowd labels: pair ids and predicate codes (-1 = no relation).

    A pair whose label holds two relations appears twice (primary first).
    """
    pairs: list[int] = []
    preds: list[int] = []
    qs = PairLabel.objects.filter(pair__document__corpus=corpus).values_list(
        "pair_id", "predicates").order_by("pair_id")
    for pair_id, predicates in qs.iterator(chunk_size=CHUNK):
        codes = sorted(PREDICATE_CODE[p] for p in predicates if p in PREDICATE_CODE)
        if not codes or NO_RELATION in predicates:
            codes = [-1]
        for code in codes:
            pairs.append(pair_id)
            preds.append(code)
    return np.asarray(pairs, np.int64), np.asarray(preds, np.int64)


def load_exhaustive(corpus: Corpus) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The true-instance sample Ŷ0 from completed exhaustive documents.

    Instances are matched to mention pairs by exact spans; an instance no system
    predicted has no MentionPair and gets a negative id (unknown to the population).
    Subjects are coded by (document, subject entity label).
    """
    docs = ExhaustiveDocument.objects.filter(
        corpus=corpus, state=ExhaustiveDocument.State.COMPLETE).values_list("document_id",
                                                                            flat=True)
    doc_ids = list(docs)
    if not doc_ids:
        z = np.zeros(0, np.int64)
        return z, z, z, 0
    gold = list(GoldRelation.objects.filter(document_id__in=doc_ids).values_list(
        "document_id", "subject_begin", "subject_end", "object_begin", "object_end",
        "predicate", "subject_entity").order_by("id"))
    spans = {(d, sb, se, ob, oe): pk for pk, d, sb, se, ob, oe in
             MentionPair.objects.filter(document_id__in=doc_ids).values_list(
                 "pk", "document_id", "subject_begin", "subject_end", "object_begin",
                 "object_end").iterator(chunk_size=CHUNK)}
    pairs, preds, subjects = [], [], []
    subject_code: dict[tuple[int, str], int] = {}
    for k, (d, sb, se, ob, oe, predicate, subj) in enumerate(gold):
        if predicate not in PREDICATE_CODE:
            continue
        pairs.append(spans.get((d, sb, se, ob, oe), -(k + 1)))
        preds.append(PREDICATE_CODE[predicate])
        key = (d, subj or f"{sb}-{se}")
        subjects.append(subject_code.setdefault(key, len(subject_code)))
    return (np.asarray(pairs, np.int64), np.asarray(preds, np.int64),
            np.asarray(subjects, np.int64), len(doc_ids))


def load_corpus_data(corpus: Corpus, only: Iterable[int] | None = None) -> CorpusData:
    """Load the active submissions (or `only` these ids) with their draws and labels."""
    qs = Submission.objects.active().filter(corpus=corpus).order_by("pk")
    if only is not None:
        qs = qs.filter(pk__in=list(only))
    submissions = list(qs)
    ids = [s.pk for s in submissions]
    population = Population()
    for sub_id, (pairs, codes, subjects) in _instances_by_submission(ids).items():
        population.add_system(system_name(sub_id), pairs, codes, subjects)
    draws: dict[str, list[int]] = {system_name(i): [] for i in ids}
    for sub_id, pair_id in (SampleDraw.objects.filter(submission_id__in=ids)
                            .values_list("submission_id", "instance__pair_id")
                            .order_by("submission_id", "index").iterator(chunk_size=CHUNK)):
        draws[system_name(sub_id)].append(pair_id)
    label_pairs, label_preds = load_labels(corpus)
    y_pairs, y_preds, y_subjects, n_docs = load_exhaustive(corpus)
    return CorpusData(
        corpus=corpus, submissions=submissions, population=population,
        draws={k: np.asarray(v, np.int64) for k, v in draws.items()},
        label_pairs=label_pairs, label_preds=label_preds, exhaustive_pairs=y_pairs,
        exhaustive_preds=y_preds, exhaustive_subjects=y_subjects,
        n_labels=len(np.unique(label_pairs)), exhaustive_documents=n_docs)


def unlabelled_pairs(pair_ids: Iterable[int]) -> set[int]:
    """Which of these mention pairs have no aggregated label yet."""
    ids = set(pair_ids)
    labelled = set(PairLabel.objects.filter(pair_id__in=ids).values_list("pair_id", flat=True))
    return ids - labelled


__all__ = ["PREDICATES", "PREDICATE_CODE", "CorpusData", "load_corpus_data", "load_exhaustive",
           "load_labels", "system_name", "unlabelled_pairs"]
