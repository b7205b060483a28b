"""``support: {generator: miniboia}``: miniBOIA's worlds as rsbench's generator draws them.

Every world is consistent (one light state, a lane xor its absence on each side, ``road_clear``
exactly without an obstacle ahead), the action vectors are balanced up to ``n_config``, the
buckets are the labels of the rules (``kb/shortcuts/driving.lp`` and rsbench's ``sddoiaK`` as
transcribed in test_shortcuts_ambulance.py), one seed gives one set of worlds in any process,
and a generated data set (the flat Pillow renderer) holds only such worlds.

The pinned numbers are those of rsbench's own generator (``rssgen/sddoia``,
``configurations_split``) run with the same seed and ``n_config``: the same multiset of
configurations, per seed 0, 1, 2, 7 and 11 and ``n_config`` 3, 5 and 100.
"""
from __future__ import annotations

import collections
import csv
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.shortcuts.datasets import miniboia as M
from nesybench.shortcuts.generate import generate
from nesybench.shortcuts.task import load_task, miniboia_labels
from test_shortcuts_ambulance import ood_sddoia_k, sddoia_k

#: the in-distribution knowledge's labels, which sort the generator's draws
LABELS = miniboia_labels()

ROOT = Path(__file__).resolve().parents[1]
TASKS = ["driving", "driving_ambulance", "driving_3d", "driving_ambulance_3d"]


def _task(name="driving"):
    return load_task(ROOT / "curricula" / "rs" / f"{name}.yaml")


def contradictions(w: dict) -> list[str]:
    """The consistency rules ``w`` (a world over miniBOIA's names) breaks."""
    bad = []
    if w["red_light"] and w["green_light"]:
        bad.append("red and green light")
    for side in ("left", "right"):
        if w[f"{side}_lane"] == w[f"no_{side}_lane"]:
            bad.append(f"{side}_lane and no_{side}_lane agree")
    if w["road_clear"] != int(not any(w[c] for c in M.OBSTACLES)):
        bad.append("road_clear disagrees with the obstacles")
    if not w["left_green_light"] == w["right_green_light"] == w["green_light"]:
        bad.append("the green lights disagree")
    return bad


def _rsbench_names(w: dict) -> dict:
    return {("stop_sign" if k == "traffic_sign" else k): v for k, v in w.items()}


@pytest.mark.parametrize("n_config,seed", [(5, 0), (100, 0), (20, 3)])
def test_no_world_has_contradictory_concepts(n_config, seed):
    d = M.draws(n_config, seed, LABELS)
    worlds = [w for ws in d.buckets.values() for w in ws] + list(d.left_out)
    assert len(worlds) == d.draws
    assert [contradictions(w) for w in worlds if contradictions(w)] == []


def test_the_action_vectors_are_balanced_up_to_n_config():
    d = M.draws(5, 0, LABELS)
    assert {b: len(ws) for b, ws in d.buckets.items()} == {b: 5 for b in M.BUCKETS}
    assert len(M.BUCKETS) == 8 and all(s != f for s, f, _, _ in M.BUCKETS)
    assert d.draws == 4 * d.rounds < 2004           # stopped because every bucket was full
    # rsbench's default: both turns open is rare (only the stop and forward scenes draw it),
    # so its two buckets stay short when the 2,000-draw budget runs out
    d = M.draws(100, 0, LABELS)
    sizes = {"".join(map(str, b)): len(ws) for b, ws in d.buckets.items()}
    assert sizes == {"0100": 100, "0101": 100, "0110": 100, "0111": 8,
                     "1000": 100, "1001": 100, "1010": 100, "1011": 11}
    assert (d.rounds, d.draws) == (501, 2004)


def test_buckets_are_the_labels_of_the_rules():
    """The bucket of each kept configuration is its label under driving.lp and under the
    transcription of rsbench's sddoiaK; the ambulance task labels the same worlds by
    oodSDDoiaK."""
    d = M.draws(20, 1, LABELS)
    task, amb = _task("driving"), _task("driving_ambulance")
    names = task.label_names()
    worlds = [w for ws in d.buckets.values() for w in ws]
    ours = task.labels_of([tuple(w[v.name] for v in task.variables) for w in worlds])
    theirs = amb.labels_of([tuple(w[v.name] for v in amb.variables) for w in worlds])
    keys = [b for b, ws in d.buckets.items() for _ in ws]
    for w, key, y, y_amb in zip(worlds, keys, ours, theirs):
        got = dict(zip(names, y))
        assert key == (got["stop"], got["forward"], got["left"], got["right"])
        ref = sddoia_k(_rsbench_names(w))
        assert key == tuple(int(ref[a]) for a in ("stop", "forward", "left", "right"))
        ref = ood_sddoia_k(_rsbench_names(w))
        assert tuple(int(ref[a]) for a in names) == tuple(y_amb)


def test_each_generator_draws_its_action():
    """A forward scene goes forward, a stop scene stops, a turn scene may turn that way."""
    import random
    rng = random.Random(4)
    task = _task()
    names = task.label_names()
    for action in ("forward", "stop", "left", "right"):
        ws = [M.draw_world(rng, action) for _ in range(200)]
        for y in task.labels_of([tuple(w[v.name] for v in task.variables) for w in ws]):
            assert dict(zip(names, y))[action] == 1, action


def test_the_task_files_use_the_generator_with_one_set_of_worlds():
    tasks = [_task(n) for n in TASKS]
    for t in tasks:
        assert t.support_spec == {"generator": "miniboia", "n_config": 100, "seed": 0}
        s = t.raw["generate"]["samples"]
        n = s["train"] / 0.7            # rsbench's n_samples: train 0.7, val and test 0.15, OOD 0.1
        assert s == {"train": round(0.7 * n), "val": round(0.15 * n), "test": round(0.15 * n),
                     "ood": round(0.1 * n)}
    supports = [[dict(zip((v.name for v in t.variables), w)) for w in t.support()]
                for t in tasks]
    key = [sorted(tuple(sorted(d.items())) for d in s) for s in supports]
    assert all(k == key[0] for k in key) and len(key[0]) == 342


def test_support_is_distinct_and_the_ood_pool_is_outside_it():
    t = _task()
    sup = t.support()
    assert len(sup) == len(set(sup)) == 342
    kept, ood = t.generated_pools()
    assert len(kept) == 619 and set(kept) == set(sup)     # repeats kept: rs generate's pool
    assert len(ood) == len(set(ood)) == 337 and not set(ood) & set(sup)
    assert _task("xor").generated_pools() is None
    labels = collections.Counter(t.labels_of(sup))
    assert len(labels) == 8


def test_same_seed_same_worlds_in_any_process():
    """The multiset of kept configurations of seed 0 and n_config 5 is rsbench's (pinned
    digest), and so in a fresh process under another hash seed."""
    code = ("import hashlib; from nesybench.shortcuts.datasets import miniboia as M\n"
            "from nesybench.shortcuts.task import miniboia_labels\n"
            "d = M.draws(5, 0, miniboia_labels())\n"
            "rows = sorted(''.join(str(w[c]) for c in M.CONCEPTS)"
            " for ws in d.buckets.values() for w in ws)\n"
            "print(hashlib.sha256(','.join(rows).encode()).hexdigest())")
    d = M.draws(5, 0, LABELS)
    rows = sorted("".join(str(w[c]) for c in M.CONCEPTS) for ws in d.buckets.values() for w in ws)
    here = hashlib.sha256(",".join(rows).encode()).hexdigest()
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": h}, check=True).stdout.strip()
            for h in ("1", "2")}
    assert outs == {here}
    assert here == PINNED_SEED0_N5
    assert M.draws(5, 1, LABELS).buckets != d.buckets


#: sha256 of seed 0, n_config 5's 40 kept configurations (rsbench's configurations_split gives
#: the same multiset)
PINNED_SEED0_N5 = "8ab395dc16a35387e58c1be4480ce6919d4c04915bc60cb3f7f6e0fa8c36ce6e"


def test_a_generated_set_has_consistent_balanced_worlds(tmp_path):
    """The flat renderer on driving.yaml: every split's worlds are consistent, their labels are
    the rules', train shows every action vector equally often, OOD worlds are generator draws
    outside the support."""
    task = _task()
    out = tmp_path / "d"
    generate(task, out, seed=0, samples={"train": 16, "val": 8, "test": 0, "ood": 8})
    names = task.label_names()
    sup = set(task.support())
    for split in ("train", "val", "ood"):
        with open(out / split / "labels.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        worlds = [tuple(int(r[f"concept:{v.name}"]) for v in task.variables) for r in rows]
        for w in worlds:
            assert contradictions(dict(zip((v.name for v in task.variables), w))) == []
        assert [tuple(str(x) for x in y) for y in task.labels_of(worlds)] == \
            [tuple(r[f"label:{n}"] for n in names) for r in rows]
        assert all((w in sup) == (split != "ood") for w in worlds)
        if split == "train":
            acts = collections.Counter(tuple(r[f"label:{n}"] for n in names) for r in rows)
            assert len(acts) == 8 and set(acts.values()) == {2}


def test_rs_count_on_the_generated_support(capsys):
    assert main(["rs", "count", "driving"]) == 0
    assert "101614 optimal disentangled maps (separate) on 342 support worlds" in \
        capsys.readouterr().out


@pytest.mark.parametrize("support,needle", [
    ({"generator": "boia"}, "unknown support generator"),
    ({"generator": "miniboia", "n_config": 0}, "n_config must be an integer"),
    ({"generator": "miniboia", "n_config": True}, "n_config must be an integer"),
    ({"generator": "miniboia", "n_config": "100"}, "n_config must be an integer"),
    ({"generator": "miniboia", "n_config": 10**12}, "n_config must be an integer"),
    ({"sample": 3, "n_config": 2}, "support is 'all'"),
    ({"generator": "miniboia", "n_samples": 2}, "support is 'all'"),
])
def test_bad_generator_specs_are_one_error(support, needle):
    raw = yaml.safe_load((ROOT / "curricula/rs/driving.yaml").read_text())
    raw["support"] = support
    with pytest.raises(NesyError, match=needle):
        load_task(raw, base=ROOT)


def test_the_generator_on_another_task_is_one_error_line(tmp_path, capsys):
    p = tmp_path / "t.yaml"
    p.write_text("name: t\nconcepts: [{name: b, count: 3, domain: [0, 1]}]\n"
                 "knowledge: kb/shortcuts/xor.lp\nsupport: {generator: miniboia, n_config: 2}\n")
    assert main(["rs", "count", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs miniBOIA's 21 concepts" in err[0]
