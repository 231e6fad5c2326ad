import json
import subprocess
import sys

import pytest

from estimation.cli import main
from estimation.validation import OPEN, SCENARIOS, UNCORRECTED
from tests import ROOT

PROBLEM = {
    "scheme": "instance",
    "systems": [
        {
            "name": "A",
            "instances": [
                ["p1", "per:title"],
                ["p2", "per:title"],
                ["p3", "org:parents", "e3"],
            ],
        },
        {
            "name": "B",
            "instances": [
                ["p2", "per:title"],
                ["p3", "org:members"],
                ["p4", "per:spouse"],
            ],
        },
        {"name": "C", "instances": []},
    ],
    "draws": {"A": ["p1", "p2", "p2", "p3"], "B": ["p4", "p3"]},
    "labels": {
        "p1": "per:title",
        "p2": "no_relation",
        "p3": "org:parents",
        "p4": "per:spouse",
    },
    "exhaustive": [["p1", "per:title"], ["p3", "org:parents"], ["p9", "per:spouse"]],
    "confidence": 0.9,
}


def run(tmp_path, capsys, problem, *args):
    path = tmp_path / "problem.json"
    path.write_text(json.dumps(problem) if not isinstance(problem, str) else problem)
    code = main([args[0], str(path), *args[1:]])
    out, err = capsys.readouterr()
    return code, out, err


def test_estimate_output_contract(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, PROBLEM, "estimate")
    assert code == 0, err
    result = json.loads(out)
    names = [s["name"] for s in result["systems"]]
    assert names == ["A", "B", "C"]
    a = result["systems"][0]
    assert a["labels_used"] == 3
    for metric in ("precision", "recall", "f1"):
        for kind in ("simple", "joint"):
            assert set(a[metric][kind]) == {"estimate", "lo", "hi", "exact"}
    # A's own draws labelled all three of its pairs (p1, p3 right, p2 wrong): its
    # precision is known exactly, whatever the draws' proportion (2 of 4) says.
    simple = a["precision"]["simple"]
    assert simple["estimate"] == pytest.approx(2 / 3, abs=1e-6)
    # Exact, and its printed ends rounded outward (lo down, hi up) still contain 2/3.
    assert simple["exact"] and simple["lo"] <= 2 / 3 <= simple["hi"]
    assert simple["hi"] - simple["lo"] < 1.5e-6
    # By default only the draw scheme: the others are reweighted and not reliable.
    assert set(a["schemes"]) == {"instance"}
    assert result["scheme_notes"] == {"instance": {"reweighted": False, "reliable": True,
                                                   "recall_of": "instance"}}
    c = result["systems"][2]  # no instances, no draws: nulls, never a crash
    assert c["precision"]["simple"]["estimate"] is None
    assert c["recall"]["simple"]["estimate"] == 0


def test_plan_output(tmp_path, capsys):
    # Every pair of B is labelled: its precision is known, no draw is needed.
    code, out, _ = run(
        tmp_path, capsys, PROBLEM, "plan", "--system", "B", "--target-halfwidth", "0.05"
    )
    assert code == 0
    assert json.loads(out) == {"system": "B", "n": 0}
    # Without the label of p4, a third of B is unknown: it needs draws of its own.
    problem = json.loads(json.dumps(PROBLEM))
    del problem["labels"]["p4"]
    problem["draws"]["B"] = ["p3"]
    code, out, _ = run(tmp_path, capsys, problem, "plan", "--system", "B")
    result = json.loads(out)
    assert code == 0 and result["system"] == "B" and isinstance(result["n"], int)
    assert result["n"] > 0


def _with(path, value):
    problem = json.loads(json.dumps(PROBLEM))
    target = problem
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return problem


@pytest.mark.parametrize(
    ("problem", "message"),
    [
        (
            _with(("systems", 1, "instances", 2), ["p4"]),
            "systems[1].instances[2]: expected [pair_key, predicate] or "
            "[pair_key, predicate, subject_id]",
        ),
        (
            _with(("systems", 0, "instances", 0), ["p1", 7]),
            "systems[0].instances[0][1]: expected predicate",
        ),
        (
            _with(("systems", 0, "instances", 0), ["p1", "no_relation"]),
            "systems[0].instances[0][1]: 'no_relation'",
        ),
        (
            _with(("systems", 1, "name"), "A"),
            "systems[1].name: duplicate system name 'A'",
        ),
        (_with(("systems",), {"A": []}), "systems: expected a list"),
        (_with(("draws", "Z"), ["p1"]), "draws.Z: no system of that name"),
        (
            _with(("draws", "B"), ["p4", "p1"]),
            "draws.B[1]: pair_key 'p1' is not among system 'B''s instances",
        ),
        (
            _with(("labels", "p1"), None),
            "labels.p1: expected predicate or 'no_relation'",
        ),
        (
            _with(("exhaustive",), [["p1"]]),
            "exhaustive[0]: expected [pair_key, predicate]",
        ),
        (
            _with(("exhaustive",), [["p1", "per:title", "e1", 5]]),
            "exhaustive[0][3]: expected document_id",
        ),
        (
            _with(("exhaustive",), [["p1", "per:title", "e1", "d1"], ["p3", "org:parents"]]),
            "exhaustive: give a document_id for every instance or for none (1 of 2",
        ),
        (_with(("scheme",), "macro"), "scheme: expected one of instance, predicate"),
        (_with(("confidence",), 1.5), "confidence: expected a number between 0 and 1"),
        (_with(("extra",), 1), "extra: unknown field"),
        ("[1, 2]", "problem: expected a JSON object"),
        ('{"systems": [', "invalid JSON at line 1"),
    ],
)
def test_malformed_input_names_the_field(tmp_path, capsys, problem, message):
    code, out, err = run(tmp_path, capsys, problem, "estimate")
    assert code == 2
    assert out == ""
    assert err.startswith("error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["estimate", "--schemes", "macro"],
         "--schemes: unknown scheme 'macro'; expected 'all' or one of instance, predicate, "
         "entity, entity_relation"),
        (["plan", "--system", "A", "--target-halfwidth", "-1"],
         "--target-halfwidth: must be positive"),
        (["plan", "--system", "A", "--target-halfwidth", "nan"],
         "--target-halfwidth: must be positive and finite, got nan"),
        (["plan", "--system", "A", "--target-variance", "inf"],
         "--target-variance: must be positive and finite, got inf"),
        (["plan", "--system", "A", "--bound", "exact"],
         "argument --bound: invalid choice: 'exact' (choose from 'worst_case', "
         "'second_moment')"),
    ],
)
def test_bad_options_name_what_is_accepted(tmp_path, capsys, args, message):
    code, out, err = run(tmp_path, capsys, PROBLEM, *args)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "invalid JSON at line 1 column 1"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b'"systems"', "problem: expected a JSON object"),
        (b'{"systems": [{"name": "A", "instances": [[1.5, "per:title"]]}]}',
         "systems[0].instances[0][0]: expected pair_key (a non-empty string), got 1.5"),
        (b'{"systems": [], "labels": []}',
         "labels: expected an object {pair_key: predicate or 'no_relation'}"),
    ],
)
def test_malformed_problem_files(tmp_path, capsys, content, message):
    path = tmp_path / "problem.json"
    path.write_bytes(content)
    assert main(["estimate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_simulate_and_bench_name_what_is_accepted(tmp_path, capsys):
    assert main(["simulate", "--out", str(tmp_path), "--draw-scheme", "macro"]) == 2
    assert "--draw-scheme: unknown scheme 'macro'; expected one of instance" in \
        capsys.readouterr().err
    bench = subprocess.run(
        [sys.executable, "bench/bench_validate.py", "--scenario", "nope", "--trials", "2"],
        capture_output=True, text=True, check=False, cwd=ROOT)
    assert bench.returncode == 2 and bench.stdout == ""
    known = ", ".join({**SCENARIOS, **UNCORRECTED, **OPEN})
    assert known.startswith("paper, tiny, novel, subset, heavy_tail, clustered, arrival, "
                            "arrival_heavy, arrival_novel, perfect, crowd")
    assert bench.stderr == f"error: --scenario: unknown scenario 'nope'; expected one of {known}\n"


def test_plan_unknown_system_and_missing_file(tmp_path, capsys):
    code, _, err = run(tmp_path, capsys, PROBLEM, "plan", "--system", "nope")
    assert code == 2 and "--system: no system named 'nope'" in err
    assert main(["estimate", str(tmp_path / "missing.json")]) == 2
    assert "missing.json: cannot read" in capsys.readouterr().err


def test_module_entry_point(tmp_path):
    path = tmp_path / "problem.json"
    path.write_text(json.dumps(PROBLEM))
    done = subprocess.run(
        [sys.executable, "-m", "estimation", "plan", str(path), "--system", "A"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["system"] == "A"
    bad = subprocess.run(
        [sys.executable, "-m", "estimation", "estimate", str(tmp_path / "nope.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: ")


def test_exhaustive_documents_are_clusters(tmp_path, capsys):
    """Two documents of many instances each: the recall interval is no narrower
    than without document ids (and [0, 1] with a single document)."""
    problem = json.loads(json.dumps(PROBLEM))
    problem["exhaustive"] = [[f"p{k}", "per:title", f"e{k}", f"d{k % 2}"] for k in range(1, 5)]
    code, out, err = run(tmp_path, capsys, problem, "estimate", "--schemes", "instance")
    assert code == 0, err
    clustered = json.loads(out)["systems"][0]["recall"]["simple"]
    for row in problem["exhaustive"]:
        row.pop()
    code, out, _ = run(tmp_path, capsys, problem, "estimate", "--schemes", "instance")
    plain = json.loads(out)["systems"][0]["recall"]["simple"]
    assert clustered["estimate"] == plain["estimate"]
    assert clustered["hi"] - clustered["lo"] >= plain["hi"] - plain["lo"]
    problem["exhaustive"] = [[*row, "d0"] for row in problem["exhaustive"]]
    code, out, _ = run(tmp_path, capsys, problem, "estimate", "--schemes", "instance")
    one_doc = json.loads(out)["systems"][0]["recall"]["simple"]
    assert (one_doc["lo"], one_doc["hi"]) == (0, 1)


def test_exhaustive_sample_no_system_found_gives_an_honest_recall(tmp_path, capsys):
    """Ŷ0 is one document that no system predicted on: θ̂ = 0, so joint recall is 0,
    but r = θν with θ unknown can be as large as ν. The upper end was ν's at ν̂ = 0
    (0 [0, 0.018]); it is now ν's own: A found every true pair of the pool (ν̂ = 1)."""
    a = [[f"p{k}", "r"] for k in range(1, 7)]
    problem = {
        "scheme": "instance",
        "systems": [{"name": "A", "instances": a}, {"name": "B", "instances": a[:3]}],
        "draws": {"A": ["p1", "p2", "p3", "p4", "p5", "p6"], "B": ["p1", "p2", "p3"]},
        "labels": {"p1": "r", "p2": "r", "p3": "r", "p4": "r", "p5": "no_relation",
                   "p6": "r"},
        "exhaustive": [[f"q{k}", "r", f"e{k}", "d9"] for k in range(3)],
    }
    code, out, err = run(tmp_path, capsys, problem, "estimate")
    assert code == 0, err
    a_rec, b_rec = (s["recall"]["joint"] for s in json.loads(out)["systems"])
    assert a_rec["estimate"] == 0 and a_rec["hi"] == 1.0
    # B found 3 of the pool's 5 true pairs: its recall is at most ν's upper end.
    assert b_rec["estimate"] == 0 and 0.6 < b_rec["hi"] < 1.0


def test_reweighted_schemes_are_flagged_and_entity_recall_says_what_it_is(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, PROBLEM, "estimate", "--schemes", "all")
    assert code == 0, err
    result = json.loads(out)
    assert set(result["systems"][0]["schemes"]) == {"instance", "predicate", "entity",
                                                    "entity_relation"}
    notes = result["scheme_notes"]
    assert notes["instance"]["reliable"] and not notes["instance"]["reweighted"]
    for s in ("predicate", "entity", "entity_relation"):
        assert notes[s]["reweighted"] and not notes[s]["reliable"] and notes[s]["note"]
    # PROBLEM's exhaustive sample names no subject: "entity" recall is instance recall.
    assert notes["entity"]["recall_of"] == notes["entity_relation"]["recall_of"] == "instance"
    assert "subject" in notes["entity"]["recall_note"]
    assert notes["predicate"]["recall_of"] == "predicate"
    a = result["systems"][0]
    # (From Ŷ0 alone: the instance scheme's simple recall.)
    assert a["schemes"]["entity"]["recall"]["joint"] == a["schemes"]["instance"]["recall"][
        "simple"]
    # With subject ids, entity recall is entity recall.
    named = {**PROBLEM, "exhaustive": [[*x, f"s{k}"] for k, x in
                                       enumerate(PROBLEM["exhaustive"])]}
    code, out, err = run(tmp_path, capsys, named, "estimate", "--schemes", "all")
    assert json.loads(out)["scheme_notes"]["entity"]["recall_of"] == "entity"


def test_the_distinct_estimator_from_the_command_line(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, PROBLEM, "estimate", "--estimator", "distinct")
    assert code == 0, err
    result = json.loads(out)
    assert result["estimator"] == "distinct"
    a = result["systems"][0]
    # A's pairs are all labelled: exact under either estimator.
    assert a["precision"]["joint"]["exact"]
    assert a["precision"]["joint"]["estimate"] == pytest.approx(2 / 3, abs=1e-6)
    code, out, _ = run(tmp_path, capsys, PROBLEM, "plan", "--system", "B",
                       "--estimator", "distinct")
    assert code == 0 and json.loads(out) == {"system": "B", "n": 0, "estimator": "distinct"}
    # With crowd answers: the soft labels and the correction's replicates, distinct too.
    crowd = json.loads(json.dumps(PROBLEM))
    crowd["answers"] = {"p1": [["w1", "per:title"], ["w2", "per:title"]],
                        "p2": [["w1", "no_relation"], ["w2", "per:title"]]}
    code, out, err = run(tmp_path, capsys, crowd, "estimate", "--estimator", "distinct")
    assert code == 0, err
    result = json.loads(out)
    assert result["estimator"] == "distinct" and result["crowd"]["answers"] == 4
    b = result["systems"][1]["precision"]["joint"]
    assert 0 <= b["lo"] <= b["estimate"] <= b["hi"] <= 1
