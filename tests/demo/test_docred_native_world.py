"""The DocRED-native world: every system file is accepted as written, and what ingestion
keeps is truth.json's instance for instance (precision counted on the imported gold);
its systems are what issue 37 asks (teams, a near copy, easy facts first, false facts
on the documents' own entity pairs, reversed true pairs among them)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from annotations.models import GoldRelation
from kbpo.demo.world.docred_native import (
    COPY_KEEP,
    TEAM_SHARE,
    generate,
    intra_sentence,
    read_source,
    world_facts,
)
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


def _many_documents(tmp: Path, copies: int) -> Path:
    """The written documents `copies` times under distinct titles: ~18 gold facts each,
    enough for the systems' shares to be read within a few points."""
    docs = json.loads(written_source(tmp).read_text())
    many = [{**d, "title": f"{d['title']} {k}"} for k in range(copies) for d in docs]
    path = tmp / "many.json"
    path.write_text(json.dumps(many), encoding="utf-8")
    return path


def test_teams_a_near_copy_reversed_pairs_and_easy_facts_first(tmp_path: Path) -> None:
    docs = read_source(_many_documents(tmp_path, 60))[1]
    profiles, gold, facts = world_facts(docs, 6, seed=5)
    g = set(gold)
    names = [p.name for p in profiles]
    assert [p.team for p in profiles[:5]] == ["team_1", "team_1", "team_2", "team_2", "team_3"]
    assert profiles[5].copy_of == "docred_sys_5" and profiles[5].team == "team_3"
    intra = {f for f in gold if intra_sentence(docs[f[0]], f[1], f[2])}
    assert 0 < len(intra) < len(gold)
    for prof, fs in zip(profiles, facts, strict=True):
        s = set(fs)
        assert len(s) == len(fs) and all(0 <= h < len(docs[i].entities) and
                                         0 <= t < len(docs[i].entities) and h != t
                                         for i, h, t, _ in fs)
        found = s & g
        # Recall: the profile's, within 4 binomial standard errors.
        se = (prof.recall * (1 - prof.recall) / len(gold)) ** 0.5
        assert abs(len(found) / len(gold) - prof.recall) <= 4 * se + 1 / len(gold), prof
        # Easy facts first: intra-sentence facts are found more often than the others.
        assert len(found & intra) / len(intra) > len(found - intra) / len(g - intra), prof
        # False facts lie on the documents' entity pairs, some reversed true pairs.
        false = s - g
        reversed_true = {(i, h, t, r) for i, h, t, r in false if (i, t, h, r) in g}
        assert false and reversed_true, prof
    by = dict(zip(names, (set(f) for f in facts), strict=True))
    # The near copy keeps ~COPY_KEEP of the original (4 binomial standard errors).
    n = len(by["docred_sys_5"])
    kept = len(by["docred_sys_5"] & by["docred_sys_6"]) / n
    assert abs(kept - COPY_KEEP) <= 4 * (COPY_KEEP * (1 - COPY_KEEP) / n) ** 0.5
    assert abs(len(by["docred_sys_6"]) - n) <= 0.01 * n
    # Teams share a base of false facts (TEAM_SHARE of the smaller one's, by
    # construction); systems of different teams share only what chance gives.
    f1, f2, f3 = (by[f"docred_sys_{k}"] - g for k in (1, 2, 3))
    assert len(f1 & f2) >= TEAM_SHARE * min(len(f1), len(f2)) - 1
    assert len(f1 & f3) < 0.5 * len(f1 & f2)
