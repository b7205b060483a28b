"""Concept-quality metrics (rsbench paper §3.4 and Appendix B.2).

* label / concept accuracy, macro-F1 (and micro-F1 for multilabel label vectors);
* per-concept confusion matrices (true value x predicted value) and the per-world confusion
  matrix (true concept vector x predicted concept vector, restricted to worlds that occur);
* concept collapse, 1 - H(p) / log k for a k x k confusion matrix C (rows: true values),
  named as in the rsbench paper's Appendix B.2 (and rsbench-code):
  - relaxed: p_j ∝ 1[Σ_i C_ij > 0] (whether a predicted value is used at all);
  - hard: p_j ∝ Σ_i C_ij / Σ_j' C_ij' (column mass of the row-normalised matrix: penalises
    the disproportion with which values are predicted, every true value weighing the same).
  0 = every value used evenly, 1 = a single value predicted for everything.
* plots of the confusion matrices (matplotlib, Agg backend).

Predictions file (CSV): columns ``label:<name>`` / ``pred_label:<name>`` and
``concept:<var>`` / ``pred_concept:<var>`` (the generator's ``labels.csv`` has the true columns,
a model adds the ``pred_`` ones).
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..errors import NesyError


def confusion(true, pred, values=None) -> tuple[np.ndarray, list]:
    """Confusion matrix ``C[i, j]`` = #(true = values[i], pred = values[j])."""
    true, pred = list(true), list(pred)
    if len(true) != len(pred):
        raise NesyError("true and predicted columns have different lengths")
    values = list(values) if values is not None else sorted(set(true) | set(pred), key=_k)
    ix = {v: i for i, v in enumerate(values)}
    c = np.zeros((len(values), len(values)), dtype=np.int64)
    for t, p in zip(true, pred):
        if t not in ix or p not in ix:
            raise NesyError(f"value {t if t not in ix else p!r} is not one of {values}")
        c[ix[t], ix[p]] += 1
    return c, values


def _k(v):
    return (0, float(v), "") if _num(v) else (1, 0.0, str(v))


def _num(v) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _entropy_collapse(p: np.ndarray) -> float:
    k = len(p)
    if k <= 1 or p.sum() <= 0:
        return 0.0
    q = p / p.sum()
    h = -sum(x * math.log(x) for x in q if x > 0)
    return float(1.0 - h / math.log(k))


def collapse(c: np.ndarray, version: str = "hard") -> float:
    """Concept collapse of confusion matrix ``c`` (module docstring), in [0, 1]."""
    c = np.asarray(c, dtype=float)
    if version == "relaxed":
        p = (c.sum(axis=0) > 0).astype(float)
    elif version == "hard":
        rows = c.sum(axis=1, keepdims=True)
        p = np.divide(c, rows, out=np.zeros_like(c), where=rows > 0).sum(axis=0)
    else:
        raise NesyError(f"collapse version must be 'hard' or 'relaxed', not {version!r}")
    return _entropy_collapse(p)


def macro_f1(c: np.ndarray) -> float:
    """Mean over classes with support or predictions of 2TP / (2TP + FP + FN)."""
    c = np.asarray(c, dtype=float)
    tp = np.diag(c)
    fp = c.sum(axis=0) - tp
    fn = c.sum(axis=1) - tp
    denom = 2 * tp + fp + fn
    present = denom > 0
    return float(np.mean(2 * tp[present] / denom[present])) if present.any() else 0.0


def micro_f1_multilabel(true: np.ndarray, pred: np.ndarray) -> float:
    """Micro-F1 over binary label columns (n x L arrays of 0/1)."""
    true, pred = np.asarray(true).astype(bool), np.asarray(pred).astype(bool)
    tp = float((true & pred).sum())
    fp = float((~true & pred).sum())
    fn = float((true & ~pred).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0


@dataclass
class Metrics:
    n: int
    label_accuracy: float | None = None
    label_macro_f1: float | None = None
    label_micro_f1: float | None = None
    concept_accuracy: float | None = None
    concept_macro_f1: float | None = None
    world_accuracy: float | None = None
    collapse_hard: float | None = None
    collapse_relaxed: float | None = None
    per_label: dict = field(default_factory=dict)
    per_concept: dict = field(default_factory=dict)
    world_confusion: dict = field(default_factory=dict)
    plots: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def compute(labels_true: dict, labels_pred: dict, concepts_true: dict, concepts_pred: dict,
            *, domains: dict | None = None, shared: dict | None = None) -> Metrics:
    """Metrics from columns: ``{name: list of values}`` for true/predicted labels and concepts.

    ``shared`` maps a group name to the concept columns pooled into one confusion matrix
    (e.g. all digits); collapse is reported on the pooled matrices (else per concept, averaged).
    """
    n = len(next(iter({**labels_true, **concepts_true}.values()), []))
    m = Metrics(n=n)
    if labels_true:
        accs, f1s = [], []
        for name, t in labels_true.items():
            if name not in labels_pred:
                raise NesyError(f"no predictions for label {name!r}")
            c, vals = confusion(t, labels_pred[name])
            acc = float(np.trace(c) / c.sum()) if c.sum() else 0.0
            accs.append(acc)
            f1s.append(macro_f1(c))
            m.per_label[name] = {"accuracy": acc, "macro_f1": macro_f1(c), "values": vals,
                                 "confusion": c.tolist()}
        names = list(labels_true)
        joint_t = list(zip(*[labels_true[k] for k in names]))
        joint_p = list(zip(*[labels_pred[k] for k in names]))
        m.label_accuracy = float(np.mean([a == b for a, b in zip(joint_t, joint_p)])) if n else 0.0
        m.label_macro_f1 = float(np.mean(f1s))
        binary = all(set(map(str, labels_true[k])) | set(map(str, labels_pred[k])) <= {"0", "1"}
                     for k in names)
        if len(names) > 1 and binary:
            tt = np.array([[int(x) for x in labels_true[k]] for k in names]).T
            pp = np.array([[int(x) for x in labels_pred[k]] for k in names]).T
            m.label_micro_f1 = micro_f1_multilabel(tt, pp)
    if concepts_true:
        accs, f1s, ch, cr = [], [], [], []
        pools = shared or {k: [k] for k in concepts_true}
        for group, cols in pools.items():
            t = [x for k in cols for x in concepts_true[k]]
            if any(k not in concepts_pred for k in cols):
                raise NesyError(f"no predictions for concept(s) of {group!r}")
            p = [x for k in cols for x in concepts_pred[k]]
            c, vals = confusion(t, p, (domains or {}).get(group))
            acc = float(np.trace(c) / c.sum()) if c.sum() else 0.0
            accs.append(acc)
            f1s.append(macro_f1(c))
            ch.append(collapse(c, "hard"))
            cr.append(collapse(c, "relaxed"))
            m.per_concept[group] = {"accuracy": acc, "macro_f1": f1s[-1], "values": vals,
                                    "collapse_hard": ch[-1], "collapse_relaxed": cr[-1],
                                    "confusion": c.tolist()}
        m.concept_accuracy = float(np.mean(accs))
        m.concept_macro_f1 = float(np.mean(f1s))
        m.collapse_hard = float(np.mean(ch))
        m.collapse_relaxed = float(np.mean(cr))
        names = list(concepts_true)
        wt = [",".join(map(str, w)) for w in zip(*[concepts_true[k] for k in names])]
        wp = [",".join(map(str, w)) for w in zip(*[concepts_pred[k] for k in names])]
        c, vals = confusion(wt, wp)
        m.world_accuracy = float(np.trace(c) / c.sum()) if c.sum() else 0.0
        m.world_confusion = {"worlds": vals, "confusion": c.tolist()}
    return m


def read_predictions(path) -> tuple[dict, dict, dict, dict]:
    """Read a predictions CSV (module docstring) into the four column dicts of :func:`compute`."""
    p = Path(path)
    if p.is_dir():
        p = p / "predictions.csv"
    if not p.exists():
        raise NesyError("predictions file not found", file=str(p))
    try:
        from ..folder import read_input_text  # noqa: PLC0415
        with io.StringIO(read_input_text(p), newline="") as fh:
            reader = csv.DictReader(fh)
            rows = list(reader)
            header = reader.fieldnames or []
    except UnicodeDecodeError:
        raise NesyError("predictions file is not UTF-8 text", file=str(p)) from None
    except (csv.Error, OSError) as exc:
        raise NesyError(f"cannot read the predictions CSV: {exc}", file=str(p)) from None
    if not rows:
        raise NesyError("no rows in the predictions file", file=str(p))
    if len(set(header)) != len(header):
        raise NesyError("repeated column names in the header", file=str(p), line=1)
    for i, r in enumerate(rows):
        if None in r or any(v is None for v in r.values()):
            raise NesyError(f"row has {len(r.get(None, [])) + len(header)} fields, the header "
                            f"{len(header)}" if None in r else
                            f"row has fewer fields than the header ({len(header)})",
                            file=str(p), line=i + 2)
    cols = rows[0].keys()
    out = ({}, {}, {}, {})
    prefixes = ("label:", "pred_label:", "concept:", "pred_concept:")
    for col in cols:
        for k, pre in enumerate(prefixes):
            if col.startswith(pre):
                out[k][col[len(pre):]] = [r[col] for r in rows]
    if not out[0] and not out[2]:
        raise NesyError("no label:/concept: columns in the predictions file", file=str(p))
    for k, pre in ((0, "label"), (2, "concept")):
        missing = [c for c in out[k] if c not in out[k + 1]]
        if missing:
            raise NesyError(f"column pred_{pre}:{missing[0]} is missing", file=str(p))
    return out


def plot_confusions(m: Metrics, out_dir) -> list[str]:
    """One PNG per concept group (and labels) with the row-normalised confusion matrix."""
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    items = [("concept", k, v) for k, v in m.per_concept.items()] + \
        [("label", k, v) for k, v in m.per_label.items()]
    for kind, name, info in items:
        c = np.asarray(info["confusion"], dtype=float)
        rows = c.sum(axis=1, keepdims=True)
        norm = np.divide(c, rows, out=np.zeros_like(c), where=rows > 0)
        k = len(info["values"])
        fig, ax = plt.subplots(figsize=(1.2 + 0.45 * k, 1.0 + 0.45 * k), dpi=100)
        ax.imshow(norm, cmap="Blues", vmin=0, vmax=1)
        ax.set_xticks(range(k), [str(v) for v in info["values"]], rotation=90, fontsize=7)
        ax.set_yticks(range(k), [str(v) for v in info["values"]], fontsize=7)
        ax.set_xlabel("predicted")
        ax.set_ylabel("true")
        ax.set_title(f"{kind} {name}", fontsize=9)
        fig.tight_layout()
        safe = "".join(ch if ch.isalnum() else "_" for ch in name)
        f = out_dir / f"confusion_{kind}_{safe}.png"
        fig.savefig(f)
        plt.close(fig)
        files.append(f.name)
    m.plots = files
    return files
