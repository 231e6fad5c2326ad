"""Simulated KBP systems: profiles with target precision and recall, and their output."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from kbpo.core import schema
from kbpo.core.schema import DATE, GPE, ORG, PER

from .common import PRED_CODE, PREDICATES
from .facts import World
from .gold import TYPE_CODE, Flat

# ---------------------------------------------------------------------------
# Systems.
# ---------------------------------------------------------------------------

PREDICATE_GROUPS: dict[str, tuple[str, ...]] = {
    "family": ("per:children", "per:other_family", "per:parents", "per:siblings", "per:spouse"),
    "places": (
        "org:place_of_headquarters",
        "per:place_of_birth",
        "per:place_of_death",
        "per:place_of_residence",
    ),
    "dates": ("org:date_dissolved", "org:date_founded", "per:date_of_birth", "per:date_of_death"),
    "work": ("per:employee_or_member_of", "per:schools_attended", "per:title"),
    "business": (
        "org:founded_by",
        "org:holds_shares_in",
        "org:member_of",
        "org:members",
        "org:organizations_founded",
        "org:parents",
        "org:shareholders",
        "org:subsidiaries",
        "per:holds_shares_in",
        "per:organizations_founded",
    ),
}
_FLAVOURS = (
    "neural",
    "rules",
    "distant",
    "ensemble",
    "patterns",
    "bootstrap",
    "openie",
    "crf",
    "kernel",
    "transformer",
    "lstm",
    "joint",
    "pipeline",
    "tagger",
)


@dataclass
class SystemProfile:
    """What a simulated system is like; written to systems/index.json."""

    name: str
    role: str  # baseline | typical | specialist | disjoint | near_duplicate
    recall: float  # base probability of finding a true instance
    target_precision: float  # controls the number of false positives
    wrong_predicate_rate: float  # found pairs labelled with a wrong predicate
    correlation: float  # weight of the shared "easiness" of instances
    specialisation: dict[str, float]  # predicate group -> recall multiplier
    duplicate_of: str | None = None
    inverse_rate: float = 0.3  # relations written in the inverse direction
    both_directions_rate: float = 0.1  # relations written in both directions
    fine_grained_rate: float = 0.4  # city_of_birth etc. instead of place_of_birth
    merge_rate: float = 0.02  # entities wrongly merged with another one
    split_rate: float = 0.02  # entities wrongly split in two clusters
    link_rate: float = 0.5  # linked entities whose link the system emits
    false_positives: int = 0  # filled in by the simulator


def make_profiles(k: int, seed: int) -> list[SystemProfile]:
    """K profiles with a wide, deterministic spread of precision and recall.

    sys1 is a middling baseline, sys2 a nearly disjoint "outsider" (it finds the
    instances the others find hard), the last two (K >= 4) near-duplicates of
    earlier systems; the rest are typical systems and predicate specialists with
    target precision spread over [0.3, 0.92] and recall over [0.06, 0.56].
    """
    rng = random.Random(seed * 7919 + 17)
    width = max(2, len(str(k)))
    n_dup = 2 if k >= 4 else (1 if k >= 3 else 0)
    free = [i for i in range(1, k - n_dup)]
    spread = max(1, len(free) - 1)
    precisions = [0.3 + 0.62 * j / spread for j in range(len(free))]
    recalls = [0.06 + 0.5 * j / spread for j in range(len(free))]
    rng.shuffle(precisions)
    # Low precision needs many false positives; the corpus has about as many
    # unrelated pairs as true instances, so recall r is feasible at precision P
    # when r <= 0.6 P / (1 - P). Hand out recalls, largest first, to random
    # systems that can afford them.
    caps = [0.6 * p / (1 - p) for p in precisions]
    assigned: list[float | None] = [None] * len(free)
    for r in sorted(recalls, reverse=True):
        open_slots = [j for j in range(len(free)) if assigned[j] is None]
        fits = [j for j in open_slots if caps[j] >= r]
        j = rng.choice(fits) if fits else max(open_slots, key=caps.__getitem__)
        assigned[j] = min(r, caps[j])
    recalls = [float(r) for r in assigned if r is not None]
    groups = sorted(PREDICATE_GROUPS)
    profiles: list[SystemProfile] = []
    for i in range(k):
        num = f"sys{i + 1:0{width}d}"
        spec = {g: 1.0 for g in groups}
        duplicate_of = None
        if i == 0:
            role, name, precision, recall = "baseline", f"{num}_baseline", 0.55, 0.3
        elif i >= k - n_dup:
            sources = [p for p in profiles if p.role in ("baseline", "typical", "specialist")]
            src = sources[-1 - (i - (k - n_dup)) % len(sources)]
            role, duplicate_of = "near_duplicate", src.name
            name = f"{num}_twin_{src.name.split('_')[0]}"
            precision = min(0.95, src.target_precision + rng.uniform(-0.03, 0.03))
            recall, spec = src.recall, dict(src.specialisation)
        else:
            j = free.index(i)
            precision, recall = precisions[j], recalls[j]
            if i == 1:
                role, name, recall = "disjoint", f"{num}_outsider", min(recall, 0.25)
            elif i % 4 == 3:
                role = "specialist"
                strong, weak = rng.sample(groups, 2)
                spec[strong], spec[weak] = 1.8, 0.15
                name = f"{num}_{strong}"
            else:
                role = "typical"
                name = f"{num}_{_FLAVOURS[i % len(_FLAVOURS)]}"
                for g in groups:
                    spec[g] = round(rng.uniform(0.6, 1.4), 2)
        profiles.append(
            SystemProfile(
                name=name,
                role=role,
                recall=round(recall, 3),
                target_precision=round(precision, 3),
                wrong_predicate_rate=round(rng.uniform(0.02, 0.15), 3),
                correlation=0.85 if role == "disjoint" else round(rng.uniform(0.4, 0.7), 2),
                specialisation=spec,
                duplicate_of=duplicate_of,
                inverse_rate=round(rng.uniform(0.0, 0.5), 2),
                both_directions_rate=round(rng.uniform(0.0, 0.2), 2),
                fine_grained_rate=round(rng.uniform(0.0, 0.8), 2),
                merge_rate=round(rng.uniform(0.0, 0.04), 3),
                split_rate=round(rng.uniform(0.0, 0.04), 3),
                link_rate=round(rng.uniform(0.2, 0.9), 2),
            )
        )
    return profiles


@dataclass
class WorldArrays:
    """numpy views of Flat plus derived lookups."""

    m_doc: np.ndarray
    m_sent: np.ndarray
    m_entity: np.ndarray
    m_type: np.ndarray
    m_len: np.ndarray
    p_subj: np.ndarray
    p_obj: np.ndarray
    p_sent: np.ndarray
    p_trap: np.ndarray
    p_distractor: np.ndarray
    p_tpair: np.ndarray  # index into TYPE_PAIRS
    g_pair: np.ndarray
    g_pred: np.ndarray
    g_keys: np.ndarray  # sorted pair * NPRED + pred
    e_type: np.ndarray  # world entity -> type code
    n_entities: int


TYPE_PAIRS: tuple[tuple[str, str], ...] = tuple(sorted(schema.CANONICAL))
_TP_CODE = {tp: i for i, tp in enumerate(TYPE_PAIRS)}
_VALID = [sorted(PRED_CODE[p] for p in schema.CANONICAL[tp]) for tp in TYPE_PAIRS]
_N_VALID = np.array([len(v) for v in _VALID])
_VALID_TABLE = np.array([v + [v[-1]] * (max(_N_VALID) - len(v)) for v in _VALID])


def world_arrays(w: World, flat: Flat) -> WorldArrays:
    e_type = np.array([TYPE_CODE[t] for t in w.etype], dtype=np.int8)
    m_entity = np.array(flat.m_entity, dtype=np.int64)
    m_type = e_type[m_entity]
    p_subj = np.array(flat.p_subj, dtype=np.int64)
    p_obj = np.array(flat.p_obj, dtype=np.int64)
    tp_lookup = np.full((5, 5), -1, dtype=np.int64)
    for (s, o), i in _TP_CODE.items():
        tp_lookup[TYPE_CODE[s], TYPE_CODE[o]] = i
    g_pair = np.array(flat.g_pair, dtype=np.int64)
    g_pred = np.array(flat.g_pred, dtype=np.int64)
    return WorldArrays(
        m_doc=np.array(flat.m_doc, dtype=np.int64),
        m_sent=np.array(flat.m_sent, dtype=np.int64),
        m_entity=m_entity,
        m_type=m_type,
        m_len=np.array(flat.m_end, dtype=np.int64) - np.array(flat.m_begin, dtype=np.int64),
        p_subj=p_subj,
        p_obj=p_obj,
        p_sent=np.array(flat.p_sent, dtype=np.int64),
        p_trap=np.array(flat.p_trap, dtype=np.int64),
        p_distractor=np.array(flat.p_distractor, dtype=bool),
        p_tpair=tp_lookup[m_type[p_subj], m_type[p_obj]],
        g_pair=g_pair,
        g_pred=g_pred,
        g_keys=np.sort(g_pair * len(PREDICATES) + g_pred),
        e_type=e_type,
        n_entities=len(w.eid),
    )


@dataclass
class Prediction:
    """One system's final, deduplicated predictions (one predicate per pair)."""

    pair: np.ndarray
    pred: np.ndarray
    subj_cluster: np.ndarray
    obj_cluster: np.ndarray  # -1 for DATE/TITLE fillers
    mention_cluster: np.ndarray  # corpus mention -> cluster id


def _clusters(a: WorldArrays, prof: SystemProfile, rng: np.random.Generator) -> np.ndarray:
    """The system's entity id of every corpus mention (mostly right)."""
    n = a.n_entities
    base = np.arange(n, dtype=np.int64)
    merged = rng.random(n) < prof.merge_rate
    for t in (PER, ORG, GPE):  # merge only within a type, into non-merged entities
        members = np.flatnonzero(a.e_type == TYPE_CODE[t])
        targets = members[~merged[members]]
        src = members[merged[members]]
        if len(targets) and len(src):
            base[src] = targets[rng.integers(0, len(targets), len(src))]
    split = rng.random(n) < prof.split_rate
    cl = base[a.m_entity]
    odd = split[a.m_entity] & (a.m_doc % 2 == 1)
    return np.where(odd, a.m_entity + n, cl)


def simulate_system(
    a: WorldArrays,
    prof: SystemProfile,
    index: int,
    seed: int,
    shared: dict[str, np.ndarray],
    noise: np.ndarray,
    owner_index: int,
) -> Prediction:
    rng = np.random.default_rng([seed, 1000 + index])
    npred = len(PREDICATES)
    n_y = len(a.g_pair)
    # Found true instances: a Gaussian copula of shared easiness and own noise.
    sign = -1.0 if prof.role == "disjoint" else 1.0
    rho = prof.correlation
    z = math.sqrt(rho) * sign * shared["easy"] + math.sqrt(1 - rho) * noise
    mult = np.ones(npred)
    for g, preds in PREDICATE_GROUPS.items():
        for p in preds:
            mult[PRED_CODE[p]] = prof.specialisation.get(g, 1.0)
    nd = NormalDist()
    thresholds = np.array([nd.inv_cdf(min(0.97, max(0.003, prof.recall * m))) for m in mult])
    found = z < thresholds[a.g_pred]
    owner = shared["owner"]
    found &= owner < 0
    # Instances only this system (and its near-duplicates) can find.
    found |= (owner == owner_index) & (rng.random(n_y) < 0.8)
    pair = a.g_pair[found]
    pred = a.g_pred[found].copy()
    # Wrong predicates for some found pairs (drawn per instance of Y, from a
    # generator near-duplicates share, so twins make the same confusions).
    twin_rng = np.random.default_rng([seed, 4000 + owner_index])
    draw, pick = twin_rng.random(n_y)[found], twin_rng.integers(0, 1 << 30, n_y)[found]
    tp = a.p_tpair[pair]
    wrong = (draw < prof.wrong_predicate_rate) & (_N_VALID[tp] > 1)
    k = pick % np.maximum(_N_VALID[tp] - 1, 1)
    alt = _VALID_TABLE[tp, k]
    alt = np.where(alt == pred, _VALID_TABLE[tp, _N_VALID[tp] - 1], alt)
    pred = np.where(wrong, alt, pred)
    # False positives on pairs with no relation, preferring distractor sentences
    # (shared attractiveness, so systems tend to make the same mistakes).
    neg = shared["negatives"]
    n_correct = int(np.count_nonzero(~wrong))
    n_fp = round(n_correct / prof.target_precision) - len(pair)
    n_fp = max(0, min(n_fp, int(0.7 * len(neg))))
    prof.false_positives = n_fp
    if n_fp:
        zn = math.sqrt(rho) * sign * shared["lure"] + math.sqrt(1 - rho) * rng.standard_normal(
            len(neg)
        )
        chosen = neg[np.argpartition(zn, n_fp - 1)[:n_fp]] if n_fp < len(neg) else neg
        chosen = np.sort(chosen)
        tpn = a.p_tpair[chosen]
        fpred = _VALID_TABLE[tpn, rng.integers(0, _N_VALID[tpn])]
        trap = a.p_trap[chosen]
        fpred = np.where((trap >= 0) & (rng.random(len(chosen)) < 0.7), trap, fpred)
        pair = np.concatenate([pair, chosen])
        pred = np.concatenate([pred, fpred])
    # One predicate per pair (a pair with two gold relations keeps one at random).
    order = np.lexsort((rng.random(len(pair)), pair))
    pair, pred = pair[order], pred[order]
    first = np.ones(len(pair), dtype=bool)
    first[1:] = pair[1:] != pair[:-1]
    pair, pred = pair[first], pred[first]
    # Entities; drop self-relations and arguments whose entity has two mentions
    # in the sentence (the provenance would not identify the argument).
    mcl = _clusters(a, prof, rng)
    subj_m, obj_m = a.p_subj[pair], a.p_obj[pair]
    filler = a.m_type[obj_m] >= TYPE_CODE[DATE]
    sc = mcl[subj_m]
    oc = np.where(filler, -1, mcl[obj_m])
    keep = sc != oc
    sent = a.p_sent[pair]
    n_sent = int(a.m_sent.max()) + 1 if len(a.m_sent) else 1
    n_men = len(a.m_sent)
    args = np.unique(np.concatenate([sc * n_men + subj_m, (oc * n_men + obj_m)[~filler]]))
    ckey, counts = np.unique(args // n_men * n_sent + a.m_sent[args % n_men], return_counts=True)
    bad = ckey[counts > 1]
    keep &= ~np.isin(sc * n_sent + sent, bad)
    keep &= filler | ~np.isin(oc * n_sent + sent, bad)
    return Prediction(pair[keep], pred[keep], sc[keep], oc[keep], mcl)


