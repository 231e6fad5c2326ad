"""Token-level majority aggregation of entity annotations on crafted disagreements."""

from __future__ import annotations

import re

from annotations.quality.mentions import aggregate_mentions

TEXT = "Ada Byron met Tom King at Nolda University in Paris . Byron left Acme Paris ."
TOKENS = [(m.start(), m.end()) for m in re.finditer(r"\S+", TEXT)]


def sp(text: str, nth: int = 0) -> tuple[int, int]:
    start = -1
    for _ in range(nth + 1):
        start = TEXT.index(text, start + 1)
    return start, start + len(text)


def m(text: str, typ: str, entity: str, canonical: bool = False, link: str = "",
      nth: int = 0) -> dict:
    b, e = sp(text, nth)
    return {"begin": b, "end": e, "type": typ, "entity": entity, "canonical": canonical,
            "link": link}


def spans(result) -> dict[str, tuple[str, str, bool, str]]:
    return {f"{TEXT[a.begin:a.end]}@{a.begin}": (a.type, a.entity, a.canonical, a.link)
            for a in result.mentions}


def test_unanimous_answers_are_kept_exactly() -> None:
    ans = [m("Ada Byron", "PER", "a", True, "Wikipedia:Ada_Byron"),
           m("Byron", "PER", "a", nth=1), m("Paris", "GPE", "p", True)]
    res = aggregate_mentions(TOKENS, [ans, ans, ans])
    got = spans(res)
    assert got[f"Ada Byron@{sp('Ada Byron')[0]}"] == ("PER", "E1", True, "Wikipedia:Ada_Byron")
    assert got[f"Byron@{sp('Byron', 1)[0]}"] == ("PER", "E1", False, "Wikipedia:Ada_Byron")
    assert got[f"Paris@{sp('Paris')[0]}"] == ("GPE", "E2", True, "")
    assert res.entities == 2 and not res.ignored


def test_partial_overlap_resolves_token_by_token() -> None:
    full = m("Nolda University", "ORG", "n", True)
    short = m("Nolda", "GPE", "n", True)
    longer = m("at Nolda University", "ORG", "n", True)
    res = aggregate_mentions(TOKENS, [[full], [short], [longer]])
    assert [(TEXT[a.begin:a.end], a.type) for a in res.mentions] == [
        ("Nolda University", "ORG")]
    assert res.mentions[0].support < 1


def test_type_disagreement_goes_to_the_majority() -> None:
    res = aggregate_mentions(TOKENS, [[m("Acme", "ORG", "x")], [m("Acme", "ORG", "x")],
                                      [m("Acme", "GPE", "x")]])
    assert [(TEXT[a.begin:a.end], a.type) for a in res.mentions] == [("Acme", "ORG")]


def test_three_way_type_tie_is_deterministic() -> None:
    answers = [[m("Acme", "ORG", "x")], [m("Acme", "GPE", "x")], [m("Acme", "PER", "x")]]
    a = aggregate_mentions(TOKENS, answers)
    b = aggregate_mentions(TOKENS, list(reversed(answers)))
    assert a.mentions[0].type == b.mentions[0].type == "PER"  # schema order breaks ties


def test_minority_mentions_are_dropped() -> None:
    res = aggregate_mentions(TOKENS, [[m("Tom King", "PER", "t")], [], []])
    assert res.mentions == []


def test_adjacent_names_stay_apart_and_one_splitter_does_not_split() -> None:
    together = [m("Acme", "ORG", "o"), m("Paris", "GPE", "p", nth=1), m("Ada Byron", "PER", "a")]
    splitter = [m("Acme", "ORG", "o"), m("Paris", "GPE", "p", nth=1),
                m("Ada", "PER", "a"), m("Byron", "PER", "b")]
    res = aggregate_mentions(TOKENS, [together, together, splitter])
    texts = [TEXT[a.begin:a.end] for a in res.mentions]
    assert texts == ["Ada Byron", "Acme", "Paris"]


def test_split_clusters_follow_the_majority() -> None:
    joined = [m("Ada Byron", "PER", "a", True), m("Byron", "PER", "a", nth=1)]
    split = [m("Ada Byron", "PER", "a", True), m("Byron", "PER", "b", True, nth=1)]
    res = aggregate_mentions(TOKENS, [joined, joined, split])
    assert len({a.entity for a in res.mentions}) == 1
    assert [a.canonical for a in res.mentions] == [True, False]
    res = aggregate_mentions(TOKENS, [joined, split, split])
    assert len({a.entity for a in res.mentions}) == 2
    assert all(a.canonical for a in res.mentions)  # each cluster has its canonical mention


def test_link_needs_a_majority() -> None:
    a1 = [m("Paris", "GPE", "p", True, "Wikipedia:Paris")]
    a2 = [m("Paris", "GPE", "p", True, "Wikipedia:Paris,_Texas")]
    a3 = [m("Paris", "GPE", "p", True, "")]
    assert aggregate_mentions(TOKENS, [a1, a2, a3]).mentions[0].link == ""
    assert aggregate_mentions(TOKENS, [a1, a1, a3]).mentions[0].link == "Wikipedia:Paris"


def test_malformed_items_are_ignored_and_counted() -> None:
    good = [m("Paris", "GPE", "p", True)]
    bad = [{"begin": -1, "end": 4, "type": "PER"}, {"begin": 0, "end": 3, "type": "ANIMAL"},
           "junk", {"begin": 0, "end": 10_000, "type": "PER"}]
    res = aggregate_mentions(TOKENS, [good, good + bad, "not a list"])
    assert [TEXT[a.begin:a.end] for a in res.mentions] == ["Paris"]
    assert sum(res.ignored.values()) == 5


def test_spans_snap_to_token_boundaries() -> None:
    b, e = sp("Tom King")
    sloppy = {"begin": b + 1, "end": e - 2, "type": "PER", "entity": "t"}
    res = aggregate_mentions(TOKENS, [[sloppy], [sloppy], []])
    assert (res.mentions[0].begin, res.mentions[0].end) == (b, e)
