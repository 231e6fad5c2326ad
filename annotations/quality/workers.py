"""Worker quality: Dawid–Skene per corpus, agreement with the other workers, flags,
Krippendorff's alpha per batch, the soft labels (P(right) of every label, from the
lopsided one-coin model: bench/bench_aggregation.py measured it calibrated where
full Dawid–Skene is not), and the hard labels: each label moves from the majority
vote to the answer of `KBPO_LABEL_AGGREGATION` where that model is surer of it by
`KBPO_LABEL_SWITCH_MARGIN` (the bench measured it more accurate than majority), and
the corpus's scores are recomputed when a label moved."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models.expressions import RawSQL

from annotations.models import (
    CrowdWorker,
    HitBatch,
    PairLabel,
    Question,
    Response,
    TaskKind,
)
from annotations.signals import labels_changed
from kbpo.core.schemas import offered_relations

from . import aggregation
from .agreement import krippendorff_alpha, worker_agreement


@dataclass
class QualityReport:
    answers: int = 0
    questions: int = 0
    workers: int = 0
    flagged: list[str] = field(default_factory=list)
    alpha: dict[int, float | None] = field(default_factory=dict)       # per corpus
    batch_alpha: dict[int, float | None] = field(default_factory=dict)
    ds_labels: dict[int, list[str]] = field(default_factory=dict)      # question -> DS label
    # question -> the lopsided model's label: its sharp fit's under `lopsided`, the
    # calibrated soft fit's under the other methods (which store no such label).
    coin_labels: dict[int, list[str]] = field(default_factory=dict)
    soft_labels: int = 0                                     # PairLabels written (moved)
    reposterior: int = 0      # ... whose posterior the refit moved (soft scores rest on it)
    control_answers: int = 0                                           # answers to controls
    control_right: int = 0                                             # ... equal to the truth
    # Answers naming a relation their question did not offer: left out of every fit.
    refused: int = 0
    # Hard labels the pass moved: (pair id, old answer key, new answer key).
    relabelled: list[tuple[int, str, str]] = field(default_factory=list)


def _arrays(rows: list[tuple[int, int, list[str]]]) -> tuple[np.ndarray, np.ndarray, list[str],
                                                              list[int], list[int]]:
    q_index: dict[int, int] = {}
    w_index: dict[int, int] = {}
    items = np.fromiter((q_index.setdefault(q, len(q_index)) for q, _, _ in rows), np.int64,
                        len(rows))
    workers = np.fromiter((w_index.setdefault(w, len(w_index)) for _, w, _ in rows), np.int64,
                          len(rows))
    answers = [aggregation.answer_key(c) for _, _, c in rows]
    return items, workers, answers, list(q_index), list(w_index)


REFIT_TASK = "annotations.refit_quality"
# What a quality pass's own `labels_changed` says, so that it does not ask for a refit.
QUALITY_SOURCE = "quality"


def refit_key(corpus_id: int) -> str:
    return f"crowd-refit:{corpus_id}"


def request_refit(corpus_id: int) -> bool:
    """Refit the corpus's crowd model after KBPO_CROWD_REFIT_DEBOUNCE seconds, unless a
    refit is already waiting (one per burst of labels). True when one was queued."""
    from kbpo.core import jobs

    delay = float(getattr(settings, "KBPO_CROWD_REFIT_DEBOUNCE", 0))
    if delay <= 0 or not cache.add(refit_key(corpus_id), 1, timeout=int(delay) + 600):
        return False
    jobs.send(REFIT_TASK, corpus_id, countdown=delay)
    return True


def update_worker_quality(corpus_id: int | None = None) -> QualityReport:
    """Fit Dawid–Skene per corpus; store accuracy, agreement and flags on the workers."""
    report = QualityReport()
    corpora = ([corpus_id] if corpus_id is not None else
               list(Question.objects.filter(kind=TaskKind.RELATION, responses__counted=True)
                    .values_list("corpus_id", flat=True).distinct()))
    acc_sum: Counter[int] = Counter()
    agree_sum: Counter[int] = Counter()
    agree_n: Counter[int] = Counter()
    answered: Counter[int] = Counter()
    ctrl_n: Counter[int] = Counter()
    ctrl_right: Counter[int] = Counter()
    for cid in corpora:
        # A rejected assignment's answers do not count (crowd/discount.py).
        rows = list(Response.objects.filter(question__corpus_id=cid, counted=True,
                                            question__kind=TaskKind.RELATION)
                    .values_list("question_id", "worker_id", "choices").order_by("pk"))
        rows, refused, types = _within_offered(rows)
        report.refused += refused
        if not rows:
            continue
        items, workers, answers, qids, wids = _arrays(rows)
        known = _controls(qids)
        _count_controls(items, workers, answers, wids, known, ctrl_n, ctrl_right, report)
        fit = aggregation.dawid_skene(items, workers, answers, len(qids), len(wids))
        rate, total = worker_agreement(items, workers, answers, len(wids))
        counts = np.bincount(workers, minlength=len(wids))
        for k, wid in enumerate(wids):
            acc_sum[wid] += float(fit.worker_accuracy[k]) * int(counts[k])
            answered[wid] += int(counts[k])
            if total[k] > 0:
                agree_sum[wid] += float(rate[k]) * float(total[k])
                agree_n[wid] += int(total[k])
        report.ds_labels.update({q: fit.labels[i].split("|") for i, q in enumerate(qids)})
        with transaction.atomic():
            moved, refitted = len(report.relabelled), report.reposterior
            report.soft_labels += _store_labels(items, workers, answers, qids, len(wids),
                                                report, known, types)
            # The scores rest on the hard labels, soft-label scores and the crowd
            # section stored with each score run on the posteriors: either moving
            # asks for a recompute (debounced; a refit that moved nothing asks none).
            if len(report.relabelled) > moved or report.reposterior > refitted:
                transaction.on_commit(lambda c=cid: labels_changed.send(
                    sender=PairLabel, corpus_id=c, source=QUALITY_SOURCE))
        report.alpha[cid] = krippendorff_alpha(items, workers, answers, len(qids),
                                                           len(wids))
        report.answers += len(rows)
        report.questions += len(qids)
    threshold = settings.KBPO_WORKER_FLAG_AGREEMENT
    minimum = settings.KBPO_WORKER_FLAG_MIN_ANSWERS
    for worker in CrowdWorker.objects.filter(pk__in=list(answered)):
        n = answered[worker.pk]
        agreement = agree_sum[worker.pk] / agree_n[worker.pk] if agree_n[worker.pk] else None
        worker.accuracy_ds = acc_sum[worker.pk] / n if n else None
        worker.agreement = agreement
        worker.n_answers = worker.responses.filter(counted=True).count()
        worker.flagged = bool(agreement is not None and agree_n[worker.pk] >= minimum
                              and agreement < threshold)
        worker.control_answers = ctrl_n[worker.pk]
        worker.control_right = ctrl_right[worker.pk]
        worker.save(update_fields=["accuracy_ds", "agreement", "n_answers", "flagged",
                                   "control_answers", "control_right"])
        if worker.flagged:
            report.flagged.append(str(worker))
    report.workers = len(answered)
    batches = HitBatch.objects.all()
    if corpus_id is not None:
        batches = batches.filter(corpus_id=corpus_id)
    for batch in batches:
        rows = list(Response.objects.filter(question__hit_items__hit__batch=batch,
                                            counted=True)
                    .values_list("question_id", "worker_id", "choices").distinct())
        if not rows:
            continue
        items, workers, answers, qids, wids = _arrays(rows)
        batch.alpha = krippendorff_alpha(items, workers, answers, len(qids),
                                                     len(wids))
        batch.n_answers = len(rows)
        batch.save(update_fields=["alpha", "n_answers"])
        report.batch_alpha[batch.pk] = batch.alpha
    return report


def _controls(qids: list[int]) -> dict[int, str]:
    """Item index → known answer key of the control questions among `qids`."""
    index = {q: i for i, q in enumerate(qids)}
    return {index[q]: aggregation.answer_key(answer) for q, answer in
            Question.objects.filter(pk__in=qids, control_answer__isnull=False)
            .values_list("pk", "control_answer")}


def _count_controls(items: np.ndarray, workers: np.ndarray, answers: list[str],
                    wids: list[int], known: dict[int, str], n: Counter[int],
                    right: Counter[int], report: QualityReport) -> None:
    for i, w, a in zip(items.tolist(), workers.tolist(), answers, strict=True):
        if i in known:
            n[wids[w]] += 1
            right[wids[w]] += int(a == known[i])
            report.control_answers += 1
            report.control_right += int(a == known[i])


def control_outliers(min_answers: int | None = None,
                     margin: float | None = None) -> list[CrowdWorker]:
    """Unblocked workers far below the crowd on control questions.

    "Far below": with at least `min_answers` control answers, the upper end of the
    worker's 90% Wilson interval lies more than `margin` below the crowd's pooled
    control accuracy. A worker's own answers are left out of the crowd's figure.
    """
    from .accuracy import _wilson

    min_answers = settings.KBPO_CONTROL_BLOCK_MIN_ANSWERS if min_answers is None \
        else min_answers
    margin = settings.KBPO_CONTROL_BLOCK_MARGIN if margin is None else margin
    rows = list(CrowdWorker.objects.filter(control_answers__gt=0))
    total = sum(w.control_answers for w in rows)
    right = sum(w.control_right for w in rows)
    out = []
    for w in rows:
        if w.blocked or w.control_answers < min_answers or total - w.control_answers <= 0:
            continue
        crowd = (right - w.control_right) / (total - w.control_answers)
        _, hi = _wilson(w.control_right / w.control_answers, w.control_answers, 1.6448536)
        if hi < crowd - margin:
            out.append(w)
    return out


def in_ids(ids: list[int]) -> list[int] | RawSQL:
    """The right-hand side of ``field__in`` for a long list of ids: on Postgres one
    array parameter (Django prepares an IN list element by element: ~0.1 s per 20k)."""
    if connection.vendor == "postgresql":
        return RawSQL("SELECT unnest(%s::bigint[])", [list(ids)])
    return ids


def pair_types(qids: list[int]) -> dict[int, tuple[str, str, str]]:
    """The (subject type, object type, corpus schema) of each question's pair, by
    question id; a question the database lacks is left out. Fixed once the question
    exists (a pair's types are set when it is ingested, a corpus's schema when it is
    made), so a caller may keep them."""
    return {pk: (s, o, schema) for pk, s, o, schema in
            Question.objects.filter(pk__in=in_ids(qids))
            .values_list("pk", "pair__subject_type", "pair__object_type", "corpus__schema")}


def offered(qids: list[int], types: Mapping[int, tuple] | None = None,
            strata_of: dict[tuple, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per item, how many answers its question offered (`offered_relations` of its
    corpus's schema and pair types, and no_relation: 97 on DocRED, whatever the types),
    and its stratum: items with the same pair types share one.

    A wrong answer is spread over the offered answers, not over every answer seen on
    the corpus (which would make one odd answer look far less likely than it is); the
    class shares are fitted per stratum (`aggregation.one_coin`). ``types``:
    `pair_types` of these questions if the caller kept them (read otherwise).
    ``strata_of``: the strata of questions before these, numbered (numbering goes on
    from them, and they are updated): one call on a list's head and one on its tail
    give the arrays of one call on the list.
    """
    if types is None:
        types = pair_types(qids)
    # Strata numbered in the order the questions first show them.
    strata_of = {} if strata_of is None else strata_of
    strata = np.fromiter((strata_of.setdefault(types.get(q, (None, None, None)),
                                               len(strata_of))
                          for q in qids), np.int64, len(qids))
    sizes = np.asarray([len(offered_relations(t[2], t[0], t[1])) + 1 if t[0] else 2
                        for t in strata_of], dtype=float)
    return (sizes[strata] if len(strata) else np.zeros(0)), strata


def offered_sets(strata_of: Mapping[tuple, int]) -> list[frozenset[str] | None]:
    """Per stratum numbered by `offered` (``strata_of``), the relations its questions
    offered: the page's options (`offered_relations`); None for questions whose pair
    types are unknown (gone from the database), which refuse no answer."""
    sets: list[frozenset[str] | None] = [None] * len(strata_of)
    for (subject, obj, schema), s in strata_of.items():
        if subject:
            sets[s] = frozenset(offered_relations(schema, subject, obj))
    return sets


def _within_offered(rows: list[tuple[int, int, list[str]]]
                    ) -> tuple[list[tuple[int, int, list[str]]], int, dict[int, tuple]]:
    """The rows whose answer is none or names only relations its question offered, and
    how many were not (the intake refuses those; one stored anyway must not reach the
    model), and the questions' `pair_types`."""
    types = pair_types(list({q for q, _, _ in rows}))
    allowed: dict[tuple, frozenset[str]] = {}
    kept = []
    for row in rows:
        t = types.get(row[0], (None, None, None))
        if t not in allowed:
            allowed[t] = frozenset(offered_relations(t[2], t[0], t[1])) if t[0] else frozenset()
        if not t[0] or set(row[2]) - {aggregation.NO_RELATION} <= allowed[t]:
            kept.append(row)
    return kept, len(rows) - len(kept), types


def _by_name(categories: list, shares: np.ndarray) -> dict[str, float]:
    """Shares per answer name: an answer key naming two relations ("a|b") counts for
    both."""
    out: dict[str, float] = {}
    for key, share in zip(categories, shares, strict=True):
        for name in str(key).split("|"):
            out[name] = out.get(name, 0.0) + float(share)
    return out


def _store_labels(items: np.ndarray, workers: np.ndarray, answers: list[str],
                 qids: list[int], n_workers: int, report: QualityReport,
                 known: dict[int, str] | None = None,
                 types: Mapping[int, tuple] | None = None) -> int:
    """Fit the lopsided one-coin model, store each label's posterior on it (the
    calibrated fit), and move hard labels to the configured aggregator's answer (the
    sharp fit for `lopsided`).

    An answer key holding two relations ("a|b") gives its probability to both.
    Control questions (`known`) anchor the workers' rates; they have no label.
    """
    strata_of: dict[tuple, int] = {}
    k, strata = offered(qids, types, strata_of=strata_of)
    sets = offered_sets(strata_of)
    # Two fits of one model: the hard label from sharp per-type miss rates (blind spots
    # found), the stored posterior, which the estimators sum, from calibrated ones
    # (aggregation.SOFT_TYPE_SHRINK), fitted as estimation/correction.py refits it. The
    # sharp fit is the one the labels had before, so no label moves for this.
    fit = aggregation.one_coin(items, workers, answers, len(qids), n_workers, n_options=k,
                               known=known or None, none=aggregation.NO_RELATION,
                               strata=strata, type_shrink=aggregation.SOFT_TYPE_SHRINK,
                               offered=sets)
    method = settings.KBPO_LABEL_AGGREGATION
    hard = None
    if method == "lopsided":
        hard = aggregation.one_coin(items, workers, answers, len(qids), n_workers,
                                    n_options=k, known=known or None,
                                    none=aggregation.NO_RELATION, strata=strata,
                                    type_shrink=aggregation.LABEL_TYPE_SHRINK, offered=sets)
    report.coin_labels.update({q: str((hard or fit).labels[i]).split("|")
                               for i, q in enumerate(qids)})
    if method == "one_coin":
        hard = aggregation.one_coin(items, workers, answers, len(qids), n_workers,
                                    n_options=k, known=known or None, strata=strata)
    prior = _by_name(fit.categories, fit.priors)
    # Each label's pair type's shares: the prior its posterior was computed with.
    type_shares = aggregation.item_priors(fit.params, fit.priors, strata, len(qids))
    labels = {lab.question_id: lab for lab in
              PairLabel.objects.select_for_update().filter(question_id__in=qids)}
    rows = [i for i, q in enumerate(qids) if q in labels]
    votes = [aggregation.answer_key(labels[qids[i]].majority or labels[qids[i]].predicates)
             for i in rows]
    if hard is None:
        targets = votes
    else:
        current = [aggregation.answer_key(labels[qids[i]].predicates) for i in rows]
        targets = aggregation.hard_labels(hard.posterior[rows], hard.categories, current,
                                          settings.KBPO_LABEL_SWITCH_MARGIN)
    given: dict[int, list[str]] = {}
    for i, a in zip(items.tolist(), answers, strict=True):
        given.setdefault(i, []).append(a)
    changed = []
    fields = ["predicates", "majority", "method", "support", "posterior", "prior",
              "type_prior", "p_correct"]
    for i, vote, target in zip(rows, votes, targets, strict=True):
        label = labels[qids[i]]
        before = [getattr(label, f) for f in fields]
        if not label.majority:
            label.majority = label.predicates
        old = aggregation.answer_key(label.predicates)
        if target != old:
            label.predicates = target.split("|")
            answered = given.get(i, [])
            label.support = answered.count(target) / len(answered) if answered else 0.0
            label.method = method if target != vote else (
                "plurality" if aggregation.majority_vote(
                    [v.split("|") for v in answered]).tied else "majority")
            report.relabelled.append((label.pair_id, old, target))
        post = _by_name(fit.categories, fit.posterior[i])
        posterior = {k: round(min(v, 1.0), 6) for k, v in post.items() if v > 1e-6}
        report.reposterior += posterior != label.posterior
        label.posterior = posterior
        label.prior = {k: round(prior[k], 6) for k in label.posterior}
        own = _by_name(fit.categories, type_shares[i])
        label.type_prior = {k: round(own[k], 6) for k in label.posterior}
        label.p_correct = float(fit.posterior[i][fit.categories.index(target)]) \
            if target in fit.categories else 0.0
        if [getattr(label, f) for f in fields] != before:
            # Only rows that moved are written: each write stamps the row for the
            # scoring's next read (label_table.py), which then reads only those.
            changed.append(label)
    PairLabel.objects.bulk_update(changed, fields, batch_size=500)
    return len(changed)
