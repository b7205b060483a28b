"""Run functions for the sweep runner (:mod:`nesybench.runs`): ``kandy.train``, ``kandy.aleph``.

``train_cell`` trains one (model, setting, seed) on a generated curriculum and returns the
final metrics (``avg_acc`` = the paper's average accuracy, class-balanced per task;
``avg_acc_micro``; per task ``acc_tNN``; for continual settings ``forgetting``, ``bwt``,
``fwt`` at the last time step). Curves: ``train_loss`` per epoch; ``A_tNN`` per time step
``z`` (the rows of the accuracy matrix), ``avg_acc``/``forgetting``/``bwt``/``fwt`` per ``z``.
Artifact ``result.json``: config, A, A_micro, thresholds, metrics over time.

``aleph_cell`` runs Aleph on one task (:mod:`.aleph`) and returns Table 2's quantities.
"""
from __future__ import annotations

import json

import torch  # noqa: F401 - imported so the runner seeds torch and fixes its threads

from ...io import dumps

_CACHE: dict = {}


def _data(dataset: str, size, tasks, verify: bool = True):
    from .data import load_data  # noqa: PLC0415

    key = (dataset, size, tuple(tasks) if tasks is not None else None, verify)
    if key not in _CACHE:
        _CACHE.clear()  # one curriculum at a time per worker process
        _CACHE[key] = load_data(dataset, size=size, tasks=tasks, verify=verify)
    return _CACHE[key]


def train_cell(params: dict, seed: int, ctx) -> dict:
    """One training run; ``params``: dataset (folder), model, setting, and optional size
    (default 64; None keeps the PNG size), tasks, hparams (easy|hard table), lr, optim, batch,
    epochs, buffer, replay_weight, dropout, device, weights, thresholds (all|seen),
    strategy (naive|replay|ewc|ewc-online|lwf|agem|der|derpp, continual settings) and its
    hyper-parameters (ewc_lambda, ewc_gamma, fisher_samples, lwf_lambda, lwf_temperature, der_alpha,
    der_beta, agem_ref_batch, agem_memory), shuffle (CONTINUAL-ONLINE stream in random order), augment (crop,flip,jitter), progress, verify (default true: files and split sizes checked against the manifest)."""
    from .settings import resolve_config, train  # noqa: PLC0415

    data = _data(str(params["dataset"]), params.get("size", 64), params.get("tasks"),
                 bool(params.get("verify", True)))
    opts = {k: params.get(k) for k in ("lr", "optim", "batch", "epochs", "buffer",
                                       "replay_weight", "dropout", "device", "weights",
                                       "thresholds", "shuffle", "strategy", "ewc_lambda",
                                       "ewc_gamma", "fisher_samples", "lwf_lambda", "lwf_temperature",
                                       "der_alpha", "der_beta", "agem_ref_batch",
                                       "agem_memory", "augment")}
    from .models import PRETRAINED  # noqa: PLC0415

    if params["model"] not in PRETRAINED:
        opts["weights"] = None       # one sweep's --weights is for its resnet50_h/vit_h runs
    cfg = resolve_config(params["model"], params["setting"],
                         hparams=params.get("hparams", "easy"), **opts)
    res = train(data, cfg, seed, progress=bool(params.get("progress", False)), log=ctx.log)
    path = ctx.artifact_dir / "result.json"
    out = res.to_json()
    out["data"] = data.describe()
    path.write_text(dumps(out), encoding="utf-8")
    ctx.add_artifact(path)
    final = res.final_metrics()
    final["input_size"] = float(data.size)
    final["decode_seconds"] = float(data.decode_seconds)
    return final


train_cell.params_schema = {
    "dataset": str, "model": str, "setting": str, "size": (int, type(None)),
    "tasks": (list, type(None)), "hparams": str, "lr": (float, type(None)),
    "optim": (str, type(None)), "batch": (int, type(None)), "epochs": (int, type(None)),
    "buffer": (int, type(None)), "replay_weight": (float, type(None)),
    "dropout": (float, type(None)), "device": (str, type(None)),
    "weights": (str, type(None)), "thresholds": (str, type(None)), "progress": bool,
    "verify": bool, "shuffle": bool, "strategy": (str, type(None)),
    "ewc_lambda": (float, type(None)), "ewc_gamma": (float, type(None)),
    "fisher_samples": (int, type(None)),
    "lwf_lambda": (float, type(None)), "lwf_temperature": (float, type(None)),
    "der_alpha": (float, type(None)), "der_beta": (float, type(None)),
    "agem_ref_batch": (int, type(None)), "agem_memory": (str, type(None)),
    "augment": (str, type(None))}
train_cell.params_required = ("dataset", "model", "setting")


def aleph_cell(params: dict, seed: int, ctx) -> dict:
    """Aleph on one task: params dataset, task, aleph (path to aleph.pl), encoding
    (nat|ptr), bk (min|mid), timeout (s), optional settings (dict of Aleph set/2 values)."""
    from .aleph import run_aleph_task  # noqa: PLC0415

    row = run_aleph_task(params["dataset"], int(params["task"]), params["aleph"],
                         encoding=params.get("encoding", "nat"), bk=params.get("bk", "mid"),
                         timeout=float(params.get("timeout", 1800)),
                         settings=params.get("settings"), workdir=ctx.artifact_dir)
    path = ctx.artifact_dir / "theory.json"
    path.write_text(json.dumps(row, indent=1, default=str), encoding="utf-8")
    ctx.add_artifact(path)
    return {k: float(v) for k, v in row.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None
            and k != "task"} | {
        "correct": float(bool(row.get("correct"))), "timed_out": float(bool(row.get("timed_out"))),
        "crashed": float(bool(row.get("crashed"))),
        "empty_theory": float(bool(row.get("empty_theory")))}


aleph_cell.params_schema = {"dataset": str, "task": int, "aleph": str, "encoding": str,
                            "bk": str, "timeout": (int, float), "settings": (dict, type(None))}
aleph_cell.params_required = ("dataset", "task", "aleph")
