"""``render: blender``, ``scene: driving``: miniBOIA road scenes in 3D (rendering skipped where
bpy is not installed; the scene descriptions are pure NumPy and always tested)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.shortcuts.render import blender as B
from nesybench.shortcuts.render import blender_driving as D
from nesybench.shortcuts.generate import generate
from nesybench.shortcuts.task import load_task

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "curricula" / "rs" / "driving_3d.yaml"
AMBULANCE = ROOT / "curricula" / "rs" / "driving_ambulance_3d.yaml"
SMALL = {"preset": "fast", "resolution": [64, 64], "samples": 2}
SIZES = {"train": 4, "val": 1, "test": 0, "ood": 1}
needs_bpy = pytest.mark.skipif(not B.bpy_available(),
                               reason=f"bpy is not installed ({B.INSTALL_HINT})")


def _annotations(out: Path) -> dict:
    return {f"{f.parent.name}/{f.name}": f.read_bytes() for f in sorted(out.glob("*/*.json"))}


def _rows(out: Path, split: str) -> list[dict]:
    with open(out / split / "labels.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _world_from_objects(task, ann) -> tuple:
    """The concept vector read off the annotated scene: a concept is 1 iff an element shows it."""
    shown = {o["concept"] for o in ann["objects"]}
    return tuple(int(v.term in shown) for v in task.variables)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("driving") / "D"
    res = generate(load_task(TASK), out, seed=3, samples=SIZES,
                   render_options={**SMALL, "workers": 2})
    return out, res


@needs_bpy
def test_labels_are_the_knowledge_on_the_annotated_scene(rendered):
    out, res = rendered
    assert res.counts == {"train": 4, "val": 1, "test": 0, "ood": 1}
    assert res.blender == {"rendered": 6, "resumed": 0, "bpy_version": B.BPY_VERSION}
    man = json.loads((out / "manifest.json").read_text())
    assert man["blender"]["scene"] == "driving"
    assert man["blender"]["grid"] == {"rows": 5, "lane_width": 3.5, "cell_length": 5.0}
    task = load_task(TASK)
    names = task.label_names()
    for split in ("train", "val", "test", "ood"):
        for row in _rows(out, split):
            img = Image.open(out / split / row["file"])
            assert img.size == (64, 64) and np.asarray(img).std() > 1
            ann = json.loads((out / split / row["file"].replace(".png", ".json")).read_text())
            world = _world_from_objects(task, ann)
            assert [str(x) for x in world] == [row[f"concept:{v.name}"] for v in task.variables]
            assert ann["concepts"] == {c: int(c in {o["concept"] for o in ann["objects"]})
                                       for c in D.CONCEPTS}
            assert [str(y) for y in task.labels_of([world])[0]] == \
                [row[f"label:{n}"] for n in names]
            for o in ann["objects"]:
                if o["kind"] in D.BUILDERS or o["kind"] == "lamp":
                    x0, y0, x1, y1 = o["bbox"]
                    assert 0 <= x0 < x1 <= 64 and 0 <= y0 < y1 <= 64, o
    # action-balanced: the four train images show four different action vectors
    acts = [tuple(r[f"label:{n}"] for n in names) for r in _rows(out, "train")]
    assert len(set(acts)) == 4
    # OOD worlds lie outside the support
    support = set(task.support(seed=3))
    ood = [tuple(int(r[f"concept:{v.name}"]) for v in task.variables) for r in _rows(out, "ood")]
    assert not support & set(ood)


@needs_bpy
def test_same_seed_same_scenes_and_pixels(rendered, tmp_path):
    out, _ = rendered
    again = tmp_path / "again"
    generate(load_task(TASK), again, seed=3, samples=SIZES, render_options={**SMALL, "workers": 1})
    assert _annotations(again) == _annotations(out)
    for f in sorted(out.glob("*/*.png")):
        assert np.array_equal(np.asarray(Image.open(f)),
                              np.asarray(Image.open(again / f.parent.name / f.name)))


@needs_bpy
def test_an_interrupted_run_resumes(rendered, tmp_path, monkeypatch):
    out, _ = rendered
    part = tmp_path / "part"
    monkeypatch.setattr(B, "_INTERRUPT_AFTER", 3)
    with pytest.raises(KeyboardInterrupt):
        generate(load_task(TASK), part, seed=3, samples=SIZES, render_options=SMALL)
    assert not part.exists()
    assert len(list(B.partial_dir(part).glob("*/*.json"))) == 3
    monkeypatch.setattr(B, "_INTERRUPT_AFTER", None)
    res = generate(load_task(TASK), part, seed=3, samples=SIZES, render_options=SMALL)
    assert res.blender["resumed"] == 3 and res.blender["rendered"] == 3
    assert _annotations(part) == _annotations(out)
    assert not B.partial_dir(part).exists()


@needs_bpy
def test_ambulance_knowledge_on_the_same_kind_of_scene(tmp_path):
    task = load_task(AMBULANCE)
    out = tmp_path / "amb"
    assert main(["rs", "generate", str(AMBULANCE), "--out", str(out), "-q", "--samples",
                 "train=2", "--samples", "val=0", "--samples", "test=0", "--samples", "ood=0",
                 "--preset", "fast", "--resolution", "48x48", "--render-samples", "1"]) == 0
    for row in _rows(out, "train"):
        ann = json.loads((out / "train" / row["file"].replace(".png", ".json")).read_text())
        world = _world_from_objects(task, ann)
        stop = int(any(world[task.var_index(c)] for c in
                       ("car", "person", "rider", "other_obstacle")))
        assert (row["label:stop"], row["label:forward"]) == (str(stop), str(1 - stop))


# -- scene descriptions (no bpy) ----------------------------------------------------------------
def test_every_true_concept_is_placed_visible_and_alone_in_its_slot():
    task = load_task(TASK)
    opts = B.options(task, {"resolution": [128, 128]})
    assert opts["scene"] == "driving"
    worlds = task.support(seed=0)[:40] + [(1,) * len(task.variables), (0,) * len(task.variables)]
    for k, w in enumerate(worlds):
        d = B.describe(task, w, opts, seed=0, split="train", index=k)
        assert d == B.describe(task, w, opts, seed=0, split="train", index=k)
        on = {v.term for v, x in zip(task.variables, w) if x == 1}
        assert sorted(o["concept"] for o in d["objects"]) == sorted(on)
        cells = [(o["lane"], o["row"], round(o["x"], 1)) for o in d["objects"]
                 if o["kind"] in D.BUILDERS]
        assert len(cells) == len(set(cells))
        placed = [o for o in d["objects"] if o["kind"] in D.BUILDERS or o["kind"] == "lamp"]
        vis = D.visible_fractions(placed, opts["resolution"], d["camera"])
        assert vis is not None and all(v >= opts["min_visible"] for v in vis)
        for o in d["objects"]:
            if o["kind"] in D.BUILDERS:
                lo, hi = D.PLACEMENT[o["concept"]][2], opts["grid"]["rows"] - 1 - \
                    D.PLACEMENT[o["concept"]][3]
                assert lo <= o["row"] <= hi and o["lane"] == D.PLACEMENT[o["concept"]][1]
    other = B.describe(task, worlds[-2], opts, seed=1, split="train", index=0)
    assert other["objects"] != B.describe(task, worlds[-2], opts, seed=0, split="train",
                                          index=0)["objects"]


def test_the_grid_is_an_option():
    task = load_task(TASK)
    opts = B.options(task, {"grid": {"rows": 6, "cell_length": 4.0}})
    assert opts["grid"] == {"rows": 6, "lane_width": 3.5, "cell_length": 4.0}
    d = B.describe(task, (1,) * len(task.variables), opts, seed=0, split="train", index=0)
    assert max(o["row"] for o in d["objects"] if o["row"] is not None) <= 5
    # the 2D task file's concepts draw a driving scene too (scene: auto)
    assert B.options(load_task(ROOT / "curricula/rs/driving.yaml"))["scene"] == "driving"
    assert B.options(load_task(ROOT / "curricula/rs/cle4evr.yaml"))["scene"] == "objects"
    with pytest.raises(NesyError, match="could not lay out"):
        B.describe(task, (1,) * len(task.variables), {**opts, "min_visible": 1.0, "retries": 2},
                   seed=0, split="train", index=0)


def _variant(tmp_path, edit) -> Path:
    data = yaml.safe_load(TASK.read_text())
    edit(data)
    data["knowledge"] = str(ROOT / "kb/shortcuts/driving.lp")
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


@pytest.mark.parametrize("edit, needle", [
    (lambda d: d["generate"]["blender"].update(grid={"rows": 1}), "grid rows must be"),
    (lambda d: d["generate"]["blender"].update(grid={"rows": 4.5}), "grid rows must be"),
    (lambda d: d["generate"]["blender"].update(grid={"lanes": 3}), "unknown key 'lanes'"),
    (lambda d: d["generate"]["blender"].update(grid="big"), "grid must be a mapping"),
    (lambda d: d["generate"]["blender"].update(grid={"lane_width": True}), "lane_width"),
    (lambda d: d["generate"]["blender"].update(scene="city"), "unknown scene 'city'"),
    (lambda d: d["generate"]["blender"].update(scene="objects", grid=None),
     "CLE4EVR objects"),
    # the scene's own checks (miniBOIA's generator refuses these concepts before them)
    (lambda d: (d["concepts"].append({"name": "wet_road", "domain": [0, 1]}),
                d.update(support={"sample": 300, "seed": 0})), "not wet_road"),
    (lambda d: (d["concepts"][0].update(domain=[0, 1, 2]),
                d.update(support={"sample": 300, "seed": 0})), "must be Boolean"),
    (lambda d: d["concepts"].append({"name": "wet_road", "domain": [0, 1]}),
     "needs miniBOIA's 21 concepts"),
])
def test_bad_driving_options_one_line_exit_2(tmp_path, capsys, monkeypatch, edit, needle):
    monkeypatch.setattr(B, "bpy_available", lambda: True)
    path = _variant(tmp_path, edit)
    assert main(["rs", "generate", str(path), "--out", str(tmp_path / "o"), "--samples", "4",
                 "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and needle in err, err
    assert not (tmp_path / "o").exists() and not B.partial_dir(tmp_path / "o").exists()


def test_grid_on_an_objects_scene_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(B, "bpy_available", lambda: True)
    data = yaml.safe_load((ROOT / "curricula/rs/cle4evr.yaml").read_text())
    data["generate"]["blender"]["grid"] = {"rows": 3}
    data["knowledge"] = str(ROOT / "kb/shortcuts/cle4evr.lp")
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(data))
    assert main(["rs", "generate", str(p), "--out", str(tmp_path / "o"), "--samples", "4",
                 "-q"]) == 2
    assert "grid applies to scene: driving" in capsys.readouterr().err


@needs_bpy
def test_load_and_export_carry_the_scene_annotations(rendered, tmp_path):
    import nesybench
    out, _ = rendered
    data = nesybench.load(out)
    assert "scene" in [c.name for c in data.columns]
    rows = data.rows("train")
    assert len(rows) == 4
    for row in rows:
        ann = json.loads((out / "train" / row["file"].replace(".png", ".json")).read_text())
        assert json.loads(row["scene"]) == ann
    assert main(["export", str(out), "--format", "parquet", "--out", str(tmp_path / "x"),
                 "-q"]) == 0
    import pyarrow.parquet as pq
    table = pq.read_table(next((tmp_path / "x").rglob("train*.parquet")))
    got = [json.loads(s) for s in table.column("scene").to_pylist()]
    assert got == [json.loads(r["scene"]) for r in rows]


@needs_bpy
def test_a_missing_scene_annotation_is_one_error(rendered, tmp_path):
    import shutil

    import nesybench
    out, _ = rendered
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    (bad / "train" / "00001.json").unlink()
    with pytest.raises(NesyError, match="no scene annotation train/00001.json"):
        nesybench.load(bad, verify=False)


@needs_bpy
def test_rs_browse_shows_pictures_labels_and_boxes(rendered, tmp_path, capsys):
    from nesybench.shortcuts.browse import LONG, browser_data
    out, _ = rendered
    page = tmp_path / "page"
    assert main(["rs", "browse", str(out), "--out", str(page)]) == 0
    assert capsys.readouterr().out.strip() == f"browser page: {page.resolve() / 'index.html'}"
    js = (page / "data.js").read_text()
    data = json.loads(js[js.index("=") + 1:].rstrip().rstrip(";"))
    assert data == browser_data(out, page)
    assert data["render"] == "blender" and data["labels"] == ["forward", "stop", "left", "right"]
    assert len(data["samples"]) == 6
    for s in data["samples"]:
        assert (page / s["image"]).resolve().is_file()
        ann = json.loads((page / s["image"]).resolve().with_suffix(".json").read_text())
        want = [o["concept"] for o in ann["objects"] if o["bbox"] and o["kind"] not in LONG]
        assert [b[4] for b in s["boxes"]] == want and s["size"] == [64.0, 64.0]
        assert s["concepts"] == [ann["concepts"][c] for c in data["concepts"]]
    assert "<script src=\"data.js\"></script>" in (page / "index.html").read_text()
    # an existing folder is not replaced without --overwrite
    assert main(["rs", "browse", str(out), "--out", str(page)]) == 2
    assert main(["rs", "browse", str(out), "--out", str(page), "--overwrite"]) == 0


def test_scene_descriptions_do_not_depend_on_the_hash_seed():
    import os
    import subprocess
    import sys
    code = ("import hashlib\n"
            "from nesybench.shortcuts.render import blender as B\n"
            "from nesybench.shortcuts.task import load_task\n"
            "h = hashlib.sha256()\n"
            "for name in ('driving_3d', 'cle4evr_range'):\n"
            f"    t = load_task({str(ROOT)!r} + f'/curricula/rs/{{name}}.yaml')\n"
            "    o = B.options(t)\n"
            "    for i, w in enumerate(t.support(seed=0)[:12]):\n"
            "        d = B.describe(t, w, o, seed=0, split='train', index=i)\n"
            "        h.update(B.description_hash(d).encode())\n"
            "print(h.hexdigest())\n")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": s}).stdout
            for s in ("1", "2")}
    assert len(outs) == 1 and len(outs.pop().strip()) == 64


@needs_bpy
def test_nesy_train_reads_the_rendered_road_scenes(rendered, tmp_path):
    """DPL on the rendered pictures: the run reads every split, and the detector checks the
    learned maps against the task's 342 support worlds."""
    out, _ = rendered
    run = tmp_path / "run"
    assert main(["nesy", "train", str(TASK), "--data", str(out), "--model", "dpl", "--epochs",
                 "1", "--out", str(run), "-q"]) == 0
    m = json.loads((run / "metrics.json").read_text())
    assert m["n_train"] == 4
    rep = m["results"]["val"]["shortcut"]
    assert rep["support_size"] == 342 and rep["verdict"] in ("identity", "shortcut",
                                                            "not_optimal")
    task = load_task(TASK)
    with open(run / "predictions_ood.csv", newline="") as fh:
        pred = list(csv.DictReader(fh))
    want = _rows(out, "ood")
    assert [[r[f"concept:{v.name}"] for v in task.variables] for r in pred] == \
        [[r[f"concept:{v.name}"] for v in task.variables] for r in want]


@needs_bpy
def test_two_runs_of_one_seed_give_the_same_bytes(tmp_path):
    """The road scenes too: every file of two runs of one seed is the same byte for byte."""
    tiny = {"preset": "fast", "resolution": [48, 48], "samples": 1, "workers": 1}
    sizes = {"train": 2, "val": 0, "test": 0, "ood": 1}
    runs = []
    for name in ("a", "b"):
        generate(load_task(TASK), tmp_path / name, seed=5, samples=sizes, render_options=tiny)
        out = tmp_path / name
        runs.append({str(f.relative_to(out)): f.read_bytes()
                     for f in sorted(out.rglob("*")) if f.is_file()})
    assert [k for k in runs[0] if k.endswith(".png")] == \
        ["ood/00000.png", "train/00000.png", "train/00001.png"]
    assert runs[0] == runs[1]
    # no text or time chunk is left to strip
    assert all(B.strip_png_text(v) == v for k, v in runs[0].items() if k.endswith(".png"))


def test_rsbench_s_nuisances_and_camera_jitter():
    """Grass, road and sky colours from rsbench's palettes (each channel moved by at most 0.1),
    an amber lamp only for a red light, a speed-limit sign only without a stop sign and on the
    left pavement, trees only beyond the pavements, the camera moved by at most 0.5 per axis
    and looking the same way."""
    task = load_task(TASK)
    opts = B.options(task, {"preset": "fast"})
    assert B.options(task)["resolution"] == [469, 387]            # rsbench's miniBOIA size
    lw = opts["grid"]["lane_width"]
    base = D.camera(opts["grid"])
    seen = {"amber": 0, "sign": 0, "trees": 0, "red": 0}
    for k, w in enumerate(task.support(seed=0)[:150]):
        d = B.describe(task, w, opts, seed=0, split="train", index=k)
        sc, on = d["scenery"], d["concepts"]
        for key, palette in (("ground", D.GROUND_COLOURS), ("road", D.ROAD_COLOURS),
                             ("sky", D.SKY_COLOURS)):
            ref = palette[sc[key]["name"]]
            assert all(0 <= c <= 1 and abs(c - r) <= D.COLOUR_JITTER + 1e-9
                       for c, r in zip(sc[key]["linear"], ref))
        lamp = [o for o in d["objects"] if o["concept"] == "red_light"]
        assert [o["color"] for o in lamp] == ([("amber" if sc["amber"] else "red")]
                                              if on["red_light"] else [])
        assert not sc["amber"] or on["red_light"]
        if sc["speed_sign"]:
            assert not on["traffic_sign"] and sc["speed_sign"]["x"] < -1.5 * lw
        assert all(abs(t["x"]) >= 1.5 * lw + 5.0 for t in sc["trees"])
        off = np.subtract(d["camera"]["location"], base["location"])
        assert np.all(np.abs(off) <= 0.5)
        assert np.allclose(np.subtract(d["camera"]["target"], base["target"]), off, atol=1e-5)
        seen["red"] += on["red_light"]
        seen["amber"] += sc["amber"]
        seen["sign"] += bool(sc["speed_sign"])
        seen["trees"] += bool(sc["trees"])
    assert 0 < seen["amber"] < seen["red"] and seen["sign"] > 0 and 0 < seen["trees"] < 150
    still = B.describe(task, task.support(seed=0)[0], {**opts, "camera_jitter": 0.0}, seed=0,
                       split="train", index=0)
    assert still["camera"] == base
