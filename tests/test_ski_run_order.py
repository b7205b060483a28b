"""`ski run` checks its data before it compiles the native trainer (a minute on a first run),
and says when it compiles: data that are not cached are one error line and exit 2 at once."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nesybench import datafiles
from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.ski import cells, native

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["ski", "run", "--datasets", "bcw", "--injectors", "uneducated,kbann",
        "--degradations", "drop", "--level-stride", "19", "--reps", "1", "--epochs", "1",
        "--executor", "inline"]


def _run(args):
    try:
        return main(args) or 0
    except SystemExit as exc:
        return exc.code or 0


def test_uncached_data_is_one_error_before_any_compiling(tmp_path):
    """A fresh user cache: no data, no kernel. The data error comes at once; nothing is
    compiled and nothing is written."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NESYBENCH_DATA", "NESYBENCH_KERNELS")}
    env.update(NESYBENCH_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT / "python"))
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "nesybench", *ARGS, "--out",
                          str(tmp_path / "study")], env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    seconds = time.monotonic() - start
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("nesybench: error: ")
    assert "data file ski/biopsy.pkl.xz is not cached" in lines[0]
    assert "nesybench data fetch ski/biopsy.pkl.xz" in lines[0]
    assert not (tmp_path / "cache" / "kernels").exists()
    assert not (tmp_path / "study").exists()
    assert seconds < 30, seconds          # compiling the kernel alone takes about a minute


@pytest.mark.parametrize("quiet", [False, True])
def test_data_then_compiling_then_the_build(tmp_path, monkeypatch, capsys, quiet):
    if not (datafiles.cache_dir() / "ski" / "biopsy.pkl.xz").is_file():
        pytest.skip("the SKI data are not cached (nesybench data fetch)")
    if native.compiler() is None:
        pytest.skip("no C compiler")
    events = []
    monkeypatch.setattr(cells, "_CACHE", {})
    real_dataset, real_knowledge = cells.dataset, cells.knowledge
    monkeypatch.setattr(cells, "dataset",
                        lambda *a: events.append("data") or real_dataset(*a))
    monkeypatch.setattr(cells, "knowledge",
                        lambda *a: events.append("rules") or real_knowledge(*a))
    monkeypatch.setattr(native, "library_path", lambda flags=None: tmp_path / "absent.so")

    def build(*a, **kw):                  # stands in for the compiler: stop the run here
        events.append("build")
        raise NesyError("planted build failure")

    monkeypatch.setattr(native, "build", build)
    code = _run([*ARGS, "--out", str(tmp_path / "s"), *(["-q"] if quiet else [])])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert events == ["data", "rules", "build"]
    if quiet:
        assert err == ["nesybench: error: planted build failure"]
    else:
        assert len(err) == 2 and err[1] == "nesybench: error: planted build failure"
        assert err[0].startswith("ski run: compiling the native SKI trainer into ")
        assert "once per machine" in err[0]


def test_a_cached_kernel_is_not_announced(tmp_path, monkeypatch, capsys):
    if not (datafiles.cache_dir() / "ski" / "biopsy.pkl.xz").is_file():
        pytest.skip("the SKI data are not cached (nesybench data fetch)")
    (tmp_path / "built.so").write_bytes(b"")
    monkeypatch.setattr(native, "library_path", lambda flags=None: tmp_path / "built.so")
    monkeypatch.setattr(native, "build", lambda *a, **kw: pytest.fail("built again"))
    monkeypatch.setattr(cells, "run", lambda *a, **kw: (_ for _ in ()).throw(
        RuntimeError("planted cell failure")))
    code = _run([*ARGS, "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert code == 1 and "compiling" not in err, err
