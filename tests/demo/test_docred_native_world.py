"""The DocRED-native world: every system file is accepted as written, and what ingestion
keeps is truth.json's instance for instance (precision counted on the imported gold)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from annotations.models import GoldRelation
from kbpo.demo.world.docred_native import generate
from submissions.models import RelationInstance, Submission
from submissions.processing import run_ingestion

from .docred_source import written_source


def test_the_world_is_deterministic_and_valid(tmp_path: Path) -> None:
    source = written_source(tmp_path)
    a = generate(source, tmp_path / "a", docs=3, systems=3, seed=4)
    generate(source, tmp_path / "b", docs=3, systems=3, seed=4)
    for name in ("docs.json", "truth.json", "systems/docred_sys_2.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    truth = json.loads((tmp_path / "a" / "truth.json").read_text())
    assert a["true_instances"] == truth["true_instances"] > 0
    rows = json.loads((tmp_path / "a" / "systems" / "docred_sys_3.json").read_text())
    assert rows and set(rows[0]) == {"title", "h_idx", "t_idx", "r", "evidence"}


@pytest.mark.django_db
def test_every_prediction_is_accepted_and_the_kept_instances_are_truth_s(
        tmp_path: Path, no_planning: None) -> None:
    out = tmp_path / "world"
    generate(written_source(tmp_path), out, docs=3, systems=3, seed=2)
    docs = str(out / "docs.json")
    call_command("load_corpus", "--tag", "dw", "--format", "docred", docs, "--quiet-progress")
    call_command("import_gold", "--format", "docred", "--corpus", "dw", docs,
                 stdout=io.StringIO(), stderr=io.StringIO())
    User.objects.create_user("sys", "s@example.org", "pw-sys-123456")
    truth = json.loads((out / "truth.json").read_text())
    gold = set(GoldRelation.objects.values_list("document_id", "subject_begin", "subject_end",
                                                "object_begin", "object_end", "predicate"))
    assert len(gold) == truth["true_instances"]
    for name, scores in truth["systems"].items():
        call_command("submit", str(out / "systems" / f"{name}.json"), "--user", "sys",
                     "--corpus", "dw", "--name", name, "--ignore-limits", stdout=io.StringIO())
        sub = Submission.objects.latest("pk")
        run_ingestion(sub.pk)
        sub.refresh_from_db()
        assert (sub.state, sub.n_errors, sub.n_warnings) == ("ingested", 0, 0), sub.report
        kept = {(i.pair.document_id, i.pair.subject_begin, i.pair.subject_end,
                 i.pair.object_begin, i.pair.object_end, i.predicate)
                for i in RelationInstance.objects.filter(submission=sub).select_related("pair")}
        assert len(kept) == scores["instance"]["instances"]
        assert len(kept & gold) == scores["instance"]["true_instances"]
        assert scores["instance"]["precision"] == pytest.approx(len(kept & gold) / len(kept),
                                                                abs=1e-6)
        assert scores["instance"]["recall"] == pytest.approx(len(kept & gold) / len(gold),
                                                             abs=1e-6)
