"""Diagnosis: which term of joint recall (θ·ν) differs from truth.json on the docred world.

Usage: python bench/docred_recall_terms.py [--pair] WORLD_DIR [WORLD_DIR ...]

Rebuilds each kept world's systems in memory (deterministic for the seed in
params.json) and computes, over the world's full gold, per system: truth.json's
recall (instance level), θ (share of gold instances on a mention pair some system
predicts), ν at instance level (what θ·ν = recall needs, and what ν̂ estimates since
issue 17) and ν at pair level (what ν̂ counted before: a drawn pair one true pair, the
system right on it or not; --pair). With the kept database beside the world
(bench_noisy_demo --keep: DIR/seed-N/{world,db.sqlite3}, opened read-only) also θ̂ from
the stored exhaustive sample, ν̂ from the stored instance draws with the gold in place
of every label, and ν̂ over REDRAWS redrawn designs (its mean and spread around its
target); then per seed θ̂ν̂ − R = counting (θ·target − R) + θ̂'s error + ν̂'s draw error.

Measured (120 docs, 6 systems, means over systems; seeds 1–6 with salted draws,
bench_noisy_demo): per pair, counting +0.019 +0.019 +0.007 +0.008 +0.009 +0.007; per
instance it is 0 (θ·ν_inst = R exactly) and θ̂ν̂ − R is +0.013 +0.022 +0.014 −0.012
+0.034 +0.007 = θ̂'s error (+0.011 on average) + the draws' (+0.002 on average).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kbpo.demo.world.docred import (
    SystemWriter,
    build_documents,
    gold_lines_of,
    load_source,
    make_profiles,
    universe_of,
)


def exhaustive_gold(db: Path) -> set[tuple]:
    """The exhaustive sample's gold instances stored in the kept database (end exclusive)."""
    if not db.is_file():
        return set()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "select d.doc_id, g.subject_begin, g.subject_end, g.object_begin, g.object_end,"
        " g.predicate from annotations_goldrelation g join kbpo_document d"
        " on d.id = g.document_id join annotations_exhaustivedocument e"
        " on e.document_id = d.id").fetchall()
    con.close()
    return {tuple(r) for r in rows}


REDRAWS = 400


def gold_nu_hat(db: Path, gold_keys: set[tuple], per_pair: bool = False) -> dict[str, float]:
    """ν̂ per system from the kept database's instance-scheme draws with the gold in place
    of every label, as recall.py computes it: Σ_d a g_i / Σ_d a, a = κ/q with κ the gold
    predicates on the drawn pair (0 without), g_i the share of them system i names, q the
    balance-heuristic proposal Σ_j (n_j/N) p_j with p_j uniform over system j's
    instances. ``per_pair``: as recall.py did before issue 17, a = [pair holds gold]/q
    and g_i = [i names one of them]."""
    if not db.is_file():
        return {}
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    inst = con.execute(
        "select s.name, d.doc_id, p.subject_begin, p.subject_end, p.object_begin,"
        " p.object_end, i.predicate, p.id from submissions_relationinstance i"
        " join submissions_submission s on s.id = i.submission_id"
        " join submissions_mentionpair p on p.id = i.pair_id"
        " join kbpo_document d on d.id = p.document_id").fetchall()
    draws = con.execute(
        "select s.name, i.pair_id from annotations_sampledraw a"
        " join submissions_relationinstance i on i.id = a.instance_id"
        " join submissions_submission s on s.id = a.submission_id"
        " where a.scheme = 'instance'").fetchall()
    con.close()
    size: dict[str, int] = defaultdict(int)
    on_pair: dict[tuple[str, int], int] = defaultdict(int)
    pair_key: dict[int, tuple] = {}
    named: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for name, *key, pred, pid in inst:
        size[name] += 1
        on_pair[(name, pid)] += 1
        pair_key[pid] = tuple(key)
        if (*key, pred) in gold_keys:
            named[name][pid].add(pred)
    kappa: dict[tuple, int] = defaultdict(int)  # gold predicates per pair
    for k in gold_keys:
        kappa[k[:5]] += 1

    def weight(pid: int) -> float:
        k = kappa.get(pair_key[pid], 0)
        return float(k > 0) if per_pair else float(k)

    def hit(name: str, pid: int) -> float:
        found = len(named[name].get(pid, ()))
        return float(found > 0) if per_pair else found / max(weight(pid), 1.0)

    n: dict[str, int] = defaultdict(int)
    for name, _ in draws:
        n[name] += 1
    total = sum(n.values())

    def q(pid: int) -> float:
        return sum(n[j] / total * on_pair.get((j, pid), 0) / size[j] for j in n)

    qs = {pid: q(pid) for pid in {pid for _, pid in draws}}
    a = [(pid, weight(pid) / qs[pid]) for _, pid in draws]
    den = sum(w for _, w in a)
    out = {name: sum(w * hit(name, pid) for pid, w in a) / den for name in size}
    # E[den] = N × (true pairs or instances some system predicts): den below it raises
    # every ν̂ alike.
    n_true = sum(weight(pid) for pid in {pid for (_, pid) in on_pair})
    out["den_ratio"] = den / (total * n_true)
    # The same design redrawn (REDRAWS times, n_j draws per system from its instances):
    # ν̂'s mean and spread around its target, to tell draw noise from bias.
    rng = np.random.default_rng(0)
    pids = sorted({pid for (_, pid) in on_pair})
    idx = {pid: k for k, pid in enumerate(pids)}
    qv = np.array([q(pid) for pid in pids])
    tv = np.array([weight(pid) for pid in pids])
    av = np.where(qv > 0, tv / np.maximum(qv, 1e-300), 0.0)
    names = sorted(size)
    gm = np.array([[hit(nm, pid) for pid in pids] for nm in names])
    sims = []
    for _ in range(REDRAWS):
        cnt = np.zeros(len(pids))
        for j in n:
            mine = [idx[pid] for (nm, pid), c in on_pair.items() if nm == j for _ in range(c)]
            np.add.at(cnt, rng.choice(mine, size=n[j]), 1.0)
        sims.append((gm @ (cnt * av)) / (cnt @ av))
    sims = np.array(sims)
    for k, nm in enumerate(names):
        out[f"{nm}:mean"] = float(sims[:, k].mean())
        out[f"{nm}:sd"] = float(sims[:, k].std())
    out["mean_dev_sd"] = float(sims.mean(axis=1).std())
    return out


def terms(world: Path, per_pair: bool = False) -> list[dict]:
    params = json.loads((world / "params.json").read_text())
    seed = params["seed"]
    docs, _, gold, _ = build_documents(load_source(Path(params["source"])), params["docs"], seed)
    gold_lines, gold_keys = gold_lines_of(docs, gold)
    easy = np.random.default_rng([seed, 1]).standard_normal(len(gold_lines))
    writer = SystemWriter(docs, gold_keys, universe_of(docs), seed)
    truth = json.loads((world / "truth.json").read_text())["systems"]
    kept = {}
    for k, prof in enumerate(make_profiles(params["systems"], seed)):
        _, keys = writer.choose(prof, k, gold_lines, easy)
        kept[prof.name] = set(keys)
    gold_by_pair: dict[tuple, set[str]] = defaultdict(set)
    for key in gold_keys:
        gold_by_pair[key[:5]].add(key[5])
    covered = {key[:5] for ks in kept.values() for key in ks}
    g_cov = [k for k in gold_keys if k[:5] in covered]
    p_cov = [p for p in gold_by_pair if p in covered]
    theta = len(g_cov) / len(gold_keys)
    multi = sum(len(v) > 1 for v in gold_by_pair.values())
    ex = exhaustive_gold(world.parent / "db.sqlite3")
    ex_cov = [k for k in ex if k[:5] in covered]
    theta_hat = len(ex_cov) / len(ex) if ex else float("nan")
    ex_docs = {k[0] for k in ex}
    world_ex = {k for k in gold_keys if k[0] in ex_docs}
    nu_hat = gold_nu_hat(world.parent / "db.sqlite3", gold_keys, per_pair)
    out = []
    for name, ks in kept.items():
        rec = sum(k in ks for k in gold_keys) / len(gold_keys)
        nu_i = sum(k in ks for k in g_cov) / len(g_cov)
        right = {k[:5] for k in ks if k in gold_keys}
        nu_p = sum(p in right for p in p_cov) / len(p_cov)
        target = nu_p if per_pair else nu_i  # what ν̂ estimates
        out.append({"seed": seed, "system": name, "truth_R": truth[name]["instance"]["recall"]
                    if "instance" in truth[name] else None, "R": rec, "theta": theta,
                    "nu_inst": nu_i, "nu_pair": nu_p, "theta_nu_pair": theta * nu_p,
                    "gap": theta * nu_p - rec, "target": target,
                    "counting": theta * target - rec, "gold": len(gold_keys),
                    "gold_pairs": len(gold_by_pair), "multi_pairs": multi,
                    "theta_hat": theta_hat, "n0": len(ex), "ex_docs": len(ex_docs),
                    "ex_same": ex == world_ex, "nu_hat": nu_hat.get(name, float("nan")),
                    "nu_hat_mean": nu_hat.get(f"{name}:mean", float("nan")),
                    "nu_hat_sd": nu_hat.get(f"{name}:sd", float("nan")),
                    "nu_mean_dev_sd": nu_hat.get("mean_dev_sd", float("nan")),
                    "den_ratio": nu_hat.get("den_ratio", float("nan")),
                    "simple_R": sum(k in ks for k in ex) / len(ex) if ex else float("nan"),
                    "nu_inst_ex": (sum(k in ks for k in ex_cov) / len(ex_cov)
                                   if ex_cov else float("nan"))})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("worlds", type=Path, nargs="+", metavar="WORLD_DIR",
                        help="a kept world (bench_noisy_demo --keep DIR: DIR/seed-N/world)")
    parser.add_argument("--pair", action="store_true",
                        help="ν̂ counted per true pair, as recall.py did before issue 17")
    args = parser.parse_args(argv)
    target = "ν_pair" if args.pair else "ν_inst"
    summary = []
    for w in args.worlds:
        rows = terms(w, args.pair)
        r0 = rows[0]
        print(f"seed {r0['seed']}: gold instances {r0['gold']} on {r0['gold_pairs']} pairs "
              f"({r0['multi_pairs']} with >1 predicate), θ {r0['theta']:.3f}; ν̂ counts "
              f"{'pairs' if args.pair else 'instances'} (target {target})")
        for r in rows:
            print(f"  {r['system']:12s} truthR {r['truth_R']} R {r['R']:.3f} "
                  f"ν_inst {r['nu_inst']:.3f} ν_pair {r['nu_pair']:.3f} "
                  f"θ·ν_pair − R {r['gap']:+.3f} θ·{target} − R {r['counting']:+.3f}")
        print(f"  exhaustive: {r0['n0']} instances in {r0['ex_docs']} docs, equal to the "
              f"world's gold there: {r0['ex_same']}, θ̂ {r0['theta_hat']:.3f} "
              f"(θ {r0['theta']:.3f}, θ̂−θ {r0['theta_hat'] - r0['theta']:+.3f})")
        for r in rows:
            print(f"  {r['system']:12s} simple R̂ {r['simple_R']:.3f} ν_inst(Ŷ0) "
                  f"{r['nu_inst_ex']:.3f} | gold ν̂ {r['nu_hat']:.3f} "
                  f"(−{target} {r['nu_hat'] - r['target']:+.3f}) θ̂·ν̂ "
                  f"{r['theta_hat'] * r['nu_hat']:.3f} − R "
                  f"{r['theta_hat'] * r['nu_hat'] - r['R']:+.3f}")
        print(f"  redrawn ν̂ (gold): mean − {target}, sd per system: " + ", ".join(
            f"{r['nu_hat_mean'] - r['target']:+.3f}/{r['nu_hat_sd']:.3f}" for r in rows)
            + f"; observed mean ν̂ − {target} "
            f"{np.mean([r['nu_hat'] - r['target'] for r in rows]):+.4f} (sd of the redrawn "
            f"mean {r0['nu_mean_dev_sd']:.4f}); ν̂'s denominator / its expectation "
            f"{r0['den_ratio']:.3f}")
        # θ̂ν̂ − R = counting (θ·target − R) + θ̂'s error (θ̂ − θ)·target + the draws'
        # θ̂ (ν̂ − target).
        parts = [np.mean([r[k] for r in rows]) for k in ("counting",)] + [
            np.mean([(r["theta_hat"] - r["theta"]) * r["target"] for r in rows]),
            np.mean([r["theta_hat"] * (r["nu_hat"] - r["target"]) for r in rows])]
        total = np.mean([r["theta_hat"] * r["nu_hat"] - r["R"] for r in rows])
        summary.append((r0["seed"], total, *parts))
    print(f"\n{'seed':>4} {'θ̂ν̂ − R':>8} {'counting':>9} {'θ̂ error':>8} {'draws':>7}"
          "  (means over systems, gold labels)")
    for seed, total, counting, th, dr in summary:
        print(f"{seed:>4} {total:+8.4f} {counting:+9.4f} {th:+8.4f} {dr:+7.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
