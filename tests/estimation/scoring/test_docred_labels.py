"""A DocRED submission's report, predicates.csv and API name relations by the schema's
label beside the id (`P22` father); a TAC KBP report keeps its ids alone."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from estimation.scoring import run_scheduled
from estimation.templatetags.scores import relation_label
from kbpo.core.models import Corpus
from tests.annotations.exhaustive.test_gold_import_docred_native import docs_with_labels
from tests.core.test_docred_load import write
from tests.estimation.scoring.test_docred_recall import submit


@pytest.mark.django_db
def test_docred_reports_show_relation_labels(tmp_path: Path) -> None:
    path = write(tmp_path / "dev.json", docs_with_labels())
    call_command("load_corpus", "--tag", "redocred", "--format", "docred", str(path),
                 "--quiet-progress")
    call_command("import_gold", "--format", "docred", "--corpus", "redocred", str(path),
                 stdout=io.StringIO(), stderr=io.StringIO())
    ada = User.objects.create_user("ada", "ada@example.org", "pw-ada-123456")
    sub = submit(tmp_path, "sys", [
        {"title": "Ada Byron: a life", "h_idx": 0, "t_idx": 3, "r": "P22"},
        {"title": "Ada Byron: a life", "h_idx": 0, "t_idx": 2, "r": "P20"}])
    run_scheduled(Corpus.objects.get(tag="redocred").pk, force=True, trigger="test")
    client = Client()
    client.force_login(ada)
    page = client.get(reverse("submission-evaluation", args=[sub.pk])).content.decode()
    table = page[page.index("<h2>Per predicate</h2>"):]
    assert "<code>P22</code> father" in table and "<code>P20</code> place of death" in table
    rows = list(csv.DictReader(io.StringIO(client.get(
        reverse("submission-predicates-csv", args=[sub.pk])).content.decode())))
    assert {(r["predicate"], r["label"]) for r in rows} >= {("P22", "father"),
                                                           ("P20", "place of death")}
    api = client.get(reverse("api-submission-scores", args=[sub.pk])).json()["predicates"]
    assert {p["predicate"]: p["label"] for p in api}["P22"] == "father"
    samples = client.get(reverse("api-submission-samples", args=[sub.pk])).json()["results"]
    assert all(s["predicate_label"] in ("father", "place of death") for s in samples)


def test_tac_ids_need_no_label() -> None:
    assert relation_label("per:spouse", "tac_kbp") == ""
    assert relation_label("org:top_members/employees", "tac_kbp") == ""
    assert relation_label("P22", "docred") == "father"
    assert relation_label("P22", "no_such_schema") == ""
