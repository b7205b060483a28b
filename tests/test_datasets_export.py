"""nesybench.load and nesybench export: one surface for every kind of data set, and exports that
load back through `datasets` and `mlcroissant` with the same samples, labels, concepts and
checksums as the source (docs/guides/datasets.md). No network: every data set is generated
here or read from the data-file cache."""
from __future__ import annotations

import hashlib
import io
import json
import logging
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nesybench
from nesybench.cli import main
from nesybench.errors import NesyError

datasets = pytest.importorskip("datasets")
mlc = pytest.importorskip("mlcroissant")

from nesybench.data.export import export, validate_croissant  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
logging.getLogger("absl").setLevel(logging.ERROR)      # mlcroissant's "recommended" notes
#: deprecations inside mlcroissant's own dependencies (rdflib, pandas), not in nesybench
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning:rdflib"),
              pytest.mark.filterwarnings("ignore:The inplace keyword")]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Tiny data sets of every kind: KANDY Easy (2 tasks), RuDaS, an RS task, an IRT table."""
    from nesybench.kandy.generate import generate as kandy_generate
    from nesybench.rudas.core import RudasParams
    from nesybench.rudas.core import generate as rudas_generate
    from nesybench.shortcuts.generate import generate as rs_generate
    from nesybench.shortcuts.task import load_task

    d = tmp_path_factory.mktemp("sources")
    kandy_generate(ROOT / "curricula/kandy/easy.yaml", d / "kandy", tasks=[0, 1], samples=12)
    rudas_generate(RudasParams(category="rdg", size="xs", depth=2, seed=1), d / "rudas")
    rs_generate(load_task(ROOT / "curricula/rs/xor.yaml"), d / "rs",
                samples={"train": 8, "val": 4, "test": 4, "ood": 0})
    return {"kandy": d / "kandy", "rudas": d / "rudas", "rs": d / "rs", "irt": "irt-phoneme"}


def _png_sha(img) -> str:
    return hashlib.sha256(img["bytes"]).hexdigest()


def _pixels(img) -> np.ndarray:
    from PIL import Image
    if isinstance(img, dict):
        img = Image.open(io.BytesIO(img["bytes"]))
    return np.asarray(img)


def _plain(v):
    return v.decode() if isinstance(v, bytes) else v


def check_round_trip(data, tmp: Path) -> None:
    """Export ``data`` in every format and compare what `datasets` and `mlcroissant` read back
    with the source rows: same values in every column, same image bytes (checksums), same
    split sizes."""
    cols = [c for c in data.columns]
    images = [c.name for c in cols if c.dtype == "image"]
    splits = [s for s in data.splits if data.rows_by_split[s]]
    # Hugging Face: save_to_disk -> load_from_disk
    export(data, tmp / "hf", "hf")
    dd = datasets.load_from_disk(str(tmp / "hf"))
    assert list(dd) == splits
    for s in splits:
        ds = dd[s]
        for c in images:
            ds = ds.cast_column(c, datasets.Image(decode=False))
        rows = data.rows_by_split[s]
        assert len(ds) == len(rows)
        for got, want in zip(ds, rows):
            for c in cols:
                if c.dtype == "image":
                    assert _png_sha(got[c.name]) == want["sha256"] == \
                        hashlib.sha256(data.image_bytes(want[c.name])).hexdigest()
                else:
                    assert got[c.name] == want[c.name], (s, c.name)
    # Parquet + Croissant: mlcroissant validates and reads every record back
    export(data, tmp / "cr", "croissant")
    assert validate_croissant(tmp / "cr" / "croissant.json") == []
    cr = mlc.Dataset(jsonld=str(tmp / "cr" / "croissant.json"))
    for s in splits:
        recs = list(cr.records(s))
        rows = data.rows_by_split[s]
        assert len(recs) == len(rows)
        for rec, want in zip(recs, rows):
            for c in cols:
                if c.dtype == "objects":
                    continue
                got = rec[f"{s}/{c.name}"]
                if c.dtype == "image":
                    assert np.array_equal(_pixels(got), _pixels(
                        {"bytes": data.image_bytes(want[c.name])}))
                elif c.dtype == "float64":
                    assert float(got) == want[c.name]
                else:
                    assert _plain(got) == want[c.name], (s, c.name)
    # the export's manifest carries the source's checksums and lists its own files
    man = json.loads((tmp / "cr" / "manifest.json").read_text())
    assert man["source"]["checksums"] == data.meta["checksums"]
    assert man["splits"] == {s: len(data.rows_by_split[s]) for s in splits}
    for rel, digest in man["files"].items():
        assert hashlib.sha256((tmp / "cr" / rel).read_bytes()).hexdigest() == digest
    card = (tmp / "cr" / "README.md").read_text()
    assert card.startswith("---\n") and "## Citation" in card and "configs:" in card


def test_kandy_round_trip(sources, tmp_path):
    data = nesybench.load(sources["kandy"])
    assert data.kind == "kandy" and data.splits == ["train", "val", "test"]
    assert {r["task_id"] for r in data.rows()} == {0, 1} and len(data) == 24
    man = json.loads((sources["kandy"] / "manifest.json").read_text())
    assert data.meta["checksums"] == man["files"] and data.meta["seed"] == man["seed"]
    for r in data.rows():       # the checksum column is the manifest's
        assert r["sha256"] == man["files"][r["image"]]
    check_round_trip(data, tmp_path)
    card = (tmp_path / "cr" / "README.md").read_text()
    assert "extract_shape(C1, triangle)" in card and "lorello2025kandy" in card
    assert "| train |" in card and "seed 12345" in card
    # HF features: the Image feature, ClassLabel, objects as a list of structs
    feats = datasets.load_from_disk(str(tmp_path / "hf"))["train"].features
    assert isinstance(feats["image"], datasets.Image)
    assert feats["label"].names == ["negative", "positive"]
    first = datasets.load_from_disk(str(tmp_path / "hf"))["train"][0]
    assert first["objects"] == data[0]["objects"] and first["objects"][0]["shape"]


def test_rudas_round_trip(sources, tmp_path):
    data = nesybench.load(sources["rudas"])
    assert data.kind == "rudas" and data.splits[:2] == ["train", "test"]
    check_round_trip(data, tmp_path)
    # the fact files rebuilt from the exported records have the source's checksums
    cr = mlc.Dataset(jsonld=str(tmp_path / "cr" / "croissant.json"))
    for split, fname in data.meta["splits"].items():
        text = "".join(_plain(r[f"{split}/fact"]) + "\n" for r in cr.records(split))
        assert hashlib.sha256(text.encode()).hexdigest() == data.meta["checksums"][fname]
    card = (tmp_path / "cr" / "README.md").read_text()
    rules = (sources["rudas"] / "rules.txt").read_text()
    assert rules.splitlines()[0] in card


def test_rs_round_trip(sources, tmp_path):
    data = nesybench.load(sources["rs"])
    assert data.kind == "rs" and len(data["train"]) == 8
    concepts = [c.name for c in data.columns if c.name.startswith("concept_")]
    assert concepts == ["concept_b_1", "concept_b_2", "concept_b_3"]
    for r in data.rows():           # XOR: the label is the parity of the concepts
        assert r["label_y"] == sum(r[c] for c in concepts) % 2
    check_round_trip(data, tmp_path)
    assert "xor" in (tmp_path / "cr" / "README.md").read_text()


def test_irt_round_trip(sources, tmp_path):
    from nesybench.irt.data import load_builtin
    data = nesybench.load(sources["irt"])
    ref = load_builtin("phoneme")
    assert data.kind == "tabular" and len(data) == ref.n
    df = data.to_pandas()
    assert np.array_equal(df[[f"x{j}" for j in range(5)]].to_numpy(), ref.X)
    assert np.array_equal(df["label"].to_numpy(), ref.y)
    check_round_trip(data, tmp_path)


def test_uniform_surface(sources):
    for key in ("kandy", "rudas", "rs", "irt"):
        data = nesybench.load(sources[key])
        sample = data[0]
        assert sample["split"] == data.splits[0]
        assert set(sample) == {"split", *(c.name for c in data.columns)}
        assert len(data[data.splits[0]]) == len(data.rows_by_split[data.splits[0]])
        assert data[-1] == data[len(data) - 1]
        with pytest.raises(IndexError):
            data[len(data)]
        df = data.to_pandas()
        assert len(df) == len(data) and list(df.columns)[0] == "split"
        for k in ("kind", "generator", "seed", "spec", "checksums"):
            assert k in data.meta
        tv = data.to_torch()
        item = tv[0]
        assert set(item) == set(data.torch_spec)
        for name, (dtype, _shape) in data.torch_spec.items():
            assert str(item[name].dtype) == f"torch.{dtype}", (key, name)
    # a DataLoader batches KANDY images as [B, 3, H, W] float32
    import torch
    loader = torch.utils.data.DataLoader(nesybench.load(sources["kandy"], "train").to_torch(),
                                         batch_size=4)
    batch = next(iter(loader))
    assert batch["image"].shape[:2] == (4, 3) and batch["image"].dtype == torch.float32
    assert batch["label"].shape == (4,) and 0.0 <= float(batch["image"].min()) <= 1.0


def test_export_is_deterministic(sources, tmp_path):
    data = nesybench.load(sources["kandy"])
    for fmt in ("hf", "croissant"):
        export(data, tmp_path / f"{fmt}1", fmt)
        export(data, tmp_path / f"{fmt}2", fmt)
        files = sorted(p.relative_to(tmp_path / f"{fmt}1") for p in
                       (tmp_path / f"{fmt}1").rglob("*") if p.is_file())
        assert files
        for rel in files:
            assert (tmp_path / f"{fmt}1" / rel).read_bytes() == \
                (tmp_path / f"{fmt}2" / rel).read_bytes(), rel


def test_cli_export_and_errors(sources, tmp_path):
    out = tmp_path / "x"
    assert main(["export", str(sources["rs"]), "--format", "parquet", "-o", str(out), "-q"]) == 0
    assert (out / "data" / "train-00000-of-00001.parquet").is_file()
    assert not (out / "croissant.json").exists()
    # exists without --overwrite; a folder that is no data set; a name that is none
    res = CliRunner().invoke(nesybench.cli.cli, ["export", str(sources["rs"]), "-o", str(out)])
    assert res.exit_code != 0
    assert main(["export", str(sources["rs"]), "-o", str(out), "-q"]) == 2
    assert main(["export", str(tmp_path), "-o", str(tmp_path / "y"), "-q"]) == 2
    assert main(["export", "kandy-nonsense", "-o", str(tmp_path / "y"), "-q"]) == 2
    assert not (tmp_path / "y").exists()
    assert main(["export", str(sources["rs"]), "-o", str(out), "--overwrite", "--json",
                 "--split", "val"]) == 0
    assert json.loads((out / "manifest.json").read_text())["splits"] == {"val": 4}
    with pytest.raises(NesyError):
        nesybench.load(sources["rs"], split="nope")


def test_builtin_name_generates_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))
    a = nesybench.load("rs-xor", progress=False)
    folders = list((tmp_path / "cache").iterdir())
    assert len(folders) == 1 and folders[0].name.startswith("rs-xor-")
    stamp = (folders[0] / "manifest.json").stat().st_mtime_ns
    b = nesybench.load("rs_xor", "train", progress=False)
    assert (folders[0] / "manifest.json").stat().st_mtime_ns == stamp
    assert len(b) == len(a["train"]) and a.meta["checksums"] == b.meta["checksums"]


@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), category=st.sampled_from(["chain", "rdg", "drdg"]),
       task=st.sampled_from(["xor", "and3"]))
def test_generated_data_sets_export_and_load_back(tmp_path_factory, seed, category, task):
    """Whatever the generators produce (here: RuDaS of any seed and category, an RS task of
    any seed) exports and loads back identically."""
    from nesybench.rudas.core import RudasParams
    from nesybench.rudas.core import generate as rudas_generate
    from nesybench.shortcuts.generate import generate as rs_generate
    from nesybench.shortcuts.task import load_task

    d = tmp_path_factory.mktemp("gen")
    rudas_generate(RudasParams(category=category, size="xs", depth=2, seed=seed), d / "rudas")
    rs_generate(load_task(ROOT / f"curricula/rs/{task}.yaml"), d / "rs", seed=seed,
                samples={"train": 4, "val": 2, "test": 2, "ood": 0})
    for kind in ("rudas", "rs"):
        check_round_trip(nesybench.load(d / kind), d / f"{kind}-out")
