"""Time of the SKI-robustness paper grid, and batched ensembles vs one model at a time.

The full grid is 3 data sets × (20 drop + 11 noise + 12 flip levels) × 4 predictors ×
30 repetitions × 100 epochs. Running it needs hours of CPU, so by default this script
measures every (data set, predictor) pair for ``--measure-epochs`` epochs on a cell the way
``nesybench ski run`` forms them (``--levels-per-cell`` levels × ``--reps`` members as one
ensemble, full training split), and extrapolates: time per epoch of a level is proportional
to the number of optimiser steps, i.e. to the fraction of the training set the level keeps
(1 − p for drop, 1 otherwise); the grid's cells are shared by ``--workers`` processes.
``--full`` runs the grid for real (through ``nesybench ski run``'s cell function, one
process, a cell per level) and prints its measured time instead.

``--baseline PATH`` (a checkout of an older nesybench, e.g. ``git worktree add /tmp/old
b57d237``) times the same cells with that tree's code, in a subprocess, and prints the ratio
per (data set, predictor) and for the grid.

``--engine`` picks the trainer timed (``native``, the default: the C kernel; ``torch``: the
PyTorch trainer); ``--vs-torch`` also times the PyTorch trainer on the same cells and prints
the ratio per (data set, predictor) and for the grid.

``--target CPU`` times a kernel built for another target CPU on this machine (``-march``,
e.g. ``x86-64-v3``: the AVX2 + FMA build that a CPU without AVX-512 runs; ``default``: the
compiler's default target), as ``$NESYBENCH_KERNEL_TARGET`` does for ``nesybench``.

``--compare`` trains the same cells batched (one ensemble of REPS members) and one model at
a time (REPS separate trainings, same code, same seeds, same numbers) and prints the ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import torch  # noqa: E402

from nesybench import datafiles  # noqa: E402
from nesybench.ski import cells, degrade, native  # noqa: E402

PREDICTORS = ["uneducated", "kins", "kill", "kbann"]


def level_work(deg: str, stride: int = 1) -> float:
    """Σ over the levels of the fraction of the training set each keeps."""
    return sum((1.0 - lv) if deg == "drop" else 1.0 for lv in degrade.LEVELS[deg][::stride])


def _timed(params: dict, baseline: str | None) -> float:
    """Training seconds of one cell, with this tree's code or (``baseline``) another's."""
    if baseline is None:
        return cells.run(params, 0)["seconds"]
    code = ("import json, sys, torch; torch.set_num_threads(1); "
            f"sys.path.insert(0, {str(Path(baseline).resolve() / 'python')!r}); "
            "from nesybench.ski import cells; "
            "print(json.dumps(cells.run(json.loads(sys.argv[1]), 0)['seconds']))")
    res = subprocess.run([sys.executable, "-c", code, json.dumps(params)], check=True,
                         capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": "", "OMP_NUM_THREADS": "1",
                              "NESYBENCH_DATA": str(datafiles.cache_dir())})
    return float(res.stdout.strip().splitlines()[-1])


def epoch_cost(params: dict, K: int, extra: int, baseline: str | None = None):
    """Seconds per epoch of one level, and set-up seconds per level, from two runs (1 and
    1 + ``extra`` epochs): the difference removes the per-cell set-up (initialisation,
    evaluation)."""
    t1 = _timed({**params, "epochs": 1}, baseline) / K
    t2 = _timed({**params, "epochs": 1 + extra}, baseline) / K
    per_epoch = max(t2 - t1, 1e-9) / extra
    return per_epoch, max(t1 - per_epoch, 0.0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="bcw,splice,census")
    ap.add_argument("--injectors", default=",".join(PREDICTORS),
                    help="predictors timed (comma-separated; default all four)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--levels-per-cell", type=int, default=4,
                    help="levels trained as one ensemble (as `ski run --levels-per-cell`)")
    ap.add_argument("--epochs", type=int, default=100, help="epochs of the grid (paper: 100)")
    ap.add_argument("--measure-epochs", type=int, default=2,
                    help="extra epochs timed on top of a 1-epoch run (at least ~300 steps)")
    ap.add_argument("--workers", type=int, default=2, help="processes sharing the grid")
    ap.add_argument("--compare", action="store_true",
                    help="batched vs one-at-a-time on bcw and splice cells")
    ap.add_argument("--compare-epochs", type=int, default=2)
    ap.add_argument("--full", action="store_true", help="run the whole grid (hours)")
    ap.add_argument("--baseline", metavar="PATH",
                    help="an older nesybench checkout: time the same cells with its code")
    ap.add_argument("--engine", choices=["native", "torch"], default="native",
                    help="the trainer timed (default: the C kernel)")
    ap.add_argument("--vs-torch", action="store_true",
                    help="also time the PyTorch trainer on the same cells and print the ratio")
    ap.add_argument("--target", metavar="CPU",
                    help="time the kernel built with -march=CPU (e.g. x86-64-v3: AVX2 + FMA)")
    ap.add_argument("--profile", choices=["nesybench", "paper", "psyki"], default="nesybench",
                    help="reading of the paper timed (`ski run --profile`; paper: early "
                         "stopping, so fewer epochs than the limit)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.target:
        os.environ[native.TARGET_ENV] = args.target
    torch.set_num_threads(1)
    datasets = args.datasets.split(",")
    predictors = args.injectors.split(",")
    if not set(predictors) <= set(PREDICTORS):
        ap.error(f"--injectors: one of {', '.join(PREDICTORS)} (comma-separated)")
    load = os.getloadavg()[0]
    out = {"reps": args.reps, "epochs": args.epochs, "workers": args.workers,
           "profile": args.profile,
           "kernel_flags": list(native.default_flags()),
           "levels_per_cell": args.levels_per_cell,
           "load_average_at_start": load, "cells": [], "compare": []}
    total = total_b = total_t = 0.0
    for ds in datasets:
        cells.dataset(ds)
        for pred in predictors:
            K = max(args.levels_per_cell, 1)
            params = {"dataset": ds, "degradation": "flip", "injector": pred,
                      "reps": args.reps, "epochs": args.measure_epochs,
                      "levels": degrade.LEVELS["flip"][:K], "engine": args.engine,
                      "profile": args.profile}
            if args.full:
                secs = 0.0
                for deg in degrade.DEGRADATIONS:
                    for lv in degrade.LEVELS[deg]:
                        secs += cells.run({**params, "degradation": deg, "level": lv,
                                           "epochs": args.epochs}, 0)["seconds"]
                grid = secs
            else:
                # time per epoch from two runs (1 and 1 + k epochs): the difference
                # removes the per-cell set-up (initialisation, evaluation)
                # at least ~300 timed optimiser steps (BCW's epoch is 15 steps)
                d = cells.dataset(ds)
                steps = -(-len(d.y) * 2 // 3 // 32)
                extra = max(args.measure_epochs, -(-300 // steps))
                per_epoch, setup = epoch_cost(params, K, extra)
                work = sum(level_work(d) for d in degrade.DEGRADATIONS)
                n_cells = sum(len(degrade.LEVELS[d]) for d in degrade.DEGRADATIONS)
                grid = per_epoch * args.epochs * work + setup * n_cells
            total += grid
            row = {"dataset": ds, "predictor": pred, "grid_seconds": grid,
                   "measured": bool(args.full)}
            if not args.full:
                row["seconds_per_epoch"] = per_epoch
                row["setup_seconds_per_cell"] = setup
            out["cells"].append(row)
            print(f"{ds:7} {pred:10} " + (f"{per_epoch:8.3f} s/epoch per level ({args.reps} "
                                          f"members, {K} levels per cell; set-up "
                                          f"{setup:.2f} s/level), "
                                         if not args.full else "") +
                  f"grid share {grid / 60:8.1f} min (1 process)", flush=True)
            if args.vs_torch and not args.full:
                pe_t, su_t = epoch_cost({**params, "engine": "torch"}, K, extra)
                grid_t = pe_t * args.epochs * work + su_t * n_cells
                total_t += grid_t
                row.update(torch_seconds_per_epoch=pe_t, torch_grid_seconds=grid_t)
                print(f"{'':18} torch    {pe_t:8.3f} s/epoch per level: {args.engine} is "
                      f"x{pe_t / per_epoch:.1f} faster per epoch", flush=True)
            if args.baseline and not args.full:
                pe_b, su_b = epoch_cost(params, K, extra, args.baseline)
                grid_b = pe_b * args.epochs * work + su_b * n_cells
                total_b += grid_b
                row.update(baseline_seconds_per_epoch=pe_b, baseline_grid_seconds=grid_b)
                print(f"{'':18} baseline {pe_b:8.3f} s/epoch per level: this tree is "
                      f"x{pe_b / per_epoch:.1f} faster per epoch", flush=True)
    out["grid_seconds_one_process"] = total
    if total_b:
        out["baseline_grid_seconds_one_process"] = total_b
        print(f"baseline {args.baseline}: {total_b / 3600:.2f} CPU-hours for the same grid "
              f"(this tree x{total_b / total:.1f} faster)")
    if total_t:
        out["torch_grid_seconds_one_process"] = total_t
        print(f"PyTorch trainer: {total_t / 3600:.2f} CPU-hours for the same grid "
              f"({args.engine} x{total_t / total:.1f} faster)")
    out["grid_seconds_wall"] = total / max(args.workers, 1)
    kind = "measured" if args.full else "extrapolated from the measured epochs"
    target = f", kernel built for {args.target}" if args.target else ""
    what = "full paper grid" if predictors == PREDICTORS else f"paper grid of {args.injectors}"
    print(f"{what} ({kind}{target}): {total / 3600:.2f} CPU-hours, "
          f"{total / max(args.workers, 1) / 3600:.2f} h wall on {args.workers} workers "
          f"(load average at start {load:.1f})")
    if args.compare:
        for ds in ("bcw", "splice"):
            for pred in PREDICTORS:
                params = {"dataset": ds, "degradation": "drop", "injector": pred,
                          "reps": args.reps, "epochs": args.compare_epochs, "level": 0.3}
                a = cells.run(params, 0)
                b = cells.run(params, 0, one_at_a_time=True)
                same = float(abs(a["acc"] - b["acc"]).max())
                ratio = b["seconds"] / a["seconds"]
                out["compare"].append({"dataset": ds, "predictor": pred,
                                       "batched_s": a["seconds"], "one_at_a_time_s": b["seconds"],
                                       "speedup": ratio, "max_acc_difference": same})
                print(f"compare {ds:7} {pred:10} batched {a['seconds']:7.2f} s, one at a time "
                      f"{b['seconds']:7.2f} s: x{ratio:5.1f} (max |Δacc| {same:.4f})", flush=True)
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
