"""Writing a simulated system's output as a TAC KBP knowledge-base file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kbpo.core import schema

from .common import PRED_CODE, PREDICATES
from .facts import World
from .gold import TYPE_CODE, Flat
from .systems import Prediction, SystemProfile, WorldArrays


# Fine-grained names from the schema's folding table: coarse -> {gpe kind: fine}.
def _fine_names() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for fine, coarse in sorted(schema.FOLDED.items()):
        if "top_member" in fine:
            kinds = ("*",)  # any object
        elif "cit" in fine:
            kinds = ("city",)
        elif "stateorprovince" in fine or "statesorprovinces" in fine:
            kinds = ("state",)
        else:
            kinds = ("country",)
        for k in kinds:
            out.setdefault(coarse, {})[k] = fine
    return out


FINE_NAMES = _fine_names()


def _fine(predicate: str, kind: str) -> str:
    names = FINE_NAMES.get(predicate)
    if not names:
        return predicate
    return names.get(kind) or names.get("*") or predicate


_CONF = np.array([f"{c / 100:.2f}" for c in range(101)], dtype=object)
_KINDS = ("", "city", "state", "country")


def _name_table() -> np.ndarray:
    """[inverse?, fine?, predicate, subject type, object type, object's GPE kind] -> name.

    The object is the argument whose GPE kind picks the fine-grained name (for
    the inverse it is the subject of the written line).
    """
    table = np.full((2, 2, len(PREDICATES), 5, 5, len(_KINDS)), "", dtype=object)
    for (st, ot), preds in schema.CANONICAL.items():
        for pred in preds:
            c, si, oi = PRED_CODE[pred], TYPE_CODE[st], TYPE_CODE[ot]
            inv = schema.inverse(pred, st, ot)
            for k, kind in enumerate(_KINDS):
                table[0, 0, c, si, oi, k] = pred
                table[0, 1, c, si, oi, k] = _fine(pred, kind)
                if inv is not None:
                    table[1, 0, c, si, oi, k] = inv
                    table[1, 1, c, si, oi, k] = _fine(inv, kind)
    return table


NAME_TABLE = _name_table()
_EMPLOYEE = PRED_CODE["per:employee_or_member_of"]


class Emitter:
    """Writes one system's KB file from its predictions."""

    def __init__(self, w: World, flat: Flat, a: WorldArrays) -> None:
        self.w, self.a = w, a
        docs = np.array(flat.doc_ids, dtype=object)
        m_doc = docs[a.m_doc]
        self.m_prov = np.array(
            [f"{d}:{b}-{e - 1}" for d, b, e in zip(m_doc, flat.m_begin, flat.m_end, strict=True)],
            dtype=object,
        )
        self.m_quoted = np.array(['"' + t + '"' for t in flat.m_text], dtype=object)
        self.s_prov = np.array(
            [
                f"{docs[d]}:{b}-{e - 1}"
                for d, (b, e) in zip(flat.sent_doc, flat.sent_span, strict=True)
            ],
            dtype=object,
        )
        self.type_name = np.array(schema.ENTITY_TYPES, dtype=object)
        self.kind_code = np.array(
            [_KINDS.index(k) if k in _KINDS else 0 for k in w.kind], dtype=np.int64
        )
        self.link = np.array(w.link, dtype=object)

    def write(
        self, path: Path, prof: SystemProfile, pr: Prediction, index: int, seed: int
    ) -> None:
        a = self.a
        rng = np.random.default_rng([seed, 5000 + index])
        if len(pr.pair) == 0:
            path.write_text(prof.name + "\n", encoding="utf-8")
            return
        subj_m, obj_m = a.p_subj[pr.pair], a.p_obj[pr.pair]
        filler = pr.obj_cluster < 0
        # Cluster ids -> ":E<n>", numbered in order of cluster id.
        args_m = np.unique(np.concatenate([subj_m, obj_m[~filler]]))
        args_c = pr.mention_cluster[args_m]
        clusters = np.unique(args_c)
        names = np.array([f":E{i + 1}" for i in range(len(clusters))], dtype=object)
        rank = np.searchsorted(clusters, pr.mention_cluster[args_m])
        base_entity = np.where(clusters >= a.n_entities, clusters - a.n_entities, clusters)
        lines: list[str] = [prof.name]
        lines += [
            f"{n}\ttype\t{t}"
            for n, t in zip(names, self.type_name[a.e_type[base_entity]], strict=True)
        ]
        order = np.lexsort((args_m, rank))
        lines += [
            f"{n}\tmention\t{q}\t{p}"
            for n, q, p in zip(
                names[rank[order]],
                self.m_quoted[args_m[order]],
                self.m_prov[args_m[order]],
                strict=True,
            )
        ]
        # canonical_mention: the longest mention of the entity in each document.
        docs = a.m_doc[args_m]
        order = np.lexsort((args_m, -a.m_len[args_m], docs, rank))
        r_o, d_o = rank[order], docs[order]
        head = np.ones(len(order), dtype=bool)
        head[1:] = (r_o[1:] != r_o[:-1]) | (d_o[1:] != d_o[:-1])
        cm = args_m[order][head]
        lines += [
            f"{n}\tcanonical_mention\t{q}\t{p}"
            for n, q, p in zip(names[r_o[head]], self.m_quoted[cm], self.m_prov[cm], strict=True)
        ]
        links = self.link[base_entity]
        has_link = np.array([lk is not None for lk in links], dtype=bool)
        emit_link = has_link & (rng.random(len(clusters)) < prof.link_rate)
        lines += [
            f"{n}\tlink\t{lk}" for n, lk in zip(names[emit_link], links[emit_link], strict=True)
        ]

        # Relations, in canonical or inverse direction, coarse or fine-grained names.
        sname = names[np.searchsorted(clusters, pr.subj_cluster)]
        oname = np.where(
            filler,
            self.m_quoted[obj_m],
            names[np.searchsorted(clusters, np.where(filler, clusters[0], pr.obj_cluster))],
        )
        sprov = self.s_prov[a.p_sent[pr.pair]]
        prov = np.where(filler, self.m_prov[obj_m] + "," + sprov, sprov)
        gold = np.isin(pr.pair * len(PREDICATES) + pr.pred, a.g_keys)
        conf = np.where(gold, rng.integers(55, 100, len(gold)), rng.integers(20, 96, len(gold)))
        conf_s = _CONF[conf]
        u = rng.random(len(gold))
        both = ~filler & (u < prof.both_directions_rate)
        inverse = ~filler & (u < prof.both_directions_rate + prof.inverse_rate)
        forward = ~inverse | both
        fine = rng.random(len(gold)) < prof.fine_grained_rate
        # Only some employees are top members: rename a third of those.
        fine &= (pr.pred != _EMPLOYEE) | (rng.random(len(gold)) < 0.3)
        fine = fine.astype(np.int64)
        st, ot = a.m_type[subj_m], a.m_type[obj_m]
        kind = self.kind_code[a.m_entity[obj_m]]
        fwd_name = NAME_TABLE[0, fine, pr.pred, st, ot, kind]
        inv_name = NAME_TABLE[1, fine, pr.pred, st, ot, kind]
        lines += [
            f"{s}\t{p}\t{o}\t{v}\t{c}"
            for s, p, o, v, c in zip(
                sname[forward],
                fwd_name[forward],
                oname[forward],
                prov[forward],
                conf_s[forward],
                strict=True,
            )
        ]
        lines += [
            f"{s}\t{p}\t{o}\t{v}\t{c}"
            for s, p, o, v, c in zip(
                oname[inverse],
                inv_name[inverse],
                sname[inverse],
                prov[inverse],
                conf_s[inverse],
                strict=True,
            )
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


