"""The systems' priors per (agreement group, relation family) on the kept demo worlds
(docs/internals/crowd-bias.md §16): does giving a system's attractive-relation instances
their own prior, apart from its other instances in the same agreement group, remove the
soft labels' precision error against the oracle?

Patches the agreement groups (`evidence.agreement_groups`, `AGREE_GROUPS`) in the child
so that each group splits in two — instances of the yes-biased crowd's attractive
relations and the rest — and scores the distinct joint precision at the shipped fixed
point with them, and with each (system, cell) prior at the share the gold holds right
("true prior", the bound of any fit), beside the shipped three groups and the oracle
(the gold labels of the same labelled pairs). Point estimates only: seconds per world.

Usage: python bench/demo_family_prior.py --keep DIR [--seeds 4 5 6 7]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ATTRACTIVE = ("per:employee_or_member_of", "per:title")
KEY_P = ("instance", "precision", "joint")


def _child(world: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")
    import django

    django.setup()
    from django.test.utils import override_settings

    from annotations.crowd.simulation import GoldKey
    from estimation.core import evidence as E
    from estimation.core import points as P
    from estimation.core.distinct_estimate import distinct_points
    from estimation.core.noise import with_soft_labels
    from estimation.data import PREDICATE_CODE, load_corpus_data
    from kbpo.core.models import Corpus

    corpus = Corpus.objects.get(tag="demo")
    with override_settings(KBPO_SOFT_LABELS=True, KBPO_SOFT_LABEL_BOOTSTRAP=0):
        data = load_corpus_data(corpus)
    pop = data.population
    names = {str(s.pk): s.name for s in data.submissions}
    truth = json.loads((world / "truth.json").read_text())["systems"]
    key = GoldKey.load(world / "gold.jsonl")
    from demo_prior_split import oracle_and_labels, true_group_priors

    oracle, labelled = oracle_and_labels(data, key)
    base = with_soft_labels(pop, labelled, data.soft)

    def distinct(plan, v) -> np.ndarray:
        got = plan.estimates(v, ["instance"])
        got.update(distinct_points(pop, v, "instance", ["instance"], 0.9, got,
                                   plan.state.for_evidence(v, plan.right(v))))
        return np.asarray(got[KEY_P], float)

    shipped_groups = E.agreement_groups
    attractive = np.array([PREDICATE_CODE[r] for r in ATTRACTIVE])

    def family_groups(pop_):
        keys, groups = shipped_groups(pop_)
        fam = np.isin(keys % E.ALSO_TRUE_STRIDE, attractive)
        return keys, (groups + 3 * fam).astype(groups.dtype)

    out = {"oracle": distinct(P.PointPlan(pop, oracle, "instance"), oracle)}
    for label, n_groups, groups in (("3 groups", 3, shipped_groups),
                                    ("6 cells", 6, family_groups)):
        E.AGREE_GROUPS = P.AGREE_GROUPS = n_groups
        E.agreement_groups = P.agreement_groups = groups
        plan = P.PointPlan(pop, base, "instance")
        fixed = P.consistent(plan, base)
        out[label] = distinct(plan, fixed)
        # The bound: each (system, cell) prior at the gold's share of its judged instances.
        true_group = true_group_priors(plan, oracle, n_groups)
        out[f"{label}, true prior"] = distinct(plan, replace(fixed, group_prior=true_group))
    E.AGREE_GROUPS = P.AGREE_GROUPS = 3
    E.agreement_groups = P.agreement_groups = shipped_groups
    return {names[sid]: {"truth": truth[names[sid]]["instance"]["precision"],
                         **{k: float(v[i]) for k, v in out.items()}}
            for i, sid in enumerate(pop.names)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[4, 5, 6, 7])
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        (args.child / "family.json").write_text(json.dumps(_child(args.child / "world")))
        return 0
    from demo_prior_split import run_seeds

    rows: dict[str, list[dict]] = {}
    for res in run_seeds(__file__, args.keep, args.seeds, [], "family.json").values():
        for name, r in res.items():
            rows.setdefault(name.split("_")[0] if name.startswith("sys04") else name,
                            []).append(r)
    variants = ("3 groups", "3 groups, true prior", "6 cells", "6 cells, true prior")
    print("joint P (distinct), minus oracle, mean over seeds; 'all': se over the (seed, system)")
    print(f"{'system':20s} " + " ".join(f"{v:>20s}" for v in variants))
    every = []
    for name, rs in sorted(rows.items()):
        every += rs
        print(f"{name:20s} " + " ".join(
            f"{np.mean([r[v] - r['oracle'] for r in rs]):+20.4f}" for v in variants))
    print(f"{'all':20s} " + " ".join(
        f"{np.mean(d):+13.4f} ({np.std(d, ddof=1) / np.sqrt(len(d)):.4f})"
        for d in ([r[v] - r["oracle"] for r in every] for v in variants)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
