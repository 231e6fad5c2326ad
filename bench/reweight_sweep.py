"""Diagnosis: which prior share should the soft labels' re-weighting divide out?

Usage: python bench/reweight_sweep.py --battery crowd20 [--trials 3]
       python bench/reweight_sweep.py --world DIR [DIR ...]      (bench_noisy_demo --keep)

Precision sums P(instance right): the crowd model's posterior P(r) re-weighted from the
prior it divides out to the system's precision (docs/internals/noisy-crowds.md §2). The posterior
is computed with the class shares of the pair's type, while the prior divided out is the
corpus-wide share. This sweeps the family in between: the likelihood ratio
odds(P_r) / (odds(s_type)^(1−β) · odds(s_corpus)^β) — β = 0 divides out the shares the
posterior used, β = 1 the corpus-wide ones (the estimators' choice). Each instance is
re-weighted to the TRUE precision of its (system, agreement group) on the same instances,
so only the likelihood ratio is under test; per β it prints the per-system error of
Σ P(right) against the truth (mean, min, max over systems) and the answers' log
likelihood Σ log(π'·LR₀ + 1 − π') with π' = σ(logit π + β·(logit s_type − logit
s_corpus)) — which β the data themselves prefer. The soft model is refitted from the
answers as the quality pass fits it (class shares per pair type, the soft fit's rates).

--battery: the validation battery's world and simulated crowd (seeded trials 0..N−1, the
systems' instances on the labelled pairs). --world: a kept demo world (its SQLite
database and gold.jsonl; the instance-scheme draws); nothing is written to it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.special import expit, logit

ROOT = Path(__file__).resolve().parents[1]
BETAS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
GROUPS = 3  # agreement groups: 1, 2, 3+ systems predict the instance


def sweep(system: np.ndarray, group: np.ndarray, post: np.ndarray, s_type: np.ndarray,
          s_corpus: np.ndarray, truth: np.ndarray) -> list[tuple[float, np.ndarray, float]]:
    """Per β: (β, per-system error of Σ P(right) − Σ truth over its instances, log lik)."""
    from estimation.core.evidence import likelihood_ratio, odds_between, reprior_lr

    def lo(p: np.ndarray) -> np.ndarray:
        return logit(np.clip(p, 1e-9, 1 - 1e-9))

    m = int(system.max()) + 1
    key = system * GROUPS + group
    count = np.bincount(key, minlength=m * GROUPS)
    pi = (np.bincount(key, weights=truth, minlength=m * GROUPS)
          / np.maximum(count, 1))[key]  # the true precision of (system, group)
    lr0 = likelihood_ratio(post, s_type)
    out = []
    for beta in BETAS:
        divisor = odds_between(s_corpus, s_type, beta)  # `Evidence.reweight_prior`'s, at β
        right = reprior_lr(post, likelihood_ratio(post, divisor), pi)
        err = (np.bincount(system, weights=right - truth, minlength=m)
               / np.maximum(np.bincount(system, minlength=m), 1))
        # The same shift as a prior: odds(π') = odds(π) · odds(s_type) / odds(divisor).
        prior = expit(lo(pi) + lo(s_type) - lo(divisor))
        loglik = float(np.log(np.clip(prior * lr0 + 1 - prior, 1e-300, None)).sum())
        out.append((beta, err, loglik))
    return out


def battery_rows(name: str, trials: int) -> list[tuple]:
    """Per trial: the instances on the labelled pairs of one battery trial, as sweep's
    arguments (posterior refitted with the crowd's own model)."""
    from annotations.quality.aggregation import item_priors
    from estimation.core import Population
    from estimation.core.evidence import ALSO_TRUE_STRIDE, agreement_groups
    from estimation.validation import SCENARIOS
    from estimation.validation.battery import _Sampler
    from estimation.validation.crowd import CrowdLabeller
    from estimation.validation.worlds import make_world

    sc = SCENARIOS[name]
    world = make_world(sc.world, np.random.default_rng(sc.world_seed))
    pop = Population()
    for nm, pairs, preds in world.systems:
        pop.add_system(nm, pairs, preds, world.subject[pairs])
    keys, groups = agreement_groups(pop)
    sampler = _Sampler(world, "instance")
    out = []
    for t in range(trials):
        rng = np.random.default_rng([0, t])
        crowd = CrowdLabeller(sc.crowd, world.label, sc.world.n_predicates,
                              np.random.default_rng([0, t, 1]), True)
        draws = {world.names[k]: sampler.draw(k, sc.draws_per_system, rng)
                 for k in range(len(world.systems))}
        lab = np.unique(np.concatenate(list(draws.values())))
        post = crowd.soft(lab)
        both = crowd._last[1]
        fit = crowd._last_fit
        strata = crowd._strata(both)
        shares = item_priors(fit.params, fit.priors, strata, len(both))[: len(lab)]
        inst = pop.instances()
        where = np.full(pop.n_pairs, -1)
        where[pop.lookup_pairs(lab)] = np.arange(len(lab))
        at = where[inst["pairs"]]
        on = at >= 0
        a, r = at[on], inst["predicates"][on]
        k = inst["pairs"][on] * ALSO_TRUE_STRIDE + r
        g = groups[np.searchsorted(keys, k)]
        truth = (world.label[lab][a] == r).astype(float)
        out.append((inst["system"][on], g, post[a, r + 1], shares[a, r + 1],
                    fit.priors[r + 1], truth))
    return out


def world_rows(world_dir: Path) -> tuple:
    """The instance-scheme draws of a kept demo world, as sweep's arguments."""
    from annotations.crowd.simulation import GoldKey
    from annotations.management.commands.simulate_crowd import truth_for
    from annotations.models import PairLabel, Question, SampleDraw
    from annotations.quality.aggregation import (
        NO_RELATION,
        SOFT_TYPE_SHRINK,
        answer_key,
        item_priors,
        one_coin,
    )
    from annotations.quality.workers import in_ids, offered
    from estimation.correction import _answers
    from kbpo.core.models import Corpus
    from submissions.models import RelationInstance

    # A kept TAC-mapped real-text world (docred-tac; docred before the native world), else
    # the synthetic one.
    corpus = Corpus.objects.filter(tag__in=("docred-tac", "docred"), schema="tac_kbp").first() \
        or Corpus.objects.get(tag="demo")
    ans = _answers(corpus)
    qids = ans.qids
    n_options, strata = offered(qids)
    index = {q: i for i, q in enumerate(qids)}
    known = {index[q]: answer_key(a) for q, a in
             Question.objects.filter(pk__in=in_ids(qids), control_answer__isnull=False)
             .values_list("pk", "control_answer")}
    fit = one_coin(ans.items, ans.workers, ans.keys, len(qids), len(ans.wids),
                   n_options=n_options, known=known or None, none=NO_RELATION,
                   strata=strata, type_shrink=SOFT_TYPE_SHRINK)
    shares = item_priors(fit.params, fit.priors, strata, len(qids))
    names = [str(c).split("|") for c in fit.categories]

    def of(row: np.ndarray, predicate: str) -> float:
        return float(sum(v for n, v in zip(names, row, strict=True) if predicate in n))

    gold = GoldKey.load(world_dir / "gold.jsonl")
    question_of = dict(PairLabel.objects.filter(question_id__in=in_ids(qids))
                       .values_list("pair_id", "question_id"))
    questions = Question.objects.in_bulk(list(question_of.values()))
    predicting = defaultdict(set)
    for sub, pair, pred in (RelationInstance.objects.filter(submission__corpus=corpus)
                            .values_list("submission_id", "pair_id", "predicate")):
        predicting[(pair, pred)].add(sub)
    systems: dict[str, int] = {}
    rows = []
    for name, pair, pred in (SampleDraw.objects.filter(submission__corpus=corpus,
                                                       scheme="instance")
                             .values_list("submission__name", "instance__pair_id",
                                          "instance__predicate")):
        q = question_of.get(pair)
        if q is None:
            continue
        i = index[q]
        truth = truth_for(gold, questions[q])
        rows.append((systems.setdefault(name, len(systems)),
                     min(len(predicting[(pair, pred)]), GROUPS) - 1,
                     of(fit.posterior[i], pred), of(shares[i], pred), of(fit.priors, pred),
                     float(pred in truth)))
    cols = list(zip(*rows, strict=True))
    return (np.asarray(cols[0]), np.asarray(cols[1]), *(np.asarray(c, float)
                                                          for c in cols[2:]))


def _print(label: str, results: list[list[tuple]]) -> None:
    print(label)
    for k, beta in enumerate(BETAS):
        err = np.concatenate([r[k][1] for r in results])
        loglik = sum(r[k][2] for r in results)
        print(f"  beta {beta:4.2f}: P(right) error per system mean {err.mean():+.4f} "
              f"min {err.min():+.4f} max {err.max():+.4f}   log lik {loglik:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battery", help="a crowd scenario of the validation battery")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--world", type=Path, nargs="+",
                        help="kept bench_noisy_demo seed directories (db.sqlite3, world/)")
    args = parser.parse_args(argv)
    if not args.battery and not args.world:
        parser.error("give --battery SCENARIO or --world DIR")
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")
    if args.world:
        if len(args.world) > 1:
            # One database a process: each world in its own run of this script.
            for w in args.world:
                subprocess.run([sys.executable, __file__, "--world", str(w)], check=True)
            return 0
        seed_dir = args.world[0]
        os.environ["DATABASE_URL"] = f"sqlite:///{(seed_dir / 'db.sqlite3').resolve()}"
    import django

    django.setup()
    if args.battery:
        _print(f"battery {args.battery}, {args.trials} trials",
               [sweep(*rows) for rows in battery_rows(args.battery, args.trials)])
    if args.world:
        rows = world_rows(seed_dir / "world")
        _print(f"world {seed_dir} ({len(rows[0])} draws)", [sweep(*rows)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
