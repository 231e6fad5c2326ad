"""The reduced KBP schema (docs/reference/schema.md): entity types, predicates, inverses, folding.

A relation is stored once per unordered mention pair, in its *canonical direction*:
the subject is the argument whose type ranks first (PER, then ORG, then GPE; DATE
and TITLE are only ever objects); for two arguments of the same type the argument
with the earlier span is the subject. The predicate is re-expressed in that
direction, so `per:children(A, B)` and `per:parents(B, A)` become one fact.

This module imports nothing from Django: the parser, the demo-world generator and
the estimation glue all share it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

PER, ORG, GPE, DATE, TITLE = "PER", "ORG", "GPE", "DATE", "TITLE"
ENTITY_TYPES: tuple[str, ...] = (PER, ORG, GPE, DATE, TITLE)
# Types that can appear as a relation subject; DATE and TITLE are string fillers.
SUBJECT_TYPES: tuple[str, ...] = (PER, ORG, GPE)
TYPE_RANK: dict[str, int] = {t: i for i, t in enumerate(ENTITY_TYPES)}
NO_RELATION = "no_relation"

# The schema table (docs/reference/schema.md): predicate -> (subject type, allowed object types).
# Each row is a *schema* predicate as systems emit it.
SCHEMA_TABLE: dict[str, tuple[str, tuple[str, ...]]] = {
    "per:place_of_birth": (PER, (GPE,)),
    "per:place_of_residence": (PER, (GPE,)),
    "per:place_of_death": (PER, (GPE,)),
    "per:date_of_birth": (PER, (DATE,)),
    "per:date_of_death": (PER, (DATE,)),
    "per:organizations_founded": (PER, (ORG,)),
    "per:holds_shares_in": (PER, (ORG,)),
    "per:schools_attended": (PER, (ORG,)),
    "per:employee_or_member_of": (PER, (ORG, GPE)),
    "per:parents": (PER, (PER,)),
    "per:children": (PER, (PER,)),
    "per:spouse": (PER, (PER,)),
    "per:siblings": (PER, (PER,)),
    "per:other_family": (PER, (PER,)),
    "per:title": (PER, (TITLE,)),
    "org:place_of_headquarters": (ORG, (GPE,)),
    "org:date_founded": (ORG, (DATE,)),
    "org:date_dissolved": (ORG, (DATE,)),
    "org:founded_by": (ORG, (PER, ORG, GPE)),
    "org:shareholders": (ORG, (PER, ORG, GPE)),
    "org:member_of": (ORG, (ORG,)),
    "org:subsidiaries": (ORG, (ORG,)),
    "org:holds_shares_in": (ORG, (ORG,)),
    "org:members": (ORG, (ORG, GPE)),
    "org:parents": (ORG, (ORG, GPE)),
    "org:employees_or_members": (ORG, (PER,)),
    "org:students": (ORG, (PER,)),
}

# Slot-name inverses (without the type prefix). The prefix of the inverse is the
# type of the original object: org:founded_by(ORG, PER) -> per:organizations_founded.
_SLOT_INVERSE_PAIRS: tuple[tuple[str, str], ...] = (
    ("founded_by", "organizations_founded"),
    ("shareholders", "holds_shares_in"),
    ("members", "member_of"),
    ("employee_or_member_of", "employees_or_members"),
    ("schools_attended", "students"),
    ("place_of_birth", "births_in_place"),
    ("place_of_residence", "residents_in_place"),
    ("place_of_death", "deaths_in_place"),
    ("place_of_headquarters", "headquarters_in_place"),
)
SYMMETRIC_SLOTS: frozenset[str] = frozenset({"spouse", "siblings", "other_family"})
_SLOT_INVERSE: dict[str, str] = {}
for _a, _b in _SLOT_INVERSE_PAIRS:
    _SLOT_INVERSE[_a] = _b
    _SLOT_INVERSE[_b] = _a
# "parents" means two different things: family (per) and corporate (org).
_FAMILY_INVERSE = {"parents": "children", "children": "parents"}
_CORPORATE_INVERSE = {"parents": "subsidiaries", "subsidiaries": "parents"}

# Finer-grained TAC predicates folded into the reduced schema.
FOLDED: dict[str, str] = {}
for _kind in ("birth", "death"):
    for _loc in ("city", "stateorprovince", "country"):
        FOLDED[f"per:{_loc}_of_{_kind}"] = f"per:place_of_{_kind}"
        FOLDED[f"gpe:{_kind}s_in_{_loc}"] = f"gpe:{_kind}s_in_place"
for _loc, _plural in (("city", "cities"), ("stateorprovince", "statesorprovinces"),
                      ("country", "countries")):
    FOLDED[f"per:{_plural}_of_residence"] = "per:place_of_residence"
    FOLDED[f"org:{_loc}_of_headquarters"] = "org:place_of_headquarters"
    FOLDED[f"gpe:residents_of_{_loc}"] = "gpe:residents_in_place"
    FOLDED[f"gpe:headquarters_in_{_loc}"] = "gpe:headquarters_in_place"
FOLDED["per:top_member_employee_of"] = "per:employee_or_member_of"
FOLDED["org:top_members_employees"] = "org:employees_or_members"
FOLDED["gpe:top_members_employees"] = "gpe:employees_or_members"

# Known TAC slots the reduced schema does not evaluate: skipped with a warning.
UNSUPPORTED: frozenset[str] = frozenset({
    "per:alternate_names", "org:alternate_names", "per:age", "per:origin",
    "per:religion", "per:cause_of_death", "per:charges", "org:website",
    "org:political_religious_affiliation", "org:number_of_employees_members",
    "per:date_of_birth_approx",
})

# TAC 2017 Cold Start sentiment assertions between entities (from the BeSt track):
# not relations of the schema, so never evaluated, sampled or shown to the crowd;
# ingestion skips them with a warning whatever their arguments.
SENTIMENT: frozenset[str] = frozenset(
    f"{holder}:{feeling}" for holder in ("per", "org", "gpe")
    for feeling in ("likes", "dislikes", "is_liked_by", "is_disliked_by"))

# One-line explanations and examples for the annotation interface.
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "per:place_of_birth": ("The person was born in this place.",
                           "Ada Byron was born in London."),
    "per:place_of_residence": ("The person lives or has lived in this place.",
                               "Byron, who lives in Paris, ..."),
    "per:place_of_death": ("The person died in this place.", "She died in Rome."),
    "per:date_of_birth": ("The person was born on this date.", "born on 3 May 1970"),
    "per:date_of_death": ("The person died on this date.", "died on 2 June 2001"),
    "per:organizations_founded": ("The person founded this organisation.",
                                  "Byron founded Acme in 1999."),
    "per:holds_shares_in": ("The person owns shares of this organisation.",
                            "Byron owns a stake in Acme."),
    "per:schools_attended": ("The person studied at this school.",
                             "Byron studied at Hillcrest University."),
    "per:employee_or_member_of": ("The person works for or is a member of it.",
                                  "Byron, an engineer at Acme, ..."),
    "per:parents": ("The second person is a parent of the first.",
                    "Byron, daughter of Noel Byron, ..."),
    "per:children": ("The second person is a child of the first.",
                     "Noel Byron's daughter Ada ..."),
    "per:spouse": ("The two people are or were married.", "Byron married Tom King."),
    "per:siblings": ("The two people are brothers or sisters.",
                     "Ada and her brother Tom ..."),
    "per:other_family": ("The two people are related in another way (cousin, aunt...).",
                         "Ada's cousin Tom ..."),
    "per:title": ("The person holds this job title or position.",
                  "chief engineer Ada Byron"),
    "org:place_of_headquarters": ("The organisation is based in this place.",
                                  "Acme, based in Lisbon, ..."),
    "org:date_founded": ("The organisation was founded on this date.",
                         "Acme was founded in 1999."),
    "org:date_dissolved": ("The organisation was dissolved on this date.",
                           "Acme closed in 2010."),
    "org:founded_by": ("The second argument founded the organisation.",
                       "Acme, founded by Ada Byron, ..."),
    "org:organizations_founded": ("The organisation founded the second organisation.",
                                  "Acme set up Northwind in 2004."),
    "org:shareholders": ("The second argument owns shares of the organisation.",
                         "Northwind owns a stake in Acme."),
    "org:member_of": ("The organisation is a member of the second one.",
                      "Acme joined the Trade Council."),
    "org:members": ("The second argument is a member of the organisation.",
                    "The Council, whose members include Acme, ..."),
    "org:subsidiaries": ("The second organisation is owned by the first.",
                         "Acme's subsidiary Northwind ..."),
    "org:holds_shares_in": ("The organisation owns shares of the second one.",
                            "Acme holds a stake in Northwind."),
    "org:parents": ("The second argument owns or controls the organisation.",
                    "Northwind, a unit of Acme, ..."),
}


def slot(predicate: str) -> str:
    """The slot name without its type prefix (`per:spouse` -> `spouse`)."""
    return predicate.split(":", 1)[1]


def fold(predicate: str) -> str:
    """Map finer-grained TAC predicates onto the reduced schema (idempotent)."""
    return FOLDED.get(predicate, predicate)


def inverse(predicate: str, subject_type: str, object_type: str) -> str | None:
    """The predicate that states the same fact with the arguments swapped.

    Returns None when the predicate has no inverse (date and title slots).
    """
    predicate = fold(predicate)
    name = slot(predicate)
    prefix = object_type.lower()
    if name in SYMMETRIC_SLOTS:
        return predicate
    if subject_type == PER and object_type == PER and name in _FAMILY_INVERSE:
        return f"per:{_FAMILY_INVERSE[name]}"
    if name in _CORPORATE_INVERSE and subject_type in (ORG, GPE) and object_type in (ORG, GPE):
        return f"{prefix}:{_CORPORATE_INVERSE[name]}"
    if name in _SLOT_INVERSE:
        return f"{prefix}:{_SLOT_INVERSE[name]}"
    return None


def _build_canonical() -> dict[tuple[str, str], frozenset[str]]:
    """All predicates allowed for each (subject type, object type) in canonical order."""
    allowed: dict[tuple[str, str], set[str]] = {}
    for pred, (stype, otypes) in SCHEMA_TABLE.items():
        for otype in otypes:
            if TYPE_RANK[stype] <= TYPE_RANK[otype]:
                allowed.setdefault((stype, otype), set()).add(pred)
            else:
                inv = inverse(pred, stype, otype)
                assert inv is not None, pred
                allowed.setdefault((otype, stype), set()).add(inv)
            if stype == otype:  # same-type pairs need both directions
                inv = inverse(pred, stype, otype)
                assert inv is not None, pred
                allowed[(stype, otype)].add(inv)
    return {k: frozenset(v) for k, v in allowed.items()}


# (subject type, object type) -> predicates valid in canonical direction.
CANONICAL: dict[tuple[str, str], frozenset[str]] = _build_canonical()
CANONICAL_PREDICATES: frozenset[str] = frozenset().union(*CANONICAL.values())

# Every predicate name a submission may use (schema, inverses, folded forms).
_ACCEPTED: dict[str, set[tuple[str, str]]] = {}
for (_s, _o), _preds in CANONICAL.items():
    for _p in _preds:
        _ACCEPTED.setdefault(_p, set()).add((_s, _o))
        _inv = inverse(_p, _s, _o)
        if _inv is not None:
            _ACCEPTED.setdefault(_inv, set()).add((_o, _s))
ACCEPTED_SIGNATURES: dict[str, frozenset[tuple[str, str]]] = {
    k: frozenset(v) for k, v in _ACCEPTED.items()
}


def is_known(predicate: str) -> bool:
    """True if the predicate (possibly fine-grained or inverse) is in the schema."""
    return fold(predicate) in ACCEPTED_SIGNATURES


def is_unsupported(predicate: str) -> bool:
    """True for TAC slots outside the reduced schema (skip them with a warning)."""
    return predicate in UNSUPPORTED


def is_sentiment(predicate: str) -> bool:
    """True for TAC 2017 sentiment predicates (`per:likes`, `gpe:is_disliked_by`, …)."""
    return predicate in SENTIMENT


def allowed_types(predicate: str) -> frozenset[tuple[str, str]]:
    """The (subject type, object type) signatures a predicate accepts."""
    return ACCEPTED_SIGNATURES.get(fold(predicate), frozenset())


def predicates_for(subject_type: str, object_type: str) -> list[str]:
    """Canonical predicates for an ordered pair of types (for the crowd interface)."""
    return sorted(CANONICAL.get((subject_type, object_type), ()))


def pair_types_compatible(type_a: str, type_b: str) -> bool:
    """Whether any relation can hold between mentions of these two types."""
    a, b = sorted((type_a, type_b), key=TYPE_RANK.__getitem__)
    return bool(CANONICAL.get((a, b)))


Span = tuple[str, int, int]  # (doc id, begin, end), end exclusive


@dataclass(frozen=True)
class Canonical:
    """A relation in canonical direction."""

    subject: Span
    subject_type: str
    predicate: str
    object: Span
    object_type: str


def canonicalize(subject: Span, subject_type: str, predicate: str,
                 obj: Span, object_type: str) -> Canonical:
    """Fold the predicate and orient the relation in canonical direction.

    Raises ValueError if the predicate does not accept these argument types.
    """
    if (subject_type, object_type) not in allowed_types(predicate):
        raise ValueError(
            f"{fold(predicate)} does not take a {subject_type} subject and {object_type} "
            "object")
    predicate, swap = orient(predicate, subject_type, (subject[1], subject[2]),
                             object_type, (obj[1], obj[2]))
    if not swap:
        return Canonical(subject, subject_type, predicate, obj, object_type)
    return Canonical(obj, object_type, predicate, subject, subject_type)


def orient(predicate: str, subject_type: str, subject_at: tuple[int, int],
           object_type: str, object_at: tuple[int, int]) -> tuple[str, bool]:
    """(The predicate stated in canonical direction, whether the arguments swap for it.)

    The one rule of canonical direction (`canonicalize`, and ingestion per relation
    line): swap when the subject's type ranks after the object's, or, for equal types,
    when the subject's (begin, end) comes after the object's. The caller has checked
    that the predicate takes these types."""
    folded, inv, by_type = _orientation(predicate, subject_type, object_type)
    if by_type or (subject_type == object_type and subject_at > object_at):
        assert inv is not None  # only same-rank or reversible predicates reach here
        return inv, True
    return folded, False


@functools.lru_cache(maxsize=4096)
def _orientation(predicate: str, subject_type: str,
                 object_type: str) -> tuple[str, str | None, bool]:
    """The folded predicate, its inverse, and whether the types alone swap the
    arguments; cached (ingestion asks once per relation line)."""
    folded = fold(predicate)
    return folded, inverse(folded, subject_type, object_type), \
        TYPE_RANK[subject_type] > TYPE_RANK[object_type]
