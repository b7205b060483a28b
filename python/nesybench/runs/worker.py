"""Worker processes that run cells, and the driver's handle on one of them.

A worker is a fresh Python process (``python -m nesybench.runs.worker``) started in its
own session. It reads cells from one pipe and writes their outcomes to another (frames:
4-byte length, then a pickle); its stdout and stderr go to a third pipe that the driver
forwards to its own stderr, keeping the last lines of each cell for the failure record.

Because the driver owns each worker, it knows which cell a worker was running when it
died: a SIGKILL, ``os.abort()``, ``os._exit()``, a segfault or the OOM killer turns into a
failed cell with the signal or exit status and the last lines of output, and a fresh worker
takes the next cell. A cell past its time limit has its worker's process group killed.

A worker dies with its driver: on Linux through the parent-death signal (SIGKILL), and on
every system through a thread that checks the parent's pid once a second.
"""
from __future__ import annotations

import collections
import io
import os
import pickle
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..io import pid_alive
from .cell import CellOutcome, CellTask, keep_or_remove_scratch, scratch_prefix

_HEADER = struct.Struct("!Q")
#: lines of a cell's output kept for its failure record
TAIL_LINES = 20


# -- framing ---------------------------------------------------------------------------------

def write_frame(fh, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    fh.write(_HEADER.pack(len(data)))
    fh.write(data)
    fh.flush()


def _read_exact(fh, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = fh.read(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fh):
    """The next object, or None at the end of the stream (also a torn frame)."""
    head = _read_exact(fh, _HEADER.size)
    if head is None:
        return None
    body = _read_exact(fh, _HEADER.unpack(head)[0])
    return None if body is None else pickle.loads(body)


# -- the worker side ---------------------------------------------------------------------------

def _die_with_parent(parent: int) -> None:
    """Exit as soon as the driver is gone (a SIGKILL of the driver alone included)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes  # noqa: PLC0415

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)      # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:          # the driver died before the line above
        os._exit(1)

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="nesybench-parent-watch", daemon=True).start()


def main(argv: list[str]) -> int:
    rfd, wfd, parent = (int(a) for a in argv[:3])
    _die_with_parent(parent)
    import faulthandler  # noqa: PLC0415

    faulthandler.enable()       # a native crash prints where it happened (kept in the record)
    rin = os.fdopen(rfd, "rb", buffering=0)
    wout = os.fdopen(wfd, "wb")
    init = read_frame(rin)
    if init is None:
        return 0
    sys.path[:] = init["sys_path"]
    from .cell import _worker_init, execute  # noqa: PLC0415

    _worker_init(init["threads"])
    while True:
        task = read_frame(rin)
        if task is None:
            return 0
        outcome = execute(task)
        sys.stdout.flush()
        sys.stderr.flush()
        write_frame(wout, outcome)


# -- the driver side ---------------------------------------------------------------------------

_ENTRY = "import sys; from nesybench.runs.worker import main; sys.exit(main(sys.argv[1:]))"


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def describe_exit(returncode: int | None) -> str:
    """'killed by SIGKILL' / 'exited with status 3' for a worker's return code."""
    if returncode is None:
        return "stopped"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exited with status {returncode}"


class WorkerProcess:
    """One worker process and the cell it is running (if any)."""

    def __init__(self, threads: int = 1, forward=None):
        self.threads = threads
        self.forward = forward          # where the worker's output goes (default: stderr)
        self.task: CellTask | None = None
        self.started = 0.0
        self.deadline: float | None = None
        self.env_key = _env_key()
        r_task, w_task = os.pipe()
        r_res, w_res = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [_package_root()] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _ENTRY, str(r_task), str(w_res), str(os.getpid())],
                pass_fds=(r_task, w_res), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True, env=env)
        finally:
            os.close(r_task)
            os.close(w_res)
        self.pid = self.proc.pid
        self.tx = os.fdopen(w_task, "wb")
        self.rx = os.fdopen(r_res, "rb", buffering=0)   # select() sees every byte
        self.fileno = r_res
        self._tail: collections.deque = collections.deque(maxlen=TAIL_LINES)
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._pump, name=f"nesybench-out-{self.pid}",
                                        daemon=True)
        self._reader.start()
        self._send({"sys_path": list(sys.path), "threads": threads})

    # output of the worker: forwarded, and its last lines kept
    def _pump(self) -> None:
        out = self.proc.stdout
        for line in iter(out.readline, b""):
            with self._lock:
                self._tail.append(line.decode("utf-8", "replace").rstrip("\n"))
            sink = self.forward
            try:
                if sink is not None:
                    sink(line)
                else:
                    stream = getattr(sys.stderr, "buffer", None)
                    if stream is not None:
                        stream.write(line)
                        stream.flush()
                    else:
                        sys.stderr.write(line.decode("utf-8", "replace"))
            except (OSError, ValueError):
                pass
        out.close()

    def tail(self) -> list[str]:
        with self._lock:
            return list(self._tail)

    def _send(self, obj) -> bool:
        try:
            write_frame(self.tx, obj)
            return True
        except (BrokenPipeError, OSError):
            return False

    def submit(self, task: CellTask) -> bool:
        """Hand one cell to this (idle) worker; False when the worker is already gone."""
        with self._lock:
            self._tail.clear()
        self.task = task
        self.started = time.time()
        self.deadline = self.started + task.timeout if task.timeout else None
        return self._send(task)

    def receive(self) -> CellOutcome | None:
        """The outcome of the running cell, or None when the worker died (readable EOF)."""
        return read_frame(self.rx)

    def kill(self) -> None:
        """SIGKILL the worker and everything it started (its own process group)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass

    def reap(self, timeout: float = 10.0) -> int | None:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.wait()
        self._reader.join(timeout=2.0)
        for fh in (self.tx, self.rx):
            try:
                fh.close()
            except OSError:
                pass
        return rc

    def close(self, timeout: float = 10.0) -> None:
        """Let the worker exit (end of its input), killing it if it does not."""
        try:
            self.tx.close()
        except OSError:
            pass
        self.reap(timeout)

    def failed_outcome(self, cause: str) -> CellOutcome:
        """The record of the running cell after its worker died or was killed."""
        task = self.task
        lines = self.tail()
        error = cause
        if lines:
            error += "\nlast lines of the cell's output:\n" + "\n".join(lines)
        kept = keep_or_remove_scratch(task.scratch)
        if kept:
            error += f"\nscratch folder kept: {kept}"
        return CellOutcome(cell_id=task.cell_id, status="failed", error=error,
                           started=self.started, finished=time.time(), host=_host(),
                           pid=self.pid)


def remove_abandoned_scratch() -> int:
    """Remove scratch folders whose maker is gone; returns how many."""
    import re  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    root = Path(tempfile.gettempdir())
    n = 0
    try:
        entries = list(root.iterdir())
    except OSError:
        return 0
    for entry in entries:
        m = re.fullmatch(r"nesybench-cell-[0-9a-f]+-p(\d+)-.*", entry.name)
        if not m or pid_alive(int(m.group(1))):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        n += 1
    return n


def _host() -> str:
    import socket  # noqa: PLC0415

    return socket.gethostname()


def _env_key() -> tuple:
    """What a worker inherits that may change between cells on Ray (the devices a task
    was given): a worker started under other values is replaced."""
    return tuple(os.environ.get(v) for v in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                              "OMP_NUM_THREADS"))


def run_isolated(task: CellTask, state: dict) -> CellOutcome:
    """Run one cell in a persistent worker process kept in ``state`` (one per calling
    process): the Ray executor's task body. A crash or a timeout of the cell becomes a
    failed outcome here, as in the local executor; the worker is then replaced. An
    interrupt (a cancelled task) kills the cell's process and removes its scratch folder."""
    import select  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    if not state.get("swept"):
        state["swept"] = remove_abandoned_scratch() + 1
    w = state.get("worker")
    if w is not None and (w.proc.poll() is not None or w.env_key != _env_key() or
                          w.threads != task.threads):
        w.close(timeout=2.0)
        w = None
    if w is None:
        w = WorkerProcess(task.threads)
        state["worker"] = w
    task.scratch = tempfile.mkdtemp(prefix=scratch_prefix(task.cell_id))
    try:
        if not w.submit(task):
            state.pop("worker", None)
            w.reap()
            return w.failed_outcome(
                f"worker process {describe_exit(w.proc.returncode)} before the cell")
        while True:
            wait = None if w.deadline is None else max(0.0, w.deadline - time.time())
            ready, _, _ = select.select([w.fileno], [], [], wait)
            if ready:
                out = w.receive()
                if out is not None:
                    w.task = None
                    return out
                rc = w.reap()
                state.pop("worker", None)
                return w.failed_outcome(f"worker process {describe_exit(rc)}")
            if time.time() >= w.deadline:
                w.kill()
                w.reap()
                state.pop("worker", None)
                return w.failed_outcome(f"timed out after {task.timeout:g} s")
    except BaseException:
        state.pop("worker", None)
        w.kill()
        w.reap(timeout=5.0)
        shutil.rmtree(task.scratch, ignore_errors=True)
        raise


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
