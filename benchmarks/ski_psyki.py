"""PSyKI's own KBANN on splice under drop and flip, next to ours and the paper's R.

The degraded training sets (and Ψ) are nesybench's (``cells.build_members``, the same draws
as ``ski run``); PSyKI's KBANN (Towell fuzzifier, ω = 4, the network built from the theory
alone) and a Keras MLP with the uneducated predictor's hidden widths are trained on each
member by ``benchmarks/ski_psyki_worker.py`` in a separate environment that has ``psyki``
(PSyKI needs Python 3.9 and TensorFlow 2.14; it is never imported by nesybench):

    python3.9 -m venv psyki-env && psyki-env/bin/pip install psyki
    .venv/bin/python benchmarks/ski_psyki.py --reference-python psyki-env/bin/python \\
        --reps 30 --epochs 100            # the paper's configuration (hours on a CPU)

R = ρ(PSyKI KBANN) / ρ(Keras MLP) per degradation, printed beside nesybench's and the
paper's. ``--reps``, ``--epochs`` and ``--level-stride`` reduce the grid; a stride that
leaves a degradation nothing but level 0 (R needs a perturbed level) is refused.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import numpy as np  # noqa: E402

from nesybench.io import derive_seed  # noqa: E402
from nesybench.ski import cells, degrade, injectors, scores  # noqa: E402
from nesybench.ski import data as ski_data  # noqa: E402

#: R of KBANN on splice: the paper's Table 1, and nesybench's default and `psyki` profiles
#: (docs/reproduction/ski.md)
PAPER = {"drop": 0.8425, "flip": 1.6749}
OURS = {"drop": (1.0149, 1.0313), "flip": (0.9942, 0.9981)}
POSITIONS = [p for p in range(-30, 31) if p != 0]


def psyki_name(feature: str) -> str:
    pos, base = int(feature[:-1]), feature[-1]
    return f"X_{-pos}{base}" if pos < 0 else f"X{pos}{base}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference-python", required=True, help="Python of the psyki environment")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--level-stride", type=int, default=1)
    ap.add_argument("--degradations", default="drop,flip")
    args = ap.parse_args(argv)
    degradations = args.degradations.split(",")
    for deg in degradations:
        if deg not in degrade.LEVELS:
            ap.error(f"unknown degradation {deg!r} (known: {', '.join(degrade.LEVELS)})")
    if args.level_stride < 1 or args.reps < 1 or args.epochs < 1:
        ap.error("--level-stride, --reps and --epochs must be >= 1")
    for deg in degradations:
        n = len(degrade.LEVELS[deg])
        if len(degrade.LEVELS[deg][::args.level_stride]) < 2:
            ap.error(f"--level-stride {args.level_stride} keeps only level 0 of {deg}'s {n} "
                     f"levels, and R needs a perturbed level: use a stride of at most {n - 1}")

    ds = cells.dataset("splice")
    order = [f"{p}{b}" for p in POSITIONS for b in "acgt"]
    idx = [ds.features.index(f) for f in order]
    X = ds.X[:, idx]
    train, test = ski_data.stratified_split(ds.y, 0)
    worker = Path(__file__).with_name("ski_psyki_worker.py")
    print(f"splice: {len(train)} training rows, {len(test)} test rows; reps {args.reps}, "
          f"epochs {args.epochs}, level stride {args.level_stride}")
    print("| degradation | levels | R, PSyKI's KBANN | R, nesybench (default / psyki) | paper |")
    print("|---|---|---|---|---|")
    for deg in degradations:
        levels = degrade.LEVELS[deg][::args.level_stride]
        members, psi = cells.build_members(ds, train, deg, levels, args.reps)
        rows, labels, starts = [], [], [0]
        for e in range(len(levels) * args.reps):
            r = members.rows[e].numpy()
            yy = (members.y[e] if members.y.shape[0] > 1 else members.y[0]).numpy()
            rows.append(train[r])
            labels.append(yy[r])
            starts.append(starts[-1] + len(r))
        seeds = [derive_seed(0, "member", f"{lv:.4f}", k) for lv in levels
                 for k in range(args.reps)]
        with tempfile.TemporaryDirectory() as job:
            np.savez(Path(job) / "job.npz", X=X, y=ds.y, test=test,
                     starts=np.asarray(starts), rows=np.concatenate(rows),
                     labels=np.concatenate(labels))
            (Path(job) / "job.json").write_text(json.dumps({
                "classes": list(ds.classes), "columns": [psyki_name(f) for f in order],
                "seeds": [int(s % 2**31) for s in seeds], "omega": 4.0,
                "hidden": injectors.HIDDEN["splice"], "lr": 1e-3, "batch_size": 32,
                "epochs": args.epochs}))
            subprocess.run([args.reference_python, str(worker), job], check=True)
            acc = np.load(Path(job) / "acc.npz")
            a_k = acc["kbann"].reshape(len(levels), args.reps)
            a_u = acc["uneducated"].reshape(len(levels), args.reps)
        psi_m = psi.mean(axis=1)
        r = scores.gain(scores.rho(levels, psi_m, a_k.mean(axis=1)),
                        scores.rho(levels, psi_m, a_u.mean(axis=1)))
        print(f"clean accuracy {deg}: PSyKI KBANN {a_k[0].mean():.4f}, "
              f"Keras MLP {a_u[0].mean():.4f}", file=sys.stderr)
        print(f"| {deg} | {', '.join(f'{v:g}' for v in levels)} | {r:.4f} | "
              f"{OURS[deg][0]:.4f} / {OURS[deg][1]:.4f} | {PAPER[deg]:.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
