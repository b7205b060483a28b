"""Run the test suite again and again under a background CPU load, to find tests that fail
only when the machine is busy (timing, deadlines, signals, subprocesses).

    .venv/bin/python benchmarks/stress_suite.py --runs 20 --load 2            # the whole suite
    .venv/bin/python benchmarks/stress_suite.py --runs 20 --timing           # tests marked timing
    .venv/bin/python benchmarks/stress_suite.py --runs 20 -- tests/test_progress_bars.py

The load is ``--load`` processes that spin on the CPU (what ``stress --cpu N`` does), started
before the first run and stopped after the last. Runs go one after the other and stop at the
first failure (``--keep-going`` runs them all). Each run's outcome, wall time and pytest's
summary line are printed (a failed run's whole output goes to ``--log-dir``), then
``stress: K/N runs passed under L busy loops``; the exit code is 0 only when every run
passed.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _spin(stop) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF


def _summary(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if " passed" in ln or " failed" in ln or " error" in ln:
            return ln.strip("= ")
    return lines[-1] if lines else "(no output)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="runs of the suite (default 20)")
    ap.add_argument("--load", type=int, default=2,
                    help="busy-loop processes beside the suite (default 2; 0: none)")
    ap.add_argument("--timing", action="store_true",
                    help="only the tests marked `timing` (signals, processes, time limits, "
                         "clocks): the ones a busy machine can break, in minutes per run")
    ap.add_argument("--keep-going", action="store_true", help="do not stop at a failed run")
    ap.add_argument("--log-dir", type=Path, default=Path("out/stress"),
                    help="where a failed run's whole pytest output is written "
                         "(default out/stress, under the repository)")
    ap.add_argument("pytest_args", nargs="*", help="arguments for pytest (after --)")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.load < 0:
        ap.error("--runs must be >= 1 and --load >= 0")
    pytest_args = (["-m", "timing"] if args.timing else []) + args.pytest_args
    log_dir = args.log_dir if args.log_dir.is_absolute() else ROOT / args.log_dir
    stop = mp.Event()
    loops = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.load)]
    for p in loops:
        p.start()
    passed = 0
    try:
        for run in range(1, args.runs + 1):
            t0 = time.perf_counter()
            res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                  *pytest_args], cwd=ROOT, capture_output=True, text=True,
                                 env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
            secs = time.perf_counter() - t0
            ok = res.returncode == 0
            passed += ok
            print(f"run {run}/{args.runs}: {'pass' if ok else 'FAIL'} in {secs:.0f} s "
                  f"({_summary(res.stdout)})", flush=True)
            if not ok:
                failed = [ln for ln in res.stdout.splitlines() if ln.startswith("FAILED")]
                log_dir.mkdir(parents=True, exist_ok=True)
                log = log_dir / f"run{run:02d}.log"
                log.write_text(res.stdout + res.stderr, encoding="utf-8")
                print("\n".join(failed[:20]) or res.stdout[-2000:], flush=True)
                print(f"(the whole output: {log})", flush=True)
                if not args.keep_going:
                    break
    finally:
        stop.set()
        for p in loops:
            p.join(timeout=5)
    print(f"stress: {passed}/{args.runs} runs passed under {args.load} busy loops")
    return 0 if passed == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
