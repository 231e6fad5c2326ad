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
                    "gold_pairs": len(gold_by_pair), "multi_pairs": multi})
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
        print(f"  mean gap {np.mean([r['gap'] for r in rows]):+.4f}")
