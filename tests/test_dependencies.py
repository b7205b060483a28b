"""Install requirements are ranges, not pins: an environment that already holds another
supported torch keeps it. scripts/setup.sh takes torch's range from pyproject.toml and a local
wheel folder only when an environment variable names one."""
from __future__ import annotations

import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
REQUIREMENTS = [Requirement(r) for r in PROJECT["dependencies"]] + \
    [Requirement(r) for extra in PROJECT["optional-dependencies"].values() for r in extra]


def test_no_install_requirement_is_an_exact_pin():
    pinned = [str(r) for r in REQUIREMENTS
              if any(s.operator in ("==", "===") for s in r.specifier)]
    assert pinned == []
    assert all(r.specifier for r in REQUIREMENTS), "every requirement has a lower bound"


def test_torch_and_klay_are_ranges_that_the_installed_versions_satisfy():
    by_name = {r.name: r for r in REQUIREMENTS}
    for name, too_new in (("torch", "3.0"), ("klaycircuits", "0.2.0")):
        spec = by_name[name].specifier
        assert {s.operator for s in spec} == {">=", "<"}, (name, str(spec))
        assert Version(too_new) not in spec
        installed = Version(metadata.version(name))
        assert spec.contains(installed, prereleases=True), (name, installed, str(spec))
    # another supported torch (a later 2.x) is inside the range: pip keeps it
    assert Version("2.99.0") in by_name["torch"].specifier


def test_setup_takes_torch_from_the_cpu_index_or_an_explicit_wheel_folder():
    script = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert "/opt/" not in script and ".whl" not in script      # no wheel path it assumes
    assert '"${NESYBENCH_WHEELS:-}"' in script and "--find-links \"$NESYBENCH_WHEELS\"" in script
    assert "download.pytorch.org/whl/cpu" in script
    # the range it installs is pyproject's own
    line = next(x for x in script.splitlines() if x.strip().startswith("torch_req=$(sed"))
    cmd = line.split("$(", 1)[1].rsplit(")", 1)[0]
    res = subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    installs = Requirement(res.stdout.strip())
    torch = next(r for r in REQUIREMENTS if r.name == "torch")
    assert installs.name == "torch" and installs.specifier == torch.specifier
