"""miniBOIA's images as rsbench assigns them (``balance: rsbench``), the guide's miniBOIA
figures read from the generator, and ``kb/shortcuts/driving_rsbench.lp`` (rsbench's
``sddoiaK`` as written).

The reference is a transcription of the arithmetic of rsbench's ``configurations_split``
(``rssgen/rssgen/sddoia/sddoia.py``): fill the 8 buckets round by round until they are full or
more than 2,000 draws were made, shuffle each bucket and then the bucket order with the same
random stream, split ``int(n_samples · ratio)`` images (at least 1) evenly over the buckets
(the OOD split walks them in reverse), and each bucket's share evenly over ``n_config``
configurations, larger shares first, keeping the nonzero shares."""
from __future__ import annotations

import collections
import csv
import json
import random
import re
from pathlib import Path

import pytest

from nesybench.errors import NesyError
from nesybench.shortcuts.datasets import miniboia as M
from nesybench.shortcuts.generate import balanced, generate
from nesybench.shortcuts.task import load_task, miniboia_labels
from test_shortcuts_ambulance import sddoia_k

ROOT = Path(__file__).resolve().parents[1]
LABELS = miniboia_labels()
GUIDE = ROOT / "docs" / "guides" / "shortcuts.md"


def _task(name="driving"):
    return load_task(ROOT / "curricula" / "rs" / f"{name}.yaml")


def reference_split(seed: int, n_conf: int, n_samples: int) -> dict:
    """rsbench's split, transcribed: ``{split: [(world, images), ...]}``."""
    rng = random.Random(seed)
    keys = [f"{s}{1 - s}{left}{right}" for s in (0, 1) for left in (0, 1) for right in (0, 1)]
    bucket = {k: [] for k in keys}
    made = 0
    while any(len(v) != n_conf for v in bucket.values()):
        for action in ("forward", "stop", "left", "right"):
            w = M.draw_world(rng, action)
            key = "".join(str(int(v)) for v in LABELS([tuple(w[c] for c in M.CONCEPTS)])[0])
            if len(bucket[key]) < n_conf:
                bucket[key].append(w)
            made += 1
        if made > 2000:
            break
    for k in keys:
        rng.shuffle(bucket[k])
    order = list(keys)
    rng.shuffle(order)

    def spread(n, m):
        return [n // m + (1 if i < n % m else 0) for i in range(m)]

    out = {}
    for split, ratio in (("train", 0.7), ("val", 0.15), ("test", 0.15), ("ood", 0.1)):
        n = max(int(n_samples * ratio), 1)
        walk = order[::-1] if split == "ood" else order
        rows = []
        for label_idx, k in enumerate(walk):
            per = [x for x in spread(spread(n, len(walk))[label_idx], n_conf) if x != 0]
            for i, w in enumerate(bucket[k]):
                if i > len(per) - 1:
                    break
                rows.append((w, per[i]))
        out[split] = rows
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_images_per_configuration_are_rsbench_s(seed):
    ref = reference_split(seed, 100, 10_000)
    ours = M.rsbench_images(100, seed, LABELS, M.rsbench_sizes(10_000))
    assert ours.keys() == ref.keys()
    for split in ref:
        assert ours[split] == ref[split], split


def test_small_n_config_and_small_splits_follow_the_shuffle():
    """With fewer images than configurations, the shuffles decide which ones get an image."""
    for seed, n_conf, n in ((3, 5, 40), (7, 3, 100), (11, 20, 57)):
        assert M.rsbench_images(n_conf, seed, LABELS, M.rsbench_sizes(n)) == \
            reference_split(seed, n_conf, n)


def _vector_counts(pairs):
    c = collections.Counter()
    for w, k in pairs:
        c[tuple(int(v) for v in LABELS([tuple(w[x] for x in M.CONCEPTS)])[0])] += k
    return c


def test_seed_0_train_counts():
    """At seed 0 and 10,000 samples: 875 train images for six vectors, 72 and 99 for the two
    with 8 and 11 configurations, 5,421 in all."""
    imgs = M.rsbench_images(100, 0, LABELS, M.rsbench_sizes(10_000))
    counts = _vector_counts(imgs["train"])
    assert counts[(0, 1, 1, 1)] == 72 and counts[(1, 0, 1, 1)] == 99
    assert sorted(counts.values()) == [72, 99] + [875] * 6
    assert {k: sum(n for _, n in v) for k, v in imgs.items()} == \
        {"train": 5421, "val": 1162, "test": 1162, "ood": 788}


def test_generate_with_balance_rsbench(tmp_path):
    task = _task()
    out = tmp_path / "d"
    res = generate(task, out, seed=0, total=40, balance="rsbench")
    plan = task.rsbench_images(M.rsbench_sizes(40))
    assert res.counts == {k: len(v) for k, v in plan.items()} == \
        {"train": 28, "val": 6, "test": 6, "ood": 4}
    for split, worlds in plan.items():
        with open(out / split / "labels.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert [tuple(int(r[f"concept:{v.name}"]) for v in task.variables) for r in rows] == \
            worlds
    assert json.loads((out / "manifest.json").read_text())["balance"] == "rsbench"
    again = tmp_path / "e"
    generate(task, again, seed=0, total=40)
    assert "balance" not in json.loads((again / "manifest.json").read_text())


def test_balance_errors(tmp_path):
    with pytest.raises(NesyError, match="needs support: {generator: miniboia}"):
        generate(_task("xor"), tmp_path / "x", seed=0, total=8, balance="rsbench")
    with pytest.raises(NesyError, match="balance must be equal or rsbench"):
        load_task({**_task().raw, "generate": {"balance": "even"}})


# -- the guide's miniBOIA table, read from the generator ----------------------------------

def _row(name: str) -> str:
    """The row ``name`` of the guide's miniBOIA side-by-side table."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index("## miniBOIA's worlds"):text.index("### miniBOIA in 3D")]
    (row,) = [ln for ln in section.splitlines() if ln.startswith(f"| {name} |")]
    cite = row.rsplit("|", 2)[-2].strip()
    assert cite == "-" or all(
        re.fullmatch(r"`[a-z_]+\.py` \d+(–\d+)?(, \d+(–\d+)?)*", part)
        for part in re.split(r", (?=`)", cite)), f"{name}: no rsbench file and line: {cite}"
    return row


def _fmt(n: int) -> str:
    return f"{n:,}"


def test_the_guide_s_miniboia_figures_are_the_generator_s():
    text = GUIDE.read_text(encoding="utf-8")
    assert "at most 2,000 draws" not in text
    assert "keeps the other side's obstacle, follow and solid-line bits" not in text
    d = M.draws(100, 0, LABELS)
    row = _row("balance")
    assert f"{_fmt(d.draws)} draws" in row and d.draws == 2004 and d.rounds == 501
    small = sorted(len(v) for v in d.buckets.values() if len(v) < 100)
    assert small == [8, 11] and "except 8 (forward, left, right) and 11 (stop, left, right)" in row
    sizes = {}
    for name, dims in (("driving", "2D"), ("driving_3d", "3D")):
        s = _task(name).raw["generate"]["samples"]
        sizes[dims] = "/".join(str(s[k]) for k in ("train", "val", "test", "ood"))
    assert f"{sizes['2D']} (2D), {sizes['3D']} (3D)" in _row("split sizes")
    rs = M.rsbench_sizes(10_000)
    imgs = M.rsbench_images(100, 0, LABELS, rs)
    totals = {k: sum(n for _, n in v) for k, v in imgs.items()}
    row = _row("images, `balance: rsbench`")
    counts = sorted(_vector_counts(imgs["train"]).values())
    assert f"875 images for six vectors and {counts[0]} and {counts[1]} for the two rare" in row
    assert f"{_fmt(totals['train'])}, not {_fmt(rs['train'])}" in row
    assert (f"train {_fmt(totals['train'])}, val {_fmt(totals['val'])}, "
            f"test {_fmt(totals['test'])}, OOD {_fmt(totals['ood'])}") in row
    row = _row("images, `balance: equal` (the default)")
    n = int(re.search(r"--samples train=(\d+)", row).group(1))
    task = _task()
    kept, _ = task.generated_pools()
    labels = task.labels_of(kept)
    got = collections.Counter(labels[i] for i in balanced(kept, labels, n, random.Random(0)))
    assert set(got.values()) == {n // 8} and f"{n // 8} images per vector, {_fmt(n)}" in row


# -- rsbench's sddoiaK as written --------------------------------------------------------------

def test_driving_rsbench_lp_is_sddoiak_and_driving_lp_on_consistent_worlds():
    rsb = load_task({**_task().raw, "name": "driving_rsbench",
                     "knowledge": "kb/shortcuts/driving_rsbench.lp"})
    ours = _task()
    names = [v.name for v in ours.variables]
    rng = random.Random(0)
    worlds = [tuple(rng.getrandbits(1) for _ in names) for _ in range(3000)]
    order = rsb.label_names()
    for w, y in zip(worlds, rsb.labels_of(worlds)):
        c = {("stop_sign" if k == "traffic_sign" else k): bool(v) for k, v in zip(names, w)}
        ref = sddoia_k(c)
        assert tuple(int(v) for v in y) == tuple(int(bool(ref[k])) for k in order)
    sup = ours.support()
    assert rsb.labels_of(sup) == ours.labels_of(sup)


def test_every_side_by_side_row_cites_rsbench_s_code():
    """The guide's tables against rsbench's generators (CLE4EVR, miniBOIA's worlds, miniBOIA
    in 3D): every row names the rsbench file and lines it was checked against."""
    tables, current = [], None
    for ln in GUIDE.read_text(encoding="utf-8").splitlines():
        if ln.startswith("|") and ln.rstrip().endswith("checked against |"):
            current = []
            tables.append(current)
        elif current is not None and ln.startswith("| ") and not ln.startswith("|---"):
            current.append(ln)
        elif not ln.startswith("|"):
            current = None
    assert len(tables) == 3 and [len(t) for t in tables] == [27, 13, 10]
    for rows in tables:
        for row in rows:
            cite = row.rsplit("|", 2)[-2].strip()
            assert cite == "-" or re.match(r"`[a-z_]+\.(py|json|yml)` \d", cite), row
