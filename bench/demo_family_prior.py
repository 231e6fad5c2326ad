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
import subprocess
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
    from submissions.models import MentionPair

    corpus = Corpus.objects.get(tag="demo")
    with override_settings(KBPO_SOFT_LABELS=True, KBPO_SOFT_LABEL_BOOTSTRAP=0):
        data = load_corpus_data(corpus)
    pop = data.population
    names = {str(s.pk): s.name for s in data.submissions}
    truth = json.loads((world / "truth.json").read_text())["systems"]
    key = GoldKey.load(world / "gold.jsonl")
    gold: dict[int, set[int]] = {}
    for p in MentionPair.objects.filter(pk__in=[int(x) for x in np.unique(data.label_pairs)]) \
            .select_related("document"):
        t = key.truth((p.document.doc_id, p.subject_begin, p.subject_end, p.object_begin,
                       p.object_end))
        gold[p.pk] = {PREDICATE_CODE[r] for r in t if r in PREDICATE_CODE} or {-1}
    o_pairs = np.array([u for u, cs in gold.items() for _ in cs], np.int64)
    o_preds = np.array([c for cs in gold.values() for c in sorted(cs)], np.int64)
    args = (data.exhaustive_pairs, data.exhaustive_preds, data.exhaustive_subjects,
            data.exhaustive_docs)
    oracle = E.prepare_evidence(pop, data.draws, o_pairs, o_preds, *args)
    base = with_soft_labels(pop, E.prepare_evidence(pop, data.draws, data.label_pairs,
                                                    data.label_preds, *args), data.soft)

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
        judged = pop.instances()["predicates"][plan.state.judged]
        right = oracle.correct(plan.j_pairs, judged).astype(float)
        cells = plan.j_sys.astype(np.int64) * n_groups + plan.j_group
        n_cells = len(pop) * n_groups
        share = np.bincount(cells, weights=right, minlength=n_cells) / np.maximum(
            np.bincount(cells, minlength=n_cells), 1)
        true_group = np.clip(share, P.PRIOR_FLOOR, 1 - P.PRIOR_FLOOR).reshape(len(pop),
                                                                             n_groups)
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
    rows: dict[str, list[dict]] = {}
    for seed in args.seeds:
        tmp = args.keep.resolve() / f"seed-{seed}"
        env = {k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"}
        env["DATABASE_URL"] = f"sqlite:///{tmp}/db.sqlite3"
        subprocess.run([sys.executable, __file__, "--keep", str(args.keep), "--child",
                        str(tmp)], env=env, check=True, cwd=tmp)
        for name, r in json.loads((tmp / "family.json").read_text()).items():
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
