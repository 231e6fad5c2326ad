"""The fictional world: an entity table of all five types and the facts between them."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date

from kbpo.core.schema import DATE, GPE, ORG, PER, TITLE

from .names import FEMALE_NAMES, MALE_NAMES, TITLES, Namer

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
    namer = Namer(rng)

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


