"""Candidate pairs of an exhaustive-relations task: which mention pairs a page shows.

Every same-sentence pair of a document's aggregated mentions (`GoldMention`) whose
types can hold a relation (`kbpo.core.schema.pair_types_compatible`), oriented in the
canonical direction (type rank first, then span order, as `kbpo.core.schema.canonicalize`),
and listed sentence by sentence in reading order. Two mentions of the same entity
cluster are skipped: a relation of an entity with itself is not a KBP relation.

The page, the intake validation and the exhaustive aggregation all call
`document_pairs`, so what a worker is asked and what is checked can never drift.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kbpo.core.schema import TYPE_RANK, pair_types_compatible


@dataclass(frozen=True)
class MentionSpan:
    """A typed span of a document, `[begin, end)`, with its entity cluster label."""

    begin: int
    end: int
    type: str
    entity: str = ""


@dataclass(frozen=True)
class CandidatePair:
    """One pair to judge: subject and object spans in canonical direction."""

    sentence_index: int
    subject: MentionSpan
    object: MentionSpan

    @property
    def key(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """`((subject begin, end), (object begin, end))`, as answers name the pair."""
        return ((self.subject.begin, self.subject.end), (self.object.begin, self.object.end))


def _canonical_order(a: MentionSpan, b: MentionSpan) -> tuple[MentionSpan, MentionSpan]:
    if (TYPE_RANK[a.type], a.begin, a.end) <= (TYPE_RANK[b.type], b.begin, b.end):
        return a, b
    return b, a


def pairs_from_mentions(mentions: Iterable[MentionSpan],
                        sentences: Sequence[tuple[int, int]]) -> list[CandidatePair]:
    """Candidate pairs from mentions and the document's sentence spans `(begin, end)`.

    A mention belongs to the sentence that contains it entirely; a mention crossing a
    sentence boundary (which token-snapped annotation does not produce) is ignored.
    """
    by_sentence: dict[int, list[MentionSpan]] = {}
    for m in sorted(set(mentions), key=lambda m: (m.begin, m.end, m.type)):
        if m.type not in TYPE_RANK:
            continue
        for i, (sb, se) in enumerate(sentences):
            if sb <= m.begin and m.end <= se:
                by_sentence.setdefault(i, []).append(m)
                break
    out: list[CandidatePair] = []
    for i in sorted(by_sentence):
        ms = by_sentence[i]
        for x in range(len(ms)):
            for y in range(x + 1, len(ms)):
                a, b = ms[x], ms[y]
                if (a.begin, a.end) == (b.begin, b.end):
                    continue
                if a.entity and a.entity == b.entity:
                    continue
                if not pair_types_compatible(a.type, b.type):
                    continue
                subj, obj = _canonical_order(a, b)
                out.append(CandidatePair(i, subj, obj))
    out.sort(key=lambda p: (p.sentence_index, p.subject.begin, p.subject.end,
                            p.object.begin, p.object.end))
    return out


def document_pairs(document: object) -> list[CandidatePair]:
    """The candidate pairs of a `kbpo.core.models.Document`, from its `GoldMention`s."""
    from annotations.models import GoldMention

    mentions = [MentionSpan(m.begin, m.end, m.type, m.entity)
                for m in GoldMention.objects.filter(document=document)]
    sentences = list(document.sentences.order_by("index").values_list("begin", "end"))
    return pairs_from_mentions(mentions, sentences)
