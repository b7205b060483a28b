"""What the contained reader (nesybench.folder) refuses beyond paths that leave the folder:
duplicate JSON and YAML keys, hard-linked files, archives that declare more than the bound
(checked before decompressing); and the commands that used to read around it: `rs
import-bddoia`, a data set's `knowledge:`, the browse writers."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fuzzing import make_bddoia, run_cli  # noqa: E402
from test_untrusted_folders import (SECRET, _copy, _export_refused, _one_error,  # noqa: E402
                                    _run, _unlist, sources)

import nesybench  # noqa: E402
from nesybench.errors import NesyError  # noqa: E402
from nesybench.folder import DataFolder, check_zip, gunzip, parse_json  # noqa: E402
from nesybench.yamlsafe import load_yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
__all__ = ["sources"]          # the fixture, shared with tests/test_untrusted_folders.py


def _tree(folder: Path) -> dict[str, tuple]:
    """Every entry below ``folder`` with its kind, bytes' SHA-256 and mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and \
                not p.is_symlink() else None
            out[p.relative_to(folder).as_posix()] = (st.st_mode, digest, st.st_mtime_ns)
    return out


# ------------------------------------------------------------------------ duplicate keys
def test_an_appended_checksums_key_is_refused(sources, tmp_path):
    """`"checksums": {}` appended to a manifest would turn SHA-256 checking off (the last key
    wins); it is refused, and the tampered picture is never exported."""
    ds = _copy(sources, "rs", tmp_path)
    png = sorted((ds / "train").glob("*.png"))[0]
    png.write_bytes(png.read_bytes() + b"tampered")
    text = (ds / "manifest.json").read_text().rstrip()
    assert text.endswith("}")
    (ds / "manifest.json").write_text(text[:-1].rstrip() + ', "checksums": {}}\n')
    line = _export_refused(ds, tmp_path, "duplicate key 'checksums'")
    assert "manifest.json" in line
    with pytest.raises(NesyError, match="duplicate key 'checksums'"):
        nesybench.load(ds)


def test_duplicate_keys_in_json_and_yaml_are_one_error():
    with pytest.raises(NesyError, match=r"^m.json: duplicate key 'a'"):
        parse_json('{"a": 1, "b": {"c": 2}, "a": 3}', "m.json")
    with pytest.raises(NesyError, match="duplicate key 'c'"):
        parse_json('[{"c": 1, "c": 1}]', "m.json")
    assert parse_json('{"a": {"a": 1}}', "m.json") == {"a": {"a": 1}}
    with pytest.raises(NesyError, match=r"^t.yaml:3:1: YAML does not parse: found duplicate "
                                        r"key 'knowledge'"):
        load_yaml("name: t\nknowledge: kb/shortcuts/xor.lp\nknowledge: Makefile\n", "t.yaml")
    # a merged mapping may be overridden, as YAML intends
    assert load_yaml("b: &b {k: 1, j: 2}\nm:\n  <<: *b\n  k: 3\n")["m"] == {"k": 3, "j": 2}


def test_a_duplicate_key_in_a_task_yaml_is_refused_by_export(sources, tmp_path):
    ds = _copy(sources, "rs", tmp_path)
    with open(ds / "task.yaml", "a") as fh:
        fh.write("knowledge: Makefile\n")
    _unlist(ds / "task.yaml")
    _export_refused(ds, tmp_path, "duplicate key 'knowledge'")


# ------------------------------------------------------------------------ hard links
def test_a_file_hard_linked_to_a_canary_outside_is_refused(sources, tmp_path):
    ds = _copy(sources, "rs", tmp_path)
    png = sorted((ds / "train").glob("*.png"))[0]
    canary = tmp_path / "canary.png"              # outside the folder, same bytes
    canary.write_bytes(png.read_bytes())
    png.unlink()
    os.link(canary, png)
    line = _export_refused(ds, tmp_path, "hard links")
    assert png.name in line and "--allow-hardlinks" in line
    with pytest.raises(NesyError, match="2 hard links"):
        nesybench.load(ds)
    # a deduplicated store of one's own: allowed when asked
    assert len(nesybench.load(ds, allow_hardlinks=True).rows_by_split["train"]) == 4
    out = tmp_path / "allowed"
    rc, _, err = _run("--allow-hardlinks", "export", ds, "--format", "parquet", "--out", out,
                      "-q")
    assert rc == 0 and out.is_dir(), err
    # the flag holds for that invocation only
    _export_refused(ds, tmp_path, "hard links")


def test_hard_links_in_a_data_folder_parameter(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "outside.txt").write_text(SECRET)
    os.link(tmp_path / "outside.txt", tmp_path / "d" / "a.txt")
    with pytest.raises(NesyError, match=r"d/a.txt: the file has 2 hard links"):
        DataFolder(tmp_path / "d").read_text("a.txt")
    with pytest.raises(NesyError, match="hard links"):
        DataFolder(tmp_path / "d").exists("a.txt")
    assert DataFolder(tmp_path / "d", allow_hardlinks=True).read_text("a.txt") == SECRET


# ------------------------------------------------------------------------ rs import-bddoia
@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_bddoia_index_linked_to_a_canary_outside_is_refused(tmp_path, how):
    src = make_bddoia(tmp_path / "src", sizes=(("train", 2), ("val", 1)))
    canary = tmp_path / "canary.pkl"                 # a readable index, outside the copy
    canary.write_bytes((src / "train_BDD_OIA.pkl").read_bytes())
    (src / "train_BDD_OIA.pkl").unlink()
    if how == "symlink":
        (src / "train_BDD_OIA.pkl").symlink_to(canary)
    else:
        os.link(canary, src / "train_BDD_OIA.pkl")
    res = run_cli(["rs", "import-bddoia", src, "--out", tmp_path / "o"])
    assert res.rc == 2 and len(res.err.strip().splitlines()) == 1, res.err
    assert "train_BDD_OIA.pkl" in res.err
    assert ("outside the data-set folder" if how == "symlink" else "hard links") in res.err
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------ knowledge
@pytest.mark.parametrize("name", ["Makefile", "pyproject.toml", ".git/config",
                                  "kb/../Makefile", "kb/shortcuts/missing.lp",
                                  "curricula/rs/xor.yaml"])
def test_knowledge_naming_a_file_of_the_installation_is_refused(sources, tmp_path, name):
    ds = _copy(sources, "rs", tmp_path)
    text = (ds / "task.yaml").read_text()
    lines = [f"knowledge: {name}" if ln.startswith("knowledge:") else ln
             for ln in text.splitlines()]
    (ds / "task.yaml").write_text("\n".join(lines) + "\n")
    _unlist(ds / "task.yaml")
    line = _export_refused(ds, tmp_path, "field knowledge")
    assert "task.yaml" in line


def test_knowledge_is_a_shipped_name_or_a_file_of_the_data_set(sources, tmp_path):
    data = nesybench.load(sources["rs"])
    assert "kb/shortcuts/xor.lp" in data.card["rules"]
    ds = _copy(sources, "rs", tmp_path)
    (ds / "k.lp").write_text("% the data set's own knowledge\n")
    text = (ds / "task.yaml").read_text()
    (ds / "task.yaml").write_text("\n".join("knowledge: k.lp" if ln.startswith("knowledge:")
                                            else ln for ln in text.splitlines()) + "\n")
    _unlist(ds / "task.yaml")
    assert nesybench.load(ds).card["rules"]["k.lp"].startswith("% the data set's own")


# ------------------------------------------------------------------------ browse writers
@pytest.mark.parametrize("kind", ["rs", "kandy"])
def test_browse_through_a_link_changes_nothing_outside(sources, tmp_path, kind):
    """A `browse` link inside a data set, pointing at a user's earlier export (a nesybench
    output, which --overwrite could replace), makes `browse` refuse: the export is left as it
    was, with or without --overwrite."""
    ds = _copy(sources, kind, tmp_path)
    earlier = tmp_path / "earlier-export"
    assert _run("export", sources[kind], "--format", "parquet", "--out", earlier, "-q")[0] == 0
    before = _tree(earlier)
    (ds / "browse").symlink_to(earlier, target_is_directory=True)
    for extra in ([], ["--overwrite"]):
        line = _one_error(kind, "browse", ds, *extra, contains="symbolic link")
        assert "browse" in line
        assert _tree(earlier) == before
    assert (ds / "browse").is_symlink()


# ------------------------------------------------------------------------ archive bombs
def _zip_bomb(path: Path, *, gib: float = 1.0) -> Path:
    """A zip (a .pt file's format) of one deflated entry of ``gib`` GiB of zeros."""
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("archive/data/0", "w", force_zip64=True) as fh:
            for _ in range(int(gib * 1024)):
                fh.write(chunk)
    return path


def test_a_pt_bomb_is_refused_before_decompressing(tmp_path):
    """A 1 MB .pt whose entry decompresses to a GiB: refused from the archive's directory,
    in a process that stays under 300 MB of peak RSS."""
    src = make_bddoia(tmp_path / "src", sizes=(("train", 2), ("val", 1)))
    pt = src / "train" / "inputs" / "train_0000.pt"
    _zip_bomb(pt)
    assert pt.stat().st_size < 1 << 20
    # the peak of the child's own memory: VmHWM (getrusage's ru_maxrss of a process started
    # by fork and exec also counts what its parent, this test process, held at the fork)
    code = ("import resource, sys\n"
            "from nesybench.cli import main\n"
            f"rc = main(['rs', 'import-bddoia', {str(src)!r}, '--out', "
            f"{str(tmp_path / 'o')!r}])\n"
            "hwm = [int(ln.split()[1]) for ln in open('/proc/self/status')\n"
            "       if ln.startswith('VmHWM:')]\n"
            "print(rc, hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "python")), timeout=600)
    rc, peak_kib = map(int, proc.stdout.split())
    assert rc == 2 and "decompression bomb" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert peak_kib < 300 * 1024, f"peak RSS {peak_kib / 1024:.0f} MiB"
    assert not (tmp_path / "o").exists()


def test_archive_sizes_are_checked_from_the_directory():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a", bytes(3 << 20))                 # 3 MiB of zeros: ratio ~1000
        zf.writestr("b", b"x" * 100)
    data = buf.getvalue()
    with pytest.raises(NesyError, match="times its"):
        check_zip(data, "x.npz")
    with pytest.raises(NesyError, match="over the limit of 1,000"):
        check_zip(data, "x.npz", max_bytes=1000)
    assert len(check_zip(data, "x.npz", max_ratio=10_000)) == 2
    with pytest.raises(NesyError, match="not a readable zip"):
        check_zip(b"PK\x03\x04 not a zip", "x.pt")


def test_gunzip_stops_at_the_bound():
    small = gzip.compress(b"hello " * 10)
    assert gunzip(small, "s.gz") == b"hello " * 10
    assert gunzip(small + small, "s.gz") == b"hello " * 20       # two members
    bomb = gzip.compress(bytes(64 << 20))                        # 64 MiB from ~64 KB
    with pytest.raises(NesyError, match="decompression bomb"):
        gunzip(bomb, "b.gz")
    with pytest.raises(NesyError, match="more than 1,000 bytes"):
        gunzip(small * 30, "s.gz", max_bytes=1000)
    with pytest.raises(NesyError, match="cut short|not readable"):
        gunzip(small[:-12], "s.gz")


def test_npz_sizes_are_checked_before_numpy_opens_it(tmp_path):
    import numpy as np

    from nesybench.folder import load_npz
    buf = io.BytesIO()
    np.savez_compressed(buf, a=np.arange(6).reshape(2, 3), meta=np.array("{}"))
    z = load_npz(buf.getvalue(), "ok.npz")
    assert z["a"].tolist() == [[0, 1, 2], [3, 4, 5]] and str(z["meta"]) == "{}"
    bomb = io.BytesIO()
    np.savez_compressed(bomb, a=np.zeros(3 << 20, dtype=np.uint8))   # 3 MiB from ~3 KB
    with pytest.raises(NesyError, match="decompression bomb"):
        load_npz(bomb.getvalue(), "bomb.npz")
    with pytest.raises(NesyError, match="over the limit of 100"):
        load_npz(buf.getvalue(), "ok.npz", max_bytes=100)
    pickled = io.BytesIO()
    np.savez(pickled, a=np.array([{"x": 1}], dtype=object))
    with pytest.raises(NesyError, match="not a readable .npz"):
        load_npz(pickled.getvalue(), "p.npz")
    other = io.BytesIO()
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("a.txt", "x")
    with pytest.raises(NesyError, match="not an .npz archive"):
        load_npz(other.getvalue(), "o.npz")


def test_read_head_reads_a_header_only(tmp_path):
    (tmp_path / "secret").write_text(SECRET)
    tmp_path = tmp_path / "f"
    tmp_path.mkdir()
    (tmp_path / "big.bin").write_bytes(b"HEAD" + bytes(1 << 20))
    (tmp_path / "link.bin").symlink_to(tmp_path.parent / "secret")
    folder = DataFolder(tmp_path)
    assert folder.read_head("big.bin", 4) == (b"HEAD", 4 + (1 << 20))
    with pytest.raises(NesyError, match="resolves outside"):
        folder.read_head("link.bin", 4)
    os.link(tmp_path / "big.bin", tmp_path / "hard.bin")
    with pytest.raises(NesyError, match="hard links"):
        folder.read_head("hard.bin", 4)


def test_json_constants_only_when_asked():
    with pytest.raises(NesyError, match="not JSON"):
        parse_json('{"a": NaN}', "x.json")
    assert parse_json('{"a": NaN}', "x.json", constants=True)["a"] != 0
    with pytest.raises(NesyError, match="duplicate key"):
        parse_json('{"a": NaN, "a": 1}', "x.json", constants=True)


def test_user_cache_entries_are_read_contained(tmp_path, monkeypatch):
    """The caches nesybench keeps (compiled circuits, CLIP embeddings, world tables) are read
    back through the contained reader: an entry that is a link out, damaged JSON (a key twice)
    or an archive declaring too much is not used (it is recomputed), never an error."""
    import numpy as np

    from nesybench.nesy.inference import cache as circuit_cache
    from nesybench.nesy.learn import clip
    from nesybench.nesy.inference import semantics
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "secret.npy").write_bytes(b"not read")
    # CLIP embeddings
    root = clip.cache_dir()
    root.mkdir(parents=True)
    np.save(root / "good.npy", np.ones((2, 1, 3), dtype=np.float32))
    assert clip.read_cached_embeddings("good.npy").shape == (2, 1, 3)
    (root / "link.npy").symlink_to(tmp_path / "secret.npy")
    assert clip.read_cached_embeddings("link.npy") is None
    assert clip.read_cached_embeddings("missing.npy") is None
    # compiled circuits: a meta.json naming a key twice is removed, then missed
    entry = circuit_cache.cache_dir() / "k1"
    entry.mkdir(parents=True)
    (entry / "circuit.sdd").write_text("sdd")
    (entry / "meta.json").write_text('{"labels": [], "labels": []}')
    assert circuit_cache.lookup("k1") is None and not entry.exists()
    entry.mkdir()
    (entry / "circuit.sdd").write_text("sdd")
    (entry / "meta.json").write_text('{"labels": []}')
    assert circuit_cache.lookup("k1") == (entry, {"labels": []})
    # world tables: an .npz whose entries declare more than the bound is not opened
    root = semantics.cache_dir()
    root.mkdir(parents=True)
    buf = io.BytesIO()
    np.savez_compressed(buf, meta=np.array(json.dumps({"components": [], "label_domains": []})))
    (root / "worlds-a.npz").write_bytes(buf.getvalue())
    assert semantics._read_world_cache("worlds-a.npz") == ([], [])
    monkeypatch.setattr(semantics, "MAX_WORLD_CACHE_BYTES", 10)
    assert semantics._read_world_cache("worlds-a.npz") is None


def test_nesy_data_checks_the_manifest_checksums(tmp_path):
    """`nesy train`/`nesy eval` read an RS data set with the SHA-256 its manifest lists: a
    changed labels.csv is one error naming the file."""
    from nesybench.nesy.learn.data import NesyData
    from nesybench.shortcuts.generate import generate
    from nesybench.shortcuts.task import load_task
    task = load_task(ROOT / "curricula/rs/xor.yaml")
    ds = tmp_path / "ds"
    generate(task, ds, seed=0, samples={"train": 8, "val": 4, "test": 4})
    doms = [[0, 1]] * len(task.label_names())
    assert len(NesyData.from_folder(ds, "val", task, doms)) == 4
    rows = (ds / "val" / "labels.csv").read_text().splitlines(keepends=True)
    (ds / "val" / "labels.csv").write_text("".join(rows[:-1]))
    with pytest.raises(NesyError, match="SHA-256 mismatch") as exc:
        NesyData.from_folder(ds, "val", task, doms)
    assert "val/labels.csv" in str(exc.value)
