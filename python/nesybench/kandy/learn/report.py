"""Tables and figures from a KANDY study (a sweep-runner study folder).

* :func:`table1` — neural runs (``kandy.train``): one row per (model, setting), mean ± sd over
  seeds of the average accuracy at the end of learning (paper Table 1), plus the plain
  ("micro") average accuracy and, for continual settings, forgetting / BWT / FWT.
* :func:`table2` — Aleph runs (``kandy.aleph``): one row per (encoding, bk): correct theories
  / tasks, mean balanced accuracy (Table 1's symbolic rows), precision, recall, C_gt/C_lt,
  L_gt/L_lt (paper Table 2), timeouts and crashes.
* :func:`plot_study` — Figures 2-6: average accuracy over time, per-task accuracy bars,
  forgetting / BWT / FWT over time, accuracy matrices as heat maps.
"""
from __future__ import annotations

import math
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np

from ...errors import NesyError
from ...folder import DataFolder

TRAIN_FUNCS = ("kandy.train", "nesybench.kandy.learn.cells:train_cell")
ALEPH_FUNCS = ("kandy.aleph", "nesybench.kandy.learn.cells:aleph_cell")
SETTING_ORDER = ("independent", "joint", "task_incremental", "continual_online")
MODEL_ORDER = ("mlp", "cnn", "resnet50", "resnet50_h", "vit", "vit_b16", "vit_h")


def open_study(path):
    """(kind, Study) of a study folder; kind is ``train`` or ``aleph``."""
    from ...runs import Study  # noqa: PLC0415

    p = Path(path)
    if not (p / "results.sqlite").is_file():
        raise NesyError("not a study folder (no results.sqlite; make one with `nesybench "
                        "kandy train` or `nesybench kandy ilp-run`)", file=str(p))
    study = Study(p)
    try:
        fn = study.spec().get("function")
    except NesyError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged store
        raise NesyError(f"cannot read the study ({exc})", file=str(p)) from None
    if fn in TRAIN_FUNCS:
        return "train", study
    if fn in ALEPH_FUNCS:
        return "aleph", study
    raise NesyError(f"not a KANDY study (run function {fn!r})", file=str(p))


def _ms(values) -> tuple[float, float, int]:
    """(mean, sample sd, n) of the defined values; the sd of fewer than two values is unknown
    (NaN), not 0."""
    v = [x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
    if not v:
        return math.nan, math.nan, 0
    return float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else math.nan, len(v)


STRATEGY_ORDER = ("-", "naive", "replay", "ewc", "ewc-online", "lwf", "agem", "der", "derpp")


def _strategy(row) -> str:
    """A run's continual-learning strategy; ``-`` for the non-continual settings, ``replay``
    for continual runs of studies made before strategies were an axis."""
    if row.get("setting") not in ("task_incremental", "continual_online"):
        return "-"
    return row.get("strategy") or "replay"


def _order(key):
    m, s = key[0], key[1]
    st = key[2] if len(key) > 2 else "-"
    return (MODEL_ORDER.index(m) if m in MODEL_ORDER else 99,
            SETTING_ORDER.index(s) if s in SETTING_ORDER else 99,
            STRATEGY_ORDER.index(st) if st in STRATEGY_ORDER else 99)


def table1(study) -> list[dict]:
    """Rows: model, setting, seeds, avg_acc (mean), avg_acc_sd (NaN for one seed),
    avg_acc_micro(_sd),
    forgetting, bwt, fwt (means; NaN when not continual), input_size, epochs/lr... as run."""
    groups: dict = defaultdict(list)
    for r in study.rows():
        groups[(r.get("model"), r.get("setting"), _strategy(r))].append(r)
    out = []
    for key in sorted(groups, key=_order):
        rows = groups[key]
        row = {"model": key[0], "setting": key[1], "strategy": key[2]}
        for k in ("avg_acc", "avg_acc_micro", "forgetting", "bwt", "fwt", "train_seconds"):
            m, sd, n = _ms([r.get(k) for r in rows])
            row[k], row[f"{k}_sd"] = m, sd
            if k == "avg_acc":
                row["seeds"] = n
        row["input_size"] = rows[0].get("input_size")
        out.append(row)
    return out


def table2(study) -> list[dict]:
    """Rows per (encoding, bk) of an Aleph study (see module docstring)."""
    groups: dict = defaultdict(list)
    for r in study.rows():
        groups[(r.get("encoding"), r.get("bk"))].append(r)
    out = []
    for (enc, bk) in sorted(groups, key=lambda k: (str(k[0]), str(k[1]))):
        rows = groups[(enc, bk)]
        row = {"encoding": enc, "bk": bk, "tasks": len(rows),
               "correct": int(sum(r.get("correct", 0) for r in rows)),
               "timed_out": int(sum(r.get("timed_out", 0) for r in rows)),
               "crashed": int(sum(r.get("crashed", 0) for r in rows))}
        for k in ("balanced_accuracy", "precision", "recall", "c_ratio", "l_ratio"):
            row[k] = _ms([r.get(k) for r in rows])[0]
        row.update(aleph_config(study))
        out.append(row)
    return out


def aleph_config(study) -> dict:
    """The run's Aleph configuration: ``timeout`` (seconds per task) and ``settings`` (the
    ``--aleph-set`` values over the supplementary's defaults, all of them)."""
    from .aleph import ALEPH_SETTINGS  # noqa: PLC0415

    try:
        params = study.spec().get("params") or {}
    except Exception:  # noqa: BLE001 - an old or damaged study: no configuration to show
        params = {}
    sett = dict(ALEPH_SETTINGS)
    sett.update(params.get("settings") or {})
    return {"timeout": params.get("timeout"), "settings": sett,
            "settings_given": dict(params.get("settings") or {})}


def aleph_task_rows(study) -> list[dict]:
    keys = ("task", "encoding", "bk", "balanced_accuracy", "precision", "recall", "c_ratio",
            "l_ratio", "correct", "timed_out", "crashed", "seconds", "timeout")
    rows = [{k: r.get(k) for k in keys} for r in study.rows()]
    return sorted(rows, key=lambda r: (str(r["encoding"]), str(r["bk"]), r["task"] or 0))


def _f(x, sd=None, digits=2, n=None) -> str:
    """``x`` (``-`` when undefined), ``± sd`` when the spread is known, ``(n=1)`` when it
    comes from a single value (its spread is unknown, not zero)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    s = f"{x:.{digits}f}"
    if sd is not None and not math.isnan(sd):
        s += f" ± {sd:.{digits}f}"
    elif n == 1:
        s += " (n=1)"
    return s


def format_table1(rows: list[dict]) -> str:
    head = (f"{'model':<11} {'setting':<17} {'strategy':<10} {'seeds':>5}  {'avg acc':>13}  "
            f"{'avg acc (micro)':>15}"
            f"  {'forgetting':>10}  {'BWT':>6}  {'FWT':>6}  {'size':>4}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['model']:<11} {r['setting']:<17} {r.get('strategy', '-'):<10} "
                     f"{r['seeds']:>5}  "
                     f"{_f(r['avg_acc'], r['avg_acc_sd'], n=r['seeds']):>13}  "
                     f"{_f(r['avg_acc_micro'], r['avg_acc_micro_sd'], n=r['seeds']):>15}  "
                     f"{_f(r['forgetting']):>10}  {_f(r['bwt']):>6}  {_f(r['fwt']):>6}  "
                     f"{_f(r['input_size'], digits=0):>4}")
    return "\n".join(lines)


def format_table2(rows: list[dict], per_task: list[dict] | None = None) -> str:
    head = (f"{'encoding':<9} {'bk':<4} {'correct':>8}  {'avg acc':>7}  {'precision':>9}  "
            f"{'recall':>6}  {'Cgt/Clt':>7}  {'Lgt/Llt':>7}  {'timeouts':>8}  {'crashes':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['encoding']:<9} {r['bk']:<4} {r['correct']:>3}/{r['tasks']:<4}  "
                     f"{_f(r['balanced_accuracy']):>7}  {_f(r['precision']):>9}  "
                     f"{_f(r['recall']):>6}  {_f(r['c_ratio']):>7}  {_f(r['l_ratio']):>7}  "
                     f"{r['timed_out']:>8}  {r['crashed']:>7}")
    if rows:
        given = rows[0].get("settings_given") or {}
        t = rows[0].get("timeout")
        lines.append(f"timeout {_f(t, digits=0) if t is not None else '-'} s per task; Aleph "
                     f"settings: " + (", ".join(f"{k}={v}" for k, v in given.items())
                                      + " (others as the supplementary)" if given
                                      else "the supplementary's"))
    if per_task:
        lines += ["", f"{'task':>4} {'encoding':<9} {'bk':<4} {'acc':>5} {'prec':>5} "
                      f"{'rec':>5} {'C':>5} {'L':>5} {'ok':>3} {'time s':>7}"]
        for r in per_task:
            flag = "T/O" if r["timed_out"] else ("ERR" if r["crashed"] else
                                                ("yes" if r["correct"] else "no"))
            lines.append(f"{r['task']:>4} {r['encoding']:<9} {r['bk']:<4} "
                         f"{_f(r['balanced_accuracy']):>5} {_f(r['precision']):>5} "
                         f"{_f(r['recall']):>5} {_f(r['c_ratio']):>5} {_f(r['l_ratio']):>5} "
                         f"{flag:>3} {_f(r['seconds'], digits=1):>7}")
    return "\n".join(lines)


def load_results(study) -> list[dict]:
    """Each done cell's ``result.json`` (A matrices ...) with its model/setting/seed."""
    out = []
    folder = DataFolder(study.path)     # the study may come from someone else: read contained
    for r in study.rows():
        rel = f"artifacts/{r['cell_id']}/result.json"
        if folder.exists(rel, field="cell_id"):
            d = _check_result(folder.read_json(rel), folder.label(rel))
            d.update(model=r.get("model"), setting=r.get("setting"), seed=r.get("seed"),
                     strategy=_strategy(r))
            out.append(d)
    return out


def _check_result(d, label: str) -> dict:
    """A training cell's ``result.json`` checked for what the figures read: ``tasks`` and
    ``times`` lists and ``A``, a (times × tasks) matrix of numbers; one error otherwise."""
    if not isinstance(d, dict):
        raise NesyError("expected a JSON object", file=label)
    tasks, times, A = d.get("tasks"), d.get("times"), d.get("A")
    if not (isinstance(tasks, list) and tasks and isinstance(times, list) and times):
        raise NesyError("expected non-empty lists 'tasks' and 'times'", file=label)
    if not (isinstance(A, list) and len(A) == len(times)
            and all(isinstance(row, list) and len(row) == len(tasks)
                    and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                            for x in row) for row in A)):
        raise NesyError(f"'A' is not a {len(times)} x {len(tasks)} matrix of numbers",
                        file=label, field="A")
    return d


def plot_study(study, out_dir) -> list[Path]:
    """Write the figures of a training study into ``out_dir``; returns the files."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    from .metrics import over_time  # noqa: PLC0415

    res = load_results(study)
    if not res:
        raise NesyError("the study has no finished training runs to plot", file=str(study.path))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups: dict = defaultdict(list)
    for d in res:
        groups[(d["model"], d["setting"], d["strategy"])].append(d)
    keys = sorted(groups, key=_order)
    tasks = res[0]["tasks"]
    if any(d["tasks"] != tasks for d in res) or any(
            d["times"] != g[0]["times"] for g in groups.values() for d in g):
        raise NesyError("the runs' result.json files name different tasks or times (a "
                        "damaged study)", file=str(study.path))
    files = []

    cont = [k for k in keys if k[1] in ("task_incremental", "continual_online")]
    if cont:
        # Fig. 2: average accuracy over time
        fig, ax = plt.subplots(figsize=(7, 4))
        for k in cont:
            curves = np.array([over_time(np.array(d["A"]))["avg_acc"] for d in groups[k]])
            m, sd = curves.mean(0), curves.std(0)
            ax.plot(range(len(m)), m, marker="o", ms=3, label=_label(k))
            ax.fill_between(range(len(m)), m - sd, m + sd, alpha=0.2)
        ax.set_xlabel("time z (last task seen)")
        ax.set_ylabel("average accuracy")
        ax.axhline(0.5, color="grey", lw=0.5, ls="--")
        ax.legend(fontsize=7)
        ax.set_title("Average accuracy over time")
        files.append(_save(fig, out / "accuracy_over_time.png", plt))
        # Fig. 4: forgetting, BWT, FWT over time
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
        for name, ax in zip(("forgetting", "bwt", "fwt"), axes):
            for k in cont:
                curves = np.array([over_time(np.array(d["A"]))[name] for d in groups[k]])
                with warnings.catch_warnings():   # z = 0 is undefined (NaN) for every seed
                    warnings.simplefilter("ignore", RuntimeWarning)
                    mean = np.nanmean(curves, 0)
                ax.plot(range(curves.shape[1]), mean, marker="o", ms=3, label=_label(k))
            ax.set_title({"forgetting": "average forgetting", "bwt": "backward transfer",
                          "fwt": "forward transfer"}[name])
            ax.set_xlabel("time z")
        axes[0].legend(fontsize=7)
        files.append(_save(fig, out / "forgetting_bwt_fwt.png", plt))
    # Fig. 3: per-task accuracy at the end
    fig, ax = plt.subplots(figsize=(max(7, len(tasks) * 0.5), 4))
    width = 0.8 / max(len(keys), 1)
    for i, k in enumerate(keys):
        final = np.array([d["A"][-1] for d in groups[k]])
        ax.bar(np.arange(len(tasks)) + i * width, final.mean(0), width,
               yerr=final.std(0) if len(final) > 1 else None, label=_label(k))
    ax.set_xticks(np.arange(len(tasks)) + 0.4 - width / 2)
    ax.set_xticklabels([str(t) for t in tasks])
    ax.set_xlabel("task")
    ax.set_ylabel("accuracy (class-balanced)")
    ax.set_ylim(0, 1)
    ax.axhline(0.5, color="grey", lw=0.5, ls="--")
    ax.legend(fontsize=7)
    ax.set_title("Per-task accuracy at the end of learning")
    files.append(_save(fig, out / "per_task_accuracy.png", plt))
    # accuracy matrices
    for k in keys:
        A = np.mean([np.array(d["A"]) for d in groups[k]], axis=0)
        fig, ax = plt.subplots(figsize=(6, max(1.6, 0.3 * A.shape[0] + 1)))
        im = ax.imshow(A, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xlabel("task j")
        ax.set_ylabel("time z")
        ax.set_xticks(range(len(tasks)))
        ax.set_xticklabels([str(t) for t in tasks], fontsize=6)
        times = groups[k][0]["times"]
        ax.set_yticks(range(len(times)))
        ax.set_yticklabels([str(t) for t in times], fontsize=6)
        fig.colorbar(im, ax=ax)
        ax.set_title(f"A[z, j]: {_label(k)} (mean of {len(groups[k])} seeds)")
        suffix = f"_{k[2]}" if k[2] not in ("-", "replay") else ""
        files.append(_save(fig, out / f"A_{k[0]}_{k[1]}{suffix}.png", plt))
    return files


def _label(key) -> str:
    return " ".join(k for k in key if k != "-")


def _save(fig, path: Path, plt) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
