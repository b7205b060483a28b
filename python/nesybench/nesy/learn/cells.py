"""The sweep cell of ``nesybench nesy sweep``: one training run inside the runs store.

Registered as ``nesy.train`` in :mod:`nesybench.runs.registry`. ``params``: ``task`` (a YAML
path or the name of a shipped task) and ``data`` (a generated data set folder, shared by every cell) are required; the
other keys are :class:`~nesybench.nesy.learn.train.RunConfig` fields (``model``, ``concept_sup``,
``epochs``, ``concept_source`` ...). The cell's seed seeds the networks and the batch order. Per-epoch curves go
to ``ctx.log``; the test (and OOD) figures are the final metrics (``test_label_accuracy``,
``test_concept_accuracy``, ``test_is_shortcut`` ...); ``metrics.json`` is kept as an artifact.
"""
from __future__ import annotations

import torch  # noqa: F401 - the runner seeds torch when the cell module imports it

from ...io import write_json
from ...paths import resolve_asset
from .train import EvalResult, RunConfig, run_experiment, summary_row


def nesy_train_cell(params: dict, seed: int, ctx) -> dict[str, float]:
    """Train and evaluate one model (module docstring)."""
    p = dict(params)
    # a task file, or the name of a shipped task (xor, curricula/rs/xor.yaml), never a path
    # looked up in the installation
    task = str(resolve_asset(str(p.pop("task")), "rs-task"))
    cfg = RunConfig(task=task, seed=seed, **p)
    summary = run_experiment(cfg, None, progress=False, log=ctx.log)
    path = ctx.artifact_dir / "metrics.json"
    write_json(path, summary)
    ctx.add_artifact(path)
    out: dict[str, float] = {"best_epoch": float(summary["fit"]["best_epoch"]),
                             "train_seconds": float(summary["fit"]["seconds"])}
    for split, res in summary["results"].items():
        row = summary_row(EvalResult(**res))
        out.update({f"{split}_{k}": v for k, v in row.items()})
    return out


nesy_train_cell.params_schema = {
    "task": str, "data": str, "model": str, "semantics": str, "concept_sup": (int, float),
    "concept_vars": (list, type(None)), "concept_weight": (int, float), "tnorm": str,
    "epochs": int, "batch": int, "lr": (int, float), "device": str, "splits": list,
    "mnist": (str, type(None)), "data_seed": int, "samples": (dict, type(None)),
    "concept_source": (str, type(None)), "inference": str,
}
nesy_train_cell.params_required = ("task", "data")
