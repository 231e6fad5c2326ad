"""The operator page of exhaustive annotation: staff only, counts and escaping."""

from __future__ import annotations

import pytest
from django.test import Client

from annotations.exhaustive.sampling import plan_exhaustive
from annotations.models import ExhaustiveDocument
from tests.factories import make_corpus, make_user


@pytest.mark.django_db
def test_progress_page_is_for_staff_and_shows_counts() -> None:
    corpus = make_corpus("pg", {"A": "One <b>bold</b> line .", "B": "Two .", "C": "Three ."})
    plan_exhaustive(corpus, 3, 0.34, seed=1, start_tasks=False)
    ExhaustiveDocument.objects.update(matched_entity="<script>x</script>")
    client = Client()
    assert client.get("/exhaustive/pg/").status_code == 302  # to the login page
    client.force_login(make_user("eve"))
    assert client.get("/exhaustive/pg/").status_code == 302  # not staff
    client.force_login(make_user("op", staff=True))
    page = client.get("/exhaustive/pg/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "0 of 1 documents complete" in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<script>x</script>" not in html
    assert client.get("/exhaustive/pg/?stage=seed").status_code == 200
    assert client.get("/exhaustive/pg/?stage=bogus").status_code == 200
    assert client.get("/exhaustive/nope/").status_code == 404
