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
import signal
import socket
import sys
import tempfile
import threading
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
    timeout: float | None = None    # seconds; the cell's process is killed at the limit
    scratch: str | None = None      # the cell's scratch folder (made here when None)
    attempt: int = 1


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
    if task.scratch:
        tmp = Path(task.scratch)
        tmp.mkdir(parents=True, exist_ok=True)
    else:

        tmp = Path(tempfile.mkdtemp(prefix=scratch_prefix(task.cell_id)))
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
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    except CellTimeout as exc:
        out.error = f"timed out after {exc.seconds:g} s"
        out.curves = ctx._curves
    except BaseException:  # noqa: BLE001 - a cell's failure is data, not a crash
        out.error = traceback.format_exc()
        out.curves = ctx._curves
    finally:
        out.finished = time.time()
    if out.status == "done":
        shutil.rmtree(tmp, ignore_errors=True)
    else:

        kept = keep_or_remove_scratch(tmp)
        if kept:
            out.error = out.error.rstrip("\n") + f"\nscratch folder kept: {kept}"
    return out


#: scratch folders of cells are ``<system temp>/nesybench-cell-<cell id>-<random>``
SCRATCH_PREFIX = "nesybench-cell-"


class CellTimeout(BaseException):
    """Raised in a cell run in the driver's own thread (inline executor) at its limit."""

    def __init__(self, seconds: float):
        super().__init__(seconds)
        self.seconds = seconds


def execute_inline(task: CellTask) -> CellOutcome:
    """:func:`execute` in this process; a time limit interrupts the cell with SIGALRM where
    that is possible (main thread, POSIX), which stops Python code but not a native call."""
    if not task.timeout or not hasattr(signal, "setitimer") or \
            threading.current_thread() is not threading.main_thread():
        return execute(task)

    def on_alarm(signum, frame):
        raise CellTimeout(task.timeout)

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, task.timeout)
    try:
        return execute(task)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _worker_init(threads: int) -> None:
    """Process-pool initializer: cap BLAS/OpenMP threads before any numeric import."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(max(1, threads))


def keep_or_remove_scratch(path) -> str | None:
    """A failed cell's scratch folder is kept when the cell left files in it, renamed
    ``nesybench-failed-cell-*`` (its path goes into the failure record); an empty one is
    removed."""
    if not path:
        return None
    p = Path(path)
    try:
        if p.is_dir() and any(p.iterdir()):
            kept = p.with_name(p.name.replace("nesybench-cell-", "nesybench-failed-cell-", 1))
            os.rename(p, kept)
            return str(kept)
    except OSError:
        pass
    shutil.rmtree(p, ignore_errors=True)
    return None


def scratch_prefix(cell_id: str) -> str:
    """``nesybench-cell-<cell>-p<pid of the process that made it>-``: a folder whose maker
    died (a driver killed with SIGKILL) is found and removed by the next sweep."""
    return f"nesybench-cell-{cell_id}-p{os.getpid()}-"
