"""Diagnosis: which term of joint recall (θ·ν) differs from truth.json on the docred world.

Usage: python bench/docred_recall_terms.py WORLD_DIR [WORLD_DIR ...]

Rebuilds each kept world's systems in memory (deterministic for the seed in
params.json) and computes, over the world's full gold, per system: truth.json's
recall (instance level), θ (share of gold instances on a mention pair some system
predicts), ν at instance level (what θ·ν = recall needs) and ν at pair level (what
ν̂ counts: a drawn pair is one true pair, the system right on it or not), and
θ·ν_pair − recall. No database needed.
"""

from __future__ import annotations

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


def terms(world: Path) -> list[dict]:
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
    out = []
    for name, ks in kept.items():
        rec = sum(k in ks for k in gold_keys) / len(gold_keys)
        nu_i = sum(k in ks for k in g_cov) / len(g_cov)
        right = {k[:5] for k in ks if k in gold_keys}
        nu_p = sum(p in right for p in p_cov) / len(p_cov)
        out.append({"seed": seed, "system": name, "truth_R": truth[name]["instance"]["recall"]
                    if "instance" in truth[name] else None, "R": rec, "theta": theta,
                    "nu_inst": nu_i, "nu_pair": nu_p, "theta_nu_pair": theta * nu_p,
                    "gap": theta * nu_p - rec, "gold": len(gold_keys),
                    "gold_pairs": len(gold_by_pair), "multi_pairs": multi,
                    "theta_hat": theta_hat, "n0": len(ex), "ex_docs": len(ex_docs),
                    "ex_same": ex == world_ex,
                    "simple_R": sum(k in ks for k in ex) / len(ex) if ex else float("nan"),
                    "nu_inst_ex": (sum(k in ks for k in ex_cov) / len(ex_cov)
                                   if ex_cov else float("nan"))})
    return out


if __name__ == "__main__":
    for w in sys.argv[1:]:
        rows = terms(Path(w))
        r0 = rows[0]
        print(f"seed {r0['seed']}: gold instances {r0['gold']} on {r0['gold_pairs']} pairs "
              f"({r0['multi_pairs']} with >1 predicate), θ {r0['theta']:.3f}")
        for r in rows:
            print(f"  {r['system']:12s} truthR {r['truth_R']} R {r['R']:.3f} "
                  f"ν_inst {r['nu_inst']:.3f} ν_pair {r['nu_pair']:.3f} "
                  f"θ·ν_pair {r['theta_nu_pair']:.3f} gap {r['gap']:+.3f}")
        print(f"  exhaustive: {r0['n0']} instances in {r0['ex_docs']} docs, equal to the "
              f"world's gold there: {r0['ex_same']}, θ̂ {r0['theta_hat']:.3f} "
              f"(θ {r0['theta']:.3f}, θ̂−θ {r0['theta_hat'] - r0['theta']:+.3f})")
        for r in rows:
            print(f"  {r['system']:12s} simple R̂ {r['simple_R']:.3f} ν_inst(Ŷ0) "
                  f"{r['nu_inst_ex']:.3f} θ̂·ν_pair {r['theta_hat'] * r['nu_pair']:.3f} "
                  f"− R {r['theta_hat'] * r['nu_pair'] - r['R']:+.3f}")
        print(f"  mean θ̂·ν_pair − R "
              f"{np.mean([r['theta_hat'] * r['nu_pair'] - r['R'] for r in rows]):+.4f}")
        print(f"  mean gap {np.mean([r['gap'] for r in rows]):+.4f}")
