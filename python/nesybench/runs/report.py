"""Tables, plots and exports read from a study's results store.

``table``: final metrics aggregated over repetitions (and every axis not grouped by).
``plot``: a final metric against an axis, or a stepped metric against ``step`` (curves),
one line per value of ``hue``, with the mean and a 95 % confidence band (Student t over
the cells aggregated into each point).
``export``: the store as CSV files (cells, metrics, artifacts, attempts) plus the study's
spec, rows sorted by cell id: the same spec gives the same ``cells.csv``, ``metrics.csv`` and
``artifacts.csv`` bytes under any executor and worker count (timings, hosts and every
attempt's cause are in ``attempts.csv``).

Every function here opens the store read-only. Axis values are grouped by value (``1``
and ``1.0`` are one row).
"""
from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from ..errors import NesyError
from ..io import (atomic_output_dir, atomic_output_file, check_output_file, check_output_path,
                  check_replaceable, dumps)
from .runner import Results
from .spec import value_key
from .store import Store

AGGREGATES = ("mean", "std", "median", "min", "max", "count", "sem")


def _agg(values: list[float], how: str):
    """One aggregate; ``count`` is an integer, the spread of fewer than two values NaN."""
    v = np.asarray(values, dtype=float)
    if how == "count":
        return int(len(v))
    if len(v) == 0:
        return float("nan")
    if how == "mean":
        return float(v.mean())
    if how == "std":
        return float(v.std(ddof=1)) if len(v) > 1 else float("nan")
    if how == "sem":
        return float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")
    if how == "median":
        return float(np.median(v))
    if how == "min":
        return float(v.min())
    if how == "max":
        return float(v.max())
    raise NesyError(f"unknown aggregate {how!r} (choose from {', '.join(AGGREGATES)})")


def _axes_of(study: Results) -> list[str]:
    return list(study.spec().get("axes", {}))


def table(study_dir, *, group_by: list[str] | None = None, metrics: list[str] | None = None,
          agg: list[str] = ("mean", "std")) -> tuple[list[str], list[list]]:
    """Aggregate final metrics: one row per combination of ``group_by`` values (default:
    every axis), columns ``cells`` (done cells), ``n_failed`` (failed cells) and
    ``<metric>_<agg>`` over the done cells. Groups appear in the spec's cell order."""
    study = Results(study_dir)
    every = study.rows(None)
    rows = [r for r in every if r["status"] == "done"]
    axes = _axes_of(study)
    group_by = list(axes if group_by is None else group_by)
    for g in group_by:
        if g not in axes and g != "rep":
            raise NesyError(f"unknown axis {g!r} to group by (axes: {', '.join(axes) or 'none'})",
                            file=str(study_dir))
    for a in agg:
        if a not in AGGREGATES:
            raise NesyError(f"unknown aggregate {a!r} (choose from {', '.join(AGGREGATES)})")
    fixed = set(axes) | {"cell_id", "rep", "seed", "status", "seconds"}
    found = sorted({k for r in rows for k in r if k not in fixed})
    metrics = found if metrics is None else list(metrics)
    for m in metrics:
        if m not in found and m != "seconds":
            raise NesyError(f"unknown metric {m!r} (metrics: {', '.join(found) or 'none yet'})",
                            file=str(study_dir))
    groups: dict[tuple, list[dict]] = defaultdict(list)
    n_failed: dict[tuple, int] = defaultdict(int)
    first: dict[tuple, dict] = {}
    order: list[tuple] = []
    for r in every:
        if r["status"] not in ("done", "failed"):
            continue
        key = tuple(value_key(r.get(g)) for g in group_by)
        if key not in first:
            order.append(key)
            first[key] = r
        if r["status"] == "done":
            groups[key].append(r)
        else:
            n_failed[key] += 1
    header = group_by + ["cells", "n_failed"] + [f"{m}_{a}" for m in metrics for a in agg]
    out = []
    for key in order:
        members = groups[key]
        row = [first[key].get(g) for g in group_by] + [len(members), n_failed[key]]
        for m in metrics:
            vals = [r[m] for r in members if r.get(m) is not None]
            row += [_agg(vals, a) for a in agg]
        out.append(row)
    return header, out


def format_table(header: list[str], rows: list[list], digits: int = 4) -> str:
    """A plain-text table with aligned columns."""
    def fmt(v):
        if isinstance(v, float):
            if math.isnan(v):
                return "nan"
            return f"{v:.{digits}g}" if abs(v) >= 1e5 or (v != 0 and abs(v) < 1e-3) \
                else f"{v:.{digits}f}"
        return str(v)
    cells = [[fmt(v) for v in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def _ci(values: np.ndarray) -> tuple[float, float]:
    """Mean and half-width of the 95 % Student-t confidence interval."""
    from scipy import stats  # noqa: PLC0415

    n = len(values)
    mean = float(values.mean())
    if n < 2:
        return mean, 0.0
    half = float(stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / math.sqrt(n))
    return mean, half


def plot(study_dir, *, x: str, y: str, hue: str | None = None, out=None,
         title: str | None = None, overwrite: bool = False) -> Path:
    """Draw ``y`` against ``x`` (an axis, or ``step`` for curves) with 95 % CI bands.

    Writes exactly ``out`` (PNG, SVG or PDF by suffix), which must not exist unless
    ``overwrite``; the default ``<study>/plots/<y>_vs_<x>.png`` is refreshed on every run."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    study = Results(study_dir)
    axes = _axes_of(study)
    if x != "step" and x not in axes:
        raise NesyError(f"unknown x axis {x!r} (axes: {', '.join(axes)}, or step)",
                        file=str(study_dir))
    if hue is not None and hue not in axes:
        raise NesyError(f"unknown hue axis {hue!r} (axes: {', '.join(axes)})",
                        file=str(study_dir))
    given = out is not None
    out = Path(out) if out else Path(study_dir) / "plots" / f"{y}_vs_{x}.png"
    if out.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise NesyError("the plot file must end in .png, .svg or .pdf", file=str(out))
    if given:
        check_output_file(out, overwrite=overwrite,
                          inputs=[Path(study_dir) / "results.sqlite"])
    else:
        check_output_path(out)
    if x == "step":
        pts = [(r["step"], r.get(hue) if hue else None, r["value"])
               for r in study.curves(y)]
    else:
        pts = [(r[x], r.get(hue) if hue else None, r[y]) for r in study.rows("done")
               if r.get(y) is not None]
    if not pts:
        raise NesyError(f"no values of metric {y!r}" + (" with steps" if x == "step" else ""),
                        file=str(study_dir))
    series: dict = defaultdict(lambda: defaultdict(list))
    for xv, hv, yv in pts:
        series[value_key(hv)][value_key(xv)].append(yv)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    numeric_x = all(isinstance(p[0], (int, float)) and not isinstance(p[0], bool) for p in pts)
    for hkey in sorted(series):
        xs_keys = list(series[hkey])
        xs = [json.loads(k) for k in xs_keys]
        if numeric_x:
            order = np.argsort(xs)
            xs_keys = [xs_keys[i] for i in order]
            xs = [xs[i] for i in order]
        stats_ = [_ci(np.asarray(series[hkey][k], dtype=float)) for k in xs_keys]
        means = np.array([s[0] for s in stats_])
        half = np.array([s[1] for s in stats_])
        xpos = np.asarray(xs, dtype=float) if numeric_x else np.arange(len(xs))
        label = f"{hue} = {json.loads(hkey)}" if hue else None
        line, = ax.plot(xpos, means, marker="o", ms=3, label=label)
        ax.fill_between(xpos, means - half, means + half, alpha=0.2, color=line.get_color())
        if not numeric_x:
            ax.set_xticks(xpos, [str(v) for v in xs], rotation=30, ha="right")
    if numeric_x and all(isinstance(p[0], int) for p in pts):
        from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(title or f"{study.spec().get('study', '')}: {y} vs {x} (mean, 95% CI)")
    ax.grid(alpha=0.3)
    if hue:
        ax.legend(fontsize=8)
    fig.tight_layout()
    if not given:
        out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_output_file(out, overwrite=overwrite or not given) as tmp:
            fig.savefig(tmp)
    finally:
        plt.close(fig)
    return out


def export(study_dir, dest, *, overwrite: bool = False) -> list[Path]:
    """Write ``cells.csv``, ``metrics.csv``, ``artifacts.csv``, ``attempts.csv`` and
    ``study.json`` into the folder ``dest``, which appears whole or not at all
    (:func:`nesybench.io.atomic_output_dir`). An existing ``dest`` is replaced only with
    ``overwrite`` and only when it holds nothing but a previous export's files (a user's file
    there is named and nothing is deleted). Rows are sorted by cell id."""
    check_replaceable(dest, overwrite=overwrite, inputs=[study_dir])    # before the work
    store = Store.open(study_dir, readonly=True)
    try:
        study = store.study()
        cells = store.cells(by_id=True)
        metric_rows = store.metric_rows(by_id=True)
        art = store.artifact_rows()
        attempts = store.attempts()
    finally:
        store.close()
    dest = Path(dest)
    axes = list(study["spec"].get("axes", {}))
    names = []
    by_id = {c["cell_id"]: c for c in cells}

    with atomic_output_dir(dest, overwrite=overwrite, inputs=[study_dir]) as tmp:
        def write(name, header, rows):
            with open(tmp / name, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(header)
                w.writerows(rows)
            names.append(name)

        write("cells.csv", ["cell_id", *axes, "rep", "seed", "status", "error"],
              [[c["cell_id"], *(_csv(c["axes"].get(a)) for a in axes), c["rep"], c["seed"],
                c["status"], (c["error"] or "") if c["status"] == "failed" else ""]
               for c in cells])
        write("metrics.csv", ["cell_id", *axes, "rep", "name", "step", "value"],
              [[cid, *(_csv(by_id[cid]["axes"].get(a)) for a in axes), by_id[cid]["rep"], n,
                "" if s is None else s, v] for cid, n, s, v in metric_rows])
        write("artifacts.csv", ["cell_id", "path", "sha256", "bytes"], [list(r) for r in art])
        write("attempts.csv", ["cell_id", "attempt", "status", "started", "finished",
                               "seconds", "host", "pid", "error"],
              [[a["cell_id"], a["attempt"], a["status"], a["started"], a["finished"],
                None if a["started"] is None or a["finished"] is None
                else a["finished"] - a["started"], a["host"], a["pid"], a["error"] or ""]
               for a in attempts])
        (tmp / "study.json").write_text(dumps(study), encoding="utf-8")
        names.append("study.json")
    return [dest / n for n in names]


def _csv(v):
    return json.dumps(v) if isinstance(v, (list, dict)) else v


def failure_lines(fails: list[dict], total: int, unit: str = "cell",
                  with_seed: bool = False) -> list[str]:
    """What a command prints when some of its cells failed: one line per failed cell (its
    id, axes and the last line of its error), then ``k of n <unit>s failed: <the first five>``.
    Empty when nothing failed. ``unit`` names a cell as the command's user knows it (a KANDY
    training is a "run")."""
    if not fails:
        return []
    out = []
    for f in fails:
        axes = ", ".join(f"{k}={v}" for k, v in (f.get("axes") or {}).items())
        last = (f.get("error") or "").strip().splitlines()[-1:] or ["error"]
        seed = f", seed {f.get('seed')}" if with_seed else ""
        out.append(f"{unit} {f['cell_id']} ({axes}{seed}) failed: {last[0]}")
    names = "; ".join(
        ", ".join(f"{k}={v}" for k, v in (f.get("axes") or {}).items()) or f["cell_id"]
        for f in fails[:5])
    more = f"; and {len(fails) - 5} more" if len(fails) > 5 else ""
    out.append(f"{len(fails)} of {total} {unit}s failed: {names}{more}")
    return out
