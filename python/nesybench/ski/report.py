"""Read a ski study back: per (data set, degradation, predictor) the accuracies and Ψ of
every level and repetition; Table 1 (R with Mann–Whitney p-values) from them."""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..errors import NesyError
from . import degrade, scores

PREDICTORS = ("uneducated", "kins", "kill", "kbann")

#: the paper's Table 1 (R per data set × degradation × injector)
PAPER_TABLE1 = {
    ("bcw", "drop"): {"kins": 1.0493, "kill": 1.0318, "kbann": 1.0382},
    ("splice", "drop"): {"kins": 1.0045, "kill": 0.9968, "kbann": 0.8425},
    ("census", "drop"): {"kins": 0.9998, "kill": 1.0039, "kbann": 1.0043},
    ("bcw", "noise"): {"kins": 0.9960, "kill": 0.9985, "kbann": 1.0109},
    ("splice", "noise"): {"kins": 0.9950, "kill": 0.9984, "kbann": 1.0145},
    ("census", "noise"): {"kins": 0.9992, "kill": 1.0012, "kbann": 0.9965},
    ("bcw", "flip"): {"kins": 0.9994, "kill": 1.0184, "kbann": 0.9520},
    ("splice", "flip"): {"kins": 0.9962, "kill": 1.0026, "kbann": 1.6749},
    ("census", "flip"): {"kins": 0.9897, "kill": 1.1703, "kbann": 0.9815},
}


def collect(study_path) -> dict:
    """{(dataset, degradation, predictor): {level: {"acc": [...], "psi": [...]}}}."""
    from ..runs import Study  # noqa: PLC0415

    try:
        study = Study(study_path)
        rows = study.curves()
        fixed = (study.spec() or {}).get("params", {})
    except NesyError:
        raise
    except Exception as exc:  # noqa: BLE001 - a missing or foreign study
        raise NesyError(f"cannot read the study: {exc}", file=str(study_path)) from None
    out: dict = defaultdict(lambda: defaultdict(lambda: {"acc": {}, "psi": {}}))
    # the level of each (cell, step) is logged as its own curve: read the value, never
    # infer it from the step (custom level lists are not the paper's grid)
    level_of = {(r["cell_id"], r["step"]): float(r["value"]) for r in rows
                if r["name"] == "level" and r["step"] is not None}
    for r in rows:
        r = {**fixed, **r}
        deg = r.get("degradation") or (r.get("point") or [None])[0]
        if deg is None or "dataset" not in r:
            continue
        level = level_of.get((r["cell_id"], r["step"]))
        if level is None and r["step"] is not None and r["step"] < len(degrade.LEVELS[deg]):
            level = degrade.LEVELS[deg][r["step"]]
        name = r["name"]
        if level is None or "/" not in name:
            continue
        kind, rep = name.split("/", 1)
        out[(r["dataset"], deg, r["injector"])][level][kind][int(rep)] = r["value"]
    res = {}
    for key, by_level in out.items():
        res[key] = {lv: {"acc": [d["acc"][i] for i in sorted(d["acc"])],
                         "psi": [d["psi"][i] for i in sorted(d["psi"])]}
                    for lv, d in sorted(by_level.items())}
    if not res:
        raise NesyError("the study has no ski results (yet)", file=str(study_path))
    return res


def rho_of(by_level: dict) -> float:
    levels = sorted(by_level)
    if not levels or levels[0] != 0:
        return float("nan")
    return scores.rho(levels, [np.mean(by_level[lv]["psi"]) for lv in levels],
                      [np.mean(by_level[lv]["acc"]) for lv in levels])


def to_pandas(study_path):
    """:func:`table1` as a ``pandas.DataFrame`` (one row per data set, degradation and
    educated predictor)."""
    import pandas as pd  # noqa: PLC0415

    return pd.DataFrame(table1(study_path))


def table1(study_path) -> list[dict]:
    """One row per (data set, degradation, educated predictor): ρ, ρ_uneducated, R, p and
    the paper's R. p: Mann–Whitney U between the educated and uneducated accuracies of all
    repetitions at all levels the two share."""
    data = collect(study_path)
    rows = []
    for (ds, deg, pred), by_level in sorted(data.items()):
        if pred == "uneducated":
            continue
        base = data.get((ds, deg, "uneducated"))
        rho = rho_of(by_level)
        row = {"dataset": ds, "degradation": deg, "injector": pred, "rho": rho,
               "levels": len(by_level),
               "reps": int(np.median([len(v["acc"]) for v in by_level.values()])),
               "paper_R": PAPER_TABLE1.get((ds, deg), {}).get(pred)}
        if base:
            shared = sorted(set(base) & set(by_level))
            a = [x for lv in shared for x in by_level[lv]["acc"]]
            b = [x for lv in shared for x in base[lv]["acc"]]
            rho_u = rho_of({lv: base[lv] for lv in shared})
            rho_e = rho_of({lv: by_level[lv] for lv in shared})
            row.update(rho=rho_e, rho_uneducated=rho_u, R=scores.gain(rho_e, rho_u),
                       p=scores.mann_whitney(a, b),
                       acc_mean=float(np.mean(a)), acc_mean_uneducated=float(np.mean(b)))
        rows.append(row)
    return rows
