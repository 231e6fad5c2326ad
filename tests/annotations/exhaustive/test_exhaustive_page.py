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


@pytest.mark.django_db
def test_gold_imported_into_the_sample_is_counted_as_imported() -> None:
    """The demo imports gold into its planned documents (their stage stays): the page
    said "imported gold annotation: 0" right after that import."""
    from annotations.exhaustive.gold import store_document_gold
    from kbpo.core.docred import MentionIn

    corpus = make_corpus("gi", {"A": "Ada Byron is here .", "B": "Tom King .", "C": "Paris ."})
    plan_exhaustive(corpus, 2, 0.5, seed=1, start_tasks=False)
    planned = list(ExhaustiveDocument.objects.filter(corpus=corpus)
                   .select_related("document"))
    assert planned and {d.stage for d in planned} != {"imported"}
    for exdoc in planned:
        store_document_gold(corpus, exdoc.document,
                            [MentionIn(0, 3, "PER", "E1", canonical=True)], [])
    client = Client()
    client.force_login(make_user("op", staff=True))
    html = client.get("/exhaustive/gi/").content.decode()
    n = len(planned)
    assert f"{n} of {n} documents complete" in html
    assert f'<span id="from-import">{n} from imported gold</span>' in html
    assert "added by a gold import, outside the two-stage sample" in html
