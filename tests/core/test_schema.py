"""The KBP schema module against every row of the schema table (docs/reference/schema.md)."""

from __future__ import annotations

import pytest

from kbpo.core import schema as s

# (subject type, predicate, object types) — the table of docs/reference/schema.md, row by row.
TABLE = [
    ("PER", ["place_of_birth", "place_of_residence", "place_of_death"], ["GPE"]),
    ("PER", ["date_of_birth", "date_of_death"], ["DATE"]),
    ("PER", ["organizations_founded", "holds_shares_in", "schools_attended"], ["ORG"]),
    ("PER", ["employee_or_member_of"], ["ORG", "GPE"]),
    ("PER", ["parents", "children", "spouse", "siblings", "other_family"], ["PER"]),
    ("PER", ["title"], ["TITLE"]),
    ("ORG", ["place_of_headquarters"], ["GPE"]),
    ("ORG", ["date_founded", "date_dissolved"], ["DATE"]),
    ("ORG", ["founded_by", "shareholders"], ["PER", "ORG", "GPE"]),
    ("ORG", ["member_of", "subsidiaries", "holds_shares_in"], ["ORG"]),
    ("ORG", ["members", "parents"], ["ORG", "GPE"]),
    ("ORG", ["employees_or_members", "students"], ["PER"]),
]
ROWS = [(st, f"{st.lower()}:{slot}", ot)
        for st, slots, ots in TABLE for slot in slots for ot in ots]
ALL_TYPES = ["PER", "ORG", "GPE", "DATE", "TITLE"]
A, B = ("D", 0, 5), ("D", 10, 20)


@pytest.mark.parametrize(("stype", "pred", "otype"), ROWS)
def test_every_table_row_is_accepted_and_canonicalises(stype: str, pred: str, otype: str) -> None:
    assert s.is_known(pred)
    assert (stype, otype) in s.allowed_types(pred)
    c = s.canonicalize(A, stype, pred, B, otype)
    # Canonical direction: the subject's type ranks first (PER, ORG, GPE, ...).
    assert s.TYPE_RANK[c.subject_type] <= s.TYPE_RANK[c.object_type]
    assert c.predicate in s.predicates_for(c.subject_type, c.object_type)
    # Canonicalising twice changes nothing.
    assert s.canonicalize(c.subject, c.subject_type, c.predicate, c.object, c.object_type) == c
    # The inverse states the same fact: swapping the arguments gives the same canonical form.
    inv = s.inverse(pred, stype, otype)
    if otype in ("DATE", "TITLE"):
        assert inv is None
    else:
        assert inv is not None
        assert s.canonicalize(B, otype, inv, A, stype) == c
        assert s.inverse(inv, otype, stype) == pred


@pytest.mark.parametrize(("stype", "pred", "otype"), ROWS)
def test_wrong_argument_types_are_refused(stype: str, pred: str, otype: str) -> None:
    for wrong in ALL_TYPES:
        if wrong in {ot for st, p, ot in ROWS if p == pred and st == stype}:
            continue
        with pytest.raises(ValueError, match="does not take"):
            s.canonicalize(A, stype, pred, B, wrong)


@pytest.mark.parametrize(("pred", "inv"), [
    ("per:parents", "per:children"), ("per:spouse", "per:spouse"),
    ("per:siblings", "per:siblings"), ("per:other_family", "per:other_family"),
])
def test_family_inverses(pred: str, inv: str) -> None:
    assert s.inverse(pred, "PER", "PER") == inv


@pytest.mark.parametrize(("pred", "stype", "otype", "inv"), [
    ("per:employee_or_member_of", "PER", "ORG", "org:employees_or_members"),
    ("per:employee_or_member_of", "PER", "GPE", "gpe:employees_or_members"),
    ("per:schools_attended", "PER", "ORG", "org:students"),
    ("per:place_of_birth", "PER", "GPE", "gpe:births_in_place"),
    ("per:place_of_residence", "PER", "GPE", "gpe:residents_in_place"),
    ("per:place_of_death", "PER", "GPE", "gpe:deaths_in_place"),
    ("per:organizations_founded", "PER", "ORG", "org:founded_by"),
    ("org:founded_by", "ORG", "GPE", "gpe:organizations_founded"),
    ("per:holds_shares_in", "PER", "ORG", "org:shareholders"),
    ("org:member_of", "ORG", "ORG", "org:members"),
    ("org:members", "ORG", "GPE", "gpe:member_of"),
    ("org:subsidiaries", "ORG", "ORG", "org:parents"),
    ("org:parents", "ORG", "GPE", "gpe:subsidiaries"),
    ("org:place_of_headquarters", "ORG", "GPE", "gpe:headquarters_in_place"),
])
def test_inverses_of_design_section_5(pred: str, stype: str, otype: str, inv: str) -> None:
    assert s.inverse(pred, stype, otype) == inv
    assert s.inverse(inv, otype, stype) == pred


@pytest.mark.parametrize(("fine", "folded"), [
    ("per:city_of_birth", "per:place_of_birth"),
    ("per:stateorprovince_of_birth", "per:place_of_birth"),
    ("per:country_of_birth", "per:place_of_birth"),
    ("per:city_of_death", "per:place_of_death"),
    ("per:country_of_death", "per:place_of_death"),
    ("per:cities_of_residence", "per:place_of_residence"),
    ("per:statesorprovinces_of_residence", "per:place_of_residence"),
    ("per:countries_of_residence", "per:place_of_residence"),
    ("org:city_of_headquarters", "org:place_of_headquarters"),
    ("org:country_of_headquarters", "org:place_of_headquarters"),
    ("gpe:births_in_city", "gpe:births_in_place"),
    ("gpe:residents_of_country", "gpe:residents_in_place"),
    ("gpe:headquarters_in_stateorprovince", "gpe:headquarters_in_place"),
    ("per:top_member_employee_of", "per:employee_or_member_of"),
    ("org:top_members_employees", "org:employees_or_members"),
])
def test_granularity_and_top_member_folding(fine: str, folded: str) -> None:
    assert s.fold(fine) == folded
    assert s.fold(folded) == folded
    assert s.is_known(fine)


def test_fine_grained_inverse_is_canonicalised() -> None:
    c = s.canonicalize(B, "GPE", "gpe:births_in_city", A, "PER")
    assert (c.subject, c.subject_type, c.predicate, c.object) == (A, "PER", "per:place_of_birth", B)
    c = s.canonicalize(B, "ORG", "org:top_members_employees", A, "PER")
    assert c.predicate == "per:employee_or_member_of" and c.subject == A


def test_same_type_pairs_are_ordered_by_span() -> None:
    later_parent = s.canonicalize(B, "PER", "per:children", A, "PER")
    assert later_parent == s.Canonical(A, "PER", "per:parents", B, "PER")
    assert s.canonicalize(B, "PER", "per:spouse", A, "PER").subject == A
    assert s.canonicalize(B, "ORG", "org:founded_by", A, "ORG").predicate == \
        "org:organizations_founded"


def test_unsupported_and_unknown_predicates() -> None:
    for pred in ("per:age", "per:cause_of_death", "org:website"):
        assert s.is_unsupported(pred) and not s.is_known(pred)
    assert not s.is_known("per:favourite_colour")
    assert not s.is_unsupported("per:favourite_colour")


def test_date_and_title_are_never_subjects() -> None:
    for (st, _ot) in s.CANONICAL:
        assert st in s.SUBJECT_TYPES
    assert not s.pair_types_compatible("DATE", "TITLE")
    assert not s.pair_types_compatible("GPE", "GPE")
    assert s.pair_types_compatible("GPE", "PER")


def test_every_canonical_predicate_has_a_description() -> None:
    assert set(s.DESCRIPTIONS) == set(s.CANONICAL_PREDICATES)


@pytest.mark.parametrize(("stype", "pred", "otype"), ROWS)
def test_orient_is_canonicalize_without_the_spans(stype: str, pred: str, otype: str) -> None:
    """Ingestion orients each relation line with `orient`; `canonicalize` too: one rule,
    here against the spans in every order (equal types: by begin, then by end)."""
    for a, b in [((0, 5), (10, 20)), ((10, 20), (0, 5)), ((3, 9), (3, 7)), ((3, 7), (3, 9))]:
        c = s.canonicalize(("D", *a), stype, pred, ("D", *b), otype)
        predicate, swap = s.orient(pred, stype, a, otype, b)
        assert predicate == c.predicate
        assert swap == (c.subject != ("D", *a) or c.subject_type != stype)
        later = a > b
        assert swap == (s.TYPE_RANK[stype] > s.TYPE_RANK[otype]
                        or (stype == otype and later))
