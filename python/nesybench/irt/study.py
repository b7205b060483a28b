"""The IRT-robustness study as four steps over one study folder (what ``nesybench irt`` runs).

::

    STUDY/population/              sweep-runner study: one cell per (data set, model), pred.npy
    STUDY/responses/<ds>.npz       U (models × instances, 1 = right), model names, y, predictions
    STUDY/difficulty/<ds>.npz      b, b_raw, a, kept, bins, theta (+ <ds>.json: fit summary)
    STUDY/difficulty.csv           difficulty statistics per data set (the paper's Figure 3)
    STUDY/robustness/<ds>/         sweep-runner study: one cell per model, pred.npy per δ
    STUDY/kappa.csv                data set, model, δ, bin, bin mean b, kappa, kappa vs truth
    STUDY/taxonomy.json            clusters of the kappa profiles (Figure 5)
    STUDY/figures/                 difficulty.png, scc_<ds>.png, taxonomy.png

Every step reads what the previous one wrote; the two sweeps resume (finished cells are never
re-run) and a re-fit that changes the bins replaces the robustness cells of that data set.
"""
from __future__ import annotations

import warnings

import csv
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import NesyError
from ..folder import DataFolder, parse_csv
from ..io import write_json
from .cells import folds_of, load_dataset, parse_data_spec
from .curves import BINNING, DELTAS, N_BINS, bin_means, equal_frequency_bins
from .fit import fit_irt
from .population import DEFAULT_MODELS, FAMILIES, definition_hash, population, spec_of

#: the paper's Figure 3 (mean ± sd of the 1PL difficulties)
PAPER_DIFFICULTY = {"letter": (-1.50, 0.92), "optdigits": (-1.92, 0.67),
                    "wall-robot-navigation": (-2.36, 0.90)}


def ds_key(spec: str) -> str:
    """File-name-safe key of a data spec (a path becomes its stem)."""
    name, n = parse_data_spec(spec)
    base = Path(name).stem if ("/" in name or "." in name) else name
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", base)
    return f"{base}@{n}" if n else base


def _atomic_write(path: Path, writer) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part")
    writer(tmp)
    os.replace(tmp, path)


def _save_npz(path: Path, **arrays) -> None:
    def w(tmp):
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)
    _atomic_write(path, w)


def _data_params(target, nominal, folds, data_seed) -> dict:
    p = {"folds": int(folds), "data_seed": int(data_seed)}
    if target is not None:
        p["target"] = str(target)
    if nominal:
        p["nominal"] = list(nominal)
    return p


@dataclass
class PopulationResult:
    datasets: list
    models: int
    cells: int
    ran: int
    failed: int
    seconds: float
    accuracy: dict           # ds -> {"mean", "min", "max"}


def run_population(study, datasets, *, n_models: int = DEFAULT_MODELS, families=None,
                   folds: int = 5, data_seed: int = 0, target=None, nominal=(),
                   executor: str = "local", workers: int | None = None,
                   progress: bool = True, force_new: bool = False,
                   kind: str = "nesybench") -> PopulationResult:
    """Train the population under k-fold CV (one sweep cell per data set × model) and write
    each data set's response matrix to ``responses/<ds>.npz``.

    The sweep's fixed parameters hold the folds, the data seed and the digest of the family
    definitions; a folder holding a population with other ones is refused unless
    ``force_new`` (then it is replaced). ``kind``: ``nesybench`` (hyper-parameter variants
    on the folds; the tested models are respondents too) or ``paper`` (separate runs on
    bootstrap resamples; the tested models are held out, :func:`population`)."""
    from ..runs import GridSpec, run_grid  # noqa: PLC0415

    study = Path(study)
    specs = population(n_models, families, kind)
    base = _data_params(target, nominal, folds, data_seed)
    base["population"] = definition_hash()
    if kind != "nesybench":                 # the default keeps earlier studies' specs
        base["respondents"] = kind
    for d in datasets:                       # bad data fails here, before anything runs
        ds = load_dataset({"dataset": d, **base})
        folds_of({"dataset": d, **base}, ds)
    grid = GridSpec(study="irt-population", function="irt.population", params=base,
                    axes={"dataset": list(datasets), "model": [s.name for s in specs]},
                    seed=data_seed, description="IRT population: held-out predictions")
    res = run_grid(grid, study / "population", executor=executor, workers=workers,
                   progress=progress, force_new=force_new)
    acc = assemble_responses(study, datasets, [s.name for s in specs], base)
    s = res.summary
    return PopulationResult(datasets=list(datasets), models=len(specs), cells=s.total,
                            ran=s.ran, failed=s.failed, seconds=s.seconds, accuracy=acc)


def assemble_responses(study, datasets, models, base: dict) -> dict:
    """Stack the population's predictions into ``responses/<ds>.npz``; returns accuracy stats."""
    from ..runs import Study  # noqa: PLC0415

    study = Path(study)
    rows = Study(study / "population").rows(status=None)
    by = {(r.get("dataset"), r.get("model")): r for r in rows}
    folder = DataFolder(study / "population")      # read contained: no link out, bounded
    out = {}
    for d in datasets:
        ds = load_dataset({"dataset": d, **base})
        preds, names, missing = [], [], []
        for m in models:
            r = by.get((d, m))
            rel = f"artifacts/{r['cell_id'] if r else '-'}/pred.npy"
            if r is None or r["status"] != "done" or not folder.exists(rel):
                missing.append(m)
                continue
            pred = folder.read_npy(rel)
            if pred.shape != ds.y.shape or pred.dtype.kind not in "iub":
                raise NesyError(f"expected {ds.y.shape[0]} integer predictions, got an array "
                                f"of shape {pred.shape} ({pred.dtype})", file=folder.label(rel))
            preds.append(pred.astype(np.int64))
            names.append(m)
        if missing:
            print(f"[irt] {d}: {len(missing)} model(s) failed or missing, left out of U: "
                  f"{', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}")
        if len(names) < 2:
            raise NesyError(f"{d}: fewer than two models finished; see the failures in "
                            f"{study / 'population'}", field="population")
        P = np.vstack(preds)
        U = (P == ds.y[None, :]).astype(np.int8)
        _save_npz(study / "responses" / f"{ds_key(d)}.npz", U=U, pred=P.astype(np.int16),
                  y=ds.y, models=np.array(names), dataset=np.array(d))
        accs = U.mean(axis=1)
        out[d] = {"mean": float(accs.mean()), "min": float(accs.min()),
                  "max": float(accs.max()), "models": len(names)}
    return out


def load_responses(study, d: str):
    """``responses/<ds>.npz`` of a study, read contained (no link out, no FIFO, the archive's
    declared sizes checked before it is decompressed) and checked: ``U`` a (models ×
    instances) matrix of 0/1, ``models`` one name per row."""
    folder = DataFolder(study)
    rel = f"responses/{ds_key(d)}.npz"
    if not folder.exists(rel):
        raise NesyError(f"no response matrix for {d}; run `nesybench irt population` first",
                        file=folder.label(rel))
    z = folder.read_npz(rel)
    U, models = z.get("U"), z.get("models")
    if U is None or U.ndim != 2 or U.dtype.kind not in "iub" or U.size == 0 or \
            not np.isin(U, (0, 1)).all():
        raise NesyError("expected U, a non-empty (models x instances) matrix of 0 and 1",
                        file=folder.label(rel), field="U")
    if models is None or models.shape != (U.shape[0],) or models.dtype.kind not in "US":
        raise NesyError(f"expected models, {U.shape[0]} names (one per row of U)",
                        file=folder.label(rel), field="models")
    return z


def study_datasets(study) -> list[str]:
    """Data specs of a study, from its population sweep's stored spec."""
    from ..runs import Study  # noqa: PLC0415

    p = Path(study) / "population"
    if not (p / "results.sqlite").is_file():
        raise NesyError("not an IRT study folder (no population/ sweep); run "
                        "`nesybench irt population --out STUDY` first", file=str(study))
    axes = Study(p).spec().get("axes")
    names = axes.get("dataset") if isinstance(axes, dict) else None
    if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        raise NesyError("the population sweep's spec names no data sets (axes.dataset): not "
                        "an IRT study, or a damaged one", file=str(p / "results.sqlite"))
    return names


def study_base(study) -> dict:
    from ..runs import Study  # noqa: PLC0415

    p = Path(study) / "population"
    params = Study(p).spec().get("params")
    if not isinstance(params, dict):
        raise NesyError("the population sweep's spec has no params object: a damaged study",
                        file=str(p / "results.sqlite"))
    return dict(params)


def population_kind(study) -> str:
    """How a study's respondents were drawn: ``nesybench`` or ``paper``."""
    return str(study_base(study).get("respondents", "nesybench"))


def fit_difficulties(study, datasets=None, *, model: str = "1pl", n_bins: int = N_BINS,
                     outlier: float = 6.0, outlier_rule: str | None = None) -> dict:
    """Fit the IRT model on each data set's U; write difficulty/<ds>.npz|json and
    difficulty.csv; returns ``{ds: summary}``. ``outlier_rule`` (``fit.OUTLIER_RULES``):
    None takes ``paper`` for a population drawn as the paper's (``kind="paper"``), else
    ``significant``."""
    study = Path(study)
    datasets = datasets or study_datasets(study)
    if outlier_rule is None:
        outlier_rule = "paper" if population_kind(study) == "paper" else "significant"
    out = {}
    table = []
    for d in datasets:
        r = load_responses(study, d)
        with _one_thread():                  # small matrices: BLAS threads only contend
            fit = fit_irt(r["U"], model, outlier=outlier, outlier_rule=outlier_rule)
        bins = equal_frequency_bins(fit.b, n_bins)
        n_used = int(bins.max()) + 1                 # fewer when a tie fills a whole bin
        means = bin_means(fit.b, bins, n_used)
        key = ds_key(d)
        _save_npz(study / "difficulty" / f"{key}.npz", b=fit.b, b_raw=fit.b_raw, a=fit.a,
                  kept=fit.kept, bins=bins, bin_means=means, theta=fit.theta,
                  se_b=fit.se_b, se_a=fit.se_a, infit=fit.infit, outfit=fit.outfit,
                  models=r["models"])
        summ = fit.summary()
        if model == "2pl" and summ["respondents"] < 200:
            summ["note"] = (f"2PL with {summ['respondents']} respondents is ill-posed: items a "
                            f"few models separate perfectly get unbounded slopes (the paper "
                            f"fed its fit with up to 2,000 runs); prefer 1PL")
        summ.update({"dataset": d, "outlier": outlier, "bin_means": means.tolist(),
                     "n_bins": n_used,
                     "n_bins_asked": n_bins, "binning": BINNING,
                     "bin_sizes": np.bincount(bins[bins >= 0], minlength=n_used).tolist(),
                     "theta_by_model": dict(zip(r["models"].tolist(),
                                                np.round(fit.theta, 4).tolist()))})
        name = parse_data_spec(d)[0]
        paper = PAPER_DIFFICULTY.get(name)
        summ["paper_b_mean"], summ["paper_b_sd"] = paper if paper else (None, None)
        _atomic_write(study / "difficulty" / f"{key}.json", lambda t: write_json(t, summ))
        out[d] = summ
        table.append({"dataset": d, "model": model, "respondents": summ["respondents"],
                      "items": summ["items"], "kept": summ["kept"],
                      "all_right": summ["all_right"], "all_wrong": summ["all_wrong"],
                      "outliers": summ["outliers"], "outlier_rule": outlier_rule,
                      "negative_a": summ["negative_a"],
                      "b_mean": round(summ["b_mean"], 4), "b_sd": round(summ["b_sd"], 4),
                      "paper_b_mean": summ["paper_b_mean"], "paper_b_sd": summ["paper_b_sd"]})
    _write_csv(study / "difficulty.csv", table)
    return out


def _one_thread():
    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    return threadpool_limits(1)


def _write_csv(path: Path, rows: list[dict]) -> None:
    def w(tmp):
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            if rows:
                wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
                wr.writeheader()
                wr.writerows(rows)
    _atomic_write(path, w)


def read_csv(path: Path) -> list[dict]:
    """The rows of a study's CSV table, read contained (a regular file of the study, no link
    out, bounded)."""
    path = Path(path)
    folder = DataFolder(path.parent)
    _, rows = parse_csv(folder.read_text(path.name), folder.label(path.name))
    return [row for _, row in rows]


def to_pandas(study, table: str = "kappa"):
    """A study's table as a ``pandas.DataFrame``: ``kappa`` (kappa.csv: data set, model, δ,
    bin, difficulty, kappa) or ``difficulty`` (difficulty.csv: statistics per data set, with
    the paper's values); numbers are parsed."""
    import pandas as pd  # noqa: PLC0415

    if table not in ("kappa", "difficulty"):
        raise NesyError(f"unknown table {table!r} (choose from kappa, difficulty)")
    import io  # noqa: PLC0415

    folder = DataFolder(study)
    rel = f"{table}.csv"
    if not folder.exists(rel):
        raise NesyError(f"no {table}.csv yet (run the study's steps first)",
                        file=folder.label(rel))
    text = folder.read_text(rel)         # contained: no link out, no FIFO, bounded
    try:
        return pd.read_csv(io.StringIO(text))
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise NesyError(f"not a readable CSV table: {' '.join(str(exc).split())[:200]}",
                        file=folder.label(rel)) from None


def representatives(study) -> list[str]:
    """Variant 0 of every family present in the study's population (the paper's 18 models)."""
    from ..runs import Study  # noqa: PLC0415

    models = Study(Path(study) / "population").spec()["axes"]["model"]
    fams = []
    for m in models:
        f = spec_of(m).family
        if f not in fams:
            fams.append(f)
    return [f"{f}#0" for f in fams]


def run_robustness(study, datasets=None, *, models=None, nu: float = 0.2, deltas=DELTAS,
                   executor: str = "local", workers: int | None = None,
                   progress: bool = True) -> dict:
    """Perturb δ of every difficulty bin and record kappa per (model, bin, δ); one sweep per
    data set under ``robustness/<ds>/``; writes kappa.csv. Returns a summary dict."""
    from ..runs import GridSpec, Study, run_grid  # noqa: PLC0415

    study = Path(study)
    datasets = datasets or study_datasets(study)
    base = study_base(study)
    models = [spec_of(m).name for m in (models or representatives(study))]
    if nu < 0:
        raise NesyError(f"the noise level ν must be ≥ 0, got {nu}", field="nu")
    deltas = [float(x) for x in deltas]
    rows, summary = [], {}
    for d in datasets:
        key = ds_key(d)
        z = load_difficulty(study, d)
        bins, means = z["bins"], z["bin_means"]
        n_bins = int(means.size)
        grid = GridSpec(study=f"irt-robustness-{key}", function="irt.robustness",
                        params={**base, "dataset": d, "bins": bins.tolist(), "deltas": deltas,
                                "n_bins": n_bins, "nu": float(nu)},
                        axes={"model": models}, seed=int(base.get("data_seed", 0)),
                        description=f"IRT robustness on {d}")
        res = run_grid(grid, study / "robustness" / key, executor=executor, workers=workers,
                       progress=progress, force_new=True)
        done = {r["model"]: r for r in Study(study / "robustness" / key).rows()}
        for m in models:
            r = done.get(m)
            if r is None:
                continue
            for delta in deltas:
                for k in range(n_bins):
                    rows.append({"dataset": d, "model": m, "family": spec_of(m).family,
                                 "delta": delta, "bin": k,
                                 "bin_mean_b": round(float(means[k]), 4),
                                 "kappa": round(r[f"kappa[d={delta:g},bin={k}]"], 6),
                                 "kappa_true": round(r[f"kappa_true[d={delta:g},bin={k}]"], 6)})
        summary[d] = {"models": len(done), "failed": res.summary.failed,
                      "seconds": round(res.summary.seconds, 2)}
    _write_csv(study / "kappa.csv", rows)
    return summary


def load_difficulty(study, d: str) -> dict:
    """``difficulty/<ds>.npz`` of a study, read contained and checked (``b``, ``kept``,
    ``bins`` of one length; ``bin_means`` one value per bin)."""
    folder = DataFolder(study)
    rel = f"difficulty/{ds_key(d)}.npz"
    if not folder.exists(rel):
        raise NesyError(f"no difficulties for {d}; run `nesybench irt fit` first",
                        file=folder.label(rel))
    z = folder.read_npz(rel)
    b, kept, bins, means = (z.get(k) for k in ("b", "kept", "bins", "bin_means"))
    ok = all(isinstance(a, np.ndarray) and a.ndim == 1 for a in (b, kept, bins, means))
    if not ok or not (b.shape == kept.shape == bins.shape) or kept.dtype != bool or \
            bins.dtype.kind not in "iu" or b.dtype.kind != "f" or means.dtype.kind != "f" or \
            means.size == 0 or bins.size == 0 or int(bins.max()) >= means.size:
        raise NesyError("expected b, kept, bins (one per item) and bin_means (one per bin)",
                        file=folder.label(rel))
    return z


def kappa_cube(study):
    """kappa.csv as arrays: (datasets, models, deltas, bins, K[ds, model, δ, bin], B[ds, bin])."""
    path = Path(study) / "kappa.csv"
    if not path.is_file():
        raise NesyError("no kappa.csv; run `nesybench irt robustness` first", file=str(path))
    rows = read_csv(path)
    try:
        return _kappa_cube(rows)
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        raise NesyError(f"not a kappa table ({type(exc).__name__}: {str(exc)[:100]})",
                        file=str(path)) from None


def _kappa_cube(rows):
    if not rows:
        raise ValueError("no rows")
    dsets = list(dict.fromkeys(r["dataset"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    deltas = sorted({float(r["delta"]) for r in rows})
    nb = max(int(r["bin"]) for r in rows) + 1
    if min(int(r["bin"]) for r in rows) < 0 or \
            len(dsets) * len(models) * len(deltas) * nb > 10_000_000:
        raise ValueError("bins out of range or a table too large")
    K = np.full((len(dsets), len(models), len(deltas), nb), np.nan)
    KT = np.full_like(K, np.nan)
    B = np.full((len(dsets), nb), np.nan)
    for r in rows:
        i, j = dsets.index(r["dataset"]), models.index(r["model"])
        di, k = deltas.index(float(r["delta"])), int(r["bin"])
        K[i, j, di, k] = float(r["kappa"])
        KT[i, j, di, k] = float(r["kappa_true"])
        B[i, k] = float(r["bin_mean_b"])
    return dsets, models, deltas, K, KT, B


def build_taxonomy(study, *, k: int = 3):
    """Cluster the models' kappa profiles (bins × δ, averaged over data sets); writes
    taxonomy.json. Returns the :class:`~nesybench.irt.taxonomy.Taxonomy`."""
    from .taxonomy import agreement, cluster_profiles  # noqa: PLC0415

    study = Path(study)
    dsets, models, deltas, K, _, _ = kappa_cube(study)
    # a data set whose ties filled a whole bin has fewer bins: average each (δ, bin) over
    # the data sets that have it, and keep the (δ, bin) cells every model has
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)       # all-NaN slices
        M = np.nanmean(K, axis=0).reshape(len(models), -1)
    cols = np.flatnonzero(np.isfinite(M).sum(axis=0) >= max(2, 0.5 * len(models)))
    complete = [j for j in range(len(models)) if np.all(np.isfinite(M[j, cols]))]
    if len(complete) < 2 or cols.size == 0:
        raise NesyError("fewer than two models have a complete kappa profile; run "
                        "`nesybench irt robustness` for more models", field="models")
    P = M[np.ix_(complete, cols)]
    labels = [spec_of(models[j]).family for j in complete]
    tax = cluster_profiles(P, labels, k=k)
    info = {"datasets": dsets, "deltas": deltas, "k": tax.k, "groups": tax.groups(),
            "order": [labels[i] for i in tax.order],
            "clusters": {labels[i]: int(tax.clusters[i]) for i in range(len(labels))},
            "linkage": np.round(tax.linkage, 6).tolist(),
            "mean_kappa": {labels[i]: round(float(P[i].mean()), 4)
                           for i in range(len(labels))},
            "paper_agreement": agreement(tax.groups())}
    _atomic_write(study / "taxonomy.json", lambda t: write_json(t, info))
    return tax, info


def known_families() -> list[str]:
    return list(FAMILIES)
