"""Gold for each document: every mention and every expressed relation."""

from __future__ import annotations

from dataclasses import dataclass, field

from kbpo.core import schema

from .common import PRED_CODE
from .facts import World
from .text import _Sentence

# ---------------------------------------------------------------------------
# Gold: mentions and canonical relations, also collected into flat arrays.
# ---------------------------------------------------------------------------

TYPE_CODE = {t: i for i, t in enumerate(schema.ENTITY_TYPES)}


@dataclass
class Flat:
    """Corpus-wide arrays the system simulator works on (lists while building)."""

    doc_ids: list[str] = field(default_factory=list)
    sent_doc: list[int] = field(default_factory=list)
    sent_span: list[tuple[int, int]] = field(default_factory=list)
    m_doc: list[int] = field(default_factory=list)
    m_begin: list[int] = field(default_factory=list)
    m_end: list[int] = field(default_factory=list)
    m_sent: list[int] = field(default_factory=list)
    m_entity: list[int] = field(default_factory=list)
    m_text: list[str] = field(default_factory=list)
    # Every co-sentence mention pair that some predicate could connect, in
    # canonical order: (subject mention, object mention, sentence).
    p_subj: list[int] = field(default_factory=list)
    p_obj: list[int] = field(default_factory=list)
    p_sent: list[int] = field(default_factory=list)
    p_trap: list[int] = field(default_factory=list)  # canonical trap predicate or -1
    p_distractor: list[bool] = field(default_factory=list)
    # Gold relation instances: (pair, canonical predicate code).
    g_pair: list[int] = field(default_factory=list)
    g_pred: list[int] = field(default_factory=list)


def _canonical(
    w: World, doc: str, sb: int, sent: _Sentence, a: int, pred: str, b: int
) -> schema.Canonical:
    """Canonical form of a relation between mentions a and b of a sentence."""
    ma, mb = sent.mentions[a], sent.mentions[b]
    return schema.canonicalize(
        (doc, sb + ma[0], sb + ma[1]),
        w.etype[ma[2]],
        pred,
        (doc, sb + mb[0], sb + mb[1]),
        w.etype[mb[2]],
    )


def gold_for_document(
    w: World, record: dict, spans: list[tuple[int, int]], sentences: list[_Sentence], flat: Flat
) -> dict:
    doc = record["id"]
    doc_no = len(flat.doc_ids)
    flat.doc_ids.append(doc)
    mentions: list[dict] = []
    relations: list[dict] = []
    for (sb, se), sent in zip(spans, sentences, strict=True):
        sent_no = len(flat.sent_span)
        flat.sent_doc.append(doc_no)
        flat.sent_span.append((sb, se))
        first_m = len(flat.m_doc)
        for b, e, ent in sent.mentions:
            m = {
                "id": f"m{len(mentions) + 1}",
                "span": [sb + b, sb + e],
                "type": w.etype[ent],
                "entity": w.eid[ent],
                "text": sent.text[b:e],
            }
            if w.link[ent]:
                m["link"] = w.link[ent]
            mentions.append(m)
            flat.m_doc.append(doc_no)
            flat.m_begin.append(sb + b)
            flat.m_end.append(sb + e)
            flat.m_sent.append(sent_no)
            flat.m_entity.append(ent)
            flat.m_text.append(sent.text[b:e])

        gold_preds: dict[tuple[int, int], list[str]] = {}
        for a, pred, b in sent.relations:
            c = _canonical(w, doc, sb, sent, a, pred, b)
            key = (c.subject[1], c.object[1])
            if c.predicate in gold_preds.setdefault(key, []):
                continue
            gold_preds[key].append(c.predicate)
            relations.append(
                {
                    "subject": [c.subject[1], c.subject[2]],
                    "object": [c.object[1], c.object[2]],
                    "predicate": c.predicate,
                    "sentence": [sb, se],
                }
            )
        traps = {}
        for a, pred, b in sent.traps:
            c = _canonical(w, doc, sb, sent, a, pred, b)
            traps[(c.subject[1], c.object[1])] = PRED_CODE[c.predicate]
        # All compatible pairs of this sentence, canonical order.
        idx = range(len(sent.mentions))
        for i in idx:
            for j in idx:
                mi, mj = sent.mentions[i], sent.mentions[j]
                ti, tj = w.etype[mi[2]], w.etype[mj[2]]
                if (schema.TYPE_RANK[ti], mi[0]) >= (schema.TYPE_RANK[tj], mj[0]):
                    continue
                if not schema.CANONICAL.get((ti, tj)):
                    continue
                pair_no = len(flat.p_subj)
                flat.p_subj.append(first_m + i)
                flat.p_obj.append(first_m + j)
                flat.p_sent.append(sent_no)
                key = (sb + mi[0], sb + mj[0])
                flat.p_trap.append(traps.get(key, -1))
                flat.p_distractor.append(sent.distractor or key in traps)
                for pred in gold_preds.get(key, ()):
                    flat.g_pair.append(pair_no)
                    flat.g_pred.append(PRED_CODE[pred])
    return {
        "doc": doc,
        "sentences": [list(s) for s in spans],
        "mentions": mentions,
        "relations": relations,
    }


