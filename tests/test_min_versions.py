"""The lowest supported versions: `constraints-min.txt` pins every install requirement of
pyproject.toml at its lower bound (checked here on every run); with NESYBENCH_MIN_VERSIONS=1
(`.ci/run`) an empty virtual environment gets exactly those versions and runs a smoke subset
of the suite, so that a lower bound is one the code runs on."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints-min.txt"
#: broad and quick: the logic bridges, the three generators, counting, compilation and
#: inference, learning, IRT, SKI data and the CLI's names (no extras needed)
SMOKE = ["test_logic_bridges.py", "test_nesy_engine.py", "test_nesy_programs.py",
         "test_nesy_models.py", "test_kandy_generate.py", "test_shortcuts_count.py",
         "test_shortcuts_generate.py", "test_rudas.py", "test_irt_fit.py", "test_ski_data.py",
         "test_shipped_names.py"]


def _pins() -> dict[str, str]:
    pins = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[name.lower()] = version
    return pins


def test_the_constraints_pin_every_requirement_at_its_lower_bound():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    lower = {}
    for r in map(Requirement, deps):
        (bound,) = [s.version for s in r.specifier if s.operator == ">="]
        lower[r.name.lower()] = bound
    pins = _pins()
    assert set(pins) == set(lower)
    for name, bound in lower.items():
        # 1.24 means 1.24.0: the pin is the bound itself, padded with zeros
        assert tuple(map(int, pins[name].split("."))) == \
            tuple(map(int, (bound + ".0.0").split(".")[:len(pins[name].split("."))])) or \
            pins[name] == bound, (name, pins[name], bound)


@pytest.mark.skipif(os.environ.get("NESYBENCH_MIN_VERSIONS") != "1",
                    reason="installs from the package registries: set NESYBENCH_MIN_VERSIONS=1 "
                           "(.ci/run does)")
def test_the_smoke_subset_passes_on_the_lowest_versions(tmp_path):
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    swipl = ROOT / ".deps" / "swipl" / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1",
               PATH=os.pathsep.join([str(venv / "bin"), str(swipl), env.get("PATH", "")]))
    if os.environ.get("NESYBENCH_WHEELS"):
        env["PIP_FIND_LINKS"] = os.environ["NESYBENCH_WHEELS"]
    torch = f"torch=={_pins()['torch']}"
    res = subprocess.run([py, "-m", "pip", "install", "-q", "--retries", "1", "--timeout", "20",
                          "--index-url", os.environ.get("NESYBENCH_TORCH_INDEX",
                                                        "https://download.pytorch.org/whl/cpu"),
                          torch], env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:                          # the CPU index is out of reach
        res = subprocess.run([py, "-m", "pip", "install", "-q", torch], env=env,
                             capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    res = subprocess.run([py, "-m", "pip", "install", "-q", "--no-cache-dir", "-c",
                          str(CONSTRAINTS), "-e", f"{ROOT}[test]"], env=env,
                         capture_output=True, text=True, check=False, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    got = subprocess.run([py, "-m", "pip", "list", "--format", "freeze"], env=env,
                         capture_output=True, text=True, check=True).stdout
    have = {n.lower().replace("_", "-"): v
            for n, _, v in (x.partition("==") for x in got.split())}
    for name, version in _pins().items():
        assert have.get(name, "").split("+")[0] == version, (name, have.get(name), version)
    res = subprocess.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "auto",
                          *[str(ROOT / "tests" / t) for t in SMOKE]], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=False, timeout=1800)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
