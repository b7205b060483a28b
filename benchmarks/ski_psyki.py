"""PSyKI's own KBANN on splice under drop and flip, next to nesybench's and the paper's R.

The degraded training sets (and Ψ) are nesybench's (``cells.build_members``, the same draws
as ``ski run``). On every member, ``benchmarks/ski_psyki_worker.py`` trains PSyKI's KBANN
(Towell fuzzifier, ω = ``--omega``, the network built from the theory alone, its rules
trainable) and a Keras MLP with the uneducated predictor's hidden widths, in a separate
environment that has ``psyki`` (Python 3.9 and TensorFlow 2.14; it is never imported by
nesybench; ``scripts/psyki_env.sh`` builds it and prints the path to give here). In the same
run, nesybench's own ``ski`` code path (``cells.run``) trains its uneducated MLP and its
KBANN, under the default profile, under ``psyki`` and as PSyKI's network (``psyki`` with
``kbann.construction=psyki``), on the same members:

    scripts/psyki_env.sh                      # prints PSYKI_PYTHON
    .venv/bin/python benchmarks/ski_psyki.py --reference-python PSYKI_PYTHON \\
        --reps 30 --epochs 100            # the paper's configuration (hours on a CPU)

First it checks the untrained PSyKI network against the crisp rules (``kb/ski/splice.pl``
evaluated by ``Knowledge.truths``): the number of rows where its argmax is the rules' class,
under Towell's reading of the m-of-n rule and under the threshold PSyKI's m-of-n bias
(m − ω/2) sets. Then, per degradation, R = ρ(KBANN) / ρ(MLP) of both implementations,
printed beside the paper's. ``--reps``, ``--epochs`` and ``--level-stride`` reduce the
grid; a stride that leaves a degradation nothing but level 0 (R needs a perturbed level) is
refused.

SWI-Prolog (the rules are compiled by nesybench's Prolog code) is found before anything
starts it: the one whose version janus-swi is built against, among this checkout's own build
(``.deps/swipl``), the one the running virtual environment was set up with, the user cache's
and every ``swipl`` on PATH (:func:`use_matching_swipl`), so a fresh clone run with any
nesybench environment works whatever ``swipl`` comes first on PATH.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import numpy as np  # noqa: E402

from nesybench.io import derive_seed  # noqa: E402
from nesybench.ski import cells, degrade, injectors, rules, scores  # noqa: E402
from nesybench.ski import data as ski_data  # noqa: E402

#: R of KBANN on splice in the paper's Table 1
PAPER = {"drop": 0.8425, "flip": 1.6749}
POSITIONS = [p for p in range(-30, 31) if p != 0]
WORKER = Path(__file__).with_name("ski_psyki_worker.py")


def swipl_candidates() -> list[Path]:
    """Every ``swipl`` worth trying, in order: this checkout's build (``make setup``'s
    ``.deps/swipl``), the one recorded in the running virtual environment's set-up stamp,
    the user cache's (``nesybench setup-prolog``) and each ``swipl`` on PATH."""
    from nesybench.paths import cache_swipl  # noqa: PLC0415

    out = [ROOT / ".deps" / "swipl" / "bin" / "swipl"]
    stamp = Path(sys.prefix) / ".nesybench-stamp"
    if stamp.is_file():
        fields = stamp.read_text(encoding="utf-8").split()
        if len(fields) >= 2:
            out.append(Path(fields[1]))
    out.append(cache_swipl())
    for d in os.environ.get("PATH", "").split(os.pathsep):
        exe = shutil.which("swipl", path=d) if d else None
        if exe:
            out.append(Path(exe))
    seen, unique = set(), []
    for exe in out:
        if exe is not None and exe.is_file() and str(exe) not in seen:
            seen.add(str(exe))
            unique.append(exe)
    return unique


def use_matching_swipl() -> str | None:
    """Point janus (``SWI_HOME_DIR``, and PATH for child processes) at the first of
    :func:`swipl_candidates` whose version is the one janus-swi is built against; returns its
    path, or None when ``SWI_HOME_DIR`` is already set or no candidate matches (nesybench
    then chooses, and says what is wrong)."""
    if os.environ.get("SWI_HOME_DIR"):
        return None
    from nesybench.logic import prolog  # noqa: PLC0415  (janus is not started by importing)

    built = prolog.janus_library_version()
    for exe in swipl_candidates():
        home, version = prolog._runtime(exe)
        if home and built and version == built:
            os.environ["SWI_HOME_DIR"] = home
            os.environ["PATH"] = f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}"
            return str(exe)
    return None


def psyki_name(feature: str) -> str:
    pos, base = int(feature[:-1]), feature[-1]
    return f"X_{-pos}{base}" if pos < 0 else f"X{pos}{base}"


def splice_matrix(ds):
    """The splice features in the worker's column order, and the PSyKI column names."""
    order = [f"{p}{b}" for p in POSITIONS for b in "acgt"]
    idx = [ds.features.index(f) for f in order]
    return ds.X[:, idx], [psyki_name(f) for f in order]


def write_job(job: Path, arrays: dict, cfg: dict) -> None:
    np.savez(job / "job.npz", **arrays)
    (job / "job.json").write_text(json.dumps(cfg))


def untrained_outputs(reference_python: str, ds, omega: float, frozen_rules: bool = False,
                      encoding: str = "disjunction") -> np.ndarray:
    """Class outputs [rows, classes] of PSyKI's KBANN built from the theory (written with
    the worker's ``encoding`` of multi-base codes), untrained, on every row of the splice
    data set (in the data set's row order)."""
    X, columns = splice_matrix(ds)
    with tempfile.TemporaryDirectory() as job:
        write_job(Path(job), {"X": X, "y": ds.y},
                  {"classes": list(ds.classes), "columns": columns, "omega": float(omega),
                   "frozen_rules": frozen_rules, "encoding": encoding})
        subprocess.run([reference_python, str(WORKER), "--outputs", job], check=True)
        return np.load(Path(job) / "outputs.npy")


def psyki_mofn_threshold(m: float, omega: float) -> int:
    """The m-of-n rule PSyKI's bias m − ω/2 computes on 0/1 antecedents of weight ω: true
    when ω·k > m − ω/2, i.e. from k = floor(m/ω − 1/2) + 1 true antecedents (at least 0)."""
    return max(math.floor(m / omega - 0.5) + 1, 0)


def crisp_classes(kn: rules.Knowledge, X: np.ndarray, mofn=None) -> np.ndarray:
    """Class of every row under the crisp rules (the argmax of ``Knowledge.truths``, whose
    class rules are exclusive and exhaustive on splice); ``mofn(m)`` replaces each m-of-n
    threshold m."""
    import torch  # noqa: PLC0415

    if mofn is not None:
        concepts = copy.deepcopy(kn.concepts)

        def fix(t):
            if t.get("op") == "mofn":
                t["m"] = mofn(t["m"])
            for a in t.get("args", ()):
                fix(a)
        for clauses in concepts.values():
            for t in clauses:
                fix(t)
        kn = rules.Knowledge(kn.source, kn.features, kn.classes, concepts, kn.order)
    return kn.truths(torch.from_numpy(np.asarray(X, dtype=np.float32))).numpy().argmax(-1)


def untrained_check(reference_python: str, ds, omega: float) -> str:
    out = untrained_outputs(reference_python, ds, omega)
    kn = cells.knowledge(ds)
    pred = out.argmax(1)
    towell = crisp_classes(kn, ds.X)
    counts = ", ".join(f"{c} {int((pred == k).sum())}" for k, c in enumerate(ds.classes))
    rules_counts = ", ".join(f"{c} {int((towell == k).sum())}" for k, c in enumerate(ds.classes))
    own = ", ".join(f"{c} {int(((pred == k) & (towell == k)).sum())}/{int((towell == k).sum())}"
                    for k, c in enumerate(ds.classes))
    import torch  # noqa: PLC0415

    net = injectors.make("kbann", ds.X.shape[1], ds.n_classes, [], kn, construction="psyki",
                         omega=omega)
    built = net.outputs(net.init_params([0]), torch.from_numpy(ds.X).unsqueeze(0))[0].numpy()
    same = (f"  nesybench's construction psyki: outputs within {np.abs(built - out).max():.2g} "
            f"of PSyKI's, the same class on {int((built.argmax(1) == pred).sum())} of "
            f"{len(pred)} rows\n")
    old_pred = untrained_outputs(reference_python, ds, omega,
                                 encoding="negated-equalities").argmax(1)
    old = ", ".join(f"{c} {int((old_pred == k).sum())}" for k, c in enumerate(ds.classes))
    old += f"; accuracy {(old_pred == ds.y).mean():.4f}"
    by_k = ", ".join(f"{k}: {int((pred == crisp_classes(kn, ds.X, lambda m, k=k: k)).sum())}"
                     for k in range(7))
    return (f"untrained PSyKI KBANN (omega {omega:g}): predicts {counts} (the crisp rules: "
            f"{rules_counts}); its class is the rules' on {int((pred == towell).sum())} of "
            f"{len(pred)} rows (per class of the rules: {own}); accuracy "
            f"{(pred == ds.y).mean():.4f} (the rules: {(towell == ds.y).mean():.4f})\n"
            f"{same}"
            f"  rows where it is the rules' class with the m-of-n read as k of 10 "
            f"pyrimidines, k = {by_k}\n"
            f"  with the codes of several bases written as negated equalities "
            f"(\\+ (X_15c = 0, X_15t = 0)): predicts {old}")


def ours(deg: str, levels: list, reps: int, epochs: int) -> dict:
    """Test accuracies [levels, reps] of nesybench's uneducated MLP and KBANN (default and
    ``psyki`` profiles, and PSyKI's network built by nesybench: ``psyki`` with
    ``construction: psyki``), through ``cells.run`` (the code path of ``ski run``)."""
    base = {"dataset": "splice", "degradation": deg, "levels": list(levels), "reps": reps,
            "epochs": epochs}
    out = {}
    for key, injector, profile, options in (
            ("uneducated", "uneducated", None, None),
            ("kbann", "kbann", None, None),
            ("kbann_psyki", "kbann", "psyki", None),
            ("kbann_construction", "kbann", "psyki", {"kbann": {"construction": "psyki"}})):
        params = {**base, "injector": injector}
        if profile:
            params["profile"] = profile
        if options:
            params["options"] = options
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # its PyTorch trainer
            out[key] = cells.run(params, 0)["acc"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference-python", required=True, help="Python of the psyki environment")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--level-stride", type=int, default=1)
    ap.add_argument("--degradations", default="drop,flip")
    ap.add_argument("--omega", type=float, default=4.0, help="PSyKI KBANN's ω (its default 4)")
    ap.add_argument("--untrained-only", action="store_true",
                    help="print the untrained network check (PSyKI's network against the "
                         "crisp rules and against nesybench's construction psyki) and stop")
    ap.add_argument("--frozen-rules", action="store_true",
                    help="keep PSyKI's default of fixed (untrainable) rule weights: its "
                         "KBANN is then the untrained rule network at every level")
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

    use_matching_swipl()
    t_start = time.perf_counter()
    ds = cells.dataset("splice")
    X, columns = splice_matrix(ds)
    train, test = ski_data.stratified_split(ds.y, 0)
    print(f"splice: {len(train)} training rows, {len(test)} test rows; reps {args.reps}, "
          f"epochs {args.epochs}, level stride {args.level_stride}; PSyKI KBANN omega "
          f"{args.omega:g}, rules {'frozen' if args.frozen_rules else 'trainable'}")
    print(untrained_check(args.reference_python, ds, args.omega), flush=True)
    if args.untrained_only:
        return 0
    table, accs = [], []
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
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as job:
            write_job(Path(job), {"X": X, "y": ds.y, "test": test, "starts": np.asarray(starts),
                                  "rows": np.concatenate(rows),
                                  "labels": np.concatenate(labels)},
                      {"classes": list(ds.classes), "columns": columns,
                       "seeds": [int(s % 2**31) for s in seeds], "omega": args.omega,
                       "frozen_rules": args.frozen_rules,
                       "hidden": injectors.HIDDEN["splice"], "lr": 1e-3, "batch_size": 32,
                       "epochs": args.epochs})
            subprocess.run([args.reference_python, str(WORKER), job], check=True,
                           stdout=sys.stderr)
            acc = np.load(Path(job) / "acc.npz")
            shape = (len(levels), args.reps)
            a = {"psyki_kbann": acc["kbann"].reshape(shape),
                 "psyki_mlp": acc["uneducated"].reshape(shape)}
        t1 = time.perf_counter()
        a.update(ours(deg, levels, args.reps, args.epochs))
        t2 = time.perf_counter()
        psi_m = psi.mean(axis=1)
        rho = {k: scores.rho(levels, psi_m, v.mean(axis=1)) for k, v in a.items()}
        r = {"psyki": scores.gain(rho["psyki_kbann"], rho["psyki_mlp"]),
             "ours": scores.gain(rho["kbann"], rho["uneducated"]),
             "ours_psyki": scores.gain(rho["kbann_psyki"], rho["uneducated"]),
             "ours_construction": scores.gain(rho["kbann_construction"], rho["uneducated"])}
        table.append(f"| {deg} | {', '.join(f'{v:g}' for v in levels)} | {r['psyki']:.4f} | "
                     f"{r['ours_construction']:.4f} | {r['ours']:.4f} | "
                     f"{r['ours_psyki']:.4f} | {PAPER[deg]:.4f} |")
        accs.append(f"| {deg} | " + " | ".join(
            f"{a[k][0].mean():.4f} / {a[k].mean():.4f}"
            for k in ("psyki_kbann", "psyki_mlp", "kbann_construction", "kbann", "kbann_psyki",
                      "uneducated")) + " |")
        print(f"{deg}: PSyKI side {t1 - t0:.0f} s, nesybench side {t2 - t1:.0f} s",
              flush=True)
    print()
    print("| degradation | levels | R, PSyKI's KBANN | R, nesybench KBANN (`construction: "
          "psyki`) | R, nesybench KBANN (default) | R, nesybench KBANN (`psyki`) | paper |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(table))
    print()
    print("test accuracy, level 0 / mean over the levels:")
    print()
    print("| degradation | PSyKI KBANN | Keras MLP | nesybench KBANN (`construction: psyki`) "
          "| nesybench KBANN (default) | nesybench KBANN (`psyki`) | nesybench MLP |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(accs))
    print(f"\nrun time {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
