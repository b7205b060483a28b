"""``nesybench doctor`` with nothing but click installed (the install page's first step, or a
wheel installed with ``--no-deps``): its table, each missing package a line, exit status 1 and
no traceback. Every import of a package other than click and the standard library fails in the
subprocess, as it would in such an environment."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

BARE = """
import importlib.abc, sys
ALLOW = set(sys.stdlib_module_names) | {"click", "nesybench"}
class NothingButClick(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in ALLOW:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NothingButClick())
from nesybench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _doctor(tmp_path, *args):
    return subprocess.run([sys.executable, "-c", BARE, "doctor", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    return _doctor(tmp_path_factory.mktemp("bare"))


def test_doctor_prints_its_table_and_exits_1_without_a_traceback(bare):
    assert bare.returncode == 1, bare.stderr
    assert "Traceback" not in bare.stderr and bare.stderr == ""
    lines = bare.stdout.splitlines()
    assert lines[0].startswith("nesybench ") and lines[-1].startswith("NOT READY")
    missing = {line.split()[2] for line in lines[1:-1] if line.startswith("missing")}
    # each missing package a line: the core engines and every other requirement but click
    assert {"clingo", "problog", "pysdd", "klay", "torch", "numpy", "pyyaml", "tqdm", "scipy",
            "pandas"} <= missing
    assert "click" not in missing and "dependencies" not in missing
    # a check that needs a missing package says which, as its line
    kernel = next(line for line in lines if " ski-kernel " in line)
    assert kernel.startswith("missing") and "numpy" in kernel


def test_doctor_json_and_quiet_with_nothing_but_click(tmp_path):
    as_json = _doctor(tmp_path, "--json")
    assert as_json.returncode == 1 and "Traceback" not in as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["ok"] is False
    assert {c["name"] for c in report["components"] if c["status"] == "missing"} >= {"numpy"}
    quiet = _doctor(tmp_path, "-q")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (1, "", "")
