"""Synthetic shared task with known truth, to check the estimators (DESIGN §6.6).

The world: mention pairs with a true relation (or none) and a subject entity;
systems from teams that share a common core of salient pairs, each team with
novel predictions of its own, a few near-duplicate runs, and one system whose
predictions no other system touches.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .core import (
    SCHEMES,
    Population,
    estimate,
    plan_sample_size,
    prepare_evidence,
    sample_draws,
    scheme_weights,
)


@dataclass
class World:
    label: np.ndarray  # (K,) true predicate code per pair, -1 for no relation
    subject: np.ndarray  # (K,) subject entity of each pair
    systems: list[tuple[str, np.ndarray, np.ndarray]]  # (name, pair ids, predicates)
    team: np.ndarray  # (m,) team of each system (near-duplicates share a team)
    disjoint: np.ndarray  # (m,) True for the system nobody else overlaps

    @property
    def y_pairs(self) -> np.ndarray:
        return np.flatnonzero(self.label >= 0)

    def population(self) -> Population:
        pop = Population()
        for name, pairs, preds in self.systems:
            pop.add_system(name, pairs, preds, self.subject[pairs])
        return pop


def _weighted_choice(
    rng: np.random.Generator, weights: np.ndarray, k: int
) -> np.ndarray:
    """k distinct indices, drawn with probability ∝ weights (Gumbel top-k)."""
    k = min(k, int((weights > 0).sum()))
    with np.errstate(divide="ignore"):
        keys = np.log(weights) + rng.gumbel(size=len(weights))
    return np.argpartition(-keys, k - 1)[:k] if k > 0 else np.zeros(0, np.int64)


def make_world(
    rng: np.random.Generator,
    n_systems: int = 40,
    n_pairs: int = 30_000,
    n_predicates: int = 20,
    true_share: float = 0.25,
    disjoint_pairs: int = 4_000,
) -> World:
    zipf = 1.0 / np.arange(1, n_predicates + 1)
    zipf /= zipf.sum()
    label = np.where(
        rng.random(n_pairs) < true_share, rng.choice(n_predicates, n_pairs, p=zipf), -1
    )
    subject = rng.integers(0, n_pairs // 5, n_pairs)
    shared = np.arange(n_pairs - disjoint_pairs)  # pairs the ordinary teams can see
    reserved = np.arange(n_pairs - disjoint_pairs, n_pairs)
    salience = rng.lognormal(0.0, 1.2, n_pairs)

    def wrong_predicate(pairs: np.ndarray) -> np.ndarray:
        pred = rng.choice(n_predicates, len(pairs), p=zipf)
        clash = pred == label[pairs]
        pred[clash] = (
            pred[clash] + 1 + rng.integers(0, n_predicates - 1, clash.sum())
        ) % (n_predicates)
        return pred

    def team_system(
        pool: np.ndarray, weight: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        recall = rng.uniform(0.05, 0.3)
        precision = rng.uniform(0.25, 0.85)
        true_pool = pool[label[pool] >= 0]
        tp = true_pool[
            _weighted_choice(rng, weight[true_pool], int(recall * len(true_pool)))
        ]
        n_fp = int(len(tp) * (1 - precision) / precision)
        fp_w = weight[pool].copy()
        fp_w[np.isin(pool, tp)] = 0
        fp = pool[_weighted_choice(rng, fp_w, n_fp)]
        return np.concatenate([tp, fp]), np.concatenate(
            [label[tp], wrong_predicate(fp)]
        )

    n_dup = max(n_systems // 5, 0)
    n_base = n_systems - n_dup - 1
    systems, team, disjoint = [], [], []
    for t in range(n_base):
        # A team's novel predictions: a private slice of pairs it favours strongly.
        boost = np.ones(n_pairs)
        boost[rng.choice(shared, len(shared) // 30, replace=False)] = 25.0
        pairs, preds = team_system(shared, salience * boost)
        systems.append((f"team{t:02d}", pairs, preds))
        team.append(t)
        disjoint.append(False)
    for d in range(n_dup):
        # Another run of an existing team: most predictions kept, a few dropped or changed.
        src = int(rng.integers(0, n_base))
        _, pairs, preds = systems[src]
        keep = rng.random(len(pairs)) < 0.95
        pairs, preds = pairs[keep].copy(), preds[keep].copy()
        change = rng.random(len(pairs)) < 0.03
        preds[change] = wrong_predicate(pairs[change])
        systems.append((f"team{src:02d}-run{d}", pairs, preds))
        team.append(src)
        disjoint.append(False)
    pairs, preds = team_system(reserved, np.ones(n_pairs))
    systems.append(("novel", pairs, preds))
    team.append(n_base)
    disjoint.append(True)
    return World(label, subject, systems, np.array(team), np.array(disjoint))


def truth(world: World, scheme: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True precision, recall and F1 of every system under ``scheme``."""
    y = world.y_pairs
    p_y = scheme_weights(scheme, world.label[y], world.subject[y])
    precision, recall = [], []
    for _, pairs, preds in world.systems:
        p = scheme_weights(scheme, preds, world.subject[pairs])
        precision.append(float(p @ (world.label[pairs] == preds)))
        hit = np.zeros(len(world.label), dtype=bool)
        hit[pairs[world.label[pairs] == preds]] = True
        recall.append(float(p_y @ hit[y]))
    prec, rec = np.array(precision), np.array(recall)
    with np.errstate(invalid="ignore"):
        f1 = np.where(prec + rec > 0, 2 * prec * rec / (prec + rec), 0.0)
    return prec, rec, f1


def pooled(world: World, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """Leave-team-out pooled precision and recall (DESIGN §1).

    The pool is every other team's predictions, fully judged; a system's
    predictions outside it count as wrong and the pool's true instances stand in
    for all true instances.
    """
    key = {}
    for k, (_, pairs, preds) in enumerate(world.systems):
        for x in zip(pairs.tolist(), preds.tolist(), strict=True):
            key.setdefault(x, set()).add(int(world.team[k]))
    precision, recall = [], []
    for k, (_, pairs, preds) in enumerate(world.systems):
        t = int(world.team[k])
        in_pool = np.array(
            [
                bool(key[x] - {t})
                for x in zip(pairs.tolist(), preds.tolist(), strict=True)
            ]
        )
        correct = world.label[pairs] == preds
        p = scheme_weights(scheme, preds, world.subject[pairs])
        precision.append(float(p @ (correct & in_pool)))
        pool_true = [
            x for x, teams in key.items() if world.label[x[0]] == x[1] and teams - {t}
        ]
        mine = set(zip(pairs[correct].tolist(), preds[correct].tolist(), strict=True))
        yp = np.array([x[0] for x in pool_true])
        yr = np.array([x[1] for x in pool_true])
        if len(yp) == 0:
            recall.append(0.0)
            continue
        p_y = scheme_weights(scheme, yr, world.subject[yp])
        recall.append(
            float(p_y @ np.array([x in mine for x in pool_true], dtype=float))
        )
    return np.array(precision), np.array(recall)


def draw_evidence(
    world: World,
    pop: Population,
    rng: np.random.Generator,
    n_draws: np.ndarray,
    n0: int,
    scheme: str,
    probs: list[np.ndarray],
):
    """Draws of n_draws[i] pairs from each system, their true labels, and Ŷ0."""
    draws = {}
    for k, (name, pairs, _) in enumerate(world.systems):
        draws[name] = pairs[sample_draws(probs[k], int(n_draws[k]), rng)]
    drawn = np.unique(np.concatenate(list(draws.values()))) if draws else np.zeros(0)
    y = world.y_pairs
    y0 = y[rng.integers(0, len(y), n0)]
    ev = prepare_evidence(
        pop, draws, drawn, world.label[drawn], y0, world.label[y0], world.subject[y0]
    )
    return ev, draws


def _progress(label: str, done: int, total: int, start: float) -> None:
    if done == total or done % max(total // 20, 1) == 0:
        rate = done / max(time.perf_counter() - start, 1e-9)
        print(
            f"\r{label}: {done}/{total} ({rate:.1f}/s)",
            end="",
            file=sys.stderr,
            flush=True,
        )
        if done == total:
            print(file=sys.stderr)


def run_fixed(
    world: World,
    trials: int,
    seed: int,
    n_per_system: int = 125,
    n0: int = 200,
    draw_scheme: str = "instance",
    confidence: float = 0.9,
    progress: bool = True,
) -> dict[tuple[str, str, str], np.ndarray]:
    """Repeat the 'every system sampled n times' experiment.

    Returns estimates[(scheme, metric, kind)] as arrays (trials × m × 3) of
    (estimate, lo, hi).
    """
    pop = world.population()
    probs = [s.probs(draw_scheme) for s in pop._systems]
    m = len(world.systems)
    rng = np.random.default_rng(seed)
    out: dict[tuple[str, str, str], np.ndarray] = {}
    start = time.perf_counter()
    for t in range(trials):
        ev, _ = draw_evidence(
            world, pop, rng, np.full(m, n_per_system), n0, draw_scheme, probs
        )
        res = estimate(pop, ev, draw_scheme, SCHEMES, confidence)
        for s, metrics in res.results.items():
            for metric, kinds in metrics.items():
                for kind, iv in kinds.items():
                    arr = out.setdefault((s, metric, kind), np.zeros((trials, m, 3)))
                    arr[t] = np.stack([iv.estimate, iv.lo, iv.hi], axis=1)
        if progress:
            _progress("fixed-sample trials", t + 1, trials, start)
    return out


def run_adaptive(
    world: World,
    trials: int,
    seed: int,
    reference_n: int = 500,
    draw_scheme: str = "instance",
    confidence: float = 0.9,
    progress: bool = True,
) -> dict[str, np.ndarray]:
    """Systems arrive one by one in random order; each gets the adaptive n.

    The target is the worst-case variance of ``reference_n`` simple samples
    (0.25/reference_n), so the first system gets exactly reference_n draws.
    Returns per trial and arrival step: draws, new distinct labels, and the final
    joint precision estimate/interval of every system.
    """
    pop = world.population()
    probs = [s.probs(draw_scheme) for s in pop._systems]
    m = len(world.systems)
    rng = np.random.default_rng(seed)
    target = 0.25 / reference_n
    n_steps = np.zeros((trials, m), dtype=np.int64)
    new_labels = np.zeros((trials, m), dtype=np.int64)
    final = np.zeros((trials, m, 3))
    start = time.perf_counter()
    for t in range(trials):
        order = rng.permutation(m)
        draws = {name: np.zeros(0, np.int64) for name, _, _ in world.systems}
        labelled = np.zeros(len(world.label), dtype=bool)
        for step, k in enumerate(order):
            name, pairs, _ = world.systems[k]
            lab = np.flatnonzero(labelled)
            ev = prepare_evidence(pop, draws, lab, world.label[lab])
            n = plan_sample_size(
                pop, ev, name, target_variance=target, scheme=draw_scheme
            )
            new = pairs[sample_draws(probs[k], n, rng)]
            draws[name] = new
            n_steps[t, step] = n
            new_labels[t, step] = len(np.unique(new[~labelled[new]]))
            labelled[new] = True
        lab = np.flatnonzero(labelled)
        ev = prepare_evidence(pop, draws, lab, world.label[lab])
        iv = estimate(pop, ev, draw_scheme, [draw_scheme], confidence).results[
            draw_scheme
        ]["precision"]["joint"]
        final[t] = np.stack([iv.estimate, iv.lo, iv.hi], axis=1)
        if progress:
            _progress("adaptive trials", t + 1, trials, start)
    return {"draws": n_steps, "new_labels": new_labels, "final_precision": final}


# ---- the report: TSV tables, PNG figures, a printed summary ---------------------

METRICS = ("precision", "recall", "f1")


def summarise(
    world: World, fixed: dict[tuple[str, str, str], np.ndarray]
) -> tuple[list[dict], list[dict]]:
    """Summary rows (scheme × metric × estimator) and per-system rows."""
    trials = next(iter(fixed.values())).shape[0]
    novel = int(np.flatnonzero(world.disjoint)[0])
    summary, per_system = [], []
    for s in SCHEMES:
        tp, tr, tf = truth(world, s)
        pp, pr = pooled(world, s)
        with np.errstate(invalid="ignore"):
            pf = np.where(pp + pr > 0, 2 * pp * pr / (pp + pr), 0.0)
        true = {"precision": tp, "recall": tr, "f1": tf}
        pool = {"precision": pp, "recall": pr, "f1": pf}
        for metric in METRICS:
            t = true[metric]
            bias = pool[metric] - t
            summary.append(
                {
                    "scheme": s,
                    "metric": metric,
                    "estimator": "pooled",
                    "trials": trials,
                    "mean_bias": bias.mean(),
                    "max_abs_bias": np.abs(bias).max(),
                    "novel_bias": bias[novel],
                    "median_width": np.nan,
                    "coverage": np.nan,
                    "min_coverage": np.nan,
                }
            )
            for kind in ("simple", "joint"):
                a = fixed[(s, metric, kind)]
                est, lo, hi = a[..., 0], a[..., 1], a[..., 2]
                with np.errstate(invalid="ignore"):
                    b = np.nanmean(est, axis=0) - t
                cov = ((lo <= t) & (t <= hi)).mean(axis=0)
                width = np.median(hi - lo, axis=0)
                summary.append(
                    {
                        "scheme": s,
                        "metric": metric,
                        "estimator": kind,
                        "trials": trials,
                        "mean_bias": b.mean(),
                        "max_abs_bias": np.abs(b).max(),
                        "novel_bias": b[novel],
                        "median_width": float(np.median(hi - lo)),
                        "coverage": cov.mean(),
                        "min_coverage": cov.min(),
                    }
                )
                for k, (name, _, _) in enumerate(world.systems):
                    per_system.append(
                        {
                            "scheme": s,
                            "metric": metric,
                            "estimator": kind,
                            "system": name,
                            "truth": t[k],
                            "pooled": pool[metric][k],
                            "mean_estimate": t[k] + b[k],
                            "bias": b[k],
                            "coverage": cov[k],
                            "median_width": width[k],
                        }
                    )
    return summary, per_system


def write_tsv(path: Path, rows: list[dict]) -> None:
    cols = list(rows[0])
    lines = ["\t".join(cols)]
    for r in rows:
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{v:.6g}" if isinstance(v, float | np.floating) else str(v))
        lines.append("\t".join(cells))
    path.write_text("\n".join(lines) + "\n")


def _figures(
    out: Path,
    world: World,
    fixed: dict[tuple[str, str, str], np.ndarray],
    per_system: list[dict],
    summary: list[dict],
    adaptive: dict[str, np.ndarray] | None,
    reference_n: int,
) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    trials = next(iter(fixed.values())).shape[0]

    # 1. Bias per system: pooled vs simple vs joint (instance scheme).
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, metric in zip(axes, ("precision", "recall"), strict=True):
        rows = [
            r for r in per_system if r["scheme"] == "instance" and r["metric"] == metric
        ]
        simple = [r for r in rows if r["estimator"] == "simple"]
        joint = [r for r in rows if r["estimator"] == "joint"]
        x = np.arange(len(simple))
        ax.axhline(0, color="black", lw=0.8)
        ax.plot(
            x,
            [r["pooled"] - r["truth"] for r in simple],
            "v",
            label="pooled",
            color="C3",
        )
        ax.plot(x, [r["bias"] for r in simple], "o", label="simple", color="C0", ms=4)
        ax.plot(x, [r["bias"] for r in joint], "s", label="joint", color="C2", ms=4)
        novel = int(np.flatnonzero(world.disjoint)[0])
        ax.axvline(novel, color="grey", ls=":", lw=1)
        ax.set_title(f"{metric}: mean estimate − truth over {trials} trials")
        ax.set_xlabel("system (dotted: the disjoint system)")
    axes[0].set_ylabel("bias")
    axes[0].legend()
    fig.tight_layout()
    paths.append(out / "bias.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    # 2. Interval widths: simple vs joint, per metric (instance scheme).
    fig, ax = plt.subplots(figsize=(8, 4))
    data, labels = [], []
    for metric in METRICS:
        for kind in ("simple", "joint"):
            a = fixed[("instance", metric, kind)]
            data.append((a[..., 2] - a[..., 1]).ravel())
            labels.append(f"{metric}\n{kind}")
    ax.boxplot(data, showfliers=False)
    ax.set_xticks(np.arange(1, len(labels) + 1), labels)
    ax.set_ylabel("width of the 90% interval")
    ax.set_title("Interval widths, all systems and trials (instance scheme)")
    fig.tight_layout()
    paths.append(out / "widths.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    # 3. Coverage per system, every scheme, with the band trials allow.
    fig, axes = plt.subplots(1, len(SCHEMES), figsize=(14, 4), sharey=True)
    band = 3 * np.sqrt(0.09 / trials)
    for ax, s in zip(axes, SCHEMES, strict=True):
        for j, metric in enumerate(METRICS):
            for kind, dx, color in (("simple", -0.12, "C0"), ("joint", 0.12, "C2")):
                cov = [
                    r["coverage"]
                    for r in per_system
                    if r["scheme"] == s
                    and r["metric"] == metric
                    and r["estimator"] == kind
                ]
                ax.plot(
                    np.full(len(cov), j + dx),
                    cov,
                    "_",
                    color=color,
                    ms=12,
                    label=kind if j == 0 else None,
                )
        ax.axhspan(0.9 - band, 0.9 + band, color="grey", alpha=0.2)
        ax.axhline(0.9, color="black", lw=0.8)
        ax.set_xticks(range(len(METRICS)), METRICS)
        ax.set_title(s)
    axes[0].set_ylabel(f"coverage of the 90% interval ({trials} trials)")
    axes[0].legend(loc="lower left")
    fig.tight_layout()
    paths.append(out / "coverage.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    # 4. Adaptive sampling: cumulative labels against reference_n per system.
    if adaptive is not None:
        k = np.arange(1, adaptive["draws"].shape[1] + 1)
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(k, reference_n * k, "k--", label=f"simple: {reference_n}·k")
        ax.plot(
            k,
            adaptive["draws"].cumsum(axis=1).mean(axis=0),
            "o-",
            ms=3,
            label="adaptive draws",
        )
        ax.plot(
            k,
            adaptive["new_labels"].cumsum(axis=1).mean(axis=0),
            "s-",
            ms=3,
            label="adaptive new labels",
        )
        ax.set_xlabel("systems evaluated (k)")
        ax.set_ylabel("cumulative labels")
        ax.set_title(f"Adaptive sampling ({adaptive['draws'].shape[0]} orders)")
        ax.legend()
        fig.tight_layout()
        paths.append(out / "adaptive.png")
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)
    return paths


def run_report(
    n_systems: int,
    trials: int,
    seed: int,
    out: Path,
    adaptive_trials: int | None = None,
    n_per_system: int = 125,
    n0: int = 200,
    draw_scheme: str = "instance",
    reference_n: int = 500,
) -> str:
    """The whole experiment; writes TSVs and PNGs to ``out`` and returns the summary text."""
    out.mkdir(parents=True, exist_ok=True)
    world = make_world(np.random.default_rng(seed), n_systems=n_systems)
    fixed = run_fixed(world, trials, seed + 1, n_per_system, n0, draw_scheme)
    summary, per_system = summarise(world, fixed)
    write_tsv(out / "summary.tsv", summary)
    write_tsv(out / "systems.tsv", per_system)

    adaptive_trials = trials if adaptive_trials is None else adaptive_trials
    adaptive = None
    lines = []
    if adaptive_trials > 0:
        adaptive = run_adaptive(
            world, adaptive_trials, seed + 2, reference_n, draw_scheme
        )
        cum_draws = adaptive["draws"].cumsum(axis=1).mean(axis=0)
        cum_new = adaptive["new_labels"].cumsum(axis=1).mean(axis=0)
        write_tsv(
            out / "adaptive.tsv",
            [
                {
                    "k": k + 1,
                    "cumulative_draws": cum_draws[k],
                    "cumulative_new_labels": cum_new[k],
                    "simple": reference_n * (k + 1),
                }
                for k in range(len(cum_draws))
            ],
        )
        tp = truth(world, draw_scheme)[0]
        fin = adaptive["final_precision"]
        cov = ((fin[..., 1] <= tp) & (tp <= fin[..., 2])).mean()
        marks = [k for k in (1, 5, 10, 20, 40) if k <= len(cum_draws)]
        lines.append(
            "adaptive (target: worst-case variance of "
            f"{reference_n} simple draws), {adaptive_trials} arrival orders:"
        )
        lines.append("  k:              " + " ".join(f"{k:>7d}" for k in marks))
        lines.append(
            "  cum. draws:     " + " ".join(f"{cum_draws[k - 1]:7.0f}" for k in marks)
        )
        lines.append(
            "  cum. new labels:" + " ".join(f"{cum_new[k - 1]:7.0f}" for k in marks)
        )
        lines.append(
            "  simple:         " + " ".join(f"{reference_n * k:7d}" for k in marks)
        )
        lines.append(
            f"  final joint precision: coverage {cov:.3f}, "
            f"median width {np.median(fin[..., 2] - fin[..., 1]):.3f}"
        )
    paths = _figures(out, world, fixed, per_system, summary, adaptive, reference_n)

    head = (
        f"{len(world.systems)} systems, {trials} trials, {n_per_system} draws per system "
        f"({draw_scheme} scheme), |Ŷ0| = {n0}; tolerance for coverage ±"
        f"{3 * np.sqrt(0.09 / trials):.3f}"
    )
    table = [
        head,
        (
            f"{'scheme':16s} {'metric':9s} {'estimator':9s} {'mean bias':>9s} "
            f"{'max|bias|':>9s} {'novel bias':>10s} {'med width':>9s} {'coverage':>8s} "
            f"{'min cov':>7s}"
        ),
    ]
    for r in summary:
        table.append(
            f"{r['scheme']:16s} {r['metric']:9s} {r['estimator']:9s} {r['mean_bias']:+9.4f} "
            f"{r['max_abs_bias']:9.4f} {r['novel_bias']:+10.4f} {r['median_width']:9.3f} "
            f"{r['coverage']:8.3f} {r['min_coverage']:7.3f}"
        )
    text = "\n".join(
        [*table, "", *lines, "", "wrote: " + ", ".join(p.name for p in paths)]
    )
    (out / "summary.txt").write_text(text + "\n")
    return text
