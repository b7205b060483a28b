"""`kandy import-reference`: data sets written by the reference KANDY generator."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from nesybench.cli import main as cli_main
from nesybench.errors import NesyError
from nesybench.kandy.learn.data import load_data, read_manifest, verify_dataset
from nesybench.kandy.reference import import_reference

SYMS = [  # (task, label, symbol as the reference writes it: a Python literal)
    (0, 1, "{'in': [{'shape': 'triangle', 'color': 'red', 'size': 'small'}]}"),
    (0, 0, "{'in': [{'shape': 'circle', 'color': 'blue', 'size': 'large'}]}"),
    (0, 1, "{'quadrant_ul': [{'shape': 'triangle', 'color': 'green', 'size': 'large'}]}"),
    (0, 0, "{'stack': [{'shape': 'square', 'color': 'red', 'size': 'small'}, "
           "{'shape': 'circle', 'color': 'cyan', 'size': 'small'}]}"),
    (1, 1, "{'side_by_side': [{'shape': 'square', 'color': 'yellow', 'size': 'small'}, "
           "{'grid': [{'shape': 'circle', 'color': 'magenta', 'size': 'small'}]}]}"),
    (1, 0, "{'in': [{'shape': 'square', 'color': 'red', 'size': 'large'}]}"),
]
STATS = """General parameters:
\tSeed: 12345
Task specific parameters:
\tTask 0:
\t\tName: triangle
\t\tSeed: 77
\t\tGamma: 1.0
\t\tBeta: 0.5
\tTask 1:
\t\tName: side by side
\t\tGamma: 0.8
\t\tBeta: 0.2
"""


def _reference(root: Path) -> Path:
    """A reference-layout folder: samples/sets/<split>/annotations.csv (QUOTE_NONNUMERIC, as
    the reference writes it) + <split>/<task>/<index>.png + stats.txt."""
    sets = root / "samples" / "sets"
    rng = np.random.default_rng(0)
    for split in ("train", "val", "test"):
        (sets / split).mkdir(parents=True)
        rows = SYMS if split == "train" else SYMS[:2] + SYMS[4:]
        per_task: dict[int, int] = {}
        with open(sets / split / "annotations.csv", "w", newline="\n", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, ["filename", "task_id", "label", "supervised", "symbol"],
                               quoting=csv.QUOTE_NONNUMERIC)
            w.writeheader()
            for i, (t, lab, sym) in enumerate(rows):
                j = per_task.get(t, 0)
                per_task[t] = j + 1
                (sets / split / str(t)).mkdir(exist_ok=True)
                img = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
                Image.fromarray(img).save(sets / split / str(t) / f"{j:04d}.png")
                w.writerow({"filename": f"{t}/{j:04d}.png", "task_id": t, "label": lab,
                            "supervised": int(i % 3 != 2), "symbol": sym})
    (sets / "stats.txt").write_text(STATS, encoding="utf-8")
    (root / "easy.yml").write_text("- name: triangle\n", encoding="utf-8")
    return root


def test_import_reference_layout(tmp_path, capsys):
    ref = _reference(tmp_path / "ref")
    out = tmp_path / "ours"
    assert cli_main(["kandy", "import-reference", str(ref), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "task  0 triangle" in text and "train 4, val 2, test 2 (+4/-4)" in text
    assert "imported 2 tasks, 14 samples (32x32)" in text
    man = read_manifest(out)
    verify_dataset(out, man)                         # sha256 of every file, split sizes
    t0, t1 = man["tasks"]
    assert (t0["name"], t0["gamma"], t0["beta"], t0["seed"]) == ("triangle", 1.0, 0.5, 77)
    assert (t1["name"], t1["splits"]) == ("side by side", {"train": 2, "val": 2, "test": 2})
    assert t0["stats"]["supervised"]["train"] == 3          # rows 0, 1, 3 of train
    rows = list(csv.DictReader(open(out / "train" / "annotations.csv", encoding="utf-8")))
    assert [r["filename"] for r in rows] == ["00/00000.png", "00/00001.png", "00/00002.png",
                                             "00/00003.png", "01/00000.png", "01/00001.png"]
    assert rows[3]["prolog"] == "stack([square_red_small, circle_cyan_small])"
    assert json.loads(rows[4]["symbol"]) == {"side_by_side": [
        {"shape": "square", "color": "yellow", "size": "small"},
        {"grid": [{"shape": "circle", "color": "magenta", "size": "small"}]}]}
    assert [r["supervised"] for r in rows] == ["1", "1", "0", "1", "1", "0"]
    # the pictures are the reference's, byte for byte, in the reference's order
    src = ref / "samples" / "sets" / "train"
    assert (out / "train" / "01" / "00001.png").read_bytes() == (src / "1" / "0001.png").read_bytes()
    assert (out / "reference" / "stats.txt").read_text() == STATS
    assert (out / "reference" / "easy.yml").is_file()
    d = load_data(out, size=16)
    assert d.task_ids == [0, 1] and len(d.splits["train"]) == 6
    assert d.splits["train"].labels.tolist() == [1, 0, 1, 0, 1, 0]
    assert d.splits["train"].supervised.tolist() == [True, True, False, True, True, False]
    # the other commands read it: the Aleph export needs only the symbols
    assert cli_main(["kandy", "ilp-export", str(out), "--out", str(tmp_path / "aleph"),
                     "--kb", "mid", "--encoding", "natural"]) == 0


def _edit(ref: Path, split: str, fn) -> None:
    path = ref / "samples" / "sets" / split / "annotations.csv"
    rows = list(csv.DictReader(open(path, encoding="utf-8")))
    fields = list(rows[0])
    rows, fields = fn(rows, fields)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fields)
        w.writeheader()
        w.writerows(rows)


@pytest.mark.parametrize("case,edit,msg", [
    ("symbol", lambda r, f: ([{**r[0], "symbol": "__import__('os')"}] + r[1:], f),
     "symbol is not a KANDY sample"),
    ("shape", lambda r, f: ([{**r[0], "symbol": "{'in': [{'shape': 'star', 'color': 'red', "
                                                "'size': 'small'}]}"}] + r[1:], f),
     "star_red_small is outside KANDY's domain"),
    ("label", lambda r, f: ([{**r[0], "label": "2"}] + r[1:], f), "label must be 1 or 0"),
    ("column", lambda r, f: ([{k: v for k, v in x.items() if k != "supervised"} for x in r],
                             [c for c in f if c != "supervised"]), "missing column(s) supervised"),
    ("escape", lambda r, f: ([{**r[0], "filename": "../../../../etc/passwd"}] + r[1:], f),
     "leaves the data-set folder"),
    ("image", lambda r, f: ([{**r[0], "filename": "0/9999.png"}] + r[1:], f),
     "val/0/9999.png: missing"),
])
def test_import_reference_bad_input(tmp_path, capsys, case, edit, msg):
    ref = _reference(tmp_path / "ref")
    _edit(ref, "val", edit)
    out = tmp_path / "ours"
    assert cli_main(["kandy", "import-reference", str(ref), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "val/annotations.csv" in err, (case, err)
    assert len(err.splitlines()) == 1 and not out.exists()


def test_import_reference_not_a_reference_folder(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(NesyError, match="not a reference KANDY data set"):
        import_reference(tmp_path / "empty", tmp_path / "o")
    ref = _reference(tmp_path / "ref")
    png = ref / "samples" / "sets" / "test" / "0" / "0000.png"
    png.write_bytes(b"GIF89a" + b"\0" * 40)
    with pytest.raises(NesyError, match="not a PNG image"):
        import_reference(ref, tmp_path / "o")
    shutil.rmtree(ref)
    assert not (tmp_path / "o").exists()
