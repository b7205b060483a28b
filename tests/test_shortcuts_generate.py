"""RS generators (balanced splits, held-out pools, Dataset) and the `nesybench rs` CLI."""
import csv
import json
from collections import Counter

import pytest
from click.testing import CliRunner

from nesybench.errors import NesyError
from nesybench.shortcuts.cli import group
from nesybench.shortcuts.generate import RSDataset, digit_pools, generate, load_digits_source
from nesybench.shortcuts.task import load_task


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("name", ["mnist_logic", "kandinsky", "driving"])
def test_balanced_splits_and_dataset(tmp_path, name):
    task = load_task(f"curricula/rs/{name}.yaml")
    out = tmp_path / name
    res = generate(task, out, seed=1, samples={"train": 24, "val": 12, "test": 12, "ood": 12})
    support = set(task.support(seed=1))
    names = task.label_names()
    for split in ("train", "val", "test", "ood"):
        rs = rows(out / split / "labels.csv")
        assert len(rs) == res.counts[split] == (24 if split == "train" else 12)
        hist = Counter(tuple(r[f"label:{n}"] for n in names) for r in rs)
        assert len(hist) >= 2, f"{split} must hold positives and negatives"
        assert max(hist.values()) - min(hist.values()) <= 1
        worlds = {tuple(r[f"concept:{v.name}"] for v in task.variables) for r in rs}
        in_dist = {tuple(map(str, w)) for w in support}
        assert worlds <= in_dist if split != "ood" else not (worlds & in_dist)
    man = json.loads((out / "manifest.json").read_text())
    assert man["counts"] == res.counts and "train/labels.csv" in man["checksums"]
    ds = RSDataset(out, "val")
    img, lab, conc = ds[0]
    assert len(ds) == 12 and img.ndim == 3 and lab.shape == (len(names),)
    assert conc.shape == (len(task.variables),)


def test_digit_pools_are_disjoint_and_deterministic(tmp_path):
    x, y = load_digits_source()
    pools = digit_pools(x, y, 0)
    for cls in range(10):
        sets = [set(pools[s][cls]) for s in ("train", "val", "test", "ood")]
        assert sum(map(len, sets)) == len(set().union(*sets))
    task = load_task("curricula/rs/mnadd_half.yaml")
    a = generate(task, tmp_path / "a", seed=3, samples={"train": 10, "val": 4, "test": 4, "ood": 4})
    b = generate(task, tmp_path / "b", seed=3, samples={"train": 10, "val": 4, "test": 4, "ood": 4})
    assert a.label_counts == b.label_counts
    ma = json.loads((tmp_path / "a" / "manifest.json").read_text())["checksums"]
    mb = json.loads((tmp_path / "b" / "manifest.json").read_text())["checksums"]
    assert ma == mb


def test_cli_count_severity_metrics(tmp_path):
    r = CliRunner()
    res = r.invoke(group, ["count", "curricula/rs/mnadd_evenodd.yaml", "--json", "--list", "3"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["count"] == 36 and d["count_without_identity"] == 35 and len(d["rss"]) == 3
    res = r.invoke(group, ["count", "curricula/rs/xor.yaml", "--map", "perm", "--json"])
    assert json.loads(res.output)["count"] == 24
    res = r.invoke(group, ["severity", "curricula/rs/xor.yaml", "curricula/rs/and3.yaml", "--json",
                           "--supervised", "b(1),b(2)"])
    assert res.exit_code == 0 and json.loads(res.output)["supervision"]["removes_all"]
    pred = tmp_path / "pred.csv"
    pred.write_text("label:y,pred_label:y,concept:a,pred_concept:a\n1,1,0,0\n0,1,1,0\n")
    res = r.invoke(group, ["metrics", str(pred), "--json", "--out", str(tmp_path / "m")])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["label_accuracy"] == 0.5
    assert (tmp_path / "m" / "metrics.json").exists()
    for cmd in ("generate", "count", "severity", "metrics"):
        assert r.invoke(group, [cmd, "--help"]).exit_code == 0


def test_bad_inputs(tmp_path):
    r = CliRunner()
    bad = tmp_path / "bad.lp"
    bad.write_text("y(K, y, 1) :- ctx(K), c(K, T, .\n")
    t = tmp_path / "t.yaml"
    t.write_text(f"name: t\nconcepts: [{{name: b, count: 2, domain: [0, 1]}}]\nknowledge: {bad}\n")
    res = r.invoke(group, ["count", str(t)])
    assert res.exit_code == 2 and "syntax error" in res.output
    bad.write_text("y(K, y, X) :- ctx(K).\n")          # unsafe variable X
    res = r.invoke(group, ["count", str(t)])
    assert res.exit_code == 2 and "unsafe" in res.output.lower()
    bad.write_text("y(K, y, 1) :- ctx(K), c(K, b(1), 0).\n")   # no label for some worlds
    with pytest.raises(NesyError, match="no value for label 'y' on world \\[1, 0\\]"):
        load_task(str(t)).labels_of([(0, 0), (1, 0)])
    res = r.invoke(group, ["count", str(t)])
    assert res.exit_code == 2 and "no value for label" in res.output
    sup = tmp_path / "s.csv"
    sup.write_text("d(1),d(2),label:sum\n0,1,1\n2,3,6\n")
    res = r.invoke(group, ["count", "curricula/rs/mnadd_half.yaml", "--support", str(sup)])
    assert res.exit_code == 2 and "not what the knowledge produces" in res.output
    sup.write_text("d(1),d(2)\n0,1\n2,9\n")
    res = r.invoke(group, ["count", "curricula/rs/mnadd_half.yaml", "--support", str(sup)])
    assert res.exit_code == 2 and "outside its domain" in res.output
    big = tmp_path / "big.yaml"
    big.write_text("name: big\nconcepts: [{name: d, count: 8, domain: {range: [0, 9]}}]\n"
                   "knowledge: kb/shortcuts/addition.lp\nsupport: ['0,0,0,0,0,0,0,1']\n")
    res = r.invoke(group, ["count", str(big), "--map", "joint"])
    assert res.exit_code == 2 and "use --map disentangled" in res.output
    res = r.invoke(group, ["generate", "curricula/rs/xor.yaml", "--out", str(tmp_path / "o"),
                           "--samples", "train=x"])
    assert res.exit_code == 2 and not (tmp_path / "o").exists()


def test_support_from_generated_dataset(tmp_path):
    r = CliRunner()
    out = tmp_path / "half"
    assert r.invoke(group, ["generate", "curricula/rs/mnadd_half.yaml", "--out", str(out),
                            "--samples", "train=20", "--samples", "val=4", "--samples", "test=4",
                            "--samples", "ood=4"]).exit_code == 0
    res = r.invoke(group, ["count", "curricula/rs/mnadd_half.yaml", "--support", str(out), "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["count"] == 3
    a3 = tmp_path / "and3"
    assert r.invoke(group, ["generate", "curricula/rs/and3.yaml", "--out", str(a3), "--samples",
                            "train=20"]).exit_code == 0
    res = r.invoke(group, ["severity", "curricula/rs/xor.yaml", "curricula/rs/and3.yaml",
                           "--target-support", str(a3), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["average"] > 0.25   # balanced target data: more positives


def _idx(dims, payload: bytes) -> bytes:
    import struct
    return b"\0\0\x08" + bytes([len(dims)]) + struct.pack(">" + "I" * len(dims), *dims) + payload


def _mnist(folder, n=40, gz=True):
    import gzip

    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    y = np.arange(n, dtype=np.uint8) % 10
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (("train-images-idx3-ubyte", _idx(x.shape, x.tobytes())),
                       ("train-labels-idx1-ubyte", _idx(y.shape, y.tobytes()))):
        if gz:
            (folder / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (folder / name).write_bytes(data)
    return x, y


def test_mnist_folder_read_through_the_door(tmp_path):
    import gzip
    import os

    import numpy as np
    x, y = _mnist(tmp_path / "m")
    gx, gy = load_digits_source(str(tmp_path / "m"))
    assert np.array_equal(gx, x) and np.array_equal(gy, y)
    _mnist(tmp_path / "plain", gz=False)
    assert np.array_equal(load_digits_source(str(tmp_path / "plain"))[0], x)

    secret = tmp_path / "secret"
    _mnist(secret)
    cases = {}
    d = tmp_path / "link"                   # every file a link out: none is followed
    d.mkdir()
    for f in secret.iterdir():
        (d / f.name).symlink_to(f)
    cases["link"] = (d, "symbolic links are not followed")
    d = tmp_path / "pngs"                   # a digit folder linked out
    for k in range(1, 10):
        (d / str(k)).mkdir(parents=True)
    (d / "0").symlink_to(secret, target_is_directory=True)
    cases["png-link"] = (d, "resolves outside")
    d = tmp_path / "bomb"                   # 100 MB of zeros in 100 KB of gzip
    _mnist(d)
    (d / "train-images-idx3-ubyte.gz").write_bytes(
        gzip.compress(_idx((130000, 28, 28), bytes(130000 * 784)), 9))
    cases["bomb"] = (d, "decompression bomb")
    d = tmp_path / "header"                 # the header claims more pictures than it holds
    _mnist(d, gz=False)
    data = (d / "train-images-idx3-ubyte").read_bytes()
    (d / "train-images-idx3-ubyte").write_bytes(_idx((41, 28, 28), data[16:]))
    cases["header"] = (d, "the IDX header declares")
    d = tmp_path / "hard"                   # a file hard-linked to one elsewhere
    d.mkdir()
    for f in secret.iterdir():
        os.link(f, d / f.name)
    cases["hard"] = (d, "hard links")
    for name, (folder, says) in cases.items():
        with pytest.raises(NesyError) as exc:
            load_digits_source(str(folder))
        assert says in str(exc.value) and "\n" not in str(exc.value), (name, exc.value)
        out = tmp_path / f"o-{name}"
        res = CliRunner().invoke(group, ["generate", "mnist_logic", "--mnist", str(folder),
                                         "--out", str(out), "--samples", "8"])
        assert res.exit_code == 2 and says in res.output and not out.exists(), (name, res.output)
