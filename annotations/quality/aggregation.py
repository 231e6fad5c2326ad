"""Turning crowd answers into labels: majority vote, Dawid–Skene, one-coin with priors
(the workers' agreement statistics are in agreement.py).

Pure numpy (no Django): the crowd app loads answers into arrays and stores results.

An answer to a relation question is a *set* of predicates (workers may mark more than
one when two relations hold between the same mentions) or the set {"no_relation"}. The
majority label of a question is every predicate a strict majority of its workers marked; when none
reaches a majority, the question is *tied* and deserves another assignment.

Dawid–Skene is fitted on the answers as categorical values (each distinct answer set is
one category). We implement it here rather than depend on crowd-kit, whose requirements
(pandas, pyarrow, scikit-learn, transformers, nltk) are out of proportion for one EM.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from annotations.quality import rates as rate_models
from annotations.quality.resampling import resample_questions

NO_RELATION = "no_relation"


def answer_key(choices: Iterable[str]) -> str:
    """A canonical string for an answer set (sorted, '|'-joined)."""
    items = sorted(set(choices))
    return "|".join(items) if items else NO_RELATION


@dataclass(frozen=True)
class MajorityResult:
    labels: frozenset[str]      # the predicates a strict majority marked, or {no_relation}
    tied: bool                  # no choice reached a strict majority
    support: float              # share of workers who gave exactly the majority answer


def majority_vote(answers: Sequence[Iterable[str]]) -> MajorityResult:
    """Aggregate one question's answers (each a set of choices) by strict majority."""
    sets = [frozenset(a) or frozenset({NO_RELATION}) for a in answers]
    n = len(sets)
    if n == 0:
        return MajorityResult(frozenset(), True, 0.0)
    counts = Counter(c for s in sets for c in s)
    winners = frozenset(c for c, k in counts.items() if 2 * k > n)
    if NO_RELATION in winners and len(winners) > 1:  # cannot happen with consistent answers
        winners = frozenset({NO_RELATION})
    if not winners:
        return MajorityResult(frozenset(), True, 0.0)
    support = sum(1 for s in sets if s == winners) / n
    return MajorityResult(winners, False, support)


@dataclass
class DawidSkeneResult:
    categories: list[str]              # category names, index = column
    posterior: np.ndarray              # (items, categories) P(true category | answers)
    labels: list[str]                  # argmax category per item
    worker_accuracy: np.ndarray        # (workers,) estimated P(answer == truth)
    confusion: np.ndarray              # (workers, categories, categories)
    priors: np.ndarray                 # (categories,)
    iterations: int


def dawid_skene(items: np.ndarray, workers: np.ndarray, answers: Sequence[str],
                n_items: int | None = None, n_workers: int | None = None,
                max_iter: int = 100, tol: float = 1e-6,
                smoothing: float = 0.01, prior_strength: float = 0.0,
                prior_accuracy: float = 0.8) -> DawidSkeneResult:
    """Fit the Dawid–Skene model by EM.

    `items[k]`, `workers[k]` and `answers[k]` describe the k-th answer (integer item
    and worker indices, categorical answer strings). Initialised from per-item vote
    shares; `smoothing` is a Dirichlet pseudo-count that keeps confusion rows of
    workers with few answers away from 0/1. `prior_strength` > 0 adds that many
    pseudo-answers to every confusion row, a share `prior_accuracy` of them on the
    diagonal (the "smoothed" variant: a worker is presumed mostly right until their
    answers say otherwise, instead of a free matrix fitted from three answers a
    question).
    """
    items = np.asarray(items, dtype=np.int64)
    workers = np.asarray(workers, dtype=np.int64)
    categories = sorted(set(answers))
    cat_index = {c: i for i, c in enumerate(categories)}
    obs = np.fromiter((cat_index[a] for a in answers), dtype=np.int64, count=len(answers))
    n_i = int(n_items if n_items is not None else items.max() + 1)
    n_w = int(n_workers if n_workers is not None else workers.max() + 1)
    n_c = len(categories)

    # Initial posterior: vote shares per item.
    post = np.zeros((n_i, n_c))
    np.add.at(post, (items, obs), 1.0)
    post = _normalise_rows(post + 1e-9)

    iterations = 0
    pseudo = np.full((n_c, n_c), smoothing)
    if prior_strength > 0 and n_c > 1:
        pseudo += prior_strength * (1 - prior_accuracy) / (n_c - 1)
        np.fill_diagonal(pseudo, smoothing + prior_strength * prior_accuracy)
    confusion = np.zeros((n_w, n_c, n_c))
    priors = np.full(n_c, 1.0 / n_c)
    for it in range(1, max_iter + 1):
        iterations = it
        # M-step: class priors and per-worker confusion matrices.
        priors = post.sum(axis=0) + smoothing
        priors /= priors.sum()
        confusion = np.tile(pseudo, (n_w, 1, 1))
        for c_true in range(n_c):
            np.add.at(confusion[:, c_true, :], (workers, obs), post[items, c_true])
        confusion /= confusion.sum(axis=2, keepdims=True)
        # E-step: item posteriors from priors and the likelihood of observed answers.
        log_post = np.tile(np.log(priors), (n_i, 1))
        np.add.at(log_post, items, np.log(confusion[workers, :, obs]))
        log_post -= log_post.max(axis=1, keepdims=True)
        new_post = _normalise_rows(np.exp(log_post))
        delta = np.abs(new_post - post).max()
        post = new_post
        if delta < tol:
            break
    accuracy = np.einsum("wcc,c->w", confusion, priors)
    labels = [categories[i] for i in post.argmax(axis=1)]
    return DawidSkeneResult(categories, post, labels, accuracy, confusion, priors, iterations)


def _normalise_rows(a: np.ndarray) -> np.ndarray:
    s = a.sum(axis=1, keepdims=True)
    s[s == 0] = 1.0
    return a / s


# ---- one-coin Dawid–Skene with priors, anchored by control questions ----------------


# A worker's miss rate per relation type is shrunk towards their overall rate by
# `type_shrink` pseudo-answers. The stored hard label wants sharp rates (5: blind spots
# found, labels at least as accurate as majority). The soft labels the estimators sum
# want calibrated probabilities: a handful of answers per (worker, type) also learns
# "blind spots" from noise, a rate half-way between blind and seen, and true pairs get
# too much mass. `type_shrink` = BLIND_SPOT_MIXTURE instead makes each (worker, relation
# type) cell either a blind spot (one crowd-wide miss rate, near 1) or seen (the
# worker's own rate), the share of blind cells fitted by EM (`rate_models.blind_spot_rates`): the
# soft fit's model. With random errors it finds few blind cells and equals one rate per
# worker (inf, the soft fit before); under blind spots it halves the pairs' squared
# error and recall's bias falls by a third (docs/internals/noisy-crowds.md §3).
LABEL_TYPE_SHRINK = 5.0
BLIND_SPOT_MIXTURE = rate_models.BLIND_SPOT_MIXTURE
BLIND_SPOT_LOO = rate_models.BLIND_SPOT_LOO
SOFT_TYPE_SHRINK = BLIND_SPOT_LOO
# `coin_posterior` under leave-one-out cells: at most this many fixed-point rounds.
LOO_POSTERIOR_ROUNDS = 30


@dataclass
class OneCoinResult:
    categories: list            # category values, index = column
    posterior: np.ndarray       # (items, categories) P(true category | answers)
    labels: list                # argmax category per item
    worker_accuracy: np.ndarray  # (workers,) P(answer == truth), averaged over the classes
    worker_answers: np.ndarray  # (workers,) answers seen per worker
    priors: np.ndarray          # (categories,) class shares among the non-control items
    iterations: int
    # With `none` given: per worker P(right | no relation), P(right | a relation) and
    # P(answers none | a relation), the rate of missed relations.
    specificity: np.ndarray | None = None
    sensitivity: np.ndarray | None = None
    miss_rate: np.ndarray | None = None
    params: OneCoinParams | None = None  # the fit's parameters (`coin_posterior`)
    converged: bool = True      # EM's last change below `tol` within `max_iter` rounds
    refused: int = 0            # answers outside their question's offered set (`offered`)


@dataclass(frozen=True)
class OneCoinParams:
    """What a one-coin fit learnt, enough to compute the posterior of any answers to
    the same categories (`coin_posterior`): the workers' rates and the class shares."""

    categories: list
    rates: tuple[np.ndarray, ...]  # (accuracy,) or (specificity, sensitivity, miss, per type)
    priors: np.ndarray             # (categories,) corpus-wide class shares
    stratum_shares: np.ndarray | None  # (strata, categories) shares per stratum, or None
    none_index: int                # column of `none`; −1: the symmetric coin
    type_shrink: float = LABEL_TYPE_SHRINK  # the fit's (a replicate refits with it)
    offered: np.ndarray | None = None  # (strata × categories) relations offered (`Offered`)


def within_offered(answers: Sequence, strata: np.ndarray,
                   offered: Sequence[Collection[str] | None], none: object) -> np.ndarray:
    """Per answer, whether it is `none` or names only relations its stratum offered
    (``strata`` per answer; a stratum beyond ``offered``, or whose entry is None, offers
    everything: a question whose pair types are unknown)."""
    sets = [None if rels is None else frozenset(rels) for rels in offered]
    return np.fromiter(
        (a == none or s >= len(sets) or sets[s] is None
         or set(str(a).split("|")) <= sets[s]  # type: ignore[operator]
         for a, s in zip(answers, np.asarray(strata, np.int64).tolist(), strict=True)),
        bool, len(answers))


def offered_table(offered: Sequence[Collection[str] | None], categories: Sequence,
                  nc: int) -> np.ndarray:
    """(strata × categories) 1 where the stratum offered every relation the category
    names (none's column 0; a None entry offers every one), the `rate_models.Offered`
    table of given offered sets."""
    table = np.zeros((max(len(offered), 1), max(len(categories), 1)))
    for s, rels in enumerate(offered):
        given = None if rels is None else frozenset(rels)
        for c, cat in enumerate(categories):
            table[s, c] = float(c != nc and (given is None or set(str(cat).split("|")) <= given))
    return table


def one_coin(items: np.ndarray, workers: np.ndarray, answers: Sequence,
             n_items: int | None = None, n_workers: int | None = None, *,
             n_options: np.ndarray | int | None = None,
             known: dict[int, object] | None = None,
             categories: Sequence | None = None, none: object | None = None,
             strata: np.ndarray | None = None, strata_shrink: float = 10.0,
             prior_accuracy: float = 0.8, prior_strength: float = 4.0,
             class_pseudocount: float = 0.5, type_shrink: float = LABEL_TYPE_SHRINK,
             max_iter: int = 200,
             tol: float = 1e-7, init: np.ndarray | None = None,
             offered: Sequence[Collection[str] | None] | None = None) -> OneCoinResult:
    """One-coin Dawid–Skene by EM with priors (maximum a posteriori).

    Each worker answers the truth with probability a_w and otherwise one of the
    item's other options uniformly: one parameter per worker where full Dawid–Skene
    has a confusion matrix, so three answers per question are enough to fit it.
    a_w has a Beta prior (mean `prior_accuracy`, `prior_strength` pseudo-answers),
    the class shares a Dirichlet(1 + `class_pseudocount`) prior.

    With `none` (the "no relation" category) a worker has three rates instead: right
    on pairs without a relation, right on pairs with one, and *missing* a relation
    (answering none). Real errors are lopsided — a worker who does not know a
    relation type answers none on it every time — and the symmetric coin then
    trusts a "none" majority far more than it deserves. A worker's miss rate is
    also kept per relation type, shrunk towards their overall rate by
    `type_shrink` pseudo-answers (inf: one rate; BLIND_SPOT_MIXTURE: each type blind
    or seen, `rate_models.blind_spot_rates`): a blind spot is a type, not a coin.

    `n_options`: the number of answers offered per item (a scalar or per item;
    default: the number of categories). `known` maps item → true category for
    control questions: their posterior is the truth, so they anchor the workers'
    rates, and they stay out of the class shares (their mix is not the test
    items'). `categories` fixes the category list (default: the answers seen plus
    the known truths).

    `strata` (per item, an integer) groups items that offer the same answers (a pair's
    two entity types decide its relations): the class shares are then fitted per
    stratum, shrunk towards the corpus-wide shares by `strata_shrink` pseudo-items.
    With one corpus-wide share per relation, a relation is rare against "none" on
    every pair even where the pair's types make it common, and EM drifts into calling
    true pairs "none" with workers who answer relations on none pairs half the time.
    `priors` stays the corpus-wide shares.

    `init` (items × categories): the posterior EM starts from instead of the vote
    shares — a refit on nearly the same answers (a bootstrap replicate) starts at the
    fit's and converges in a few rounds. `params` holds the fitted rates and shares;
    `coin_posterior(params, ...)` gives the posterior of these or other answers under
    them (on these answers: `posterior` itself).

    `offered` (with `strata` and `none`): per stratum, the relations its questions
    offered (what the page showed: `kbpo.core.schemas.offered_relations`). The false
    yes then runs over exactly those, and an answer naming a relation its question did
    not offer is left out of the fit (`refused` counts them): the intake refuses such
    answers, so one that got stored anyway says nothing about the crowd. Without it
    the offered relations are read off the answers given in each stratum.
    """
    items = np.asarray(items, dtype=np.int64)
    workers = np.asarray(workers, dtype=np.int64)
    strata = None if strata is None else np.asarray(strata, dtype=np.int64)
    known = known or {}
    refused = 0
    if offered is not None and strata is not None and none is not None:
        inside = within_offered(answers, strata[items], offered, none)
        refused = int(len(inside) - inside.sum())
        if refused:
            items, workers = items[inside], workers[inside]
            answers = [a for a, ok in zip(answers, inside.tolist(), strict=True) if ok]
    cats = sorted(set(answers) | set(known.values())) if categories is None else list(categories)
    index = {c: i for i, c in enumerate(cats)}
    obs = np.fromiter((index[a] for a in answers), np.int64, len(answers))
    n_i = int(n_items if n_items is not None else (items.max() + 1 if len(items) else 0))
    n_w = int(n_workers if n_workers is not None else (workers.max() + 1 if len(workers) else 0))
    n_c = max(len(cats), 1)
    k_opt = np.broadcast_to(np.asarray(n_c if n_options is None else n_options, float),
                            (n_i,)).astype(float)
    nc = index.get(none, -1) if none is not None else -1
    ctrl = np.zeros(n_i, dtype=bool)
    ctrl_post = np.zeros((n_i, n_c))
    for i, c in known.items():
        ctrl[i] = True
        ctrl_post[i, index[c]] = 1.0
    alpha = prior_strength * prior_accuracy
    beta = prior_strength * (1.0 - prior_accuracy)
    per_worker = np.bincount(workers, minlength=n_w).astype(float)

    stage = 0
    if init is None and type_shrink == BLIND_SPOT_LOO and nc >= 0:
        # Started from the vote shares, the blind-or-seen fit can settle where a rare
        # type is blind for the whole crowd and every all-"none" pair of its pair type
        # gets its class share (+13–33% P(pair true) with Zipf-distributed relations,
        # docs/internals/noisy-crowds.md §3); it starts instead from its special case without
        # blind cells, one miss rate per worker.
        first = one_coin(items, workers, answers, n_i, n_w, n_options=n_options,
                         known=known, categories=cats, none=none, strata=strata,
                         strata_shrink=strata_shrink, prior_accuracy=prior_accuracy,
                         prior_strength=prior_strength, class_pseudocount=class_pseudocount,
                         type_shrink=math.inf, max_iter=max_iter, tol=tol, offered=offered)
        init, stage = first.posterior, first.iterations
    if init is None:
        post = np.zeros((n_i, n_c))
        np.add.at(post, (items, obs), 1.0)
        post = _normalise_rows(post + 1e-9)
    else:
        post = np.array(init, dtype=float, copy=True).reshape(n_i, n_c)
    post[ctrl] = ctrl_post[ctrl]
    priors = np.full(n_c, 1.0 / n_c)
    rates: tuple[np.ndarray, ...] = ()
    shares = None
    # Who answered what is fixed during EM: its sparse matrices are built once.
    inc = rate_models.Incidence(items, workers, obs, nc, n_i, n_w) if nc >= 0 else None
    # Strata give each question's offered relations, hence false yes per relation.
    if nc < 0 or strata is None:
        offered_rows = None
    elif offered is not None:
        offered_rows = rate_models.Offered(strata, offered_table(offered, cats, nc))
    else:
        offered_rows = rate_models.Offered.seen(
            strata, items, obs, {i: index[c] for i, c in known.items()}, n_c, nc)
    iterations = 0
    delta = 0.0
    for it in range(1, max_iter + 1):
        iterations = it
        counts = post[~ctrl].sum(axis=0) + class_pseudocount
        priors = counts / counts.sum()
        if strata is not None and n_i:
            per = np.zeros((int(strata.max()) + 1, n_c))
            np.add.at(per, strata[~ctrl], post[~ctrl])
            per += strata_shrink * priors[None, :]
            shares = per / per.sum(axis=1, keepdims=True)
        if nc < 0:
            rates = (rate_models.coin_rates(post, items, workers, obs, n_w, alpha, beta),)
        else:
            rates = rate_models.lopsided_rates(post, items, workers, obs, nc, n_w, alpha, beta,
                                               type_shrink, inc, offered_rows)
        new_post = _e_step(rates, priors, shares, strata, items, workers, obs, k_opt, nc,
                           n_i, n_c, inc, post, offered_rows)
        new_post[ctrl] = ctrl_post[ctrl]
        delta = float(np.abs(new_post - post).max()) if n_i else 0.0
        post = new_post
        if delta < tol:
            break
    labels = [cats[i] for i in post.argmax(axis=1)] if n_i else []
    right = np.bincount(workers, weights=post[items, obs], minlength=n_w)
    accuracy = np.where(per_worker > 0, right / np.maximum(per_worker, 1), np.nan)
    result = OneCoinResult(cats, post, labels, accuracy, per_worker, priors,
                           stage + iterations, converged=delta < tol, refused=refused)
    if nc >= 0:
        result.specificity, result.sensitivity, result.miss_rate = rates[:3]
    if rates:
        result.params = OneCoinParams(cats, rates, priors, shares, nc, type_shrink,
                                      None if offered_rows is None else offered_rows.table)
    return result


def _e_step(rates: tuple[np.ndarray, ...], priors: np.ndarray, shares: np.ndarray | None,
            strata: np.ndarray | None, items: np.ndarray, workers: np.ndarray,
            obs: np.ndarray, k_opt: np.ndarray, nc: int, n_i: int, n_c: int,
            inc: rate_models.Incidence | None = None,
            counted: np.ndarray | None = None,
            offered: rate_models.Offered | None = None) -> np.ndarray:
    """Each item's posterior over the categories given the rates and class shares
    (``counted``: the posterior the rates' cells were counted with, left out per pair
    under BLIND_SPOT_LOO; ``offered``: the relations each item offered)."""
    log_prior = np.log(priors)[None, :]
    if shares is not None and strata is not None and n_i:
        log_prior = np.log(_stratum_priors(priors, shares, strata))
    if nc < 0:
        log_lik = rate_models.coin_loglik(rates[0], items, workers, obs, k_opt, n_i, n_c)
    else:
        log_lik = rate_models.lopsided_loglik(rates, items, workers, obs, k_opt, nc, n_i, n_c,
                                              inc, counted, offered)
    return _softmax(log_prior + log_lik)


def _stratum_priors(priors: np.ndarray, shares: np.ndarray, strata: np.ndarray) -> np.ndarray:
    # A stratum the shares do not know (absent where they were fitted) gets the
    # corpus-wide shares, as a stratum without items does in the fit.
    table = np.vstack([shares, priors[None, :]])
    return table[np.where(strata < len(shares), strata, len(shares))]


def item_priors(params: OneCoinParams | None, priors: np.ndarray, strata: np.ndarray | None,
                n_items: int) -> np.ndarray:
    """(items × categories): the class shares each item's posterior was computed with —
    its stratum's where the fit has shares per stratum, else ``priors`` (the corpus-wide
    shares)."""
    shares = None if params is None else params.stratum_shares
    if shares is None or strata is None:
        return np.broadcast_to(np.asarray(priors, float), (n_items, len(priors)))
    return _stratum_priors(np.asarray(priors, float), shares, np.asarray(strata, np.int64))


def _softmax(log_post: np.ndarray) -> np.ndarray:
    log_post = log_post - log_post.max(axis=1, keepdims=True)
    return _normalise_rows(np.exp(log_post))


def answers_of(items: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The answers of the kept items (``keep``: a mask over items), as a mask over the
    answers, and their items renumbered 0.. in the kept items' order."""
    mask = keep[items]
    return mask, (np.cumsum(keep) - 1)[items[mask]]


def set_known(post: np.ndarray, categories: Sequence, known: dict[int, object] | None
              ) -> None:
    """The known items' rows of ``post`` made certain of their known answers (in place)."""
    index = {c: i for i, c in enumerate(categories)}
    for i, c in (known or {}).items():
        post[i] = 0.0
        post[i, index[c]] = 1.0


def category_codes(categories: Sequence, answers: Sequence) -> np.ndarray:
    """Each answer's index in ``categories`` (a KeyError for an answer outside them)."""
    index = {c: i for i, c in enumerate(categories)}
    return np.fromiter((index[a] for a in answers), np.int64, len(answers))


def coin_posterior(params: OneCoinParams, items: np.ndarray, workers: np.ndarray,
                   answers: Sequence, n_items: int, *,
                   n_options: np.ndarray | int | None = None,
                   known: dict[int, object] | None = None,
                   strata: np.ndarray | None = None,
                   obs: np.ndarray | None = None,
                   offered: Sequence[Collection[str] | None] | None = None) -> np.ndarray:
    """(items × categories) posterior of these answers under a fit's parameters.

    One E-step, no refit: the answers' own noise with the rates held fixed. Worker
    indices must be those of the fit (rates per worker); `n_options`, `known` and
    `strata` as for `one_coin`. Answers outside the fit's categories are a KeyError;
    a fit with shares per stratum needs `strata` (a ValueError without: the corpus-wide
    shares would silently stand in for them). `obs`: each answer's index in the fit's
    categories (`category_codes`), when computed before for fits sharing them.
    `offered`: as for `one_coin`; answers outside it are left out.
    """
    if params.stratum_shares is not None and strata is None:
        raise ValueError("coin_posterior: the fit has class shares per stratum; pass strata")
    items = np.asarray(items, dtype=np.int64)
    workers = np.asarray(workers, dtype=np.int64)
    cats = params.categories
    if offered is not None and strata is not None and params.none_index >= 0:
        inside = within_offered(answers, np.asarray(strata, np.int64)[items], offered,
                                cats[params.none_index])
        if not inside.all():
            items, workers = items[inside], workers[inside]
            answers = [a for a, ok in zip(answers, inside.tolist(), strict=True) if ok]
            obs = None if obs is None else np.asarray(obs)[inside]
    if obs is None:
        obs = category_codes(cats, answers)
    elif len(obs) != len(answers):
        raise ValueError("coin_posterior: obs and answers differ in length")
    n_c = max(len(cats), 1)
    k_opt = np.broadcast_to(np.asarray(n_c if n_options is None else n_options, float),
                            (n_items,)).astype(float)
    strata = None if strata is None else np.asarray(strata, dtype=np.int64)
    offered = None if params.offered is None else rate_models.Offered(
        np.zeros(n_items, np.int64) if strata is None else strata, params.offered)
    post = _e_step(params.rates, params.priors, params.stratum_shares, strata, items, workers,
                   obs, k_opt, params.none_index, n_items, n_c, offered=offered)
    if rate_models.has_cells(params.rates) and n_items:
        # Leave-one-out cells: the pairs' own shares the cells were counted with are not
        # stored, so they are solved for (the fit's posterior is the fixed point of
        # this map on the fit's own answers; it starts from the plain posterior).
        # Each pair's map involves only its own answers and share: a pair stops when its
        # own posterior settles (the same floats whichever other pairs are computed with
        # it: each pair's sums keep their order). The rounds run on a subset holding the
        # pairs still moving, cut down when fewer than half of it still move.
        n_w = params.rates[3].shape[0]
        base = np.log(np.maximum(post, 1e-300))  # the plain log posterior, up to a constant
        said_none = obs == params.none_index
        ids = np.arange(n_items)  # the subset's pairs
        live = np.ones(n_items, dtype=bool)  # which of them still move
        sub = (items, workers, said_none,
               rate_models.Incidence(items, workers, obs, params.none_index, n_items, n_w))
        for _ in range(LOO_POSTERIOR_ROUNDS):
            cur = post[ids]
            new = _softmax(base[ids] + rate_models.loo_cell_terms(
                params.rates, sub[0], sub[1], sub[2], cur, params.none_index, sub[3]))
            done = live & (np.abs(new - cur).max(axis=1) < 1e-7)
            # Damped: a pair's posterior falls as its own share grows (slope in
            # (−1, 0)), so the plain iteration oscillates; the average contracts.
            at = np.flatnonzero(live)
            post[ids[at]] = np.where(done[at, None], new[at], 0.5 * (cur[at] + new[at]))
            live &= ~done
            if not live.any():
                break
            if 2 * int(live.sum()) < len(ids):
                ans, s_items = answers_of(sub[0], live)
                s_workers, s_none = sub[1][ans], sub[2][ans]
                ids = ids[live]
                live = np.ones(len(ids), dtype=bool)
                sub = (s_items, s_workers, s_none,
                       rate_models.Incidence(s_items, s_workers,
                                             np.where(s_none, params.none_index, -2),
                                             params.none_index, len(ids), n_w))
    set_known(post, cats, known)
    return post


def offered_answers(items: np.ndarray, workers: np.ndarray, answers: Sequence,
                    strata: np.ndarray | None, none: object | None,
                    offered: Sequence[Collection[str] | None] | None
                    ) -> tuple[np.ndarray, np.ndarray, list]:
    """The answers a fit with ``offered`` counted (the others left out), as arrays."""
    answers = list(answers)
    items, workers = np.asarray(items, np.int64), np.asarray(workers, np.int64)
    if offered is not None and strata is not None and none is not None:
        inside = within_offered(answers, np.asarray(strata, np.int64)[items], offered, none)
        items, workers = items[inside], workers[inside]
        answers = [a for a, ok in zip(answers, inside.tolist(), strict=True) if ok]
    return items, workers, answers


def parameter_replicates(fit: OneCoinResult, items: np.ndarray, workers: np.ndarray,
                         answers: Sequence, n_workers: int, groups: Sequence[np.ndarray],
                         replicates: int, rng: np.random.Generator, *,
                         n_options: np.ndarray, known: dict[int, object] | None,
                         strata: np.ndarray | None, none: object | None,
                         fits: list | None = None,
                         offered: Sequence[Collection[str] | None] | None = None
                         ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(posterior, corpus-wide class shares, each item's shares: `item_priors`) of the
    fitted answers under each of ``replicates`` bootstrap replicates of ``fit``'s
    parameters: the questions drawn with replacement within each of ``groups``
    (`resample_questions`), the model refitted on them (EM started at the fit's
    posterior, the fit's categories), then one E-step on the original answers. Only
    the parameters vary; each question's own answer noise is the posterior's already.
    ``n_options``, ``known`` and ``strata`` are per item, as ``fit`` was fitted with them.
    ``fits``: a list that receives each replicate's refitted parameters
    (`OneCoinParams`), e.g. to keep them. ``offered``: as ``fit`` was fitted with it
    (its answers outside are left out here too)."""
    items, workers, answers = offered_answers(items, workers, answers, strata, none, offered)
    known = known or {}
    n_options = np.asarray(n_options, dtype=float)
    shrink = fit.params.type_shrink if fit.params is not None else LABEL_TYPE_SHRINK
    out = []
    obs = category_codes(fit.categories, answers)  # the refits keep the fit's categories
    for _ in range(replicates):
        idx, new, pick = resample_questions(items, groups, rng)
        rep_known = {j: known[int(i)] for j, i in enumerate(pick) if int(i) in known}
        refit = one_coin(new, workers[idx], [answers[k] for k in idx], len(pick), n_workers,
                         n_options=n_options[pick], known=rep_known or None,
                         categories=fit.categories, none=none,
                         strata=None if strata is None else strata[pick], tol=1e-4,
                         init=fit.posterior[pick], type_shrink=shrink, offered=offered)
        same = list(refit.params.categories) == list(fit.categories)
        post = coin_posterior(refit.params, items, workers, answers, len(n_options),
                              n_options=n_options, known=known or None, strata=strata,
                              obs=obs if same else None)
        out.append((post, refit.priors,
                    item_priors(refit.params, refit.priors, strata, len(n_options))))
        if fits is not None:
            fits.append(refit.params)
    return out


# ---- the stored hard label ------------------------------------------------------------

AGGREGATORS = ("lopsided", "one_coin", "majority")


def hard_labels(posterior: np.ndarray, categories: Sequence, current: Sequence,
                margin: float) -> list:
    """Each item's hard label: the posterior's argmax when it beats `current` by `margin`.

    `current[i]` is the item's stored label (first the majority vote). An item moves to
    the maximum a posteriori answer only when that answer's posterior exceeds the
    current label's by at least `margin`; in between the current label stays. Refits
    on a little more data shift posteriors a little, and without the margin a pair
    near 50/50 would change label (and the scores) on every quality pass.
    """
    index = {c: i for i, c in enumerate(categories)}
    best = posterior.argmax(axis=1) if len(posterior) else np.zeros(0, dtype=int)
    out = []
    for i, cur in enumerate(current):
        top = categories[int(best[i])]
        if top == cur:
            out.append(cur)
            continue
        p_cur = float(posterior[i, index[cur]]) if cur in index else 0.0
        out.append(top if float(posterior[i, best[i]]) - p_cur >= margin else cur)
    return out
