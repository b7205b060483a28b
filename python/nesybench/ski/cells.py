"""The sweep cell: one predictor, one data set, one degradation, one or more levels, all
repetitions trained as one batched ensemble (registered as ``ski.cell``).

Parameters (``ski_cell.params_schema``): ``dataset``, ``degradation``, ``injector``, and
either ``level`` (one level: a cell per level) or ``levels`` (a list; default: all the
paper's levels of the degradation, every ``level_stride``-th); ``reps`` (30), ``epochs``
(100), ``batch_size`` (32), ``lr`` (1e-3), ``split_seed`` (0: the stratified 2/3–1/3 split),
``hidden`` (default: the paper's widths), ``kb`` (rule file; default ``kb/ski/<dataset>.pl``),
``data_path`` (UCI file(s) instead of the cache), ``options`` (per-injector options, e.g.
``{"kbann": {"mofn": "psyki"}}``), ``engine`` ("native", the default, or "torch": the
trainer; their numbers differ in float summation order only), ``profile`` (``nesybench``,
``paper`` or ``psyki``: :mod:`nesybench.ski.profiles`).

Logged curves (step = the level's index in the degradation's full level list, or past its
end for a level off the paper's grid; the ``level`` curve holds the value itself):
``level``, ``acc/<rep>``, ``psi/<rep>`` and their means ``acc_mean``, ``psi_mean``.
The perturbed training sets depend on (data set, degradation, level, repetition, split) only,
so every predictor sees the same ones and R compares like with like.
"""
from __future__ import annotations

import time

import numpy as np
import torch

from ..errors import NesyError
from ..io import derive_seed
from . import data as ski_data
from . import degrade, injectors, magnitude, profiles, rules
from .ensemble import Members

_CACHE: dict = {}
#: largest total size of the per-member noisy training matrices of one cell
MAX_NOISE_BYTES = 2 * 2**30


def dataset(name: str, path: str | None = None) -> ski_data.Dataset:
    key = ("data", name, path)
    if key not in _CACHE:
        _CACHE[key] = ski_data.load(name, path)
    return _CACHE[key]


def knowledge(ds: ski_data.Dataset, kb: str | None = None) -> rules.Knowledge:
    path = kb or str(rules.KB_FILES[ds.name])
    key = ("kb", ds.name, path)
    if key not in _CACHE:
        _CACHE[key] = rules.load_knowledge(path, ds.features, ds.classes)
    return _CACHE[key]


def _point(params: dict) -> dict:
    """``point: [degradation, level, ...]`` (one axis of a grid of level chunks) → the
    degradation and its ``level`` (one) or ``levels`` (several)."""
    if params.get("point") is not None:
        deg, *levels = params["point"]
        if not levels:
            raise NesyError("point needs [degradation, level, ...]", field="point")
        params = {**params, "degradation": str(deg)}
        if len(levels) == 1:
            params["level"] = float(levels[0])
        else:
            params["levels"] = [float(v) for v in levels]
            params.pop("level", None)
    if "degradation" not in params:
        raise NesyError("the cell needs degradation (or point: [degradation, level])",
                        field="degradation")
    return params


def cell_levels(params: dict) -> list[float]:
    deg = params["degradation"]
    degrade.check(deg)
    if params.get("level") is not None:
        return [float(params["level"])]
    if params.get("levels") is not None:
        return [float(v) for v in params["levels"]]
    stride = int(params.get("level_stride", 1))
    return degrade.LEVELS[deg][::max(stride, 1)]


def build_members(ds: ski_data.Dataset, train: np.ndarray, degradation: str,
                  levels: list[float], reps: int, split_seed: int = 0,
                  profile: str | None = None):
    """Degraded training sets of every (level, repetition), level-major, as :class:`Members`,
    and Ψ(D_train, D'_train) of each ([len(levels), reps]), under the degradation reading
    of ``profile`` (:mod:`nesybench.ski.profiles`)."""
    prof = profiles.get(profile)
    Xtr, ytr = ds.X[train], ds.y[train]
    Xs, ys, rows = [], [], []
    psi = np.zeros((len(levels), reps))
    ref = magnitude.Reference(Xtr, ytr, ds.n_classes)
    for li, level in enumerate(levels):
        for r in range(reps):
            rng = np.random.default_rng(
                derive_seed("ski-data", ds.name, degradation, f"{level:.4f}", r, split_seed))
            d = degrade.degrade(degradation, level, Xtr, ytr, ds.groups, ds.n_classes, rng,
                                drop_mode=prof.drop, noise_scale=prof.noise)
            X2 = Xtr if d.X is None else d.X
            if level == 0:
                psi[li, r] = 0.0
            else:
                psi[li, r] = ref.psi(X2[d.rows], d.y[d.rows])
            if degradation == "noise":
                Xs.append(d.X)
            if degradation == "flip":
                ys.append(d.y)
            rows.append(torch.from_numpy(d.rows.astype(np.int64)))
    X = torch.from_numpy(np.stack(Xs)) if Xs else torch.from_numpy(Xtr).unsqueeze(0)
    y = torch.from_numpy(np.stack(ys)) if ys else torch.from_numpy(ytr).unsqueeze(0)
    return Members(X, y, rows), psi


def make_predictor(params: dict, ds: ski_data.Dataset):
    name = params["injector"]
    if name not in injectors.INJECTORS:
        raise NesyError(f"unknown injector {name!r} (known: {', '.join(injectors.INJECTORS)})",
                        field="injector")
    kn = None if name == "uneducated" else knowledge(ds, params.get("kb"))
    prof = profiles.get(params.get("profile"))
    # the profile's defaults, then the user's options of this predictor ({"kbann": {"mofn":
    # "psyki"}, ...}: one dict for the grid), which win
    opts = dict(prof.injectors.get(name) or {})
    if prof.patience is not None:
        opts["patience"] = prof.patience
    opts.update((params.get("options") or {}).get(name) or {})
    for key in ("epochs", "batch_size", "lr", "engine"):
        if params.get(key) is not None:
            opts[key] = params[key]
    hidden = params.get("hidden") or injectors.HIDDEN[ds.name]
    return injectors.make(name, ds.X.shape[1], ds.n_classes, hidden, kn, **opts)


def run(params: dict, seed: int, *, one_at_a_time: bool = False, progress=None) -> dict:
    """Train and evaluate a cell; returns levels, acc [L, R], psi [L, R], seconds."""
    params = _point(params)
    ds = dataset(params["dataset"], params.get("data_path"))
    deg = params["degradation"]
    levels = cell_levels(params)
    reps = int(params.get("reps", 30))
    split_seed = int(params.get("split_seed", 0))
    pred = make_predictor(params, ds)
    train, test = ski_data.stratified_split(ds.y, split_seed)
    if deg == "noise":      # one noisy copy of the training matrix per member
        need = len(levels) * reps * len(train) * ds.X.shape[1] * 4
        if need > MAX_NOISE_BYTES:
            raise NesyError(f"{len(levels)} noise levels × {reps} repetitions of {ds.name} "
                            f"need {need / 2**30:.1f} GiB of noisy copies; use fewer levels per "
                            "cell (--levels-per-cell) or fewer repetitions", field="levels")
    members, psi = build_members(ds, train, deg, levels, reps, split_seed,
                                 params.get("profile"))
    seeds = [derive_seed(seed, "member", f"{lv:.4f}", r) for lv in levels for r in range(reps)]
    Xte = torch.from_numpy(ds.X[test])
    yte = torch.from_numpy(ds.y[test])
    t0 = time.perf_counter()
    if one_at_a_time:
        accs = []
        for e in range(members.size):
            pred.fit(members.select([e]), [seeds[e]])
            accs.append(pred.accuracy(Xte, yte))
        acc = torch.cat(accs)
    else:
        pred.fit(members, seeds, progress=progress)
        acc = pred.accuracy(Xte, yte)
    seconds = time.perf_counter() - t0
    epochs = np.asarray(getattr(pred, "epochs_trained", np.full(members.size, 0)))
    return {"levels": levels, "acc": acc.view(len(levels), reps).numpy(), "psi": psi,
            "seconds": seconds, "members": members.size,
            "epochs": epochs.reshape(len(levels), reps) if not one_at_a_time else None}


def ski_cell(params: dict, seed: int, ctx) -> dict:
    """Run function of the sweep runner (see the module docstring)."""
    params = _point(params)
    out = run(params, seed)
    full = degrade.LEVELS[params["degradation"]]
    for li, level in enumerate(out["levels"]):
        # a paper level keeps its index; any other gets one past the paper's list, so steps
        # never collide (the value itself is the ``level`` curve, which the report reads)
        step = full.index(level) if level in full else len(full) + li
        vals = {"level": level, "acc_mean": float(out["acc"][li].mean()),
                "psi_mean": float(out["psi"][li].mean())}
        if out.get("epochs") is not None:
            vals["epochs_mean"] = float(out["epochs"][li].mean())
        for r in range(out["acc"].shape[1]):
            vals[f"acc/{r}"] = float(out["acc"][li, r])
            vals[f"psi/{r}"] = float(out["psi"][li, r])
        ctx.log_many(vals, step=step)
    return {"acc_mean": float(out["acc"].mean()), "train_seconds": out["seconds"],
            "members": float(out["members"])}


ski_cell.params_schema = {
    "dataset": str, "degradation": str, "injector": str, "level": (int, float),
    "levels": list, "level_stride": int, "reps": int, "epochs": int, "batch_size": int,
    "lr": (int, float), "split_seed": int, "hidden": list, "kb": str, "data_path": str,
    "options": dict, "point": list, "engine": str, "profile": str,
}
ski_cell.params_required = ("dataset", "injector")
