"""Data-set folders are read through one contained reader (nesybench.folder): paths stay
inside the folder, only regular files are read, sizes are bounded, checksums are checked,
and every malformed field is one error naming file and field (exit 2, nothing written)."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import nesybench
from nesybench.cli import main as cli_main
from nesybench.errors import NesyError

ROOT = Path(__file__).resolve().parents[1]
SECRET = "canary-secret-3f1d"


def _run(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli_main([str(a) for a in args])
        except SystemExit as exc:
            rc = exc.code
    return rc, out.getvalue(), err.getvalue().strip()


def _one_error(*args, contains: str = "") -> str:
    rc, _, err = _run(*args)
    assert rc == 2, err[-3000:]
    assert len(err.splitlines()) == 1 and err.startswith("nesybench: error:"), err[-3000:]
    assert "Traceback" not in err and contains in err, err
    return err


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Tiny generated data sets of the three folder kinds and a secret file outside them."""
    from nesybench.kandy.generate import generate as kandy_generate
    from nesybench.rudas.core import RudasParams
    from nesybench.rudas.core import generate as rudas_generate
    from nesybench.shortcuts.generate import generate as rs_generate
    from nesybench.shortcuts.task import load_task

    d = tmp_path_factory.mktemp("sources")
    kandy_generate(ROOT / "curricula/kandy/easy.yaml", d / "kandy", tasks=[0, 1], samples=6)
    rudas_generate(RudasParams(category="rdg", size="xs", depth=2, seed=1), d / "rudas")
    rs_generate(load_task(ROOT / "curricula/rs/xor.yaml"), d / "rs",
                samples={"train": 4, "val": 2, "test": 2, "ood": 0})
    secret = d / "secret.txt"
    secret.write_text(SECRET + "\n")
    return {"kandy": d / "kandy", "rudas": d / "rudas", "rs": d / "rs", "secret": secret}


def _copy(sources, kind, tmp_path) -> Path:
    dst = tmp_path / kind
    shutil.copytree(sources[kind], dst)
    (dst / ".nesybench-output").unlink()
    return dst


def _edit_manifest(folder: Path, fn) -> None:
    man = json.loads((folder / "manifest.json").read_text())
    fn(man)
    (folder / "manifest.json").write_text(json.dumps(man))


def _unlist(path: Path) -> None:
    """Drop ``path``'s checksum from its folder's manifest (as a hostile folder would)."""
    folder = next(p for p in path.parents if (p / "manifest.json").is_file())
    rel = path.relative_to(folder).as_posix()
    _edit_manifest(folder, lambda m: [(m.get(k) or {}).pop(rel, None)
                                      for k in ("files", "checksums")])


def _edit_csv(path: Path, fn) -> None:
    _unlist(path)
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    header = list(rows[0])
    fn(rows)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, header)
        w.writeheader()
        w.writerows(rows)


def _export_refused(folder: Path, tmp_path, contains: str = "") -> str:
    out = tmp_path / "exported"
    line = _one_error("export", folder, "--format", "parquet", "--out", out, "-q",
                      contains=contains)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".exported")]
    assert SECRET not in line
    return line


def _first_png(folder: Path) -> Path:
    return sorted(folder.glob("train/**/*.png"))[0]


# ------------------------------------------------------------ paths that leave the folder
def test_kandy_rule_file_outside_the_folder_is_refused(sources, tmp_path):
    for bad in (str(sources["secret"]), "../secret.txt", "rules/../../secret.txt"):
        ds = _copy(sources, "kandy", tmp_path / f"k{len(bad)}")
        _edit_manifest(ds, lambda m: m["tasks"][0].__setitem__("rule_file", bad))
        line = _export_refused(ds, tmp_path / f"k{len(bad)}", "tasks[0].rule_file")
        assert "manifest.json" in line


def test_rs_knowledge_outside_the_folder_is_refused(sources, tmp_path):
    ds = _copy(sources, "rs", tmp_path)
    text = (ds / "task.yaml").read_text()
    (ds / "task.yaml").write_text(re.sub(r"knowledge: .*", f"knowledge: {sources['secret']}",
                                         text))
    _unlist(ds / "task.yaml")
    _export_refused(ds, tmp_path, "field knowledge")


def test_annotation_filename_outside_the_folder_is_refused(sources, tmp_path):
    ds = _copy(sources, "kandy", tmp_path)
    _edit_csv(ds / "train" / "annotations.csv",
              lambda rows: rows[0].__setitem__("filename", "../../../../etc/passwd"))
    _export_refused(ds, tmp_path, "annotations.csv:2")
    ds2 = _copy(sources, "rs", tmp_path / "rs2")
    _edit_csv(ds2 / "train" / "labels.csv",
              lambda rows: rows[0].__setitem__("file", str(sources["secret"])))
    _export_refused(ds2, tmp_path / "rs2", "labels.csv:2")


@pytest.mark.parametrize("kind", ["kandy", "rs"])
def test_a_png_symlinked_out_of_the_folder_is_refused(sources, tmp_path, kind):
    ds = _copy(sources, kind, tmp_path)
    png = _first_png(ds)
    png.unlink()
    png.symlink_to(sources["secret"])
    _export_refused(ds, tmp_path, "outside the data-set folder")
    with pytest.raises(NesyError, match="outside"):
        nesybench.load(ds)


@pytest.mark.parametrize("name", ["rules.txt", "entities.txt", "train.txt"])
def test_rudas_files_symlinked_out_of_the_folder_are_refused(sources, tmp_path, name):
    ds = _copy(sources, "rudas", tmp_path)
    (ds / name).unlink()
    (ds / name).symlink_to(sources["secret"])
    _export_refused(ds, tmp_path, name)


def test_a_symlink_inside_the_folder_is_followed(sources, tmp_path):
    ds = _copy(sources, "kandy", tmp_path)
    png = _first_png(ds)
    other = sorted(png.parent.glob("*.png"))[1]
    png.unlink()
    png.symlink_to(other.name)
    _edit_manifest(ds, lambda m: m["files"].__setitem__(
        png.relative_to(ds).as_posix(), m["files"][other.relative_to(ds).as_posix()]))
    assert len(nesybench.load(ds)) > 0


def test_a_forged_checksum_is_an_error_and_no_verify_skips_it(sources, tmp_path):
    ds = _copy(sources, "kandy", tmp_path)
    rel = _first_png(ds).relative_to(ds).as_posix()
    _edit_manifest(ds, lambda m: m["files"].__setitem__(rel, "0" * 64))
    _export_refused(ds, tmp_path, "SHA-256 mismatch")
    out = tmp_path / "ok"
    rc, _, err = _run("export", ds, "--format", "parquet", "--out", out, "-q", "--no-verify")
    assert rc == 0, err
    import pyarrow.parquet as pq
    table = pq.read_table(out / "data" / "train-00000-of-00001.parquet")
    assert "0" * 64 not in table.column("sha256").to_pylist()


def test_a_fifo_or_a_device_in_the_folder_is_refused_without_blocking(sources, tmp_path):
    ds = _copy(sources, "rudas", tmp_path)
    (ds / "rules.txt").unlink()
    os.mkfifo(ds / "rules.txt")
    _export_refused(ds, tmp_path, "FIFO")
    (ds / "rules.txt").unlink()
    (ds / "rules.txt").symlink_to("/dev/zero")
    with pytest.raises(NesyError, match="outside|device"):
        nesybench.load(ds)


# ------------------------------------------------------------------ malformed manifests
def _set(path, value):
    def fn(m):
        obj = m
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
    return fn


MANIFEST_EDITS = {
    "tasks [{}]": ("kandy", _set(["tasks"], [{}]), "tasks[0].id"),
    "tasks abc": ("kandy", _set(["tasks"], "abc"), "field tasks"),
    "id zero": ("kandy", _set(["tasks", 0, "id"], "zero"), "tasks[0].id"),
    "files [x]": ("kandy", _set(["files"], ["x"]), "field files"),
    "rs concept without name": ("rs", lambda m: m["concepts"][0].pop("name"),
                                "concepts[0].name"),
    "rs concepts as a dict": ("rs", _set(["concepts"], {"name": "b", "domain": [0, 1]}),
                              "field concepts"),
    "rs concept as a string": ("rs", _set(["concepts", 0], "b(1)"), "concepts[0]"),
    "rudas targets 5": ("rudas", _set(["targets"], 5), "field targets"),
    "format 7": ("kandy", _set(["format"], 7), "field format"),
    "checksum not hex": ("rs", lambda m: m["checksums"].__setitem__("task.yaml", "zz"),
                         "checksums"),
}


@pytest.mark.parametrize("case", sorted(MANIFEST_EDITS))
def test_a_malformed_manifest_field_is_one_line(sources, tmp_path, case):
    kind, edit, field = MANIFEST_EDITS[case]
    ds = _copy(sources, kind, tmp_path)
    _edit_manifest(ds, edit)
    line = _export_refused(ds, tmp_path, field)
    assert "manifest.json" in line
    with pytest.raises(NesyError):
        nesybench.load(ds)


ROW_EDITS = {
    "task_id 10**30": ("kandy", "train/annotations.csv", "task_id", str(10**30)),
    "label 10**30": ("kandy", "train/annotations.csv", "label", str(10**30)),
    "label 7": ("kandy", "train/annotations.csv", "label", "7"),
    "rs label 10**30": ("rs", "train/labels.csv", "label:y", str(10**30)),
    "rs concept outside the domain": ("rs", "train/labels.csv", "concept:b(1)", "7"),
    "field over 131072": ("kandy", "train/annotations.csv", "symbol", "x" * 140_000),
}


@pytest.mark.parametrize("case", sorted(ROW_EDITS))
def test_a_malformed_row_is_one_line_naming_file_and_line(sources, tmp_path, case):
    kind, rel, column, value = ROW_EDITS[case]
    ds = _copy(sources, kind, tmp_path)
    _edit_csv(ds / rel, lambda rows: rows[0].__setitem__(column, value))
    _export_refused(ds, tmp_path, f"{rel.split('/')[-1]}:2")


def test_a_deleted_png_is_one_line(sources, tmp_path):
    ds = _copy(sources, "kandy", tmp_path)
    _unlist(_first_png(ds))
    _first_png(ds).unlink()
    _export_refused(ds, tmp_path, "annotations.csv:2")


def test_a_huge_png_is_refused_before_decoding(sources, tmp_path):
    import struct
    import zlib
    ds = _copy(sources, "rs", tmp_path)
    png = _first_png(ds)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data))
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 60000, 60000,
                                                                      8, 0, 0, 0, 0))
                    + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b""))
    rel = png.relative_to(ds).as_posix()
    data = nesybench.load(ds, verify=False)
    with pytest.raises(NesyError, match="60000x60000"):
        data.folder.image(rel)
    png.write_bytes(b"not a png")
    with pytest.raises(NesyError, match="not a readable picture"):
        nesybench.load(ds, verify=False)[0]


def test_rudas_rule_in_train_and_wide_facts_are_one_line(sources, tmp_path):
    ds = _copy(sources, "rudas", tmp_path)
    train = ds / "train.txt"
    text = train.read_text()
    train.write_text("p(X,Y) :- q(X).\n" + text)
    _unlist(train)
    _export_refused(ds, tmp_path, "train.txt:1")
    train.write_text(text + "p(" + ",".join(f"c{i}" for i in range(2000)) + ").\n")
    line = _export_refused(ds, tmp_path, f"train.txt:{len(text.splitlines()) + 1}")
    assert "64 arguments" in line
    train.write_text("p(X, c1).\n")
    _export_refused(ds, tmp_path, "not a constant")


# ------------------------------------------------------------------ kandy import-reference
def _reference(root: Path) -> Path:
    from test_kandy_reference import _reference as make
    return make(root)


def test_import_reference_leaves_symlinked_description_files_out(sources, tmp_path):
    ref = _reference(tmp_path / "ref")
    (ref / "notes.txt").symlink_to(sources["secret"])
    out = tmp_path / "ours"
    rc, _, err = _run("kandy", "import-reference", ref, "--out", out)
    assert rc == 0, err
    assert not (out / "reference" / "notes.txt").exists()
    assert all(SECRET not in p.read_text(errors="replace")
               for p in out.rglob("*") if p.is_file())


def test_import_reference_task_id_inf_and_a_huge_png_are_one_line(sources, tmp_path):
    import struct
    ref = _reference(tmp_path / "ref")
    ann = ref / "samples" / "sets" / "val" / "annotations.csv"
    text = ann.read_text()
    lines = text.splitlines()
    first = lines[1].split(",")
    ann.write_text("\n".join([lines[0], ",".join([first[0], "inf"] + first[2:])] + lines[2:])
                   + "\n")
    _one_error("kandy", "import-reference", ref, "--out", tmp_path / "o", contains=":2")
    ann.write_text(text)
    png = ref / "samples" / "sets" / "train" / first[0].strip('"')
    data = png.read_bytes()
    png.write_bytes(data[:16] + struct.pack(">II", 60000, 60000) + data[24:])
    _one_error("kandy", "import-reference", ref, "--out", tmp_path / "o",
               contains="60000x60000")
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------ the reader itself
@settings(max_examples=200, deadline=None)
@given(st.text(min_size=0, max_size=30))
def test_relative_paths_never_leave_the_folder(text):
    from nesybench.folder import relative
    try:
        rel = relative(text)
    except NesyError:
        return
    assert not rel.startswith("/") and ".." not in rel.split("/") and "\0" not in rel


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_any_bytes_as_a_picture_or_csv_are_nesy_errors(tmp_path, data):
    from nesybench.folder import DataFolder
    (tmp_path / "x.png").write_bytes(data)
    f = DataFolder(tmp_path)
    for read in (f.image, f.csv_rows, f.read_json):
        try:
            read("x.png")
        except NesyError:
            pass


# Every read of the package goes through the door: tests/test_door.py (an AST test over
# the whole package).
