"""`nesybench rs import-bddoia`: BDD-OIA from a user's copy of rsbench's feature files (a tiny
synthetic copy made here), read back by `nesy train` through the feature-vector path.
Hostile copies are in the fuzz corpus (tests/data/fuzz/bddoia/, tests/test_fuzz.py)."""
from __future__ import annotations

import csv
import json
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from fuzzing import check_outcome, make_bddoia, run_cli  # noqa: E402

from nesybench.nesy.learn.data import NesyData  # noqa: E402
from nesybench.nesy.learn.nets import layout_of  # noqa: E402
from nesybench.shortcuts.datasets.bddoia import CONCEPTS  # noqa: E402
from nesybench.shortcuts.task import load_task  # noqa: E402

DRIVING = "curricula/rs/driving.yaml"


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    task = load_task(DRIVING)
    names = [v.name for v in task.variables]

    def actions(c):   # the driving knowledge's actions of rsbench-ordered concepts
        return list(task.labels_of([tuple(int(c[CONCEPTS.index(n)]) for n in names)])[0])
    return make_bddoia(tmp_path_factory.mktemp("bdd") / "src",
                       sizes=(("train", 24), ("val", 6), ("test", 6)), labels=actions)


def test_import_writes_an_rs_folder(copy, tmp_path):
    out = tmp_path / "out"
    res = run_cli(["rs", "import-bddoia", copy, "--out", out, "--json"])
    check_outcome(res)
    assert json.loads(res.out)["counts"] == {"train": 24, "val": 6, "test": 6}
    man = json.loads((out / "manifest.json").read_text())
    assert man["input"] == "features" and man["feature_dim"] == 2048
    assert man["labels"] == ["forward", "stop", "left", "right"]
    feats = np.load(out / "train" / "features.npy", allow_pickle=False)
    assert feats.shape == (24, 2048) and feats.dtype == np.float32
    rows = list(csv.DictReader(open(out / "train" / "labels.csv", newline="")))
    for k in (0, 17):
        stem = f"train_{k:04d}"
        want = torch.load(copy / "train" / "inputs" / f"{stem}.pt", weights_only=True)
        assert np.array_equal(feats[k], want.reshape(-1).numpy())
        c = torch.load(copy / "train" / "concepts" / f"{stem}.pt", weights_only=True)[0]
        a = torch.load(copy / "train" / "labels" / f"{stem}.pt", weights_only=True)[0]
        assert rows[k]["file"] == f"{stem}.jpg"
        # rsbench's concept positions land in the driving task's named columns
        for j, name in enumerate(CONCEPTS):
            assert rows[k][f"concept:{name}"] == str(int(c[j]))
        assert [rows[k][f"label:{n}"] for n in ("forward", "stop", "left", "right")] == \
            [str(int(x)) for x in a[:4]]
    # the labels of the synthetic copy follow the knowledge, as a check of the column order
    task = load_task(DRIVING)
    worlds = [tuple(int(r[f"concept:{v.name}"]) for v in task.variables) for r in rows]
    assert [tuple(int(r[f"label:{n}"]) for n in task.label_names()) for r in rows] == \
        [tuple(x) for x in task.labels_of(worlds)]
    # the same copy gives the same bytes
    res2 = run_cli(["rs", "import-bddoia", copy, "--out", tmp_path / "again"])
    check_outcome(res2)
    assert json.loads((tmp_path / "again" / "manifest.json").read_text())["checksums"] == \
        man["checksums"]


def test_nesy_train_reads_the_features(copy, tmp_path):
    out = tmp_path / "out"
    check_outcome(run_cli(["rs", "import-bddoia", copy, "--out", out]))
    task = load_task(DRIVING)
    data = NesyData.from_folder(out, "val", task, [[0, 1]] * 4)
    assert tuple(data.x.shape) == (6, 2048) and layout_of(data.render, data.input_shape) == "vector"
    res = run_cli(["nesy", "train", DRIVING, "--data", out, "--model", "dpl", "--epochs", "1",
                   "--out", tmp_path / "run", "-q", "--json"])
    check_outcome(res)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert {"val", "test"} <= set(metrics["results"])


def test_refusals(copy, tmp_path):
    out = tmp_path / "o"
    res = run_cli(["rs", "import-bddoia", tmp_path / "nowhere", "--out", out])
    check_outcome(res)
    assert res.rc == 2 and "not a folder" in res.err and not out.exists()
    part = make_bddoia(tmp_path / "part", sizes=(("train", 2),))
    res = run_cli(["rs", "import-bddoia", part, "--out", out])
    assert res.rc == 2 and "val_BDD_OIA.pkl" in res.err and not out.exists()
    # a frame whose tensor file is a link out of the folder
    bad = make_bddoia(tmp_path / "link", sizes=(("train", 2), ("val", 1)))
    target = bad / "train" / "inputs" / "train_0000.pt"
    outside = tmp_path / "outside.pt"
    target.rename(outside)
    target.symlink_to(outside)
    res = run_cli(["rs", "import-bddoia", bad, "--out", out])
    check_outcome(res)
    assert res.rc == 2 and "outside the data-set folder" in res.err and not out.exists()
    # an index with numpy arrays in its frames is read (rsbench's pickles may hold them)
    ok = make_bddoia(tmp_path / "np", sizes=(("train", 2), ("val", 1)))
    idx = pickle.loads((ok / "train_BDD_OIA.pkl").read_bytes())
    for e in idx:
        e["attribute_label"] = np.zeros(21)
    (ok / "train_BDD_OIA.pkl").write_bytes(pickle.dumps(idx))
    check_outcome(run_cli(["rs", "import-bddoia", ok, "--out", out]))
    res = run_cli(["rs", "import-bddoia", ok, "--out", out])
    assert res.rc == 2 and out.is_dir()        # exists: needs --overwrite
    check_outcome(run_cli(["rs", "import-bddoia", ok, "--out", out, "--overwrite"]))


#: transcription of rsbench's BDD-OIA models (rsseval/rss/models/boialtn.py reads
#: ``cs_preds[:, i]``; models/sddoiadpl.py reads the same concept at ``pCs[:, 2i:2i+2]``):
#: position -> rsbench's name
RSBENCH_BDDOIA_MODELS = {
    0: "green_light", 1: "follow", 2: "road_clear", 3: "red_light", 4: "stop_sign", 5: "car",
    6: "person", 7: "rider", 8: "other_obstacle", 9: "left_lane", 10: "left_green_light",
    11: "left_follow", 12: "no_left_lane", 13: "left_obstacle", 14: "left_solid_line",
    15: "right_lane", 16: "right_green_light", 17: "right_follow", 18: "no_right_lane",
    19: "right_obstacle", 20: "right_solid_line",
}
#: transcription of the miniBOIA loader's CONCEPTS_ORDER (datasets/utils/sddoia_creation.py):
#: name -> position; rsbench's BDD-OIA loader prints concept names in this order
RSBENCH_MINIBOIA_ORDER = {
    "green_light": 0, "follow": 1, "clear": 2, "red_light": 3, "stop_sign": 4, "car": 5,
    "person": 6, "rider": 7, "other_obstacle": 8, "no_left_lane": 9, "left_obstacle": 10,
    "left_solid_line": 11, "right_lane": 12, "right_green_light": 13, "right_follow": 14,
    "no_right_lane": 15, "right_obstacle": 16, "right_solid_line": 17, "left_lane": 18,
    "left_green_light": 19, "left_follow": 20,
}
#: rsbench's names that the driving task spells differently
RENAMED = {"stop_sign": "traffic_sign", "clear": "road_clear"}


def test_positions_are_bddoia_models_order():
    assert len(CONCEPTS) == 21
    for pos, name in RSBENCH_BDDOIA_MODELS.items():
        assert CONCEPTS[pos] == RENAMED.get(name, name), pos
    # the miniBOIA order names 12 of the 21 positions (all of 9-20) differently
    mini = {pos: RENAMED.get(n, n) for n, pos in RSBENCH_MINIBOIA_ORDER.items()}
    assert [p for p in range(21) if mini[p] != CONCEPTS[p]] == list(range(9, 21))
    # every name is one of the driving task's variables, each once
    assert sorted(CONCEPTS) == sorted(v.name for v in load_task(DRIVING).variables)


def test_import_names_each_position_as_the_models_read_it(tmp_path):
    """Frame k of a synthetic copy has only concept position k set: the imported row k has
    exactly the column of the concept rsbench's models read at position k set."""
    src = make_bddoia(tmp_path / "src", sizes=(("train", 21), ("val", 1)))
    for k in range(21):
        onehot = torch.zeros(1, 21)
        onehot[0, k] = 1
        torch.save(onehot, src / "train" / "concepts" / f"train_{k:04d}.pt")
    out = tmp_path / "out"
    check_outcome(run_cli(["rs", "import-bddoia", src, "--out", out]))
    rows = list(csv.DictReader(open(out / "train" / "labels.csv", newline="")))
    assert len(rows) == 21
    for k, row in enumerate(rows):
        assert row["file"] == f"train_{k:04d}.jpg"
        on = [col[len("concept:"):] for col, v in row.items()
              if col.startswith("concept:") and v == "1"]
        name = RSBENCH_BDDOIA_MODELS[k]
        assert on == [RENAMED.get(name, name)], k
