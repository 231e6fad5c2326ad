"""What one crowd answer may hold: the payload parsed, and each task kind's checks.

`intake.submit_assignment` calls these before it stores anything; they touch no row
but the questions they are given.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field

from annotations.models import Hit, Question, TaskKind
from kbpo.core.models import DocumentEntity
from kbpo.core.schema import ENTITY_TYPES, NO_RELATION, predicates_for
from kbpo.core.schemas import TAC_KBP, get_schema, offered_relations

from .candidates import document_pairs
from .caps import relation_cap

# A coarse cap on one answer's `extra`, before its question is known; each kind's schema
# (`_check_extra_schema`) then allows only the fields its page sends, so an anonymous
# post cannot park a blob in the database (issue 41: 200,000 characters were kept).
MAX_EXTRA_BYTES = 64_000
# What a relation page sends in `extra`: its three checkboxes.
RELATION_EXTRA_KEYS = frozenset({"subject_ok", "object_ok", "link_ok"})
ENTITY_EXTRA_KEYS = frozenset({"mentions"})
ENTITY_MENTION_KEYS = frozenset({"begin", "end", "type", "entity", "canonical", "link"})
EXHAUSTIVE_EXTRA_KEYS = frozenset({"relations"})
EXHAUSTIVE_RELATION_KEYS = frozenset({"subject", "object", "choices"})
# A DocRED exhaustive page (document-level facts) sends the facts the worker added.
FACTS_EXTRA_KEYS = frozenset({"facts"})
FACT_KEYS = frozenset({"h", "t", "r"})
# MTurk's AssignmentId (botocore's EntityId: 1–64 capital letters and digits). Any
# other id is made up, and asking MTurk about it fails as a malformed request.
MTURK_ASSIGNMENT_ID = re.compile(r"[A-Z0-9]{1,64}")


class IntakeError(Exception):
    """An answer we refuse; `field` names what is wrong, `status` is the HTTP status.

    `code` says whose fault it is when MTurk already holds the work (crowd/refusals):
    `invalid` (malformed answers, a made-up label, more relations than a pair may
    have: the worker's), `closed`, `repeat` and `blocked` (the HIT was no longer open to
    them: ours), `too_fast` (submitted sooner after accepting than we count: our policy,
    paid), `conflict` (the id is someone else's).
    """

    def __init__(self, message: str, field: str = "", status: int = 400,
                 code: str = "invalid") -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.status = status
        self.code = code

    def as_dict(self) -> dict[str, str]:
        return {"error": self.message, "field": self.field}


@dataclass(frozen=True)
class AnswerIn:
    """One answer as it arrives: the question, the chosen relations, extra checks."""

    question_id: int
    choices: tuple[str, ...]
    extra: dict = field(default_factory=dict, hash=False, compare=False)
    seconds: float | None = field(default=None, hash=False, compare=False)


MAX_EXTRA_DEPTH = 20


def storable_text(text: str) -> bool:
    """Whether Postgres can store the string: no NUL, no lone surrogate (invalid UTF-8)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_storable(value: object, where: str, depth: int = 0) -> None:
    """Refuse JSON the database cannot keep (jsonb rejects \\u0000 and lone surrogates),
    and nesting deeper than any page sends, before it reaches a query."""
    if depth > MAX_EXTRA_DEPTH:
        raise IntakeError(f"{where}: nested more than {MAX_EXTRA_DEPTH} levels deep", where)
    if isinstance(value, str):
        if not storable_text(value):
            raise IntakeError(f"{where}: text with a NUL character or an unpaired "
                              "surrogate (\\u0000, \\ud800-\\udfff) cannot be stored", where)
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_storable(k, where, depth + 1)
            _check_storable(v, where, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_storable(v, where, depth + 1)


def valid_external_id(value: str) -> bool:
    """1–64 printable characters: MTurk's ids are; NUL, control characters and lone
    surrogates would fail in the database (a 500) instead of being refused."""
    return 0 < len(value) <= 64 and value.isprintable()


def parse_answers(payload: object) -> list[AnswerIn]:
    """Parse `{"answers": [{"question": 12, "choices": [...], "extra": {...}}, ...]}`."""
    if not isinstance(payload, dict) or not isinstance(payload.get("answers"), list):
        raise IntakeError('expected a JSON object {"answers": [...]}', "answers")
    out: list[AnswerIn] = []
    for i, item in enumerate(payload["answers"]):
        where = f"answers[{i}]"
        if not isinstance(item, dict):
            raise IntakeError(f"{where}: expected an object", where)
        qid = item.get("question")
        if not isinstance(qid, int) or isinstance(qid, bool):
            raise IntakeError(f"{where}.question: expected a question id (integer)",
                              f"{where}.question")
        choices = item.get("choices")
        if (not isinstance(choices, list) or not choices
                or not all(isinstance(c, str) for c in choices)):
            raise IntakeError(f"{where}.choices: expected a non-empty list of relation names",
                              f"{where}.choices")
        # Checked here, not only against the offered options: a post on an assignment
        # MTurk already confirmed is kept without that check.
        _check_storable(choices, f"{where}.choices")
        extra = item.get("extra", {})
        if isinstance(extra, dict):
            _check_storable(extra, f"{where}.extra")
        if not isinstance(extra, dict):
            raise IntakeError(f"{where}.extra: expected an object", f"{where}.extra")
        if len(repr(extra)) > MAX_EXTRA_BYTES:
            raise IntakeError(f"{where}.extra: larger than {MAX_EXTRA_BYTES:,} characters; "
                              "send only the fields the task page sends", f"{where}.extra",
                              status=413)
        seconds = item.get("seconds")
        if seconds is not None and (not isinstance(seconds, int | float)
                                    or isinstance(seconds, bool)
                                    or not math.isfinite(seconds) or seconds < 0):
            raise IntakeError(f"{where}.seconds: expected a non-negative number",
                              f"{where}.seconds")
        out.append(AnswerIn(qid, tuple(sorted(set(choices))), extra,
                            float(seconds) if seconds is not None else None))
    return out


def page_order(hit: Hit) -> list[int]:
    """The HIT's question ids in the order its task page shows them."""
    return list(hit.items.order_by("position", "pk").values_list("question_id", flat=True))


def from_page(hit: Hit, answers: list[AnswerIn]) -> list[AnswerIn]:
    """Answers keyed by question ids, from answers keyed as the task page numbers the
    HIT's questions: 0, 1, … in page order (`page_order`). For what comes from outside
    (page posts, MTurk's copy); the simulated crowd calls the intake with ids.

    The page never shows question ids: control questions are created after a batch's
    test questions, so their larger ids would tell a worker which ones they are. Hence
    no error here names an id, and answers keyed by ids pass only as exactly this
    HIT's full set (a page loaded before this numbering): a guess at one id learns
    nothing. That set is never 0 … n−1 (no question id is 0).
    """
    order = page_order(hit)
    if sorted(a.question_id for a in answers) == sorted(order):
        return answers
    out = []
    for i, a in enumerate(answers):
        if not 0 <= a.question_id < len(order):
            raise IntakeError(f"answers[{i}].question: {a.question_id} is not a question of "
                              f"this task (they are numbered 0 to {len(order) - 1})",
                              f"answers[{i}].question")
        out.append(dataclasses.replace(a, question_id=order[a.question_id]))
    return out


def allowed_choices(question: Question) -> set[str]:
    """The answers a relation question accepts: the pair's relations or no_relation.

    On a DocRED corpus every relation of the schema: its entity types only say which
    relations to offer first (DocRED relates whatever the text supports)."""
    pair = question.pair
    assert pair is not None
    return {*offered_relations(question.corpus.schema, pair.subject_type, pair.object_type),
            NO_RELATION}


DONE = "done"
# A Wikipedia title is at most 255 bytes; the page labels entities "E1", "E2", ...
MAX_LINK_CHARS = 300
MAX_ENTITY_LABEL_CHARS = 64


def _only_keys(value: dict, allowed: frozenset[str], where: str) -> None:
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise IntakeError(f"{where}: unknown field {unknown[0][:40]!r} (allowed: "
                          f"{', '.join(sorted(allowed))})", where)


def _check_relation_extra(answer: AnswerIn, where: str) -> None:
    """A relation answer's `extra`: the page's checkboxes, true, false or null."""
    _only_keys(answer.extra, RELATION_EXTRA_KEYS, f"{where}.extra")
    for key, value in answer.extra.items():
        if value is not None and not isinstance(value, bool):
            raise IntakeError(f"{where}.extra.{key}: expected true, false or null",
                              f"{where}.extra.{key}")


def _check_relation_choices(choices: tuple[str, ...] | list[str], allowed: set[str],
                            where: str, cap: int) -> None:
    bad = [c for c in choices if c not in allowed]
    if bad:
        raise IntakeError(f"{where}: {bad[0]!r} is not an option for this pair "
                          f"(allowed: {', '.join(sorted(allowed))})", where)
    if NO_RELATION in choices and len(choices) > 1:
        raise IntakeError(f"{where}: 'no_relation' cannot be combined with a relation", where)
    if len(set(choices)) > cap:
        # Ticking every box would make an answer "right" on every pair.
        raise IntakeError(f"{where}: {len(set(choices))} relations are marked for one pair; "
                          f"mark at most {cap} (the relations the sentence states, usually "
                          "one)", where)


def _check_done(answer: AnswerIn, where: str) -> None:
    if answer.choices != (DONE,):
        raise IntakeError(f"{where}: a document task is answered with choices [\"done\"]; "
                          "its spans and relations go in extra", where)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _span(value: object, where: str) -> tuple[int, int]:
    if (not isinstance(value, list) or len(value) != 2 or not all(_is_int(v) for v in value)
            or not 0 <= value[0] < value[1]):
        raise IntakeError(f"{where}: expected [begin, end] character offsets with begin < end",
                          where)
    return value[0], value[1]


def _token_bounds(question: Question) -> tuple[set[int], set[int], list[tuple[int, int]]]:
    """Token begins, token ends and sentence spans of the question's document."""
    begins: set[int] = set()
    ends: set[int] = set()
    sentences: list[tuple[int, int]] = []
    for s in question.document.sentences.order_by("index"):
        sentences.append((s.begin, s.end))
        begins.update(s.tokens[0::2])
        ends.update(s.tokens[1::2])
    return begins, ends, sentences


def check_entity_answer(question: Question, answer: AnswerIn, where: str) -> None:
    """Validate `extra.mentions` of an entity question (see docs/internals/task-answers.md)."""
    _check_done(answer, f"{where}.choices")
    _only_keys(answer.extra, ENTITY_EXTRA_KEYS, f"{where}.extra")
    mentions = answer.extra.get("mentions")
    if not isinstance(mentions, list):
        raise IntakeError(f"{where}.extra.mentions: expected a list of mentions",
                          f"{where}.extra.mentions")
    begins, ends, sentences = _token_bounds(question)
    if len(mentions) > len(begins):
        # Spans start on distinct tokens in practice: more mentions than tokens is junk.
        raise IntakeError(f"{where}.extra.mentions: {len(mentions)} mentions in a document "
                          f"of {len(begins)} tokens", f"{where}.extra.mentions")
    seen: set[tuple[int, int]] = set()
    clusters: dict[str, dict[str, object]] = {}
    for j, m in enumerate(mentions):
        at = f"{where}.extra.mentions[{j}]"
        if not isinstance(m, dict):
            raise IntakeError(f"{at}: expected an object", at)
        _only_keys(m, ENTITY_MENTION_KEYS, at)
        b, e = m.get("begin"), m.get("end")
        if not (_is_int(b) and _is_int(e) and 0 <= b < e):
            raise IntakeError(f"{at}: begin and end must be character offsets with begin < end",
                              at)
        if b not in begins or e not in ends:
            raise IntakeError(f"{at}: span {b}-{e} does not start and end on token "
                              "boundaries", at)
        if not any(sb <= b and e <= se for sb, se in sentences):
            raise IntakeError(f"{at}: span {b}-{e} crosses a sentence boundary", at)
        if (b, e) in seen:
            raise IntakeError(f"{at}: span {b}-{e} is marked twice", at)
        seen.add((b, e))
        typ = m.get("type")
        if typ not in ENTITY_TYPES:
            raise IntakeError(f"{at}.type: expected one of {', '.join(ENTITY_TYPES)}",
                              f"{at}.type")
        entity = m.get("entity")
        if not isinstance(entity, str) or not 0 < len(entity) <= MAX_ENTITY_LABEL_CHARS:
            raise IntakeError(f"{at}.entity: expected an entity label "
                              f"(1–{MAX_ENTITY_LABEL_CHARS} characters)", f"{at}.entity")
        if not isinstance(m.get("canonical"), bool):
            raise IntakeError(f"{at}.canonical: expected true or false", f"{at}.canonical")
        link = m.get("link", "")
        if not isinstance(link, str) or len(link) > MAX_LINK_CHARS or (
                link and (not link.startswith("Wikipedia:") or len(link) == len("Wikipedia:"))):
            raise IntakeError(f"{at}.link: expected \"Wikipedia:Title\" or an empty string",
                              f"{at}.link")
        c = clusters.setdefault(entity, {"type": typ, "link": link, "canonical": 0})
        if c["type"] != typ:
            raise IntakeError(f"{at}.type: entity {entity!r} mixes types {c['type']} and "
                              f"{typ}; give every mention of an entity the same type",
                              f"{at}.type")
        if c["link"] != link:
            raise IntakeError(f"{at}.link: entity {entity!r} has two different links",
                              f"{at}.link")
        c["canonical"] = int(c["canonical"]) + int(m["canonical"])
    for entity, c in clusters.items():
        if c["canonical"] != 1:
            raise IntakeError(f"{where}.extra.mentions: entity {entity!r} needs exactly one "
                              f"canonical mention (has {c['canonical']})",
                              f"{where}.extra.mentions")


def check_fact_answer(question: Question, answer: AnswerIn, where: str) -> None:
    """Validate `extra.facts` of a DocRED exhaustive question: every fact
    `{"h": head index, "t": tail index, "r": relation id}` has its head among the
    question's head entities, a tail among the document's other entities and a relation
    offered for the pair (`offered_relations`); no fact twice, at most the relation cap
    per pair. An empty list is an answer: no fact has one of these heads."""
    _check_done(answer, f"{where}.choices")
    _only_keys(answer.extra, FACTS_EXTRA_KEYS, f"{where}.extra")
    facts = answer.extra.get("facts")
    at_list = f"{where}.extra.facts"
    if not isinstance(facts, list):
        raise IntakeError(f"{at_list}: expected a list of facts {{\"h\", \"t\", \"r\"}}",
                          at_list)
    heads = list(question.head_entities or [])
    types = dict(DocumentEntity.objects.filter(document_id=question.document_id)
                 .values_list("index", "type"))
    n = len(types)
    schema_name = question.corpus.schema
    cap = relation_cap(schema_name)
    if len(facts) > len(heads) * max(0, n - 1) * cap:
        raise IntakeError(f"{at_list}: {len(facts)} facts, more than this task's "
                          f"{len(heads)} head entities can have", at_list)
    schema = get_schema(schema_name)
    seen: set[tuple[int, int, str]] = set()
    per_pair: dict[tuple[int, int], int] = {}
    for j, f in enumerate(facts):
        at = f"{at_list}[{j}]"
        if not isinstance(f, dict):
            raise IntakeError(f"{at}: expected an object {{\"h\", \"t\", \"r\"}}", at)
        _only_keys(f, FACT_KEYS, at)
        h, t, r = f.get("h"), f.get("t"), f.get("r")
        for name, value in (("h", h), ("t", t)):
            if not _is_int(value):
                raise IntakeError(f"{at}.{name}: expected an entity index (integer)",
                                  f"{at}.{name}")
            if not 0 <= value < n:
                raise IntakeError(f"{at}.{name}: entity {value} is out of range (the document "
                                  f"has {n} entities, 0 to {n - 1})", f"{at}.{name}")
        assert isinstance(h, int) and isinstance(t, int)
        if h not in heads:
            raise IntakeError(f"{at}.h: entity {h} is not a head entity of this task (its "
                              f"heads are {', '.join(map(str, heads))})", f"{at}.h")
        if h == t:
            raise IntakeError(f"{at}: h and t are both {h}; a fact relates two different "
                              "entities", at)
        if not isinstance(r, str):
            raise IntakeError(f"{at}.r: expected a relation id such as \"P17\"", f"{at}.r")
        if r not in offered_relations(schema_name, types[h], types[t]):
            guess = schema.closest_id(r[:40]) if r.strip() else None
            hint = f" (did you mean {guess}?)" if guess and guess != r else ""
            raise IntakeError(f"{at}.r: {r[:40]!r} is not a relation offered for this pair "
                              f"({types[h]} → {types[t]}) in the {schema.title} schema{hint}",
                              f"{at}.r")
        if (h, t, r) in seen:
            raise IntakeError(f"{at}: the fact ({h}, {t}, {r}) is listed twice", at)
        seen.add((h, t, r))
        per_pair[(h, t)] = per_pair.get((h, t), 0) + 1
        if per_pair[(h, t)] > cap:
            raise IntakeError(f"{at}: more than {cap} relations for the pair ({h}, {t}); "
                              f"list at most {cap} (the relations the document states)", at)


def check_exhaustive_answer(question: Question, answer: AnswerIn, where: str) -> None:
    """Validate `extra.relations` against the candidate pairs the page showed (TAC KBP),
    or `extra.facts` on a DocRED document (`check_fact_answer`)."""
    if question.head_entities is not None:
        check_fact_answer(question, answer, where)
        return
    _check_done(answer, f"{where}.choices")
    _only_keys(answer.extra, EXHAUSTIVE_EXTRA_KEYS, f"{where}.extra")
    relations = answer.extra.get("relations")
    if not isinstance(relations, list):
        raise IntakeError(f"{where}.extra.relations: expected a list of judged pairs",
                          f"{where}.extra.relations")
    candidates = {p.key: p for p in document_pairs(question.document)}
    seen: set[tuple[tuple[int, int], tuple[int, int]]] = set()
    for j, r in enumerate(relations):
        at = f"{where}.extra.relations[{j}]"
        if not isinstance(r, dict):
            raise IntakeError(f"{at}: expected an object", at)
        _only_keys(r, EXHAUSTIVE_RELATION_KEYS, at)
        key = (_span(r.get("subject"), f"{at}.subject"), _span(r.get("object"), f"{at}.object"))
        pair = candidates.get(key)
        if pair is None:
            raise IntakeError(f"{at}: {key[0][0]}-{key[0][1]} / {key[1][0]}-{key[1][1]} is not "
                              "a candidate pair of this document (subject first, canonical "
                              "order)", at)
        if key in seen:
            raise IntakeError(f"{at}: this pair is judged twice", at)
        seen.add(key)
        choices = r.get("choices")
        if (not isinstance(choices, list) or not choices
                or not all(isinstance(c, str) for c in choices)):
            raise IntakeError(f"{at}.choices: expected a non-empty list of relation names",
                              f"{at}.choices")
        allowed = {*predicates_for(pair.subject.type, pair.object.type), NO_RELATION}
        _check_relation_choices(choices, allowed, f"{at}.choices", relation_cap(TAC_KBP))
    missing = [k for k in candidates if k not in seen]
    if missing:
        (sb, se), (ob, oe) = missing[0]
        raise IntakeError(f"{where}.extra.relations: {len(missing)} candidate pair(s) have no "
                          f"judgement, e.g. {sb}-{se} / {ob}-{oe}", f"{where}.extra.relations")


def check_choices(question: Question, answer: AnswerIn, where: str) -> None:
    if question.kind == TaskKind.ENTITY:
        check_entity_answer(question, answer, where.removesuffix(".choices"))
        return
    if question.kind == TaskKind.EXHAUSTIVE:
        check_exhaustive_answer(question, answer, where.removesuffix(".choices"))
        return
    allowed = allowed_choices(question)
    _check_relation_choices(answer.choices, allowed, where, relation_cap(question.corpus.schema))
    _check_relation_extra(answer, where.removesuffix(".choices"))
