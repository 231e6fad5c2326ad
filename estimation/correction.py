"""The noise correction's own uncertainty in production: a bootstrap of the fitted
parameters.

The soft labels stored by the quality pass rest on the workers' fitted rates and the
class shares, estimated from a finite number of questions. Here the corpus's relation
answers are reloaded and the quality pass's lopsided one-coin model fitted once; then
each replicate draws the questions with replacement (labelled and control questions
separately, `aggregation.parameter_replicates`), refits the model on them (EM started at the
fit's posterior) and computes the posterior of the *original* answers under the
refitted parameters. Each replicate's posteriors become soft-label rows;
`noise.correction_variance` recomputes the estimates on them and `noise.widen` adds
their spread to the intervals. Only the parameters vary between replicates: each
pair's own answer noise is already in its probability and in the label bounds. The
generator is seeded from the answers themselves, so a recompute on the same data gives
the same intervals.

The refitted parameters are stored (`models.CorrectionFit`) and refitted only when the
answers grew by more than KBPO_SOFT_LABEL_REFIT_GROWTH, changed, brought an answer the
fit does not know, or a worker it does not know gave more than
KBPO_SOFT_LABEL_NEW_WORKER_ANSWERS answers (docs/internals/noisy-crowds.md §2); in between each
replicate's posterior of the current answers is one E-step under its stored parameters,
a worker it does not know taking a fitted worker's rates drawn per replicate, and a
process computes it only for the labels whose inputs changed since its last run
(estimation/correction_rows.py).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import CharField, F, Func, TextField
from django.db.models.functions import Cast

from annotations.models import CrowdWorker, Question, Response, TaskKind
from annotations.quality.accuracy import Decoder, RelationAnswers
from annotations.quality.aggregation import (
    NO_RELATION,
    SOFT_TYPE_SHRINK,
    OneCoinParams,
    answer_key,
    answers_of,
    category_codes,
    coin_posterior,
    item_priors,
    within_offered,
)
from annotations.quality.label_table import (
    LabelTable,
    horizon_and_deletions,
    kept_rows_gone,
    label_table,
)
from annotations.quality.label_table import forget as forget_labels
from annotations.quality.rates import weak_relations, with_unseen_workers, yes_cells
from annotations.quality.workers import offered, offered_sets, pair_types
from kbpo.core.kept import Kept
from kbpo.core.models import Corpus

from .core.noise import SoftLabels
from .correction_rows import answer_sums, mix, replicate_rows, rows_key, soft_rows
from .correction_rows import forget as forget_rows
from .crowd_model import fit_crowd
from .models import CorrectionFit


@dataclass
class _Answers:
    """The corpus's relation answers in id order, indexed for the model."""

    items: np.ndarray    # question index per answer (order of first appearance)
    workers: np.ndarray  # worker index per answer (order of first appearance)
    keys: list[str]      # answer keys
    qids: list[int]      # question id per question index
    wids: list[int]      # worker id per worker index
    types: Mapping[int, tuple]  # question id → its pair's types (`workers.pair_types`)
    key_ids: np.ndarray  # per answer: its key's index in key_names
    key_names: list[str]  # the distinct answer keys, in order of first appearance
    # What is derived from the answers, for the first ones (kept with them: `_Seen`).
    memo: dict = field(default_factory=dict)

    def digest(self, n: int) -> str:
        """A digest of the first ``n`` answers (question, worker, answer)."""
        kept = self.memo.get(("digest", n))
        if kept is None:
            kept = self.memo[("digest", n)] = self._digest(n)
        return kept

    def _digest(self, n: int) -> str:
        h = hashlib.blake2b(digest_size=32)
        h.update(np.asarray(self.qids, np.int64)[self.items[:n]].tobytes())
        h.update(np.asarray(self.wids, np.int64)[self.workers[:n]].tobytes())
        h.update("\n".join(self.keys[:n]).encode())
        return h.hexdigest()


@dataclass(frozen=True)
class _Seen:
    """The relation answers of one corpus this process has read (`_answers`), in id
    order, and the horizon of the snapshot they were read in (label_table.py)."""

    watermark: int  # the largest response id read
    horizon: int    # rows stamped at or above it are read again
    pks: np.ndarray  # response ids, ascending
    q_index: dict[int, int]
    w_index: dict[int, int]
    items: np.ndarray
    workers: np.ndarray
    keys: list[str]
    key_ids: np.ndarray  # per answer: its key's number in key_index
    key_index: dict[str, int]  # the distinct keys, numbered in order of first appearance
    # Question id → its pair's (subject, object) types, as `workers.offered` needs them:
    # fixed once a question exists, so only new questions' are read (`_answers`).
    types: dict[int, tuple]
    # What was derived from the first answers (`_Answers.memo`): still true of them.
    memo: dict = field(default_factory=dict)
    deletions: int = -1  # `horizon_and_deletions`'s count when read


# Corpora whose answers this process keeps (a worker serves one or two).
_SEEN: Kept[int, _Seen] = Kept(2)


# The corpus's relation answers (id, question, worker, choices as text, counted); _SINCE:
# only those a transaction at or above a horizon wrote (Response.changed_xid, set by a
# trigger). The rows read since include answers that stopped counting (a rejected
# assignment's, crowd/discount.py), so that `_grown` sees them change; a kept answer
# deleted or moved off the corpus's relation questions is found by `kept_rows_gone` (a
# question never changes corpus or kind).
_ROWS_SQL = (
    'SELECT r.id, r.question_id, r.worker_id, r.choices::text, r.counted FROM "{response}" r '
    'JOIN "{question}" q ON q.id = r.question_id WHERE q.corpus_id = %s AND q.kind = %s')
_SINCE = " AND (r.changed_xid IS NULL OR r.changed_xid >= %s) ORDER BY r.id"


def _sql(template: str) -> str:
    return template.format(response=Response._meta.db_table, question=Question._meta.db_table)


def forget_answers(corpus_id: int | None = None) -> None:
    """Drop the answers, posteriors and labels kept for a corpus (None: every corpus),
    e.g. for a full rebuild."""
    _SEEN.forget(corpus_id)
    _PARSED.forget(corpus_id)
    forget_rows(corpus_id)
    forget_labels(corpus_id)


def _grown(seen: _Seen, rows: list[tuple], horizon: int) -> _Seen | None:
    """``seen`` with ``rows`` (id, question, worker, text, counted; written since its
    horizon, in id order) added, or None when one of them is not a new answer: an
    edited one, a kept one that stopped counting, or a lower id committed late (the
    answers' order of first appearance would change: read them all). A row that does
    not count and was never kept is skipped."""
    decode = Decoder()
    dropped = np.asarray([r[0] for r in rows if not r[4]], np.int64)
    if len(dropped) and np.isin(dropped, seen.pks).any():
        return None
    rows = [r for r in rows if r[4]]
    old = [r for r in rows if r[0] <= seen.watermark]
    if old:
        # Re-read because their writer was still running at the last read, or one
        # running elsewhere held the horizon back: fine if they are exactly as kept.
        ids = np.asarray([r[0] for r in old], np.int64)
        pos = np.minimum(np.searchsorted(seen.pks, ids), len(seen.pks) - 1)
        if len(seen.pks) == 0 or (seen.pks[pos] != ids).any():
            return None
        qids, wids = np.asarray(list(seen.q_index), np.int64), \
            np.asarray(list(seen.w_index), np.int64)
        for (_, q, w, text, _), p in zip(old, pos.tolist(), strict=True):
            if qids[seen.items[p]] != q or wids[seen.workers[p]] != w \
                    or seen.keys[p] != decode(text)[1]:
                return None
    new = [r for r in rows if r[0] > seen.watermark]
    q_index, w_index = dict(seen.q_index), dict(seen.w_index)
    key_index = dict(seen.key_index)
    items = [q_index.setdefault(q, len(q_index)) for _, q, _, _, _ in new]
    workers = [w_index.setdefault(w, len(w_index)) for _, _, w, _, _ in new]
    keys = [decode(r[3])[1] for r in new]
    key_ids = [key_index.setdefault(k, len(key_index)) for k in keys]
    return _Seen(new[-1][0] if new else seen.watermark, horizon,
                 np.concatenate([seen.pks, np.asarray([r[0] for r in new], np.int64)]),
                 q_index, w_index, np.concatenate([seen.items, np.asarray(items, np.int64)]),
                 np.concatenate([seen.workers, np.asarray(workers, np.int64)]),
                 seen.keys + keys,
                 np.concatenate([seen.key_ids, np.asarray(key_ids, np.int64)]), key_index,
                 seen.types, dict(seen.memo))


def _kept(corpus_id: int, horizon: int, deletions: int = -1) -> _Seen | None:
    """The answers kept for the corpus with the rows written since they were read, if
    those are only new answers and the count agrees (a deleted answer); else None."""
    if connection.vendor != "postgresql":
        return None  # no stamps to read the changes by: read every row
    seen = _SEEN.kept(corpus_id)
    if seen is None:
        return None
    with connection.cursor() as cursor:
        cursor.execute(_sql(_ROWS_SQL) + _SINCE,
                       [corpus_id, TaskKind.RELATION.value, seen.horizon])
        rows = cursor.fetchall()
    grown = _grown(seen, rows, horizon)
    if grown is not None and kept_rows_gone(Response._meta.db_table, seen.pks,
                                            np.asarray([r[0] for r in rows], np.int64),
                                            seen.horizon, deletions != seen.deletions):
        grown = None
    if grown is None:  # the answers changed (the labels are checked on their own)
        _SEEN.forget(corpus_id)
        forget_rows(corpus_id)
    return grown


def _answers(corpus: Corpus) -> _Answers:
    """The corpus's relation answers. Rows read before by this process are not read
    again while they are unchanged (`_kept`): only the rows written since."""
    horizon = deletions = -1
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # First: the reads below see what they promise.
            horizon, deletions = horizon_and_deletions(cursor, Response._meta.db_table)
    seen = _kept(corpus.pk, horizon, deletions)
    if seen is None:
        # The choices as JSON text, decoded once per distinct text (a crowd gives few).
        rows = (Response.objects.filter(question__corpus=corpus, counted=True,
                                        question__kind=TaskKind.RELATION)
                .annotate(text=Cast("choices", TextField()))
                .values_list("pk", "question_id", "worker_id", "text", "counted")
                .order_by("pk"))
        empty = _Seen(0, horizon, np.zeros(0, np.int64), {}, {}, np.zeros(0, np.int64),
                      np.zeros(0, np.int64), [], np.zeros(0, np.int64), {}, {})
        seen = _grown(empty, list(rows.iterator(chunk_size=5000)), horizon)
        assert seen is not None  # every row is new to an empty read
    new = [q for q in seen.q_index if q not in seen.types]
    if new:
        # In the same snapshot as the answers; a question gone meanwhile has no types,
        # as `offered` treats one it cannot find.
        found = pair_types(new)
        seen.types.update((q, found.get(q, (None, None, None))) for q in new)
    if connection.vendor == "postgresql":
        for a in (seen.items, seen.workers, seen.pks, seen.key_ids):
            a.flags.writeable = False  # shared with later reads
        seen = replace(seen, deletions=deletions)
        _SEEN.keep(corpus.pk, seen)
    return _Answers(seen.items, seen.workers, list(seen.keys), list(seen.q_index),
                    list(seen.w_index), seen.types, seen.key_ids, list(seen.key_index),
                    seen.memo)


@dataclass
class PendingFit:
    """Replicate parameters refitted by a load, to be stored after its read-only snapshot."""

    corpus: Corpus
    n_answers: int
    n_workers: int
    digest: str
    params: list[OneCoinParams]

    def store(self) -> None:
        p0 = self.params[0]
        CorrectionFit.objects.update_or_create(corpus=self.corpus, defaults={
            "n_answers": self.n_answers, "n_workers": self.n_workers, "digest": self.digest,
            "categories": list(p0.categories), "none_index": p0.none_index,
            "params": self.payload})

    @cached_property
    def payload(self) -> bytes:
        """The parameters as stored (made once: `_warm` keeps rows keyed by their digest)."""
        p0 = self.params[0]
        buf = io.BytesIO()
        arrays: dict[str, np.ndarray] = {}
        for k, p in enumerate(self.params):
            for i, r in enumerate(p.rates):
                arrays[f"rate{k}_{i}"] = r
            arrays[f"priors{k}"] = p.priors
            if p.stratum_shares is not None:
                arrays[f"shares{k}"] = p.stratum_shares
            if p.offered is not None:
                arrays[f"offered{k}"] = p.offered
        # The model's setting too: a fit of another model (an upgrade that changed the
        # shrinkage) is refitted rather than reused.
        arrays["type_shrink"] = np.asarray(p0.type_shrink, dtype=float)
        arrays["model"] = np.asarray(FIT_MODEL)
        np.savez(buf, **arrays)
        return buf.getvalue()


# The crowd model's version in stored fits: 2 added false yes per worker and relation
# (`rates.false_yes_rates`), 3 the offered relations from the schema rather than the
# answers (`workers.offered_sets`); a fit stored by an older model is refitted.
FIT_MODEL = 3
# Per corpus, the stored parameters as last parsed: (digest of their bytes, replicates,
# parameters), so that a run parses them (and on Postgres reads them) only when changed.
_PARSED: Kept[int, tuple[str, int, list[OneCoinParams]]] = Kept(2)


def _stored_fit(corpus: Corpus) -> CorrectionFit | None:
    """The corpus's stored fit, with ``params_digest``: a digest of its parameters'
    bytes (on Postgres computed there, the bytes read only if `_stored` needs them)."""
    rows = CorrectionFit.objects.filter(corpus=corpus)
    if connection.vendor == "postgresql":
        return rows.defer("params").annotate(params_digest=Func(
            F("params"), function="md5", output_field=CharField())).first()
    fit = rows.first()
    if fit is not None:
        fit.params_digest = hashlib.md5(bytes(fit.params)).hexdigest()
    return fit


def _stored(fit: CorrectionFit, replicates: int) -> list[OneCoinParams]:
    kept = _PARSED.kept(fit.corpus_id)
    if kept is not None and kept[:2] == (fit.params_digest, replicates):
        return kept[2]
    out = _parsed(bytes(fit.params), list(fit.categories), fit.none_index, replicates)
    _PARSED.keep(fit.corpus_id, (fit.params_digest, replicates, out))
    return out


def _parsed(payload: bytes, categories: list, none_index: int, replicates: int
            ) -> list[OneCoinParams]:
    out: list[OneCoinParams] = []
    with np.load(io.BytesIO(payload)) as z:
        if ("type_shrink" in z and float(z["type_shrink"]) == SOFT_TYPE_SHRINK
                and "model" in z and int(z["model"]) == FIT_MODEL):
            for k in range(replicates):
                if f"priors{k}" not in z:
                    out = []
                    break
                rates = []
                while f"rate{k}_{len(rates)}" in z:
                    rates.append(z[f"rate{k}_{len(rates)}"])
                out.append(OneCoinParams(list(categories), tuple(rates), z[f"priors{k}"],
                                         z.get(f"shares{k}", None), none_index,
                                         SOFT_TYPE_SHRINK, z.get(f"offered{k}", None)))
    for p in out:  # kept: shared with later runs
        for a in (*p.rates, p.priors, p.stratum_shares, p.offered):
            if a is not None:
                a.flags.writeable = False
    return out


def _warm(corpus: Corpus, pending: PendingFit, ans: _Answers, n_options: np.ndarray,
          strata: np.ndarray, known: dict[int, str], rows: np.ndarray, pair_of: np.ndarray,
          codes: Mapping[str, int], sets: list[frozenset[str] | None]) -> None:
    """After a refit: the rows the next run computes under the refitted parameters once
    stored (their E-step on every labelled question, as `_reusable` and `_stored_rows`
    will), kept for it — the refit costs seconds anyway; the next run then computes
    only the new questions'. Kept by the stored bytes' digest: unused if not stored."""
    p0 = pending.params[0]
    n = len(pending.params)
    params = _parsed(pending.payload, list(p0.categories), p0.none_index, n)
    shares = params[0].stratum_shares if params else None
    if len(params) != n or not set(known.values()) <= set(p0.categories) or (
            shares is not None and len(strata) and int(strata.max()) >= len(shares)):
        return  # `_reusable` would not take them
    digest = hashlib.md5(pending.payload).hexdigest()
    _PARSED.keep(corpus.pk, (digest, n, params))
    base = int(pending.digest[:15], 16)
    fit = CorrectionFit(corpus=corpus, digest=pending.digest)
    fit.params_digest = digest
    _stored_rows(corpus.pk, fit, [with_unseen_workers(p, len(ans.wids), (base, k))
                                  for k, p in enumerate(params)],
                 ans, n_options, strata, known, rows, pair_of, codes, sets)


def _reusable(fit: CorrectionFit | None, ans: _Answers, replicates: int,
              strata: np.ndarray, known: dict[int, str]) -> list[OneCoinParams]:
    """The stored replicates' parameters, if they still apply to these answers: the same
    first answers, at most KBPO_SOFT_LABEL_REFIT_GROWTH more of them, no answer key or
    pair-type stratum the fit does not know, and no worker it does not know with more
    than KBPO_SOFT_LABEL_NEW_WORKER_ANSWERS answers. Else none (refit).

    Workers the fit has not seen (a crowd on MTurk brings new ones in most batches, and
    each refit costs seconds) take, in each replicate, the rates of a fitted worker
    drawn for that replicate (`with_unseen_workers`): the replicates then disagree on
    how much such a worker's answers weigh, as much as the crowd's workers differ."""
    if fit is None or fit.n_answers == 0:
        return []
    grown = len(ans.keys) - fit.n_answers
    if grown < 0 or grown > settings.KBPO_SOFT_LABEL_REFIT_GROWTH * fit.n_answers:
        return []
    cats = set(fit.categories)
    if not set(ans.key_names) | set(known.values()) <= cats:
        return []
    if len(ans.wids) > fit.n_workers:
        unseen = np.bincount(ans.workers, minlength=len(ans.wids))[fit.n_workers:]
        if int(unseen.max()) > settings.KBPO_SOFT_LABEL_NEW_WORKER_ANSWERS:
            return []
    if ans.digest(fit.n_answers) != fit.digest:
        return []
    params = _stored(fit, replicates)
    shares = params[0].stratum_shares if params else None
    if shares is not None and len(strata) and int(strata.max()) >= len(shares):
        return []
    # Seeded by the fit and the replicate: the same draws in every run until a refit.
    base = int(fit.digest[:15], 16)
    return [with_unseen_workers(p, len(ans.wids), (base, k)) for k, p in enumerate(params)]


def _offered(ans: _Answers) -> tuple[np.ndarray, np.ndarray]:
    """`workers.offered` of the answers' questions, going on from what it gave for the
    first of them (kept with the answers: the same arrays, read for the new only)."""
    n = len(ans.qids)
    m, strata_of, n_options, strata = ans.memo.get("offered", (0, {}, np.zeros(0),
                                                                np.zeros(0, np.int64)))
    if m > n:
        m, strata_of, n_options, strata = 0, {}, np.zeros(0), np.zeros(0, np.int64)
    if m < n or not n:
        strata_of = dict(strata_of)
        more_options, more = offered(ans.qids[m:], ans.types, strata_of=strata_of)
        n_options = np.concatenate([n_options, more_options])
        strata = np.concatenate([strata, more])
        ans.memo["offered"] = (n, strata_of, n_options, strata)
    return n_options, strata


def _question_signs(ans: _Answers, n_options: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """Per question, a 64-bit digest of what its posterior is computed from under fixed
    parameters: its answers (worker, answer) in order, its options and its stratum. The
    answers' part is kept with them and extended by the new answers only."""
    prev = ans.memo.get("sums")
    if prev is not None and prev.n_answers > len(ans.items):
        prev = None
    sums = answer_sums(prev, ans.items, ans.workers, ans.key_ids, len(ans.qids))
    ans.memo["sums"] = sums
    k = np.asarray(n_options, float)
    return mix(sums.sums ^ mix(k.view(np.uint64) ^ mix(strata)))


def _stored_rows(corpus_id: int, fit: CorrectionFit, params: list[OneCoinParams],
                 ans: _Answers, n_options: np.ndarray, strata: np.ndarray,
                 known: dict[int, str], rows: np.ndarray, pair_of: np.ndarray,
                 codes: Mapping[str, int], sets: list[frozenset[str] | None]) -> list[SoftLabels]:
    """Each replicate's soft-label rows of the labels (question index ``rows``, pair
    ``pair_of``) under its stored parameters: an E-step (`coin_posterior`), the control
    answers set. A pair whose label's question, answers, options, stratum and control
    answer are those this process computed its rows from, under the same parameters,
    keeps them (`correction_rows.replicate_rows`: the same floats, as each question's
    posterior is computed from its own answers alone); only the others are computed.
    Every replicate has the fit's categories (`_stored`)."""
    cats = params[0].categories
    key = rows_key(f"{fit.params_digest}/{fit.digest}/{len(params)}", cats, codes)
    qids = np.asarray(ans.qids, np.int64)
    known_code = np.zeros(len(qids), np.int64)  # 0: not a control, else 1 + its answer
    for i, answer in known.items():
        known_code[i] = 1 + cats.index(answer)
    label_signs = mix(_question_signs(ans, n_options, strata)[rows]
                      ^ mix(qids[rows].astype(np.uint64) ^ mix(known_code[rows])))

    def compute(todo: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        # The posteriors of these labels' questions (each once), from their answers alone.
        questions, of_label = np.unique(rows[todo], return_inverse=True)
        keep = np.zeros(len(qids), dtype=bool)
        keep[questions] = True
        mask, sub_items = answers_of(ans.items, keep)
        at = np.flatnonzero(mask)
        sub_keys = [ans.keys[j] for j in at.tolist()]
        # An answer outside its question's offered relations is left out, as in the fit.
        inside = within_offered(sub_keys, np.asarray(strata)[questions][sub_items], sets,
                                NO_RELATION)
        if not inside.all():
            at, sub_items = at[inside], sub_items[inside]
            sub_keys = [k for k, ok in zip(sub_keys, inside.tolist(), strict=True) if ok]
        obs = category_codes(cats, sub_keys)
        sub_known = {int(j): known[int(q)] for j, q in enumerate(questions) if int(q) in known}
        out = []
        for p in params:
            post = coin_posterior(p, sub_items, ans.workers[at], sub_keys, len(questions),
                                  n_options=np.asarray(n_options, float)[questions],
                                  strata=np.asarray(strata)[questions], obs=obs,
                                  known=sub_known)
            out.append((post[of_label.ravel()],
                        item_priors(p, p.priors, strata[rows[todo]], len(todo))))
        return out

    return replicate_rows(corpus_id if connection.vendor == "postgresql" else None, key,
                          cats, [p.priors for p in params], pair_of, label_signs, compute,
                          codes)


def _weak_spots(params: OneCoinParams, wids: list[int]) -> list[dict]:
    """The relations the crowd says where they do not hold, and the workers most biased
    on each (`rates.weak_relations`), under a fit's parameters; [] for a fit without
    false-yes rates per worker and relation."""
    fp = yes_cells(params.rates)
    if fp is None:
        return []
    names = dict(CrowdWorker.objects.filter(pk__in=wids).values_list("pk", "external_id"))
    return weak_relations(fp, params.categories, params.none_index,
                          [names.get(w, str(w)) for w in wids], np.ones(len(wids), bool))


def _answers_and_controls(corpus: Corpus) -> tuple[_Answers, dict[int, str]]:
    """The corpus's relation answers (`_answers`) and the known answer key of each
    control question among them."""
    ans = _answers(corpus)
    if not len(ans.qids):
        return ans, {}
    index = set(ans.qids)
    # The corpus's controls (few), kept where answered: filtered here rather than by
    # sending every answered question's id.
    return ans, {q: answer_key(a) for q, a in
                 Question.objects.filter(corpus=corpus, kind=TaskKind.RELATION,
                                         control_answer__isnull=False)
                 .values_list("pk", "control_answer") if q in index}


def _relation_answers(ans: _Answers, controls: dict[int, str]) -> RelationAnswers:
    return RelationAnswers(np.asarray(ans.qids, np.int64)[ans.items],
                           np.asarray(ans.wids, np.int64)[ans.workers], ans.keys, controls,
                           ans.key_ids, ans.key_names)


def relation_answers(corpus: Corpus) -> RelationAnswers:
    """The corpus's relation answers and controls as `accuracy.crowd_accuracy` takes them,
    through the answers this process keeps (only rows written since its last read are
    read), for a recompute that runs no replicates."""
    return _relation_answers(*_answers_and_controls(corpus))


def soft_label_replicates(corpus: Corpus, replicates: int, codes: Mapping[str, int],
                          read: list[RelationAnswers] | None = None,
                          labels: LabelTable | None = None, weak: list | None = None
                          ) -> tuple[list[SoftLabels], PendingFit | None]:
    """Soft labels of the corpus's labelled pairs under ``replicates`` bootstrap
    replicates of the model's parameters (fewer than 2, or no answers: none), and the
    refitted parameters to store when they were refitted (else None);
    ``codes``: predicate name → the estimators' code. ``read``: a list that receives
    the relation answers read, if they were (e.g. for `crowd_accuracy`). ``labels``:
    the corpus's labels if already read (`label_table`). ``weak``: a list that receives
    the fit's weak relations (`_weak_spots`), for the report's crowd section."""
    if replicates < 2:
        return [], None
    ans, controls = _answers_and_controls(corpus)
    items, workers, answers, qids = ans.items, ans.workers, ans.keys, ans.qids
    n_workers = len(ans.wids)
    if read is not None:
        read.append(_relation_answers(ans, controls))
    if not len(items):
        return [], None
    by_id = np.argsort(np.asarray(qids, np.int64), kind="stable")
    sorted_q = np.asarray(qids, np.int64)[by_id]
    # Each control's question index (every control is among the answered questions).
    control_at = by_id[np.searchsorted(sorted_q, np.fromiter(controls, np.int64,
                                                             len(controls)))]
    known = dict(zip(control_at.tolist(), controls.values(), strict=True))
    # The labels of these questions: their rows among the questions, and their pairs.
    labels = label_table(corpus.pk) if labels is None else labels
    at = np.minimum(np.searchsorted(sorted_q, labels.questions), len(qids) - 1)
    mine = sorted_q[at] == labels.questions
    rows, pair_of = by_id[at[mine]], labels.pairs[mine]
    # The model behind the stored posteriors (offered answers, shares per pair type,
    # the calibrated miss rates of the quality pass's soft fit).
    n_options, strata = _offered(ans)
    sets = offered_sets(ans.memo["offered"][1])  # what each pair type's page offered
    stored_fit = _stored_fit(corpus)
    stored = _reusable(stored_fit, ans, replicates, strata, known)
    if stored:
        # Stored parameters: only each replicate's E-step on the current answers.
        assert stored_fit is not None
        if weak is not None:
            weak.append(_weak_spots(stored[0], ans.wids))
        return _stored_rows(corpus.pk, stored_fit, stored, ans, n_options, strata, known,
                            rows, pair_of, codes, sets), None
    model = fit_crowd(items, workers, answers, len(qids), n_workers, n_options=n_options,
                      strata=strata, known=known, replicates=replicates, offered=sets)
    fit, reps, fits = model.fit, model.replicates, model.params
    cats = fit.categories  # replicates keep them: an answer a replicate lacks stays known
    pending = PendingFit(corpus, len(answers), n_workers, ans.digest(len(answers)), fits) \
        if len(fits) == replicates else None
    if weak is not None and fits:
        weak.append(_weak_spots(fits[0], ans.wids))
    if pending is not None and connection.vendor == "postgresql":
        _warm(corpus, pending, ans, n_options, strata, known, rows, pair_of, codes, sets)
    return [soft_rows(cats, post[rows], priors, own[rows], pair_of, codes)
            for post, priors, own in reps], pending
