"""KINS with PSyKI's fixed modules: the modules evaluated once per training set against once
per mini-batch, on the same cell, in the same process.

PSyKI-style modules (``kins.modules=psyki``) have no parameters, so their truths are a fixed
function of each training row; the PyTorch trainer computes them once (``KINS.constants``)
and gathers them with each batch. The reference is the same trainer evaluating the modules
on every batch (``constants`` switched off), which is what it did before. Both train the
same cell (a data set, the four lowest flip levels, ``--reps`` members each, ``--epochs``
epochs) with the same seeds; rounds alternate between the two, and the script prints each
one's median seconds with the min–max over ``--rounds``, the ratio of the medians, and
whether the trained parameters are the same to the bit (they must be).

    .venv/bin/python benchmarks/ski_kins_psyki.py --dataset census --reps 30 --epochs 2
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import torch  # noqa: E402

from nesybench.io import derive_seed  # noqa: E402
from nesybench.ski import cells, data as ski_data, degrade  # noqa: E402
from nesybench.ski.injectors.kins import KINS  # noqa: E402


def train_once(ds, members, seeds, epochs: int, once: bool):
    """Seconds of ``fit`` and the trained parameters."""
    real = KINS.constants
    if not once:
        KINS.constants = lambda self, X: None            # the modules on every batch
    try:
        params = {"dataset": ds.name, "injector": "kins", "profile": "psyki",
                  "epochs": epochs, "engine": "torch"}
        pred = cells.make_predictor(params, ds)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            t0 = time.perf_counter()
            pred.fit(members, seeds)
            secs = time.perf_counter() - t0
    finally:
        KINS.constants = real
    return secs, pred.params


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="census", choices=["bcw", "splice", "census"])
    ap.add_argument("--reps", type=int, default=30, help="members per level (paper: 30)")
    ap.add_argument("--levels", type=int, default=4, help="flip levels in the cell")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of each")
    args = ap.parse_args(argv)
    if min(args.reps, args.levels, args.epochs, args.rounds) < 1:
        ap.error("--reps, --levels, --epochs and --rounds must be >= 1")
    torch.set_num_threads(1)
    ds = cells.dataset(args.dataset)
    levels = degrade.LEVELS["flip"][:args.levels]
    train, _test = ski_data.stratified_split(ds.y, 0)
    members, _psi = cells.build_members(ds, train, "flip", levels, args.reps, 0, "psyki")
    seeds = [derive_seed(0, "member", f"{lv:.4f}", r) for lv in levels for r in range(args.reps)]
    times = {True: [], False: []}
    trained = {}
    for _ in range(args.rounds):
        for once in (True, False):
            secs, params = train_once(ds, members, seeds, args.epochs, once)
            times[once].append(secs)
            trained[once] = params
    same = all(torch.equal(a, b) for a, b in zip(trained[True], trained[False]))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{args.dataset}: KINS (PSyKI modules), {args.levels} flip levels x {args.reps} "
          f"members, {args.epochs} epochs, torch trainer, 1 thread, {args.rounds} rounds "
          f"alternating (load average {os.getloadavg()[0]:.1f})")
    for once, label in ((True, "modules once per training set"),
                        (False, "modules on every batch (reference)")):
        print(f"  {label:38} median {med[once]:8.2f} s  (min-max {min(times[once]):.2f}"
              f"-{max(times[once]):.2f})")
    print(f"  ratio of medians: x{med[False] / med[True]:.2f} faster; trained parameters "
          f"{'identical' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
