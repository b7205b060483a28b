"""The two IRT outlier rules on one population: what each drops, and what that changes.

Takes two copies of one study folder (after `irt population`), the first fitted with
`irt fit --outlier-rule paper`, the second with `--outlier-rule significant`, each followed by
`irt robustness` and `irt taxonomy`, and prints per data set the items kept and dropped under
each rule, the dropped items' minority answers and standard errors, the bin means, and the
change in kappa over every (data set, model, bin, δ) cell and in the taxonomy's clusters:

    .venv/bin/python benchmarks/irt_outlier_rules.py out/irt-paper-p out/irt-paper-s
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from nesybench.irt.study import ds_key, study_datasets  # noqa: E402


def _kappas(study: Path) -> dict:
    with open(study / "kappa.csv", newline="", encoding="utf-8") as fh:
        return {(r["dataset"], r["model"], r["bin"], r["delta"]): float(r["kappa"])
                for r in csv.DictReader(fh)}


def _clusters(study: Path) -> list:
    tax = json.loads((study / "taxonomy.json").read_text(encoding="utf-8"))
    return sorted(sorted(c) for c in tax.get("clusters", []))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paper", type=Path, help="the study fitted with --outlier-rule paper")
    ap.add_argument("significant", type=Path,
                    help="the same population fitted with --outlier-rule significant")
    args = ap.parse_args(argv)
    for d in study_datasets(args.paper):
        key = ds_key(d)
        U = np.load(args.paper / "responses" / f"{key}.npz")["U"]
        for label, study in (("paper", args.paper), ("significant", args.significant)):
            summ = json.loads((study / "difficulty" / f"{key}.json").read_text())
            fit = np.load(study / "difficulty" / f"{key}.npz")
            dropped = np.flatnonzero(np.isfinite(fit["b_raw"]) & ~fit["kept"])
            line = (f"{d:<16} {label:<12} rule {summ['outlier_rule']:<12} kept "
                    f"{summ['kept']:>5} of {summ['items']:<5} dropped {len(dropped):>4}  "
                    f"b {summ['b_mean']:+.2f} ± {summ['b_sd']:.2f}  bin means "
                    + ", ".join(f"{m:+.2f}" for m in summ["bin_means"]))
            print(line)
            if len(dropped):
                wrong = (U[:, dropped] == 0).sum(axis=0)
                right = (U[:, dropped] == 1).sum(axis=0)
                minority = np.minimum(wrong, right)
                print(f"{'':<30}dropped items: minority answers {minority.min()}-"
                      f"{minority.max()} of {U.shape[0]}, b_raw {fit['b_raw'][dropped].min():+.2f}"
                      f" to {fit['b_raw'][dropped].max():+.2f}, se {fit['se_b'][dropped].min():.2f}"
                      f"-{fit['se_b'][dropped].max():.2f}")
    a, b = _kappas(args.paper), _kappas(args.significant)
    shared = sorted(set(a) & set(b))
    change = {k: abs(a[k] - b[k]) for k in shared}
    worst = max(shared, key=lambda k: change[k])
    print(f"kappa cells {len(shared)}: largest change {change[worst]:.3f} at {worst}")
    for d in study_datasets(args.paper):
        per = [change[k] for k in shared if k[0] == d]
        print(f"  {d:<16} mean change {np.mean(per):.4f}, max {np.max(per):.4f}")
    same = _clusters(args.paper) == _clusters(args.significant)
    print(f"taxonomy clusters {'the same' if same else 'differ'} under both rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
