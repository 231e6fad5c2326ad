"""The Statistics card of a submission page: a rejected file stored nothing, so the card
says what was read instead of a sentence with its numbers missing."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.contrib.auth.models import User
from django.test import Client

from submissions.models import State, Submission

from .kb import ingest, to_bytes, valid_lines


def statistics_card(user: User, sub: Submission) -> str:
    client = Client()
    client.force_login(user)
    page = client.get(f"/submissions/{sub.pk}/").content.decode()
    return page[page.index('id="statistics"'):].split("</section>")[0]


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_a_rejected_submission_s_statistics_have_their_numbers(
        user: User, stored: Callable[..., Submission]) -> None:
    lines = valid_lines()
    lines.append(lines[-1].replace("\t", "\tno:such_predicate\t", 1).split("\t", 1)[0]
                 + "\tno:such_predicate\t:E1\tD1:0-3")
    sub = ingest(stored, to_bytes(lines))
    assert sub.state == State.REJECTED
    card = text_of(statistics_card(user, sub))
    n = len(lines)
    assert f"{n} lines read" in card, card
    assert "Nothing was stored" in card
    # No sentence with a hole where a number was: "of documents", "; mention pairs".
    assert not re.search(r"(^|[;(]) ?(of )?(documents|mention pairs|duplicate)", card), card
    assert "Instances per predicate" not in card


def test_an_ingested_submission_s_statistics_count_what_was_stored(
        user: User, stored: Callable[..., Submission]) -> None:
    sub = ingest(stored, to_bytes(valid_lines()))
    assert sub.state == State.INGESTED
    card = text_of(statistics_card(user, sub))
    assert re.search(r"\d+ of \d+ documents have relations; \d+ mention pairs", card), card
    assert "Instances per predicate" in card and "Nothing was stored" not in card
