"""Executors: where cells run. ``inline`` (this process), ``local`` (worker processes
that this driver owns, the default) and ``ray`` (a Ray cluster, or a local Ray instance).
All run the same :func:`nesybench.runs.cell.execute` on the same :class:`CellTask` and
give the same :class:`CellOutcome`; only the placement differs.

The driver hands cells over with :meth:`Executor.submit` while :meth:`Executor.has_room`
and takes outcomes back with :meth:`Executor.next_outcome`. A cell whose process dies
(any signal or exit) or runs past its time limit comes back as a *failed* outcome with the
cause; the executor replaces the process and goes on.
"""
from __future__ import annotations

import os
import select
import shutil
import tempfile
import time

from ..errors import NesyError
from ..parallel import default_workers, ray_init
from .cell import CellOutcome, CellTask, execute_inline
from .cell import scratch_prefix
from .worker import WorkerProcess, describe_exit, remove_abandoned_scratch

EXECUTORS = ("local", "ray", "inline")


class Executor:
    """Runs cells; outcomes come back in any order."""

    name = "?"

    def has_room(self) -> bool:
        raise NotImplementedError

    def busy(self) -> bool:
        """Whether some submitted cell has not come back yet."""
        raise NotImplementedError

    def submit(self, task: CellTask) -> None:
        raise NotImplementedError

    def next_outcome(self) -> CellOutcome:
        """Block until one submitted cell has finished, failed, crashed or timed out."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    def abort(self) -> None:
        """Stop at once (interrupt): running cells are dropped, not awaited."""
        self.close()


class InlineExecutor(Executor):
    name = "inline"

    def __init__(self, threads: int = 1):
        self.threads = threads
        self._queue: list[CellTask] = []
        remove_abandoned_scratch()

    def has_room(self):
        return not self._queue

    def busy(self):
        return bool(self._queue)

    def submit(self, task):
        self._queue.append(task)

    def next_outcome(self):
        return execute_inline(self._queue.pop(0))


def _scratch_for(task: CellTask) -> CellTask:
    """The driver makes each local cell's scratch folder, so that it can remove it (or keep
    it for a failed cell) whatever happens to the worker."""
    task.scratch = tempfile.mkdtemp(prefix=scratch_prefix(task.cell_id))
    return task


class LocalExecutor(Executor):
    """``workers`` worker processes, one cell each at a time. A worker that dies is
    replaced; its cell is recorded failed with the cause, the others run on."""

    name = "local"

    def __init__(self, workers: int | None = None, threads: int = 1):
        self.workers = workers or default_workers()
        self.threads = threads
        remove_abandoned_scratch()
        self.pool: list[WorkerProcess] = [WorkerProcess(threads) for _ in range(self.workers)]

    def _idle(self) -> WorkerProcess | None:
        return next((w for w in self.pool if w.task is None), None)

    def has_room(self):
        return self._idle() is not None

    def busy(self):
        return any(w.task is not None for w in self.pool)

    def _replace(self, w: WorkerProcess) -> None:
        self.pool[self.pool.index(w)] = WorkerProcess(self.threads)

    def submit(self, task):
        w = self._idle()
        if not w.submit(_scratch_for(task)):        # died while idle: a fresh one
            w.reap()
            self._replace(w)
            w = self._idle()
            if not w.submit(task):
                w.reap()
                self._replace(w)
                raise NesyError("cannot start a worker process: "
                                f"{describe_exit(w.proc.returncode)}")

    def next_outcome(self):
        while True:
            running = [w for w in self.pool if w.task is not None]
            if not running:
                raise RuntimeError("next_outcome with no cell running")
            deadlines = [w.deadline for w in running if w.deadline is not None]
            wait = None if not deadlines else max(0.0, min(deadlines) - time.time())
            ready, _, _ = select.select([w.fileno for w in running], [], [], wait)
            for w in running:
                if w.fileno in ready:
                    out = w.receive()
                    if out is not None:
                        w.task = None
                        return out
                    rc = w.reap()
                    self._replace(w)
                    return w.failed_outcome(f"worker process {describe_exit(rc)}")
            now = time.time()
            for w in running:
                if w.deadline is not None and now >= w.deadline:
                    w.kill()
                    w.reap()
                    self._replace(w)
                    return w.failed_outcome(f"timed out after {w.task.timeout:g} s")

    def close(self):
        for w in self.pool:
            w.close()

    def abort(self):
        for w in self.pool:
            w.kill()
        for w in self.pool:
            w.reap(timeout=5.0)
            if w.task is not None:          # re-queued by the next run: nothing to keep
                shutil.rmtree(w.task.scratch, ignore_errors=True)
                w.task = None


#: one persistent cell process per Ray worker process (see worker.run_isolated)
_RAY_STATE: dict = {}


def ray_cell(task: CellTask) -> CellOutcome:
    """A Ray task: the cell runs in a child process of the Ray worker, so that a crash or a
    timeout of the cell is recorded with its cause like under the local executor. Its
    ``host`` names the Ray node too (``HOSTNAME (ray node NODE_ID)``): two nodes may share a
    hostname (containers, one machine's several raylets)."""
    from .worker import run_isolated  # noqa: PLC0415

    outcome = run_isolated(task, _RAY_STATE)
    node = _ray_node_id()
    if node and "(ray node " not in (outcome.host or ""):
        outcome.host = f"{outcome.host} (ray node {node})".lstrip()
    return outcome


def _ray_node_id() -> str:
    """The id of the Ray node this worker runs on ('' outside Ray)."""
    try:
        import ray  # noqa: PLC0415

        return ray.get_runtime_context().get_node_id() or ""
    except Exception:  # noqa: BLE001 - not in a Ray worker
        return ""


def parse_bytes(value, field: str = "resources.memory") -> int:
    """``2GB``, ``512 MiB``, ``1.5e9`` -> bytes."""
    if isinstance(value, bool):
        raise NesyError(f"must be a size such as 2GB, got {value!r}", field=field)
    if isinstance(value, (int, float)):
        if value <= 0:
            raise NesyError(f"must be > 0, got {value!r}", field=field)
        return int(value)
    import re  # noqa: PLC0415

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(i?)B?\s*", str(value), re.IGNORECASE)
    if not m or float(m.group(1)) <= 0:
        raise NesyError(f"must be a size such as 2GB or 512MiB, got {value!r}", field=field)
    power = "KMGT".find(m.group(2).upper()) + 1 if m.group(2) else 0
    base = 1024 if m.group(3) else 1000
    return int(float(m.group(1)) * base ** power)


class RayExecutor(Executor):
    """Ray tasks, one per cell, with the spec's ``resources`` (default one CPU). With no
    ``address`` a local Ray instance with ``workers`` CPUs is started; with one, the
    cluster's scheduler places the cells."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None,
                 threads: int = 1, resources: dict | None = None, quiet: bool = False):
        from .watchdog import children_of, watch_ray  # noqa: PLC0415

        before = children_of(os.getpid())
        self.ray = ray_init(address, None if address else (workers or default_workers()),
                            quiet=quiet)
        if not address:         # a local instance this driver started dies with it
            watch_ray(before)
        opts = {"num_cpus": 1, "max_retries": 0}
        for key, value in (resources or {}).items():
            opts[key] = parse_bytes(value) if key == "memory" else value
        self.remote = self.ray.remote(**opts)(ray_cell)
        cpus = max(1.0, float(opts["num_cpus"] or 1))
        self.window = max(2, int(4 * self.ray.cluster_resources().get("CPU", 1) / cpus))
        self.threads = threads
        self.pending: dict = {}         # ref -> task

    def has_room(self):
        return len(self.pending) < self.window

    def busy(self):
        return bool(self.pending)

    def submit(self, task):
        self.pending[self.remote.remote(task)] = task

    def next_outcome(self):
        done, _ = self.ray.wait(list(self.pending), num_returns=1)
        ref = done[0]
        task = self.pending.pop(ref)
        try:
            return self.ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - the Ray worker itself died or was killed
            text = str(exc).strip().splitlines()
            return CellOutcome(cell_id=task.cell_id, status="failed",
                               error=f"Ray worker died ({type(exc).__name__}): "
                                     f"{text[0] if text else ''}".rstrip(": "),
                               started=time.time(), finished=time.time())

    def close(self):
        pass    # the Ray instance stays up for further sweeps in this process

    def abort(self):
        """Cancel the running cells: first as an interrupt (the task stops its cell process
        and removes its scratch folder), then by force for what is still running."""
        refs = list(self.pending)
        self.pending.clear()
        for ref in refs:
            try:
                self.ray.cancel(ref, force=False)
            except Exception:  # noqa: BLE001 - already finished or gone
                pass
        try:
            _, left = self.ray.wait(refs, num_returns=len(refs), timeout=5.0)
        except Exception:  # noqa: BLE001
            left = refs
        for ref in left:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001
                pass


def make_executor(name: str = "local", *, workers: int | None = None,
                  address: str | None = None, threads: int = 1,
                  resources: dict | None = None, quiet: bool = False) -> Executor:
    if workers is not None and workers < 0:
        raise NesyError(f"--workers must be >= 0, got {workers}")
    if name == "inline" or (name == "local" and workers == 0):
        return InlineExecutor(threads)
    if name == "local":
        if address:
            raise NesyError("--address is for the ray executor")
        return LocalExecutor(workers, threads)
    if name == "ray":
        return RayExecutor(workers, address, threads, resources, quiet)
    raise NesyError(f"unknown executor {name!r} (choose from {', '.join(EXECUTORS)})")
