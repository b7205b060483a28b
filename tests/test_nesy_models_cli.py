"""`nesybench nesy` commands end to end on a tiny data set, the sweep cell called directly,
and the bad-input paths (one error line, exit status 2, nothing written)."""
from __future__ import annotations

import json
import os

import pytest
import torch

from nesybench.cli import main
from nesybench.nesy.learn.cells import nesy_train_cell
from nesybench.runs import CellContext
from nesybench.runs.registry import resolve
from nesybench.shortcuts.task import load_task


@pytest.fixture(autouse=True)
def _env(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "nesy-cache"))
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def data(root, tmp_path_factory):
    from nesybench.shortcuts.generate import generate
    out = tmp_path_factory.mktemp("nesycli") / "xor"
    generate(load_task(root / "curricula/rs/xor.yaml"), out, seed=0,
             samples={"train": 16, "val": 8, "test": 8, "ood": 0})
    return out


def test_train_then_eval(root, data, tmp_path, capsys):
    run = tmp_path / "run"
    rc = main(["nesy", "train", str(root / "curricula/rs/xor.yaml"), "--model", "dpl",
               "--data", str(data), "--epochs", "1", "--batch", "8", "--threads", "1",
               "--concept-sup", "0.25", "--out", str(run), "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["supervised_entries"] == 4 * 3           # 4 of 16 examples, 3 bits each
    assert set(summary["results"]) == {"val", "test"}       # xor has no OOD worlds
    test = summary["results"]["test"]
    # independent recomputation from the written predictions (and the task's XOR knowledge)
    import csv
    with open(run / "predictions_test.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8
    hits = sum(r["label:y"] == r["pred_label:y"] for r in rows)
    assert test["metrics"]["label_accuracy"] == pytest.approx(hits / len(rows), abs=1e-12)
    for r in rows:        # the true label is the XOR of the true bits
        bits = [int(r[f"concept:b({i})"]) for i in (1, 2, 3)]
        assert int(r["label:y"]) == sum(bits) % 2
    assert test["shortcut"]["verdict"] in ("identity", "shortcut", "not_optimal")
    for f in ("config.json", "best.pt", "last.pt", "metrics.json", "predictions_test.csv",
              "plots/training.png"):
        assert (run / f).is_file(), f
    # the run trained on a data set outside its folder: config.json names it by an absolute
    # path, which eval follows only when told (--data); a run folder leads nowhere outside
    assert json.loads((run / "config.json").read_text())["task"] == "curricula/rs/xor.yaml"
    capsys.readouterr()
    assert main(["nesy", "eval", str(run), "--split", "test", "--json"]) == 2
    assert "--data" in capsys.readouterr().err
    rc = main(["nesy", "eval", str(run), "--data", str(data), "--split", "test", "--json"])
    assert rc == 0
    again = json.loads(capsys.readouterr().out)
    assert again["results"]["test"]["metrics"] == test["metrics"]    # best.pt = the run's model
    # the predictions file is in the `rs metrics` format
    assert main(["rs", "metrics", str(run / "predictions_test.csv"), "--json"]) == 0


def test_cell_function_directly(root, data, tmp_path):
    assert resolve("nesy.train") is nesy_train_cell
    ctx = CellContext("c1", {}, 3, tmp_path)
    out = nesy_train_cell({"task": "curricula/rs/xor.yaml", "data": str(data), "model": "cbm",
                           "epochs": 2, "batch": 8, "concept_sup": 0.0}, 3, ctx)
    assert {"test_label_accuracy", "test_concept_accuracy", "val_label_accuracy",
            "best_epoch"} <= set(out)
    assert [c for c in ctx._curves if c[0] == "loss"] and ctx._artifacts


@pytest.mark.parametrize("args, message", [
    (["nesy", "train", "curricula/rs/xor.yaml", "--model", "svm"], "unknown model"),
    (["nesy", "train", "nowhere.yaml"], "task file not found"),
    (["nesy", "train", "curricula/rs/xor.yaml", "--concept-sup", "1.5"], "fraction"),
    (["nesy", "train", "curricula/rs/xor.yaml", "--semantics", "magic"], "unknown semantics"),
    (["nesy", "eval", "."], "not a run folder"),
    (["nesy", "sweep", "curricula/rs/xor.yaml", "--models", "dpl,svm"], "unknown model"),
    (["nesy", "sweep", "curricula/rs/xor.yaml", "--concept-sup", "0,x"], "numbers"),
])
def test_bad_input_exits_2(root, monkeypatch, tmp_path, capsys, args, message):
    monkeypatch.chdir(root)
    args = [a if a != "." else str(tmp_path) for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bad_task_file_and_data(root, data, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nconcepts: [\n", encoding="utf-8")
    assert main(["nesy", "train", str(bad), "--data", str(data)]) == 2
    assert "YAML does not parse" in capsys.readouterr().err
    # a data set of another task: its columns do not match
    assert main(["nesy", "train", str(root / "curricula/rs/mnadd_half.yaml"), "--data",
                 str(data), "--out", str(tmp_path / "r")]) == 2
    assert "concepts" in capsys.readouterr().err and not (tmp_path / "r").exists()
    # the circuit's grounding budget reaches `nesy train`: one line, exit 2, nothing written
    os.environ["NESYBENCH_CACHE"] = str(tmp_path / "empty-cache")    # nothing compiled yet
    assert main(["nesy", "train", str(root / "curricula/rs/xor.yaml"), "--semantics",
                 "circuit", "--max-grounding-atoms", "5", "--data", str(data),
                 "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "--max-grounding-atoms 5" in err and not (tmp_path / "c").exists()


def test_sweep_inline_and_report(root, data, tmp_path, capsys):
    study = tmp_path / "study"
    rc = main(["nesy", "sweep", str(root / "curricula/rs/xor.yaml"), "--models", "dpl,nn",
               "--seeds", "1", "--concept-sup", "0", "--data", str(data), "--epochs", "1",
               "--batch", "8", "--executor", "inline", "--out", str(study), "--json"])
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert sorted(r["model"] for r in rows) == ["dpl", "nn"]
    assert all(r["status"] == "done" and "test_label_accuracy" in r for r in rows)
    assert main(["nesy", "report", str(study), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    dpl = next(r for r in rep["rows"] if r["model"] == "dpl")
    assert dpl["runs"] == 1 and sum(dpl["verdicts"].values()) == 1
    assert main(["nesy", "report", str(tmp_path)]) == 2


def test_sweep_with_sampled_inference_and_failed_cells(root, data, tmp_path, capsys):
    """`--inference sample:S` reaches every cell's configuration; a sweep whose cells fail
    exits 1 with one line per failed cell and the count."""
    study = tmp_path / "sampled"
    rc = main(["nesy", "sweep", str(root / "curricula/rs/xor.yaml"), "--models", "dpl",
               "--seeds", "1", "--data", str(data), "--epochs", "1", "--batch", "8",
               "--inference", "sample:64", "--executor", "inline", "--out", str(study),
               "--json"])
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["status"] for r in rows] == ["done"]
    runs = [json.loads(p.read_text()) for p in study.rglob("metrics.json")]
    assert len(runs) == 1 and runs[0]["config"]["inference"] == "sample:64"
    assert main(["nesy", "sweep", str(root / "curricula/rs/xor.yaml"), "--inference",
                 "sample:0"]) == 2
    # the data set of another task: every cell fails, the sweep says so and exits 1
    rc = main(["nesy", "sweep", str(root / "curricula/rs/mnadd_half.yaml"), "--models",
               "dpl,nn", "--seeds", "1", "--data", str(data), "--epochs", "1",
               "--executor", "inline", "--out", str(tmp_path / "bad"), "-q"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "2 of 2 cells failed" in err and err.count("failed:") == 3
