"""What both real-text worlds (docred.py, docred_native.py) write the same way: the
systems folder emptied of an earlier run's files, then per system its file and its exact
scores, systems/index.json and truth.json."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from .common import SCHEMES, Progress
from .truth import scheme_probabilities, system_scores

# (instance keys, pair ids, predicate codes, subject ids): parallel arrays, as
# truth.system_scores reads them
Encoded = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def fresh_systems_dir(out: Path, docs: int, systems: int, suffix: str) -> Path:
    """Check the sizes and make DIR/systems, without an earlier run's `*suffix` files
    (a smaller run must not leave systems behind)."""
    if docs < 1 or systems < 1:
        raise ValueError("need at least one document and one system")
    (out / "systems").mkdir(parents=True, exist_ok=True)
    for stale in sorted((out / "systems").glob(f"*{suffix}")):
        stale.unlink()
    return out / "systems"


def write_systems(out: Path, profiles: Sequence[Any], gold: Encoded, true_instances: int,
                  write_one: Callable[[int, Any], Encoded], say: Progress) -> None:
    """Write each system through `write_one(k, profile)`, which returns the instances
    its file makes (encoded as `gold` is), then index.json and truth.json."""
    g_keys, g_pair, g_pred, g_subj = gold
    p_y = {s: scheme_probabilities(s, g_pair, g_pred, g_subj) for s in SCHEMES}
    truth_systems = {}
    for k, prof in enumerate(profiles):
        keys, pairs, preds, subjects = write_one(k, prof)
        truth_systems[prof.name] = system_scores(keys, pairs, preds, subjects, g_keys, g_pair,
                                                 g_pred, g_subj, p_y)
        say("systems", k + 1, len(profiles))
    index = {"systems": [asdict(p) for p in profiles]}
    (out / "systems" / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    truth = {"schemes": list(SCHEMES), "true_instances": true_instances,
             "systems": truth_systems}
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
