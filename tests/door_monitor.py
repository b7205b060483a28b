"""Watch what a nesybench process opens: every hostile case run as a process of its own under
``strace -f -y -e trace=open,openat,openat2`` (the files SWI-Prolog, clingo, SQLite and NumPy
open natively included, which no Python audit hook sees).

A case passes when the process exits as the case says (a refusal: exit 2 with one line on
stderr, no traceback) within :data:`HANG_S` seconds, opens no file outside the places a
command may read (:func:`allowed_roots`: its scratch folder, which holds the input folders
and ``--out``; the repository, i.e. the package data and the virtual environment; the
interpreter; the user cache; a temporary folder of its own; the system's ``/usr``, ``/lib``,
``/etc`` ...) and none of the canary files (:data:`fuzzing.SECRET` and the system files of
:data:`CANARIES`) wherever they are, and leaves every file of the scratch folder but ``--out``
(``o``) as it was. Used by tests/test_door_monitor.py (one case per reproducer) and by
benchmarks/fuzz.py (every surface case that runs a command).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from fuzzing import ROOT, SECRET, _fill, _snapshot, lay_out_case

STRACE = shutil.which("strace")
#: a process running longer than this counts as a hang (the issue's bound for a refusal)
HANG_S = 30.0
#: system files no hostile case may make nesybench read (with the fuzzing secret)
CANARIES = ("/etc/passwd", "/etc/shadow", "/etc/hostname")
#: where a command may open files besides its scratch folder and the repository
SYSTEM_ROOTS = ("/usr", "/lib", "/lib64", "/etc", "/proc", "/sys", "/dev", "/run", "/opt",
                "/var/lib", "/var/cache")

#: ``PID openat(AT_FDCWD</cwd>, "path", FLAGS) = 3</real/path>``: a successful open, with the
#: real path of the descriptor it returned (strace -y)
_OPEN = re.compile(r'^\d+\s+(?:open|openat|openat2)\((?:[^,"]*,\s*)?"(?P<path>(?:[^"\\]|\\.)*)",'
                   r'\s*(?P<flags>[^)]*)\)\s*=\s*(?P<fd>\d+)<(?P<real>[^>]*)>')


@dataclass
class Watched:
    """One monitored process: its exit status, output, the real paths it opened (with the
    flags), seconds and whether it was killed for running over :data:`HANG_S`."""
    rc: int
    out: str
    err: str
    opens: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    hung: bool = False


def allowed_roots(d: Path, tmp: Path) -> list[str]:
    """The folders a command run on the scratch folder ``d`` may open files in."""
    roots = [d, ROOT, Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), tmp,
             Path.home() / ".cache", Path.home() / ".config" / "matplotlib",
             *map(Path, SYSTEM_ROOTS)]
    return sorted({os.path.realpath(r) for r in roots})


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def run_watched(args: list[str], *, cwd: Path, env: dict | None = None,
                timeout: float = HANG_S) -> Watched:
    """``python -m nesybench ARGS`` under strace; its opens parsed from strace's log."""
    if STRACE is None:
        raise RuntimeError("strace is not installed (make setup installs it)")
    with tempfile.TemporaryDirectory(prefix="nesybench-monitor-") as logdir:
        log = Path(logdir) / "opens.log"
        cmd = [STRACE, "-f", "-qq", "-y", "-s", "4096", "-e", "trace=open,openat,openat2",
               "-e", "signal=none", "-o", str(log), sys.executable, "-m", "nesybench",
               *map(str, args)]
        full_env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]), **(env or {}))
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        hung = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            hung = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        seconds = time.monotonic() - t0
        opens = []
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            m = _OPEN.match(line)
            if m:
                opens.append((m.group("flags"), m.group("real")))
    return Watched(proc.returncode, out, err, opens, seconds, hung)


@dataclass
class Verdict:
    """What one monitored case did wrong (empty lists: nothing)."""
    name: str
    watched: Watched | None = None
    problems: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    @property
    def traceback(self) -> bool:
        return self.watched is not None and "Traceback" in self.watched.err


def check_case(path: Path, d: Path, bases: dict[str, Path], *,
               env: dict | None = None) -> Verdict:
    """Lay out the surface case ``path`` in the (empty) scratch folder ``d``, run its command
    as a watched process and judge it (see the module docstring)."""
    SECRET.write_text("NESYBENCH-SECRET\n", encoding="utf-8")
    case, names = lay_out_case(path, d, bases)
    verdict = Verdict(path.stem)
    tmp = d.parent / f"{d.name}-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    before = {k: v for k, v in _snapshot(d).items() if not _under_out(k)}
    w = run_watched(_fill(case["args"], names), cwd=d,
                    env={"TMPDIR": str(tmp), **(env or {})})
    verdict.watched = w
    ok = case.get("ok", [2])
    lines = [x for x in w.err.splitlines() if x.strip()]
    if w.hung:
        verdict.problems.append(f"hung (killed after {HANG_S:.0f} s)")
    elif w.rc not in ok:
        verdict.problems.append(f"exit {w.rc}, expected {ok}: {w.err.strip()[-500:]}")
    if "Traceback" in w.err:
        verdict.problems.append("printed a traceback")
    errors = [x for x in lines if x.startswith("nesybench: error:")]
    progress = case.get("progress_lines", False)     # a build script's stage lines
    if w.rc == 2 and (len(errors) != 1 or not lines[-1].startswith("nesybench: error:")
                      or (len(lines) != 1 and not progress)):
        verdict.problems.append(f"{len(lines)} lines on stderr: {w.err.strip()[-500:]}")
    if "says" in case and _fill(case["says"], names) not in w.out + w.err:
        verdict.problems.append(f"not the refusal meant ({case['says']!r}): {w.err.strip()}")
    if "NESYBENCH-SECRET" in w.out + w.err:
        verdict.problems.append("printed the secret")
    roots = allowed_roots(d, tmp)
    # a file named on the command line is the input itself, wherever a link to it points
    named = {os.path.realpath(_fill(x, names)) for x in case.get("named_inputs", [])}
    roots += sorted(named)
    canaries = {os.path.realpath(SECRET), *CANARIES} - named
    # a hard link to a canary opens under its own name: compare the files themselves
    inodes = {(st.st_dev, st.st_ino) for st in map(_stat, canaries) if st is not None}
    for flags, real in w.opens:
        st = _stat(real) if _inside(real, [str(d)]) else None
        if real in canaries or not _inside(real, roots) or \
                (st is not None and (st.st_dev, st.st_ino) in inodes):
            verdict.outside.append(f"{real} ({flags})")
    if verdict.outside:
        verdict.problems.append(f"opened outside its folder: {', '.join(verdict.outside[:5])}")
    after = {k: v for k, v in _snapshot(d).items() if not _under_out(k)}
    verdict.changed = sorted(k for k in before.keys() | after.keys()
                             if before.get(k) != after.get(k))
    if verdict.changed:
        verdict.problems.append(f"changed outside --out: {', '.join(verdict.changed[:5])}")
    shutil.rmtree(tmp, ignore_errors=True)
    return verdict


def _stat(path: str):
    try:
        return os.stat(path)
    except OSError:
        return None


def _under_out(rel: str) -> bool:
    """Whether ``rel`` (relative to a case's scratch folder) is its ``--out`` (``o``, ``o.png``
    ...) or a temporary sibling of it."""
    top = rel.split("/", 1)[0]
    return top == "o" or top.startswith(("o.", ".o.", ".nesybench")) or ".tmp-" in top


def command_cases(surface_dir: Path) -> list[Path]:
    """The surface cases that run a command (``args``), sorted."""
    import json  # noqa: PLC0415

    return [p for p in sorted(surface_dir.glob("*.json"))
            if "args" in json.loads(p.read_text(encoding="utf-8"))]


def make_bases(folder: Path) -> dict[str, Path]:
    """The prepared folders surface cases copy (``rudas_ds``, ``rs_ds``), generated once into
    ``folder`` by nesybench processes."""
    bases = {"rudas_ds": folder / "rudas-ds", "rs_ds": folder / "rs-ds"}
    cmds = {"rudas_ds": ["rudas", "generate", "--out", bases["rudas_ds"], "--seed", "3", "-q"],
            "rs_ds": ["rs", "generate", ROOT / "curricula/rs/xor.yaml", "--out",
                      bases["rs_ds"], "--samples", "6", "-q"]}
    for key, args in cmds.items():
        if not bases[key].exists():
            subprocess.run([sys.executable, "-m", "nesybench", *map(str, args)], check=True,
                           env=dict(os.environ, PYTHONPATH=str(ROOT / "python")),
                           capture_output=True)
    return bases


__all__ = ["STRACE", "HANG_S", "CANARIES", "Watched", "Verdict", "run_watched", "check_case",
           "command_cases", "make_bases", "allowed_roots"]
