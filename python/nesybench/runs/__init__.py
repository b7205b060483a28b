"""Sweeps and results: one runner for every capability's grids of runs.

* :class:`GridSpec` / :func:`load_spec` — a run function, fixed parameters, axes,
  repetitions and a base seed (YAML or Python); each cell's seed derives from its own axis
  values, never from its position or its worker.
* :func:`run_grid` / :func:`resume` — run the cells not yet done under the ``local``
  process pool (default), ``ray`` or ``inline``; every finished cell is committed to the
  study's SQLite store (WAL) in one transaction, so a killed sweep resumes where it stopped.
* :class:`Study` (= :class:`Results`) — rows, curves, metrics, failures of a study;
  :mod:`nesybench.runs.report` turns them into tables, plots and CSV exports.

A run function is ``fn(params: dict, seed: int, ctx: CellContext) -> dict[str, float]``.
"""
from .cell import CellContext
from .runner import Results, RunSummary, Study, resume, run_grid, status
from .spec import Cell, GridSpec, load_spec

__all__ = ["Cell", "CellContext", "GridSpec", "Results", "RunSummary", "Study", "load_spec",
           "resume", "run_grid", "status"]
