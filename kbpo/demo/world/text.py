"""Documents: news-style articles that express some of the world's facts."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from kbpo.core.schema import DATE, ORG, PER

from .facts import World, _rand_date
from .templates import (
    _GENDERED,
    ATTRIBUTION,
    COMBOS_BY_FIRST,
    DISTRACTORS,
    FACT_TEMPLATES,
    FILLERS_NONE,
    FILLERS_ONE,
    HEADLINES,
    _parsed,
)

# ---------------------------------------------------------------------------
# Documents.
# ---------------------------------------------------------------------------


@dataclass
class _Sentence:
    text: str
    mentions: list[tuple[int, int, int]]  # (begin, end, entity), sentence-relative
    relations: list[tuple[int, str, int]]  # (mention idx, world predicate, mention idx)
    traps: list[tuple[int, str, int]]
    distractor: bool = False


class _DocWriter:
    """Renders template sentences for one document."""

    def __init__(self, world: World, rng: random.Random, doc_date: date) -> None:
        self.w = world
        self.rng = rng
        self.doc_date = doc_date
        self.seen: set[int] = set()
        self.used_templates: set[str] = set()

    def pick(self, options: Sequence[str]) -> str:
        """A template not yet used in this document, if there is one."""
        fresh = [t for t in options if t not in self.used_templates]
        choice = self.rng.choice(fresh or options)
        self.used_templates.add(choice)
        return choice

    def _surface(self, ent: int) -> str:
        w = self.w
        if w.etype[ent] == DATE:
            d = w.value[ent]
            assert d is not None
            form = self.rng.random()
            if form < 0.45:
                return f"{d.day} {d:%B} {d.year}"
            if form < 0.8:
                return f"{d:%B} {d.day}, {d.year}"
            return str(d.year)
        short = w.short[ent]
        if short and ent in self.seen and self.rng.random() < 0.4:
            return short
        return w.name[ent]

    def render(
        self,
        template: str,
        slots: dict[int, int],
        relations: Sequence[tuple[int, str, int]] = (),
        traps: Sequence[tuple[int, str, int]] = (),
        distractor: bool = False,
    ) -> _Sentence:
        w = self.w
        out: list[str] = []
        length = 0
        mentions: list[tuple[int, int, int]] = []
        slot_mention: dict[int, int] = {}
        for part in _parsed(template):
            if isinstance(part, str):
                out.append(part)
                length += len(part)
                continue
            prefix, slot_no, suffix = part
            ent = slots[slot_no]
            if prefix in _GENDERED:
                word = _GENDERED[prefix][1 if w.female[ent] else 0]
                out.append(word)
                length += len(word)
                continue
            text = self._surface(ent)
            lead = ""
            if prefix == "a":
                lead = "an " if text[0] in "aeiou" else "a "
            elif suffix == "@":
                lead = "in " if text.isdigit() else "on "
            out.append(lead)
            length += len(lead)
            slot_mention[slot_no] = len(mentions)
            mentions.append((length, length + len(text), ent))
            out.append(text)
            length += len(text)
            if suffix == "'s":
                out.append("'s")
                length += 2
            self.seen.add(ent)
        sentence = "".join(out)
        sentence = sentence[0].upper() + sentence[1:]
        return _Sentence(
            sentence,
            mentions,
            [(slot_mention[a], p, slot_mention[b]) for a, p, b in relations],
            [(slot_mention[a], p, slot_mention[b]) for a, p, b in traps],
            distractor,
        )


def _fact_sentence(dw: _DocWriter, fact_idx: int, used: set[int]) -> _Sentence:
    w, rng = dw.w, dw.rng
    subj, pred, obj = w.facts[fact_idx]
    kind = (pred, w.etype[subj], w.etype[obj])
    slots = {0: subj, 1: obj}
    relations: list[tuple[int, str, int]] = [(0, pred, 1)]
    templates: Sequence[str] = FACT_TEMPLATES[kind]
    combo = COMBOS_BY_FIRST.get(kind)
    if combo is not None and rng.random() < 0.35:
        for f2 in w.by_entity.get(subj, ()):
            s2, p2, o2 = w.facts[f2]
            if (
                s2 != subj
                or (p2, w.etype[s2], w.etype[o2]) != combo.second
                or (o2 == obj) != combo.same_object
                or f2 in used
            ):
                continue
            used.add(f2)
            if combo.same_object:
                relations.append((0, p2, 1))
            else:
                slots[2] = o2
                relations.append((0, p2, 2))
            templates = combo.templates
            break
    template = dw.pick(templates)
    traps: list[tuple[int, str, int]] = []
    if rng.random() < 0.25 and template.endswith("."):
        # An attributed fact: the source is a third entity related to neither.
        source = _unrelated(w, rng, rng.choice((PER, ORG)), list(slots.values()))
        if source is not None:
            template = template[:-1] + rng.choice(ATTRIBUTION)
            slots[9] = source
            if w.etype[source] == PER and w.etype[subj] == ORG:
                traps = [(9, "per:employee_or_member_of", 0)]
    return dw.render(template, slots, relations, traps)


def _unrelated(
    w: World, rng: random.Random, etype: str, others: Sequence[int], pool: Sequence[int] = ()
) -> int | None:
    """An entity of a type, distinct from and unrelated to all `others`."""
    candidates = [e for e in pool if w.etype[e] == etype]
    for attempt in range(12):
        e = rng.choice(candidates) if candidates and attempt < 6 else rng.choice(w.by_type[etype])
        if e not in others and not any(w.is_related(e, o) for o in others):
            return e
    return None


def _distractor_sentence(dw: _DocWriter, pool: Sequence[int]) -> _Sentence | None:
    w, rng = dw.w, dw.rng
    fresh = [d for d in DISTRACTORS if d[1] not in dw.used_templates]
    types, template, traps = rng.choice(fresh or DISTRACTORS)
    dw.used_templates.add(template)
    slots: dict[int, int] = {}
    for i, t in enumerate(types):
        if t == DATE:
            d = dw.doc_date - timedelta(days=rng.randint(1, 60))
            slots[i] = w.add(DATE, d.isoformat(), value=d, eid="DATE:" + d.isoformat())
            continue
        e = _unrelated(w, rng, t, list(slots.values()), pool)
        if e is None:
            return None
        slots[i] = e
    return dw.render(template, slots, (), traps, distractor=True)


def _filler_sentence(dw: _DocWriter, pool: Sequence[int]) -> _Sentence:
    rng = dw.rng
    if pool and rng.random() < 0.6:
        ent = rng.choice(pool)
        options = FILLERS_ONE.get(dw.w.etype[ent])
        if options:
            return dw.render(dw.pick(options), {0: ent})
    return dw.render(dw.pick(FILLERS_NONE), {})


def compose_document(
    w: World, rng: random.Random, doc_id: str
) -> tuple[dict, list[tuple[int, int]], list[_Sentence]]:
    """One document: its JSON record, sentence spans and rendered sentences."""
    doc_date = _rand_date(rng, 2008, 2016)
    dw = _DocWriter(w, rng, doc_date)
    focus = w.focus_ids[_zipf_index(rng, len(w.focus_ids))]
    # Facts about the focus first, then about its neighbours.
    own = list(w.by_entity.get(focus, ()))
    rng.shuffle(own)
    neighbours: list[int] = []
    for f in own:
        s, _, o = w.facts[f]
        other = o if s == focus else s
        if w.etype[other] in (PER, ORG) and other not in neighbours:
            neighbours.append(other)
    extra: list[int] = []
    for n in neighbours[:6]:
        facts = list(w.by_entity.get(n, ()))
        rng.shuffle(facts)
        extra.extend(facts[:5])
    queue: list[int] = []
    queued: set[int] = set()
    for f in own + extra:
        if f not in queued:
            queued.add(f)
            queue.append(f)
    pool = [focus, *neighbours[:6]]

    # The plan: a lead fact, then facts, distractors and fillers in random order;
    # topped up with distractors and fillers while the story is short.
    plan = (
        ["fact"] * rng.randint(12, 26)
        + ["distractor"] * rng.randint(3, 7)
        + ["filler"] * rng.randint(2, 5)
    )
    rng.shuffle(plan)
    plan.insert(0, "fact")
    sentences: list[_Sentence] = []
    used: set[int] = set()
    total = 0
    qpos = 0
    step = 0
    while len(sentences) < 40 and (step < len(plan) or total < 2000):
        what = plan[step] if step < len(plan) else rng.choice(("distractor", "filler"))
        step += 1
        while qpos < len(queue) and queue[qpos] in used:
            qpos += 1
        if what == "fact" and qpos < len(queue):
            used.add(queue[qpos])
            sent = _fact_sentence(dw, queue[qpos], used)
        elif what == "distractor" or (what == "fact" and rng.random() < 0.5):
            sent = _distractor_sentence(dw, pool) or _filler_sentence(dw, pool)
        else:
            sent = _filler_sentence(dw, pool)
        sentences.append(sent)
        total += len(sent.text) + 1
        for _, _, e in sent.mentions:
            if w.etype[e] in (PER, ORG) and e not in pool and len(pool) < 12:
                pool.append(e)

    # Paragraphs of one to four sentences.
    spans: list[tuple[int, int]] = []
    chunks: list[str] = []
    pos = 0
    left_in_par = rng.randint(1, 3)
    for i, sent in enumerate(sentences):
        if i:
            sep = " "
            if left_in_par == 0:
                sep = "\n\n"
                left_in_par = rng.randint(2, 4)
            chunks.append(sep)
            pos += len(sep)
        spans.append((pos, pos + len(sent.text)))
        chunks.append(sent.text)
        pos += len(sent.text)
        left_in_par -= 1
    text = "".join(chunks)
    title = f"{w.name[focus]} {rng.choice(HEADLINES)}"
    record = {"id": doc_id, "title": title, "text": text, "date": doc_date.isoformat()}
    return record, spans, sentences


def _zipf_index(rng: random.Random, n: int) -> int:
    """Rank with P(k) ∝ 1/(k + 10), k < n, by inverting the continuous CDF."""
    u = rng.random()
    k = int(math.exp(u * math.log((n + 10) / 10)) * 10 - 10)
    return min(max(k, 0), n - 1)


