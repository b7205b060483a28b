"""Running one cell: the context a run function sees, and the outcome shipped back.

This code runs where the cell runs (an inline call, a local worker process or a Ray
worker on another machine). It never touches the results store: it returns a
:class:`CellOutcome` (metrics, artifact bytes, timings, error text) and the driver commits
it in one transaction. That is what lets Ray workers on other hosts run cells without a
shared file system, and what makes a killed sweep lose at most its running cells.
"""
from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

#: artifacts larger than this (all files of one cell together) are an error of that cell
MAX_ARTIFACT_BYTES = 512 * 1024 * 1024


@dataclass
class CellTask:
    """What a worker needs to run one cell (picklable)."""

    function: str          # module:function
    cell_id: str
    params: dict
    seed: int
    threads: int = 1


@dataclass
class CellOutcome:
    cell_id: str
    status: str                     # "done" or "failed"
    final: dict = field(default_factory=dict)          # name -> value (step NULL)
    curves: list = field(default_factory=list)         # (name, step, value)
    artifacts: dict = field(default_factory=dict)      # relative path -> bytes
    error: str | None = None
    started: float = 0.0
    finished: float = 0.0
    host: str = ""
    pid: int = 0


class CellContext:
    """Handed to a run function as its third argument.

    Attributes: ``cell_id``, ``params``, ``seed``, ``artifact_dir`` (a private folder; files
    registered with :meth:`add_artifact` are kept with the cell in the study).
    """

    def __init__(self, cell_id: str, params: dict, seed: int, artifact_dir: Path):
        self.cell_id = cell_id
        self.params = params
        self.seed = seed
        self.artifact_dir = Path(artifact_dir)
        self._curves: list[tuple[str, int | None, float]] = []
        self._artifacts: list[Path] = []

    def log(self, name: str, value: float, step: int | None = None) -> None:
        """Record one metric value; ``step`` (epoch, iteration, level...) makes curves."""
        self._curves.append((str(name), None if step is None else int(step), float(value)))

    def log_many(self, values: dict, step: int | None = None) -> None:
        for name, value in values.items():
            self.log(name, value, step)

    def add_artifact(self, path) -> None:
        """Keep ``path`` (a file under :attr:`artifact_dir`) with the cell's results."""
        path = Path(path).resolve()
        if self.artifact_dir.resolve() not in path.parents:
            raise ValueError(f"artifact {path} is not under the cell's artifact_dir")
        self._artifacts.append(path)


def _prepare_torch(seed: int, threads: int) -> None:
    """Same numbers whatever the worker count: fixed thread count and seed per cell."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    torch.manual_seed(seed % (2 ** 63))
    torch.set_num_threads(max(1, threads))


def execute(task: CellTask) -> CellOutcome:
    """Run one cell and capture everything it produced; never raises for a cell's error."""
    from .registry import resolve  # noqa: PLC0415

    out = CellOutcome(cell_id=task.cell_id, status="failed", started=time.time(),
                      host=socket.gethostname(), pid=os.getpid())
    tmp = Path(tempfile.mkdtemp(prefix=f"nesybench-cell-{task.cell_id}-"))
    ctx = CellContext(task.cell_id, dict(task.params), task.seed, tmp)
    try:
        fn = resolve(task.function)
        _prepare_torch(task.seed, task.threads)
        final = fn(dict(task.params), task.seed, ctx)
        if final is None:
            final = {}
        if not isinstance(final, dict):
            raise TypeError(f"a run function returns a dict of final metrics, got "
                            f"{type(final).__name__}")
        out.final = {str(k): float(v) for k, v in final.items()}
        total = 0
        for path in ctx._artifacts:
            data = path.read_bytes()
            total += len(data)
            if total > MAX_ARTIFACT_BYTES:
                raise ValueError(f"the cell's artifacts exceed {MAX_ARTIFACT_BYTES} bytes")
            out.artifacts[path.relative_to(tmp.resolve()).as_posix()] = data
        out.curves = ctx._curves
        out.status = "done"
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - a cell's failure is data, not a crash
        out.error = traceback.format_exc()
        out.curves = ctx._curves
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        out.finished = time.time()
    return out


def _worker_init(threads: int) -> None:
    """Process-pool initializer: cap BLAS/OpenMP threads before any numeric import."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(max(1, threads))
