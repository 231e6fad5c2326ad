"""The validation battery: named scenarios with exact truth, run through the real
planner and estimators, summarised as bias, coverage and width (docs/internals/estimation.md §10).

Each trial draws the evaluated systems' samples, lets the production planner size
the samples of the systems that arrive last, draws the exhaustive documents, and
estimates everything. The truth, the sampling distributions used to draw, and the
exactness of each value come from ``reference`` (plain Python), never from the
code under test.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.stats import norm

from ..core import Evidence, Population, estimate, plan_sample_size, prepare_evidence
from ..core import intervals as ci
from ..core.distinct_estimate import more_draws, plan_distinct_size
from ..core.schemes import check_scheme
from . import reference
from .crowd import CrowdLabeller, CrowdSpec
from .worlds import World, WorldSpec, make_world

METRICS = ("precision", "recall", "f1")
KINDS = ("simple", "joint")
BAND = (0.87, 0.93)  # target coverage of a nominal 90% interval
MAX_BIAS = 0.005
FAMILY_ALPHA = 0.01  # chance that a scenario's checks flag a correct estimator


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    world: WorldSpec
    draws_per_system: int = 125  # the paper: 5,000 labels for 40 systems
    exhaustive_docs: int = 40  # about 200 true instances at 5 per document
    target_halfwidth: float = 0.05  # planner target for the systems arriving last
    world_seed: int = 1
    crowd: CrowdSpec | None = None  # labels from a simulated crowd (validation/noisy.py)
    correct: bool = True  # with a crowd: soft labels (True) or its majority labels
    max_bias: float = MAX_BIAS
    # The joint kind's estimator ("importance" or "distinct", core ESTIMATORS), and
    # arrival: every system arrives in a random order and is planned (with the
    # distinct estimator: topped up while its interval is wider than planned) at
    # target_variance, as on a live leaderboard (§12); the late systems then too.
    estimator: str = "importance"
    arrival: bool = False
    target_variance: float = 0.25 / 500
    # Arrival: the largest precision half-width allowed, as a multiple of the target's.
    halfwidth_slack: float = 1.10

    def small(self) -> Scenario:
        """A cheaper version (12 systems, 8,000 pairs) for the test suite."""
        spec = replace(
            self.world,
            n_systems=12,
            n_pairs=8_000,
            disjoint_pairs=1_200,
            novel_pairs=min(self.world.novel_pairs, 600),
        )
        docs = max(3, round(self.exhaustive_docs * 0.6))
        return replace(self, world=spec, draws_per_system=100, exhaustive_docs=docs)


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("paper", "the paper's setting: 40 systems, 125 draws each", WorldSpec()),
        Scenario(
            "tiny",
            "a 6-relation system copied from one evaluated system arrives last",
            WorldSpec(late=("tiny",), tiny_size=6),
        ),
        Scenario(
            "novel",
            "a system disjoint from all others arrives last",
            WorldSpec(late=("novel",)),
        ),
        Scenario(
            "subset",
            "a system predicting 30% of another's instances arrives last",
            WorldSpec(late=("subset",)),
        ),
        Scenario(
            "heavy_tail",
            "Zipf(1.1) subject frequencies, a team of 4 systems disjoint from the rest",
            WorldSpec(subject_tail=1.1, disjoint_team=4),
        ),
        Scenario(
            "clustered",
            "6 exhaustive documents of ~37 relations each, strong document effect",
            WorldSpec(pairs_per_doc=150, doc_size_sigma=0.3, doc_effect=0.7),
            exhaustive_docs=6,
        ),
        Scenario(
            "arrival",
            "40 systems arrive in random order, each planned for the distinct estimator",
            WorldSpec(), estimator="distinct", arrival=True,
        ),
        Scenario(
            "arrival_heavy",
            "heavy_tail's world arriving in random order, the distinct estimator",
            WorldSpec(subject_tail=1.1, disjoint_team=4), estimator="distinct", arrival=True,
        ),
        Scenario(
            "arrival_novel",
            "novel's world (a disjoint system) arriving in random order, distinct estimator",
            WorldSpec(late=("novel",)), estimator="distinct", arrival=True,
        ),
        Scenario(
            "perfect",
            "a system whose every prediction is right, and one at precision 0.97",
            WorldSpec(fixed_precision=(1.0, 0.97)),
        ),
    )
}


def scenario(name: str) -> Scenario:
    """The scenario called ``name``; an unknown name is a ValueError naming the known ones."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; expected one of {', '.join(SCENARIOS)}")
    return SCENARIOS[name]


@dataclass
class Run:
    """Everything one scenario's trials produced."""

    scenario: Scenario
    world: World
    schemes: list[str]
    trials: int
    # values[(scheme, metric, kind)]: (trials × m × 3) estimate, lo, hi
    values: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    # exact[(metric, kind)]: (trials × m) the value is known exactly (reference)
    exact: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    planned: np.ndarray | None = None  # (trials × late) draws the planner asked for
    labels: np.ndarray | None = None  # (trials,) distinct labelled pairs
    controls: np.ndarray | None = None  # (trials,) control questions (crowd scenarios)
    answers: np.ndarray | None = None  # (trials,) crowd answers, controls included
    seconds: float = 0.0


class _Sampler:
    """Draws from each system's distribution, computed once by the reference code."""

    def __init__(self, world: World, scheme: str) -> None:
        self.pairs, self.cdf = [], []
        for _, pairs, preds in world.systems:
            p = reference.scheme_probabilities(
                scheme, preds.tolist(), world.subject[pairs].tolist()
            )
            self.pairs.append(pairs)
            self.cdf.append(np.cumsum(p) / max(sum(p), 1e-300))

    def draw(self, k: int, n: int, rng: np.random.Generator) -> np.ndarray:
        """n i.i.d. draws (pair ids) from system k, with replacement."""
        if n <= 0 or len(self.pairs[k]) == 0:
            return np.zeros(0, np.int64)
        idx = np.searchsorted(self.cdf[k], rng.random(n), side="right")
        return self.pairs[k][np.minimum(idx, len(self.pairs[k]) - 1)]


def run_scenario(
    scenario: Scenario,
    trials: int,
    seed: int,
    schemes: Sequence[str] = ("instance",),
    draw_scheme: str = "instance",
    progress: Callable[[int, int], None] | None = None,
) -> Run:
    """Run ``trials`` independent trials of one scenario (seeded: trial t uses [seed, t]).

    Unknown schemes and fewer than 2 trials (no coverage or bias can be measured) are a
    ValueError naming what is accepted.
    """
    check_scheme(draw_scheme)
    for s in schemes:
        check_scheme(s)
    if not isinstance(trials, int) or trials < 2:
        raise ValueError(f"trials: expected an integer of at least 2, got {trials!r}")
    start = time.perf_counter()
    world = make_world(scenario.world, np.random.default_rng(scenario.world_seed))
    schemes = [draw_scheme] + [s for s in schemes if s != draw_scheme]
    pop = Population()
    for name, pairs, preds in world.systems:
        pop.add_system(name, pairs, preds, world.subject[pairs])
    m = len(world.systems)
    run = Run(scenario, world, schemes, trials)
    run.planned = np.zeros((trials, m if scenario.arrival else len(world.late)),
                           dtype=np.int64)
    run.labels = np.zeros(trials, dtype=np.int64)
    run.controls = np.zeros(trials, dtype=np.int64)
    run.answers = np.zeros(trials, dtype=np.int64)
    docs_of = _doc_members(world)
    true_pairs = [d[world.label[d] >= 0] for d in docs_of]
    base = [k for k in range(m) if k not in world.late]
    sampler = _Sampler(world, draw_scheme)
    exactness = reference.Exactness(world)
    for t in range(trials):
        rng = np.random.default_rng([seed, t])
        crowd = None
        if scenario.crowd is not None:
            crowd = CrowdLabeller(scenario.crowd, world.label, scenario.world.n_predicates,
                                  np.random.default_rng([seed, t, 1]), scenario.correct)
        draws = {world.names[k]: np.zeros(0, np.int64) for k in range(m)}
        if scenario.arrival:
            labelled = _arrive(scenario, world, pop, sampler, draws, rng, draw_scheme,
                               run.planned[t])
        else:
            for k in base:
                draws[world.names[k]] = sampler.draw(k, scenario.draws_per_system, rng)
            labelled = set(np.concatenate(list(draws.values())).tolist())  # pair ids
        for j, k in enumerate([] if scenario.arrival else world.late):
            lab = np.array(sorted(labelled), dtype=np.int64)
            if crowd is None:
                ev = prepare_evidence(pop, draws, lab, world.label[lab])
            else:
                ev = crowd.evidence(pop, draws, lab)
            n = plan_sample_size(
                pop,
                ev,
                world.names[k],
                target_halfwidth=scenario.target_halfwidth,
                scheme=draw_scheme,
            )
            run.planned[t, j] = n
            draws[world.names[k]] = sampler.draw(k, n, rng)
            labelled.update(draws[world.names[k]].tolist())
        docs = rng.choice(world.n_docs, size=scenario.exhaustive_docs, replace=False)
        y = np.concatenate([true_pairs[d] for d in docs])
        y_docs = world.doc[y]
        lab = np.array(sorted(labelled), dtype=np.int64)
        run.labels[t] = len(lab)
        exhaustive = (y, world.label[y], world.subject[y], y_docs)
        if crowd is None:
            ev = prepare_evidence(pop, draws, lab, world.label[lab], *exhaustive)
        else:
            ev = crowd.evidence(pop, draws, lab, *exhaustive)
            run.controls[t], run.answers[t] = crowd.controls, crowd.answers
        res = estimate(pop, ev, draw_scheme, schemes, estimator=scenario.estimator)
        if crowd is not None:
            res = crowd.widen(pop, ev, res, draw_scheme, schemes,
                              np.random.default_rng([seed, t, 2]), scenario.estimator)
        for s in schemes:
            for metric in METRICS:
                for kind in KINDS:
                    iv = res.results[s][metric][kind]
                    arr = run.values.setdefault((s, metric, kind), np.zeros((trials, m, 3)))
                    arr[t] = np.stack([iv.estimate, iv.lo, iv.hi], axis=1)
        mask = np.zeros(len(world.label), dtype=bool)
        mask[lab] = True
        for k in range(m):
            own = np.zeros(len(world.label), dtype=bool)
            own[draws[world.names[k]]] = True
            exact = {
                ("precision", "joint"): exactness.precision(k, mask),
                ("precision", "simple"): exactness.precision(k, own),
                ("recall", "joint"): exactness.recall(k, mask),
                ("recall", "simple"): exactness.recall(k, mask),
            }
            for key, value in exact.items():
                # No value is known exactly from a noisy crowd's labels.
                value = value and crowd is None
                run.exact.setdefault(key, np.zeros((trials, m), dtype=bool))[t, k] = value
        if progress is not None:
            progress(t + 1, trials)
    run.seconds = time.perf_counter() - start
    return run


def _arrive(scenario: Scenario, world: World, pop: Population, sampler: _Sampler,
            draws: dict[str, np.ndarray], rng: np.random.Generator, draw_scheme: str,
            planned: np.ndarray) -> set[int]:
    """Every system in a random order, each sized by the planner of the scenario's
    estimator at its target variance given the labels so far; with the distinct
    estimator, topped up (at most 4 rounds) while its interval is wider than planned.
    Fills ``draws`` and ``planned`` (draws per system); returns the labelled pair ids."""
    labelled: set[int] = set()
    halfwidth = ci.z_value(0.9) * float(np.sqrt(scenario.target_variance))

    def evidence() -> Evidence:
        lab = np.array(sorted(labelled), dtype=np.int64)
        return prepare_evidence(pop, draws, lab, world.label[lab])

    for k in rng.permutation(len(world.systems)):
        name = world.names[k]
        plan = plan_distinct_size if scenario.estimator == "distinct" else plan_sample_size
        extra = plan(pop, evidence(), name, target_variance=scenario.target_variance,
                     scheme=draw_scheme)
        for round_ in range(5):
            if extra <= 0:
                break
            new = sampler.draw(k, extra, rng)
            draws[name] = np.concatenate([draws[name], new])
            labelled.update(new.tolist())
            if scenario.estimator != "distinct" or round_ == 4:
                break
            extra = more_draws(pop, evidence(), name, halfwidth, scheme=draw_scheme)
        planned[k] = len(draws[name])
    return labelled


def _doc_members(world: World) -> list[np.ndarray]:
    order = np.argsort(world.doc, kind="stable")
    bounds = np.searchsorted(world.doc[order], np.arange(world.n_docs + 1))
    return [order[bounds[d] : bounds[d + 1]] for d in range(world.n_docs)]


# ---- summaries ---------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table: a scheme × metric × estimator of one scenario."""

    scenario: str
    scheme: str
    metric: str
    kind: str
    bias: float  # mean over systems of (mean estimate − truth)
    max_bias: float  # largest |bias| of a system
    coverage: float  # over every (trial, system) whose value is not exact
    min_coverage: float  # of a system with at least 20 non-exact trials
    width: float  # median width over systems and trials
    focus: dict[str, tuple[float, float, int]]  # system -> (bias, coverage, non-exact trials)
    zero_width: int  # zero-width intervals around a value that is not exact
    exact: float  # share of (trial, system) values known exactly
    exact_missed: int = 0  # exact values whose printed interval misses the truth
    checks: list[tuple[str, bool]] = field(default_factory=list)


def _family_z(n_checks: int) -> float:
    """Two-sided normal quantile for a Bonferroni family of n_checks at FAMILY_ALPHA."""
    return float(norm.ppf(1 - FAMILY_ALPHA / (2 * max(n_checks, 1))))


def summarise(run: Run) -> list[Row]:
    """Bias, coverage and width per scheme × metric × estimator, with the checks."""
    world, trials = run.world, run.trials
    m = len(world.systems)
    focus = [k for role in ("tiny", "novel", "subset", "fixed")
             for k in world.roles.get(role, [])]
    focus += world.roles.get("disjoint", [])[:1]
    checked_metrics = ("precision", "recall")
    # Checks per scenario: for P and R joint, the mean coverage, each focus system's
    # coverage, the mean bias and each system's bias.
    z = _family_z(len(checked_metrics) * (2 + len(focus) + m))
    rows = []
    for s in run.schemes:
        truth = reference.true_scores(world, s)
        for metric in METRICS:
            t = truth[metric]
            for kind in KINDS:
                a = run.values[(s, metric, kind)]
                est, lo, hi = a[..., 0], a[..., 1], a[..., 2]
                exact = run.exact.get((metric, kind), np.zeros((trials, m), bool))
                if s != "instance":
                    exact = exact & (metric == "recall")  # exactness is scheme-free for R = 0
                inside = ci.covers(lo, hi, t)
                counted = ~exact
                with np.errstate(invalid="ignore", divide="ignore"):
                    cov_k = np.where(counted, inside, 0).sum(0) / counted.sum(0)
                    err = est - t
                    bias_k = np.nanmean(err, axis=0)
                    se_k = np.nanstd(err, axis=0, ddof=1) / np.sqrt((~np.isnan(err)).sum(0))
                    # Trials are independent, systems within a trial are not: the
                    # mean over systems gets its error from the per-trial means.
                    per_trial_cov = np.where(counted, inside, np.nan)
                    cov_t = np.nanmean(per_trial_cov, axis=1)
                    bias_t = np.nanmean(err, axis=1)
                # Systems with fewer than 20 non-exact trials say little about their own
                # coverage; they still count in the pooled mean.
                has_cov = counted.sum(0) >= 20
                pooled = float(inside[counted].mean()) if counted.any() else float("nan")
                zero = (hi - lo <= 0) & ~exact
                missed = _exact_missed(lo, hi, t, exact)
                row = Row(
                    run.scenario.name,
                    s,
                    metric,
                    kind,
                    float(np.nanmean(bias_k)),
                    float(np.nanmax(np.abs(bias_k))),
                    pooled,
                    float(np.nanmin(cov_k[has_cov])) if has_cov.any() else float("nan"),
                    float(np.median(hi - lo)),
                    {
                        world.names[k]: (
                            float(bias_k[k]),
                            float(cov_k[k]),
                            int(counted[:, k].sum()),
                        )
                        for k in focus
                    },
                    int(zero.sum()),
                    float(exact.mean()),
                    missed,
                )
                if s == run.schemes[0] and metric in checked_metrics and kind == "joint":
                    row.checks = _checks(
                        row, cov_t, bias_t, bias_k, se_k, trials, z, run.scenario.max_bias
                    )
                    if run.scenario.arrival and metric == "precision":
                        row.checks.append(_halfwidth_check(run.scenario, lo, hi))
                elif s == run.schemes[0] and metric in checked_metrics:
                    row.checks = [("no zero-width interval unless exact", row.zero_width == 0),
                                  _strict_check(row)]
                rows.append(row)
    return rows


def _exact_missed(lo: np.ndarray, hi: np.ndarray, truth: np.ndarray, exact: np.ndarray) -> int:
    """Exact values whose interval, printed as the outputs print it (6 decimals, lo
    rounded down, hi up), does not contain the truth under a strict comparison. The
    truth is taken at 12 decimals: the reference's own floats are that exact."""
    t = np.broadcast_to(truth, lo.shape)
    missed = 0
    for k in zip(*np.nonzero(exact), strict=True):
        a, b = ci.rounded_outward(float(lo[k]), float(hi[k]))
        missed += not (a <= round(float(t[k]), 12) <= b)
    return missed


def _halfwidth_check(spec: Scenario, lo: np.ndarray, hi: np.ndarray) -> tuple[str, bool]:
    """Arrival: every system was planned for the target, so every interval keeps it
    (up to the slack): the planner's promise, not a coverage statistic."""
    target = ci.z_value(0.9) * float(np.sqrt(spec.target_variance))
    widest = float(np.nanmax((hi - lo) / 2))
    limit = target * spec.halfwidth_slack
    return (f"widest half-width {widest:.4f} <= {limit:.4f} (target {target:.4f} "
            f"+{spec.halfwidth_slack - 1:.0%})", widest <= limit + 1e-9)


def _strict_check(row: Row) -> tuple[str, bool]:
    return (f"exact values whose printed interval misses the truth: {row.exact_missed}",
            row.exact_missed == 0)


def _checks(
    row: Row,
    cov_t: np.ndarray,
    bias_t: np.ndarray,
    bias_k: np.ndarray,
    se_k: np.ndarray,
    trials: int,
    z: float,
    max_bias: float = MAX_BIAS,
) -> list[tuple[str, bool]]:
    lo, hi = BAND
    ok_t = ~np.isnan(cov_t)
    se_cov = float(np.std(cov_t[ok_t], ddof=1) / np.sqrt(ok_t.sum())) if ok_t.sum() > 1 else 1.0
    tol = z * se_cov
    checks = [
        (
            f"mean coverage {row.coverage:.3f} in [{lo - tol:.3f}, {hi + tol:.3f}]",
            lo - tol <= row.coverage <= hi + tol,
        )
    ]
    for name, (_, cov, n) in row.focus.items():
        if n < 20:
            note = f"{name}: exact in {trials - n} of {trials} trials"
            if n:
                note += f" (covered in {round(cov * n)} of the other {n})"
            checks.append((note, True))
            continue
        c = min(max(cov, lo), hi)
        tol_f = z * np.sqrt(c * (1 - c) / n)
        checks.append(
            (
                f"{name} coverage {cov:.3f} in [{lo - tol_f:.3f}, {hi + tol_f:.3f}]",
                lo - tol_f <= cov <= hi + tol_f,
            )
        )
    se_b = float(np.nanstd(bias_t, ddof=1) / np.sqrt(trials))
    checks.append(
        (
            f"|mean bias| {abs(row.bias):.4f} <= {max_bias + z * se_b:.4f}",
            abs(row.bias) <= max_bias + z * se_b,
        )
    )
    limit = max_bias + z * np.nan_to_num(se_k)
    size = np.nan_to_num(np.abs(bias_k))
    tight = int(np.argmax(size - limit))  # the system closest to its limit
    checks.append(
        (
            f"every system |bias| <= {max_bias} + {z:.1f} se (largest {size.max():.4f}; "
            f"closest to its limit {size[tight]:.4f} <= {limit[tight]:.4f})",
            bool(np.all(size <= limit)),
        )
    )
    checks.append(
        (f"zero-width intervals around non-exact values: {row.zero_width}", row.zero_width == 0)
    )
    checks.append(_strict_check(row))
    return checks


def passed(rows: list[Row]) -> bool:
    return all(ok for r in rows for _, ok in r.checks)


def format_table(rows: list[Row]) -> str:
    """Fixed-width table, one line per scenario × scheme × metric × estimator."""
    head = (
        f"{'scenario':11s} {'scheme':15s} {'metric':9s} {'kind':6s} {'bias':>8s} "
        f"{'max|bias|':>9s} {'cover':>6s} {'min cov':>7s} {'width':>6s} {'exact':>6s} "
        "focus (bias, coverage)"
    )
    lines = [head]
    for r in rows:
        focus = "; ".join(f"{k} {b:+.4f} {c:.3f}" for k, (b, c, _) in r.focus.items())
        lines.append(
            f"{r.scenario:11s} {r.scheme:15s} {r.metric:9s} {r.kind:6s} {r.bias:+8.4f} "
            f"{r.max_bias:9.4f} {r.coverage:6.3f} {r.min_coverage:7.3f} {r.width:6.3f} "
            f"{r.exact:6.3f} {focus}"
        )
    return "\n".join(lines)


def verdict(rows: list[Row], run: Run) -> str:
    """One pass/fail line for a scenario, naming the failed checks."""
    failed = [f"{r.metric}/{r.kind}: {msg}" for r in rows for msg, ok in r.checks if not ok]
    planned = ""
    if run.scenario.arrival and run.planned is not None:
        planned = (f"; mean {np.mean(run.labels):.0f} labels and "
                   f"{np.mean(run.planned.sum(axis=1)):.0f} draws for "
                   f"{run.planned.shape[1]} systems")
    elif run.planned is not None and run.planned.size:
        planned = f"; planner gave the late system median {int(np.median(run.planned))} draws"
    if run.controls is not None and run.controls.any():
        planned += (
            f"; {int(np.median(run.controls))} control questions, "
            f"{np.mean(run.answers) / np.mean(run.labels + run.controls):.2f} answers each"
        )
    status = "PASS" if not failed else "FAIL"
    detail = "" if not failed else " — " + "; ".join(failed)
    return (
        f"{status} {run.scenario.name} ({run.trials} trials, {run.seconds:.0f} s, "
        f"median {int(np.median(run.labels))} labels{planned}){detail}"
    )
