"""Entry points: `generate()` writes the whole demo world; `main()` is its command line."""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

from kbpo.core.schema import GPE, ORG, PER

from .common import DOC_PREFIX, PREDICATES, SCHEMES, Progress
from .facts import build_world
from .gold import Flat, gold_for_document
from .kbfile import Emitter
from .systems import make_profiles, simulate_system, world_arrays
from .text import compose_document
from .truth import scheme_probabilities, system_scores

# ---------------------------------------------------------------------------
# Entry points.
# ---------------------------------------------------------------------------


def generate(
    out_dir: Path, docs: int, systems: int, seed: int, progress: Progress | None = None
) -> dict:
    """Write corpus.jsonl, gold.jsonl, systems/*.kb, systems/index.json, truth.json."""
    if docs < 1 or systems < 1:
        raise ValueError("need at least one document and one system")
    started = time.perf_counter()
    say = progress or (lambda stage, done, total: None)
    out_dir = Path(out_dir)
    (out_dir / "systems").mkdir(parents=True, exist_ok=True)
    for stale in sorted((out_dir / "systems").glob("*.kb")):  # from an earlier run
        stale.unlink()
    rng = random.Random(seed)
    world = build_world(docs, rng)
    flat = Flat()
    step = max(1, docs // 20)
    with (
        open(out_dir / "corpus.jsonl", "w", encoding="utf-8") as fc,
        open(out_dir / "gold.jsonl", "w", encoding="utf-8") as fg,
    ):
        for i in range(docs):
            record, spans, sentences = compose_document(world, rng, f"{DOC_PREFIX}{i + 1:06d}")
            gold = gold_for_document(world, record, spans, sentences, flat)
            fc.write(json.dumps(record, ensure_ascii=False) + "\n")
            fg.write(json.dumps(gold, ensure_ascii=False, separators=(",", ":")) + "\n")
            if (i + 1) % step == 0 or i + 1 == docs:
                say("documents", i + 1, docs)

    a = world_arrays(world, flat)
    nrng = np.random.default_rng([seed, 1])
    n_y = len(a.g_pair)
    gold_pairs = np.unique(a.g_pair)
    negatives = np.setdiff1d(np.arange(len(a.p_subj)), gold_pairs)
    owner = np.full(n_y, -1, dtype=np.int64)
    private = nrng.random(n_y) < 0.06
    owner[private] = nrng.integers(0, systems, int(private.sum()))
    shared = {
        "easy": nrng.standard_normal(n_y),
        # Distractor pairs lure more; pairs with a trap predicate lure most.
        "lure": nrng.standard_normal(len(negatives))
        - 1.0 * a.p_distractor[negatives]
        - 0.5 * (a.p_trap[negatives] >= 0),
        "owner": owner,
        "negatives": negatives,
    }
    profiles = make_profiles(systems, seed)
    by_name = {p.name: i for i, p in enumerate(profiles)}
    # Gold subject entity for recall under the entity schemes.
    g_keys_unsorted = a.g_pair * len(PREDICATES) + a.g_pred
    order = np.argsort(g_keys_unsorted)
    g_pair, g_pred = a.g_pair[order], a.g_pred[order]
    g_subj = a.m_entity[a.p_subj[g_pair]]
    p_y = {s: scheme_probabilities(s, g_pair, g_pred, g_subj) for s in SCHEMES}
    emitter = Emitter(world, flat, a)
    noises: dict[int, np.ndarray] = {}
    truth_systems: dict[str, dict] = {}
    for i, prof in enumerate(profiles):
        owner_index = i
        if prof.duplicate_of is not None:
            owner_index = by_name[prof.duplicate_of]
            extra = np.random.default_rng([seed, 3000 + i]).standard_normal(n_y)
            noise = math.sqrt(0.98) * noises[owner_index] + math.sqrt(0.02) * extra
        else:
            noise = np.random.default_rng([seed, 2000 + i]).standard_normal(n_y)
        noises[i] = noise
        pr = simulate_system(a, prof, i, seed, shared, noise, owner_index)
        emitter.write(out_dir / "systems" / f"{prof.name}.kb", prof, pr, i, seed)
        keys = pr.pair * len(PREDICATES) + pr.pred
        truth_systems[prof.name] = system_scores(
            keys, pr.pair, pr.pred, pr.subj_cluster, a.g_keys, g_pair, g_pred, g_subj, p_y
        )
        say("systems", i + 1, systems)

    index = {"systems": [vars(p) for p in profiles]}
    (out_dir / "systems" / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    truth = {"schemes": list(SCHEMES), "true_instances": int(n_y), "systems": truth_systems}
    (out_dir / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return {
        "out": str(out_dir),
        "docs": docs,
        "systems": systems,
        "seed": seed,
        "entities": sum(1 for t in world.etype if t in (PER, ORG, GPE)),
        "facts": len(world.facts),
        "sentences": len(flat.sent_span),
        "mentions": len(flat.m_doc),
        "true_instances": int(n_y),
        "candidate_pairs": len(flat.p_subj),
        "seconds": round(time.perf_counter() - started, 2),
    }


def stderr_progress(stage: str, done: int, total: int) -> None:
    """Progress callback printing one self-overwriting line per stage to stderr."""
    end = "\n" if done == total else ""
    print(f"\r  {stage}: {done}/{total}", end=end, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kbpo.demo.world.generate",
        description="Generate the KBPO demo world: corpus, gold, systems and truth.",
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--docs", type=int, default=1000, help="number of documents")
    parser.add_argument("--systems", type=int, default=10, help="number of systems")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)

    try:
        summary = generate(args.out, args.docs, args.systems, args.seed, stderr_progress)
    except ValueError as exc:
        parser.error(str(exc))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
