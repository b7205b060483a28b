"""`nesybench doctor` starts janus in a subprocess before it starts it in its own process: a
`swipl` first on PATH of another version than the library janus-swi was built against (janus
then aborts with SIGABRT, exit 134, `incompatible VM-signature`) is one report line saying
which is which and what to do, and the exit status 1, never an abort."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nesybench import doctor

ROOT = Path(__file__).resolve().parents[1]

#: doctor in a fresh process, with the source tree's own SWI-Prolog out of the way (as in an
#: installed wheel: janus then takes the home of the swipl on PATH)
DOCTOR = textwrap.dedent("""
    import sys
    import nesybench.doctor as d, nesybench.logic.prolog as lp
    d.project_swipl = lp.project_swipl = lambda: None
    from nesybench.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def _library_version() -> str:
    """The SWI-Prolog version janus-swi is built against, read as the doctor reads it."""
    res = subprocess.run([sys.executable, "-c", doctor._PREFLIGHT], capture_output=True,
                         text=True, check=True, timeout=120)
    return json.loads(res.stdout.splitlines()[0])["lib_version"]


def _fake_swipl(tmp_path: Path, plversion: int) -> tuple[Path, Path]:
    """A `swipl` that says it is SWI-Prolog `plversion` with an (empty) home of its own."""
    bindir, home = tmp_path / "bin", tmp_path / "home"
    bindir.mkdir()
    home.mkdir()
    exe = bindir / "swipl"
    exe.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case "$1" in
          --dump-runtime-variables) echo 'PLBASE="{home}";'; echo 'PLVERSION="{plversion}";';;
          *) echo "not SWI-Prolog" >&2; exit 1;;
        esac
        """))
    exe.chmod(0o755)
    return bindir, home


@pytest.mark.parametrize(("plversion", "version", "swipl_status"),
                         [(90004, "9.0.4", "old"), (90399, "9.3.99", "ok")])
def test_a_mismatched_swipl_first_on_path_is_one_line_and_exit_1(tmp_path, plversion, version,
                                                                  swipl_status):
    built = _library_version()
    bindir, home = _fake_swipl(tmp_path, plversion)
    env = {k: v for k, v in os.environ.items() if k != "SWI_HOME_DIR"}
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT / "python")
    res = subprocess.run([sys.executable, "-c", DOCTOR, "doctor"], capture_output=True,
                         text=True, env=env, timeout=300, check=False, cwd=tmp_path)
    assert res.returncode == 1, (res.returncode, res.stderr[-2000:])     # not 134
    assert "FATAL" not in res.stderr and "Traceback" not in res.stderr, res.stderr
    lines = {line.split()[2]: line for line in res.stdout.splitlines()[1:-1]}
    assert lines["swipl"].startswith(swipl_status)
    janus = [line for line in res.stdout.splitlines() if line.split()[2:3] == ["janus"]]
    assert len(janus) == 1
    line = janus[0]
    assert line.startswith("mismatch")
    assert f"built against SWI-Prolog {built}" in line                # the library
    assert f"{bindir / 'swipl'} (SWI-Prolog {version})" in line and str(home) in line
    assert "killed by signal 6" in line                                # what janus did
    assert "first on PATH" in line and "--no-binary janus-swi" in line  # what to do
    assert res.stdout.splitlines()[-1].startswith("NOT READY")
    # the same as JSON
    res = subprocess.run([sys.executable, "-c", DOCTOR, "doctor", "--json"],
                         capture_output=True, text=True, env=env, timeout=300, check=False,
                         cwd=tmp_path)
    assert res.returncode == 1
    names = {c["name"]: c for c in json.loads(res.stdout)["components"]}
    assert names["janus"]["status"] == "mismatch" and version in names["janus"]["detail"]


def test_a_janus_that_fails_in_the_subprocess_is_not_started_here(monkeypatch):
    from nesybench.logic import prolog

    monkeypatch.setattr(doctor, "_PREFLIGHT", "import os\nprint('{}', flush=True)\nos.abort()")

    def started(*_a, **_k):
        raise AssertionError("janus started in the doctor's own process")
    monkeypatch.setattr(prolog, "janus", started)
    comp = doctor.check_janus()
    assert comp.status == "missing" and comp.group == "core"
    assert "killed by signal 6" in comp.detail and "--no-binary janus-swi" in comp.fix
    monkeypatch.setattr(doctor, "_PREFLIGHT", "import sys\nsys.exit('no engine here')")
    comp = doctor.check_janus()
    assert comp.status == "missing" and "exit status 1: no engine here" in comp.detail


def test_a_working_janus_passes_the_subprocess_check():
    assert doctor.janus_preflight() is None


def test_the_home_is_the_one_janus_would_take(monkeypatch, tmp_path):
    monkeypatch.setenv("SWI_HOME_DIR", str(tmp_path))
    assert doctor.janus_home() == (str(tmp_path), "SWI_HOME_DIR", None)
    monkeypatch.delenv("SWI_HOME_DIR")
    bindir, home = _fake_swipl(tmp_path, 90299)
    from nesybench.logic import prolog
    monkeypatch.setattr(prolog, "project_swipl", lambda: None)
    monkeypatch.setattr(prolog, "cache_swipl", lambda: None)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert doctor.janus_home() == (str(home), str(bindir / "swipl"), "9.2.99")


@pytest.mark.parametrize("command", [["kandy", "check", "easy/t15", "in([circle_red_small])"],
                                     ["rudas", "generate", "--out", "ds", "--seed", "1"]])
def test_every_janus_command_refuses_a_mismatched_swipl_in_one_line(tmp_path, command):
    """Not only the doctor: any command that would start janus with the home of another
    SWI-Prolog than its library's says so in one line (exit 2) before SWI-Prolog aborts."""
    built = _library_version()
    bindir, home = _fake_swipl(tmp_path, 90004)
    env = {k: v for k, v in os.environ.items() if k != "SWI_HOME_DIR"}
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT / "python")
    res = subprocess.run([sys.executable, "-c", DOCTOR, *command], capture_output=True,
                         text=True, env=env, timeout=300, check=False, cwd=tmp_path)
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])     # not 134
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "FATAL" not in res.stderr, res.stderr
    assert f"built against SWI-Prolog {built}" in lines[0]
    assert f"{bindir / 'swipl'} is SWI-Prolog 9.0.4" in lines[0] and str(home) in lines[0]
    assert "--no-binary janus-swi" in lines[0]
    assert not (tmp_path / "ds").exists()                              # nothing half-written


def test_a_matching_home_passes_the_version_guard():
    from nesybench.logic import prolog

    built = prolog.janus_library_version()
    assert built and built.count(".") == 2
    prolog._check_versions("/somewhere", "swipl", built)               # same version: fine
    with pytest.raises(Exception, match="not the home of an SWI-Prolog"):
        # a SWI_HOME_DIR whose version cannot be read would abort the process: refused
        prolog._check_versions("/somewhere", "SWI_HOME_DIR", None)
    with pytest.raises(Exception, match="is SWI-Prolog 1.2.3"):
        prolog._check_versions("/somewhere", "swipl", "1.2.3")


def test_the_swipl_of_janus_own_version_wins_over_another_first_on_path(monkeypatch, tmp_path):
    """A `setup-prolog` build in the user cache (janus built against it) is found even while
    an older `swipl` comes first on PATH."""
    from nesybench.logic import prolog

    real = prolog.project_swipl() or prolog.cache_swipl()
    if real is None or prolog._runtime(real)[1] != prolog.janus_library_version():
        pytest.skip("no SWI-Prolog build of janus-swi's own version outside PATH")
    bindir, _ = _fake_swipl(tmp_path, 90004)
    monkeypatch.delenv("SWI_HOME_DIR", raising=False)
    monkeypatch.setattr(prolog, "project_swipl", lambda: None)
    monkeypatch.setattr(prolog, "cache_swipl", lambda: real)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    home, chosen_by, version = prolog._swi_home()
    assert (chosen_by, version) == (str(real), prolog.janus_library_version())
    monkeypatch.setattr(prolog, "cache_swipl", lambda: None)         # only the old one left
    assert prolog._swi_home()[1:] == (str(bindir / "swipl"), "9.0.4")
