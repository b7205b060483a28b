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


def profile_of(study_path) -> str:
    """The reading (:mod:`nesybench.ski.profiles`) a study was run under."""
    from ..runs import Study  # noqa: PLC0415

    try:
        params = (Study(study_path).spec() or {}).get("params", {})
    except Exception:  # noqa: BLE001 - reported by collect()
        return "nesybench"
    return params.get("profile") or "nesybench"


def table1(study_path, bootstrap: int = 0, seed: int = 0) -> list[dict]:
    """One row per (data set, degradation, educated predictor): ρ, ρ_uneducated, R, the
    paper's R, and two Mann–Whitney p-values: ``p`` between the educated and uneducated
    accuracies of all repetitions at all levels the two share (pooled), ``p_levels``
    between their per-level mean accuracies (the mean curves). Beside ρ (ours, not the
    paper's): ``R_auc`` and ``R_low``/``R_mid``/``R_high`` (:func:`_beside_rho`).
    ``bootstrap`` > 0 adds ``R_lo``/``R_hi``, the 95 % percentile interval of R over that many
    paired resamples of the repetitions (:func:`scores.gain_bootstrap`)."""
    data = collect(study_path)
    profile = profile_of(study_path)
    rows = []
    for (ds, deg, pred), by_level in sorted(data.items()):
        if pred == "uneducated":
            continue
        base = data.get((ds, deg, "uneducated"))
        rho = rho_of(by_level)
        row = {"dataset": ds, "degradation": deg, "injector": pred, "profile": profile,
               "rho": rho,
               "levels": len(by_level),
               "reps": int(np.median([len(v["acc"]) for v in by_level.values()])),
               "paper_R": PAPER_TABLE1.get((ds, deg), {}).get(pred)}
        # same_sign: R and the paper's R on the same side of 1 (both gains or both losses)
        if base:
            shared = sorted(set(base) & set(by_level))
            a = [x for lv in shared for x in by_level[lv]["acc"]]
            b = [x for lv in shared for x in base[lv]["acc"]]
            rho_u = rho_of({lv: base[lv] for lv in shared})
            rho_e = rho_of({lv: by_level[lv] for lv in shared})
            row.update(rho=rho_e, rho_uneducated=rho_u, R=scores.gain(rho_e, rho_u),
                       p=scores.mann_whitney(a, b),
                       p_levels=scores.mann_whitney_levels(
                           [by_level[lv]["acc"] for lv in shared],
                           [base[lv]["acc"] for lv in shared]),
                       acc_mean=float(np.mean(a)), acc_mean_uneducated=float(np.mean(b)))
            row.update(_beside_rho(shared, by_level, base))
            if bootstrap and shared and shared[0] == 0:
                reps = min(min(len(by_level[lv]["acc"]), len(base[lv]["acc"]),
                               len(by_level[lv]["psi"])) for lv in shared)
                grid = lambda d, k: np.array([d[lv][k][:reps] for lv in shared])  # noqa: E731
                boot = scores.gain_bootstrap(shared, grid(by_level, "psi"),
                                             grid(by_level, "acc"), grid(base, "acc"),
                                             n=bootstrap, seed=seed)
                row["R_lo"], row["R_hi"] = (float(v) for v in np.nanpercentile(boot,
                                                                                [2.5, 97.5]))
            if row["paper_R"] is not None and row["R"] == row["R"]:
                row["same_sign"] = bool((row["R"] - 1) * (row["paper_R"] - 1) > 0)
        rows.append(row)
    return rows


def _beside_rho(levels, educated, uneducated) -> dict:
    """Robustness read without Ψ's weight on the highest levels (ours, not the paper's):
    the AUC ratio of the mean accuracy curves and R over the low, middle and high thirds of
    the levels (each with level 0 as its base)."""
    acc_e = [float(np.mean(educated[lv]["acc"])) for lv in levels]
    acc_u = [float(np.mean(uneducated[lv]["acc"])) for lv in levels]
    auc_e, auc_u = scores.auc(levels, acc_e), scores.auc(levels, acc_u)
    out = {"auc": auc_e, "auc_uneducated": auc_u,
           "R_auc": auc_e / auc_u if auc_u else float("nan")}
    if not levels or levels[0] != 0:
        return out
    for name, part in zip(("low", "mid", "high"), scores.level_thirds(levels)):
        if not part:
            out[f"R_{name}"] = float("nan")
            continue
        pick = [levels[0], *(levels[i] for i in part)]
        out[f"R_{name}"] = scores.gain(rho_of({lv: educated[lv] for lv in pick}),
                                       rho_of({lv: uneducated[lv] for lv in pick}))
    return out
