"""Build the distribution as a user gets it (used by tests/test_install.py and
tests/test_release.py): an sdist from a copy of the source tree, then the wheel from that
sdist, so that what MANIFEST.in forgets is missing from the wheel too."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("prolog/nesybench.pl", "kb/kandy/bk.pl", "curricula/kandy/easy.yaml",
           "kb/irt/example_responses.csv")


def build_wheel(tmp: Path) -> Path:
    """The wheel built from the sdist of a copy of the source tree, in ``tmp/wheel``."""
    src = tmp / "src"
    src.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".*")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "CHANGELOG.md",
                 "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("python", "prolog", "kb", "curricula"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    res = subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta "
                          "as b; print(b.build_sdist(sys.argv[1]))", str(tmp / "sdist")],
                         cwd=src, capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    sdist = tmp / "sdist" / res.stdout.split()[-1]
    with tarfile.open(sdist) as tf:
        names = tf.getnames()
        tf.extractall(tmp / "unpacked", filter="data")
    top = names[0].split("/")[0]
    for rel in SHIPPED:
        assert f"{top}/{rel}" in names, rel
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                          "--no-build-isolation", str(tmp / "unpacked" / top), "-w",
                          str(tmp / "wheel")], capture_output=True, text=True, env=env,
                         check=False, cwd=tmp)
    assert res.returncode == 0, res.stderr[-2000:]
    (whl,) = (tmp / "wheel").glob("nesybench-*.whl")
    return whl
