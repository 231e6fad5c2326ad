"""Does the noise correction's bootstrap carry the soft labels' error on the demo world
with the yes-biased crowd? (docs/internals/crowd-bias.md §16.)

On worlds kept by `bench_noisy_demo.py --keep DIR`, per system: the joint precision
(distinct estimator) from the soft labels, its error against the oracle (the gold labels
of the same labelled pairs: the sampling error cancels), the correction's sd over the
bootstrap replicates, the sampling half-width and the widened interval; per attractive
relation: the fitted false-yes rates (relation and (worker, relation) cells) against the
simulated crowd's (`--confusion`), their spread over the replicates and the sd of their
Beta posteriors given the exposures. Variants of the replicates (`--variants`):

- ``boot``: the shipped bootstrap over questions (labelled and control questions drawn
  separately), B replicates refitted;
- ``beta``: each bootstrap replicate with its false-yes rates redrawn from their Beta
  posteriors — the relation's rate ρ_r from Beta(x_r + s_r c, n_r − x_r + s_r(1 − c)),
  then each cell from Beta(said + s_c f_w ρ_r, exposed − said + s_c(1 − f_w ρ_r)) with
  the replicate's counts and strengths — and the original answers' posterior recomputed;
- ``beta_cells``: the same with ρ_r kept at the replicate's fit (cells drawn only);
- ``fit``: no bootstrap; one replicate, the fit's own parameters (the baseline of ``true``);
- ``true_refit``: no bootstrap; the model refitted with the attractive cells held at the
  simulated crowd's rates in every M-step (class shares, miss rates refitted with them);
- ``true_miss``: as ``true_refit`` with the attractive relations' miss rates (truth r,
  answer none) held at the simulated ones instead (`_true_miss`; leave-one-out off on
  them); ``true_both``: both held;
- ``true_shares``: the model refitted with its class shares (corpus-wide and per pair
  type) held at the gold's, shrunk as `one_coin` shrinks them;
- ``true``: no bootstrap; one replicate whose attractive cells are the simulated crowd's
  rates (the rest as fitted): what the labels would read with exactly known cells.

Every variant also scores the replicate-0 soft labels at the full fixed point (the
point a variant's labels give), so ``true`` measures the cells' share of the error. Last,
a prototype interval term for the posteriors' calibration error measured on the controls
(`_calibration_report`), and (crowd-bias.md §17) the answer-noise multiplier φ measured on
the controls scored as instances (`_phi_report`: the intervals with the labels' variance
× 0, × φ, × 2; the controls' reliability; the gold's own φ) and a calibration-bias term
from the same controls (`_bias_report`). ``--folds K``: the controls' posteriors from K
refits, each without one fold's known answers.

Usage: python bench/demo_boot_spread.py --keep DIR --confusion F.json [--seeds 4 5 6 7]
       [--replicates 8] [--variants boot beta beta_cells fit true true_refit true_miss true_both
       true_shares workers] [--beta 0.5] [--folds 5]
       [--error 0.05] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from itertools import pairwise
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ATTRACTIVE = ("per:employee_or_member_of", "per:title")
KEY_P = ("instance", "precision", "joint")
Z90 = 1.6448536269514722


def _yes_parts(p_none: np.ndarray, items: np.ndarray, workers: np.ndarray, obs: np.ndarray,
               nc: int, n_w: int, offered) -> dict:
    """`rates.false_yes_rates`'s intermediate values (counts, rates, strengths)."""
    from annotations.quality import rates as R

    return R.false_yes_parts(p_none, items, workers, obs, nc, n_w, offered)


def _draw_cells(parts: dict, rng: np.random.Generator, hier: bool) -> np.ndarray:
    """False-yes cells drawn from their Beta posteriors (``hier``: ρ_r drawn first)."""
    relation = parts["relation"]
    if hier:
        a = parts["x_r"] + parts["s_r"] * parts["crowd"]
        b = np.maximum(parts["n_r"] - parts["x_r"], 0) + parts["s_r"] * (1 - parts["crowd"])
        relation = rng.beta(np.maximum(a, 1e-9), np.maximum(b, 1e-9))
    prior = np.clip(parts["worker"][:, None] * relation[None, :], 1e-6, 0.99)
    s_c = parts["s_c"][None, :]
    a = parts["said"] + s_c * prior
    b = np.maximum(parts["exposed"] - parts["said"], 0) + s_c * (1 - prior)
    return np.clip(rng.beta(np.maximum(a, 1e-9), np.maximum(b, 1e-9)), 1e-6, 1 - 1e-3)


def _beta_sd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))


def _control_check(fit, args: tuple, aggregation) -> dict:
    """The controls that hold none on pairs offering an attractive relation: how many,
    and their mean P(relation) under the fit's parameters with their known answer left
    out (what the controls could tell of the false attractive pairs' calibration; the
    fit itself counted them, so this is optimistic)."""
    items, workers, answers, n_items, kw = args
    cats = fit.categories
    nc = fit.params.none_index
    inside = aggregation.within_offered(answers, np.asarray(kw["strata"], np.int64)[items],
                                        kw["offered"], cats[nc])
    items, workers = np.asarray(items)[inside], np.asarray(workers)[inside]
    answers = [a for a, ok in zip(answers, inside.tolist(), strict=True) if ok]
    post = aggregation.coin_posterior(fit.params, items, workers, answers, n_items,
                                      n_options=kw["n_options"], strata=kw["strata"])
    strata = np.asarray(kw["strata"], np.int64)
    table = fit.params.offered
    out = {}
    for r in ATTRACTIVE:
        cols = [j for j, c in enumerate(cats) if r in str(c).split("|")]
        if not cols:
            continue
        c = cats.index(r)
        ctrl = [i for i, a in kw["known"].items() if a == cats[nc]
                and strata[i] < len(table) and table[strata[i], c] > 0]
        holds = [i for i, a in kw["known"].items() if r in str(a).split("|")]
        test = np.array([i for i in range(n_items) if i not in kw["known"]
                         and strata[i] < len(table) and table[strata[i], c] > 0])
        out[r] = {"controls": len(ctrl),
                  "controls_p": float(post[ctrl][:, cols].sum(axis=1).mean()) if ctrl else None,
                  # P(r) per control: holding none (truth 0) and holding r (truth 1).
                  "p_none": post[ctrl][:, cols].sum(axis=1).tolist(),
                  "p_holds": post[holds][:, cols].sum(axis=1).tolist(),
                  "labelled_offering": len(test)}
    return out


def _control_events(fit, args: tuple, aggregation, beta: float,
                    held_out: np.ndarray | None = None) -> dict:
    """Every (control, relation offered on its pair) as an event for φ
    (`noise.calibration_multiplier`): P(relation) under the fit's parameters with the
    known answer left out, whether the known answer holds it, the share the re-weighting
    divides out for it (crowd-wide and pair type's, `odds_between` at β), and its
    relation; an answer "a|b" gives its probability to both. ``held_out``: the
    controls' posteriors from refits without their fold's known answers instead."""
    from estimation.core.evidence import odds_between

    items, workers, answers, n_items, kw = args
    cats = fit.categories
    nc = fit.params.none_index
    strata = np.asarray(kw["strata"], np.int64)
    inside = aggregation.within_offered(answers, strata[items], kw["offered"], cats[nc])
    items, workers = np.asarray(items)[inside], np.asarray(workers)[inside]
    answers = [a for a, ok in zip(answers, inside.tolist(), strict=True) if ok]
    post = aggregation.coin_posterior(fit.params, items, workers, answers, n_items,
                                      n_options=kw["n_options"], strata=kw["strata"]) \
        if held_out is None else held_out
    own = aggregation.item_priors(fit.params, fit.priors, kw["strata"], n_items)
    table = fit.params.offered
    rels = sorted({r for c in cats if c != cats[nc] for r in str(c).split("|")})
    p, y, div, rel = [], [], [], []
    for r in rels:
        cols = [j for j, c in enumerate(cats) if c != cats[nc] and r in str(c).split("|")]
        single = cats.index(r) if r in cats else cols[0]
        for i, a in kw["known"].items():
            if strata[i] >= len(table) or table[strata[i], single] <= 0:
                continue  # not offered on this pair: no instance-like event
            p.append(float(post[i, cols].sum()))
            y.append(float(r in str(a).split("|")))
            div.append(float(odds_between(np.array([fit.priors[cols].sum()]),
                                          np.array([own[i, cols].sum()]), beta)[0]))
            rel.append(r)
    return {"p": p, "y": y, "divisor": div, "relation": rel}


def _true_miss(held: dict, cats: list) -> dict:
    """(worker, attractive relation) → the simulated P(answer none | the pair holds it)
    of each honest worker: an error (1 − accuracy, `simulation.make_pool` as the demo drew
    it) spread evenly over a question's other options, none among them; the options'
    count averaged over the labelled questions offering the relation."""
    from annotations.crowd.simulation import make_pool

    acc = {w.worker_id: w.accuracy for w in make_pool(20, held["error"], held["seed"], 0.1)
           if not w.spammer}
    kw = held["args"][4]
    strata, n_opt = np.asarray(kw["strata"], np.int64), np.asarray(kw["n_options"], float)
    table = held["model"].fit.params.offered
    out = {}
    for r in ATTRACTIVE:
        if r not in cats:
            continue
        c = cats.index(r)
        on = (strata < len(table)) & (table[np.minimum(strata, len(table) - 1), c] > 0)
        k = float(n_opt[on].mean())
        for w, e in enumerate(held["external"]):
            if e in acc:
                out[(w, c)] = (1 - acc[e]) / max(k - 1, 1)
    return out


def _child(world: Path, confusion: Path, replicates: int, variants: list[str],
           error: float, beta: float | None = None, folds: int = 0) -> dict:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbpo.settings")
    import django

    django.setup()
    from dataclasses import replace

    from django.conf import settings
    from django.test.utils import override_settings

    from annotations.crowd.simulation import GoldKey
    from annotations.models import CrowdWorker
    from annotations.quality import aggregation
    from annotations.quality import rates as R
    from annotations.quality.aggregation import NO_RELATION, answer_key
    from annotations.quality.label_table import label_table
    from annotations.quality.worker_bootstrap import worker_replicates
    from estimation import correction, crowd_model
    from estimation.core.distinct_estimate import distinct_points
    from estimation.core.estimators import estimate
    from estimation.core.evidence import prepare_evidence
    from estimation.core.noise import (
        as_instances,
        calibration_multiplier,
        replicate_estimates,
        self_consistent,
        with_soft_labels,
    )
    from estimation.core.points import PointPlan
    from estimation.data import PREDICATE_CODE, load_corpus_data
    from kbpo.core.models import Corpus
    from submissions.models import MentionPair

    estimator = settings.KBPO_JOINT_ESTIMATOR
    if beta is not None:  # the re-weighting's divisor (evidence.REWEIGHT_BETA), patched
        from estimation.core import evidence, noise

        evidence.REWEIGHT_BETA = noise.REWEIGHT_BETA = beta
    corpus = Corpus.objects.get(tag="demo")
    truth_json = json.loads((world / "truth.json").read_text())["systems"]
    true_yes = json.loads(confusion.read_text())["workers"]

    # Record each outer one_coin fit's last false-yes M-step (the fit's and each
    # replicate's: the blind-spot stage's inner fit, type_shrink inf, is not recorded).
    last: dict = {}
    recorded: list[dict] = []
    orig_fy, orig_oc = R.false_yes_rates, aggregation.one_coin

    def fy(p_none, items, workers, obs, nc, n_w, offered):
        last["parts"] = (p_none, items, workers, obs, nc, n_w, offered)
        out = orig_fy(p_none, items, workers, obs, nc, n_w, offered)
        if held.get("known_cells"):  # the attractive cells held at the simulated rates
            for (w, c), rate in held["known_cells"].items():
                out[w, c] = rate
        return out

    def oc(*args, **kwargs):
        res = orig_oc(*args, **kwargs)
        if kwargs.get("type_shrink") != np.inf and "parts" in last:
            recorded.append(_yes_parts(*last.pop("parts")))
        return res

    orig_lr, orig_loo = R.lopsided_rates, R.loo_cell_terms

    def lr(*args, **kwargs):
        out = orig_lr(*args, **kwargs)
        if held.get("known_miss"):  # the attractive miss rates held at the simulated ones
            per_type = np.array(out[3], copy=True)
            for (w, c), rate in held["known_miss"].items():
                per_type[w, c] = rate
            out = (*out[:3], per_type, *out[4:])
        return out

    def loo(rates, items, workers, said_none, post, nc, inc):
        out = orig_loo(rates, items, workers, said_none, post, nc, inc)
        if held.get("known_miss"):  # held rates are not the cells' own: no leave-one-out
            out[:, sorted({c for _, c in held["known_miss"]})] = 0.0
        return out

    R.lopsided_rates, R.loo_cell_terms = lr, loo
    orig_e = aggregation._e_step

    def e_step(rates, priors, shares, *args, **kwargs):
        if held.get("known_shares") is not None:  # the class shares held at the gold's
            priors, shares = held["known_shares"]
        return orig_e(rates, priors, shares, *args, **kwargs)

    aggregation._e_step = e_step
    R.false_yes_rates = fy
    aggregation.one_coin = crowd_model.one_coin = oc

    held: dict = {}
    orig_fit = crowd_model.fit_crowd

    def fit_once(items, workers, answers, n_items, n_workers, **kw):
        # One refit per world (seeded from the answers: every variant the same).
        if "model" not in held:
            recorded.clear()
            held["model"] = orig_fit(items, workers, answers, n_items, n_workers, **kw)
            held["parts"] = list(recorded)  # [fit, replicate 1, ...]
            held["args"] = (items, workers, answers, n_items, kw)
        model = held["model"]
        v = held["variant"]
        if "controls" not in held:
            held["controls"] = _control_check(model.fit, held["args"], aggregation)
            from estimation.core import evidence as ev_module

            held_out = None
            if folds > 1:  # each fold of controls refitted without its known answers
                items, workers, answers, n_items, kw = held["args"]
                held_out = np.array(model.fit.posterior, copy=True)
                ctrl = sorted(kw["known"])
                for f in range(folds):
                    out_f = ctrl[f::folds]
                    kept = {i: a for i, a in kw["known"].items() if i not in set(out_f)}
                    refit = orig_fit(items, workers, answers, n_items, n_workers,
                                     **{**kw, "known": kept, "replicates": 0}).fit
                    held_out[out_f] = refit.posterior[out_f]
            held["events"] = _control_events(model.fit, held["args"], aggregation,
                                             ev_module.REWEIGHT_BETA, held_out)
        if v == "boot":
            return model
        if v == "workers":
            # A bootstrap over workers (crowd-bias.md §18): the answers redrawn with
            # their workers, refitted and re-labelled.
            items, workers, answers, n_items, kw = held["args"]
            reps = worker_replicates(
                model.fit, items, workers, answers, len(model.replicates),
                np.random.default_rng(39), n_options=kw["n_options"], known=kw["known"],
                strata=kw["strata"], none=NO_RELATION, offered=kw.get("offered"))
            return crowd_model.CrowdFit(model.fit, reps, model.params, model.refused)
        if v == "true_shares":
            items, workers, answers, n_items, kw = held["args"]
            held["known_shares"] = held["gold_shares"](model.fit.categories, kw)
            refit = orig_fit(items, workers, answers, n_items, n_workers,
                             **{**kw, "replicates": 0}).fit
            priors, shares = held["known_shares"]
            held["known_shares"] = None
            own = aggregation._stratum_priors(priors, shares, np.asarray(kw["strata"]))
            return crowd_model.CrowdFit(refit, [(refit.posterior, priors, own)] * 2,
                                        model.params, model.refused)
        if v in ("true_refit", "true_miss", "true_both"):
            cats = model.fit.categories
            if v != "true_miss":
                held["known_cells"] = {
                    (w, cats.index(r)): true_yes[e]["yes"].get(r, 0.0)
                    for w, e in enumerate(held["external"]) for r in ATTRACTIVE
                    if r in cats and e in true_yes}
            if v != "true_refit":
                held["known_miss"] = _true_miss(held, cats)
            items, workers, answers, n_items, kw = held["args"]
            refit = orig_fit(items, workers, answers, n_items, n_workers,
                             **{**kw, "replicates": 0}).fit
            held["known_cells"] = held["known_miss"] = None
            own = aggregation.item_priors(refit.params, refit.priors, kw["strata"], n_items)
            return crowd_model.CrowdFit(refit, [(refit.posterior, refit.priors, own)] * 2,
                                        model.params, model.refused)
        items, workers, answers, n_items, kw = held["args"]
        fit = model.fit
        cats = fit.categories
        nc = fit.params.none_index
        if kw.get("offered") is not None:
            inside = aggregation.within_offered(
                answers, np.asarray(kw["strata"], np.int64)[items], kw["offered"], cats[nc])
            items, workers = np.asarray(items)[inside], np.asarray(workers)[inside]
            answers = [a for a, ok in zip(answers, inside.tolist(), strict=True) if ok]

        def posterior(params):
            return aggregation.coin_posterior(
                params, items, workers, answers, n_items, n_options=kw["n_options"],
                known=kw["known"] or None, strata=kw["strata"])

        reps = []
        rng = np.random.default_rng(38)
        if v in ("true", "fit"):
            fp = np.array(R.yes_cells(fit.params.rates), copy=True)
            for w, ext in enumerate(held["external"]):
                for r in ATTRACTIVE:
                    if v == "true" and r in cats and ext in true_yes:
                        fp[w, cats.index(r)] = true_yes[ext]["yes"].get(r, 0.0)
            params = replace(fit.params, rates=(*fit.params.rates[:-1], fp))
            post = posterior(params)
            own = aggregation.item_priors(params, params.priors, kw["strata"], n_items)
            reps = [(post, params.priors, own)] * 2
        else:
            for (_post, priors, own), params, parts in zip(model.replicates, model.params,
                                                           held["parts"][1:], strict=True):
                fp = _draw_cells(parts, rng, hier=v == "beta")
                p = replace(params, rates=(*params.rates[:-1], fp))
                reps.append((posterior(p), priors, own))
        return crowd_model.CrowdFit(fit, reps, model.params, model.refused)

    correction.fit_crowd = fit_once
    correction._reusable = lambda *a, **k: []  # refit here, never the stored fit

    ans, _ = correction._answers_and_controls(corpus)
    ext = dict(CrowdWorker.objects.filter(pk__in=ans.wids).values_list("pk", "external_id"))
    held["external"] = [ext[w] for w in ans.wids]
    params = json.loads((world / "params.json").read_text())
    held["seed"], held["error"] = int(params["seed"]), error
    gold_key = GoldKey.load(world / "gold.jsonl")
    labels = label_table(corpus.pk)
    pair_of_q = dict(zip(labels.questions.tolist(), labels.pairs.tolist(), strict=True))

    def gold_shares(cats: list, kw: dict) -> tuple[np.ndarray, np.ndarray]:
        """The class shares the fit would find with the gold's answers: corpus-wide over
        the labelled questions and per pair type, shrunk as `one_coin` shrinks them
        (10 pseudo-items towards the corpus-wide shares, ½ pseudo-count per class)."""
        pairs = {p.pk: p for p in MentionPair.objects.filter(
            pk__in=list(pair_of_q.values())).select_related("document")}
        strata = np.asarray(kw["strata"], np.int64)
        counts = np.zeros((int(strata.max()) + 1, len(cats)))
        nc = cats.index(NO_RELATION)
        for i, q in enumerate(ans.qids):
            if i in kw["known"] or q not in pair_of_q:
                continue
            p = pairs[pair_of_q[q]]
            t = gold_key.truth((p.document.doc_id, p.subject_begin, p.subject_end,
                                p.object_begin, p.object_end))
            k = answer_key(sorted(t))
            counts[strata[i], cats.index(k) if k in cats else nc] += 1
        total = counts.sum(axis=0) + 0.5
        priors = total / total.sum()
        per = counts + 10.0 * priors[None, :]
        return priors, per / per.sum(axis=1, keepdims=True)

    held["gold_shares"] = gold_shares

    out: dict = {"systems": {}, "cells": {}}
    oracle_p = None
    for v in variants:
        held["variant"] = v
        correction.forget_answers()
        with override_settings(KBPO_SOFT_LABELS=True, KBPO_SOFT_LABEL_BOOTSTRAP=replicates):
            data = load_corpus_data(corpus)
        pop = data.population
        names = {str(s.pk): s.name for s in data.submissions}
        args = (data.exhaustive_pairs, data.exhaustive_preds, data.exhaustive_subjects,
                data.exhaustive_docs)
        ev, plan = data.evidence_and_plan("instance")
        base = prepare_evidence(pop, data.draws, data.label_pairs, data.label_preds, *args)

        def distinct(v_ev, v_plan, pop=pop):
            got = v_plan.estimates(v_ev, ["instance"])
            got.update(distinct_points(pop, v_ev, "instance", ["instance"], 0.9, got,
                                       v_plan.state.for_evidence(v_ev, v_plan.right(v_ev))))
            return got[KEY_P]

        if oracle_p is None:
            key = GoldKey.load(world / "gold.jsonl")
            gold: dict[int, set[int]] = {}
            for p in MentionPair.objects.filter(
                    pk__in=[int(x) for x in np.unique(data.label_pairs)]).select_related(
                    "document"):
                t = key.truth((p.document.doc_id, p.subject_begin, p.subject_end,
                               p.object_begin, p.object_end))
                gold[p.pk] = {PREDICATE_CODE[r] for r in t if r in PREDICATE_CODE} or {-1}
            o_pairs = np.array([u for u, cs in gold.items() for _ in cs], np.int64)
            o_preds = np.array([c for cs in gold.values() for c in sorted(cs)], np.int64)
            oracle = prepare_evidence(pop, data.draws, o_pairs, o_preds, *args)
            oracle_p = distinct(oracle, PointPlan(pop, oracle, "instance"))
            o_iv = estimate(pop, oracle, draw_scheme="instance", schemes=["instance"],
                            confidence=0.9, estimator=estimator
                            ).results["instance"]["precision"]["joint"]
            shipped = estimate(pop, ev, draw_scheme="instance", schemes=["instance"],
                               confidence=0.9, estimator=estimator)
            iv = shipped.results["instance"]["precision"]["joint"]
            shipped_p = np.asarray(iv.estimate)
            samp_lo, samp_hi = shipped_p - np.asarray(iv.lo), np.asarray(iv.hi) - shipped_p
            # φ from the controls, scored as instances (each system's precision as prior,
            # weighted by its instances naming the relation) and at the crowd's prior.
            e = held["events"]
            inst = pop.instances()
            code = np.array([PREDICATE_CODE.get(r, -9) for r in e["relation"]], np.int64)
            named = (inst["predicates"][None, :] == code[:, None]).astype(float)
            weights = np.stack([named[:, inst["system"] == k].sum(axis=1)
                                for k in range(len(pop))], axis=1)
            p_inst = as_instances(np.array(e["p"]), np.array(e["divisor"]),
                                  np.asarray(ev.system_prior, float), weights)
            y_ev = np.array(e["y"])
            phi = calibration_multiplier(p_inst, y_ev)
            phi_crowd = calibration_multiplier(np.array(e["p"]), y_ev)
            out["phi"] = {"instances": phi, "crowd": phi_crowd, "events": len(y_ev),
                          "p_inst": p_inst.tolist(), "y": y_ev.tolist(), "p": e["p"],
                          "relation": e["relation"],
                          "sq_err": float(((p_inst - y_ev) ** 2).sum()),
                          "var": float((p_inst * (1 - p_inst)).sum()),
                          "raw": float(((p_inst - y_ev) ** 2).sum()
                                       / max((p_inst * (1 - p_inst)).sum(), 1e-12)),
                          "raw_crowd": float(((np.array(e["p"]) - y_ev) ** 2).sum()
                                             / max((np.array(e["p"]) * (1 - np.array(e["p"])))
                                                   .sum(), 1e-12))}
            scaled = {}
            for name_s, scale in (("zero", 0.0), ("phi", phi), ("phi2", 2.0)):
                got = estimate(pop, replace(ev, label_scale=scale), draw_scheme="instance",
                               schemes=["instance"], confidence=0.9, estimator=estimator
                               ).results["instance"]["precision"]["joint"]
                scaled[name_s] = (shipped_p - np.asarray(got.lo), np.asarray(got.hi) - shipped_p)
        reps = [replicate_estimates(pop, ev, s, "instance", ["instance"], 0.9, plan,
                                    estimator)[KEY_P] for s in data.soft_replicates]
        sd = np.std(np.stack(reps), axis=0, ddof=1)
        # Each replicate at the full fixed point of the systems' priors instead of the
        # service's one round from the fit's: does the one round understate the spread?
        full = []
        for soft in data.soft_replicates:
            rep = with_soft_labels(pop, base, soft)
            rep = self_consistent(pop, rep, plan=PointPlan(pop, rep, "instance"))
            full.append(distinct(rep, PointPlan(pop, rep, "instance")))
        sd_full = np.std(np.stack(full), axis=0, ddof=1)
        # The point the variant's first replicate's labels give at the full fixed point.
        rep0 = with_soft_labels(pop, base, data.soft_replicates[0])
        rep0_plan = PointPlan(pop, rep0, "instance")
        rep0 = self_consistent(pop, rep0, plan=rep0_plan)
        rep0_p = distinct(rep0, PointPlan(pop, rep0, "instance"))
        for k, sid in enumerate(pop.names):
            name = names[sid]
            truth = truth_json[name]["instance"]["precision"]
            # The answers' own noise: sd of Σ (P(right) − right) over the system's drawn
            # instances, were the posteriors calibrated (per draw, mean over draws).
            pairs, preds, _ = pop.system_instances(k)
            drawn = pop.lookup_pairs(np.asarray(data.draws[sid], np.int64))
            at = np.concatenate([np.flatnonzero(pairs == u) for u in drawn]) \
                if len(drawn) else np.zeros(0, np.int64)
            p_right = np.asarray(ev.correct(pairs[at], preds[at], np.full(len(at), k)), float)
            answer_sd = float(np.sqrt((p_right * (1 - p_right)).sum()) / max(len(drawn), 1))
            # The drawn instances' own squared error against the gold (a diagnostic of
            # what φ could be at best: per-instance miscalibration, not correlation).
            y_gold = np.asarray(oracle.correct(pairs[at], preds[at]), float)
            inst_sq = float(((p_right - y_gold) ** 2).sum())
            inst_var = float((p_right * (1 - p_right)).sum())
            # Per attractive relation: the drawn instances' expected wrong and right counts
            # (the calibration term's weights, `_calibration_sd`).
            attractive = {r: [float((1 - p_right[preds[at] == PREDICATE_CODE[r]]).sum()),
                              float(p_right[preds[at] == PREDICATE_CODE[r]].sum())]
                          for r in ATTRACTIVE}
            lo = shipped_p[k] - np.sqrt(samp_lo[k] ** 2 + Z90 ** 2 * sd[k] ** 2)
            hi = shipped_p[k] + np.sqrt(samp_hi[k] ** 2 + Z90 ** 2 * sd[k] ** 2)
            out["systems"].setdefault(name, {}).update({
                "truth": truth, "estimate": float(shipped_p[k]), "oracle": float(oracle_p[k]),
                "samp_half": float((samp_lo[k] + samp_hi[k]) / 2),
                "samp_below": float(samp_lo[k]), "samp_above": float(samp_hi[k]),
                "answer_sd": answer_sd, "attractive": attractive, "draws": len(drawn),
                "inst_sq": inst_sq, "inst_var": inst_var, "p_right": p_right.tolist(),
                "oracle_lo": float(o_iv.lo[k]), "oracle_hi": float(o_iv.hi[k]),
                # The sampling half-widths with the labels' variance scaled by 0, φ, 2.
                "samp": {n_s: [float(lo_s[k]), float(hi_s[k])]
                         for n_s, (lo_s, hi_s) in scaled.items()},
                v: {"sd": float(sd[k]), "sd_full": float(sd_full[k]),
                    "lo": float(max(lo, 0.0)), "hi": float(min(hi, 1.0)),
                    "rep0": float(rep0_p[k]),
                    "reps": [float(r[k]) for r in reps]}})
    # The attractive relations' rates: fit and replicates against the simulated crowd's.
    cats = held["model"].fit.categories
    parts = held["parts"]
    sim_miss = _true_miss(held, cats)
    gold_priors = held["gold_shares"](cats, held["args"][4])[0]
    for r in ATTRACTIVE:
        if r not in cats:
            continue
        c = cats.index(r)
        p0 = parts[0]
        a = p0["x_r"][c] + p0["s_r"] * p0["crowd"]
        b = p0["n_r"][c] - p0["x_r"][c] + p0["s_r"] * (1 - p0["crowd"])
        prior = p0["prior"][:, c]
        ca = p0["said"][:, c] + p0["s_c"][c] * prior
        cb = p0["exposed"][:, c] - p0["said"][:, c] + p0["s_c"][c] * (1 - prior)
        fp_fit = np.array([R.yes_cells(held["model"].fit.params.rates)[w, c]
                           for w in range(len(held["external"]))])
        out["cells"][r] = {
            "workers": held["external"],
            "true": [true_yes.get(e, {}).get("yes", {}).get(r) for e in held["external"]],
            "fit": fp_fit.tolist(), "reps": [p["said"][:, c].tolist() for p in parts[1:]],
            "rep_cells": [R.yes_cells(p.rates)[:, c].tolist() for p in held["model"].params],
            "exposed": p0["exposed"][:, c].tolist(), "said": p0["said"][:, c].tolist(),
            "cell_post_sd": _beta_sd(ca, cb).tolist(), "s_c": float(p0["s_c"][c]),
            "s_r": float(p0["s_r"]), "relation": float(p0["relation"][c]),
            "relation_reps": [float(p["relation"][c]) for p in parts[1:]],
            "relation_post_sd": float(_beta_sd(a, b)), "n_r": float(p0["n_r"][c]),
            "s_c_reps": [float(p["s_c"][c]) for p in parts[1:]],
            # The fitted miss rate per worker on the relation (truth r, answer none).
            "miss": held["model"].fit.params.rates[3][:, c].tolist(),
            "miss_true": [sim_miss.get((w, c)) for w in range(len(held["external"]))],
            "share_fit": float(held["model"].fit.priors[c]), "share_gold": float(gold_priors[c])}
    out["controls"] = held["controls"]
    out["events"] = held["events"]
    return out


def _answer_term_report(everything: dict) -> None:
    """A prototype of an interval term for the per-system scatter of the labels' error:
    c² times the answer variance (Σ P(1 − P) over the drawn instances / draws²) added to
    the correction's, for c = 1 (calibrated posteriors' noise) and c = 2 (about the
    scatter seen against the oracle)."""
    rows = [s for res in everything.values() for s in res["systems"].values() if "boot" in s]
    if not rows:
        return
    shipped = np.array([s["boot"]["lo"] <= s["truth"] <= s["boot"]["hi"] for s in rows])
    hw0 = np.array([(s["boot"]["hi"] - s["boot"]["lo"]) / 2 for s in rows])
    print("\nanswer-noise term (prototype): covered, mean half-width of the shipped-covered, "
          "largest half-width ratio")
    print(f"  {'shipped':8s} {int(shipped.sum())}/{len(rows)} {hw0[shipped].mean():.4f} 1.00")
    for c in (1.0, 2.0):
        cov, hw = [], []
        for s in rows:
            v = s["boot"]["sd"] ** 2 + (c * s["answer_sd"]) ** 2
            lo = s["estimate"] - np.sqrt(s["samp_below"] ** 2 + Z90 ** 2 * v)
            hi = s["estimate"] + np.sqrt(s["samp_above"] ** 2 + Z90 ** 2 * v)
            cov.append(lo <= s["truth"] <= hi)
            hw.append((hi - lo) / 2)
        hw_a = np.array(hw)
        print(f"  c = {c:.0f}    {sum(cov)}/{len(rows)} {hw_a[shipped].mean():.4f} "
              f"{(hw_a / hw0).max():.2f}")


def _phi_report(everything: dict) -> None:
    """The answer-noise term (crowd-bias.md §17): the labels' Bernoulli variance in the
    sampling variance scaled by φ measured on the controls (`Evidence.label_scale`),
    the bootstrap's variance added as shipped. Per world φ; over the 24: covered, mean
    half-width of the shipped-covered, largest half-width ratio. Also what the labels'
    variance is worth in the shipped interval (scale 0 against 1), against the answer sd."""
    rows = [s for res in everything.values() for s in res["systems"].values()
            if "boot" in s and "samp" in s]
    if not rows:
        return
    print("\nφ from the controls per world: as instances (applied) / at the crowd's prior; "
          "unshrunk ratios; events")
    for seed, res in everything.items():
        f = res.get("phi")
        if f:
            print(f"  {seed}: φ {f['instances']:.3f} / {f['crowd']:.3f}; raw "
                  f"{f['raw']:.3f} / {f['raw_crowd']:.3f}; Σ(P−y)² {f['sq_err']:.2f}, "
                  f"ΣP(1−P) {f['var']:.2f} over {f['events']} events")

    # The controls' reliability, as (f) reads the instances': per bin of P, the events,
    # mean P, share holding, Σ (P − y); as instances and at the crowd's prior; the
    # attractive relations' events apart.
    edges = BINS
    worlds = [r["phi"] for r in everything.values() if r.get("phi")]
    for label, subset in (("all relations", None), ("attractive", ATTRACTIVE)):
        keep = [np.array([subset is None or x in subset for x in f["relation"]])
                for f in worlds]
        y = np.concatenate([np.array(f["y"])[k] for f, k in zip(worlds, keep, strict=True)])
        print(f"controls' reliability, {label} ({len(y)} events over the worlds): bin, "
              "as instances (n, mean P, share, Σ(P−y)) | at the crowd's prior")
        for a, b in pairwise(edges):
            cells = []
            for key in ("p_inst", "p"):
                p = np.concatenate([np.array(f[key])[k] for f, k in zip(worlds, keep,
                                                                         strict=True)])
                on = (p >= a) & (p < b)
                cells.append(f"{on.sum():5d} {p[on].mean() if on.any() else np.nan:.3f} "
                             f"{y[on].mean() if on.any() else np.nan:.3f} "
                             f"{(p[on] - y[on]).sum():+6.1f}")
            print(f"  [{a:.2f}, {min(b, 1):.2f}) " + " | ".join(cells))

    def interval(s: dict, which: str | None) -> tuple[float, float]:
        if which is None:
            return s["boot"]["lo"], s["boot"]["hi"]
        below, above = s["samp"][which]
        v = s["boot"]["sd"] ** 2
        return (max(s["estimate"] - np.sqrt(below ** 2 + Z90 ** 2 * v), 0.0),
                min(s["estimate"] + np.sqrt(above ** 2 + Z90 ** 2 * v), 1.0))

    base = [interval(s, None) for s in rows]
    covered = np.array([lo <= s["truth"] <= hi for s, (lo, hi) in zip(rows, base, strict=True)])
    hw0 = np.array([(hi - lo) / 2 for lo, hi in base])
    print("interval: covered, mean half-width of the shipped-covered, largest half-width ratio")
    for label, which in (("shipped", None), ("labels' variance × 0", "zero"),
                         ("× φ (controls)", "phi"), ("× 2 (fixed)", "phi2")):
        ivs = [interval(s, which) for s in rows]
        cov = sum(lo <= s["truth"] <= hi for s, (lo, hi) in zip(rows, ivs, strict=True))
        hw = np.array([(hi - lo) / 2 for lo, hi in ivs])
        print(f"  {label:22s} {cov}/{len(rows)} {hw[covered].mean():.4f} "
              f"{(hw / hw0).max():.3f}")
    if all("workers" in s for s in rows):
        # The workers' replicates redraw the answers: their variance beside the sampling
        # interval without the labels' Bernoulli term (which they already carry).
        for label, which in (("workers' bootstrap", None), ("workers', no labels' term",
                                                            "zero")):
            ivs = []
            for s in rows:
                below, above = (s["samp_below"], s["samp_above"]) if which is None \
                    else s["samp"][which]
                v = s["workers"]["sd"] ** 2
                ivs.append((max(s["estimate"] - np.sqrt(below ** 2 + Z90 ** 2 * v), 0.0),
                            min(s["estimate"] + np.sqrt(above ** 2 + Z90 ** 2 * v), 1.0)))
            cov = sum(lo <= s["truth"] <= hi for s, (lo, hi) in zip(rows, ivs, strict=True))
            hw = np.array([(hi - lo) / 2 for lo, hi in ivs])
            print(f"  {label:22s} {cov}/{len(rows)} {hw[covered].mean():.4f} "
                  f"{(hw / hw0).max():.3f}")
    # sd the labels' variance adds to the sampling interval, against the answer sd.
    implied = np.array([np.sqrt(max(((s["samp_below"] + s["samp_above"]) / 2) ** 2
                                    - (sum(s["samp"]["zero"]) / 2) ** 2, 0.0)) / Z90
                        for s in rows])
    sq, var = sum(s["inst_sq"] for s in rows), sum(s["inst_var"] for s in rows)
    z2 = np.mean([((s["estimate"] - s["oracle"]) / s["answer_sd"]) ** 2 for s in rows])
    print(f"the drawn instances against the gold: Σ(P − y)² / ΣP(1 − P) = {sq:.1f}/{var:.1f} "
          f"= {sq / var:.2f} (the φ a perfect measurement would give); mean squared labels' "
          f"error in answer sd {z2:.2f} (what the intervals would need)")
    ans = np.array([s["answer_sd"] for s in rows])
    print(f"labels' variance in the shipped interval, as an sd: mean {implied.mean():.4f} "
          f"against the answer sd {ans.mean():.4f} (median ratio "
          f"{np.median(implied / ans):.2f})")


BINS = [0, 0.02, 0.1, 0.3, 0.7, 0.9, 0.98, 1.0001]  # (f)'s reliability bins


def _bias_report(everything: dict) -> None:
    """A calibration-bias term from the controls scored as instances (crowd-bias.md §17):
    per world and bin of P (BINS), the controls' events give ê = Σ (P − y)/(m + 2) and
    se² = (Σ (P − y)² + ½)/(m + 2)² (two calibrated pseudo-events at P = ½); a system
    whose drawn instances number N_b in bin b, over n draws, gets b = Σ N_b ê_b / n and
    s² = Σ N_b² se_b² / n². (i) b² + s² added to the variance; (ii) the estimate − b, s²
    added."""
    rows = []
    for res in everything.values():
        f = res.get("phi")
        if not f:
            return
        p, y = np.array(f["p_inst"]), np.array(f["y"])
        e_b, se_b = [], []
        for a, b in pairwise(BINS):
            on = (p >= a) & (p < b)
            m, d = on.sum(), p[on] - y[on]
            e_b.append(d.sum() / (m + 2))
            se_b.append(np.sqrt((d * d).sum() + 0.5) / (m + 2))
        e_b, se_b = np.array(e_b), np.array(se_b)
        for s in res["systems"].values():
            if "boot" not in s:
                continue
            counts = np.histogram(np.array(s["p_right"]), BINS)[0]
            n = max(s["draws"], 1)
            b, var = (counts * e_b).sum() / n, ((counts * se_b) ** 2).sum() / n ** 2
            sd, t = s["boot"]["sd"], s["truth"]
            out = [s["boot"]["lo"] <= t <= s["boot"]["hi"],
                   (s["boot"]["hi"] - s["boot"]["lo"]) / 2, b, s["estimate"] - s["oracle"]]
            for centre, extra in ((s["estimate"], b * b + var), (s["estimate"] - b, var)):
                lo = centre - np.sqrt(s["samp_below"] ** 2 + Z90 ** 2 * (sd ** 2 + extra))
                hi = centre + np.sqrt(s["samp_above"] ** 2 + Z90 ** 2 * (sd ** 2 + extra))
                out += [lo <= t <= hi, (hi - lo) / 2, centre - t, centre - s["oracle"]]
            rows.append(out)
    a = np.array(rows, float)
    shipped = a[:, 0] == 1
    print("\ncalibration bias from the controls scored as instances: covered, mean "
          "half-width of the shipped-covered, largest half-width ratio, mean estimate − "
          "truth, mean labels' error")
    print(f"  {'shipped':22s} {int(a[:, 0].sum())}/{len(a)} {a[shipped, 1].mean():.4f} 1.00 "
          f"{a[:, 6].mean():+.4f} {a[:, 3].mean():+.4f}")
    for label, j in (("(i) b² + s² added", 4), ("(ii) minus b, s² added", 8)):
        print(f"  {label:22s} {int(a[:, j].sum())}/{len(a)} {a[shipped, j + 1].mean():.4f} "
              f"{(a[:, j + 1] / a[:, 1]).max():.2f} {a[:, j + 2].mean():+.4f} "
              f"{a[:, j + 3].mean():+.4f}")
    print(f"  b: mean {a[:, 2].mean():+.4f}, correlation with the labels' error over the "
          f"{len(a)}: {np.corrcoef(a[:, 2], a[:, 3])[0, 1]:.2f}")


def _calibration_report(everything: dict) -> None:
    """A prototype of an interval term for the posteriors' calibration error, measured on
    the controls (crowd-bias.md §16): per world, the controls holding none on pairs
    offering an attractive relation give e⁻ = mean P(r) (truth 0), those holding one
    e⁺ = mean P(r) − 1, each with its se over the controls. A system's drawn attractive
    instances, W expected wrong and R expected right (at the fixed point), make
    b = (W e⁻ + R e⁺)/n its calibration error and s² = (W² se⁻² + R² se⁺²)/n² its
    variance. (i) b² + s² added to the correction's variance; (ii) the estimate minus b,
    with s² added. Controls are scored at the crowd's prior (they are no system's)."""
    rows = []
    for res in everything.values():
        if "boot" not in next(iter(res["systems"].values())):
            return
        p_none = np.concatenate([c["p_none"] for c in res["controls"].values()])
        p_holds = np.concatenate([c["p_holds"] for c in res["controls"].values()])
        e_m, e_p = p_none.mean(), (p_holds - 1).mean()
        s_m = p_none.std(ddof=1) / np.sqrt(len(p_none))
        s_p = p_holds.std(ddof=1) / np.sqrt(len(p_holds))
        for s in res["systems"].values():
            w = sum(v[0] for v in s["attractive"].values())
            r = sum(v[1] for v in s["attractive"].values())
            n = s["draws"]
            b, var = (w * e_m + r * e_p) / n, (w * w * s_m ** 2 + r * r * s_p ** 2) / n ** 2
            est, t, sd = s["estimate"], s["truth"], s["boot"]["sd"]
            out = [s["boot"]["lo"] <= t <= s["boot"]["hi"],
                   (s["boot"]["hi"] - s["boot"]["lo"]) / 2, b, s["estimate"] - s["oracle"]]
            for centre, extra in ((est, b * b + var), (est - b, var)):
                lo = centre - np.sqrt(s["samp_below"] ** 2 + Z90 ** 2 * (sd ** 2 + extra))
                hi = centre + np.sqrt(s["samp_above"] ** 2 + Z90 ** 2 * (sd ** 2 + extra))
                out += [lo <= t <= hi, (hi - lo) / 2, centre - t]
            rows.append(out)
    a = np.array(rows, float)
    shipped = a[:, 0] == 1
    print("\ncalibration term from the controls (prototype): covered, mean half-width of the "
          "shipped-covered, largest half-width ratio, mean estimate − truth")
    print(f"  {'shipped':20s} {int(a[:, 0].sum())}/{len(a)} {a[shipped, 1].mean():.4f} 1.00 "
          f"{a[:, 6].mean():+.4f}")
    for label, j in (("(i) b² + s² added", 4), ("(ii) minus b, s² added", 7)):
        print(f"  {label:20s} {int(a[:, j].sum())}/{len(a)} {a[shipped, j + 1].mean():.4f} "
              f"{(a[:, j + 1] / a[:, 1]).max():.2f} {a[:, j + 2].mean():+.4f}")
    print(f"  correlation of b with the labels' error over the {len(a)}: "
          f"{np.corrcoef(a[:, 2], a[:, 3])[0, 1]:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, required=True)
    parser.add_argument("--confusion", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[4, 5, 6, 7])
    parser.add_argument("--replicates", type=int, default=8)
    parser.add_argument("--variants", nargs="+",
                        default=["boot", "beta", "beta_cells", "fit", "true", "true_refit"])
    parser.add_argument("--error", type=float, default=0.05,
                        help="the demo's --crowd-error (the honest workers' error rate)")
    parser.add_argument("--beta", type=float,
                        help="the re-weighting's divisor β (shipped evidence.REWEIGHT_BETA 0.5)")
    parser.add_argument("--folds", type=int, default=0,
                        help="φ's control posteriors from this many refits, each without "
                             "one fold's known answers (0: the fit's parameters)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        res = _child(args.child / "world", args.confusion.resolve(), args.replicates,
                     args.variants, args.error, args.beta, args.folds)
        (args.child / "spread.json").write_text(json.dumps(res))
        return 0
    from demo_prior_split import run_seeds

    everything = run_seeds(__file__, args.keep, args.seeds,
                           ["--confusion", str(args.confusion.resolve()),
                            "--replicates", str(args.replicates), "--error", str(args.error),
                            *([] if args.beta is None else ["--beta", str(args.beta)]),
                            "--folds", str(args.folds),
                            "--variants", *args.variants], "spread.json")
    _report(everything, args.variants)
    _calibration_report(everything)
    _answer_term_report(everything)
    _phi_report(everything)
    _bias_report(everything)
    if args.json:
        args.json.write_text(json.dumps(everything))
    return 0


def _report(everything: dict, variants: list[str]) -> None:
    boots = [v for v in variants if v not in ("true", "fit", "true_refit", "true_miss",
                                              "true_both", "true_shares")]
    print("joint precision per (seed, system): truth, estimate − truth, − oracle (the labels' "
          "error), sampling half-width, correction sd per variant, covered per variant")
    print(f"{'seed':>4} {'system':20s} {'truth':>6s} {'err':>7s} {'lab err':>7s} "
          f"{'samp hw':>7s} {'ans sd':>6s} "
          + " ".join(f"{'sd ' + v:>13s}" for v in boots) + " "
          + " ".join(f"{'hw ' + v:>13s}" for v in boots) + "  covered")
    cov = {v: 0 for v in boots}
    n = 0
    ratio = {v: [] for v in boots}
    for seed, res in everything.items():
        for name, s in sorted(res["systems"].items()):
            n += 1
            err, lab = s["estimate"] - s["truth"], s["estimate"] - s["oracle"]
            flags = []
            for v in boots:
                ok = s[v]["lo"] <= s["truth"] <= s[v]["hi"]
                cov[v] += ok
                flags.append("y" if ok else ("HIGH" if s[v]["lo"] > s["truth"] else "LOW"))
                ratio[v].append(abs(lab) / max(s[v]["sd"], 1e-9))
            print(f"{seed:>4} {name:20s} {s['truth']:6.3f} {err:+7.3f} {lab:+7.3f} "
                  f"{s['samp_half']:7.3f} {s['answer_sd']:6.4f} "
                  + " ".join(f"{s[v]['sd']:13.4f}" for v in boots)
                  + " " + " ".join(f"{(s[v]['hi'] - s[v]['lo']) / 2:13.4f}" for v in boots)
                  + "  " + " ".join(flags))
    print("covered: " + ", ".join(f"{v} {cov[v]}/{n}" for v in boots))
    rows = [s for res in everything.values() for s in res["systems"].values()]
    o_cov = sum(s["oracle_lo"] <= s["truth"] <= s["oracle_hi"] for s in rows)
    print(f"the oracle's own intervals (gold labels, same draws) cover {o_cov}/{n}; misses: "
          + ", ".join(f"{seed} {name} ({s['oracle'] - s['truth']:+.3f})"
                      for seed, res in everything.items()
                      for name, s in sorted(res["systems"].items())
                      if not s["oracle_lo"] <= s["truth"] <= s["oracle_hi"]))
    for seed, res in everything.items():
        for name, s in sorted(res["systems"].items()):
            err = s["estimate"] - s["truth"]
            if "boot" in s and not s["boot"]["lo"] <= s["truth"] <= s["boot"]["hi"]:
                side = s["samp_below"] if err > 0 else s["samp_above"]  # the side it missed
                need = np.sqrt(max(err ** 2 - side ** 2, 0.0)) / Z90
                print(f"  shipped miss {seed} {name}: error {err:+.3f}, sampling half-width "
                      f"on that side {side:.3f}: covering it needs a correction sd ≥ {need:.4f} "
                      f"(boot {s['boot']['sd']:.4f})")
    z = [(s["estimate"] - s["oracle"]) / s["answer_sd"] for s in rows]
    print("labels' error in answer-noise sd (calibrated posteriors: mean 0, sd 1): mean "
          f"{np.mean(z):+.2f}, sd {np.std(z, ddof=1):.2f}, |z| > 1.645: "
          f"{sum(abs(x) > 1.645 for x in z)}/{n}; answer sd range "
          f"{min(s['answer_sd'] for s in rows):.4f}–{max(s['answer_sd'] for s in rows):.4f}")
    print("correction sd, one round (shipped) / full fixed point per replicate, mean over the "
          "24: " + ", ".join(f"{v} {np.mean([s[v]['sd'] for s in rows]):.4f} / "
                             f"{np.mean([s[v]['sd_full'] for s in rows]):.4f}" for v in boots))
    print("median |labels' error| / correction sd: " + ", ".join(
        f"{v} {np.median(ratio[v]):.1f}" for v in boots))
    for v in variants:
        d = [s[v]["rep0"] - s["oracle"] for res in everything.values()
             for s in res["systems"].values()]
        print(f"{v:10s} replicate 0 at the full fixed point, minus oracle: mean {np.mean(d):+.4f}"
              f" (se {np.std(d, ddof=1) / np.sqrt(len(d)):.4f})")
    print("\nattractive relations: relation rate fit, its replicates' sd, its Beta posterior sd;"
          " s_r; cells: mean fit − true (over workers), mean |fit − true|, mean replicate sd, "
          "mean Beta posterior sd, s_c (fit; replicates' range)")
    for seed, res in everything.items():
        print(f"{seed:>4} controls holding none where an attractive relation is offered: "
              + "; ".join(f"{r} {c['controls']} (mean P(r) {c['controls_p'] or 0:.3f}, "
                          f"beside {c['labelled_offering']} labelled questions)"
                          for r, c in res["controls"].items()))
    for seed, res in everything.items():
        for r, c in res["cells"].items():
            true = np.array([np.nan if t is None else t for t in c["true"]], float)
            fit = np.array(c["fit"])
            reps = np.array(c["rep_cells"])
            ok = ~np.isnan(true)
            print(f"{seed:>4} {r:26s} ρ {c['relation']:.3f} sd(rep) "
                  f"{np.std(c['relation_reps'], ddof=1):.4f} sd(post) {c['relation_post_sd']:.4f}"
                  f" s_r {c['s_r']:.0f} n_r {c['n_r']:.0f} | cells fit−true "
                  f"{np.mean(fit[ok] - true[ok]):+.3f} "
                  f"|.| {np.mean(np.abs(fit[ok] - true[ok])):.3f}"
                  f" sd(rep) {np.mean(np.std(reps[:, ok], axis=0, ddof=1)):.4f} sd(post) "
                  f"{np.mean(np.array(c['cell_post_sd'])[ok]):.4f} exposures "
                  f"{np.mean(np.array(c['exposed'])[ok]):.1f} s_c {c['s_c']:.0f} "
                  f"({min(c['s_c_reps']):.0f}–{max(c['s_c_reps']):.0f}) miss rate "
                  f"{np.mean(np.array(c['miss'])[ok]):.3f} (simulated "
                  f"{np.mean([m for m in c['miss_true'] if m is not None]):.3f}) share "
                  f"{c['share_fit']:.3f} (gold {c['share_gold']:.3f})")


if __name__ == "__main__":
    sys.exit(main())
