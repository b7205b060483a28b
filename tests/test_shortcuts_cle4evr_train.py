"""DPL trained on a small rendered CLE4EVR data set, and the shortcut detector naming the
counted reasoning shortcut the model fell into (skipped where bpy is not installed).

The task: two objects whose colour is red or blue, label 1 iff both have the same colour
(kb/shortcuts/cle4evr.lp). Its optimal colour maps are the identity and the swap red <-> blue
(2! = 2, one reasoning shortcut). The swap keeps every label, so a model trained with concept
supervision that swaps the colours reaches full label accuracy on the swap: the detector must
report exactly that map as the counted shortcut; trained on the true colours it must report
the identity.

Training is deterministic for a seed on the CPU, but whether 40 epochs converge depends on
the seed and on the pictures' last bits (the whole-image extractor pools away where each
object is, so only scenes of one colour tell it which object is which, and a run that has not
converged reports a constant colour, which the detector calls not optimal). 96 training
pictures converged in 31 of 32 runs (16 seeds, both data sets); each test trains five seeds
and asks a majority to reach the expected map and no run to reach the other optimal one."""
from __future__ import annotations

import csv
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from nesybench.cli import main
from nesybench.shortcuts.render import blender as B
from nesybench.shortcuts.count import count_rs
from nesybench.shortcuts.task import load_task

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not B.bpy_available(),
                                reason=f"bpy is not installed ({B.INSTALL_HINT})")
TASK = f"""name: cle4evr_colour
concepts:
  - {{name: color, count: 2, domain: [red, blue]}}
knowledge: {ROOT / "kb/shortcuts/cle4evr.lp"}
maps: shared
support: all
generate:
  render: blender
  samples: {{train: 96, val: 16, test: 16, ood: 0}}
  # a fixed camera and fixed lights: the toy is small enough that jitter changes which seeds
  # converge
  blender: {{preset: fast, resolution: [32, 32], samples: 1, sizes: [large], materials: [rubber],
            camera_jitter: 0, light_jitter: 0}}
"""
SWAP = {"red": "blue", "blue": "red"}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cle4evr-train")
    (d / "t.yaml").write_text(TASK)
    assert main(["rs", "generate", str(d / "t.yaml"), "--out", str(d / "D"), "-j", "2",
                 "-q"]) == 0
    # the same pictures, with the colours swapped in the training split's concept columns
    shutil.copytree(d / "D", d / "swapped")
    path = d / "swapped" / "train" / "labels.csv"
    rows = list(csv.reader(path.open(newline="")))
    with path.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(
            [rows[0]] + [r[:2] + [SWAP[x] for x in r[2:]] for r in rows[1:]])
    # a deliberate edit: the manifest lists the edited file's checksum, as a user would fix it
    manifest = d / "swapped" / "manifest.json"
    meta = json.loads(manifest.read_text())
    meta["checksums"]["train/labels.csv"] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest.write_text(json.dumps(meta, indent=2, sort_keys=True))
    return d


SEEDS = (0, 1, 2, 3, 4)


def _train(d: Path, data_dir: str, out: str, seed: int) -> dict:
    assert main(["nesy", "train", str(d / "t.yaml"), "--data", str(d / data_dir), "--model",
                 "dpl", "--concept-sup", "1.0", "--epochs", "40", "--lr", "0.003", "--seed",
                 str(seed), "--out", str(d / out), "-q"]) == 0
    return json.loads((d / out / "metrics.json").read_text())["results"]["test"]


def _reports(d: Path, data_dir: str) -> list[dict]:
    """The detector's report on the test split after training with each of :data:`SEEDS`."""
    return [_train(d, data_dir, f"R-{data_dir}-{seed}", seed)["shortcut"] for seed in SEEDS]


def test_counted_shortcuts_of_the_task(data):
    res = count_rs(load_task(data / "t.yaml"), list_n=5)
    assert (res.count, res.count_without_identity) == (2, 1)


def test_dpl_falls_into_the_counted_swap_and_the_detector_names_it(data):
    reports = _reports(data, "swapped")
    verdicts = [r["verdict"] for r in reports]
    # no seed learns the identity from swapped labels; most converge to the swap
    assert set(verdicts) <= {"shortcut", "not_optimal"}, verdicts
    assert verdicts.count("shortcut") > len(SEEDS) // 2, verdicts
    listed = [{g: {str(a): str(b) for a, b in m.items()} for g, m in rss.items()}
              for rss in count_rs(load_task(data / "t.yaml"), list_n=5).rss]
    for rep in reports:
        if rep["verdict"] != "shortcut":
            assert rep["support_errors"] > 0          # not optimal: some support world is wrong
            continue
        assert rep["maps"] == {"color": SWAP}
        assert rep["support_errors"] == 0 and rep["support_size"] == 4
        assert (rep["n_optimal"], rep["n_shortcuts"]) == (2, 1)
        # the learned map is the one the counter lists besides the identity
        assert {"color": SWAP} in listed


def test_dpl_on_the_true_colours_learns_the_identity(data):
    reports = _reports(data, "D")
    verdicts = [r["verdict"] for r in reports]
    assert set(verdicts) <= {"identity", "not_optimal"}, verdicts
    assert verdicts.count("identity") > len(SEEDS) // 2, verdicts
    for rep in reports:
        if rep["verdict"] == "identity":
            assert rep["maps"] == {"color": {"red": "red", "blue": "blue"}}
