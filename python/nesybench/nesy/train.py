"""Training and evaluation of the NeSy models.

:func:`fit` runs Adam over shuffled mini-batches (a seeded ``torch.Generator``: same seed, same
numbers on CPU), logs the loss per epoch and the validation label/concept accuracy, writes a
checkpoint after every epoch (``last.pt``) and of the best validation epoch (``best.pt``), and
restores the best epoch's weights at the end (model selection on validation label accuracy,
ties to the earlier epoch).

:func:`evaluate` predicts labels (argmax of the per-label log-probabilities) and concepts
(argmax of the concept logits), scores them with :mod:`nesybench.shortcuts.metrics` (label and
concept accuracy, macro-F1, confusion matrices, collapse; concept groups pooled as the task's
``maps``) and classifies the learned concept map with :mod:`nesybench.nesy.detect`.
"""
from __future__ import annotations

import csv
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..errors import NesyError
from ..shortcuts import metrics as rs_metrics
from .data import NesyData
from .detect import ShortcutReport, detect, group_confusions


@dataclass
class FitResult:
    """history: one dict per epoch (epoch, loss, label_loss, concept_loss, val_label_accuracy,
    val_concept_accuracy, seconds); best_epoch: 1-based epoch restored at the end."""

    history: list[dict]
    best_epoch: int
    seconds: float
    checkpoint: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class EvalResult:
    split: str
    metrics: dict
    shortcut: dict | None = None
    label_names: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def _device(device: str) -> torch.device:
    if device == "cuda" and not torch.cuda.is_available():
        raise NesyError("--device cuda: no CUDA device is available here", field="device")
    if device not in ("cpu", "cuda"):
        raise NesyError(f"unknown device {device!r} (cpu, cuda)", field="device")
    return torch.device(device)


@torch.no_grad()
def predict(model, data: NesyData, *, batch: int = 256, device: str = "cpu"):
    """``(label indices (N, n_labels), concept indices (N, n_vars) or None)``."""
    dev = _device(device)
    model.eval()
    labs, cons = [], []
    for s in range(0, len(data), batch):
        out = model(data.x[s:s + batch].to(dev))
        labs.append(torch.stack([lp.argmax(dim=1) for lp in out.label_logp], dim=1).cpu())
        if out.concept_logits is not None:
            cons.append(torch.stack([z.argmax(dim=1) for z in out.concept_logits], dim=1).cpu())
    return torch.cat(labs), (torch.cat(cons) if cons else None)


def _accuracies(model, data, device, batch=256) -> tuple[float, float | None]:
    lab, con = predict(model, data, batch=batch, device=device)
    la = float((lab == data.labels).all(dim=1).float().mean())
    ca = float((con == data.concepts).float().mean()) if con is not None else None
    return la, ca


def fit(model, train: NesyData, val: NesyData | None = None, *, epochs: int = 10,
        batch: int = 64, lr: float = 1e-3, seed: int = 0, device: str = "cpu",
        concept_mask: torch.Tensor | None = None, out: str | Path | None = None,
        progress: bool = True, log=None) -> FitResult:
    """Train ``model`` on ``train`` (see module docstring). ``concept_mask``: (N, n_vars) bool
    of supervised concept entries (:func:`nesybench.nesy.data.concept_mask`); ``log``: optional
    ``log(name, value, step)`` callback (the sweep runner's ``ctx.log``)."""
    if epochs < 1 or batch < 1 or lr <= 0:
        raise NesyError("epochs and batch must be >= 1 and lr > 0")
    dev = _device(device)
    model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    n = len(train)
    mask = concept_mask if concept_mask is not None else torch.zeros(n, len(train.variable_names),
                                                                      dtype=torch.bool)
    if tuple(mask.shape) != (n, len(train.variable_names)):
        raise NesyError(f"concept mask has shape {tuple(mask.shape)}, expected "
                        f"({n}, {len(train.variable_names)})")
    ckpt_dir = Path(out) if out else None
    if ckpt_dir:
        ckpt_dir.mkdir(parents=True, exist_ok=True)
    history: list[dict] = []
    best, best_epoch, best_state = -1.0, 0, None
    t0 = time.perf_counter()
    bar = None
    steps = (n + batch - 1) // batch
    if progress:
        from tqdm import tqdm  # noqa: PLC0415
        bar = tqdm(total=epochs * steps, desc=f"train {model.kind}", unit="batch", leave=False)
    for epoch in range(1, epochs + 1):
        te = time.perf_counter()
        model.train()
        perm = torch.randperm(n, generator=gen)
        sums = {"loss": 0.0, "label": 0.0, "concept": 0.0}
        for s in range(0, n, batch):
            ix = perm[s:s + batch]
            loss, parts = model.loss(train.x[ix].to(dev), train.labels[ix].to(dev),
                                     train.concepts[ix].to(dev), mask[ix].to(dev))
            if not torch.isfinite(loss):
                raise NesyError(f"the {model.kind} loss is not finite at epoch {epoch} "
                                "(a label the concepts cannot produce?)")
            opt.zero_grad()
            loss.backward()
            opt.step()
            w = len(ix) / n
            sums["loss"] += float(loss.detach()) * w
            sums["label"] += parts["label"] * w
            sums["concept"] += parts.get("concept", 0.0) * w
            if bar is not None:
                bar.update(1)
                bar.set_postfix(epoch=epoch, loss=f"{float(loss.detach()):.3f}")
        row = {"epoch": epoch, "loss": sums["loss"], "label_loss": sums["label"],
               "concept_loss": sums["concept"]}
        score = -row["loss"]
        if val is not None:
            la, ca = _accuracies(model, val, device)
            row["val_label_accuracy"] = la
            if ca is not None:
                row["val_concept_accuracy"] = ca
            score = la
        row["seconds"] = time.perf_counter() - te
        history.append(row)
        if log is not None:
            for k, v in row.items():
                if k not in ("epoch", "seconds") and v is not None:
                    log(k, float(v), epoch)
        if score > best:
            best, best_epoch = score, epoch
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if ckpt_dir:
                _save(ckpt_dir / "best.pt", model, epoch)
        if ckpt_dir:
            _save(ckpt_dir / "last.pt", model, epoch)
    if bar is not None:
        bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
    return FitResult(history, best_epoch, time.perf_counter() - t0,
                     str(ckpt_dir / "best.pt") if ckpt_dir else None)


def _save(path: Path, model, epoch: int) -> None:
    tmp = path.with_name(path.name + ".part")
    torch.save({"epoch": epoch, "kind": model.kind, "state_dict": model.state_dict()}, tmp)
    tmp.replace(path)


def load_checkpoint(model, path) -> int:
    """Load weights saved by :func:`fit`; returns the epoch."""
    p = Path(path)
    if not p.is_file():
        raise NesyError("checkpoint not found", file=str(p))
    try:
        blob = torch.load(p, map_location="cpu", weights_only=True)
        model.load_state_dict(blob["state_dict"])
    except (RuntimeError, KeyError, OSError, ValueError) as exc:
        raise NesyError(f"cannot load checkpoint: {exc}", file=str(p)) from None
    if blob.get("kind") != model.kind:
        raise NesyError(f"checkpoint is a {blob.get('kind')} model, not {model.kind}", file=str(p))
    return int(blob.get("epoch", 0))


def evaluate(model, data: NesyData, task, label_domains: list[list], *, maps: str | None = None,
             device: str = "cpu", shortcut: bool = True, predictions: str | Path | None = None,
             ) -> EvalResult:
    """Metrics of ``model`` on ``data`` (module docstring); ``predictions``: write a CSV in the
    ``rs metrics`` format (true and ``pred_`` columns)."""
    lab, con = predict(model, data, device=device)
    names = data.label_names
    lt = {nm: [str(label_domains[j][int(i)]) for i in data.labels[:, j]] for j, nm in enumerate(names)}
    lp = {nm: [str(label_domains[j][int(i)]) for i in lab[:, j]] for j, nm in enumerate(names)}
    ct, cp, shared, domains = {}, {}, None, None
    groups = task.groups(maps)
    if con is not None:
        for i, v in enumerate(task.variables):
            ct[v.name] = [str(v.domain[int(a)]) for a in data.concepts[:, i]]
            cp[v.name] = [str(v.domain[int(a)]) for a in con[:, i]]
        shared = {g: [task.variables[i].name for i in ix] for g, _, ix in groups}
        domains = {g: [str(x) for x in dom] for g, dom, _ in groups}
    m = rs_metrics.compute(lt, lp, ct, cp, domains=domains, shared=shared)
    report: ShortcutReport | None = None
    if con is not None and shortcut:
        report = detect(task, group_confusions(task, data.concepts.numpy(), con.numpy(), maps),
                        maps=maps)
    if predictions is not None:
        path = Path(predictions)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            cols = ([f"label:{n}" for n in names] + [f"pred_label:{n}" for n in names] +
                    [f"concept:{k}" for k in ct] + [f"pred_concept:{k}" for k in cp])
            w.writerow(["file", *cols])
            for r, f in enumerate(data.files):
                w.writerow([f, *[lt[n][r] for n in names], *[lp[n][r] for n in names],
                            *[ct[k][r] for k in ct], *[cp[k][r] for k in cp]])
    return EvalResult(split=data.split, metrics=m.to_json(),
                      shortcut=report.to_json() if report else None, label_names=names)


def summary_row(res: EvalResult) -> dict[str, float]:
    """Flat numbers of an evaluation (for tables and the sweep store)."""
    m = res.metrics
    out = {"label_accuracy": m["label_accuracy"], "label_macro_f1": m["label_macro_f1"]}
    for k in ("concept_accuracy", "concept_macro_f1", "collapse_hard", "collapse_relaxed",
              "world_accuracy"):
        if m.get(k) is not None:
            out[k] = m[k]
    if res.shortcut:
        out["is_identity"] = float(res.shortcut["verdict"] == "identity")
        out["is_shortcut"] = float(res.shortcut["verdict"] == "shortcut")
        out["support_errors"] = float(res.shortcut["support_errors"])
    return {k: float(v) for k, v in out.items() if v is not None and np.isfinite(v)}
