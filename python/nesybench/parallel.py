"""The project's one core for parallel work: spawn-based process pools and Ray start-up.

``map_ordered(fn, items, workers=...)`` returns results in input order whatever the number
of workers, which is what keeps outputs byte-identical across worker counts;
``map_streamed`` does the same for lazy producers. The sweep runner (:mod:`nesybench.runs`)
builds its local and Ray executors on :func:`spawn_pool` and :func:`ray_init`.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import multiprocessing as mp
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor

from .errors import NesyError


def default_workers() -> int:
    return max(1, (mp.cpu_count() or 1))


def spawn_pool(workers: int, *, initializer=None, initargs=()) -> ProcessPoolExecutor:
    """A process pool of ``workers`` spawned (not forked) processes.

    spawn, not fork: the parent may hold a running SWI-Prolog engine or torch threads.
    The workers are started here, with the parent's ``__main__`` hidden from them: work
    items name their functions by module, so a worker never needs to re-run the caller's
    script — which is what lets an unguarded script (no ``if __name__ == "__main__":``) or
    ``python -`` use the pool.
    """
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                               initializer=initializer, initargs=initargs)
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__} \
        if main is not None else {}
    try:
        for k in saved:
            if k == "__spec__":
                main.__spec__ = None
            else:
                del main.__dict__[k]
        # one submit per worker spawns them all now (the pool spawns on demand)
        warm = [pool.submit(os.getpid) for _ in range(workers)]
    finally:
        if main is not None:
            main.__dict__.update(saved)
    for fut in warm:
        fut.result()
    return pool


def ray_init(address: str | None = None, num_cpus: int | None = None, *,
             quiet: bool = False):
    """Import Ray and connect to ``address`` (``HOST:PORT`` or ``auto``), or start a local
    instance with ``num_cpus`` CPUs; returns the ``ray`` module. Errors are NesyErrors.
    ``quiet`` keeps Ray's start-up warnings (e.g. about token authentication) off stderr."""
    explicit = bool(address) and address != "auto"
    if explicit and "ray" not in sys.modules:
        _token_auth_for(address)        # read when Ray is imported: set before
    if "ray" not in sys.modules and importlib.util.find_spec("ray") is None:
        raise NesyError("the ray executor needs Ray: `pip install 'nesybench[ray]'` "
                        "(make setup installs it)")
    if explicit and not _ray_connected():
        # one line within seconds for what Ray itself takes minutes and pages to say: a
        # refused token, an address that is not a Ray cluster, a cluster with no node here
        _check_reachable(address)
        _probe_ray(address)
    try:
        import ray  # noqa: PLC0415
    except ImportError:
        raise NesyError("the ray executor needs Ray: `pip install 'nesybench[ray]'` "
                        "(make setup installs it)") from None
    if ray.is_initialized():
        return ray
    kw = dict(ignore_reinit_error=True, log_to_driver=False, include_dashboard=False,
              configure_logging=False)
    import logging  # noqa: PLC0415

    ray_logger = logging.getLogger("ray")
    level = ray_logger.level
    if quiet:
        ray_logger.setLevel(logging.ERROR)
    try:
        if address:
            ray.init(address=address, **kw)
        else:
            ray.init(num_cpus=num_cpus, **kw)
    except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, ValueError...
        where = f"at {address}" if address else "locally"
        hint = ""
        if address and address != "auto" and os.environ.get("RAY_AUTH_MODE") != "token":
            hint = ("; a cluster with token authentication (on by default in recent Ray, "
                    "e.g. 2.60) needs RAY_AUTH_MODE=token and its token in RAY_AUTH_TOKEN or "
                    "RAY_AUTH_TOKEN_PATH (default ~/.ray/auth_token)")
        raise NesyError(f"cannot start or reach Ray {where}: "
                        f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
                        f"{hint}") from None
    finally:
        ray_logger.setLevel(level)
    return ray


def _ray_token_available() -> bool:
    """A Ray authentication token is at hand: ``RAY_AUTH_TOKEN``, the file named by
    ``RAY_AUTH_TOKEN_PATH``, or ``~/.ray/auth_token`` (where ``ray start`` and a local
    ``ray.init`` keep the one they generate)."""
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return True
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or os.path.join(
        os.path.expanduser("~"), ".ray", "auth_token")
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


def _token_auth_for(address: str) -> None:
    """Connect to an explicit ``HOST:PORT`` as Ray connects to ``auto``: with token
    authentication when ``RAY_AUTH_MODE`` is unset and a token is at hand. Ray's
    ``ray start --head`` turns token authentication on when a token exists (and Ray's own
    local instances create one), but ``ray.init(address=HOST:PORT)`` sends no token unless
    ``RAY_AUTH_MODE=token``, so the head refuses it (``InvalidAuthToken``). A token is
    accepted by a head without authentication; ``RAY_AUTH_MODE=disabled`` sends none. Ray reads
    the mode when it is imported, so this runs before the first ``import ray``."""
    if os.environ.get("RAY_AUTH_MODE") is None and _ray_token_available():
        os.environ["RAY_AUTH_MODE"] = "token"


def _ray_connected() -> bool:
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


#: seconds the probe of an explicit Ray address may take; with the TCP check (which answers
#: at once where something listens) the whole failure takes less than 10 s
RAY_PROBE_S = 6.0

#: runs in a child process (Ray's C++ client logs straight to file descriptor 2, retries for
#: minutes and cannot be interrupted): the cluster's alive nodes and the raylets on this machine
_RAY_PROBE = r"""
import json, sys
try:
    from ray._raylet import GcsClient
    from ray._private.services import find_node_ids
    from ray.core.generated.gcs_pb2 import GcsNodeInfo
    nodes = GcsClient(address=sys.argv[1]).get_all_node_info(timeout=3)
    alive = {n.node_id.hex(): n.node_manager_address for n in nodes.values()
             if n.state == GcsNodeInfo.GcsNodeState.ALIVE}
    print(json.dumps({"alive": alive, "local": sorted(find_node_ids())}))
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "text": " ".join(str(exc).split())}))
"""


def _probe_ray(address: str, timeout: float = RAY_PROBE_S) -> None:
    """Ask the cluster at ``address`` for its nodes from a child process, within ``timeout``
    seconds; a refused token, an address that does not answer as a Ray cluster and a
    cluster without a node on this machine (where ``ray.init`` would wait for minutes) are
    each one :class:`NesyError` naming the cause. Ray's own lines stay in the child."""
    import json  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    try:
        res = subprocess.run([sys.executable, "-c", _RAY_PROBE, address], capture_output=True,
                             text=True, errors="replace", timeout=timeout,
                             stdin=subprocess.DEVNULL, check=False)
        out, err = res.stdout, res.stderr
    except subprocess.TimeoutExpired as exc:
        out = None
        err = exc.stderr.decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else (
            exc.stderr or "")
    if "InvalidAuthToken" in err or "Unauthenticated" in err:
        raise NesyError(_auth_refused(address))
    if out is None:
        raise NesyError(f"{address} accepts connections but does not answer as a Ray cluster "
                        f"within {timeout:g} s: give the GCS port of `ray start --head` "
                        "(6379 unless --port), not another service's or a proxy's")
    lines = out.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if lines else {}
    except ValueError:
        report = {}
    if "error" in report or not report:
        text = report.get("text") or (err.strip().splitlines() or ["no answer"])[-1]
        if report.get("error") == "AuthenticationError" or "InvalidAuthToken" in text:
            raise NesyError(_auth_refused(address))
        raise NesyError(f"cannot connect to the Ray cluster at {address}: {text[:300]}")
    alive, local = report["alive"], set(report["local"])
    if not alive:
        raise NesyError(f"the Ray cluster at {address} has no alive node")
    if not local & set(alive):
        ips = ", ".join(sorted(set(alive.values())))
        raise NesyError(f"the Ray cluster at {address} has no node on this machine (its nodes: "
                        f"{ips}); a Ray driver runs on a node of its cluster: run "
                        f"`ray start --address {address}` here first, or run nesybench on "
                        "a node of the cluster")


def _auth_refused(address: str) -> str:
    """One line: the cluster refused our token (or wanted one), and which token that was."""
    fix = ("set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH to a file, holding the cluster's token "
           "(~/.ray/auth_token on its head)")
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or os.path.join(
        os.path.expanduser("~"), ".ray", "auth_token")
    if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
        return (f"the Ray cluster at {address} uses token authentication and no token was sent "
                f"(RAY_AUTH_MODE is {os.environ.get('RAY_AUTH_MODE') or 'unset'} and no token "
                f"is at hand); {fix}")
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        sent = "the token in RAY_AUTH_TOKEN"
    elif _ray_token_available():
        sent = f"the token in {path}"
    else:
        return (f"the Ray cluster at {address} uses token authentication and no token was sent "
                f"({path} is missing or empty and RAY_AUTH_TOKEN is unset); {fix}")
    return (f"the Ray cluster at {address} refused {sent} (token authentication: a wrong or "
            f"stale token); {fix}")


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail in seconds, not minutes, when a Ray address does not answer (Ray itself waits
    for its GCS for a long time)."""
    import socket  # noqa: PLC0415

    addr = address.split("://", 1)[-1]
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise NesyError(f"a Ray address is HOST:PORT (or 'auto'), got {address!r}")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise NesyError(f"cannot reach the Ray cluster at {address}: "
                        f"{exc.strerror or exc}") from None


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
    pool = spawn_pool(workers, initializer=initializer, initargs=initargs)
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
    pool = spawn_pool(workers)
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
    ray = ray_init()
    remote = ray.remote(fn)
    refs = [remote.remote(item) for item in items]
    for ref in refs:
        yield ray.get(ref)
