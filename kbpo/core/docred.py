"""DocRED / Re-DocRED in KBP terms, without Django: detokenisation, the mapping of
entity types and Wikidata properties to the KBP schema (docs/reference/docred-mapping.md), and the
gold instances of a document. `import_gold --format docred` and the real-text demo world
(`kbpo.demo.world.docred`) both use it, so the gold they produce is the same."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .gold import closest_pair
from .schema import canonicalize

# DocRED entity types -> KBP types; NUM and MISC have no KBP counterpart.
DOCRED_TYPES: dict[str, str] = {"PER": "PER", "ORG": "ORG", "LOC": "GPE", "TIME": "DATE"}

# Wikidata property -> {subject type (KBP) -> predicate stated in the label's h→t direction}.
# Reasoning per row in docs/reference/docred-mapping.md. Object types are checked by canonicalize.
WIKIDATA_TO_KBP: dict[str, dict[str, str]] = {
    "P569": {"PER": "per:date_of_birth"},
    "P570": {"PER": "per:date_of_death"},
    "P19": {"PER": "per:place_of_birth"},
    "P20": {"PER": "per:place_of_death"},
    "P551": {"PER": "per:place_of_residence"},
    "P26": {"PER": "per:spouse"},
    "P22": {"PER": "per:parents"},        # father: t is h's parent
    "P25": {"PER": "per:parents"},        # mother
    "P40": {"PER": "per:children"},
    "P3373": {"PER": "per:siblings"},
    "P1038": {"PER": "per:other_family"},
    "P108": {"PER": "per:employee_or_member_of"},
    "P463": {"PER": "per:employee_or_member_of", "ORG": "org:member_of",
             "GPE": "gpe:member_of"},
    "P102": {"PER": "per:employee_or_member_of"},
    "P54": {"PER": "per:employee_or_member_of"},
    "P69": {"PER": "per:schools_attended"},
    "P112": {"ORG": "org:founded_by"},
    "P159": {"ORG": "org:place_of_headquarters"},
    "P571": {"ORG": "org:date_founded"},
    "P576": {"ORG": "org:date_dissolved"},
    "P355": {"ORG": "org:subsidiaries"},
    "P749": {"ORG": "org:parents"},
    "P127": {"ORG": "org:shareholders"},
    "P488": {"ORG": "org:employees_or_members"},   # chairperson: a top member
    "P169": {"ORG": "org:employees_or_members"},   # chief executive officer
    "P118": {"ORG": "org:member_of"},              # league of a sports team
}

# Detokenisation: one space between tokens, except none before closing punctuation and
# clitics and none after opening brackets; one space between sentences.
NO_SPACE_BEFORE = frozenset({",", ".", ";", ":", "!", "?", ")", "]", "}", "%", "'s", "'",
                             "n't", "'re", "'ve", "'ll", "'d", "'m", "''", "-RRB-"})
NO_SPACE_AFTER = frozenset({"(", "[", "{", "``", "$", "-LRB-"})
# Provenance is DOCID:b-e[,DOCID:b-e]: ids hold no spaces, colons or commas.
DOC_ID_UNSAFE = re.compile(r"[\s:,]+")


def detokenize(sents: list[list[str]]) -> tuple[str, list[list[tuple[int, int]]]]:
    """Rebuild a text from DocRED token lists; returns it with every token's offsets."""
    parts: list[str] = []
    pos = 0
    offsets: list[list[tuple[int, int]]] = []
    prev: str | None = None
    for sent in sents:
        spans = []
        for j, token in enumerate(sent):
            if prev is not None:
                glue = j > 0 and (token in NO_SPACE_BEFORE or prev in NO_SPACE_AFTER)
                if not glue:
                    parts.append(" ")
                    pos += 1
            spans.append((pos, pos + len(token)))
            parts.append(token)
            pos += len(token)
            prev = token
        offsets.append(spans)
    return "".join(parts), offsets


def docred_doc_id(title: str, prefix: str = "") -> str:
    """A document id from a DocRED title: whitespace, colons and commas become
    underscores."""
    clean = DOC_ID_UNSAFE.sub("_", title.strip()).strip("_") or "untitled"
    return (prefix + clean)[:190]


@dataclass(frozen=True)
class MentionIn:
    begin: int
    end: int
    type: str
    entity: str
    canonical: bool
    link: str = ""


@dataclass(frozen=True)
class RelationIn:
    subject: tuple[int, int]
    object: tuple[int, int]
    predicate: str
    subject_entity: str


def longest_first(mentions: Iterable[MentionIn]) -> dict[str, tuple[int, int]]:
    """The canonical span per entity: the longest mention, the earliest on ties."""
    best: dict[str, tuple[int, int]] = {}
    for m in mentions:
        cur = best.get(m.entity)
        if cur is None or (m.end - m.begin, -m.begin) > (cur[1] - cur[0], -cur[0]):
            best[m.entity] = (m.begin, m.end)
    return best


@dataclass
class Counts:
    """What the mapping read and skipped, by reason (the import report extends it)."""

    labels: int = 0                 # entity-level labels read
    labels_mapped: int = 0          # labels that gave at least one instance
    merged_instances: int = 0       # instances produced twice (inverse/repeated labels)
    skipped_mentions: Counter = field(default_factory=Counter)
    skipped_labels: Counter = field(default_factory=Counter)
    unmapped_properties: Counter = field(default_factory=Counter)
    messages: list[str] = field(default_factory=list)

    def note(self, message: str) -> None:
        if len(self.messages) < 200:
            self.messages.append(message)


def _entity_type(vertex: list) -> str | None:
    """The entity's DocRED type: the most frequent among its mentions, first on ties."""
    types = [m.get("type") for m in vertex if isinstance(m, dict)]
    if not types:
        return None
    counts = Counter(types)
    return max(types, key=lambda t: (counts[t], -types.index(t)))


def docred_gold(doc_id: str, rec: dict, offsets: list[list[tuple[int, int]]],
                report: Counts, index: int) -> tuple[list[MentionIn], list[RelationIn]]:
    """A DocRED document's gold mentions and relation instances, canonical.

    A label becomes one instance per evidence sentence (every sentence when it has no
    evidence) that mentions both entities, between their closest mentions there
    (`kbpo.core.gold.closest_pair`, as ingestion resolves whole-sentence provenance).
    What is skipped is counted in `report` by reason.
    """
    where = f"document [{index}] ({doc_id})"
    # entity index -> (KBP type or None, raw type, {sentence id: [spans]})
    entities: list[tuple[str | None, str, dict[int, list[tuple[int, int]]]]] = []
    mentions: dict[tuple[int, int], MentionIn] = {}
    for e, vertex in enumerate(rec["vertexSet"]):
        raw_type = _entity_type(vertex) or "?"
        kbp_type = DOCRED_TYPES.get(raw_type)
        per_sent: dict[int, list[tuple[int, int]]] = {}
        for j, m in enumerate(vertex):
            try:
                sid = m["sent_id"]
                start, end = m["pos"]
            except (KeyError, TypeError, ValueError):
                report.skipped_mentions["malformed mention"] += 1
                report.note(f"{where}: vertexSet[{e}][{j}] needs sent_id and pos")
                continue
            if (not isinstance(sid, int) or not 0 <= sid < len(offsets)
                    or not isinstance(start, int) or not isinstance(end, int)
                    or not 0 <= start < end <= len(offsets[sid])):
                report.skipped_mentions["position outside its sentence"] += 1
                report.note(f"{where}: vertexSet[{e}][{j}] pos {m.get('pos')} in sentence "
                            f"{sid} is out of range")
                continue
            if kbp_type is None:
                report.skipped_mentions[f"entity type {raw_type} not in the KBP schema"] += 1
                continue
            span = (offsets[sid][start][0], offsets[sid][end - 1][1])
            per_sent.setdefault(sid, []).append(span)
            if span in mentions:
                if mentions[span].entity != f"E{e}":
                    report.skipped_mentions["span already a mention of another entity"] += 1
                continue
            mentions[span] = MentionIn(span[0], span[1], kbp_type, f"E{e}", False)
        entities.append((kbp_type, raw_type, per_sent))
    canon = set(longest_first(mentions.values()).values())
    gold_mentions = [MentionIn(m.begin, m.end, m.type, m.entity, (m.begin, m.end) in canon)
                     for m in sorted(mentions.values(), key=lambda m: (m.begin, m.end))]

    relations: dict[tuple, RelationIn] = {}
    for k, label in enumerate(rec.get("labels", [])):
        report.labels += 1
        try:
            h, t, prop = label["h"], label["t"], label["r"]
            evidence = label.get("evidence") or []
        except (KeyError, TypeError):
            report.skipped_labels["malformed label"] += 1
            report.note(f"{where}: labels[{k}] needs h, t and r")
            continue
        if (not isinstance(h, int) or not isinstance(t, int)
                or not 0 <= h < len(entities) or not 0 <= t < len(entities)):
            report.skipped_labels["entity index out of range"] += 1
            report.note(f"{where}: labels[{k}] h={h!r} t={t!r} is not a vertexSet index")
            continue
        if h == t:
            report.skipped_labels["relation of an entity with itself"] += 1
            continue
        by_type = WIKIDATA_TO_KBP.get(prop)
        if by_type is None:
            report.skipped_labels["property without a KBP counterpart"] += 1
            report.unmapped_properties[str(prop)] += 1
            continue
        (ht, hraw, hsents), (tt, traw, tsents) = entities[h], entities[t]
        if ht is None or tt is None:
            report.skipped_labels[
                f"argument of type {hraw if ht is None else traw} (not in the KBP schema)"] += 1
            continue
        predicate = by_type.get(ht)
        if predicate is None:
            report.skipped_labels["types do not fit the mapped predicate"] += 1
            continue
        both = sorted(set(hsents) & set(tsents))
        if evidence:
            sentence_ids = [s for s in both if s in set(evidence)]
            reason = "evidence sentences do not mention both entities (cross-sentence)"
        else:
            sentence_ids = both
            reason = "no evidence and no sentence mentions both entities"
        if not sentence_ids:
            report.skipped_labels[reason] += 1
            continue
        made, misfit = 0, False
        for sid in sentence_ids:
            # the closest pair of the two entities' mentions in that sentence
            s_span, o_span = closest_pair(hsents[sid], tsents[sid])
            if s_span == o_span:
                continue
            try:
                c = canonicalize((doc_id, *s_span), ht, predicate, (doc_id, *o_span), tt)
            except ValueError:
                misfit = True
                break
            subj = (c.subject[1], c.subject[2])
            rel = RelationIn(subj, (c.object[1], c.object[2]), c.predicate,
                             mentions[subj].entity)
            key = (rel.subject, rel.object, rel.predicate)
            if key in relations:
                report.merged_instances += 1
            else:
                relations[key] = rel
            made += 1
        if made:
            report.labels_mapped += 1
        elif misfit:
            report.skipped_labels["types do not fit the mapped predicate"] += 1
        else:
            report.skipped_labels["both entities share one span"] += 1
    return gold_mentions, list(relations.values())
