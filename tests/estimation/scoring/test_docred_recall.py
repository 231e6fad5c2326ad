"""A DocRED corpus through scoring: document-level gold and predictions meet on their
pairs, and recall against the imported (complete) gold is the DocRED recall."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from estimation.models import SystemScore
from estimation.scoring import run_scheduled
from kbpo.core.models import Corpus
from submissions.models import Submission
from submissions.processing import run_ingestion
from tests.annotations.exhaustive.test_gold_import_docred_native import docs_with_labels
from tests.core.test_docred_load import write


def submit(tmp_path: Path, name: str, preds: list[dict]) -> Submission:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(preds))
    call_command("submit", str(path), "--user", "ada", "--corpus", "redocred", "--name", name,
                 stdout=io.StringIO())
    sub = Submission.objects.latest("pk")
    run_ingestion(sub.pk)  # (the test's transaction never commits the command's queue)
    sub.refresh_from_db()
    assert sub.state == "ingested", sub.report
    return sub


@pytest.mark.django_db
def test_recall_against_imported_docred_gold(tmp_path: Path) -> None:
    path = write(tmp_path / "dev.json", docs_with_labels())
    call_command("load_corpus", "--tag", "redocred", "--format", "docred", str(path),
                 "--quiet-progress")
    call_command("import_gold", "--format", "docred", "--corpus", "redocred", str(path),
                 stdout=io.StringIO(), stderr=io.StringIO())
    User.objects.create_user("ada", "ada@example.org", "pw-ada-123456")
    ada, acme = "Ada Byron: a life", "Acme"
    # Gold: P22(0,3) across sentences, P569(0,1), P19(0,2) in Ada; P159(0,1) in Acme.
    three = submit(tmp_path, "three", [
        {"title": ada, "h_idx": 0, "t_idx": 3, "r": "P22"},
        {"title": ada, "h_idx": 0, "t_idx": 1, "r": "P569"},
        {"title": acme, "h_idx": 0, "t_idx": 1, "r": "P159"},
        {"title": ada, "h_idx": 3, "t_idx": 0, "r": "P22"},    # wrong direction: not gold
        {"title": ada, "h_idx": 0, "t_idx": 2, "r": "P20"}])   # wrong relation
    one = submit(tmp_path, "one", [{"title": ada, "h_idx": 0, "t_idx": 2, "r": "P19"}])
    run_scheduled(Corpus.objects.get(tag="redocred").pk, force=True, trigger="test")
    scores = {s.submission_id: s for s in SystemScore.objects.filter(scheme="instance")}
    assert scores[three.pk].r_simple == pytest.approx(0.75)
    assert scores[one.pk].r_simple == pytest.approx(0.25)
    # (the joint estimates need crowd labels of the drawn pairs: the DocRED task page)
