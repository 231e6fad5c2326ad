"""Sentence templates: how a fact, a distractor or a filler is written."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kbpo.core.schema import DATE, GPE, ORG, PER, TITLE

# ---------------------------------------------------------------------------
# Templates. Slots: [0] name, [0's] possessive, [0@] date with preposition,
# [a0] title with article, [his0]/[he0]/[son0]/[wife0]/[brother0]/[father0]/
# [alumnus0] gendered words for slot 0. Relations are (slot, predicate, slot)
# in world direction; schema.canonicalize orients them.
# ---------------------------------------------------------------------------

_SLOT_RE = re.compile(r"\[(a|his|he|son|wife|brother|father|alumnus)?(\d)('s|@)?\]")
_GENDERED = {
    "his": ("his", "her"),
    "he": ("he", "she"),
    "son": ("son", "daughter"),
    "wife": ("husband", "wife"),
    "brother": ("brother", "sister"),
    "father": ("father", "mother"),
    "alumnus": ("alumnus", "alumna"),
}

Part = str | tuple[str, int, str]  # literal, or (prefix, slot, suffix)


def _parse(template: str) -> list[Part]:
    parts: list[Part] = []
    pos = 0
    for m in _SLOT_RE.finditer(template):
        if m.start() > pos:
            parts.append(template[pos : m.start()])
        parts.append((m.group(1) or "", int(m.group(2)), m.group(3) or ""))
        pos = m.end()
    if pos < len(template):
        parts.append(template[pos:])
    return parts


Kind = tuple[str, str, str]  # (world predicate, subject type, object type)

FACT_TEMPLATES: dict[Kind, list[str]] = {
    ("per:place_of_birth", PER, GPE): [
        "[0] was born in [1] and grew up on a small farm.",
        "Born in [1], [0] left home at the age of eighteen.",
        "[1] is the birthplace of [0], who still visits every summer.",
        "[0], a native of [1], said the decision was long overdue.",
        "[0] often speaks about [1], where [he0] was born.",
    ],
    ("per:place_of_residence", PER, GPE): [
        "[0] lives in [1] with [his0] family.",
        "[0], who has lived in [1] for many years, declined to comment.",
        "A longtime resident of [1], [0] is well known in the neighbourhood.",
        "[0] moved to [1] and has lived there ever since.",
        "Residents of [1] include [0], who settled there after retiring.",
    ],
    ("per:place_of_death", PER, GPE): [
        "[0] died in [1] after a long illness.",
        "[0] passed away at a hospital in [1].",
        "It was in [1] that [0] died, surrounded by friends.",
    ],
    ("per:date_of_birth", PER, DATE): [
        "[0] was born [1@].",
        "Born [1@], [0] was the youngest of four children.",
        "[0], who was born [1@], studied music before turning to business.",
    ],
    ("per:date_of_death", PER, DATE): [
        "[0] died [1@], according to [his0] family.",
        "[0], who died [1@], was remembered as a generous mentor.",
        "The death of [0] [1@] shocked former colleagues.",
    ],
    ("per:organizations_founded", PER, ORG): [
        "[0] founded [1] with a small loan from friends.",
        "[1] was founded by [0] in a rented garage.",
        "[0], the founder of [1], spoke at the opening ceremony.",
        "[1], which [0] started after leaving university, now employs hundreds.",
    ],
    ("per:holds_shares_in", PER, ORG): [
        "[0] owns a large stake in [1].",
        "[1] counts [0] among its biggest shareholders.",
        "[0] bought shares in [1] last year.",
        "[0] holds a minority stake in [1], filings show.",
    ],
    ("per:schools_attended", PER, ORG): [
        "[0] studied economics at [1].",
        "[0] graduated from [1] with a degree in law.",
        "[1] [alumnus0] [0] returned to give a lecture on Friday.",
        "A former student of [1], [0] still mentors young researchers.",
    ],
    ("per:employee_or_member_of", PER, ORG): [
        "[0] works for [1].",
        "[0] joined [1] several years ago.",
        "[1] hired [0] to lead its expansion.",
        "[0], who works at [1], was not available for comment.",
        "According to colleagues at [1], [0] is a tireless worker.",
    ],
    ("per:employee_or_member_of", PER, GPE): [
        "[0] is a senior official in the government of [1].",
        "[0] has served in the civil service of [1] for a decade.",
        "The government of [1] appointed [0] to lead the inquiry.",
    ],
    ("per:children", PER, PER): [
        "[0's] [son1] [1] attended the ceremony.",
        "[1], the [son1] of [0], spoke first.",
        "[0] and [his0] [son1] [1] run the business together.",
        "[1] inherited the house from [his1] [father0] [0].",
    ],
    ("per:spouse", PER, PER): [
        "[0] married [1] in a small ceremony.",
        "[0] and [his0] [wife1] [1] live quietly these days.",
        "[1], the [wife1] of [0], declined to be interviewed.",
        "[0's] [wife1] [1] was seen at the gala.",
    ],
    ("per:siblings", PER, PER): [
        "[0] and [his0] [brother1] [1] grew up together.",
        "[1], the [brother1] of [0], did not attend the hearing.",
        "[0's] [brother1] [1] was also present.",
    ],
    ("per:other_family", PER, PER): [
        "[0's] cousin [1] also works in the industry.",
        "[1], a cousin of [0], testified on Tuesday.",
        "[0] is related to [1] by marriage.",
    ],
    ("per:title", PER, TITLE): [
        "[0] works as [a1].",
        "[0] became [a1] last year.",
        "Former [1] [0] addressed reporters outside the court.",
        "[0], [a1] by training, has written two books.",
    ],
    ("org:place_of_headquarters", ORG, GPE): [
        "[0] is based in [1].",
        "[0], headquartered in [1], reported higher profits.",
        "The headquarters of [0] are in [1].",
        "[1] is home to the headquarters of [0].",
    ],
    ("org:date_founded", ORG, DATE): [
        "[0] was founded [1@].",
        "Founded [1@], [0] has grown steadily.",
        "[0], which was established [1@], is expanding abroad.",
    ],
    ("org:date_dissolved", ORG, DATE): [
        "[0] was dissolved [1@].",
        "[0] closed its doors for good [1@].",
        "[0], which was wound up [1@], left many debts.",
    ],
    ("org:founded_by", ORG, ORG): [
        "[1] set up [0] as a separate venture.",
        "[1] launched [0] as a joint venture with local investors.",
        "[0] was created by [1] to enter new markets.",
        "[0], founded by [1], has become a rival of its creator.",
    ],
    ("org:founded_by", ORG, GPE): [
        "[0] was established by the government of [1].",
        "[1] created [0] to manage its public assets.",
    ],
    ("org:subsidiaries", ORG, ORG): [
        "[1] is a subsidiary of [0].",
        "[0's] subsidiary [1] reported a loss.",
        "[0] acquired [1] and made it a subsidiary.",
        "[1], a unit of [0], is cutting jobs.",
    ],
    ("org:parents", ORG, GPE): [
        "[0] is owned by the state of [1].",
        "[1] controls [0] through a public holding.",
    ],
    ("org:holds_shares_in", ORG, ORG): [
        "[0] holds a stake in [1].",
        "[1] counts [0] among its shareholders.",
        "[0] raised its stake in [1] this spring.",
    ],
    ("org:shareholders", ORG, GPE): [
        "The government of [1] owns shares in [0].",
        "[0] is partly owned by [1] through a sovereign fund.",
    ],
    ("org:member_of", ORG, ORG): [
        "[0] is a member of [1].",
        "[0] joined [1] after years of lobbying.",
        "[1], whose members include [0], met on Monday.",
    ],
    ("org:members", ORG, GPE): [
        "[1] is a member of [0].",
        "[1] joined [0] after a referendum.",
        "[0] counts [1] among its members.",
    ],
}


@dataclass(frozen=True)
class Combo:
    """A sentence expressing a fact plus a second fact of the same subject."""

    first: Kind
    second: Kind
    same_object: bool  # the second fact links the same two entities
    templates: tuple[str, ...]


COMBOS: tuple[Combo, ...] = (
    Combo(
        ("per:employee_or_member_of", PER, ORG),
        ("per:title", PER, TITLE),
        False,
        (
            "[0], [a2] at [1], said the company would appeal.",
            "As [a2] at [1], [0] oversaw the merger.",
        ),
    ),
    Combo(
        ("per:place_of_birth", PER, GPE),
        ("per:date_of_birth", PER, DATE),
        False,
        (
            "[0] was born in [1] [2@].",
            "Born in [1] [2@], [0] trained as a pilot.",
        ),
    ),
    Combo(
        ("per:place_of_death", PER, GPE),
        ("per:date_of_death", PER, DATE),
        False,
        ("[0] died in [1] [2@], [his0] family said.",),
    ),
    Combo(
        ("org:place_of_headquarters", ORG, GPE),
        ("org:date_founded", ORG, DATE),
        False,
        ("[0], based in [1], was founded [2@].",),
    ),
    Combo(
        ("per:organizations_founded", PER, ORG),
        ("per:employee_or_member_of", PER, ORG),
        True,
        (
            "[0] founded [1] and still works there every day.",
            "[1], the company [0] founded, still pays [his0] salary.",
        ),
    ),
)
COMBOS_BY_FIRST: dict[Kind, Combo] = {c.first: c for c in COMBOS}

# Sentences with two or three entities and no relation among them. Each has
# "traps": the relation a naive system is tempted to read into a pair.
DISTRACTORS: list[tuple[tuple[str, ...], str, tuple[tuple[int, str, int], ...]]] = [
    (
        (PER, GPE),
        "[0] visited [1] last week to meet investors.",
        ((0, "per:place_of_residence", 1),),
    ),
    ((PER, GPE), "[0] flew to [1] for a round of talks.", ((0, "per:place_of_residence", 1),)),
    ((PER, GPE), "[0] criticised the tax policies of [1].", ((0, "per:employee_or_member_of", 1),)),
    (
        (PER, GPE),
        "[0] has never lived in [1], despite rumours.",
        ((0, "per:place_of_residence", 1),),
    ),
    (
        (PER, ORG),
        "[0] criticised [1] in a radio interview.",
        ((0, "per:employee_or_member_of", 1),),
    ),
    ((PER, ORG), "[0] met executives from [1] on Monday.", ((0, "per:employee_or_member_of", 1),)),
    (
        (PER, ORG),
        "[0] has never owned shares in [1], a spokesman said.",
        ((0, "per:holds_shares_in", 1),),
    ),
    ((PER, ORG), "[0] turned down a job offer from [1].", ((0, "per:employee_or_member_of", 1),)),
    ((PER, PER), "[0] met [1] at a charity dinner.", ((0, "per:spouse", 1),)),
    ((PER, PER), "[0] and [1] disagreed sharply during the hearing.", ((0, "per:siblings", 1),)),
    ((PER, PER), "[0] praised [1] for a decade of hard work.", ((0, "per:other_family", 1),)),
    ((PER, DATE), "[0] spoke to reporters [1@].", ((0, "per:date_of_birth", 1),)),
    ((PER, DATE), "[0] announced the plan [1@].", ((0, "per:date_of_death", 1),)),
    ((PER, TITLE), "[0] said a new [1] would be appointed soon.", ((0, "per:title", 1),)),
    ((ORG, GPE), "[0] opened a sales office in [1].", ((0, "org:place_of_headquarters", 1),)),
    ((ORG, GPE), "[0] exports most of its goods to [1].", ((0, "org:place_of_headquarters", 1),)),
    ((ORG, ORG), "[0] signed a supply deal with [1].", ((0, "org:subsidiaries", 1),)),
    ((ORG, ORG), "[0] competes with [1] for the same customers.", ((0, "org:member_of", 1),)),
    ((ORG, DATE), "[0] reported its annual results [1@].", ((0, "org:date_founded", 1),)),
    (
        (PER, PER, GPE),
        "[0] met [1] in [2] to discuss the deal.",
        ((0, "per:spouse", 1), (0, "per:place_of_residence", 2), (1, "per:place_of_residence", 2)),
    ),
    (
        (PER, ORG, GPE),
        "[0] toured a factory of [1] near [2].",
        ((0, "per:employee_or_member_of", 1), (1, "org:place_of_headquarters", 2)),
    ),
    (
        (ORG, ORG, GPE),
        "[0] and [1] held joint talks in [2].",
        ((0, "org:member_of", 1), (0, "org:place_of_headquarters", 2)),
    ),
]

FILLERS_NONE = (
    "Analysts said the outlook remained uncertain.",
    "The talks are expected to continue next month.",
    "Several questions remain unanswered.",
    "Officials did not respond to requests for comment.",
    "The figures were published on Thursday.",
    "Critics called the plan too ambitious.",
    "Supporters say the changes were necessary.",
    "The dispute has dragged on for months.",
)
FILLERS_ONE: dict[str, tuple[str, ...]] = {
    PER: (
        "[0] declined to comment on the report.",
        "[0] did not return calls on Friday.",
        "Friends describe [0] as private and careful.",
        "[0] has denied any wrongdoing.",
    ),
    ORG: (
        "Shares of [0] rose slightly on the news.",
        "[0] declined to comment.",
        "[0] has faced criticism from unions.",
        "A spokesman for [0] said talks continue.",
    ),
    GPE: (
        "[0] has long been popular with tourists.",
        "Heavy rain fell across [0] on Sunday.",
        "Unemployment in [0] fell last quarter.",
    ),
}
ATTRIBUTION = (", according to [9].", ", [9] said in a statement.")
HEADLINES = (
    "in the spotlight",
    "faces new questions",
    "at a crossroads",
    "looks ahead",
    "under scrutiny",
    "makes headlines",
    "after a turbulent year",
)

_PARSED: dict[str, list[Part]] = {}


def _parsed(template: str) -> list[Part]:
    parts = _PARSED.get(template)
    if parts is None:
        parts = _PARSED[template] = _parse(template)
    return parts


