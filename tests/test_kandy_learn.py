"""KANDY learning harness: metrics, replay, supervision, settings, bad input."""
from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from nesybench.cli import main as cli_main
from nesybench.errors import NesyError
from nesybench.kandy.generate import generate
from nesybench.kandy.learn import metrics as M
from nesybench.kandy.learn.data import balanced_order, load_data
from nesybench.kandy.learn.models import CNN, ResNet50, build_model
from nesybench.kandy.learn.replay import ClassBalancedReservoir
from nesybench.kandy.learn.settings import SETTINGS, resolve_config, train
from nesybench.runs import CellContext
from processes import alive, hang_report

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """Easy tasks 0 and 10, 24 samples each (12/6/6), 32×32 pictures."""
    out = tmp_path_factory.mktemp("kandy") / "tiny"
    generate(ROOT / "curricula/kandy/easy.yaml", out, tasks=[0, 10], samples=24,
             render={"canvas": [32, 32]})
    return out


def _quick(model="mlp", setting="joint", **kw):
    base = dict(epochs=2, batch=4, lr=0.01, optim="sgd")
    if setting in ("task_incremental", "continual_online"):
        base["buffer"] = 8
    base.update(kw)
    return resolve_config(model, setting, **base)


# ----------------------------------------------------------------------------- metrics

A_HAND = np.array([[0.9, 0.6, 0.5],
                   [0.7, 0.8, 0.55],
                   [0.8, 0.6, 0.7]])


def test_metrics_against_hand_computation():
    assert M.average_accuracy(A_HAND, 0) == pytest.approx(0.9)
    assert M.average_accuracy(A_HAND, 2) == pytest.approx((0.8 + 0.6 + 0.7) / 3)
    # z=1: task 0 best so far 0.9, now 0.7 -> 0.2
    assert M.average_forgetting(A_HAND, 1) == pytest.approx(0.2)
    # z=2: task 0 best max(0.9, 0.7) - 0.8 = 0.1; task 1 best max(0.6, 0.8) - 0.6 = 0.2
    assert M.average_forgetting(A_HAND, 2) == pytest.approx(0.15)
    # BWT z=2: pairs (i=1,h=0): 0.7-0.9; (i=2,h=0): 0.8-0.9; (i=2,h=1): 0.6-0.8 -> -0.5/3
    assert M.backward_transfer_raw(A_HAND, 2) == pytest.approx(-0.5 / 3)
    assert M.backward_transfer(A_HAND, 2) == 0.0
    B = A_HAND.copy()
    B[2, 0], B[2, 1] = 1.0, 0.9          # (0.7-0.9)+(1.0-0.9)+(0.9-0.8) = 0.0 + ...
    assert M.backward_transfer(B, 2) == pytest.approx(max((-0.2 + 0.1 + 0.1) / 3, 0.0))
    # FWT z=2: pairs (j=0,h=1): 0.6-.5; (0,2): 0.5-.5; (1,2): 0.55-.5 -> 0.15/3
    assert M.forward_transfer(A_HAND, 2) == pytest.approx(0.15 / 3)
    assert M.forward_transfer(A_HAND, 1) == pytest.approx(0.1)
    assert math.isnan(M.average_forgetting(A_HAND, 0))
    assert math.isnan(M.forward_transfer(A_HAND, 0))
    ot = M.over_time(A_HAND)
    assert ot["avg_acc"][1] == pytest.approx(0.75)


def test_balanced_and_plain_accuracy():
    pred = [1, 1, 0, 0, 0, 0]
    lab = [1, 0, 0, 0, 0, 0]
    # TP 1, FN 0, TN 4, FP 1
    assert M.balanced_accuracy(pred, lab) == pytest.approx(0.5 * 1 + 0.5 * 4 / 5)
    assert M.plain_accuracy(pred, lab) == pytest.approx(5 / 6)
    assert M.balanced_accuracy([0, 0], [0, 0]) == 1.0


def test_threshold_tuning():
    scores = [0.1, 0.2, 0.3, 0.35, 0.4, 0.9]
    labels = [0, 0, 0, 1, 1, 1]
    tau = M.tune_threshold(scores, labels)
    assert 0.3 < tau <= 0.35
    assert M.balanced_accuracy(np.array(scores) >= tau, labels) == 1.0
    # one class only: the default
    assert M.tune_threshold([0.2, 0.7], [1, 1]) == 0.5
    # 0.5 is kept when it is as good as anything
    assert M.tune_threshold([0.1, 0.9], [0, 1]) == 0.5


# ----------------------------------------------------------------------------- replay, sampling

def test_reservoir_class_balance():
    buf = ClassBalancedReservoir(40, seed=3)
    # a stream dominated by one class: 1000 of (0, 0), 100 of (0, 1), 10 of (1, 1)
    stream = [(0, 0)] * 1000 + [(0, 1)] * 100 + [(1, 1)] * 10
    rng = np.random.default_rng(0)
    for i in rng.permutation(len(stream)):
        buf.add(int(i), stream[i])
    c = buf.counts()
    assert len(buf) == 40
    assert c[(1, 1)] == 10                 # the small class keeps everything
    assert abs(c[(0, 0)] - c[(0, 1)]) <= 1  # the large ones share the rest evenly
    assert all(stream[i] == cls for i, cls in zip(buf.items, buf.classes))
    assert len(set(buf.sample(100))) == 40
    assert ClassBalancedReservoir(0).add(1, "a") is False


def test_balanced_order():
    labels = torch.tensor([1, 0, 0, 0, 0, 0, 0])
    order = balanced_order(labels, torch.Generator().manual_seed(0))
    counts = Counter(labels[order].tolist())
    assert counts[0] == counts[1] == 6
    assert set(order.tolist()) == set(range(7))


# ----------------------------------------------------------------------------- models

def test_model_shapes_and_weights(tmp_path):
    x = torch.rand(2, 3, 32, 32)
    assert build_model("mlp", size=32, heads=3)(x).shape == (2, 3)
    cnn = CNN(heads=3)
    assert cnn(x).shape == (2, 3)
    assert cnn.trunk[-3].in_features == 256 * 5 * 5      # the paper's 5×5 map, dense 4096
    res = ResNet50(heads=2).eval()
    assert res(x).shape == (2, 2)
    n = sum(p.numel() for p in res.trunk.parameters())
    assert n == 23_508_032                                  # ResNet-50 without its classifier
    # broadcast views keep the files tiny (one stored element per tensor)
    sd = {k: torch.ones((), dtype=v.dtype).expand(v.shape)
          for k, v in res.trunk.state_dict().items()}
    sd["fc.weight"] = torch.zeros(1000, 2048)          # an ImageNet classifier is ignored
    good = tmp_path / "good.pt"
    torch.save(sd, good)
    h = build_model("resnet50_h", size=32, heads=2, weights=str(good))
    assert all(not p.requires_grad for p in h.trunk.parameters())
    assert float(h.trunk.conv1.weight.mean()) == 1.0
    bad = tmp_path / "bad.pt"
    sd["conv1.weight"] = torch.zeros(64, 3, 3, 3)
    torch.save(sd, bad)
    with pytest.raises(NesyError, match="conv1.weight.*shape"):
        build_model("resnet50_h", size=32, heads=2, weights=str(bad))
    with pytest.raises(NesyError, match="needs a weights file"):
        build_model("resnet50_h", size=32, heads=2)
    with pytest.raises(NesyError, match="unknown model"):
        build_model("vgg", size=32, heads=2)


def test_weights_read_through_the_door(tmp_path, monkeypatch, tiny, capsys):
    """--weights is read as one bounded input file, its zip entries' declared sizes checked
    before torch decompresses anything; every refusal is one error line (exit 2), no --out."""
    import nesybench.kandy.learn.models as models
    bomb = ROOT / "tests/data/fuzz/bddoia/inputs-zip-bomb.pt"     # 16 KB declaring 16 MB
    with pytest.raises(NesyError, match="decompression bomb") as exc:
        build_model("resnet50_h", size=32, heads=2, weights=str(bomb))
    assert exc.value.field == "weights"
    with pytest.raises(NesyError, match="not a regular file"):
        build_model("resnet50_h", size=32, heads=2, weights="/dev/zero")
    big = tmp_path / "big.pt"
    torch.save({"w": torch.zeros(1000)}, big)
    monkeypatch.setattr(models, "MAX_WEIGHTS_BYTES", 1000)
    with pytest.raises(NesyError, match="over the limit"):
        build_model("resnet50_h", size=32, heads=2, weights=str(big))
    monkeypatch.undo()
    for weights in (bomb, "/dev/zero"):
        out = tmp_path / "o"
        rc = cli_main(["kandy", "train", str(tiny), "--model", "resnet50_h", "--weights",
                       str(weights), "--epochs", "1", "--out", str(out), "-q"])
        err = capsys.readouterr().err
        assert rc == 2 and err.startswith("nesybench: error:") and err.count("\n") == 1, err
        assert not out.exists()


# ----------------------------------------------------------------------------- data + settings

def test_data_loading(tiny):
    d = load_data(tiny, size=16)
    assert d.task_ids == [0, 10]
    tr = d.splits["train"]
    assert tr.images.dtype == torch.uint8 and tr.images.shape == (24, 3, 16, 16)
    assert d.describe()["original_size"] == 32
    assert len(load_data(tiny, size=None, tasks=[10]).splits["test"]) == 6


@pytest.mark.parametrize("setting", SETTINGS)
def test_each_setting_runs(tiny, setting):
    d = load_data(tiny, size=16)
    logged = []
    res = train(d, _quick("mlp", setting), seed=5, log=lambda n, v, s: logged.append((n, s, v)))
    rows = 2 if setting in ("task_incremental", "continual_online") else 1
    assert res.A.shape == (rows, 2) and res.A_micro.shape == (rows, 2)
    assert np.all((res.A >= 0) & (res.A <= 1))
    fm = res.final_metrics()
    assert fm["avg_acc"] == pytest.approx(res.A[-1].mean())
    assert {n for n, _, _ in logged} >= {"train_loss", "A_t00", "A_t10"}
    if rows == 2:
        assert fm["fwt"] == pytest.approx(res.A[0, 1] - 0.5)
        # by hand from the accuracy matrix: one earlier task, one pair
        assert fm["forgetting"] == pytest.approx(res.A[0, 0] - res.A[1, 0])
        assert fm["bwt"] == pytest.approx(max(res.A[1, 0] - res.A[0, 0], 0.0))
    if setting == "continual_online":
        assert res.config["epochs"] == 1


def test_same_seed_same_numbers(tiny):
    d = load_data(tiny, size=16)
    a = train(d, _quick("mlp", "task_incremental"), seed=11)
    b = train(d, _quick("mlp", "task_incremental"), seed=11)
    assert np.array_equal(a.A, b.A) and a.losses == b.losses


def test_cnn_joint_trains(tiny):
    res = train(load_data(tiny, size=32),
                _quick("cnn", "joint", epochs=1, batch=12), seed=0)
    assert res.A.shape == (1, 2) and res.train_samples > 0
    with pytest.raises(NesyError, match="at least 30"):
        train(load_data(tiny, size=16), _quick("cnn", "joint"), seed=0)


def _copy_with_supervision(src: Path, dst: Path, unsup_rows, flip: bool, task_none=None):
    shutil.copytree(src, dst)
    path = dst / "train" / "annotations.csv"
    rows = list(csv.DictReader(open(path, newline="", encoding="utf-8")))
    for i, r in enumerate(rows):
        if i in unsup_rows or (task_none is not None and int(r["task_id"]) == task_none):
            r["supervised"] = "0"
            if flip:
                r["label"] = str(1 - int(r["label"]))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_unsupervised_labels_are_ignored(tiny, tmp_path):
    """γ < 1: flipping the labels of unsupervised samples changes nothing; a task without
    any supervised sample is left untrained instead of crashing."""
    unsup = {0, 3, 5, 14, 20}
    _copy_with_supervision(tiny, tmp_path / "a", unsup, flip=False)
    _copy_with_supervision(tiny, tmp_path / "b", unsup, flip=True)
    for setting in ("joint", "task_incremental"):
        ra = train(load_data(tmp_path / "a", size=16, verify=False),
                   _quick("mlp", setting, epochs=1), seed=2)
        rb = train(load_data(tmp_path / "b", size=16, verify=False),
                   _quick("mlp", setting, epochs=1), seed=2)
        assert np.array_equal(ra.A, rb.A) and ra.losses == rb.losses
    _copy_with_supervision(tiny, tmp_path / "c", set(), flip=False, task_none=10)
    for setting in SETTINGS:
        rc = train(load_data(tmp_path / "c", size=16, verify=False),
                   _quick("mlp", setting, epochs=1, thresholds="seen"), seed=2)
        assert rc.untrained_tasks == [10]
        assert rc.thresholds[-1, 1] == 0.5


def test_cell_function_and_cli(tiny, tmp_path, capsys):
    from nesybench.kandy.learn.cells import train_cell

    ctx = CellContext("c0", {}, 1, tmp_path / "art")
    (tmp_path / "art").mkdir()
    out = train_cell({"dataset": str(tiny), "model": "mlp", "setting": "continual_online",
                      "size": 16, "batch": 4, "buffer": 4}, 1, ctx)
    assert 0 <= out["avg_acc"] <= 1 and out["input_size"] == 16
    saved = json.loads((tmp_path / "art" / "result.json").read_text())
    assert len(saved["A"]) == 2 and saved["config"]["supervision"] == "ignore"
    assert any(n == "A_t10" and s == 1 for n, s, _ in ctx._curves)

    study = tmp_path / "study"
    rc = cli_main(["kandy", "train", str(tiny), "--model", "mlp", "--setting",
                   "joint,continual-online", "--epochs", "1", "--batch", "4", "--seeds", "2",
                   "--size", "16", "--out", str(study), "--workers", "0", "-q", "--json"])
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["model"], r["setting"], r["seeds"]) for r in rows} == {
        ("mlp", "joint", 2), ("mlp", "continual_online", 2)}
    assert cli_main(["kandy", "table", str(study)]) == 0
    assert cli_main(["kandy", "plot", str(study), "--out", str(tmp_path / "plots")]) == 0
    assert (tmp_path / "plots" / "A_mlp_continual_online.png").exists()


# ----------------------------------------------------------------------------- bad input

def test_bad_input(tiny, tmp_path, capsys):
    with pytest.raises(NesyError, match="not a generated KANDY curriculum"):
        load_data(tmp_path)
    old = tmp_path / "old"
    shutil.copytree(tiny, old, ignore=shutil.ignore_patterns("*.png"))
    man = json.loads((old / "manifest.json").read_text())
    man["version"] = "0.9"
    (old / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(NesyError, match="version '0.9' is not supported"):
        load_data(old)
    with pytest.raises(NesyError, match="task index 7 out of range"):
        load_data(tiny, tasks=[0, 7])
    with pytest.raises(NesyError, match="unknown setting"):
        resolve_config("cnn", "semi_supervised")
    with pytest.raises(NesyError, match="unknown model"):
        resolve_config("vgg16", "joint")
    cases = [
        ["kandy", "train", str(tmp_path), "--out", str(tmp_path / "s1")],
        ["kandy", "train", str(old), "--out", str(tmp_path / "s2")],
        ["kandy", "train", str(tiny), "--tasks", "0,7", "--out", str(tmp_path / "s3")],
        ["kandy", "train", str(tiny), "--setting", "nope", "--out", str(tmp_path / "s4")],
        ["kandy", "train", str(tiny), "--model", "vgg16", "--out", str(tmp_path / "s5")],
        ["kandy", "train", str(tiny), "--model", "resnet50_h", "--weights",
         str(tmp_path / "missing.pt"), "--out", str(tmp_path / "s6")],
        ["kandy", "ilp-run", str(tiny), "--aleph", str(tmp_path / "no_aleph.pl")],
        ["kandy", "table", str(tmp_path)],
    ]
    env = os.environ.pop("NESYBENCH_ALEPH", None)
    try:
        cases.append(["kandy", "ilp-run", str(tiny)])
        for argv in cases:
            assert cli_main(argv) == 2, argv
            err = capsys.readouterr().err
            assert err.startswith("nesybench: error:") and err.count("\n") == 1, (argv, err)
    finally:
        if env is not None:
            os.environ["NESYBENCH_ALEPH"] = env
    assert not (tmp_path / "s1").exists()


def _classic_aleph() -> str | None:
    """NESYBENCH_ALEPH when it names the classic Aleph 5 file `ilp-run` drives (not the SWI
    pack's module layout, which `ilp-run` refuses with a message)."""
    env = os.environ.get("NESYBENCH_ALEPH")
    if not env or not Path(env).is_file():
        return None
    head = Path(env).read_text(encoding="utf-8", errors="replace")
    return None if ":- module(aleph" in head else env


@pytest.mark.skipif(_classic_aleph() is None,
                    reason="set NESYBENCH_ALEPH to the classic Aleph 5 aleph.pl (not the SWI "
                           "pack's module) to run Aleph for real")
def test_aleph_one_easy_task(tmp_path, capsys):
    data = tmp_path / "easy0"
    generate(ROOT / "curricula/kandy/easy.yaml", data, tasks=[0], images=False)
    study = tmp_path / "aleph"
    rc = cli_main(["kandy", "ilp-run", str(data), "--tasks", "0", "--timeout", "120",
                   "--out", str(study), "--workers", "0", "-q", "--json"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    (row,) = data["tasks"]
    assert row["task"] == 0 and not row["timed_out"] and not row["crashed"]
    assert row["balanced_accuracy"] == 1.0 and row["correct"] == 1.0


def test_aleph_crash_and_timeout_are_recorded(tiny, tmp_path):
    """A crashing or endless 'Aleph' is a row of its task (scored as the empty theory)."""
    from nesybench.kandy.learn.aleph import run_aleph_task

    crash = tmp_path / "crash.pl"
    crash.write_text("read_all(_) :- throw(boom).\ninduce.\nwrite_rules(_).\n")
    row = run_aleph_task(tiny, 0, crash, timeout=60, workdir=tmp_path / "w1")
    assert row["crashed"] and not row["timed_out"] and row["theory"] == ""
    assert row["recall"] == 0.0 and row["balanced_accuracy"] == 0.5
    loop = tmp_path / "loop.pl"
    loop.write_text("read_all(_).\ninduce :- repeat, fail.\nwrite_rules(_).\n")
    row = run_aleph_task(tiny, 0, loop, timeout=1.5, workdir=tmp_path / "w2")
    assert row["timed_out"] and not row["crashed"]
    with pytest.raises(NesyError, match="SWI pack version"):
        mod = tmp_path / "mod.pl"
        mod.write_text(":- module(aleph, [induce/1]).\nread_all(_).\ninduce.\n")
        run_aleph_task(tiny, 0, mod, timeout=5)


# ----------------------------------------------------------------------------- exit status

def test_train_exit_status_when_runs_fail(tiny, tmp_path, capsys):
    """A sweep where some runs failed exits 1 with a "k of n runs failed" line; the other
    runs still finish (--keep-going, the default) and are in the table."""
    study = tmp_path / "study"
    argv = ["kandy", "train", str(tiny), "--model", "mlp,cnn", "--setting", "joint",
            "--epochs", "1", "--batch", "4", "--seeds", "1", "--size", "16",
            "--out", str(study), "--workers", "0", "-q", "--json"]
    assert cli_main(argv) == 1
    cap = capsys.readouterr()
    rows = json.loads(cap.out)
    assert [(r["model"], r["seeds"]) for r in rows] == [("mlp", 1)]
    assert "1 of 2 runs failed: model=cnn, setting=joint" in cap.err
    assert "at least 30" in cap.err
    # a re-run resumes: the failed run is tried again, fails again, still exit 1
    assert cli_main(argv) == 1
    capsys.readouterr()
    # --fail-fast stops at the first failed run, same exit status
    argv2 = argv[:]
    argv2[argv2.index("mlp,cnn")] = "cnn,mlp"
    argv2[argv2.index(str(study))] = str(tmp_path / "ff")
    assert cli_main(argv2 + ["--fail-fast"]) == 1
    err = capsys.readouterr().err
    assert "1 of 2 runs failed" in err
    # all good: exit 0
    ok = argv[:]
    ok[ok.index("mlp,cnn")] = "mlp"
    ok[ok.index(str(study))] = str(tmp_path / "ok")
    assert cli_main(ok) == 0


def test_weights_are_for_resnet50_h_runs_only(tiny, tmp_path):
    """--weights given for a sweep with resnet50_h does not fail its other models' runs."""
    from nesybench.kandy.learn.cells import train_cell

    (tmp_path / "art").mkdir()
    ctx = CellContext("c0", {}, 1, tmp_path / "art")
    out = train_cell({"dataset": str(tiny), "model": "mlp", "setting": "joint", "size": 16,
                      "epochs": 1, "batch": 4, "weights": str(tmp_path / "w.pt")}, 1, ctx)
    assert 0 <= out["avg_acc"] <= 1


def test_ilp_run_exit_status_when_aleph_crashes(tiny, tmp_path, capsys):
    crash = tmp_path / "crash.pl"
    crash.write_text("read_all(_) :- throw(boom).\ninduce.\nwrite_rules(_).\n")
    rc = cli_main(["kandy", "ilp-run", str(tiny), "--aleph", str(crash), "--tasks", "0,10",
                   "--timeout", "60", "--out", str(tmp_path / "s"), "--workers", "0", "-q",
                   "--json"])
    assert rc == 1
    cap = capsys.readouterr()
    assert len(json.loads(cap.out)["tasks"]) == 2
    assert "2 of 2 runs failed: encoding=nat, bk=mid, task=0; encoding=nat, bk=mid, task=10" \
        in cap.err


# ----------------------------------------------------------------------------- verification

def test_dataset_verified_against_manifest(tiny, tmp_path, capsys):
    """A truncated annotations.csv, an edited PNG or a missing file is refused before
    training (one line naming the file, exit 2, no study written); --no-verify accepts a
    deliberate edit."""
    trunc = tmp_path / "trunc"
    shutil.copytree(tiny, trunc)
    ann = trunc / "train" / "annotations.csv"
    lines = ann.read_text(encoding="utf-8").splitlines(keepends=True)
    ann.write_text("".join(lines[:-3]), encoding="utf-8")
    with pytest.raises(NesyError, match="sha256 differs") as err:
        load_data(trunc, size=16)
    assert err.value.file.endswith("train/annotations.csv")
    base = ["--model", "mlp", "--epochs", "1", "--batch", "4", "--seeds", "1", "--size", "16",
            "--workers", "0", "-q"]
    assert cli_main(["kandy", "train", str(trunc), "--out", str(tmp_path / "s1"), *base]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "train/annotations.csv" in err and "--no-verify" in err
    assert not (tmp_path / "s1").exists()
    # the manifest's digest updated but the split sizes not: the row count is what fails
    man = json.loads((trunc / "manifest.json").read_text())
    from nesybench.io import sha256_file
    man["files"]["train/annotations.csv"] = sha256_file(ann)
    (trunc / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(NesyError, match=r"task \d+ has \d+ train rows, the manifest says"):
        load_data(trunc, size=16)
    assert cli_main(["kandy", "ilp-run", str(trunc), "--aleph", str(tmp_path / "a.pl"),
                     "--out", str(tmp_path / "s2")]) == 2
    # a deliberate edit: --no-verify trains on it
    assert cli_main(["kandy", "train", str(trunc), "--out", str(tmp_path / "s3"), *base,
                     "--no-verify"]) == 0
    capsys.readouterr()
    png = tmp_path / "png"
    shutil.copytree(tiny, png)
    victim = sorted((png / "test").rglob("*.png"))[0]
    victim.write_bytes(victim.read_bytes()[:-10])
    with pytest.raises(NesyError, match="sha256 differs") as err:
        load_data(png, size=16)
    assert err.value.file == str(victim)
    victim.unlink()
    with pytest.raises(NesyError, match="missing") as err:
        load_data(png, size=16)
    assert len(load_data(tiny, size=16).splits["train"]) == 24


# ----------------------------------------------------------------------------- Aleph processes

def _swipl_descendants(root: int) -> list[int]:
    """Live swipl processes below ``root`` (children, grandchildren...)."""
    parent, name = {}, {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            comm, rest = stat.split("(", 1)[1].rsplit(")", 1)
            fields = rest.split()
            if fields[0] != "Z":
                parent[int(d.name)], name[int(d.name)] = int(fields[1]), comm
    out = []
    for pid in parent:
        p = pid
        while p in parent and p != root:
            p = parent[p]
        if p == root and "swipl" in name[pid]:
            out.append(pid)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "?"


def _wait_for(pred, limit: float = 60.0):
    import time

    end = time.monotonic() + limit
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    return pred()


@pytest.mark.timing
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc")
@pytest.mark.parametrize("workers,sig", [(0, "SIGINT"), (1, "SIGTERM")])
def test_ilp_run_signal_leaves_no_swipl(tiny, tmp_path, workers, sig):
    """Ctrl-C / SIGTERM on `kandy ilp-run` mid-search: no swipl (Aleph) process survives."""
    import signal
    import subprocess
    import sys

    loop = tmp_path / "loop_aleph.pl"
    loop.write_text("read_all(_).\ninduce :- repeat, fail.\nwrite_rules(_).\n")
    study = tmp_path / "study"
    # The command starts as from a terminal, with SIGINT at its default: a suite run in the
    # background (`cmd &`, nohup) passes SIGINT on ignored, and a process that starts with it
    # ignored rightly stays deaf to Ctrl-C. faulthandler: a command that does not stop is
    # sent SIGABRT and prints every thread's stack, so that a hang fails with where it hung.
    proc = subprocess.Popen([sys.executable, "-m", "nesybench", "kandy", "ilp-run", str(tiny),
                             "--aleph", str(loop), "--tasks", "0", "--timeout", "600",
                             "--workers", str(workers), "--out", str(study), "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    found: list[int] = []
    try:
        found = _wait_for(lambda: _swipl_descendants(proc.pid))
        assert found, "swipl never started"
        commands = [_cmdline(p) for p in found]
        proc.send_signal(getattr(signal, sig))
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 60 s after {sig} (swipl: {commands}); "
                        f"{hang_report(proc)}")
        assert proc.returncode != 0
        assert _wait_for(lambda: not any(alive(p) for p in found), 10.0), \
            f"left running: {[p for p in found if alive(p)]}"
    finally:
        for p in found:
            if alive(p):
                os.kill(p, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


def test_empty_aleph_theory_is_a_result(tiny, tmp_path):
    """Aleph that learns nothing (write_rules/1 fails on an empty theory) gives a row scored
    as the empty theory: every test sample negative, balanced accuracy 0.5, not a crash."""
    from nesybench.kandy.learn.aleph import run_aleph_task

    empty = tmp_path / "empty.pl"
    empty.write_text("read_all(_).\ninduce.\nwrite_rules(_) :- fail.\n")
    row = run_aleph_task(tiny, 0, empty, timeout=60, workdir=tmp_path / "w")
    assert not row["crashed"] and not row["timed_out"] and row["empty_theory"]
    assert row["theory"] == "" and row["tp"] == 0 and row["fp"] == 0
    assert row["balanced_accuracy"] == 0.5



# ----------------------------------------------------------------------------- honest output

def _strict_json(text: str):
    def bad(token):
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=bad)


def test_json_is_strict_and_one_seed_has_no_spread(tiny, tmp_path, capsys):
    """--json never prints NaN (null instead); one seed's sd is unknown: null in JSON,
    "(n=1)" in the table, never "± 0.00"."""
    study = tmp_path / "study"
    argv = ["kandy", "train", str(tiny), "--model", "mlp", "--setting", "joint",
            "--epochs", "1", "--batch", "4", "--seeds", "1", "--size", "16",
            "--out", str(study), "--workers", "0", "-q"]
    assert cli_main(argv + ["--json"]) == 0
    (row,) = _strict_json(capsys.readouterr().out)
    assert row["seeds"] == 1 and row["avg_acc_sd"] is None and row["forgetting"] is None
    assert cli_main(["kandy", "table", str(study)]) == 0
    out = capsys.readouterr().out
    assert "(n=1)" in out and "± 0.00" not in out
    assert cli_main(["kandy", "table", str(study), "--json"]) == 0
    _strict_json(capsys.readouterr().out)


def test_study_conflict_names_an_existing_option(tiny, tmp_path, capsys):
    """Re-running into a study folder with another configuration is refused with an option
    the command has (--force-new), and that option works."""
    study = tmp_path / "study"
    argv = ["kandy", "train", str(tiny), "--model", "mlp", "--setting", "joint",
            "--batch", "4", "--seeds", "1", "--size", "16", "--out", str(study),
            "--workers", "0", "-q", "--json"]
    assert cli_main(argv + ["--epochs", "1"]) == 0
    capsys.readouterr()
    assert cli_main(argv + ["--epochs", "2"]) == 2
    err = capsys.readouterr().err
    opts = set(re.findall(r"(--[a-z][a-z-]+)", err))
    assert opts == {"--force-new", "--out"}, err
    assert cli_main(argv + ["--epochs", "2", "--force-new"]) == 0
    capsys.readouterr()


def test_pack_aleph_skips_not_fails(tmp_path, monkeypatch):
    """NESYBENCH_ALEPH pointing at the SWI pack's module file: the real-Aleph test skips."""
    pack = tmp_path / "aleph.pl"
    pack.write_text(":- module(aleph, [induce/1, read_all/1]).\n")
    monkeypatch.setenv("NESYBENCH_ALEPH", str(pack))
    assert _classic_aleph() is None
    classic = tmp_path / "aleph_orig.pl"
    classic.write_text("read_all(_).\ninduce.\n")
    monkeypatch.setenv("NESYBENCH_ALEPH", str(classic))
    assert _classic_aleph() == str(classic)


# ----------------------------------------------------------------------------- stream order

def test_online_stream_in_file_order(tiny):
    """CONTINUAL-ONLINE streams each task's supervised samples in annotations.csv order (as
    the reference implementation); shuffle=True opts into a random order."""
    from nesybench.kandy.learn.settings import _Trainer

    d = load_data(tiny, size=16)
    tr = d.splits["train"]
    seen = []
    cfg = _quick("mlp", "continual_online")
    t = _Trainer(d, cfg, 3, False, None)
    for task in d.task_ids:
        order = t.task_epoch(task)
        assert order.tolist() == tr.supervised_indices(task).tolist()
        seen.append(order)
    files = [tr.files[i] for o in seen for i in o.tolist()]
    assert files == [f for f, s in zip(tr.files, tr.supervised.tolist()) if s]
    shuffled = _Trainer(d, _quick("mlp", "continual_online", shuffle=True), 3, False, None)
    order = shuffled.task_epoch(d.task_ids[0])
    assert sorted(order.tolist()) == tr.supervised_indices(d.task_ids[0]).tolist()
    assert order.tolist() != sorted(order.tolist())
    # the CLI flag reaches the run
    assert resolve_config("mlp", "continual_online", shuffle=True).shuffle is True


# ----------------------------------------------------------------------------- strategies

def _stream(d, strategy, between=None, **kw):
    """Train an MLP on the two tasks one after the other with ``strategy``; ``between(tr,
    model, st)`` runs after the first task. Returns (trainer, model, strategy)."""
    from nesybench.kandy.learn.settings import _optimizer, _Trainer
    from nesybench.kandy.learn.strategies import make_strategy

    cfg = _quick("mlp", "task_incremental", strategy=strategy, **kw)
    torch.manual_seed(0)
    tr = _Trainer(d, cfg, 0, False, None)
    model = tr.new_model(2)
    head_of = {t: j for j, t in enumerate(d.task_ids)}
    opt = _optimizer(model, cfg)
    st = make_strategy(strategy, tr, model, head_of)
    for z, t in enumerate(d.task_ids):
        st.begin_task(t)
        for _ in range(cfg.epochs):
            tr.run_epoch(model, opt, tr.task_epoch(t), head_of, st)
        st.end_task(t)
        if z == 0 and between is not None:
            between(tr, model, st)
    return tr, model, st


@pytest.mark.parametrize("strategy", ["naive", "replay", "ewc", "ewc-online", "lwf", "agem",
                                      "der", "derpp"])
def test_each_strategy_runs_and_is_deterministic(tiny, strategy):
    d = load_data(tiny, size=16)
    a = train(d, _quick("mlp", "task_incremental", strategy=strategy), seed=4)
    b = train(d, _quick("mlp", "task_incremental", strategy=strategy), seed=4)
    assert a.A.shape == (2, 2) and np.array_equal(a.A, b.A) and a.losses == b.losses
    assert a.config["strategy"] == strategy and "forgetting" in a.final_metrics()


def test_replay_strategy_is_the_previous_replay(tiny):
    """strategy=replay is the default and the paper's CBRS replay; naive differs from it."""
    d = load_data(tiny, size=16)
    r = train(d, _quick("mlp", "task_incremental"), seed=4)
    rr = train(d, _quick("mlp", "task_incremental", strategy="replay"), seed=4)
    n = train(d, _quick("mlp", "task_incremental", strategy="naive"), seed=4)
    assert r.config["strategy"] == "replay" and r.losses == rr.losses
    assert n.losses != r.losses and n.train_samples < r.train_samples


def test_ewc_penalty_grows_with_fisher_weighted_drift(tiny):
    d = load_data(tiny, size=16)
    seen = {}

    def check(tr, model, st):
        params = st.params()
        assert st.penalty().item() == 0.0                    # at θ* no penalty
        F = [f.clone() for f in st.anchors[0][0]]
        flat = torch.cat([f.flatten() for f in F])
        assert (flat >= 0).all() and flat.max() > 0
        # Fisher = mean squared per-sample gradient, by hand on the first parameter
        with torch.no_grad():
            hi = int(torch.argmax(F[0].flatten()))
            lo = int(torch.argmin(F[0].flatten()))
        pens = []
        for eps in (0.1, 0.2):
            with torch.no_grad():
                params[0].view(-1)[hi] += eps
            pens.append(st.penalty().item())
            expect = 0.5 * st.cfg.ewc_lambda * float(F[0].view(-1)[hi]) * eps ** 2
            assert pens[-1] == pytest.approx(expect, rel=1e-4)
            with torch.no_grad():
                params[0].view(-1)[hi] -= eps
        assert pens[1] == pytest.approx(4 * pens[0], rel=1e-4)   # quadratic in the drift
        with torch.no_grad():
            params[0].view(-1)[lo] += 0.2
        low = st.penalty().item()
        with torch.no_grad():
            params[0].view(-1)[lo] -= 0.2
        assert low < pens[1]           # the same drift where the Fisher is smaller costs less
        seen["ok"] = True

    _stream(d, "ewc", between=check, ewc_lambda=50.0)
    assert seen


def test_lwf_distils_the_old_model(tiny):
    """The LwF term is λ·T²·KL(σ(old/T) ‖ σ(new/T)) on the current inputs over the heads of
    the tasks learned so far: 0 while the model is the old one, positive once it has moved
    on the new task, and descending it pulls those heads back to the old outputs."""
    d = load_data(tiny, size=16)
    idx = d.splits["train"].task_indices(10)
    x = d.splits["train"].batch(idx, "cpu")
    at_snapshot = {}

    def check(tr, model, st):
        assert st.learned == [0]
        loss, _ = st.extra_loss(idx, x, model(x))
        at_snapshot["kd"] = float(loss)
        at_snapshot["old"] = st.old

    _, model, st = _stream(d, "lwf", between=check, lr=0.1, lwf_lambda=2.0,
                           lwf_temperature=3.0)
    assert at_snapshot["kd"] == pytest.approx(0.0, abs=1e-6)
    st.old, st.learned = at_snapshot["old"], [0]      # the state while task 10 was learned
    out = model(x)
    loss, _ = st.extra_loss(idx, x, out)
    with torch.no_grad():
        old = st.old(x)[:, :1]
    p, q = torch.sigmoid(old / 3.0), torch.sigmoid(out[:, :1].detach() / 3.0)
    kl = (p * torch.log(p / q) + (1 - p) * torch.log((1 - p) / (1 - q))).mean()
    assert float(loss) == pytest.approx(2.0 * 9.0 * float(kl), rel=1e-3) and float(loss) > 0
    before = float(((out[:, 0] - old[:, 0]) ** 2).mean())
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for _ in range(20):
        opt.zero_grad()
        st.extra_loss(idx, x, model(x))[0].backward()
        opt.step()
    with torch.no_grad():
        after = float(((model(x)[:, 0] - old[:, 0]) ** 2).mean())
    assert after < before


def test_agem_projection_never_conflicts_with_memory(tiny):
    from nesybench.kandy.learn.strategies import project_agem

    g, ref = torch.tensor([1.0, -2.0]), torch.tensor([0.0, 1.0])
    out = project_agem(g, ref)
    assert torch.allclose(out, torch.tensor([1.0, 0.0])) and float(out @ ref) >= 0
    assert torch.equal(project_agem(torch.tensor([1.0, 2.0]), ref), torch.tensor([1.0, 2.0]))
    d = load_data(tiny, size=16)
    _, _, st = _stream(d, "agem", lr=0.05)
    assert st.dots, "no step used the memory"
    assert any(before < 0 for before, _ in st.dots)           # conflicts happened ...
    for before, after in st.dots:                              # ... and were projected away
        assert after >= -1e-5 * max(1.0, abs(before))
        if before >= 0:
            assert after == pytest.approx(before, rel=1e-5)


@pytest.mark.parametrize("strategy", ["der", "derpp"])
def test_der_matches_stored_logits(tiny, strategy):
    d = load_data(tiny, size=16)

    def dist(model, st):
        idx = torch.tensor([i for i, _ in st.buffer.items])
        z = torch.stack([zz for _, zz in st.buffer.items])
        with torch.no_grad():
            return float(((model(d.splits["train"].batch(idx))) - z).pow(2).mean())

    def stored_logits_are_outputs(tr, model, st):
        assert len(st.buffer) and st.buffer.items[0][1].shape == (2,)

    _, m0, s0 = _stream(d, strategy, between=stored_logits_are_outputs, der_alpha=0.0,
                        der_beta=0.0)
    _, m1, s1 = _stream(d, strategy, der_alpha=1.0)
    assert [i for i, _ in s0.buffer.items] == [i for i, _ in s1.buffer.items]
    assert dist(m1, s1) < dist(m0, s1)     # logit matching keeps outputs near the stored ones


def test_strategy_axis_in_the_sweep(tiny, tmp_path, capsys):
    base = ["kandy", "train", str(tiny), "--model", "mlp", "--epochs", "1", "--batch", "4",
            "--seeds", "1", "--size", "16", "--buffer", "8", "--workers", "0", "-q"]
    assert cli_main(base + ["--setting", "task-incremental", "--strategy", "naive,ewc,der",
                            "--out", str(tmp_path / "s"), "--json"]) == 0
    rows = _strict_json(capsys.readouterr().out)
    assert [r["strategy"] for r in rows] == ["naive", "ewc", "der"]
    assert all(r["forgetting"] is not None and r["fwt"] is not None for r in rows)
    assert cli_main(["kandy", "table", str(tmp_path / "s")]) == 0
    assert "ewc" in capsys.readouterr().out
    assert cli_main(base + ["--setting", "joint", "--strategy", "ewc",
                            "--out", str(tmp_path / "j")]) == 2
    assert "continual settings" in capsys.readouterr().err
    assert cli_main(base + ["--setting", "task-incremental", "--strategy", "si",
                            "--out", str(tmp_path / "k")]) == 2


# ----------------------------------------------------------------------------- Aleph settings

def test_aleph_set_and_timeout_reach_aleph_and_the_results(tiny, tmp_path, capsys):
    """--aleph-set KEY=VALUE values are typed, written into the task's .b file over the
    supplementary's defaults and recorded with --timeout in the results; an unknown key or a
    bad value is one line and exit 2, before anything runs."""
    fake = tmp_path / "aleph.pl"      # reads the task's .b and prints the settings it got
    fake.write_text(":- dynamic setting/2.\nset(K, V) :- retractall(setting(K, _)), "
                    "assertz(setting(K, V)).\nmodeh(_, _).\nmodeb(_, _).\n"
                    "determination(_, _).\nread_all(S) :- atom_concat(S, '.b', B), "
                    "consult(B).\ninduce :- forall(setting(K, V), (write(set(K, V)), nl)).\n"
                    "write_rules(_) :- fail.\n")
    study = tmp_path / "s"
    argv = ["kandy", "ilp-run", str(tiny), "--aleph", str(fake), "--tasks", "0",
            "--timeout", "42", "--aleph-set", "clauselength=8", "--aleph-set", "minacc=0.75",
            "--aleph-set", "evalfn=coverage", "--aleph-set", "newvars=inf",
            "--out", str(study), "--workers", "0", "-q"]
    assert cli_main(argv + ["--json"]) == 0
    data = _strict_json(capsys.readouterr().out)
    (row,) = data["table"]
    assert row["timeout"] == 42.0
    assert row["settings"]["clauselength"] == 8 and row["settings"]["minacc"] == 0.75
    assert row["settings"]["nodes"] == 20000             # the supplementary's default kept
    assert data["tasks"][0]["timeout"] == 42.0
    (theory,) = list((study / "artifacts").rglob("theory.json"))
    rec = json.loads(theory.read_text())
    assert rec["timeout"] == 42.0 and rec["settings"]["evalfn"] == "coverage"
    got = set(rec["log_tail"].split())                   # what Aleph was told, as it read it
    assert {"set(clauselength,8)", "set(minacc,0.75)", "set(evalfn,coverage)",
            "set(newvars,inf)", "set(nodes,20000)"} <= got
    assert "set(clauselength,6)" not in got
    assert cli_main(["kandy", "table", str(study)]) == 0
    assert "timeout 42 s per task; Aleph settings: clauselength=8, minacc=0.75" \
        in capsys.readouterr().out
    for bad, msg in [("colour=red", "unknown Aleph setting 'colour'"),
                     ("clauselength=eight", "clauselength takes an integer in 1..1000"),
                     ("clauselength=0", "clauselength takes an integer"),
                     ("minacc=1.5", "minacc takes a finite number in [0.0, 1.0]"),
                     ("evalfn=magic", "evalfn takes one of coverage, compression"),
                     ("nodes", "takes KEY=VALUE"),
                     ("recordfile=/tmp/x", "unknown Aleph setting 'recordfile'")]:
        out = tmp_path / f"bad-{bad.split('=')[0]}"
        rc = cli_main(["kandy", "ilp-run", str(tiny), "--aleph", str(fake), "--tasks", "0",
                       "--aleph-set", bad, "--out", str(out), "--workers", "0", "-q"])
        err = capsys.readouterr().err
        assert rc == 2 and msg in err, (bad, err)
        assert len(err.strip().splitlines()) == 1 and not out.exists()
    rc = cli_main(["kandy", "ilp-run", str(tiny), "--aleph", str(fake), "--timeout", "0",
                   "--out", str(tmp_path / "t0"), "-q"])
    assert rc == 2 and "--timeout must be" in capsys.readouterr().err


# ----------------------------------------------------------------------------- ViT-16

@pytest.fixture
def one_thread():
    """One torch thread (as the sweep runner gives each cell): a transformer's many small
    matrix products are slower, not faster, on threads a loaded CPU cannot give."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_vit_shapes_parameters_and_determinism(one_thread):
    """The ViT-16 trunks: 16×16 patches + class token, ViT-B/16's 85.8 M trunk parameters,
    the same outputs for the same seed on the CPU, different ones for another seed."""
    from nesybench.kandy.learn.models import VIT_CONFIGS, ViT

    x = torch.rand(3, 3, 64, 64)
    torch.manual_seed(1)
    a = build_model("vit", size=64, heads=5).eval()
    assert a.trunk.conv_proj.kernel_size == (16, 16) and a.trunk.conv_proj.stride == (16, 16)
    assert a.trunk.encoder.pos_embedding.shape == (1, 4 * 4 + 1, 192)   # 16 patches + class
    assert a.trunk.class_token.shape == (1, 1, 192)
    assert len(a.trunk.encoder.layers) == 6
    out = a(x)
    assert out.shape == (3, 5) and torch.isfinite(out).all()
    torch.manual_seed(1)
    b = build_model("vit", size=64, heads=5).eval()
    assert torch.equal(b(x), out)
    torch.manual_seed(2)
    assert not torch.equal(build_model("vit", size=64, heads=5).eval()(x), out)
    # pre-norm: a block's LayerNorms come before attention and MLP, the residual is kept
    blk = a.trunk.encoder.layers.encoder_layer_0
    h = torch.rand(2, 17, 192)
    with torch.no_grad():
        y = blk.ln_1(h)
        y = h + blk.self_attention(y, y, y, need_weights=False)[0]
        assert torch.allclose(blk(h), y + blk.mlp(blk.ln_2(y)), atol=1e-6)
    # ViT-B/16 at 224×224: 14×14 patches, width 768, 12 blocks
    dim, depth, heads, mlp = VIT_CONFIGS["vit_b16"]
    assert (dim, depth, heads, mlp) == (768, 12, 12, 3072)
    big = ViT(224, 1, dim, depth, heads, mlp)
    assert big.trunk.encoder.pos_embedding.shape == (1, 197, 768)
    assert sum(p.numel() for p in big.trunk.parameters()) == 85_798_656
    with pytest.raises(NesyError, match="at least 16"):
        build_model("vit", size=8, heads=1)


def test_vit_trains_on_a_tiny_batch(one_thread):
    """A few Adam steps on 8 fixed pictures lower the loss well below its start."""
    torch.manual_seed(0)
    model = build_model("vit", size=32, heads=1)
    x = torch.rand(8, 3, 32, 32)
    y = torch.tensor([0, 1] * 4, dtype=torch.float32)
    x[y == 1, 0] += 0.5                                  # positives are redder
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    losses = []
    for _ in range(15):
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x)[:, 0], y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.1 * losses[0], losses
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_vit_in_every_setting_and_vit_h_weights(tiny, tmp_path, one_thread):
    """--model vit runs through train() like the other backbones (same seed, same numbers);
    vit_h loads a ViT-B/16 checkpoint (position embeddings resized from 224 to the input),
    freezes it, and refuses a wrong one."""
    d = load_data(tiny, size=32)
    cfg = dict(optim="adam", lr=1e-3, epochs=1, batch=6)
    a = train(d, _quick("vit", "task_incremental", **cfg), seed=3)
    b = train(d, _quick("vit", "task_incremental", **cfg), seed=3)
    assert a.A.shape == (2, 2) and np.array_equal(a.A, b.A) and a.losses == b.losses
    assert resolve_config("vit", "joint").lr == resolve_config("resnet50", "joint").lr
    from nesybench.kandy.learn.models import ViT, VIT_CONFIGS

    ref = ViT(224, 1, *VIT_CONFIGS["vit_b16"]).trunk.state_dict()
    sd = {k: torch.full((), 0.5, dtype=v.dtype).expand(v.shape) for k, v in ref.items()}
    sd = {k.replace(".mlp.0.", ".mlp.linear_1."): v for k, v in sd.items()}   # older names
    sd["heads.head.weight"] = torch.zeros(1000, 768)     # an ImageNet classifier is ignored
    good = tmp_path / "vit.pt"
    torch.save(sd, good)
    h = build_model("vit_h", size=32, heads=2, weights=str(good))
    assert h.trunk.encoder.pos_embedding.shape == (1, 5, 768)
    assert torch.allclose(h.trunk.encoder.pos_embedding, torch.tensor(0.5))
    assert all(not p.requires_grad for p in h.trunk.parameters())
    assert h(torch.rand(2, 3, 32, 32)).shape == (2, 2)
    sd["conv_proj.weight"] = torch.zeros(768, 3, 14, 14)
    bad = tmp_path / "bad.pt"
    torch.save(sd, bad)
    with pytest.raises(NesyError, match="conv_proj.weight.*shape"):
        build_model("vit_h", size=32, heads=2, weights=str(bad))
    with pytest.raises(NesyError, match="vit_h needs a weights file"):
        build_model("vit_h", size=32, heads=2)
    with pytest.raises(NesyError, match="only used by resnet50_h and vit_h"):
        build_model("vit", size=32, heads=2, weights=str(good))


# ----------------------------------------------------------------------------- augmentation

def test_augment_operations_are_seeded_and_do_what_they_say():
    from nesybench.kandy.learn.augment import augment, parse_augment

    assert parse_augment(None) == "" and parse_augment("all") == "crop,flip,jitter"
    assert parse_augment("jitter,crop,crop") == "crop,jitter"
    with pytest.raises(NesyError, match="unknown augmentation 'rotate'"):
        parse_augment("rotate")
    x = torch.rand(16, 3, 24, 24)
    g = lambda s: torch.Generator().manual_seed(s)  # noqa: E731
    assert augment(x, "", g(0)) is x                        # off: the batch itself
    flip = augment(x, "flip", g(0))
    mirrored = [bool(torch.equal(flip[i], x[i].flip(-1))) for i in range(16)]
    same = [bool(torch.equal(flip[i], x[i])) for i in range(16)]
    assert all(m or s for m, s in zip(mirrored, same)) and 0 < sum(mirrored) < 16
    crop = augment(x, "crop", g(0))
    assert crop.shape == x.shape
    # a crop is a shift of at most 24 // 8 = 3 px: the picture's centre 18×18 is inside it
    for i in range(16):
        hits = [(dy, dx) for dy in range(-3, 4) for dx in range(-3, 4)
                if torch.equal(crop[i, :, 3:21, 3:21], x[i, :, 3 + dy:21 + dy, 3 + dx:21 + dx])]
        assert hits, i
    assert not torch.equal(crop, x)
    jit = augment(x, "jitter", g(0))
    assert jit.min() >= 0 and jit.max() <= 1 and not torch.allclose(jit, x)
    assert (jit - x).abs().max() < 0.5                     # factors within 1 ± 0.1
    both = augment(x, "crop,flip,jitter", g(5))
    assert torch.equal(both, augment(x, "crop,flip,jitter", g(5)))
    assert not torch.equal(both, augment(x, "crop,flip,jitter", g(6)))


def test_augment_in_training_is_seeded_and_off_by_default(tiny, tmp_path, capsys):
    d = load_data(tiny, size=16)
    plain = train(d, _quick("mlp", "joint"), seed=4)
    assert plain.config["augment"] == ""
    a = train(d, _quick("mlp", "joint", augment="all"), seed=4)
    b = train(d, _quick("mlp", "joint", augment="crop,flip,jitter"), seed=4)
    assert a.config["augment"] == "crop,flip,jitter"
    assert a.losses == b.losses and np.array_equal(a.A, b.A)
    assert a.losses != plain.losses
    study = tmp_path / "s"
    base = ["kandy", "train", str(tiny), "--model", "mlp", "--setting", "joint", "--epochs",
            "1", "--batch", "4", "--seeds", "1", "--size", "16", "--workers", "0", "-q"]
    assert cli_main(base + ["--out", str(study), "--augment"]) == 0
    (res,) = list((study / "artifacts").rglob("result.json"))
    assert json.loads(res.read_text())["config"]["augment"] == "crop,flip,jitter"
    capsys.readouterr()
    assert cli_main(base + ["--out", str(tmp_path / "b"), "--augment", "blur"]) == 2
    assert "unknown augmentation 'blur'" in capsys.readouterr().err


def test_hard_large_and_vit_h_hyper_parameters_are_the_papers():
    """Spot checks against the supplementary's Table 4 (Hard-Large column, VIT (H) rows)."""
    c = resolve_config("cnn", "task-incremental", hparams="hard-large")
    assert (c.lr, c.optim, c.batch, c.epochs, c.buffer) == (1e-2, "sgd", 16, 10, 200)
    c = resolve_config("mlp", "continual_online", hparams="hard_large")
    assert (c.lr, c.optim, c.batch, c.epochs, c.buffer) == (1e-4, "adam", 16, 1, 0)
    c = resolve_config("vit_h", "independent", hparams="hard-large", weights="w.pt")
    assert (c.lr, c.optim, c.batch, c.epochs, c.buffer) == (1e-2, "sgd", 1, 10, 0)
    c = resolve_config("vit_h", "continual-online", hparams="hard", weights="w.pt")
    assert (c.lr, c.optim, c.batch, c.epochs, c.buffer) == (1e-2, "sgd", 1, 1, 0)
    c = resolve_config("mlp", "joint", hparams="hard-large")
    assert (c.lr, c.optim, c.batch, c.epochs) == (1e-4, "adam", 1, 10)
    with pytest.raises(NesyError, match="easy, hard or hard-large"):
        resolve_config("mlp", "joint", hparams="medium")
