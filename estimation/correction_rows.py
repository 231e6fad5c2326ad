"""The noise correction's soft-label rows per replicate (estimation/correction.py), and
the rows a process keeps between runs so that only the pairs whose inputs changed are
computed again.

Under a replicate's stored parameters a pair's rows depend on its labels' questions
alone: each question's posterior on its own answers, options and stratum
(`aggregation.coin_posterior`), whether it is a control and its known answer, and its
type's shares (`aggregation.item_priors`). So a pair whose labels, questions and
those questions' inputs are as this process last saw them, under the same parameters,
keeps its rows (the same floats); the others are computed, on their own, and merged
in. An incremental run thus computes the posteriors of the new questions only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from annotations.quality.aggregation import NO_RELATION
from kbpo.core.kept import Kept

from .core.noise import SoftLabels

_FIELDS = ("pairs", "predicates", "probs", "priors", "type_priors")
# Per replicate, for the given label positions (in label order): their posteriors and
# the type shares those were computed with (labels × categories).
Compute = Callable[[np.ndarray], list[tuple[np.ndarray, np.ndarray]]]


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a well-spread 64-bit digest of each value."""
    x = np.asarray(x).astype(np.uint64, copy=True)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@dataclass(frozen=True)
class AnswerSums:
    """Per question, a digest of its answers (worker, answer) in order, summed as the
    answers come: only the answers added since are digested again (`answer_sums`)."""

    n_answers: int      # the answers they cover (the first ones, in id order)
    counts: np.ndarray  # answers per question
    sums: np.ndarray    # per question: the sum (mod 2^64) of its answers' digests


def answer_sums(prev: AnswerSums | None, items: np.ndarray, workers: np.ndarray,
                key_ids: np.ndarray, n_items: int) -> AnswerSums:
    """``prev`` (the sums of the first answers of these) extended to every answer."""
    start = 0 if prev is None else prev.n_answers
    counts = np.zeros(n_items, np.int64)
    sums = np.zeros(n_items, np.uint64)
    if prev is not None:
        counts[:len(prev.counts)] = prev.counts
        sums[:len(prev.sums)] = prev.sums
    it = np.asarray(items[start:], np.int64)
    if len(it):
        order = np.argsort(it, kind="stable")
        sorted_it = it[order]
        first = np.searchsorted(sorted_it, sorted_it, side="left")
        rank = np.empty(len(it), np.int64)
        rank[order] = np.arange(len(it)) - first  # the answer's place among the new
        rank += counts[it]
        code = (np.asarray(workers[start:]).astype(np.uint64) << np.uint64(32)) \
            ^ (np.asarray(key_ids[start:]).astype(np.uint64) << np.uint64(16)) \
            ^ rank.astype(np.uint64)
        np.add.at(sums, it, mix(code))  # wraps mod 2^64
        counts += np.bincount(it, minlength=n_items)
    return AnswerSums(len(items), counts, sums)


def soft_rows(categories: list, posterior: np.ndarray, priors: np.ndarray,
              type_priors: np.ndarray, pair_of: np.ndarray,
              predicate_codes: Mapping[str, int]) -> SoftLabels:
    """Soft-label rows per (pair, predicate), as the quality pass stores them: an answer
    key naming two relations ("a|b") gives its probability to both. ``priors``: the
    corpus-wide class shares; ``type_priors`` (labels × categories): each label's pair
    type's, with which its posterior was computed (`item_priors`)."""
    # One entry per (category, predicate code) it names, codes unknown to the
    # estimators left out; rows are made entry by entry, labels in order within each.
    cat, code = [], []
    for c, key in enumerate(categories):
        for name in str(key).split("|"):
            k = -1 if name == NO_RELATION else predicate_codes.get(name, -2)
            if k != -2:
                cat.append(c)
                code.append(k)
    if not cat:
        z = np.zeros(0)
        return SoftLabels(z.astype(np.int64), z.astype(np.int64), z, z, z)
    cats = np.asarray(cat, np.int64)
    # A code's prior adds the shares of every category naming it (per label: its type's).
    names, of_entry = np.unique(np.asarray(code, np.int64), return_inverse=True)
    of_entry = of_entry.ravel()
    share = np.bincount(of_entry, weights=np.asarray(priors, float)[cats])
    own = np.zeros((len(names), len(posterior)))
    for e in range(len(cats)):  # in entry order: the sums add as the categories come
        own[of_entry[e]] += type_priors[:, cats[e]]
    by_cat = np.ascontiguousarray(posterior.T)
    entry, label = np.nonzero(by_cat[cats] > 1e-6)  # entry-major: the rows' order
    k_of = of_entry[entry]
    # Rows of one (pair, predicate) from several answer keys or labels add up, as
    # stored posteriors do, in the rows' order; each keeps its first row's priors.
    # Cells (pair, predicate) numbered in the order of both: no sort of the rows.
    pairs, rank = np.unique(np.asarray(pair_of, np.int64), return_inverse=True)
    cell = rank.ravel()[label] * len(names) + k_of
    size = len(pairs) * len(names)
    hit = np.flatnonzero(np.bincount(cell, minlength=size))
    prob = np.minimum(np.bincount(cell, weights=by_cat[cats[entry], label],
                                  minlength=size)[hit], 1.0)
    first = np.full(size, len(cell))
    np.minimum.at(first, cell, np.arange(len(cell)))
    first = first[hit]
    return SoftLabels(pairs[hit // len(names)], names[hit % len(names)], prob,
                      share[k_of[first]], own[k_of[first], label[first]])


@dataclass(frozen=True)
class _Rows:
    """One corpus's replicate rows as last computed, with what each pair's came from."""

    key: str             # the parameters, categories and codes they were computed under
    pairs: np.ndarray    # the labelled pairs, sorted
    signs: np.ndarray    # per pair: a digest of its label's inputs (`replicate_rows`)
    reps: list[SoftLabels]   # per replicate, rows by (pair, predicate)
    starts: list[np.ndarray]  # per replicate: each pair's first row, and the row count


_ROWS: Kept[int, _Rows] = Kept(2)


def forget(corpus_id: int | None = None) -> None:
    """Drop the rows kept for a corpus (None: every corpus)."""
    _ROWS.forget(corpus_id)


def rows_key(params_key: str, categories: list, codes: Mapping[str, int]) -> str:
    h = hashlib.blake2b(params_key.encode(), digest_size=16)
    h.update(repr((list(categories), sorted(codes.items()))).encode())
    return h.hexdigest()


def _starts(rows: SoftLabels, pairs: np.ndarray) -> np.ndarray:
    """Each of ``pairs``'s (sorted) first row in ``rows`` (sorted by pair), and the end."""
    return np.searchsorted(rows.pairs, np.append(pairs, np.iinfo(np.int64).max))


def _merged(kept: SoftLabels, kept_starts: np.ndarray, pos: np.ndarray, same: np.ndarray,
            fresh: SoftLabels, fresh_starts: np.ndarray) -> tuple[SoftLabels, np.ndarray]:
    """The rows of each pair in order (``same``: from ``kept``, its pair at ``pos``;
    else the next of ``fresh``'s pairs), as one array per field, and each pair's first
    row (and the end)."""
    counts = np.empty(len(same), np.int64)
    src = np.empty(len(same), np.int64)
    k_counts = np.diff(kept_starts)
    counts[same] = k_counts[pos[same]]
    src[same] = kept_starts[pos[same]]
    counts[~same] = np.diff(fresh_starts)
    src[~same] = fresh_starts[:-1] + len(kept.pairs)
    starts = np.zeros(len(same) + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    take = np.repeat(src - starts[:-1], counts) + np.arange(starts[-1])
    return SoftLabels(*(np.concatenate([getattr(kept, f), getattr(fresh, f)])[take]
                        for f in _FIELDS)), starts


def replicate_rows(corpus_id: int | None, key: str, categories: list,
                   priors: list[np.ndarray], pair_of: np.ndarray, signs: np.ndarray,
                   compute: Compute, codes: Mapping[str, int]) -> list[SoftLabels]:
    """Each replicate's soft-label rows (`soft_rows`) of the labels of pairs
    ``pair_of`` (in label order), under replicate shares ``priors``. ``signs``: per
    label, a digest of everything its posterior and type shares are computed from under
    the parameters ``key`` names. Pairs whose label has the sign this process last saw
    under that key keep its rows; only the others' are computed (``compute``).
    ``corpus_id`` None: nothing kept (e.g. a database whose answers are read whole)."""
    pair_of = np.asarray(pair_of, np.int64)
    order = np.argsort(pair_of, kind="stable")
    pairs, signs = pair_of[order], np.asarray(signs, np.uint64)[order]
    # A pair has one label (PairLabel.pair is unique); were it not so, compute them all.
    single = not len(pairs) or bool((pairs[1:] != pairs[:-1]).all())
    kept = _ROWS.kept(corpus_id) if corpus_id is not None and single else None
    same = np.zeros(len(pairs), dtype=bool)
    pos = np.zeros(len(pairs), np.int64)
    if kept is not None and kept.key == key and len(kept.pairs) and len(pairs):
        pos = np.minimum(np.searchsorted(kept.pairs, pairs), len(kept.pairs) - 1)
        same = (kept.pairs[pos] == pairs) & (kept.signs[pos] == signs)
    else:
        kept = None
    todo = np.sort(order[~same])  # label positions, in label order
    fresh = compute(todo) if len(todo) else None
    reps, starts = [], []
    width = len(categories)
    for r, share in enumerate(priors):
        post, own = fresh[r] if fresh is not None else (np.zeros((0, width)),) * 2
        new = soft_rows(categories, post, share, own, pair_of[todo], codes)
        if kept is not None and same.any():
            new, first = _merged(kept.reps[r], kept.starts[r], pos, same, new,
                                 _starts(new, pairs[~same]))
        else:
            first = _starts(new, pairs)
        for f in _FIELDS:
            getattr(new, f).flags.writeable = False  # kept: shared with later runs
        reps.append(new)
        starts.append(first)
    if corpus_id is not None and single:
        _ROWS.keep(corpus_id, _Rows(key, pairs, signs, reps, starts))
    return reps
