"""The long fuzz run: the properties of tests/test_fuzz.py with many random inputs.

    .venv/bin/python benchmarks/fuzz.py                 # scale 100: about 1,500-2,000 inputs per format
    .venv/bin/python benchmarks/fuzz.py --scale 10 -k rs
    make fuzz

Each property: every random or mutated input (KANDY curricula, RS task files, ASP knowledge,
KANDY rules, RuDaS learned programs, prediction CSVs, CLI option values) gives exit 0 / a
documented status, or exit 2 with exactly one stderr line, within 30 s, leaving no output.
The last failing (shrunk) input of each property is saved as
tests/data/fuzz/<kind>/last-failure.*: rename it (e.g. after its bug) and commit it; the test
suite re-runs every file there (test_corpus). Prints the number of inputs and the time taken.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=100,
                    help="examples per property = CI examples x SCALE (default 100)")
    ap.add_argument("-k", default=None, help="only properties matching this pytest -k expression")
    ap.add_argument("--no-save", action="store_true", help="do not write failures to the corpus")
    args = ap.parse_args(argv)
    if args.scale < 1:
        ap.error("--scale must be >= 1")
    env = dict(os.environ, NESYBENCH_FUZZ_SCALE=str(args.scale),
               PYTHONPATH=os.pathsep.join([str(ROOT / "python"), str(ROOT / "tests"),
                                           os.environ.get("PYTHONPATH", "")]))
    if not args.no_save:
        env["NESYBENCH_FUZZ_SAVE"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-q", str(ROOT / "tests" / "test_fuzz.py"),
           "-p", "no:cacheprovider", "--hypothesis-show-statistics", "-k",
           args.k or "not corpus"]
    t0 = time.perf_counter()
    rc = subprocess.call(cmd, cwd=ROOT, env=env)
    print(f"fuzz: scale {args.scale}, {time.perf_counter() - t0:.0f} s, "
          f"{'no failures' if rc == 0 else 'FAILURES (see above; corpus in tests/data/fuzz/)'}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
