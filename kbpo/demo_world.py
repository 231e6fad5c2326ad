"""Demo-world generator: a synthetic corpus, its exhaustive truth, and KBP systems.

`generate()` builds a small fictional world (people, organisations, places, dates,
job titles and the facts between them), writes news-style documents whose
sentences express some of those facts, records every mention and every expressed
relation as gold, simulates K knowledge-base-population systems with controllable
precision and recall, writes their output in TAC KB format and computes each
system's exact scores under every sampling scheme of DESIGN §6.1.

Everything is deterministic for a seed: all randomness comes from
`random.Random(seed)` (the text) and `numpy.random.default_rng([seed, ...])` (the
systems), and no output depends on set or dict-of-set iteration order.

The file formats are documented in docs/demo-world.md. Pure Python + numpy: the
Django command `make_demo_world` is a thin wrapper around `main()`.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from statistics import NormalDist

import numpy as np

from estimation.core.schemes import scheme_weights
from kbpo import schema
from kbpo.schema import DATE, GPE, ORG, PER, TITLE

Progress = Callable[[str, int, int], None]

SCHEMES: tuple[str, ...] = ("instance", "predicate", "entity", "entity_relation")
PREDICATES: tuple[str, ...] = tuple(sorted(schema.CANONICAL_PREDICATES))
PRED_CODE: dict[str, int] = {p: i for i, p in enumerate(PREDICATES)}
DOC_PREFIX = "NYT_DEMO_"


# ---------------------------------------------------------------------------
# Sampling schemes (DESIGN §6.1). Kept isolated so the estimation core's
# identical function can replace it.
# ---------------------------------------------------------------------------


def scheme_probabilities(
    scheme: str,
    pair_keys: np.ndarray | Sequence,
    predicates: np.ndarray | Sequence,
    subject_ids: np.ndarray | Sequence,
) -> np.ndarray:
    """Sampling probability of every instance of one deduplicated instance set.

    The arrays are parallel, one entry per instance (pair key, canonical predicate,
    subject entity id). The schemes are the estimation core's (`scheme_weights`), so
    truth.json measures exactly what the estimators estimate; entity_relation picks a
    subject uniformly, then one of its predicates, then one of that cell's instances.
    """
    if len(pair_keys) == 0:
        return np.zeros(0)
    _, pred_codes = np.unique(np.asarray(predicates), return_inverse=True)
    _, subj_codes = np.unique(np.asarray(subject_ids), return_inverse=True)
    return scheme_weights(scheme, pred_codes.ravel(), subj_codes.ravel())


# ---------------------------------------------------------------------------
# Names. Stems are generated from syllables and used at most once, so no
# entity's name is contained in another's (apart from family surnames).
# ---------------------------------------------------------------------------

FEMALE_NAMES = (
    "Ada",
    "Alma",
    "Anna",
    "Beatrix",
    "Carla",
    "Clara",
    "Dina",
    "Edith",
    "Elena",
    "Freya",
    "Greta",
    "Hanna",
    "Ida",
    "Irene",
    "Jana",
    "Julia",
    "Karin",
    "Lena",
    "Lidia",
    "Maren",
    "Marta",
    "Nadia",
    "Nora",
    "Olga",
    "Paula",
    "Rosa",
    "Selma",
    "Sonja",
    "Tessa",
    "Vera",
    "Wanda",
    "Yara",
    "Zora",
    "Lucia",
    "Mira",
    "Agnes",
)
MALE_NAMES = (
    "Adam",
    "Anton",
    "Bruno",
    "Carlo",
    "Daniel",
    "Emil",
    "Felix",
    "Gregor",
    "Hugo",
    "Ivan",
    "Jonas",
    "Karl",
    "Leon",
    "Lukas",
    "Marco",
    "Milan",
    "Nikolai",
    "Oskar",
    "Pavel",
    "Peter",
    "Rafael",
    "Simon",
    "Stefan",
    "Tobias",
    "Viktor",
    "Walter",
    "Yusuf",
    "Omar",
    "Tomas",
    "Arne",
    "Ruben",
    "Elias",
    "Henrik",
    "Boris",
)
_ONSETS = (
    "b",
    "br",
    "c",
    "d",
    "dr",
    "f",
    "g",
    "gr",
    "h",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "st",
    "t",
    "tr",
    "v",
    "w",
    "z",
    "",
)
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ai", "ea", "ou", "y")
_CODAS = ("", "", "n", "r", "l", "s", "m", "nd", "rk", "lt", "st", "x", "v")

TITLES = (
    "chief executive",
    "chairman",
    "president",
    "managing director",
    "engineer",
    "lawyer",
    "professor",
    "senator",
    "finance minister",
    "mayor",
    "architect",
    "economist",
    "journalist",
    "editor",
    "surgeon",
    "physicist",
    "diplomat",
    "chief financial officer",
    "spokeswoman",
    "spokesman",
    "ambassador",
    "composer",
    "software developer",
    "accountant",
    "general manager",
    "governor",
)
SENIOR_TITLES = frozenset(
    {"chief executive", "chairman", "president", "managing director", "general manager"}
)


class _Namer:
    """Unique capitalised stems from random syllables."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def stem(self, syllables: int = 2) -> str:
        rng = self.rng
        while True:
            word = "".join(
                rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                for _ in range(syllables)
            )
            if 4 <= len(word) <= 10 and word not in self.used and word[0] not in "aeiouy":
                self.used.add(word)
                return word.capitalize()


# ---------------------------------------------------------------------------
# The world: an entity table (all five types) and a fact base.
# ---------------------------------------------------------------------------


@dataclass
class World:
    eid: list[str] = field(default_factory=list)
    etype: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    short: list[str | None] = field(default_factory=list)  # surname-only form
    female: list[bool] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)  # city/state/country, company/...
    link: list[str | None] = field(default_factory=list)
    value: list[date | None] = field(default_factory=list)  # DATE entities
    facts: list[tuple[int, str, int]] = field(default_factory=list)  # (subj, pred, obj)
    by_entity: dict[int, list[int]] = field(default_factory=dict)  # entity -> fact idx
    related: set[tuple[int, int]] = field(default_factory=set)  # membership only
    focus_ids: list[int] = field(default_factory=list)  # ordered by popularity
    by_type: dict[str, list[int]] = field(default_factory=dict)

    def add(
        self,
        etype: str,
        name: str,
        *,
        kind: str = "",
        short: str | None = None,
        female: bool = False,
        link: str | None = None,
        value: date | None = None,
        eid: str | None = None,
    ) -> int:
        idx = len(self.eid)
        self.eid.append(eid or f"{etype}{idx:06d}")
        self.etype.append(etype)
        self.name.append(name)
        self.short.append(short)
        self.female.append(female)
        self.kind.append(kind)
        self.link.append(link)
        self.value.append(value)
        self.by_type.setdefault(etype, []).append(idx)
        return idx

    def fact(self, subj: int, pred: str, obj: int, also: bool = False) -> None:
        """Add a fact; a pair gets a second fact only when `also` (founder-employee)."""
        if subj == obj or (
            self.is_related(subj, obj) and (not also or pred in self._pair_preds(subj, obj))
        ):
            return
        self.by_entity.setdefault(subj, []).append(len(self.facts))
        self.by_entity.setdefault(obj, []).append(len(self.facts))
        self.facts.append((subj, pred, obj))
        self.related.add((min(subj, obj), max(subj, obj)))

    def _pair_preds(self, a: int, b: int) -> list[str]:
        return [
            self.facts[f][1]
            for f in self.by_entity.get(a, ())
            if b in (self.facts[f][0], self.facts[f][2])
        ]

    def is_related(self, a: int, b: int) -> bool:
        return (min(a, b), max(a, b)) in self.related


def _rand_date(rng: random.Random, first_year: int, last_year: int) -> date:
    start = date(first_year, 1, 1).toordinal()
    return date.fromordinal(rng.randint(start, date(last_year, 12, 31).toordinal()))


def build_world(docs: int, rng: random.Random) -> World:
    """Entities and facts, sized so popular entities recur across documents."""
    w = World()
    namer = _Namer(rng)

    def linked(name: str, p: float) -> str | None:
        return "Wikipedia:" + name.replace(" ", "_") if rng.random() < p else None

    # Places: countries, their states, their cities.
    countries = []
    for _ in range(max(8, min(40, docs // 300))):
        name = namer.stem(2) + rng.choice(("ia", "land", "ora", "enia", "istan"))
        countries.append(w.add(GPE, name, kind="country", link=linked(name, 0.9)))
    states, cities = [], []
    country_of: dict[int, int] = {}
    for c in countries:
        for _ in range(rng.randint(1, 3)):
            name = namer.stem(2) + rng.choice(("shire", " Province", " Valley", "mark"))
            s = w.add(GPE, name, kind="state", link=linked(name, 0.5))
            states.append(s)
            country_of[s] = c
    for _ in range(max(25, min(800, docs // 15))):
        name = namer.stem(2) + rng.choice(
            ("ford", "burg", "haven", "port", "wick", "dale", "mouth", "field", "ton")
        )
        cities.append(w.add(GPE, name, kind="city", link=linked(name, 0.6)))
    places = cities + states + countries

    # Organisations of four kinds.
    n_org = max(20, docs // 4)
    companies, universities, alliances, agencies = [], [], [], []
    for i in range(n_org):
        r = i % 20
        if r < 12:
            name = (
                namer.stem(2)
                + " "
                + rng.choice(
                    (
                        "Holdings",
                        "Industries",
                        "Group",
                        "Dynamics",
                        "Logistics",
                        "Media",
                        "Systems",
                        "Bank",
                        "Foods",
                        "Energy",
                        "Partners",
                        "Motors",
                        "Pharma",
                    )
                )
            )
            companies.append(w.add(ORG, name, kind="company", link=linked(name, 0.4)))
        elif r < 15:
            name = namer.stem(2) + rng.choice(
                (" University", " Institute of Technology", " College", " School of Economics")
            )
            universities.append(w.add(ORG, name, kind="university", link=linked(name, 0.7)))
        elif r < 17:
            name = (
                namer.stem(2)
                + " "
                + rng.choice(("Alliance", "Trade Council", "Federation", "League", "Union"))
            )
            alliances.append(w.add(ORG, name, kind="alliance", link=linked(name, 0.6)))
        else:
            name = (
                namer.stem(2)
                + " "
                + rng.choice(
                    ("Development Agency", "Port Authority", "Energy Commission", "Rail Authority")
                )
            )
            agencies.append(w.add(ORG, name, kind="agency", link=linked(name, 0.5)))
    employers = companies + universities + agencies

    titles = [w.add(TITLE, t, eid="TITLE:" + t.replace(" ", "_")) for t in TITLES]

    def new_date(first: int, last: int) -> int:
        d = _rand_date(rng, first, last)
        return w.add(DATE, d.isoformat(), value=d, eid="DATE:" + d.isoformat())

    # People, created family by family so relatives share a surname.
    n_per = max(40, docs // 2)
    people: list[int] = []
    surname_users: dict[str, int] = {}
    while len(people) < n_per:
        surname = namer.stem(2)
        size = rng.choice((1, 1, 1, 2, 3, 4, 5))
        fam = []
        for _ in range(size):
            female = rng.random() < 0.5
            first = rng.choice(FEMALE_NAMES if female else MALE_NAMES)
            full = f"{first} {surname}"
            fam.append(w.add(PER, full, female=female, link=linked(full, 0.3)))
        surname_users[surname] = size
        people.extend(fam)
        if size >= 2:  # the first two are a couple, the rest their children
            w.fact(fam[0], "per:spouse", fam[1])
            for child in fam[2:]:
                w.fact(fam[0], "per:children", child)
                w.fact(fam[1], "per:children", child)
            for a in range(2, size):
                for b in range(a + 1, size):
                    w.fact(fam[a], "per:siblings", fam[b])
    for p in people:  # surname-only mentions only where unambiguous in the world
        first, surname = w.name[p].split(" ", 1)
        if surname_users[surname] == 1:
            w.short[p] = surname
    # Cousins and in-laws across families.
    for _ in range(len(people) // 6):
        a, b = rng.sample(people, 2)
        if not w.is_related(a, b) and w.name[a].split()[1] != w.name[b].split()[1]:
            w.fact(a, "per:other_family", b)

    for p in people:
        if rng.random() < 0.85:
            w.fact(p, "per:place_of_birth", rng.choice(cities if rng.random() < 0.8 else countries))
        for _ in range(rng.choice((0, 1, 1, 2))):
            w.fact(p, "per:place_of_residence", rng.choice(places))
        dead = rng.random() < 0.2
        born = rng.randint(1930, 1990)
        if rng.random() < 0.8:
            w.fact(p, "per:date_of_birth", new_date(born, born))
        if dead:
            w.fact(p, "per:date_of_death", new_date(min(born + 45, 2014), 2015))
            if rng.random() < 0.8:
                w.fact(p, "per:place_of_death", rng.choice(cities))
        for t in rng.sample(titles, rng.choice((1, 1, 2))):
            w.fact(p, "per:title", t)
        for _ in range(rng.choice((1, 1, 2))):
            w.fact(p, "per:employee_or_member_of", rng.choice(employers))
        if rng.random() < 0.12:
            w.fact(p, "per:employee_or_member_of", rng.choice(countries))
        if rng.random() < 0.6:
            w.fact(p, "per:schools_attended", rng.choice(universities))
        if rng.random() < 0.12:
            org = rng.choice(companies)
            w.fact(p, "per:organizations_founded", org)
            if rng.random() < 0.75:
                w.fact(p, "per:employee_or_member_of", org, also=True)
        if rng.random() < 0.15:
            w.fact(p, "per:holds_shares_in", rng.choice(companies))

    for o in companies + universities + agencies + alliances:
        w.fact(o, "org:place_of_headquarters", rng.choice(cities))
        if rng.random() < 0.8:
            w.fact(o, "org:date_founded", new_date(1850, 2012))
        if rng.random() < 0.15:
            w.fact(o, "org:date_dissolved", new_date(1990, 2016))
    for n, o in enumerate(companies):
        r = rng.random() if n >= 3 else 0.2  # small worlds still get every kind
        if r < 0.15:
            w.fact(rng.choice(companies), "org:subsidiaries", o)
        elif r < 0.27:
            w.fact(o, "org:founded_by", rng.choice(companies))
        if rng.random() < 0.12:
            w.fact(rng.choice(companies), "org:holds_shares_in", o)
        if rng.random() < 0.06:
            w.fact(o, "org:shareholders", rng.choice(countries))
        if alliances and rng.random() < 0.25:
            w.fact(o, "org:member_of", rng.choice(alliances))
    for o in agencies:
        country = rng.choice(countries)
        w.fact(o, "org:founded_by" if rng.random() < 0.5 else "org:parents", country)
    for a in alliances:
        for c in rng.sample(countries, min(len(countries), rng.randint(1, 4))):
            w.fact(a, "org:members", c)

    # Popularity: a Zipf law over a random order of people and organisations.
    focus = people + companies + universities + agencies + alliances
    rng.shuffle(focus)
    w.focus_ids = focus
    return w


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


def _compose_document(
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


# ---------------------------------------------------------------------------
# Gold: mentions and canonical relations, also collected into flat arrays.
# ---------------------------------------------------------------------------

TYPE_CODE = {t: i for i, t in enumerate(schema.ENTITY_TYPES)}


@dataclass
class _Flat:
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


def _gold_for_document(
    w: World, record: dict, spans: list[tuple[int, int]], sentences: list[_Sentence], flat: _Flat
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
class _Arrays:
    """numpy views of _Flat plus derived lookups."""

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


def _arrays(w: World, flat: _Flat) -> _Arrays:
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
    return _Arrays(
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
class _Prediction:
    """One system's final, deduplicated predictions (one predicate per pair)."""

    pair: np.ndarray
    pred: np.ndarray
    subj_cluster: np.ndarray
    obj_cluster: np.ndarray  # -1 for DATE/TITLE fillers
    mention_cluster: np.ndarray  # corpus mention -> cluster id


def _clusters(a: _Arrays, prof: SystemProfile, rng: np.random.Generator) -> np.ndarray:
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


def _simulate(
    a: _Arrays,
    prof: SystemProfile,
    index: int,
    seed: int,
    shared: dict[str, np.ndarray],
    noise: np.ndarray,
    owner_index: int,
) -> _Prediction:
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
    return _Prediction(pair[keep], pred[keep], sc[keep], oc[keep], mcl)


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


class _Emitter:
    """Writes one system's KB file from its predictions."""

    def __init__(self, w: World, flat: _Flat, a: _Arrays) -> None:
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
        self, path: Path, prof: SystemProfile, pr: _Prediction, index: int, seed: int
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


# ---------------------------------------------------------------------------
# Truth.
# ---------------------------------------------------------------------------


def _scores(
    keys: np.ndarray,
    pairs: np.ndarray,
    preds: np.ndarray,
    subjects: np.ndarray,
    gold_keys: np.ndarray,
    g_pairs: np.ndarray,
    g_preds: np.ndarray,
    g_subjects: np.ndarray,
    p_y: dict[str, np.ndarray],
) -> dict:
    correct = np.isin(keys, gold_keys)
    hit = np.isin(gold_keys, keys)
    out = {}
    for s in SCHEMES:
        p = scheme_probabilities(s, pairs, preds, subjects)
        precision = float(np.sum(p * correct))
        recall = float(np.sum(p_y[s] * hit))
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[s] = {
            "precision": round(precision, 6),
            "recall": round(recall, 6),
            "f1": round(f1, 6),
            "instances": len(keys),
            "true_instances": int(np.count_nonzero(correct)),
        }
    return out


# ---------------------------------------------------------------------------
# Entry points.
# ---------------------------------------------------------------------------


def generate(
    out_dir: Path, docs: int, systems: int, seed: int, progress: Progress | None = None
) -> dict:
    """Write corpus.jsonl, gold.jsonl, systems/*.kb, systems/index.json, truth.json."""
    if docs < 1 or systems < 1:
        raise ValueError("need at least one document and one system")
    started = time.perf_counter()
    say = progress or (lambda stage, done, total: None)
    out_dir = Path(out_dir)
    (out_dir / "systems").mkdir(parents=True, exist_ok=True)
    for stale in sorted((out_dir / "systems").glob("*.kb")):  # from an earlier run
        stale.unlink()
    rng = random.Random(seed)
    world = build_world(docs, rng)
    flat = _Flat()
    step = max(1, docs // 20)
    with (
        open(out_dir / "corpus.jsonl", "w", encoding="utf-8") as fc,
        open(out_dir / "gold.jsonl", "w", encoding="utf-8") as fg,
    ):
        for i in range(docs):
            record, spans, sentences = _compose_document(world, rng, f"{DOC_PREFIX}{i + 1:06d}")
            gold = _gold_for_document(world, record, spans, sentences, flat)
            fc.write(json.dumps(record, ensure_ascii=False) + "\n")
            fg.write(json.dumps(gold, ensure_ascii=False, separators=(",", ":")) + "\n")
            if (i + 1) % step == 0 or i + 1 == docs:
                say("documents", i + 1, docs)

    a = _arrays(world, flat)
    nrng = np.random.default_rng([seed, 1])
    n_y = len(a.g_pair)
    gold_pairs = np.unique(a.g_pair)
    negatives = np.setdiff1d(np.arange(len(a.p_subj)), gold_pairs)
    owner = np.full(n_y, -1, dtype=np.int64)
    private = nrng.random(n_y) < 0.06
    owner[private] = nrng.integers(0, systems, int(private.sum()))
    shared = {
        "easy": nrng.standard_normal(n_y),
        # Distractor pairs lure more; pairs with a trap predicate lure most.
        "lure": nrng.standard_normal(len(negatives))
        - 1.0 * a.p_distractor[negatives]
        - 0.5 * (a.p_trap[negatives] >= 0),
        "owner": owner,
        "negatives": negatives,
    }
    profiles = make_profiles(systems, seed)
    by_name = {p.name: i for i, p in enumerate(profiles)}
    # Gold subject entity for recall under the entity schemes.
    g_keys_unsorted = a.g_pair * len(PREDICATES) + a.g_pred
    order = np.argsort(g_keys_unsorted)
    g_pair, g_pred = a.g_pair[order], a.g_pred[order]
    g_subj = a.m_entity[a.p_subj[g_pair]]
    p_y = {s: scheme_probabilities(s, g_pair, g_pred, g_subj) for s in SCHEMES}
    emitter = _Emitter(world, flat, a)
    noises: dict[int, np.ndarray] = {}
    truth_systems: dict[str, dict] = {}
    for i, prof in enumerate(profiles):
        owner_index = i
        if prof.duplicate_of is not None:
            owner_index = by_name[prof.duplicate_of]
            extra = np.random.default_rng([seed, 3000 + i]).standard_normal(n_y)
            noise = math.sqrt(0.98) * noises[owner_index] + math.sqrt(0.02) * extra
        else:
            noise = np.random.default_rng([seed, 2000 + i]).standard_normal(n_y)
        noises[i] = noise
        pr = _simulate(a, prof, i, seed, shared, noise, owner_index)
        emitter.write(out_dir / "systems" / f"{prof.name}.kb", prof, pr, i, seed)
        keys = pr.pair * len(PREDICATES) + pr.pred
        truth_systems[prof.name] = _scores(
            keys, pr.pair, pr.pred, pr.subj_cluster, a.g_keys, g_pair, g_pred, g_subj, p_y
        )
        say("systems", i + 1, systems)

    index = {"systems": [vars(p) for p in profiles]}
    (out_dir / "systems" / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    truth = {"schemes": list(SCHEMES), "true_instances": int(n_y), "systems": truth_systems}
    (out_dir / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return {
        "out": str(out_dir),
        "docs": docs,
        "systems": systems,
        "seed": seed,
        "entities": sum(1 for t in world.etype if t in (PER, ORG, GPE)),
        "facts": len(world.facts),
        "sentences": len(flat.sent_span),
        "mentions": len(flat.m_doc),
        "true_instances": int(n_y),
        "candidate_pairs": len(flat.p_subj),
        "seconds": round(time.perf_counter() - started, 2),
    }


def stderr_progress(stage: str, done: int, total: int) -> None:
    """Progress callback printing one self-overwriting line per stage to stderr."""
    end = "\n" if done == total else ""
    print(f"\r  {stage}: {done}/{total}", end=end, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kbpo.demo_world",
        description="Generate the KBPO demo world: corpus, gold, systems and truth.",
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--docs", type=int, default=1000, help="number of documents")
    parser.add_argument("--systems", type=int, default=10, help="number of systems")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)

    try:
        summary = generate(args.out, args.docs, args.systems, args.seed, stderr_progress)
    except ValueError as exc:
        parser.error(str(exc))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
