"""Executors for long sweeps: local processes by default, Ray when asked, same code path.

``map_ordered(fn, items, workers=...)`` returns results in input order whatever the number
of workers, which is what keeps outputs byte-identical across worker counts.
"""
from __future__ import annotations

import importlib
import multiprocessing as mp
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor

from .errors import NesyError


def default_workers() -> int:
    return max(1, (mp.cpu_count() or 1))


def map_ordered(fn: Callable, items: Sequence, *, workers: int = 1, backend: str = "process",
                chunksize: int = 1, initializer=None, initargs=()) -> Iterator:
    """Apply ``fn`` to every item, yielding results in input order.

    ``backend`` is ``"process"`` (a spawn-based pool; ``workers <= 1`` runs inline) or
    ``"ray"`` (needs the optional ``ray`` package; uses the running cluster or a local one).
    ``fn`` must be a picklable top-level function.
    """
    if workers < 0:
        raise NesyError(f"--workers must be >= 0, got {workers}")
    if backend == "ray":
        yield from _ray_map(fn, items)
        return
    if backend != "process":
        raise NesyError(f"unknown executor backend {backend!r} (process or ray)")
    if workers <= 1 or len(items) <= 1:
        if initializer:
            initializer(*initargs)
        for item in items:
            yield fn(item)
        return
    # spawn, not fork: the parent may hold a running SWI-Prolog engine with threads.
    ctx = mp.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=initializer,
                               initargs=initargs)
    ok = False
    try:
        yield from pool.map(fn, items, chunksize=chunksize)
        ok = True
    finally:
        _shutdown(pool, hard=not ok)


def map_streamed(fn: Callable, items: Iterable, *, workers: int = 1,
                 window: int | None = None) -> Iterator:
    """Apply ``fn`` to the items of a (lazy) iterable, yielding results in input order.

    Unlike :func:`map_ordered`, ``items`` is consumed only as workers free up: at most
    ``window`` items (default ``4 * workers``) are in flight, so a producer that computes the
    items (e.g. draws symbols) runs alongside the workers and memory stays bounded however many
    items there are. ``workers <= 1`` runs inline. ``fn`` must be a picklable top-level function.
    """
    if workers < 0:
        raise NesyError(f"--workers must be >= 0, got {workers}")
    if workers <= 1:
        for item in items:
            yield fn(item)
        return
    window = max(workers, window or 4 * workers)
    ctx = mp.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
    pending: deque = deque()
    ok = False
    try:
        # start the workers and their imports now, while the producer computes its first item
        for _ in range(workers):
            pool.submit(importlib.import_module, fn.__module__)
        for item in items:
            pending.append(pool.submit(fn, item))
            while len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
        ok = True
    finally:
        # on an error (in the producer, a worker, or the consumer) drop queued work at once
        _shutdown(pool, hard=not ok)


def _shutdown(pool: ProcessPoolExecutor, *, hard: bool) -> None:
    """Shut ``pool`` down; ``hard`` (an error, Ctrl-C, SIGTERM) also terminates the workers
    at once instead of waiting for their current items, so that no process outlives us."""
    if hard:
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
        return
    pool.shutdown(wait=True, cancel_futures=True)


def _ray_map(fn: Callable, items: Iterable) -> Iterator:
    try:
        import ray  # noqa: PLC0415
    except ImportError:
        raise NesyError("the ray backend needs `pip install ray`") from None
    if not ray.is_initialized():
        ray.init(ignore_reinit_error=True, log_to_driver=False)
    remote = ray.remote(fn)
    refs = [remote.remote(item) for item in items]
    for ref in refs:
        yield ray.get(ref)
