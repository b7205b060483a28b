"""Executors: where cells run. ``inline`` (this process), ``local`` (a spawned process
pool, the default) and ``ray`` (a Ray cluster, or a local Ray instance). All run the same
:func:`nesybench.runs.cell.execute` on the same :class:`CellTask` and yield the same
:class:`CellOutcome`; only the placement differs.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, wait

from ..errors import NesyError
from ..parallel import _shutdown, default_workers, ray_init, spawn_pool
from .cell import CellOutcome, CellTask, _worker_init, execute

EXECUTORS = ("local", "ray", "inline")


class Executor:
    """Runs tasks, yielding outcomes as they finish (any order)."""

    name = "?"

    def run(self, tasks: Iterable[CellTask]) -> Iterator[CellOutcome]:
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

    def run(self, tasks):
        for task in tasks:
            yield execute(task)


class LocalExecutor(Executor):
    """A pool of ``workers`` spawned processes; at most ``2 * workers`` cells in flight so
    that an interrupt drops queued cells at once."""

    name = "local"

    def __init__(self, workers: int | None = None, threads: int = 1):
        self.workers = workers or default_workers()
        self.pool = spawn_pool(self.workers, initializer=_worker_init, initargs=(threads,))

    def run(self, tasks):
        tasks = iter(tasks)
        pending = set()
        window = 2 * self.workers
        exhausted = False
        while True:
            while not exhausted and len(pending) < window:
                task = next(tasks, None)
                if task is None:
                    exhausted = True
                    break
                pending.add(self.pool.submit(execute, task))
            if not pending:
                return
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                yield fut.result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def abort(self) -> None:
        _shutdown(self.pool, hard=True)


class RayExecutor(Executor):
    """Ray tasks (one CPU each). With no ``address`` a local Ray instance with ``workers``
    CPUs is started; with one, the cluster's scheduler places the cells."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None,
                 threads: int = 1):
        self.ray = ray_init(address, None if address else (workers or default_workers()))
        self.remote = self.ray.remote(num_cpus=1, max_retries=0)(execute)
        self.window = 4 * int(self.ray.cluster_resources().get("CPU", workers or 1))
        self.threads = threads

    def run(self, tasks):
        tasks = iter(tasks)
        pending: list = []
        exhausted = False
        while True:
            while not exhausted and len(pending) < self.window:
                task = next(tasks, None)
                if task is None:
                    exhausted = True
                    break
                pending.append(self.remote.remote(task))
            if not pending:
                return
            self._pending = pending
            done, pending = self.ray.wait(pending, num_returns=1)
            for ref in done:
                yield self.ray.get(ref)

    def close(self) -> None:
        pass    # the Ray instance stays up for further sweeps in this process

    def abort(self) -> None:
        for ref in getattr(self, "_pending", []):
            self.ray.cancel(ref, force=True)


def make_executor(name: str = "local", *, workers: int | None = None,
                  address: str | None = None, threads: int = 1) -> Executor:
    if workers is not None and workers < 0:
        raise NesyError(f"--workers must be >= 0, got {workers}")
    if name == "inline" or (name == "local" and workers == 0):
        return InlineExecutor(threads)
    if name == "local":
        if address:
            raise NesyError("--address is for the ray executor")
        return LocalExecutor(workers, threads)
    if name == "ray":
        return RayExecutor(workers, address, threads)
    raise NesyError(f"unknown executor {name!r} (choose from {', '.join(EXECUTORS)})")
