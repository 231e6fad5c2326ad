"""Coverage of the DocRED-native world over seeds (issue 37), without the Django pipeline.

Usage: python bench/docred_coverage.py [--source dev_revised.json] [--seeds 20]
       [--docs 300] [--systems 6] [--draws 271] [--exhaustive-docs 0|N] [--options tac|all]

Per seed, as `demo --world docred` does it through Django (~40 min a seed here), but
with the estimation code called directly: a new world (kbpo/demo/world/docred_native.py:
the seed's documents, systems and exact truth), a new crowd and new samples.

- draws: ``--draws`` per system from its instance-scheme distribution (uniform over its
  instances), as production planned them in the one-seed run (271 each);
- labels: every drawn pair is asked of a pool of 20 simulated workers (10% error, 10%
  spammers), the production simulation's answers (annotations.crowd.simulation:
  a right answer names every true relation of the pair, up to three; a wrong one is any
  other of the 96 relations or none) and its rule (three answers, up to two more
  without a strict majority, then the plurality); 9% control questions with known
  answers (KBPO_CONTROL_SHARE) anchor the fit;
- the noise correction as production applies it: the one-coin fit with class shares
  per pair type (the pair's two entity types), soft labels made per predicate
  (correction_rows.soft_rows: an answer "a|b" gives its probability to both), each
  system's precision as the prior (self_consistent), and the 8 bootstrap replicates'
  variance added to the intervals (KBPO_SOFT_LABEL_BOOTSTRAP);
- the exhaustive sample: the imported gold of every document (``--exhaustive-docs 0``,
  what `import_gold --format docred` gives), or the gold of N documents drawn
  uniformly (`import_gold --only-planned` after a plan of N documents; production's
  plan draws its second stage among documents naming a first-stage entity, which is
  not simulated here).

``--options all`` (the default) counts each question's offered answers as production's
quality pass does since commit 017ed84 (annotations.quality.workers.offered: the 97
answers a DocRED page accepts); ``--options tac`` as it did before (TAC KBP's relations
for the pair's types, plus none; 1 for a pair of types TAC KBP does not relate).

Reports, instance scheme, joint and simple estimates: coverage of the 90% intervals
(pooled over seeds and systems, per system, and joint coverage ± its se over seeds),
mean signed error, mean absolute error, each seed's count of joint intervals containing
the truth and how many seeds have all but one; and each system's draws, distinct
pairs, new pairs it pays for, their answers and crowd cost (`costs`).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotations.crowd.mturk.fees import hit_cost
from annotations.crowd.simulation import NO_RELATION, assign_workers, make_pool, simulate_answer
from annotations.quality.aggregation import (
    SOFT_TYPE_SHRINK,
    item_priors,
    one_coin,
    parameter_replicates,
)
from estimation.core import Population, estimate, prepare_evidence
from estimation.core.noise import correction_variance, self_consistent, widen, with_soft_labels
from estimation.correction_rows import soft_rows
from kbpo.core.schema import predicates_for
from kbpo.core.schemas import DOCRED, get_schema
from kbpo.demo.world.docred_native import read_source, world_facts

SOURCE = Path("/work/shared/data/redocred/dev_revised.json")
CAP = 3  # relations an answer may mark on a DocRED page (docred.json)
CONTROL_SHARE = 0.09  # KBPO_CONTROL_SHARE
BOOTSTRAP = 8  # KBPO_SOFT_LABEL_BOOTSTRAP
WORKERS = 20
PER_HIT = 5  # KBPO_QUESTIONS_PER_HIT
REWARD = Decimal("0.05")  # KBPO_REWARD_PER_QUESTION_USD
CROWD = {"error": 0.1, "spammers": 0.1, "hard": False}  # --error, --spammers, --hard


@dataclass
class World:
    names: list[str]
    pop: Population
    pairs: list[tuple[int, int, int]]  # pair id -> (doc, head, tail)
    truth: list[frozenset[str]]  # pair id -> gold relations (empty: none)
    types: list[tuple[str, str]]  # pair id -> entity types
    inst: list[tuple[np.ndarray, np.ndarray]]  # per system: (pair ids, predicate codes)
    gold: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # pairs, preds, subj, docs
    true_p: np.ndarray
    true_r: np.ndarray
    sizes: list[int]


def build_world(parsed: list, seed: int, n_docs: int, n_systems: int) -> World:
    """The world `docred_native.generate` writes for this seed, in memory."""
    chosen = sorted(random.Random(f"native-docs-{seed}").sample(range(len(parsed)),
                                                                min(n_docs, len(parsed))))
    docs = [parsed[i] for i in chosen]
    relations = get_schema(DOCRED).relations
    code = {r: c for c, r in enumerate(relations)}
    profiles, gold, facts = world_facts(docs, n_systems, seed)
    gold_set = set(gold)
    pair_id: dict[tuple[int, int, int], int] = {}
    subj_id: dict[tuple[int, int], int] = {}
    pop = Population()

    def encode(fs: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p = np.asarray([pair_id.setdefault(f[:3], len(pair_id)) for f in fs], np.int64)
        r = np.asarray([code[f[3]] for f in fs], np.int64)
        s = np.asarray([subj_id.setdefault(f[:2], len(subj_id)) for f in fs], np.int64)
        return p, r, s

    g_p, g_r, g_s = encode(gold)
    inst = []
    for prof, fs in zip(profiles, facts, strict=True):
        p, r, s = encode(fs)
        pop.add_system(prof.name, p, r, s)
        inst.append((p, r))
    pairs = list(pair_id)
    truth: list[set[str]] = [set() for _ in pairs]
    for f in gold:
        truth[pair_id[f[:3]]].add(f[3])
    types = [(docs[i].entities[h].type, docs[i].entities[t].type) for i, h, t in pairs]
    hits = np.array([sum(f in gold_set for f in fs) for fs in facts], float)
    sizes = [len(fs) for fs in facts]
    return World([p.name for p in profiles], pop, pairs, [frozenset(t) for t in truth], types,
                 inst, (g_p, g_r, g_s, np.asarray([f[0] for f in gold], np.int64)),
                 hits / np.maximum(sizes, 1), hits / max(len(gold), 1), sizes)


def key_of(answer: list[str]) -> str:
    return "|".join(sorted(answer))


def trial(w: World, seed: int, draws_per: int, exhaustive_docs: int, options: str) -> dict:
    rng = np.random.default_rng([seed, 37])
    relations = get_schema(DOCRED).relations
    code = {r: c for c, r in enumerate(relations)}
    draws = {}
    for name, (p, _) in zip(w.names, w.inst, strict=True):
        draws[name] = p[rng.integers(0, len(p), draws_per)]
    lab = np.unique(np.concatenate(list(draws.values())))
    n_lab = len(lab)
    n_ctrl = round(n_lab * CONTROL_SHARE / (1 - CONTROL_SHARE))
    rest = np.setdiff1d(np.arange(len(w.pairs)), lab)
    ctrl = rng.choice(rest, min(n_ctrl, len(rest)), replace=False)
    both = np.concatenate([lab, ctrl])
    answers_by_q, labels = _answers(w, both, seed)
    items, workers, answers = answers_by_q
    known = {n_lab + k: key_of(list(w.truth[int(u)]) or [NO_RELATION])
             for k, u in enumerate(ctrl)}
    # Production's quality pass: strata per pair types, offered answers per stratum.
    strata_of: dict[tuple[str, str], int] = {}
    strata = np.asarray([strata_of.setdefault(w.types[int(u)], len(strata_of)) for u in both])
    if options == "tac":
        sizes = np.asarray([len(predicates_for(*t)) + 1 for t in strata_of], float)
    else:
        sizes = np.full(len(strata_of), len(relations) + 1.0)
    n_options = sizes[strata]
    it, wo = np.asarray(items, np.int64), np.asarray(workers, np.int64)
    fit = one_coin(it, wo, answers, len(both), WORKERS, n_options=n_options, known=known,
                   none=NO_RELATION, strata=strata, type_shrink=SOFT_TYPE_SHRINK)
    cats = list(fit.categories)
    own = item_priors(fit.params, fit.priors, strata, len(both))
    rows = np.arange(n_lab)
    soft = soft_rows(cats, fit.posterior[rows], fit.priors, own[rows], lab, code)
    groups = [np.arange(n_lab), np.arange(n_lab, len(both))]
    reps = parameter_replicates(fit, it, wo, answers, WORKERS, groups, BOOTSTRAP,
                                np.random.default_rng([seed, 38]), n_options=n_options,
                                known=known, strata=strata, none=NO_RELATION)
    rep_soft = [soft_rows(cats, post[rows], priors, o[rows], lab, code)
                for post, priors, o in reps]
    # Hard labels: the label's first relation primary, the others further true ones.
    lp, lr = [], []
    for i, u in enumerate(lab.tolist()):
        for name in labels[i].split("|"):
            lp.append(u)
            lr.append(-1 if name == NO_RELATION else code[name])
    g_p, g_r, g_s, g_d = w.gold
    if exhaustive_docs:
        keep_docs = rng.choice(np.unique(g_d), exhaustive_docs, replace=False)
        m = np.isin(g_d, keep_docs)
        g_p, g_r, g_s, g_d = g_p[m], g_r[m], g_s[m], g_d[m]
    ev = prepare_evidence(w.pop, draws, np.asarray(lp), np.asarray(lr), g_p, g_r, g_s, g_d)
    if CROWD["hard"]:
        res = estimate(w.pop, ev, "instance", ["instance"])
    else:
        ev = self_consistent(w.pop, with_soft_labels(w.pop, ev, soft))
        res = estimate(w.pop, ev, "instance", ["instance"])
        res = widen(res, correction_variance(w.pop, ev, rep_soft, "instance", ["instance"]))
    out = {"labels": n_lab, "answers": len(answers),
           "costs": costs(w.names, draws, lab, np.bincount(it, minlength=len(both)))}
    for metric in ("precision", "recall"):
        for kind in ("joint", "simple"):
            iv = res.results["instance"][metric][kind]
            out[(metric, kind)] = np.stack([iv.estimate, iv.lo, iv.hi], axis=1)
    return out


def costs(names: list[str], draws: dict[str, np.ndarray], lab: np.ndarray,
          answers: np.ndarray) -> list[tuple[int, int, int, int, Decimal]]:
    """Per system, in submission order: draws, distinct pairs drawn, new pairs (not
    drawn by a system before it: those it pays for, as production charges a HIT to the
    submission that posted it), answers on them and their crowd cost on MTurk.

    As production posts them (crowd.posting): the new questions in HITs of PER_HIT with
    3 assignments, then HITs of the questions still without a strict majority with one
    more (twice at most); CONTROL_SHARE of each HIT's questions are controls, paid
    alike; MTurk's fee per assignment (crowd.mturk.fees).
    """
    row = {int(u): k for k, u in enumerate(lab.tolist())}
    seen: set[int] = set()
    out = []
    for name in names:
        drawn = set(draws[name].tolist())
        new = sorted(drawn - seen)
        seen |= drawn
        got = [int(answers[row[u]]) for u in new]
        cost = Decimal("0")
        carry = 0.0
        for need, assignments in ((1, 3), (4, 1), (5, 1)):
            asked = [a for a in got if a >= need]
            for start in range(0, len(asked), PER_HIT):
                chunk = len(asked[start:start + PER_HIT])
                carry += chunk * CONTROL_SHARE / (1 - CONTROL_SHARE)
                controls = int(carry)
                carry -= controls
                cost += hit_cost(REWARD * (chunk + controls), assignments)
        out.append((len(draws[name]), len(drawn), len(new), sum(got), cost))
    return out


def _answers(w: World, both: np.ndarray, seed: int):
    items, workers, answers, labels = [], [], [], {}
    pool = make_pool(WORKERS, CROWD["error"], seed, CROWD["spammers"])
    index = {wk.worker_id: n for n, wk in enumerate(pool)}
    choices = sorted({*get_schema(DOCRED).relations, NO_RELATION})
    for i, pid in enumerate(both.tolist()):
        truth = w.truth[pid] or frozenset({NO_RELATION})
        got: list[str] = []
        done: set[str] = set()
        label = None
        while len(got) < 5:
            for wk in assign_workers(pool, 3 if not got else 1, seed, pid * 10 + len(got),
                                     exclude=done):
                done.add(wk.worker_id)
                got.append(key_of(simulate_answer(wk, truth, choices, seed, pid, CAP)))
                items.append(i)
                workers.append(index[wk.worker_id])
                answers.append(got[-1])
            top, n = Counter(got).most_common(1)[0]
            if 2 * n > len(got):
                label = top
                break
        if label is None:
            counts = Counter(got)
            best = max(counts.values())
            label = min(k for k, c in counts.items() if c == best)
        labels[i] = label
    return (items, workers, answers), labels


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--systems", type=int, default=6)
    ap.add_argument("--draws", type=int, default=271)
    ap.add_argument("--exhaustive-docs", type=int, default=0)
    ap.add_argument("--options", choices=("tac", "all"), default="all")
    ap.add_argument("--error", type=float, default=0.1, help="honest workers' error rate")
    ap.add_argument("--spammers", type=float, default=0.1, help="share of spammers")
    ap.add_argument("--hard", action="store_true",
                    help="no correction: the labels alone (with --error 0, the truth)")
    args = ap.parse_args(argv)
    CROWD.update(error=args.error, spammers=args.spammers, hard=args.hard)
    if not args.source.is_file():
        print(f"skipped: {args.source} is absent (a Re-DocRED or DocRED file is needed)")
        return 0
    _, parsed = read_source(args.source)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    rec: dict = defaultdict(list)
    start = time.perf_counter()
    for seed in seeds:
        w = build_world(parsed, seed, args.docs, args.systems)
        out = trial(w, seed, args.draws, args.exhaustive_docs, args.options)
        line = [f"seed {seed:3d}: {out['labels']} labels"]
        for key in (("precision", "joint"), ("recall", "joint"),
                    ("precision", "simple"), ("recall", "simple")):
            v = out[key]
            t = w.true_p if key[0] == "precision" else w.true_r
            inside = (v[:, 1] <= t) & (t <= v[:, 2])
            rec[key].append((v, t, inside))
            line.append(f"{key[0][0]}/{key[1]} {int(inside.sum())}/{len(t)}")
        rec["names"] = w.names
        rec["costs"].append(out["costs"])
        print("; ".join(line) + f"  ({time.perf_counter() - start:.0f} s)", flush=True)
    report(rec, args)
    return 0


def report(rec: dict, args: argparse.Namespace) -> None:
    names = rec["names"]
    print("\ncosts, mean over seeds (systems charged in order; MTurk fees included):")
    print(f"{'system':14s} {'draws':>6s} {'distinct':>8s} {'new':>6s} {'answers':>8s} "
          f"{'cost $':>8s}")
    for k, name in enumerate(names):
        per = [c[k] for c in rec["costs"]]
        print(f"{name:14s} {np.mean([c[0] for c in per]):6.0f} "
              f"{np.mean([c[1] for c in per]):8.1f} {np.mean([c[2] for c in per]):6.1f} "
              f"{np.mean([c[3] for c in per]):8.1f} "
              f"{float(sum(c[4] for c in per)) / len(per):8.2f}")
    total = [sum(float(c[4]) for c in seed) for seed in rec["costs"]]
    print(f"{'all':14s} {'':6s} {'':8s} {'':6s} {'':8s} {np.mean(total):8.2f}")
    ex = f"{args.exhaustive_docs} exhaustive docs" if args.exhaustive_docs else "all docs gold"
    print(f"\n{len(rec[('recall', 'joint')])} seeds, {args.docs} docs, {args.draws} draws a "
          f"system, {ex}, options {args.options}, crowd error {args.error} spammers "
          f"{args.spammers}{', hard labels' if args.hard else ''}; instance scheme")
    print(f"{'metric':18s} {'cover':>6s} {'bias':>8s} {'MAE':>6s} {'width':>6s}  "
          "per system: signed error (coverage)")
    for key in (("precision", "joint"), ("recall", "joint"),
                ("precision", "simple"), ("recall", "simple")):
        v = np.stack([r[0] for r in rec[key]])  # seeds × m × 3
        t = np.stack([r[1] for r in rec[key]])
        inside = np.stack([r[2] for r in rec[key]])
        err = v[..., 0] - t
        se = err.std(axis=0, ddof=1) / np.sqrt(len(err))
        per = "  ".join(f"{n[-1]}:{err[:, k].mean():+.4f}±{se[k]:.4f}"
                        f"({inside[:, k].mean():.2f})" for k, n in enumerate(names))
        print(f"{key[0] + '/' + key[1]:18s} {inside.mean():6.3f} {err.mean():+8.4f} "
              f"{np.abs(err).mean():6.4f} {np.median(v[..., 2] - v[..., 1]):6.3f}  {per}")
    m = len(names)
    ok = {key: np.stack([r[2] for r in rec[key]]).sum(axis=1) >= m - 1
          for key in (("precision", "joint"), ("recall", "joint"))}
    p_ok, r_ok = ok[("precision", "joint")], ok[("recall", "joint")]
    print(f"seeds with >= {m - 1}/{m} joint intervals containing the truth: precision "
          f"{int(p_ok.sum())}, recall {int(r_ok.sum())}, both {int((p_ok & r_ok).sum())} "
          f"of {len(p_ok)}")
    for key in (("precision", "joint"), ("recall", "joint")):
        # (a seed's six intervals share a crowd and samples: the se is over seeds)
        per_seed = np.stack([r[2] for r in rec[key]]).mean(axis=1)
        se = per_seed.std(ddof=1) / np.sqrt(len(per_seed)) if len(per_seed) > 1 else np.nan
        print(f"{key[0]} joint coverage {per_seed.mean():.3f} ± {se:.3f} (se over seeds)")


if __name__ == "__main__":
    sys.exit(main())
