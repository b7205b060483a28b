"""The command lines of the PSyKI cross-check (``benchmarks/ski_psyki.py`` and its worker):
a level stride that leaves a degradation only its level 0 (R = nan) is refused before any
work, and the worker prints the splice theory with ``--theory`` alone. Neither needs the
PSyKI environment."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "benchmarks" / "ski_psyki_worker.py"


def _driver():
    spec = importlib.util.spec_from_file_location("ski_psyki", ROOT / "benchmarks/ski_psyki.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_stride_that_keeps_only_level_0_is_refused(capsys, monkeypatch):
    mod = _driver()
    monkeypatch.setattr(mod.cells, "dataset", lambda name: pytest.fail("loaded the data"))
    # flip has 12 levels: a stride of 19 (or 12) keeps 0.0 alone; drop (20 levels) keeps 0, 0.95
    for stride, deg in (("19", "drop,flip"), ("12", "flip")):
        with pytest.raises(SystemExit) as e:
            mod.main(["--reference-python", "unused", "--level-stride", stride,
                      "--degradations", deg])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert f"--level-stride {stride} keeps only level 0 of flip's 12 levels" in err
        assert "at most 11" in err
    for bad in (["--level-stride", "0"], ["--degradations", "drop,blur"]):
        with pytest.raises(SystemExit) as e:
            mod.main(["--reference-python", "unused", *bad])
        assert e.value.code == 2


def test_the_worker_prints_the_theory_with_theory_alone():
    out = subprocess.run([sys.executable, str(WORKER), "--theory"], capture_output=True,
                         text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0].startswith("ei_stop(X_30a, X_30c, X_30g, X_30t,")
    assert any(ln.startswith("pyrimidine_rich(") and "m_of_n(6," in ln for ln in lines)
    bad = subprocess.run([sys.executable, str(WORKER)], capture_output=True, text=True)
    assert bad.returncode != 0 and "usage:" in bad.stderr


def _fake_python(path: Path, rc: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nexit {rc}\n")
    path.chmod(0o755)
    return path


def test_the_environment_script_skips_a_broken_python39_and_finds_pyenvs(tmp_path):
    """``python3.9`` on PATH that does not run (a pyenv shim for a version not selected) is
    passed over; a 3.9 in pyenv's versions folder is used; PSYKI_PYTHON39 must be a 3.9."""
    script = ROOT / "scripts" / "psyki_env.sh"
    _fake_python(tmp_path / "bin" / "python3.9", 1)
    good = _fake_python(tmp_path / "pyenv" / "versions" / "3.9.7" / "bin" / "python", 0)
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "PYENV_ROOT": str(tmp_path / "pyenv"),
           "HOME": str(tmp_path)}
    res = subprocess.run(["bash", str(script), "--find-python"], capture_output=True,
                         text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(good)
    bad = subprocess.run(["bash", str(script), "--find-python"], capture_output=True,
                         text=True, env={**env, "PSYKI_PYTHON39": str(tmp_path / "bin" /
                                                                      "python3.9")})
    assert bad.returncode == 1 and "is not a working Python 3.9" in bad.stderr
    usage = subprocess.run(["bash", str(script), "--bogus"], capture_output=True, text=True,
                           env=env)
    assert usage.returncode == 2 and "usage:" in usage.stderr


def test_the_driver_finds_the_swipl_janus_is_built_for_from_a_fresh_clone(tmp_path):
    """A clone without its own SWI-Prolog build, run by an environment set up elsewhere, with
    another SWI-Prolog first on PATH: nesybench alone picks that one and refuses (janus-swi
    is built against another version); the driver picks the environment's own first."""
    from nesybench.logic import prolog

    built = prolog.janus_library_version()
    stamp = Path(sys.prefix) / ".nesybench-stamp"
    if built is None or not stamp.is_file():
        pytest.skip("needs janus-swi and an environment made by make setup")
    clone = tmp_path / "clone"
    (clone / "benchmarks").mkdir(parents=True)
    (clone / "benchmarks" / "ski_psyki.py").write_bytes(
        (ROOT / "benchmarks" / "ski_psyki.py").read_bytes())
    for name in ("python", "prolog", "kb", "curricula"):
        (clone / name).symlink_to(ROOT / name)
    fake = tmp_path / "bin" / "swipl"
    fake.parent.mkdir()
    other = "80504" if built != "8.5.4" else "80503"
    fake.write_text(f'#!/bin/sh\necho \'PLBASE="{tmp_path}";\'\necho \'PLVERSION="{other}";\'\n')
    fake.chmod(0o755)
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "HOME": str(tmp_path),
           "NESYBENCH_CACHE": str(tmp_path / "cache")}
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('d', {str(clone / 'benchmarks' / 'ski_psyki.py')!r})\n"
            "d = importlib.util.module_from_spec(spec); spec.loader.exec_module(d)\n"
            "chosen = d.use_matching_swipl() if sys.argv[1] == 'driver' else None\n"
            "from nesybench.logic import prolog\n"
            "v = prolog.once('current_prolog_flag(version, V)')['V']\n"
            "print(chosen, v)\n")
    alone = subprocess.run([sys.executable, "-c", code, "alone"], env=env, capture_output=True,
                           text=True)
    assert alone.returncode != 0 and f"janus-swi is built against SWI-Prolog {built}" in \
        alone.stderr
    res = subprocess.run([sys.executable, "-c", code, "driver"], env=env, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    chosen, version = res.stdout.split()
    assert chosen != str(fake) and Path(chosen).is_file()
    major, minor, patch = (int(p) for p in built.split("."))
    assert int(version) == major * 10000 + minor * 100 + patch
