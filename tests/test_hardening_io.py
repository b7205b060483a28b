"""Safe output folders: marker, refusals, inputs, umask, stale temp folders, SIGTERM."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nesybench import io
from processes import alive, hang_report
from nesybench.cli import main as cli_main
from nesybench.errors import NesyError

ROOT = Path(__file__).resolve().parents[1]
REF = Path(__file__).parent / "data" / "reference_style.yaml"


def _write(out, overwrite=False, inputs=()):
    with io.atomic_output_dir(out, overwrite=overwrite, inputs=inputs) as tmp:
        (tmp / "a.txt").write_text("a")
    return Path(out)


def test_marker_written_and_excluded_from_checksums(tmp_path):
    out = _write(tmp_path / "o")
    assert io.is_nesybench_output(out) and (out / "a.txt").read_text() == "a"
    assert not (out / io.PID_FILE).exists()
    assert list(io.checksums(out)) == ["a.txt"]
    _write(out, overwrite=True)          # our own output may be replaced with --overwrite


def test_checksums_list_the_files_rglob_lists_in_its_order(tmp_path):
    """The scandir walk gives the files, the order and the digests of the plain definition
    (rglob + is_file, sorted as paths): links to files count, links to folders and broken
    links do not, '-' and '.' sort against '/' by path parts."""
    import hashlib
    root = tmp_path / "r"
    for rel in ["a/b/c.txt", "a-b/x", "a/b.txt", "a.b", "a/b-c/d", "z/y/x/w", "0", "a/a"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "link-file").symlink_to(root / "a.b")
    (root / "link-dir").symlink_to(root / "a")
    (root / "broken").symlink_to(root / "nowhere")
    (root / "empty").mkdir()
    plain = {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(p for p in root.rglob("*") if p.is_file())}
    got = io.checksums(root)
    assert list(got.items()) == list(plain.items())
    assert "link-file" in got and not any(k.startswith("link-dir/") for k in got)
    assert io.checksums(root, exclude=("0",), known={"a.b": "x"})["a.b"] == "x"


def test_existing_folder_needs_overwrite_and_foreign_folders_are_never_replaced(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    with pytest.raises(NesyError, match="already exists"):
        _write(out)
    with pytest.raises(NesyError, match="not written by nesybench"):
        _write(out, overwrite=True)
    assert (out / "thesis.tex").read_text() == "precious"
    empty = tmp_path / "empty"
    empty.mkdir()
    _write(empty, overwrite=True)        # an empty folder may be replaced
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(NesyError, match="not a folder"):
        _write(f, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "file", "mine"]


def test_output_may_not_be_or_contain_an_input(tmp_path):
    ds = _write(tmp_path / "ds")
    with pytest.raises(NesyError, match="contains an input"):
        _write(ds, overwrite=True, inputs=[ds])
    with pytest.raises(NesyError, match="contains an input"):
        _write(tmp_path, overwrite=True, inputs=[ds / "a.txt"])
    assert (ds / "a.txt").exists()


def test_umask_respected(tmp_path):
    old = os.umask(0o022)
    try:
        out = _write(tmp_path / "o")
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o755


def test_stale_temp_folders_of_dead_processes_are_swept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / ".o.tmp-dead"
    stale.mkdir()
    (stale / io.PID_FILE).write_text(f"{socket.gethostname()} {dead.pid}\n")
    alive = tmp_path / ".o.tmp-alive"
    alive.mkdir()
    (alive / io.PID_FILE).write_text(f"{socket.gethostname()} {os.getpid()}\n")
    foreign = tmp_path / ".o.tmp-nomarker"
    foreign.mkdir()
    _write(tmp_path / "o")
    assert not stale.exists() and alive.exists() and foreign.exists()


def test_failure_inside_block_leaves_nothing(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with io.atomic_output_dir(tmp_path / "o") as tmp:
            (tmp / "x").write_text("x")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


# -------------------------------------------------------------- commands that write folders

@pytest.fixture(scope="module")
def small_ds(tmp_path_factory):
    d = tmp_path_factory.mktemp("kds") / "ds"
    assert cli_main(["kandy", "generate", str(REF), "--out", str(d), "-q", "-j", "1",
                     "--tasks", "1", "--samples", "8", "--no-images"]) == 0
    return d


def test_kandy_browse_never_wipes_an_unrelated_folder(small_ds, tmp_path, capsys):
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("keep")
    assert cli_main(["kandy", "browse", str(small_ds), "--out", str(other)]) == 2
    assert cli_main(["kandy", "browse", str(small_ds), "--out", str(other), "--overwrite"]) == 2
    assert (other / "keep.txt").read_text() == "keep"
    assert cli_main(["kandy", "browse", str(small_ds), "--out", str(small_ds), "--overwrite"]) == 2
    assert (small_ds / "manifest.json").exists()
    err = capsys.readouterr().err
    assert "contains an input" in err and "not written by nesybench" in err
    # the default folder (inside the dataset) is refreshed on every run
    assert cli_main(["kandy", "browse", str(small_ds)]) == 0
    assert cli_main(["kandy", "browse", str(small_ds)]) == 0


def test_ilp_export_into_its_dataset_is_refused(small_ds, tmp_path, capsys):
    assert cli_main(["kandy", "ilp-export", str(small_ds), "--out", str(small_ds),
                     "--overwrite", "--tasks", "1"]) == 2
    assert "contains an input" in capsys.readouterr().err
    assert (small_ds / "manifest.json").exists()
    out = tmp_path / "aleph"
    assert cli_main(["kandy", "ilp-export", str(small_ds), "--out", str(out), "--tasks", "1",
                     "--encoding", "natural", "--kb", "minimal"]) == 0
    import json
    index = json.loads((out / "index.json").read_text())
    assert not Path(index["dataset"]).is_absolute()
    assert (out / index["dataset"]).resolve() == small_ds.resolve()


def test_rudas_generate_out_dot_is_refused(tmp_path, capsys, monkeypatch):
    (tmp_path / "mine.txt").write_text("x")
    monkeypatch.chdir(tmp_path)
    assert cli_main(["rudas", "generate", "--out", ".", "--overwrite"]) == 2
    assert "not written by nesybench" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


# ------------------------------------------------------------------------------ SIGTERM

def _children(pid: int) -> set[int]:
    kids = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                kids.add(int(d.name))
    return kids


@pytest.mark.timing
def test_sigterm_stops_workers_removes_temp_and_exits_143(tmp_path):
    out = tmp_path / "o"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    # faulthandler: a command that does not stop is sent SIGABRT and prints every thread's
    # stack, so that a hang fails with where it hung and with its signal state
    proc = subprocess.Popen(
        [sys.executable, "-m", "nesybench", "kandy", "generate", str(ROOT / "curricula/kandy/easy.yaml"),
         "--out", str(out), "-q", "-j", "2", "--samples", "400"],
        env={**env, "PYTHONFAULTHANDLER": "1"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    kids: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None:
        kids |= _children(proc.pid)
        if list(tmp_path.glob(".o.tmp-*")) and len(kids) >= 2:
            break
        time.sleep(0.2)
    assert proc.poll() is None, "generation finished before it could be terminated"
    time.sleep(1.0)
    kids |= _children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running 60 s after SIGTERM (children {sorted(kids)}); "
                    f"{hang_report(proc)}")
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
    time.sleep(0.5)
    assert not [k for k in kids if alive(k)]


def test_browser_of_a_no_images_dataset_says_so(small_ds):
    from nesybench.kandy.browse import browser_data, write_browser
    index = write_browser(small_ds)
    assert browser_data(small_ds, index.parent)["images"] is False
    assert "--no-images" in index.read_text()


def test_rudas_table_formatting():
    from nesybench.rudas.cli import _METRICS, format_table
    row = {"name": "chain-xs-2-000", **{k: 3.2e-05 for k in _METRICS}, "herbrand_distance": 12}
    head, line, mean = format_table([row], {k: 0.5 for k in _METRICS}).splitlines()
    assert head.split() == ["dataset", *_METRICS]           # full names, not truncated
    assert line.split()[1] == "12" and line.split()[2] == "3.2e-05"


def test_top_level_help_lists_each_command_once(capsys):
    assert cli_main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("kandy", "rudas", "rs"):
        assert sum(1 for line in out.splitlines() if line.strip().startswith(name + " ")) == 1
