"""Every admin list renders for staff, and the pages with inlines render an object."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from annotations.interfaces.intake import AnswerIn, submit_assignment, worker_for
from kbpo.core.models import Document
from tests.factories import make_corpus, make_hit, make_pair, make_submission, make_user, span

# The hidden foreign key of an inline row to the page's object.
PARENT_LINKS = {"document", "submission", "hit", "assignment"}


@pytest.mark.django_db
def test_every_admin_page_renders(client: Client) -> None:
    corpus = make_corpus()
    doc = Document.objects.get(doc_id="D1")
    pair = make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE")
    sub = make_submission(corpus, [(pair, "per:place_of_birth")])
    hit = make_hit(corpus, [pair], submission=sub)
    question = hit.items.get().question
    assignment = submit_assignment(hit=hit, worker=worker_for("simulated", "w1"),
                                   assignment_id="A1",
                                   answers=[AnswerIn(question.pk, ("per:place_of_birth",))])
    client.force_login(_superuser())
    for model in admin.site._registry:
        meta = model._meta
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        assert client.get(url).status_code == 200, url
    for obj in (doc, sub, hit, assignment):
        meta = obj._meta
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
        resp = client.get(url)
        assert resp.status_code == 200, url
        # Inlines are read-only: their rows carry no editable fields.
        fields = set(re.findall(r'name="[\w-]+-\d+-(\w+)"', resp.content.decode()))
        assert fields <= {"id", "DELETE"} | PARENT_LINKS, (url, fields)


def _superuser():
    user = make_user("root", staff=True)
    user.is_superuser = True
    user.save()
    return user


def test_admin_names_read_as_english() -> None:
    """No model is listed with a plural Django made by appending "s" to an "s" ("Bonuss")."""
    for model in admin.site._registry:
        meta = model._meta
        singular, plural = str(meta.verbose_name), str(meta.verbose_name_plural)
        if singular.endswith("s") and singular != plural:
            assert plural != singular + "s", f"{model.__name__}: {plural!r}"


@pytest.mark.django_db
def test_mention_pairs_are_view_only(client: Client) -> None:
    """A pair's spans and types are fixed at ingest (questions, labels and the worker
    model rest on them, and scoring workers keep them): the admin shows a pair but
    neither changes, adds nor deletes one, even for a superuser."""
    from submissions.models import MentionPair

    make_corpus()
    doc = Document.objects.get(doc_id="D1")
    pair = make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE")
    client.force_login(_superuser())
    url = reverse("admin:submissions_mentionpair_change", args=[pair.pk])
    page = client.get(url)
    assert page.status_code == 200
    assert 'name="subject_type"' not in page.content.decode()  # shown, not a form field
    form = {"document": doc.pk, "sentence": pair.sentence_id or "",
            "subject_begin": pair.subject_begin, "subject_end": pair.subject_end,
            "object_begin": pair.object_begin, "object_end": pair.object_end,
            "subject_type": "ORG", "object_type": "GPE"}
    assert client.post(url, form).status_code == 403
    assert MentionPair.objects.get(pk=pair.pk).subject_type == "PER"
    assert client.get(reverse("admin:submissions_mentionpair_add")).status_code == 403
    delete = reverse("admin:submissions_mentionpair_delete", args=[pair.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert MentionPair.objects.filter(pk=pair.pk).exists()


@pytest.mark.django_db
def test_a_question_keeps_its_pair(client: Client) -> None:
    """An existing question's corpus, kind and pair are shown, not editable: its answers
    are about that pair (a new question can still be added with one)."""
    from annotations.models import Question, TaskKind

    corpus = make_corpus()
    doc = Document.objects.get(doc_id="D1")
    pair = make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE")
    other = make_pair(doc, span(doc, "Tom King", 1), "PER", span(doc, "Acme"), "ORG")
    question = Question.objects.create(corpus=corpus, kind=TaskKind.RELATION, pair=pair)
    client.force_login(_superuser())
    url = reverse("admin:annotations_question_change", args=[question.pk])
    page = client.get(url).content.decode()
    assert 'name="pair"' not in page and 'name="kind"' not in page
    assert 'name="control_answer"' in page  # a control's known answer stays editable
    saved = client.post(url, {"pair": other.pk, "kind": TaskKind.RELATION,
                              "corpus": corpus.pk, "state": question.state,
                              "answers_needed": 5, "control_answer": "null"})
    assert saved.status_code == 302  # the form was saved: its other fields apply...
    question.refresh_from_db()
    assert question.answers_needed == 5 and question.pair_id == pair.pk  # ...not the pair
    add = client.get(reverse("admin:annotations_question_add")).content.decode()
    assert 'name="pair"' in add
