"""`nesybench setup-prolog` runs the shipped build script (the one `make setup` runs) on a
source archive and prints the next steps; here on a small CMake project that installs a
`bin/swipl` answering as SWI-Prolog does, so that every stage runs for real in seconds."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from nesybench.cli.setup_prolog import JANUS_LINE, build_script

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(
    not all(map(lambda t: subprocess.run(["sh", "-c", f"command -v {t}"],
                                         capture_output=True).returncode == 0,
                ("cmake", "ninja", "cc"))), reason="needs cmake, ninja and a C compiler")


def _source(tmp_path: Path, plversion: int) -> Path:
    """A source archive: 20 C files to compile (ninja counts them) and a `swipl` to install."""
    tree = tmp_path / "swipl-src" / "swipl-9.9.9"
    tree.mkdir(parents=True)
    for i in range(20):
        (tree / f"f{i}.c").write_text(f"int f{i}(void) {{ return {i}; }}\n")
    (tree / "swipl").write_text(textwrap.dedent(f"""\
        #!/bin/sh
        here=$(cd "$(dirname "$0")/.." && pwd)
        case "$1" in
          --dump-runtime-variables) echo "PLBASE=\\"$here/lib\\";"; echo 'PLVERSION="{plversion}";';;
          *) exit 1;;
        esac
        """))
    (tree / "CMakeLists.txt").write_text(textwrap.dedent(f"""\
        cmake_minimum_required(VERSION 3.13)
        project(fake C)
        add_library(fake STATIC {" ".join(f"f{i}.c" for i in range(20))})
        install(PROGRAMS swipl DESTINATION bin)
        """))
    archive = tmp_path / "swipl-9.9.9.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname="swipl-9.9.9")
    return archive


def _run(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "nesybench", "setup-prolog", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=600, check=False,
                          cwd=cwd)


def test_builds_installs_and_prints_the_next_steps(tmp_path):
    archive = _source(tmp_path, 90312)
    prefix = tmp_path / "swipl"
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    res = _run("--prefix", prefix, "--source", archive, "--sha256", digest, "--no-packages",
               "-j", 2, "--force")
    assert res.returncode == 0, res.stderr[-3000:]
    stages = [line.split("]")[0] + "]" for line in res.stderr.splitlines()
              if line.startswith("[swipl ")]
    assert [s for i, s in enumerate(stages) if s not in stages[:i]] == \
        [f"[swipl {k}/5]" for k in range(1, 6)]                        # every stage, in order
    assert "[swipl 3/5] compiling: 100 %" in res.stderr                # progress, not 20 lines
    assert res.stderr.count("compiling:") <= 12
    assert (prefix / "bin" / "swipl").is_file() and not (tmp_path / "swipl.build" / "tree").exists()
    assert res.stdout.splitlines()[0] == f"SWI-Prolog 9.3.12 is in {prefix / 'bin'}. Next, " \
                                         "in the environment that has nesybench:"
    assert f"  export PATH={prefix / 'bin'}:\"$PATH\"" in res.stdout and JANUS_LINE in res.stdout
    # a second call finds it and builds nothing
    again = _run("--prefix", prefix, "--source", archive, "--no-packages")
    assert again.returncode == 0 and "is already at" in again.stdout and "[swipl" not in again.stderr


def test_a_wrong_checksum_a_missing_archive_and_an_old_version_are_errors(tmp_path):
    archive = _source(tmp_path, 90004)
    res = _run("--prefix", tmp_path / "a", "--source", archive, "--sha256", "0" * 64,
               "--no-packages", "--force")
    assert res.returncode == 2 and "checksum mismatch" in res.stderr
    assert not (tmp_path / "a" / "bin").exists()
    res = _run("--prefix", tmp_path / "b", "--source", tmp_path / "nope.tar.gz", "--no-packages",
               "--force")
    assert res.returncode == 2 and "no such source tarball" in res.stderr
    res = _run("--prefix", tmp_path / "c", "--source", archive, "--no-packages", "--force")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1].endswith(
        "is SWI-Prolog 9.0.4; janus-swi needs >= 9.1.12: pass a newer --source")


def test_dry_run_and_the_script_is_the_one_make_setup_runs(tmp_path):
    res = _run("--prefix", tmp_path / "p", "--source", "x.tar.gz", "--dry-run", "--force")
    assert res.returncode == 0 and res.stdout.splitlines()[0].startswith("bash ")
    assert f"--prefix {tmp_path / 'p'}" in res.stdout and JANUS_LINE in res.stdout
    assert not (tmp_path / "p").exists()
    assert Path(build_script()).resolve() == (ROOT / "python/nesybench/logic/build_swipl.sh")
    assert "python/nesybench/logic/build_swipl.sh" in (ROOT / "scripts/setup.sh").read_text()


def test_a_hostile_source_archive_writes_nothing_outside_its_build_folder(tmp_path):
    """Members that climb out (`../`), absolute names and a link followed by a file through it:
    tar keeps them inside the build folder (or refuses), and the build fails cleanly."""
    import io

    outside = tmp_path / "outside"
    outside.mkdir()
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        def add(name, data=b"x", **kw):
            info = tarfile.TarInfo(name)
            for k, v in kw.items():
                setattr(info, k, v)
            info.size = len(data) if info.type == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(data) if info.type == tarfile.REGTYPE else None)
        add("top/../../outside/climbed")
        add(f"top/{outside}/absolute")
        add("top/link", type=tarfile.SYMTYPE, linkname=str(outside))
        add("top/link/through")
        add("top/CMakeLists.txt", b"this is not cmake\n")
    res = _run("--prefix", tmp_path / "p", "--source", archive, "--no-packages", "--force")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert sorted(p.name for p in outside.iterdir()) == []
    assert not (tmp_path / "climbed").exists()
