"""The symbolic baseline: Aleph per task in its own ``swipl`` process with a hard time limit.

For one task: export the Aleph files (:func:`nesybench.kandy.ilp.export_task`: ``tNN.b``,
``.f``, ``.n`` with the supplementary's constant hyper-parameters, :data:`ALEPH_SETTINGS`),
write a small driver that consults the user's Aleph (classic Aleph 5 ``aleph.pl``, e.g.
friguzzi/aleph's ``prolog/aleph_orig.pl``), runs ``read_all/1``, ``induce/0`` and
``write_rules/1``, start ``swipl`` on it (killed, with its process group, after ``timeout``
seconds), then score the written theory on the test split with
:func:`nesybench.kandy.ilp.evaluate_theory` (balanced accuracy, precision, recall, C_gt/C_lt,
L_gt/L_lt, equals-the-ground-truth). A timeout or a crash of Aleph is recorded in the task's
row (``timed_out`` / ``crashed``, scored as the empty theory), never an exception. Aleph that
ends without a clause (``write_rules/1`` fails or writes nothing) learned the empty theory:
``empty_theory``, scored like any theory (every sample negative: balanced accuracy 0.5, the
plain accuracy of the negative class), not a crash.

The ``swipl`` process runs in its own process group, killed on timeout, on any exception in
this process (Ctrl-C; SIGTERM, which the command line turns into an exception) and, on
Linux, when the process that started it dies (``PR_SET_PDEATHSIG``: a sweep worker killed by
its driver takes Aleph with it).

Aleph is not shipped (it is not on a package registry): the user passes its path.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from ...errors import NesyError
from ...paths import project_swipl

ENCODINGS = {"nat": "natural", "ptr": "pointer", "natural": "natural", "pointer": "pointer"}
BKS = {"min": "minimal", "mid": "mid", "minimal": "minimal"}

#: supp. Tables 2-3 (Easy): i, minacc, noise, minpos, depth, nodes; clauselength = max_size 6
ALEPH_SETTINGS = {"i": 5, "minacc": 0.5, "noise": 5, "minpos": 2, "depth": 15,
                  "nodes": 20000, "clauselength": 6}

_INF = float("inf")
#: Aleph 5 settings ``ilp-run --aleph-set KEY=VALUE`` may change, with the type of their
#: value (Aleph manual, "Setting Aleph's parameters"): ``("int", lo, hi)``, ``("float", lo,
#: hi)`` (inclusive bounds), ``("int_inf", lo)`` (an integer or ``inf``), ``("bool",)`` or
#: ``("atom", choices)``. Settings that name files or run Prolog goals are not on the list.
ALEPH_SET_ALLOWED: dict[str, tuple] = {
    "caching": ("bool",),
    "check_redundant": ("bool",),
    "check_useless": ("bool",),
    "clauselength": ("int", 1, 1000),
    "clauses": ("int", 1, 1000),
    "construct_bottom": ("atom", ("saturation", "reduction", "false")),
    "depth": ("int", 1, 10_000_000),
    "evalfn": ("atom", ("coverage", "compression", "posonly", "pbayes", "accuracy", "laplace",
                        "auto_m", "mestimate", "entropy", "gini", "wracc")),
    "explore": ("bool",),
    "i": ("int", 1, 100),
    "language": ("int_inf", 1),
    "lookahead": ("int", 1, 100),
    "m": ("float", 0.0, _INF),
    "minacc": ("float", 0.0, 1.0),
    "mingain": ("float", -_INF, _INF),
    "minpos": ("int", 1, 10_000_000),
    "minposfrac": ("float", 0.0, 1.0),
    "minscore": ("float", -_INF, _INF),
    "newvars": ("int_inf", 0),
    "nodes": ("int", 1, 1_000_000_000),
    "noise": ("int", 0, 10_000_000),
    "openlist": ("int_inf", 1),
    "optimise_clauses": ("bool",),
    "proof_strategy": ("atom", ("restricted_sld", "sld")),
    "prune_defs": ("bool",),
    "samplesize": ("int", 0, 10_000_000),
    "search": ("atom", ("bf", "df", "heuristic", "ibs", "ils", "rls", "scs", "id", "ic",
                        "ar")),
    "searchtime": ("float", 0.0, _INF),
    "splitvars": ("bool",),
    "verbosity": ("int", 0, 10),
}


def _set_value(key: str, text: str, kind: tuple):
    """The typed value of ``KEY=TEXT`` (see :data:`ALEPH_SET_ALLOWED`); NesyError if bad."""
    t = text.strip()
    if kind[0] == "bool":
        what = "true or false"
    elif kind[0] == "atom":
        what = "one of " + ", ".join(kind[1])
    elif kind[0] == "int":
        what = f"an integer in {kind[1]}..{kind[2]}"
    elif kind[0] == "int_inf":
        what = f"an integer >= {kind[1]} or inf"
    else:
        what = "a finite number" + (f" in [{kind[1]}, {kind[2]}]" if kind[2] != _INF
                                    else f" >= {kind[1]}" if kind[1] != -_INF else "")
    bad = NesyError(f"--aleph-set {key}={text}: {key} takes {what}", field="aleph-set")
    if kind[0] == "bool":
        if t not in ("true", "false"):
            raise bad
        return t == "true"
    if kind[0] == "atom":
        if t not in kind[1]:
            raise bad
        return t
    if kind[0] == "int_inf" and t == "inf":
        return "inf"
    if kind[0] in ("int", "int_inf"):
        try:
            v = int(t)
        except ValueError:
            raise bad from None
        hi = kind[2] if kind[0] == "int" else None
        if v < kind[1] or (hi is not None and v > hi):
            raise bad
        return v
    try:
        v = float(t)
    except ValueError:
        raise bad from None
    if v != v or not kind[1] <= v <= kind[2] or v in (_INF, -_INF):
        raise bad
    return v


def parse_aleph_settings(items) -> dict:
    """``["clauselength=8", "evalfn=coverage"]`` → ``{"clauselength": 8, "evalfn":
    "coverage"}``, each key checked against :data:`ALEPH_SET_ALLOWED` and its value typed.
    An unknown key, a missing ``=``, a bad value or a key given twice is a NesyError."""
    out: dict = {}
    for item in items or ():
        if "=" not in item:
            raise NesyError(f"--aleph-set takes KEY=VALUE (e.g. clauselength=8), got {item!r}",
                            field="aleph-set")
        key, text = (x.strip() for x in item.split("=", 1))
        if key not in ALEPH_SET_ALLOWED:
            raise NesyError(f"--aleph-set: unknown Aleph setting {key!r} (allowed: "
                            f"{', '.join(ALEPH_SET_ALLOWED)})", field="aleph-set")
        if key in out:
            raise NesyError(f"--aleph-set: {key} given twice", field="aleph-set")
        out[key] = _set_value(key, text, ALEPH_SET_ALLOWED[key])
    return out


def find_swipl() -> Path:
    """The ``swipl`` executable: the project's ``.deps/swipl/bin/swipl``, then PATH."""
    cand = project_swipl()
    if cand is not None:
        return cand
    found = shutil.which("swipl")
    if found:
        return Path(found)
    raise NesyError("swipl not found (run `make setup`, or put swipl on PATH)")


def check_aleph(path) -> Path:
    """The user's Aleph file, checked: exists, and is the classic (non-module) Aleph 5."""
    if not path:
        raise NesyError("give the path of Aleph's aleph.pl with --aleph PATH (or set "
                        "NESYBENCH_ALEPH); Aleph is not shipped with nesybench", field="aleph")
    p = Path(path).expanduser().resolve()
    if not p.is_file():
        raise NesyError("Aleph not found (expected the file aleph.pl of Aleph 5)", file=str(p),
                        field="aleph")
    from ...folder import read_input  # noqa: PLC0415
    head = read_input(p).decode("utf-8", errors="replace")
    if "induce" not in head or "read_all" not in head:
        raise NesyError("this file does not look like Aleph (no induce/read_all)", file=str(p),
                        field="aleph")
    if ":- module(aleph" in head:
        raise NesyError("this is the SWI pack version of Aleph (a module); give the classic "
                        "Aleph 5 file instead (friguzzi/aleph: prolog/aleph_orig.pl, or "
                        "Oxford's aleph.pl)", file=str(p), field="aleph")
    return p


def _q(path: Path) -> str:
    return "'" + str(path).replace("\\", "\\\\").replace("'", "\\'") + "'"


_DRIVER = """\
:- set_prolog_flag(verbose, silent).
:- style_check(-singleton).
:- style_check(-discontiguous).
main :-
    catch(( consult({aleph}),
            read_all({stem}),
            induce,
            ( write_rules({theory}) -> true ; true ) ),
          E, (print_message(error, E), halt(3))),
    halt(0).
"""


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the process that started it dies (Linux
    PR_SET_PDEATHSIG), so a sweep worker killed by its driver takes swipl with it."""
    try:
        import ctypes  # noqa: PLC0415

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run_aleph_task(dataset, task: int, aleph, *, encoding: str = "nat", bk: str = "mid",
                   timeout: float = 1800.0, settings: dict | None = None,
                   workdir=None) -> dict:
    """Learn task ``task`` with Aleph and score it on the test split (see module docstring).

    Returns a dict: task, encoding, bk, seconds, timed_out, crashed, returncode, theory (text),
    and the :class:`nesybench.kandy.ilp.IlpScore` fields (balanced_accuracy, precision, recall,
    clauses_lt, literals_lt, clauses_gt, literals_gt, c_ratio, l_ratio, correct ...).
    """
    from ..ilp import evaluate_theory, export_task, load_task  # noqa: PLC0415

    if encoding not in ENCODINGS:
        raise NesyError(f"unknown encoding {encoding!r} (nat or ptr)", field="encoding")
    if bk not in BKS:
        raise NesyError(f"unknown background knowledge {bk!r} (min or mid)", field="bk")
    if not timeout > 0:
        raise NesyError("timeout must be > 0 seconds", field="timeout")
    enc, kb = ENCODINGS[encoding], BKS[bk]
    aleph_path = check_aleph(aleph)
    swipl = find_swipl()
    import tempfile  # noqa: PLC0415

    work = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="nesybench-aleph-"))
    work.mkdir(parents=True, exist_ok=True)
    sett = dict(ALEPH_SETTINGS)
    for k, v in (settings or {}).items():
        if k not in ALEPH_SET_ALLOWED:
            raise NesyError(f"unknown Aleph setting {k!r}", field="settings")
        sett[k] = _set_value(k, "inf" if v == "inf" else (str(v).lower() if isinstance(v, bool)
                                                             else str(v)), ALEPH_SET_ALLOWED[k])
    ilp_task = load_task(dataset, task)     # read once: the export and the scoring share it
    stem = export_task(ilp_task, None, work / f"export-t{task:02d}", encoding=enc, kb=kb,
                       settings=sett, overwrite=True)
    theory = work / f"t{task:02d}_theory.pl"
    driver = work / f"t{task:02d}_driver.pl"
    driver.write_text(_DRIVER.format(aleph=_q(aleph_path), stem=_q(stem), theory=_q(theory)),
                      encoding="utf-8")
    log = work / f"t{task:02d}_aleph.log"
    t0 = time.perf_counter()
    timed_out = False
    with open(log, "wb") as fh:
        proc = subprocess.Popen([str(swipl), "-q", "-g", "main", "-t", "halt(1)", str(driver)],
                                stdout=fh, stderr=subprocess.STDOUT, cwd=str(stem.parent),
                                start_new_session=True,
                                preexec_fn=_die_with_parent if os.name == "posix" else None)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            rc = proc.returncode
        except BaseException:
            # Ctrl-C, SIGTERM (raised by the CLI's handler) or any error: Aleph goes too
            _kill_group(proc)
            raise
    seconds = time.perf_counter() - t0
    crashed = (not timed_out) and rc != 0
    # Aleph ran to its end and wrote nothing: it learned the empty theory (a result)
    empty = not timed_out and not crashed and (
        not theory.exists() or not theory.read_text(encoding="utf-8").strip())
    if timed_out or crashed or not theory.exists():
        theory.write_text("", encoding="utf-8")     # scored as the empty theory
    score = evaluate_theory(ilp_task, None, theory, enc, split="test", kb=kb)
    row = {"task": task, "encoding": encoding, "bk": bk, "seconds": seconds,
           "timeout": float(timeout), "settings": sett,
           "timed_out": timed_out, "crashed": crashed, "empty_theory": empty,
           "returncode": rc,
           "log_tail": log.read_text(encoding="utf-8", errors="replace")[-2000:]}
    row.update(score.to_dict())
    row["theory"] = theory.read_text(encoding="utf-8")
    return row
