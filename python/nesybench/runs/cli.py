"""``nesybench runs``: start, resume and inspect sweeps; tables, plots and exports."""
from __future__ import annotations

import csv
import functools
import io
import json
import sqlite3
import sys

import click

from ..clitypes import ShippedFile, quiet_option
from ..errors import NesyError
from ..io import dumps

CTX = {"help_option_names": ["-h", "--help"]}


def _executor_options(f):
    f = click.option("--executor", "-e", type=click.Choice(["local", "ray", "inline"]),
                     default="local", show_default=True,
                     help="local process pool, a Ray cluster (or a local Ray), or in-process")(f)
    f = click.option("--workers", "-j", type=int, default=None,
                     help="processes (local) or CPUs of a local Ray instance "
                          "[default: the machine's cores]")(f)
    f = click.option("--address", default=None, metavar="HOST:PORT",
                     help="Ray cluster to join (ray executor; default: start a local one)")(f)
    f = click.option("--threads", type=int, default=1, show_default=True,
                     help="torch/BLAS threads per cell (fixed so numbers do not depend on "
                          "the worker count)")(f)
    f = click.option("--fail-fast", is_flag=True, help="stop at the first failing cell")(f)
    f = click.option("--no-retry-failed", is_flag=True,
                     help="do not re-run cells that failed before")(f)
    f = click.option("--cell-timeout", type=float, default=None, metavar="SECONDS",
                     help="kill a cell's process after this long and record it failed "
                          "[default: the spec's timeout, else none]")(f)
    f = click.option("--max-attempts", type=int, default=None, metavar="N",
                     help="run a failing cell up to N times in all in this run "
                          "[default: the spec's max_attempts, else 1]")(f)
    f = click.option("--quiet", "-q", is_flag=True, help="no progress bar")(f)
    f = click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")(f)
    f = click.option("--allow-commands", is_flag=True,
                     help="run the shell learners (system: cmd, a command at any depth) and "
                          "learner Prolog files (aleph) the spec or study names; refused "
                          "otherwise: a spec or study from someone else would run code")(f)
    return f


def _interrupted(study) -> None:
    """Ctrl-C / SIGTERM: finished cells are in the store; say how to go on, then let the
    top-level command turn the interrupt into exit 130 / 143."""
    click.echo(f"nesybench: interrupted; finished cells are saved, continue with "
               f"`nesybench runs resume {study}`", err=True)


def _boundary(fn):
    """OS errors (full disk, read-only file system, permissions) and SQLite's own file
    errors become one line and exit 2, like bad input."""
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        from .runner import _os_error  # noqa: PLC0415
        from .store import store_error  # noqa: PLC0415

        try:
            return fn(*a, **kw)
        except OSError as exc:
            raise _os_error(exc, kw.get("study") or kw.get("out") or "") from None
        except sqlite3.OperationalError as exc:
            raise store_error(exc, kw.get("study") or kw.get("out") or "") from None
    return wrapper


def _summary(res, as_json: bool) -> None:
    s = res.summary
    obj = {"study": s.study, "path": s.path, "executor": s.executor, "cells": s.total,
           "ran": s.ran, "done": s.done, "failed": s.failed, "skipped_done": s.skipped,
           "seconds": round(s.seconds, 3)}
    if as_json:
        click.echo(dumps(obj), nl=False)
    else:
        click.echo(f"{s.study}: {s.ran} cells run ({s.done} done, {s.failed} failed), "
                   f"{s.skipped} already done, {s.total} in the study [{s.executor}, "
                   f"{s.seconds:.1f} s] -> {s.path}")
        if s.failed:
            click.echo(f"  see the errors with `nesybench runs status {s.path} --failed`")
    if s.failed:                    # some cell failed: the command did not fully succeed
        click.get_current_context().exit(1)


@click.group(context_settings=CTX)
def group():
    """Sweeps and results: run grids of cells (local processes or Ray) into a SQLite store.

    \b
    start   run a grid spec (YAML) into a study folder
    resume  run what a killed or failed sweep left undone
    status  counts by status, ETA, failures
    table   final metrics aggregated over repetitions
    plot    a metric against an axis (or step) with 95% CI bands
    export  the store as CSV files
    """


@group.command(context_settings=CTX)
@click.argument("spec", type=ShippedFile("sweep"))
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
              help="study folder (created; an existing study of the same spec is extended)")
@click.option("--force-new", is_flag=True,
              help="replace a different study that is already in --out")
@_executor_options
@_boundary
def start(spec, out, force_new, executor, workers, address, threads, fail_fast,
          no_retry_failed, cell_timeout, max_attempts, quiet, as_json, allow_commands):
    """Run every cell of SPEC (a grid spec file, or a shipped one's name: toy, xor_counts) that
    is not done yet into the study folder --out.

    SPEC's function is a registered run function (built-in or an installed entry point of
    nesybench.cells); a spec never names a module to import. Shell learners and learner
    Prolog files in its parameters run only with --allow-commands.

    Exit status: 0 when every cell run is done, 1 when some cell failed (recorded with its
    cause; `runs resume` runs it again), 2 for bad input or an OS error."""
    from .runner import run_grid  # noqa: PLC0415

    try:
        res = run_grid(spec, out, executor=executor, workers=workers, address=address,
                       fail_fast=fail_fast, force_new=force_new,
                       retry_failed=not no_retry_failed, threads=threads,
                       progress=not (quiet or as_json), cell_timeout=cell_timeout,
                       max_attempts=max_attempts, allow_commands=allow_commands)
    except KeyboardInterrupt:
        _interrupted(out)
        raise
    _summary(res, as_json)


@group.command(context_settings=CTX)
@click.argument("study", type=click.Path(file_okay=False))
@_executor_options
@_boundary
def resume(study, executor, workers, address, threads, fail_fast, no_retry_failed,
           cell_timeout, max_attempts, quiet, as_json, allow_commands):
    """Run the cells of STUDY that are not done (queued, interrupted, and failed ones
    unless --no-retry-failed). Exit status as for `start`.

    Only registered run functions are called; a study that runs shell learners or learner
    Prolog files needs --allow-commands again on each resume."""
    from .runner import resume as do_resume  # noqa: PLC0415

    try:
        res = do_resume(study, executor=executor, workers=workers, address=address,
                        fail_fast=fail_fast, retry_failed=not no_retry_failed,
                        threads=threads, progress=not (quiet or as_json),
                        cell_timeout=cell_timeout, max_attempts=max_attempts,
                        allow_commands=allow_commands)
    except KeyboardInterrupt:
        _interrupted(study)
        raise
    _summary(res, as_json)


@group.command(context_settings=CTX)
@click.argument("study", type=click.Path(file_okay=False))
@click.option("--workers", "-j", type=int, default=1, show_default=True,
              help="workers the ETA assumes")
@click.option("--failed", "show_failed", is_flag=True, help="print each failed cell's error")
@click.option("--json", "as_json", is_flag=True)
@_boundary
@quiet_option
def status(study, workers, show_failed, as_json, quiet):
    """Counts of cells by status, whether the study is running (pid) or was interrupted,
    and an ETA for the rest."""
    from .runner import Results, status as get_status  # noqa: PLC0415

    st = get_status(study)
    if workers < 1:
        raise NesyError(f"--workers must be >= 1, got {workers}")
    eta = st["eta_seconds_one_worker"]
    st["eta_seconds"] = None if eta is None else eta / workers
    if show_failed:
        st["failures"] = [{"cell_id": c["cell_id"], "axes": c["axes"], "rep": c["rep"],
                           "error": c["error"], "attempts": [
                               {"attempt": a["attempt"], "error": a["error"]}
                               for a in c["attempts_log"]]}
                          for c in Results(study).failures()]
    if as_json:
        click.echo(dumps(st), nl=False)
        return
    left = st["queued"] + st["running"] + st["failed"]
    eta_txt = "unknown" if st["eta_seconds"] is None else f"{st['eta_seconds']:.0f} s"
    state = f"running (pid {st['pid']})" if st["state"] == "running" else st["state"]
    click.echo(f"{st['study']}: {state}; {st['done']}/{st['total']} done, "
               f"{st['failed']} failed, {st['queued']} queued, {st['running']} "
               f"{'running' if st['state'] == 'running' else 'interrupted'}; "
               f"{left} left, ETA {eta_txt} with {workers} worker(s)")
    for f in st.get("failures", []):
        click.echo(f"  {f['cell_id']} {json.dumps(f['axes'])} rep {f['rep']}: "
                   f"{_cause(f['error'])}")


def _cause(error: str | None) -> str:
    """One line of a failure: a traceback's last line, or a crash's first line."""
    lines = (error or "").strip().splitlines()
    if not lines:
        return "?"
    return lines[-1] if lines[0].startswith("Traceback") else lines[0]


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not parts:
        raise NesyError(f"empty list {value!r}")
    return parts


@group.command(context_settings=CTX)
@click.argument("study", type=click.Path(file_okay=False))
@click.option("--group-by", "-g", default=None, metavar="AXIS,...",
              help="axes to group by [default: every axis]; '' for one row")
@click.option("--metric", "-m", default=None, metavar="NAME,...",
              help="final metrics to show [default: all]")
@click.option("--agg", default="mean,std", show_default=True,
              help="aggregates: mean, std, sem, median, min, max, count")
@click.option("--csv", "as_csv", is_flag=True, help="CSV on stdout")
@click.option("--json", "as_json", is_flag=True, help="JSON rows on stdout")
@_boundary
@quiet_option
def table(study, group_by, metric, agg, as_csv, as_json, quiet):
    """Final metrics of STUDY aggregated over repetitions (and the axes not grouped by)."""
    from .report import format_table, table as make_table  # noqa: PLC0415

    gb = [] if group_by == "" else _split(group_by)
    header, rows = make_table(study, group_by=gb, metrics=_split(metric), agg=_split(agg))
    if as_json:
        click.echo(dumps([dict(zip(header, r)) for r in rows]), nl=False)
    elif as_csv:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(header)
        w.writerows(rows)
        click.echo(buf.getvalue(), nl=False)
    else:
        click.echo(format_table(header, rows))


@group.command(context_settings=CTX)
@click.argument("study", type=click.Path(file_okay=False))
@click.option("--x", "x", required=True, help="an axis, or 'step' for curves")
@click.option("--y", "y", required=True, help="a metric")
@click.option("--hue", default=None, help="an axis: one line per value")
@click.option("--out", "-o", default=None, type=click.Path(dir_okay=False),
              help="PNG/SVG/PDF file, written at exactly this path "
                   "[default: STUDY/plots/<y>_vs_<x>.png, refreshed on every run]")
@click.option("--overwrite", is_flag=True, help="replace an existing --out file")
@_boundary
@quiet_option
def plot(study, x, y, hue, out, overwrite, quiet):
    """Plot metric Y against X with the mean and a 95% confidence band."""
    from .report import plot as make_plot  # noqa: PLC0415

    path = make_plot(study, x=x, y=y, hue=hue, out=out, overwrite=overwrite)
    click.echo(f"wrote {path}")


@group.command(context_settings=CTX)
@click.argument("study", type=click.Path(file_okay=False))
@click.option("--out", "-o", "--csv", "dest", required=True,
              type=click.Path(file_okay=False),
              help="folder for cells.csv, metrics.csv, artifacts.csv, attempts.csv, "
                   "study.json (--csv: the same, its former name)")
@click.option("--overwrite", is_flag=True,
              help="replace --out when it holds only a previous export's files")
@_boundary
@quiet_option
def export(study, dest, overwrite, quiet):
    """Export the results store of STUDY as CSV files into the folder --out."""
    from .report import export as do_export  # noqa: PLC0415

    paths = do_export(study, dest, overwrite=overwrite)
    click.echo("wrote " + ", ".join(str(p) for p in paths))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(group())
