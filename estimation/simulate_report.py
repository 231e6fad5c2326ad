"""The simulation's report (`python -m estimation simulate`): TSV tables, PNG figures
and a printed summary of bias, width and coverage per scheme, metric and estimator."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .core import SCHEMES
from .core import intervals as ci
from .simulate import World, make_world, pooled, run_adaptive, run_fixed, truth

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
                cov = ci.covers(lo, hi, t).mean(axis=0)
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
