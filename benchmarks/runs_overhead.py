"""Per-cell overhead of the sweep runner's executors (target: local < 5 ms/cell).

    .venv/bin/python benchmarks/runs_overhead.py [--trivial 1000] [--sleepy 16] [--workers 2]
                                                 [--executors inline,local,ray]

Two grids per executor, each into a fresh study (results committed to SQLite per cell):
* ``--trivial`` cells that do nothing: overhead = wall time / cells;
* ``--sleepy`` cells that sleep 1 s: overhead = (wall − cells × 1 s / workers) / cells.
Ray's start-up (``ray.init`` of a local instance) is timed separately and left out of its
per-cell figures.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from nesybench.runs import GridSpec, run_grid  # noqa: E402


def grid(name: str, n: int, seconds: float) -> GridSpec:
    return GridSpec(study=name, function="demo.sleep", params={"seconds": seconds},
                    axes={"i": list(range(n))})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trivial", type=int, default=1000)
    ap.add_argument("--sleepy", type=int, default=16)
    ap.add_argument("--sleep", type=float, default=1.0, help="seconds per sleepy cell")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--executors", default="inline,local,ray")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="nesybench-runs-bench-"))
    print(f"{'executor':8} {'grid':>18} {'wall s':>8} {'overhead ms/cell':>17}")
    try:
        for ex in args.executors.split(","):
            workers = 1 if ex == "inline" else args.workers
            if ex == "ray":
                try:
                    from nesybench.parallel import ray_init  # noqa: PLC0415

                    t0 = time.perf_counter()
                    ray_init(None, args.workers)
                    print(f"{'ray':8} {'start-up':>18} {time.perf_counter() - t0:8.2f}")
                except Exception as exc:  # noqa: BLE001
                    print(f"ray: skipped ({exc})")
                    continue
            for label, n, s in (("trivial", args.trivial, 0.0),
                                ("sleepy", args.sleepy, args.sleep)):
                if n <= 0:
                    continue
                t0 = time.perf_counter()
                res = run_grid(grid(f"{ex}-{label}", n, s), tmp / f"{ex}-{label}",
                               executor=ex, workers=workers, progress=False)
                wall = time.perf_counter() - t0
                assert res.summary.done == n, res.summary
                ideal = n * s / workers
                print(f"{ex:8} {f'{n} x {s:g} s':>18} {wall:8.2f} "
                      f"{1000 * (wall - ideal) / n:17.2f}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
