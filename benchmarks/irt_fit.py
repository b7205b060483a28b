"""Time nesybench's 1PL/2PL Bock–Aitkin EM against the ``mirt`` package on synthetic data.

Prints, for each model and size: wall time, CPU time, EM cycles, corr(b̂, b) against the
true difficulties, and the same for ``mirt`` (PyPI ``mirt==1.2.0``, Rust back end) when it is
installed — it is a benchmark reference, not a dependency of nesybench:

    .venv/bin/python -m pip install mirt==1.2.0
    PYTHONPATH=python .venv/bin/python benchmarks/irt_fit.py            # 2,000 × 5,000
    PYTHONPATH=python .venv/bin/python benchmarks/irt_fit.py --sizes 500x1000 --no-mirt

Target: ≥ 5× faster than mirt's 2PL at corr(b̂, b) ≥ 0.995 on 2,000 × 5,000.
On a shared, loaded machine compare CPU seconds (both use every core they are given).
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from nesybench.irt.fit import fit_irt, simulate


def _timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2000x5000",
                    help="comma-separated RESPONDENTSxITEMS (default 2000x5000)")
    ap.add_argument("--models", default="1pl,2pl")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quad", default="21,61",
                    help="our Gauss-Hermite sizes (mirt's Python default is 21)")
    ap.add_argument("--no-mirt", action="store_true", help="skip the mirt reference")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    try:
        import mirt  # noqa: PLC0415
    except ImportError:
        mirt = None
    if mirt is None and not args.no_mirt:
        print("NOTE: the `mirt` package is not installed, so only nesybench's own figures are "
              "printed (install the reference with `.venv/bin/python -m pip install "
              "mirt==1.2.0`)")
    rows = []
    print(f"threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"cpus={os.cpu_count()}")
    print(f"{'size':>11} {'model':>5} {'impl':>9} {'wall s':>8} {'cpu s':>8} {'cycles':>6} "
          f"{'corr(b^,b)':>10} {'corr vs mirt':>12}")
    for size in args.sizes.split(","):
        J, I = (int(v) for v in size.lower().split("x"))
        for model in args.models.split(","):
            U, theta, a, b = simulate(J, I, model, seed=args.seed)
            row = {"respondents": J, "items": I, "model": model}
            for q in (int(v) for v in args.quad.split(",")):
                ours, wall, cpu = _timed(lambda: fit_irt(U, model, quad="hermite", n_quad=q))
                k = ours.kept
                row.update({f"ours{q}_wall_s": wall, f"ours{q}_cpu_s": cpu,
                            f"ours{q}_cycles": ours.iterations,
                            f"ours{q}_corr_b": float(np.corrcoef(ours.b[k], b[k])[0, 1])})
                print(f"{size:>11} {model:>5} {'ours Q=' + str(q):>9} {wall:8.2f} {cpu:8.2f} "
                      f"{ours.iterations:6d} {row[f'ours{q}_corr_b']:10.4f} {'':>12}")
            if mirt is not None and not args.no_mirt:
                res, mwall, mcpu = _timed(lambda: mirt.fit_mirt(
                    U, model.upper(), compute_standard_errors=False))
                mb = np.asarray(res.model.difficulty, dtype=float).ravel()
                ok = np.isfinite(mb) & k
                qs = [int(v) for v in args.quad.split(",")]
                speed = {q: mwall / row[f"ours{q}_wall_s"] for q in qs}
                speed_cpu = {q: mcpu / row[f"ours{q}_cpu_s"] for q in qs}
                row.update({"mirt_wall_s": mwall, "mirt_cpu_s": mcpu,
                            "mirt_cycles": int(res.n_iterations),
                            "mirt_corr_b": float(np.corrcoef(mb[ok], b[ok])[0, 1]),
                            "corr_ours_mirt": float(np.corrcoef(mb[ok], ours.b[ok])[0, 1]),
                            **{f"speedup_wall_Q{q}": v for q, v in speed.items()},
                            **{f"speedup_cpu_Q{q}": v for q, v in speed_cpu.items()}})
                print(f"{size:>11} {model:>5} {'mirt Q=21':>9} {mwall:8.2f} {mcpu:8.2f} "
                      f"{row['mirt_cycles']:6d} {row['mirt_corr_b']:10.4f} "
                      f"{row['corr_ours_mirt']:12.6f}   speed-up wall/CPU " +
                      ", ".join(f"{speed[q]:.1f}x/{speed_cpu[q]:.1f}x (ours Q={q})"
                                for q in qs))
            rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
