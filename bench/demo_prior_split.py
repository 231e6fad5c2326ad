"""Where the demo world's joint precision error sits, per system and agreement group,
against the gold (docs/internals/crowd-bias.md §15): on worlds kept by
`bench_noisy_demo.py --keep DIR`, the soft labels' P(prediction right) on each system's
drawn instances at the crowd's prior (no system prior), at the shipped fixed point and
with the priors fitted from decided pairs (bench/decided_prior.py), next to the share
the gold holds right; and each system's joint precision and recall point estimates (the
distinct estimator, the service's) under each, with the groups' priors set to the share
the gold holds right among each group's judged instances ("true prior": the best any fit
of those priors could do), and under the gold labels of the same
labelled pairs (the oracle: the same draws, so the sampling error cancels in the difference).

Point estimates only (no intervals, no bootstrap): seconds per world.

Usage: python bench/demo_prior_split.py --keep DIR [--seeds 4 5 6 7] [--decided 0.1]
       [--beta 0.5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FITS = ("fixed_point", "decided")
PRIORS = (*FITS, "true prior")
GROUPS = ("1 system", "2 systems", "3+ systems")
# The yes-biased crowd's attractive relations (bench/biased_confusion.py's defaults).
ATTRACTIVE = ("per:employee_or_member_of", "per:title")


def oracle_and_labels(data, key):
    """(the evidence with every labelled pair's gold relations, the evidence with the
    stored labels) on the same draws and exhaustive sample: the oracle's and the
    crowd's. ``data``: `load_corpus_data`'s; ``key``: the world's `GoldKey`."""
    from estimation.core.evidence import prepare_evidence
    from estimation.data import PREDICATE_CODE
    from submissions.models import MentionPair

    pop = data.population
    # The gold relations of every labelled pair (codes; −1 no relation).
    gold: dict[int, set[int]] = {}
    rows = MentionPair.objects.filter(pk__in=[int(p) for p in np.unique(data.label_pairs)]) \
        .select_related("document")
    for p in rows:
        t = key.truth((p.document.doc_id, p.subject_begin, p.subject_end, p.object_begin,
                       p.object_end))
        gold[p.pk] = {PREDICATE_CODE[r] for r in t if r in PREDICATE_CODE} or {-1}
    o_pairs = np.array([u for u, cs in gold.items() for _ in cs], np.int64)
    o_preds = np.array([c for cs in gold.values() for c in sorted(cs)], np.int64)
    args = (data.exhaustive_pairs, data.exhaustive_preds, data.exhaustive_subjects,
            data.exhaustive_docs)
    return (prepare_evidence(pop, data.draws, o_pairs, o_preds, *args),
            prepare_evidence(pop, data.draws, data.label_pairs, data.label_preds, *args))


def true_group_priors(plan, oracle, n_groups: int) -> np.ndarray:
    """(systems × n_groups) each (system, group) prior at the share of its judged
    instances the gold holds right: the best any fit of the groups' priors could do."""
    from estimation.core.points import PRIOR_FLOOR

    m = plan.m
    judged = plan.pop.instances()["predicates"][plan.state.judged]
    right = oracle.correct(plan.j_pairs, judged).astype(float)
    cells = plan.j_sys.astype(np.int64) * n_groups + plan.j_group
    share = np.bincount(cells, weights=right, minlength=m * n_groups) / np.maximum(
        np.bincount(cells, minlength=m * n_groups), 1)
    return np.clip(share, PRIOR_FLOOR, 1 - PRIOR_FLOOR).reshape(m, n_groups)


def run_seeds(script: str, keep: Path, seeds: list[int], child_args: list[str],
              result: str) -> dict[int, dict]:
    """Run ``script``'s child on each kept seed's world (its SQLite database, Celery
    eager) and read the JSON it writes to ``result`` there."""
    out = {}
    for seed in seeds:
        tmp = keep.resolve() / f"seed-{seed}"
        env = {k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"}
        env["DATABASE_URL"] = f"sqlite:///{tmp}/db.sqlite3"
        subprocess.run([sys.executable, script, "--keep", str(keep), "--child", str(tmp),
                        *child_args], env=env, check=True, cwd=tmp)
        out[seed] = json.loads((tmp / result).read_text())
    return out


def _child(world: Path, decided: float | None, beta: float | None = None) -> dict:
    """In a child on the kept world's SQLite: per system, the estimates and the drawn
    instances' P(right) under each variant, with the gold's verdict."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")
    import django

    django.setup()
    import decided_prior
    from django.test.utils import override_settings

    from annotations.crowd.simulation import GoldKey
    from estimation.core.distinct_estimate import distinct_points
    from estimation.core.evidence import (
        AGREE_GROUPS,
        ALSO_TRUE_STRIDE,
        agreement_groups,
    )
    from estimation.core.noise import with_soft_labels
    from estimation.core.points import PointPlan, consistent
    from estimation.data import PREDICATE_CODE, load_corpus_data
    from kbpo.core.models import Corpus

    if beta is not None:  # the re-weighting's divisor (evidence.REWEIGHT_BETA), patched
        from estimation.core import evidence, noise

        evidence.REWEIGHT_BETA = noise.REWEIGHT_BETA = beta
    corpus = Corpus.objects.get(tag="demo")
    with override_settings(KBPO_SOFT_LABELS=True, KBPO_SOFT_LABEL_BOOTSTRAP=0):
        data = load_corpus_data(corpus)
    pop = data.population
    key = GoldKey.load(world / "gold.jsonl")
    truth_json = json.loads((world / "truth.json").read_text())["systems"]
    names = {str(s.pk): s.name for s in data.submissions}

    oracle, ev = oracle_and_labels(data, key)
    soft = with_soft_labels(pop, ev, data.soft)
    plan = PointPlan(pop, soft, "instance")
    if decided is not None:
        decided_prior.DECIDED = decided
    variants = {"crowd": soft, "fixed_point": consistent(plan, soft),
                "decided": decided_prior.decided_consistent(plan, soft)}
    # The best any fit of the groups' priors could do: each (system, group) at the share
    # of its judged instances the gold holds right.
    true_group = true_group_priors(plan, oracle, AGREE_GROUPS)
    fixed = variants["fixed_point"]
    variants["true prior"] = replace(fixed, group_prior=true_group)
    key_p = ("instance", "precision", "joint")
    key_r = ("instance", "recall", "joint")
    def distinct(plan: PointPlan, v) -> dict:  # the service's joint estimator
        got = plan.estimates(v, ["instance"])
        got.update(distinct_points(pop, v, "instance", ["instance"], 0.9, got,
                                   plan.state.for_evidence(v, plan.right(v))))
        return got

    est = {k: distinct(plan, v) for k, v in variants.items()}
    est["oracle"] = distinct(PointPlan(pop, oracle, "instance"), oracle)
    keys, groups = agreement_groups(pop)
    out = {}
    for k, sid in enumerate(pop.names):
        name = names[sid]
        pairs, preds, _ = pop.system_instances(k)
        drawn = pop.lookup_pairs(np.asarray(data.draws[sid], np.int64))
        # Every draw of a pair counts each of the system's instances on it.
        at = np.concatenate([np.flatnonzero(pairs == u) for u in drawn]) \
            if len(drawn) else np.zeros(0, np.int64)
        dp, dc = pairs[at], preds[at]
        ks = dp * ALSO_TRUE_STRIDE + dc
        grp = groups[np.searchsorted(keys, ks)]
        per = {v: ev_v.correct(dp, dc, np.full(len(dp), k)).tolist()
               for v, ev_v in variants.items()}
        right = oracle.correct(dp, dc).astype(float).tolist()
        out[name] = {
            "truth_p": truth_json[name]["instance"]["precision"],
            "truth_r": truth_json[name]["instance"]["recall"],
            "p": {v: float(e[key_p][k]) for v, e in est.items()},
            "r": {v: float(e[key_r][k]) for v, e in est.items()},
            "group": grp.tolist(), "right": right, "prob": per,
            "attractive": np.isin(dc, [PREDICATE_CODE[r] for r in ATTRACTIVE]).tolist(),
            "prior": {v: variants[v].group_prior[k].tolist() for v in PRIORS}}
    return out


BINS = (0.0, 0.02, 0.1, 0.3, 0.7, 0.9, 0.98, 1.0)


def _reliability(everything: dict) -> None:
    """Drawn instances (every system, every draw) binned by P(right), at the crowd's prior
    and at the fixed point: how many, mean P, the share the gold holds right, Σ (P − right).
    Calibrated posteriors: the share equals the mean P in every bin."""
    print("\nreliability of the drawn instances' P(right): bin, then per prior (crowd | fixed "
          "point) draws, mean P, share right, Σ excess")
    for attr in (True, False):
        for v in ("crowd", "fixed_point"):
            p = np.array([x for res in everything.values() for r in res.values()
                          for x, a in zip(r["prob"][v], r["attractive"], strict=True)
                          if a == attr])
            right = np.array([x for res in everything.values() for r in res.values()
                              for x, a in zip(r["right"], r["attractive"], strict=True)
                              if a == attr])
            at = np.clip(np.searchsorted(BINS, p, side="right") - 1, 0, len(BINS) - 2)
            for b in range(len(BINS) - 1):
                m = at == b
                if m.any():
                    print(f"  {'attractive' if attr else 'other':10s} {v:11s} "
                          f"[{BINS[b]:.2f}, {BINS[b + 1]:.2f}) {int(m.sum()):5d} "
                          f"{p[m].mean():.3f} {right[m].mean():.3f} "
                          f"{(p[m] - right[m]).sum():+7.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[4, 5, 6, 7])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--decided", type=float,
                        help="the decided fit's threshold (decided_prior.DECIDED)")
    parser.add_argument("--beta", type=float,
                        help="the re-weighting's divisor β (shipped evidence.REWEIGHT_BETA 0.5)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        res = _child(args.child / "world", args.decided, args.beta)
        (args.child / "split.json").write_text(json.dumps(res))
        return 0
    extra = ([] if args.decided is None else ["--decided", str(args.decided)]) + (
        [] if args.beta is None else ["--beta", str(args.beta)])
    everything = run_seeds(__file__, args.keep, args.seeds, extra, "split.json")
    variants = ("crowd", *PRIORS, "oracle")
    print("joint precision and recall (distinct), estimate − truth per system, mean over "
          f"seeds {args.seeds}; minus oracle: paired, se over (seed, system) in brackets")
    systems = sorted({n for res in everything.values() for n in res})
    for metric in ("p", "r"):
        print(f"\n{metric.upper()} {'system':20s} " + " ".join(f"{v:>12s}" for v in variants)
              + "  minus oracle: " + " ".join(f"{v:>11s}" for v in variants[:-1]))
        allv = {v: [] for v in variants}
        for name in systems:
            errs = {v: [res[name][metric][v] - res[name][f"truth_{metric}"]
                        for res in everything.values() if name in res] for v in variants}
            for v in variants:
                allv[v].extend(errs[v])
            print(f"  {name:20s} " + " ".join(f"{np.mean(errs[v]):+12.4f}" for v in variants)
                  + "                " + " ".join(
                      f"{np.mean(np.subtract(errs[v], errs['oracle'])):+11.4f}"
                      for v in variants[:-1]))
        n = len(allv["oracle"])
        line = " ".join(f"{np.mean(allv[v]):+12.4f}" for v in variants)
        diffs = [np.subtract(allv[v], allv["oracle"]) for v in variants[:-1]]
        print(f"  {'all':20s} {line}                " + " ".join(
            f"{d.mean():+7.4f}({d.std(ddof=1) / np.sqrt(n):.4f})" for d in diffs))
    print("\nper system and agreement group, drawn instances: draws, mean P(right) crowd / "
          "fixed point / decided, share right (gold), Σ excess crowd / fixed point / decided")
    for name in systems:
        for g, label in enumerate(GROUPS):
            rows = [(p_c, p_f, p_d, r) for res in everything.values() if name in res
                    for gg, p_c, p_f, p_d, r in zip(res[name]["group"],
                                                    res[name]["prob"]["crowd"],
                                                    res[name]["prob"]["fixed_point"],
                                                    res[name]["prob"]["decided"],
                                                    res[name]["right"], strict=True)
                    if gg == g]
            if not rows:
                continue
            a = np.array(rows)
            ex = a[:, :3].sum(axis=0) - a[:, 3].sum()
            print(f"  {name:20s} {label:10s} {len(a):5d} " + " ".join(
                f"{x:.3f}" for x in a[:, :3].mean(axis=0)) + f"  {a[:, 3].mean():.3f}  "
                + " ".join(f"{x:+7.1f}" for x in ex))
    print("\nthe same by relation and truth, all systems: draws, mean P(right) crowd / fixed "
          "point / decided, share right, Σ excess crowd / fixed point / decided")
    for attr in (True, False):
        for is_right in (0.0, 1.0):
            for g, label in enumerate(GROUPS):
                rows = [(p_c, p_f, p_d, r) for res in everything.values() for name in res
                        for gg, a, p_c, p_f, p_d, r in zip(
                            res[name]["group"], res[name]["attractive"],
                            res[name]["prob"]["crowd"], res[name]["prob"]["fixed_point"],
                            res[name]["prob"]["decided"], res[name]["right"], strict=True)
                        if gg == g and a == attr and r == is_right]
                if not rows:
                    continue
                a = np.array(rows)
                ex = a[:, :3].sum(axis=0) - a[:, 3].sum()
                what = ("attractive" if attr else "other") + (", right" if is_right else ", wrong")
                print(f"  {what:20s} {label:10s} {len(a):5d} " + " ".join(
                    f"{x:.3f}" for x in a[:, :3].mean(axis=0)) + f"  {a[:, 3].mean():.3f}  "
                    + " ".join(f"{x:+7.1f}" for x in ex))
    _reliability(everything)
    print("\nagreement-group priors (1, 2, 3+ systems) per seed: fixed point | decided | true")
    for name in systems:
        for seed, res in everything.items():
            if name in res:
                pr = res[name]["prior"]
                print(f"  {name:20s} {seed:>3} " + " | ".join(
                    " ".join(f"{x:.3f}" for x in pr[v]) for v in PRIORS))
    if args.json:
        args.json.write_text(json.dumps(everything))
    return 0


if __name__ == "__main__":
    sys.exit(main())
