"""The long fuzz run: the properties of tests/test_fuzz.py with many random inputs.

    .venv/bin/python benchmarks/fuzz.py                 # scale 100: about 1,500-2,000 inputs per format
    .venv/bin/python benchmarks/fuzz.py --scale 10 -k rs
    make fuzz

Each property: every random or mutated input (KANDY curricula, RS task files, ASP knowledge,
KANDY rules, RuDaS learned programs, prediction CSVs, CLI option values, terms nested up to
50,000 deep, knowledge that grounds to millions of atoms, RuDaS rules with function symbols,
ASP with #include/#script), and the hostile corpus of tests/data/fuzz/ (a case for every
command and public loader of the surface inventory) gives exit 0 / a documented status, or
exit 2 with exactly one stderr line, within 30 s, leaving no output, opening no file outside
its input (an audit hook counts opens of a secret file and of /etc/passwd). Around the run it checks that the
fuzzing process ended without a signal, that no file of the repository's inputs (kb/,
curricula/, prolog/, tests/data/ but the fuzz corpus) changed, and that no nesybench
temporary folder was left in the temp folder (a TMPDIR of its own); it reports the number of
inputs and the peak RSS of the process that ran them (an upper bound on the memory of every
single check).
With no -k it then runs every command case of tests/data/fuzz/surface/ again as a process of
its own under strace (tests/door_monitor.py; ``--no-monitor`` skips it): the files SWI-Prolog,
clingo, SQLite and NumPy open natively count too, and a case fails on a hang, a traceback, an
open outside its folder or of a canary, or a file changed outside --out; the summary line
adds these to the in-process counts.
With no -k it then runs benchmarks/grounder_reference.py: 100 generated first-order programs
per unit of scale (10,000 at scale 100), each grounder against stock ProbLog.
The last failing (shrunk) input of each property is saved as
tests/data/fuzz/<kind>/last-failure.*: rename it (e.g. after its bug) and commit it; the test
suite re-runs every file there (test_corpus). Prints the number of inputs and the time taken.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the inputs the fuzz run reads; none of them may change
WATCHED = ["kb", "curricula", "prolog", "tests/data"]


def snapshot() -> dict[str, str]:
    """SHA-256 of every watched file (the fuzz corpus, which the run may extend, left out)."""
    out = {}
    for top in WATCHED:
        for path in sorted((ROOT / top).rglob("*")):
            rel = path.relative_to(ROOT).as_posix()
            if path.is_file() and not rel.startswith("tests/data/fuzz/"):
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def temp_entries(tmp: Path) -> set[str]:
    """nesybench's temporary folders and files in the temp folder ``tmp``."""
    return {p.name for p in tmp.iterdir()
            if p.name.startswith(("nesybench-", ".nesybench")) or ".tmp-" in p.name}


def monitored(tmp: Path) -> dict:
    """Every command case of tests/data/fuzz/surface/ as a nesybench process under strace
    (tests/door_monitor.py): counts of cases, tracebacks, hangs, opens outside the case's
    folder (or of a canary) and files changed outside --out, and the failures."""
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "python")]
    from door_monitor import STRACE, check_case, command_cases, make_bases  # noqa: PLC0415
    from fuzzing import SURFACE_DIR  # noqa: PLC0415

    if STRACE is None:
        return {"skipped": "strace is not installed (make setup installs it): no process "
                           "was watched"}
    out = {"inputs": 0, "tracebacks": 0, "hangs": 0, "opens_outside": 0, "changed": 0,
           "failures": []}
    scratch = Path(tempfile.mkdtemp(prefix="fuzz-monitor-", dir=tmp))
    try:
        bases = make_bases(scratch / "bases")
        for i, path in enumerate(command_cases(SURFACE_DIR)):
            d = scratch / f"c{i}"
            d.mkdir()
            v = check_case(path, d, bases)
            out["inputs"] += 1
            out["tracebacks"] += v.traceback
            out["hangs"] += bool(v.watched and v.watched.hung)
            out["opens_outside"] += len(v.outside)
            out["changed"] += len(v.changed)
            if v.problems:
                out["failures"].append((path.stem, "; ".join(v.problems)[:300]))
            shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"monitor: {out['inputs']} surface cases run under strace, "
          f"{len(out['failures'])} failed", flush=True)
    for name, why in out["failures"]:
        print(f"  {name}: {why}", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=100,
                    help="examples per property = CI examples x SCALE (default 100)")
    ap.add_argument("-k", default=None, help="only properties matching this pytest -k expression")
    ap.add_argument("--no-save", action="store_true", help="do not write failures to the corpus")
    ap.add_argument("--no-monitor", action="store_true",
                    help="do not re-run the surface cases under strace")
    args = ap.parse_args(argv)
    if args.scale < 1:
        ap.error("--scale must be >= 1")
    env = dict(os.environ, NESYBENCH_FUZZ_SCALE=str(args.scale),
               PYTHONPATH=os.pathsep.join([str(ROOT / "python"), str(ROOT / "tests"),
                                           os.environ.get("PYTHONPATH", "")]))
    if not args.no_save:
        env["NESYBENCH_FUZZ_SAVE"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-q", str(ROOT / "tests" / "test_fuzz.py"),
           "-p", "no:cacheprovider", "--hypothesis-show-statistics",
           *(["-k", args.k] if args.k else [])]
    # a temp folder of its own (TMPDIR), so other processes' temporary files do not count
    private_tmp = Path(tempfile.mkdtemp(prefix="fuzz-tmpdir-"))
    env["TMPDIR"] = str(private_tmp)
    before, temps = snapshot(), temp_entries(private_tmp)
    stats_file = Path(tempfile.mkstemp(prefix="fuzz-stats-", suffix=".json")[1])
    env["NESYBENCH_FUZZ_STATS"] = str(stats_file)
    t0 = time.perf_counter()
    try:
        rc = subprocess.call(cmd, cwd=ROOT, env=env)
        stats = json.loads(stats_file.read_text() or "{}")
    finally:
        stats_file.unlink(missing_ok=True)
    # every grounder against stock ProbLog: 100 generated programs per unit of scale
    grounders_rc = 0
    if not args.k:
        grounders_rc = subprocess.call(
            [sys.executable, str(ROOT / "benchmarks" / "grounder_reference.py"),
             "--programs", str(100 * args.scale)], cwd=ROOT, env=env)
    monitor = {}
    if not args.k and not args.no_monitor:
        monitor = monitored(private_tmp)
    seconds = time.perf_counter() - t0
    after, temps_after = snapshot(), temp_entries(private_tmp)
    shutil.rmtree(private_tmp, ignore_errors=True)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    left = sorted(temps_after - temps)
    problems = []
    if rc < 0:
        problems.append(f"killed by signal {signal.Signals(-rc).name}")
    elif rc:
        problems.append(f"pytest exit {rc}")
    if grounders_rc:
        problems.append("a grounder disagrees with stock ProbLog (see the seeds above)")
    if changed:
        problems.append(f"files changed: {', '.join(changed[:5])}")
    if left:
        problems.append(f"left in the temp folder: {', '.join(left[:5])}")
    for key, what in (("tracebacks", "tracebacks"), ("hangs", "hangs"),
                      ("outside_reads", "files read outside the input")):
        if stats.get(key):
            problems.append(f"{stats[key]} {what}")
    for name, why in monitor.get("failures", []):
        problems.append(f"monitored {name}: {why}")
    if monitor.get("skipped"):
        problems.append(monitor["skipped"])
    for key in ("inputs", "tracebacks", "hangs"):
        stats[key] = stats.get(key, 0) + monitor.get(key, 0)
    opens_outside = stats.get("outside_reads", 0) + monitor.get("opens_outside", 0)
    changed_outside = len(changed) + monitor.get("changed", 0)
    status = (f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc} (no signal)")
    print(f"fuzz: scale {args.scale}, {stats.get('inputs', 0):,} hostile inputs, {seconds:.0f} s; "
          f"{status}, {stats.get('tracebacks', 0)} tracebacks, {stats.get('hangs', 0)} hangs "
          f"(over 30 s), {opens_outside} files read outside the input folder "
          f"({monitor.get('inputs', 0)} of the inputs run as processes watched by strace), "
          f"{changed_outside} files changed outside --out, {len(left)} temporary folders "
          f"left, peak RSS {stats.get('peak_rss_kib', 0) / 1024:.0f} MiB; "
          + ("no failures" if not problems else "FAILURES: " + "; ".join(problems)
             + " (see above; corpus in tests/data/fuzz/)"))
    return rc or int(bool(problems))


if __name__ == "__main__":
    sys.exit(main())
