"""CLE4EVR with a range of objects per scene: ``support: {objects: [min, max]}`` over object
slots whose attributes include ``none`` (an absent object), absent objects last as rsbench
numbers them. Counts against brute force and a closed form; rendering (where bpy is installed)
shows exactly the present objects."""
from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import pytest
import yaml

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.shortcuts.render import blender as B
from nesybench.shortcuts.count import count_rs
from nesybench.shortcuts.generate import generate
from nesybench.shortcuts.task import absent_last, load_task, present_objects

ROOT = Path(__file__).resolve().parents[1]
RANGE = ROOT / "curricula" / "rs" / "cle4evr_range.yaml"


def _task(colours, shapes, slots, lo, hi, **extra):
    return load_task({"name": "r", "knowledge": "kb/shortcuts/cle4evr.lp", "maps": "shared",
                      "concepts": [{"name": "color", "count": slots, "domain": colours},
                                   {"name": "shape", "count": slots, "domain": shapes}],
                      "support": {"objects": [lo, hi]}, **extra})


def test_the_support_is_the_whole_or_absent_worlds_in_range():
    task = _task(["red", "blue", "none"], ["cube", "sphere", "none"], 3, 2, 3)
    sup = task.support()
    want = []
    for w in itertools.product(*[v.domain for v in task.variables]):
        cols, shapes = w[:3], w[3:]
        if any((c == "none") != (s == "none") for c, s in zip(cols, shapes)):
            continue
        n = sum(c != "none" for c in cols)
        # absent objects last: objects 1..n present, the rest absent
        if 2 <= n <= 3 and all(c != "none" for c in cols[:n]):
            want.append(w)
    assert sorted(sup) == sorted(want)
    assert len(sup) == 4 ** 2 + 4 ** 3 == 80
    assert ("red", "none", "blue", "cube", "none", "cube") not in sup
    assert ("red", "blue", "none", "cube", "cube", "none") in sup
    assert {present_objects(task, w) for w in sup} == {2, 3}
    # the label needs two present objects alike: an absent pair never counts
    labels = dict(zip(sup, task.labels_of(sup)))
    assert labels[("red", "red", "none", "cube", "cube", "none")] == (1,)
    assert labels[("red", "blue", "none", "cube", "cube", "none")] == (0,)
    assert task.labels_of([("none",) * 3 + ("none",) * 3]) == [(0,)]


def _label(w, k):
    """The rule by hand: two present objects (colour not none) with equal colour and shape."""
    objs = [(c, s) for c, s in zip(w[:k], w[k:]) if c != "none"]
    return int(len(set(objs)) < len(objs))


@pytest.mark.parametrize("colours, shapes", [
    (["red", "blue", "none"], ["cube", "sphere", "none"]),
    (["red", "green", "blue", "none"], ["cube", "sphere", "none"]),
])
def test_counts_match_brute_force(colours, shapes):
    task = _task(colours, shapes, 3, 2, 3)
    sup = task.support()
    want = [_label(w, 3) for w in sup]
    assert [y for (y,) in task.labels_of(sup)] == want
    n = 0
    for cm in itertools.product(colours, repeat=len(colours)):
        ca = dict(zip(colours, cm))
        mapped_c = [tuple(ca[x] for x in w[:3]) for w in sup]
        for sm in itertools.product(shapes, repeat=len(shapes)):
            sa = dict(zip(shapes, sm))
            n += all(_label(c + tuple(sa[x] for x in w[3:]), 3) == y
                     for c, w, y in zip(mapped_c, sup, want))
    assert count_rs(task, support=sup).count == n


@pytest.mark.parametrize("support, needle", [
    ({"objects": [3, 2]}, "objects must be [min, max]"),
    ({"objects": [1]}, "objects must be [min, max]"),
    ({"objects": [1, 5]}, "exceeds the task's 3 objects"),
    ({"objects": [2, 3], "sample": 4}, "support is 'all'"),
])
def test_bad_object_ranges_are_one_error(tmp_path, capsys, support, needle):
    data = {"name": "r", "knowledge": str(ROOT / "kb/shortcuts/cle4evr.lp"),
            "concepts": [{"name": "color", "count": 3, "domain": ["red", "none"]}],
            "support": support}
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(data))
    assert main(["rs", "count", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and needle in err, err


def test_absent_objects_need_the_none_value():
    with pytest.raises(NesyError, match="needs the value 'none'"):
        _task(["red", "blue"], ["cube", "sphere"], 3, 2, 3).support()
    assert len(_task(["red", "blue"], ["cube", "sphere"], 2, 2, 2).support()) == 16


def test_shipped_range_task_support():
    task = load_task(RANGE)
    sup = task.support()
    assert len(sup) == 9 ** 2 + 9 ** 3 == 810
    assert {present_objects(task, w) for w in sup} == {2, 3}
    for w in sup:      # objects 1..n present, n + 1..4 absent
        n = present_objects(task, w)
        assert all(x != "none" for x in w[:n] + w[4:4 + n])
        assert set(w[n:4] + w[4 + n:]) <= {"none"}


@pytest.mark.skipif(not B.bpy_available(), reason=f"bpy is not installed ({B.INSTALL_HINT})")
def test_rendered_scenes_show_exactly_the_present_objects(tmp_path):
    task = load_task(RANGE)
    out = tmp_path / "D"
    generate(task, out, seed=1, samples={"train": 4, "val": 0, "test": 0, "ood": 3},
             render_options={"preset": "fast", "resolution": [48, 48], "samples": 1,
                             "workers": 2})
    seen = set()
    for split in ("train", "ood"):
        for row in csv.DictReader((out / split / "labels.csv").open(newline="")):
            world = tuple(row[f"concept:{v.name}"] for v in task.variables)
            n = present_objects(task, world)
            assert (2 <= n <= 3) == (split == "train")
            assert absent_last(task, world)
            seen.add(n)
            ann = json.loads((out / split / row["file"].replace(".png", ".json")).read_text())
            objs = ann["objects"]
            assert len(objs) == n
            assert [o["object"] for o in objs] == list(range(1, n + 1))
            for o in objs:       # each drawn object is its slot's colour and shape
                assert (o["color"], o["shape"]) == (row[f"concept:color({o['object']})"],
                                                    row[f"concept:shape({o['object']})"])
            assert [str(y) for y in task.labels_of([world])[0]] == [row["label:y"]]
    assert seen & {0, 1, 4} and seen & {2, 3}


def test_a_support_world_with_half_an_object_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(B, "bpy_available", lambda: True)
    data = yaml.safe_load(RANGE.read_text())
    data["knowledge"] = str(ROOT / "kb/shortcuts/cle4evr.lp")
    data["support"] = ["red,blue,none,none,cube,cube,sphere,none"]
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(data))
    assert main(["rs", "generate", str(p), "--out", str(tmp_path / "o"), "--samples", "4",
                 "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "some attributes none" in err
    assert not (tmp_path / "o").exists()


def test_entangled_objects_can_be_absent_too():
    task = load_task({"name": "e", "knowledge": "kb/shortcuts/cle4evr.lp", "maps": "shared",
                      "concepts": [{"name": "obj", "count": 3,
                                    "domain": ["red_cube", "blue_cube", "none"]}],
                      "support": {"objects": [2, 3]}})
    sup = task.support()
    assert len(sup) == 2 ** 2 + 2 ** 3 == 12
    labels = dict(zip(sup, task.labels_of(sup)))
    assert labels[("red_cube", "red_cube", "none")] == (1,)
    assert labels[("red_cube", "blue_cube", "none")] == (0,)
    assert ("red_cube", "none", "red_cube") not in labels
    opts = B.options(task, {"resolution": [64, 64]})
    objs = B.describe(task, ("blue_cube", "red_cube", "none"), opts, seed=0, split="train",
                      index=0)["objects"]
    assert [(o["object"], o["color"], o["shape"]) for o in objs] == \
        [(1, "blue", "cube"), (2, "red", "cube")]


def test_absent_objects_come_last():
    """rsbench numbers a scene's objects 1..n and puts absent ones last: a world with an absent
    object before a present one is neither in the support nor drawn (its picture would be that
    of the world with the same objects numbered from 1), and a support list holding one is one
    error line."""
    task = _task(["red", "blue", "none"], ["cube", "sphere", "none"], 4, 0, 4)
    sup = task.support()
    # every prefix of present objects: sum over n of (2 colours * 2 shapes)^n
    assert len(sup) == sum(4 ** n for n in range(5)) == 341
    assert all(absent_last(task, w) for w in sup)
    n_absent_last = 0
    for w in itertools.product(*[v.domain for v in task.variables]):
        if present_objects(task, w) is None:
            continue
        present = [c != "none" for c in w[:4]]
        want = present == sorted(present, reverse=True)
        assert absent_last(task, w) == want == B.drawable(task, w), w
        n_absent_last += want
    assert n_absent_last == len(sup)
    gap = ("red", "none", "blue", "none", "cube", "none", "sphere", "none")
    assert B.undrawable(task, gap).startswith("has an absent object before a present one")
    assert "some attributes none" in B.undrawable(task, ("red",) + ("none",) * 7)


def test_a_support_world_with_a_gap_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(B, "bpy_available", lambda: True)
    data = yaml.safe_load(RANGE.read_text())
    data["knowledge"] = str(ROOT / "kb/shortcuts/cle4evr.lp")
    data["support"] = ["red,none,blue,none,cube,none,sphere,none"]
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(data))
    assert main(["rs", "generate", str(p), "--out", str(tmp_path / "o"), "--samples", "4",
                 "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "absent object before a present one" in err, err
    assert not (tmp_path / "o").exists()
