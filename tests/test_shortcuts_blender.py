"""``render: blender``: CLE4EVR scenes rendered with bpy (skipped where bpy is not installed)."""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.shortcuts.render import blender as B
from nesybench.shortcuts.generate import _share, generate
from nesybench.shortcuts.task import load_task

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "curricula" / "rs" / "cle4evr.yaml"
#: the fast preset, smaller still (the task files default to rsbench's 320x240 at 512 samples)
SMALL = {"preset": "fast", "resolution": [64, 64], "samples": 4}
SIZES = {"train": 4, "val": 1, "test": 1, "ood": 1}
needs_bpy = pytest.mark.skipif(not B.bpy_available(),
                               reason=f"bpy is not installed ({B.INSTALL_HINT})")


def _annotations(out: Path) -> dict:
    """Every annotation file's bytes (a data set holds no timing: same seed, same bytes)."""
    return {f"{f.parent.name}/{f.name}": f.read_bytes() for f in sorted(out.glob("*/*.json"))}


def _pixels(out: Path) -> dict:
    return {f"{f.parent.name}/{f.name}": np.asarray(Image.open(f))
            for f in sorted(out.glob("*/*.png"))}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("blender") / "D"
    res = generate(load_task(TASK), out, seed=3, samples=SIZES,
                   render_options={**SMALL, "workers": 2})
    return out, res


@needs_bpy
def test_renders_images_and_annotations(rendered):
    out, res = rendered
    assert res.counts == {"train": 4, "val": 1, "test": 1, "ood": 1}
    assert res.blender["rendered"] == 7 and res.blender["resumed"] == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["render"] == "blender" and man["blender"]["resolution"] == [64, 64]
    assert man["blender"]["bpy_version"]
    assert not B.partial_dir(out).exists()
    task = load_task(TASK)
    support = set(task.support())
    for split in ("train", "val", "test", "ood"):
        with open(out / split / "labels.csv") as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            img = Image.open(out / split / row["file"])
            assert img.size == (64, 64)
            assert np.asarray(img).std() > 1            # not a blank picture
            ann = json.loads((out / split / row["file"].replace(".png", ".json")).read_text())
            objs = ann["objects"]
            assert len(objs) == 3
            for o in objs:
                x0, y0, x1, y1 = o["bbox"]
                assert 0 <= x0 < x1 <= 64 and 0 <= y0 < y1 <= 64
                assert o["material"] in B.MATERIALS and o["size"] in B.SIZES
            # the label is the knowledge evaluated on the annotated objects
            world = tuple(objs[int(v.term[1]) - 1][v.term[0]] for v in task.variables)
            assert [str(x) for x in world] == [row[f"concept:{v.name}"] for v in task.variables]
            assert (world in support) == (split != "ood")      # rsbench's OOD: held-out worlds
            (label,) = task.labels_of([world])[0]
            assert str(label) == row["label:y"]
            rel = ann["relations"]
            for i in range(3):
                for j in range(3):
                    if i != j:
                        assert ([i, j] in rel["left"]) != ([i, j] in rel["right"])
                        assert ([i, j] in rel["front"]) == ([j, i] in rel["behind"])
    labels = [r["label:y"] for r in csv.DictReader(open(out / "train" / "labels.csv"))]
    assert sorted(labels) == ["0", "0", "1", "1"]        # balanced


@needs_bpy
def test_same_seed_same_scenes_and_pixels(rendered, tmp_path):
    out, _ = rendered
    again = tmp_path / "again"
    generate(load_task(TASK), again, seed=3, samples=SIZES, render_options={**SMALL, "workers": 1})
    assert _annotations(again) == _annotations(out)
    a, b = _pixels(again), _pixels(out)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    task = load_task(TASK)
    descs = [B.describe(task, ("red",) * 3 + ("cube",) * 3, B.options(task, SMALL), seed=s,
                        split="train", index=0) for s in (3, 4)]
    assert descs[0]["objects"] != descs[1]["objects"]         # another seed, another scene


@needs_bpy
def test_an_interrupted_run_resumes(rendered, tmp_path, monkeypatch):
    out, _ = rendered
    part = tmp_path / "part"
    monkeypatch.setattr(B, "_INTERRUPT_AFTER", 2)
    with pytest.raises(KeyboardInterrupt):
        generate(load_task(TASK), part, seed=3, samples=SIZES, render_options=SMALL)
    assert not part.exists()
    assert len(list(B.partial_dir(part).glob("*/*.json"))) == 2
    monkeypatch.setattr(B, "_INTERRUPT_AFTER", None)
    res = generate(load_task(TASK), part, seed=3, samples=SIZES, render_options=SMALL)
    assert res.blender["resumed"] == 2 and res.blender["rendered"] == 5
    assert _annotations(part) == _annotations(out)
    a, b = _pixels(part), _pixels(out)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not B.partial_dir(part).exists()


def test_without_bpy_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "bpy", None)      # `import bpy` fails, find_spec: None
    assert main(["rs", "generate", str(TASK), "--out", str(tmp_path / "D"), "--samples", "4",
                 "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "pip install --no-deps bpy==" in err
    assert not (tmp_path / "D").exists() and not B.partial_dir(tmp_path / "D").exists()


@pytest.mark.parametrize("args, needle", [
    (["--resolution", "64by64"], "--resolution expects WxH"),
    (["--resolution", "4x4"], "resolution must be"),
    (["--samples", "4", "--samples", "train=2"], "either a total N"),
])
def test_bad_render_options_one_line(tmp_path, capsys, monkeypatch, args, needle):
    monkeypatch.setattr(B, "bpy_available", lambda: True)
    assert main(["rs", "generate", str(TASK), "--out", str(tmp_path / "D"), "-q",
                 *(["--samples", "4"] if "--samples" not in args else []), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and needle in err
    assert not (tmp_path / "D").exists()


def test_render_options_need_render_blender(tmp_path, capsys):
    digits = ROOT / "curricula" / "rs" / "mnist_addition.yaml"
    if not digits.exists():
        pytest.skip("no digits task")
    assert main(["rs", "generate", str(digits), "--out", str(tmp_path / "D"), "-q",
                 "--samples", "train=2", "--render-samples", "8"]) == 2
    assert "apply to render: blender" in capsys.readouterr().err


def test_total_samples_shared_over_splits():
    assert _share(16, has_ood=False) == {"train": 12, "val": 2, "test": 2, "ood": 0}
    assert sum(_share(16, has_ood=True).values()) == 16
    assert _share(160, has_ood=True) == {"train": 100, "val": 20, "test": 20, "ood": 20}


def test_scene_descriptions_are_pure_and_in_view():
    task = load_task(TASK)
    opts = B.options(task, SMALL)
    w = ("red", "green", "blue", "cube", "sphere", "cylinder")
    d1 = B.describe(task, w, opts, seed=0, split="train", index=5)
    d2 = B.describe(task, w, opts, seed=0, split="train", index=5)
    assert d1 == d2 and B.description_hash(d1) == B.description_hash(d2)
    objs = d1["objects"]
    assert [o["color"] for o in objs] == ["red", "green", "blue"]
    for i, a in enumerate(objs):
        for b in objs[i + 1:]:
            assert np.hypot(a["x"] - b["x"], a["y"] - b["y"]) >= a["radius"] + b["radius"]
    vis = B._visible_fractions(objs, opts["resolution"], d1["camera"])
    assert vis is not None and min(vis) >= opts["min_visible"]
    with pytest.raises(NesyError, match="could not place"):
        B.describe(task, w, {**opts, "min_visible": 1.0, "retries": 3}, seed=0, split="train",
                   index=5)


def test_objects_stand_left_to_right_in_index_order():
    """Object 1 is the leftmost in the picture, so a concept per object index names what a
    model can see."""
    task = load_task(TASK)
    opts = B.options(task, SMALL)
    w = ("red", "green", "blue", "cube", "sphere", "cylinder")
    for index in range(30):
        d = B.describe(task, w, opts, seed=1, split="train", index=index)
        objs = d["objects"]
        px = B.project([[o["x"], o["y"], 0.0] for o in objs], opts["resolution"],
                       d["camera"])[:, 0]
        assert list(px) == sorted(px)
        assert [(o["color"], o["shape"]) for o in objs] == list(zip(w[:3], w[3:]))


def test_a_task_without_shapes_gets_random_shapes():
    task = load_task({"name": "colours", "knowledge": "kb/shortcuts/cle4evr.lp",
                      "concepts": [{"name": "color", "count": 2, "domain": ["red", "blue"]}]})
    opts = B.options(task, SMALL)
    assert opts["scene"] == "objects"
    shapes = {o["shape"] for k in range(20) for o in
              B.describe(task, ("red", "blue"), opts, seed=0, split="train", index=k)["objects"]}
    assert shapes == set(B.NUISANCE_SHAPES)


def _files(out: Path) -> dict:
    return {str(f.relative_to(out)): f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()}


def _chunk_types(data: bytes) -> list[bytes]:
    kinds, i = [], 8
    while i < len(data):
        n = int.from_bytes(data[i:i + 4], "big")
        kinds.append(data[i + 4:i + 8])
        i += 12 + n
    return kinds


@needs_bpy
def test_two_runs_of_one_seed_give_the_same_bytes(tmp_path):
    """Every file of the folder (pictures, annotations, labels, manifest) is the same byte for
    byte, at one worker and at two: the PNGs carry no date or timing chunk and the manifest no
    worker count. Smallest render the options allow."""
    tiny = {"preset": "fast", "resolution": [8, 8], "samples": 1}
    sizes = {"train": 2, "val": 1, "test": 0, "ood": 0}
    runs = []
    for name, workers in (("a", 1), ("b", 2)):
        generate(load_task(TASK), tmp_path / name, seed=5, samples=sizes,
                 render_options={**tiny, "workers": workers})
        runs.append(_files(tmp_path / name))
    assert "workers" not in json.loads(runs[0]["manifest.json"])["blender"]
    assert sorted(runs[0]) == sorted(runs[1])
    assert [k for k in runs[0] if k.endswith(".png")] == \
        ["train/00000.png", "train/00001.png", "val/00000.png"]
    for k in runs[0]:
        assert runs[0][k] == runs[1][k], k
        if k.endswith(".png"):
            assert not set(_chunk_types(runs[0][k])) & B.PNG_TEXT_CHUNKS


def test_strip_png_text_keeps_the_picture(tmp_path):
    from PIL.PngImagePlugin import PngInfo
    info = PngInfo()
    info.add_text("Date", "2026/01/01 00:00:00")
    info.add_text("RenderTime", "00:01.00", zip=True)
    info.add_itxt("Note", "x")
    pixels = np.arange(4 * 3 * 3, dtype=np.uint8).reshape(4, 3, 3)
    Image.fromarray(pixels).save(tmp_path / "t.png", pnginfo=info)
    data = (tmp_path / "t.png").read_bytes()
    assert {b"tEXt", b"zTXt", b"iTXt"} <= set(_chunk_types(data))
    out = B.strip_png_text(data)
    assert _chunk_types(out) == [k for k in _chunk_types(data) if k not in B.PNG_TEXT_CHUNKS]
    (tmp_path / "s.png").write_bytes(out)
    assert np.array_equal(np.asarray(Image.open(tmp_path / "s.png")), pixels)
    assert B.strip_png_text(out) == out
    for bad, needle in ((b"GIF89a", "no PNG signature"), (data[:20], "runs past the end"),
                        (data[:-12], "cut off"), (data + b"x", "1 bytes after")):
        with pytest.raises(NesyError, match=needle):
            B.strip_png_text(bad, "t.png")


# -- rsbench's generator settings ------------------------------------------------------------
def test_presets_are_rsbench_s_and_the_task_files_default_to_them():
    task = load_task(TASK)
    o = B.options(task)
    assert o["preset"] == "rsbench"
    assert (o["resolution"], o["samples"], o["bounces"]) == ([320, 240], 512, 12)
    assert (o["camera_jitter"], o["light_jitter"]) == (0.5, 1.0)
    assert o["sizes"] == ["small", "medium", "large"] and o["materials"] == ["rubber", "metal"]
    assert B.options(task, {"preset": "paper"})["preset"] == "rsbench"     # the earlier name
    f = B.options(task, {"preset": "fast"})
    assert (f["resolution"], f["samples"], f["bounces"]) == ([128, 128], 16, 4)
    assert B.options(task, {"preset": "fast", "resolution": [64, 48]})["resolution"] == [64, 48]
    # a task naming no preset: rsbench's for objects, miniBOIA's picture size for road scenes
    bare = load_task({"name": "bare", "knowledge": "kb/shortcuts/cle4evr.lp",
                      "concepts": [{"name": "color", "count": 2, "domain": ["red", "blue"]}]})
    assert B.options(bare)["preset"] == "rsbench"
    road = B.options(load_task(ROOT / "curricula/rs/driving.yaml"))
    assert (road["preset"], road["resolution"], road["samples"]) == ("miniboia", [469, 387], 128)
    for name in ("cle4evr", "cle4evr_entangled", "cle4evr_range", "cle4evr_rsbench"):
        assert B.options(load_task(ROOT / f"curricula/rs/{name}.yaml"))["preset"] == "rsbench"
    for name in ("driving_3d", "driving_ambulance_3d"):
        assert B.options(load_task(ROOT / f"curricula/rs/{name}.yaml"))["preset"] == "miniboia"


@pytest.mark.parametrize("edit, field, needle", [
    ({"preset": "best"}, "generate.blender.preset", "unknown preset 'best'"),
    ({"preset": ["fast"]}, "generate.blender.preset", "unknown preset"),
    ({"bounces": 2.5}, "generate.blender.bounces", "bounces must be an integer"),
    ({"bounces": -1}, "generate.blender.bounces", "bounces must be an integer"),
    ({"camera_jitter": -0.1}, "generate.blender.camera_jitter", "camera_jitter must be"),
    ({"light_jitter": True}, "generate.blender.light_jitter", "light_jitter must be"),
    ({"engine": ["cycles"]}, "generate.blender.engine", "unknown engine"),
])
def test_bad_generator_settings_are_one_line_exit_2(tmp_path, capsys, monkeypatch, edit, field,
                                                     needle):
    import yaml
    monkeypatch.setattr(B, "bpy_available", lambda: True)
    data = yaml.safe_load(TASK.read_text())
    data["knowledge"] = str(ROOT / "kb/shortcuts/cle4evr.lp")
    data["generate"]["blender"].update(edit)
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["rs", "generate", str(path), "--out", str(tmp_path / "o"), "--samples", "4",
                 "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and needle in err and field in err and "t.yaml" in err
    assert not (tmp_path / "o").exists()


def test_camera_and_lights_jitter_per_sample_within_rsbench_s_bounds():
    task = load_task(TASK)
    opts = B.options(task, SMALL)
    w = ("red", "green", "blue", "cube", "sphere", "cylinder")
    offsets = []
    for k in range(40):
        d = B.describe(task, w, opts, seed=2, split="train", index=k)
        assert d == B.describe(task, w, opts, seed=2, split="train", index=k)
        off = np.subtract(d["camera"]["location"], B.CAMERA["location"])
        assert np.all(np.abs(off) <= 0.5) and d["camera"]["target"] == B.CAMERA["target"]
        for name, (loc, power, size) in B.LIGHTS.items():
            light = d["lights"][name]
            assert np.all(np.abs(np.subtract(light["location"], loc)) <= 1.0)
            assert (light["power"], light["size"]) == (power, size)
        offsets.append(off)
    offsets = np.array(offsets)
    assert offsets.min() < -0.35 and offsets.max() > 0.35        # the whole range is drawn
    assert len({tuple(o) for o in offsets}) == 40
    still = B.describe(task, w, {**opts, "camera_jitter": 0.0, "light_jitter": 0.0}, seed=2,
                       split="train", index=0)
    assert still["camera"] == B.CAMERA
    assert {n: x["location"] for n, x in still["lights"].items()} == \
        {n: loc for n, (loc, _, _) in B.LIGHTS.items()}


def test_rsbench_s_shapes_are_drawable():
    assert set(B.HEIGHT) == set(B.SHAPES) and len(B.SHAPES) == 11
    star = B.star_outline(1.0)
    assert len(star) == 10
    assert [round(float(np.hypot(*p)), 6) for p in star] == [1.0, 0.45] * 5
    heart = np.array(B.heart_outline(0.5))
    assert np.abs(heart[:, 0]).max() <= 0.5 + 1e-9 and np.abs(heart[:, 1]).max() <= 0.5
    task = load_task({"name": "shapes", "knowledge": "kb/shortcuts/cle4evr.lp",
                      "concepts": [{"name": "shape", "count": 2, "domain": list(B.SHAPES)}]})
    B.check_vocabulary(task)
    bad = load_task({"name": "blob", "knowledge": "kb/shortcuts/cle4evr.lp",
                     "concepts": [{"name": "shape", "count": 2, "domain": ["cube", "blob"]}]})
    with pytest.raises(NesyError, match="cannot draw shape 'blob'"):
        B.check_vocabulary(bad)


@needs_bpy
def test_every_shape_renders_where_its_annotation_says(tmp_path):
    """Each of the 11 shapes is built, stands in the picture (its box is inside it and has an
    area) and the picture is not blank. Four 32x32 pictures at one sample."""
    task = load_task({"name": "shapes", "knowledge": "kb/shortcuts/cle4evr.lp",
                      "concepts": [{"name": "color", "count": 3, "domain": ["red", "blue"]},
                                   {"name": "shape", "count": 3, "domain": list(B.SHAPES)}]})
    opts = B.options(task, {"preset": "fast", "resolution": [32, 32], "samples": 1,
                            "sizes": ["large"], "min_visible": 0.2})
    shapes = list(B.SHAPES) + ["cube"]
    jobs = []
    for k in range(4):
        d = B.describe(task, ("red", "blue", "red", *shapes[3 * k:3 * k + 3]), opts, seed=0,
                       split="train", index=k)
        jobs.append((d, str(tmp_path / f"{k}.png"), str(tmp_path / f"{k}.json")))
    assert B.render_all(jobs, n_jobs=1)["rendered"] == 4
    seen = set()
    for _, png, ann in jobs:
        assert np.asarray(Image.open(png)).std() > 1
        for o in json.loads(Path(ann).read_text())["objects"]:
            x0, y0, x1, y1 = o["bbox"]
            assert 0 <= x0 < x1 <= 32 and 0 <= y0 < y1 <= 32
            seen.add(o["shape"])
    assert seen == set(B.SHAPES)


#: run in a fresh interpreter (bpy is not fork-safe): builds the scene of one description
#: ``n`` times, renders each build to 32-bit floats (OpenEXR, no view transform, no rounding
#: to 8 bits) and prints how many different pixel arrays came out
_REBUILD_SCRIPT = r"""
import hashlib, json, os, sys
import numpy as np
import bpy
from nesybench.shortcuts.render import blender as B
from nesybench.shortcuts.render import blender_driving as D
desc, n, path = json.loads(sys.argv[1])
digests = set()
for _ in range(n):
    if desc.get("scene") == "driving":
        scene = B._settings(bpy, desc)
        D.build(bpy, desc)
    else:
        scene = B._build(bpy, desc)[0]
    s = scene.render.image_settings
    s.file_format, s.color_depth, s.exr_codec = "OPEN_EXR", "32", "NONE"
    scene.render.filepath = path
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(path)
    digests.add(hashlib.sha256(np.array(img.pixels[:], dtype=np.float32).tobytes()).hexdigest())
    bpy.data.images.remove(img)
print("DISTINCT", len(digests))
"""


@needs_bpy
@pytest.mark.parametrize("task_file", ["cle4evr.yaml", "driving_3d.yaml"])
def test_a_scene_built_again_renders_the_same_floats(tmp_path, task_file):
    """Rebuilding one scene in one process gives the same linear pixels, not merely the same
    8-bit ones: Blender's own smooth-shading normals of a UV sphere can differ by an ulp between
    two builds in one process, which moved one channel of one pixel by 1 in about one
    picture in ten. Ten builds of a scene with two smooth spheres, 32x32 at one sample."""
    import subprocess  # noqa: PLC0415
    task = load_task(ROOT / "curricula" / "rs" / task_file)
    opts = B.options(task, {"preset": "fast", "resolution": [32, 32], "samples": 1})
    world = (("red", "green", "blue", "sphere", "cylinder", "sphere")
             if task_file == "cle4evr.yaml" else task.support()[0])
    desc = B.describe(task, world, opts, seed=3, split="train", index=0)
    arg = json.dumps([desc, 10, str(tmp_path / "x.exr")])
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT / "python")}
    res = subprocess.run([sys.executable, "-c", _REBUILD_SCRIPT, arg], capture_output=True,
                         text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "DISTINCT 1" in res.stdout.splitlines(), res.stdout[-500:]


_NORMALS_SCRIPT = r"""
import json
import numpy as np
import bpy
from nesybench.shortcuts.render import blender as B
bpy.ops.wm.read_factory_settings(use_empty=True)
ops = bpy.ops.mesh
worst = {}
for name, add in [("sphere", lambda: ops.primitive_uv_sphere_add(radius=0.7, segments=32,
                                                                 ring_count=16)),
                  ("cylinder", lambda: ops.primitive_cylinder_add(radius=0.5, depth=1.0,
                                                                  vertices=32)),
                  ("cone", lambda: ops.primitive_cone_add(radius1=0.5, radius2=0.0, depth=1.0,
                                                          vertices=32)),
                  ("toroid", lambda: ops.primitive_torus_add(major_radius=0.4, minor_radius=0.1,
                                                             major_segments=48,
                                                             minor_segments=16))]:
    add()
    me = bpy.context.object.data
    for poly in me.polygons:
        poly.use_smooth = True
    blender = np.array([v.normal[:] for v in me.vertices])
    ours = B.smooth_vertex_normals(me)
    B.set_vertex_normals(me, ours)
    used = np.array([v.normal[:] for v in me.vertices])
    worst[name] = [float(np.abs(ours - blender).max()), bool(np.array_equal(used, ours)),
                   me.normals_domain]
print("WORST", json.dumps(worst))
"""


@needs_bpy
def test_own_smooth_normals_are_blender_s_and_are_the_ones_used():
    """The normals nesybench gives smooth shapes are Blender's angle-weighted vertex normals
    (within float32 rounding of Blender's own, for each smooth primitive used), and the mesh
    shades with exactly them."""
    import subprocess  # noqa: PLC0415
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT / "python")}
    res = subprocess.run([sys.executable, "-c", _NORMALS_SCRIPT], capture_output=True,
                         text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    line = next(x for x in res.stdout.splitlines() if x.startswith("WORST "))
    worst = json.loads(line[len("WORST "):])
    assert set(worst) == {"sphere", "cylinder", "cone", "toroid"}
    for name, (diff, used, domain) in worst.items():
        assert diff < 2e-5, name
        assert used and domain == "POINT", name
