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
