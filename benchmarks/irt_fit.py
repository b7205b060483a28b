"""nesybench's 2PL Bock–Aitkin EM against the ``mirt`` package on simulated data, like for like.

For each size (respondents × items) it fits the same simulated 2PL matrix with:

* ``ours``        nesybench's default (a rectangular grid spaced one posterior SD of θ);
* ``ours Q=21``   nesybench on 21 Gauss–Hermite nodes — the quadrature of mirt's default;
* ``mirt``        ``mirt.fit_mirt`` at its defaults (21 nodes, tol 1e-4, its stopping rule);
* ``mirt Q=61``   mirt on 61 nodes (R mirt's default grid size), ``--mirt-q`` to change.

and prints per fit: wall seconds (median and min–max over ``--repeats`` rounds, the fits of a
round interleaved), EM cycles, the marginal log-likelihood of the fitted items evaluated on
one common fine grid (801 nodes, so fits on different grids compare), and the difficulty
recovery against the truth expressed on the fit's scale (θ standardised by the sample's mean
and SD): correlation, slope of b̂ on b, RMSE. Ratios are printed twice: ``ours`` vs ``mirt``
(default vs default: not the same accuracy, the RMSE columns say how far apart) and
``ours Q=21`` vs ``mirt`` (the same quadrature and model). Both run on one thread
(``OMP_NUM_THREADS``, ``RAYON_NUM_THREADS`` and BLAS set to 1 before numpy loads).

Only 2PL is compared: mirt's 1PL fixes the ability SD at 1 while nesybench estimates it (the
Rasch parametrisation), so those two models do not have the same constraints.

``mirt`` (PyPI ``mirt==1.2.0``, Rust back end) is a benchmark reference, not a dependency:

    .venv/bin/python -m pip install mirt==1.2.0
    .venv/bin/python benchmarks/irt_fit.py --sizes 200x1000,500x3000 --repeats 3
    .venv/bin/python benchmarks/irt_fit.py --sizes 2000x5000 --repeats 1
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from nesybench.irt.fit import fit_irt, rectangular, simulate  # noqa: E402


def marginal_loglik(U: np.ndarray, a: np.ndarray, b: np.ndarray, n: int = 801) -> float:
    """log L of 2PL items (a, b) on a 0/1 matrix, θ ~ N(0, 1) on ``n`` evenly spaced nodes;
    items with a non-finite parameter are left out (the same for every fit of a row)."""
    x, w = rectangular(n)
    Z = x[:, None] * a[None, :] - (a * b)[None, :]
    lq = -np.logaddexp(0.0, Z)
    L = np.outer(U @ a, x) - (U @ (a * b))[:, None] + lq.sum(axis=1)[None, :] + np.log(w)
    m = L.max(axis=1, keepdims=True)
    return float((m[:, 0] + np.log(np.exp(L - m).sum(axis=1))).sum())


def recovery(b_hat: np.ndarray, b_true: np.ndarray, ok: np.ndarray) -> dict:
    return {"corr": float(np.corrcoef(b_hat[ok], b_true[ok])[0, 1]),
            "slope": float(np.polyfit(b_true[ok], b_hat[ok], 1)[0]),
            "rmse": float(np.sqrt(np.mean((b_hat[ok] - b_true[ok]) ** 2)))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="200x1000,500x3000",
                    help="comma-separated RESPONDENTSxITEMS")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds per size")
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--mirt-q", type=int, default=61, help="mirt's second grid size")
    ap.add_argument("--no-mirt", action="store_true", help="skip the mirt reference")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    try:
        import mirt  # noqa: PLC0415
    except ImportError:
        mirt = None
        if not args.no_mirt:
            print("NOTE: `mirt` is not installed: only nesybench's fits are timed "
                  "(`.venv/bin/python -m pip install mirt==1.2.0`)")
    use_mirt = mirt is not None and not args.no_mirt
    fits = {"ours": lambda U: _ours(fit_irt(U, "2pl"))}
    fits["ours Q=21"] = lambda U: _ours(fit_irt(U, "2pl", quad="hermite", n_quad=21))
    if use_mirt:
        fits["mirt"] = lambda U: _mirt(mirt.fit_mirt(U, "2PL", compute_standard_errors=False))
        fits[f"mirt Q={args.mirt_q}"] = lambda U: _mirt(mirt.fit_mirt(
            U, "2PL", compute_standard_errors=False, n_quadpts=args.mirt_q))
    print(f"one thread each; load average {os.getloadavg()[0]:.1f}; medians of "
          f"{args.repeats} interleaved rounds (min-max)")
    head = (f"{'size':>10} {'fit':>10} {'wall s':>22} {'cycles':>6} {'logL (801 nodes)':>17} "
            f"{'corr':>7} {'slope':>6} {'rmse':>6}")
    print(head)
    rows = []
    for size in args.sizes.split(","):
        J, I = (int(v) for v in size.lower().split("x"))
        U, theta, _a, b = simulate(J, I, "2pl", seed=args.seed)
        b_std = (b - theta.mean()) / theta.std()
        times: dict[str, list[float]] = {k: [] for k in fits}
        last: dict[str, dict] = {}
        for _round in range(args.repeats):
            for name, fn in fits.items():            # interleaved: one of each per round
                t0 = time.perf_counter()
                last[name] = fn(U)
                times[name].append(time.perf_counter() - t0)
        for name in fits:
            r = last[name]
            ok = np.isfinite(r["b"]) & np.isfinite(r["a"]) & (np.abs(r["b"]) <= 6)
            t = np.array(times[name])
            row = {"respondents": J, "items": I, "fit": name, "wall_median_s": float(np.median(t)),
                   "wall_min_s": float(t.min()), "wall_max_s": float(t.max()),
                   "cycles": r["cycles"], "n_quad": r["n_quad"],
                   "loglik_common_grid": marginal_loglik(U.astype(float), np.nan_to_num(r["a"]),
                                                         np.nan_to_num(r["b"])),
                   **recovery(r["b"], b_std, ok)}
            rows.append(row)
            print(f"{size:>10} {name:>10} {row['wall_median_s']:8.2f} "
                  f"({row['wall_min_s']:5.2f}-{row['wall_max_s']:5.2f}) {row['cycles']:6d} "
                  f"{row['loglik_common_grid']:17.1f} {row['corr']:7.4f} {row['slope']:6.3f} "
                  f"{row['rmse']:6.3f}", flush=True)
        if use_mirt:
            med = {r["fit"]: r["wall_median_s"] for r in rows if r["items"] == I
                   and r["respondents"] == J}
            print(f"{size:>10} ratios: mirt / ours = {med['mirt'] / med['ours']:.1f}x "
                  f"(defaults; RMSE differs), mirt / ours Q=21 = "
                  f"{med['mirt'] / med['ours Q=21']:.1f}x (same quadrature)")
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


def _ours(f) -> dict:
    return {"a": np.where(np.isfinite(f.b_raw), f.a, np.nan), "b": f.b_raw,
            "cycles": f.iterations, "n_quad": f.n_quad}


def _mirt(res) -> dict:
    return {"a": np.asarray(res.model.discrimination, dtype=float).ravel(),
            "b": np.asarray(res.model.difficulty, dtype=float).ravel(),
            "cycles": int(res.n_iterations), "n_quad": 0}


if __name__ == "__main__":
    raise SystemExit(main())
