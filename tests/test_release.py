"""The release check: what a pip user meets. The built wheel is installed *with* its
dependencies from the package registries into an empty virtual environment (torch first from
PyTorch's CPU index, as the install page says), with a suitable `swipl` on PATH and no source
tree on `sys.path`; then every README block that a user can run (all but the set-up commands
of a clone) runs unchanged, from an empty folder, its shown output compared.

It downloads packages, so it runs only when asked: `.ci/run` sets NESYBENCH_RELEASE_CHECK=1
(NESYBENCH_WHEELS=DIR takes torch from local wheels, as `make setup` does)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from distribution import build_wheel
from readme_blocks import blocks, console_samples, normalise_output, shell_commands

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(os.environ.get("NESYBENCH_RELEASE_CHECK") != "1",
                                reason="installs from the package registries: set "
                                       "NESYBENCH_RELEASE_CHECK=1 (.ci/run does)")
TORCH_INDEX = os.environ.get("NESYBENCH_TORCH_INDEX", "https://download.pytorch.org/whl/cpu")


def _swipl_bindir() -> Path:
    """A SWI-Prolog >= 9.1.12: the one `make setup` built, else the one on PATH."""
    built = ROOT / ".deps" / "swipl" / "bin"
    if (built / "swipl").is_file():
        return built
    found = shutil.which("swipl")
    assert found, "no swipl: the release check needs the one `make setup` provides"
    return Path(found).parent


def _torch_requirement() -> str:
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return next(d for d in deps if d.replace(" ", "").startswith(("torch>", "torch=", "torch<")))


def test_the_readme_runs_from_the_installed_wheel(tmp_path):
    whl = build_wheel(tmp_path / "dist")
    venv, work, cache = tmp_path / "venv", tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    py, bindir = venv / "bin" / "python", venv / "bin"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "NESYBENCH_DATA", "NESYBENCH_KERNELS", "SWI_HOME_DIR",
                        "VIRTUAL_ENV")}
    env.update(NESYBENCH_CACHE=str(cache), PIP_DISABLE_PIP_VERSION_CHECK="1",
               PATH=os.pathsep.join([str(bindir), str(_swipl_bindir()), env.get("PATH", "")]))

    def run(*args, cwd=work, timeout=1800):
        return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout, check=False)

    pip = (py, "-m", "pip", "install", "-q")
    torch = _torch_requirement()
    if os.environ.get("NESYBENCH_WHEELS"):
        res = run(*pip, "--no-deps", "--no-index", "--find-links", os.environ["NESYBENCH_WHEELS"],
                  torch)
    else:
        res = run(*pip, "--retries", "1", "--timeout", "20", "--index-url", TORCH_INDEX, torch)
        if res.returncode != 0:                      # the index is out of reach: pip's own
            res = run(*pip, torch)
    assert res.returncode == 0, res.stderr[-3000:]
    before = run(py, "-c", "import torch; print(torch.__version__)").stdout.strip()
    # the wheel with its dependencies and the extra the README names (hub, for `export`);
    # janus-swi compiles against the swipl on PATH
    res = run(*pip, "--no-cache-dir", f"{whl}[hub]")
    assert res.returncode == 0, res.stderr[-3000:]
    after = run(py, "-c", "import torch; print(torch.__version__)").stdout.strip()
    assert after == before, "installing nesybench replaced the torch already there"
    res = run(py, "-c", "import nesybench; print(nesybench.__file__)")
    assert res.returncode == 0, res.stderr
    assert Path(res.stdout.split()[0]).is_relative_to(venv), res.stdout   # not the checkout
    res = run(bindir / "nesybench", "doctor")
    assert res.returncode == 0, res.stdout + res.stderr
    res = run(bindir / "nesybench", "data", "fetch")
    assert res.returncode == 0, res.stderr[-3000:]

    ran = 0
    for block in blocks(ROOT / "README.md", "README.md"):
        if block.skip or block.lang not in ("console", "sh", "python"):
            continue                       # skipped: `make demo`/`make test` need a clone
        ran += 1
        if block.lang == "python":
            script = tmp_path / f"block_{block.line}.py"
            script.write_text(block.text)                          # unchanged: no replace
            res = run(py, script, timeout=900)
            assert res.returncode == 0, f"{block.where}:\n{res.stderr[-3000:]}"
            continue
        if block.lang == "sh":
            for cmd in shell_commands(block):
                res = run("bash", "-c", cmd, timeout=900)
                assert res.returncode == 0, f"{block.where}: {cmd}\n{res.stderr[-3000:]}"
            continue
        for cmd, sample in console_samples(block):
            res = run("bash", "-c", cmd, timeout=900)
            assert res.returncode == 0, f"{block.where}: {cmd}\n{res.stderr[-3000:]}"
            printed = res.stdout if res.stdout.strip() else res.stderr
            if sample:
                assert normalise_output("\n".join(sample)) == normalise_output(printed, work), \
                    f"{block.where}: `{cmd}` printed\n{printed}"
    assert ran >= 8
    assert not any(p.name in ("curricula", "kb", "prolog", "tests") for p in work.iterdir())
