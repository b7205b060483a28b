"""Run functions of the IRT study for the sweep runner (registered as ``irt.population`` and
``irt.robustness`` in :mod:`nesybench.runs.registry`).

A data set is named by a *data spec*: a built-in name (``letter``, ``optdigits``, ``phoneme``)
or a CSV/ARFF path, optionally followed by ``@N`` for a stratified subsample of N rows
(``letter@4000``). The folds depend only on the data spec and ``data_seed``, and a model's
random state only on (model, data spec, data seed), so every cell of a study — and the
robustness cells — see the same folds and the same fitted models.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from functools import lru_cache

import numpy as np

from ..errors import NesyError
from ..io import derive_seed
from . import data as data_mod
from .curves import DELTAS, N_BINS, perturbation_masks, scc_table
from .perturb import Perturber
from .population import Model, cross_val_predict, one_thread, spec_of, stratified_folds


def parse_data_spec(spec: str) -> tuple[str, int]:
    """``"letter@4000"`` -> ``("letter", 4000)``; no ``@`` -> subsample 0 (all rows)."""
    name, sep, n = str(spec).rpartition("@")
    if not sep:
        return str(spec), 0
    if not n.isdigit() or int(n) < 2:
        raise NesyError(f"bad data spec {spec!r}: write NAME or NAME@ROWS", field="dataset")
    return name, int(n)


@lru_cache(maxsize=8)
def _load_cached(spec: str, target, nominal: tuple, data_seed: int):
    name, n = parse_data_spec(spec)
    ds = data_mod.load(name, target=target, nominal=nominal, subsample=n,
                       seed=derive_seed("irt.subsample", data_key(name), n, data_seed))
    if n:
        ds.name = spec
    return ds


def load_dataset(params: dict):
    """The :class:`~nesybench.irt.data.Dataset` a cell's parameters name."""
    return _load_cached(params["dataset"], params.get("target"),
                        tuple(params.get("nominal") or ()), int(params.get("data_seed", 0)))


@lru_cache(maxsize=64)
def data_key(spec: str) -> str:
    """What the seeds of a data spec derive from: a built-in name as it is; a file by its
    name and the SHA-256 of its bytes, never its path — the same file gives the same folds
    and models in any folder, on any machine."""
    name, n = parse_data_spec(spec)
    path = Path(name)
    if path.is_file():
        from ..folder import read_input  # noqa: PLC0415
        digest = hashlib.sha256(read_input(path)).hexdigest()[:16]
        name = f"{path.name}:{digest}"
    return f"{name}@{n}" if n else name


def folds_of(params: dict, ds) -> np.ndarray:
    k = int(params.get("folds", 5))
    return stratified_folds(ds.y, k, derive_seed("irt.folds", data_key(params["dataset"]),
                                                 int(params.get("data_seed", 0))))


def model_seed(params: dict) -> int:
    return derive_seed("irt.model", params["model"], data_key(params["dataset"]),
                       int(params.get("data_seed", 0)))


def population_cell(params: dict, seed: int, ctx) -> dict:
    """Held-out predictions of one model on one data set under stratified k-fold CV.

    Keeps ``pred.npy`` (int16 class codes, one per instance in data-set order) as the
    cell's artifact; returns accuracy and Cohen's kappa against the true labels.
    """
    from .curves import cohen_kappa  # noqa: PLC0415

    ds = load_dataset(params)
    folds = folds_of(params, ds)
    spec = spec_of(params["model"])
    mseed = model_seed(params)
    pred = cross_val_predict(spec, ds, folds, mseed,
                             on_fold=lambda f, acc: ctx.log("fold_accuracy", acc, step=f))
    path = ctx.artifact_dir / "pred.npy"
    np.save(path, pred.astype(np.int16))
    ctx.add_artifact(path)
    return {"accuracy": float(np.mean(pred == ds.y)), "kappa": cohen_kappa(ds.y, pred),
            "instances": float(ds.n)}


population_cell.params_schema = {"dataset": str, "model": str, "folds": int, "data_seed": int,
                                 "target": (str, type(None)), "nominal": list,
                                 "population": str, "respondents": str}
population_cell.params_required = ("dataset", "model")


def robustness_cell(params: dict, seed: int, ctx) -> dict:
    """Clean vs perturbed predictions of one model, per difficulty bin and proportion δ.

    ``bins`` (list, one bin index per instance, −1 = no difficulty) come from the IRT fit;
    in every test fold the model (trained on the other folds, same seed as in the
    population) predicts the clean fold and, for each δ, the fold with the instances of
    :func:`~nesybench.irt.curves.perturbation_masks` replaced by their perturbed copies
    (numeric N(x, σν), nominal α-mixture; σ and frequencies from the training fold).
    Artifact ``pred.npy``: int16 (1 + len(deltas), n) — row 0 clean, then one row per δ.
    Metrics: ``kappa[d=δ,bin=k]`` (clean vs perturbed) and ``kappa_true[d=δ,bin=k]``
    (true labels vs perturbed), plus ``accuracy``.
    """
    ds = load_dataset(params)
    bins = np.asarray(params["bins"], dtype=np.int64)
    if bins.size != ds.n:
        raise NesyError(f"bins has {bins.size} entries but the data set {ds.n} rows",
                        field="bins")
    deltas = [float(d) for d in params.get("deltas", DELTAS)]
    n_bins = int(params.get("n_bins", N_BINS))
    nu = float(params.get("nu", 0.2))
    folds = folds_of(params, ds)
    spec = spec_of(params["model"])
    mseed = model_seed(params)
    masks = perturbation_masks(bins, deltas, seed=derive_seed("irt.masks", seed))
    rng = np.random.default_rng(derive_seed("irt.noise", seed))
    preds = np.empty((1 + len(deltas), ds.n), dtype=np.int64)
    ncat = [len(c) if c else 0 for c in ds.categories]
    with one_thread():
        for f in range(int(folds.max()) + 1):
            tr, te = folds != f, folds == f
            m = Model(spec, ds.nominal, ds.categories, mseed).fit(ds.X[tr], ds.y[tr])
            Xte = ds.X[te]
            preds[0, te] = m.predict(Xte)
            noisy = Perturber(nu, ds.nominal).fit(ds.X[tr], ncat).apply(Xte, rng)
            for d in range(len(deltas)):
                sel = masks[d, te]
                if not sel.any():
                    preds[1 + d, te] = preds[0, te]
                    continue
                Xd = Xte.copy()
                Xd[sel] = noisy[sel]
                preds[1 + d, te] = m.predict(Xd)
    path = ctx.artifact_dir / "pred.npy"
    np.save(path, preds.astype(np.int16))
    ctx.add_artifact(path)
    k_clean = scc_table(preds[0], preds[1:], bins, n_bins)
    k_true = scc_table(preds[0], preds[1:], bins, n_bins, truth=ds.y)
    out = {"accuracy": float(np.mean(preds[0] == ds.y))}
    for d, delta in enumerate(deltas):
        for k in range(n_bins):
            out[f"kappa[d={delta:g},bin={k}]"] = k_clean[d, k]
            out[f"kappa_true[d={delta:g},bin={k}]"] = k_true[d, k]
    return out


robustness_cell.params_schema = {"dataset": str, "model": str, "folds": int, "data_seed": int,
                                 "target": (str, type(None)), "nominal": list, "bins": list,
                                 "population": str, "respondents": str,
                                 "deltas": list, "n_bins": int, "nu": (int, float)}
robustness_cell.params_required = ("dataset", "model", "bins")
