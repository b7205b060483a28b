"""Run a grid into a study folder, resume it, and read its results back.

A study folder holds ``results.sqlite`` (see :mod:`nesybench.runs.store`), ``spec.yaml``
(the spec as given) and ``artifacts/<cell>/`` (files cells kept). Starting a spec on a
folder that holds the same study extends it (new axis values add cells; finished cells are
never re-run); a different study there is refused unless ``force_new``.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import signal
import sqlite3
import sys
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import NesyError
from ..io import refuse_unexpected, sha256_file
from .cell import CellTask
from .executors import make_executor
from .registry import check_params, resolve, resolve_name
from .spec import GridSpec, load_spec, value_key
from .store import STORE_NAME, Store, remove_creation_leftovers, store_error
from .trust import commands_in, require_allowed


@dataclass
class RunSummary:
    study: str
    path: str
    total: int
    ran: int
    done: int
    failed: int
    skipped: int
    seconds: float
    executor: str


class Results:
    """The results of a study: cells, final metrics as rows, curves, artifacts."""

    def __init__(self, study_dir, summary: RunSummary | None = None):
        self.path = Path(study_dir)
        self.summary = summary

    def _store(self) -> Store:
        return Store.open(self.path, readonly=True)

    def rows(self, status: str | None = "done") -> list[dict]:
        """One dict per cell: axis values, rep, seed, status, seconds, each final metric."""
        store = self._store()
        try:
            cells = store.cells(status)
            finals: dict[str, dict] = {}
            for cell_id, name, _step, value in store.metric_rows(final=True):
                finals.setdefault(cell_id, {})[name] = value
        finally:
            store.close()
        out = []
        for c in cells:
            row = {"cell_id": c["cell_id"], **c["axes"], "rep": c["rep"], "seed": c["seed"],
                   "status": c["status"], "seconds": c["seconds"]}
            row.update(finals.get(c["cell_id"], {}))
            out.append(row)
        return out

    def curves(self, name: str | None = None) -> list[dict]:
        """Long table of stepped metrics: cell axes, rep, name, step, value."""
        store = self._store()
        try:
            cells = {c["cell_id"]: c for c in store.cells()}
            rows = store.metric_rows(name=name, final=False)
        finally:
            store.close()
        return [{"cell_id": cid, **cells[cid]["axes"], "rep": cells[cid]["rep"], "name": n,
                 "step": s, "value": v} for cid, n, s, v in rows]

    def metrics(self, name: str | None = None) -> list[dict]:
        """Long table of every metric (final ones have step None)."""
        store = self._store()
        try:
            cells = {c["cell_id"]: c for c in store.cells()}
            rows = store.metric_rows(name=name)
        finally:
            store.close()
        return [{"cell_id": cid, **cells[cid]["axes"], "rep": cells[cid]["rep"], "name": n,
                 "step": s, "value": v} for cid, n, s, v in rows]

    def failures(self) -> list[dict]:
        """Failed cells, each with ``attempts_log``: every run of it with its cause."""
        store = self._store()
        try:
            cells = store.cells("failed")
            log: dict[str, list] = {}
            for a in store.attempts():
                log.setdefault(a["cell_id"], []).append(a)
        finally:
            store.close()
        for c in cells:
            c["attempts_log"] = log.get(c["cell_id"], [])
        return cells

    def attempts(self) -> list[dict]:
        """Every recorded run of every cell: attempt number, status, cause, timings."""
        store = self._store()
        try:
            return store.attempts()
        finally:
            store.close()

    def spec(self) -> dict:
        store = self._store()
        try:
            return store.study()["spec"]
        finally:
            store.close()

    def to_pandas(self, table: str = "rows", status: str | None = "done"):
        """A table of the study as a ``pandas.DataFrame``: ``rows`` (one row per cell of
        ``status``: axes, rep, seed, status, seconds, final metrics), ``curves`` (stepped
        metrics, long), ``metrics`` (every metric, long) or ``attempts``."""
        import pandas as pd  # noqa: PLC0415

        readers = {"rows": lambda: self.rows(status), "curves": self.curves,
                   "metrics": self.metrics, "attempts": self.attempts}
        if table not in readers:
            raise NesyError(f"unknown table {table!r} (choose from {', '.join(readers)})")
        return pd.DataFrame(readers[table]())

    def to_dataframe(self, status: str | None = "done"):
        """The rows as a pandas DataFrame (the same as ``to_pandas("rows", status)``)."""
        return self.to_pandas("rows", status)


#: public alias: ``Study(path)`` opens a finished or running study for reading
Study = Results


@contextmanager
def _study_lock(study_dir: Path):
    """One driver per study at a time (a second one is refused, not blocked)."""
    lock_path = study_dir / ".lock"
    fh = open(lock_path, "a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            who = fh.read().strip() or "another process"
            raise NesyError(f"the study is being run by {who}", file=str(study_dir)) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        yield
    finally:
        fh.close()


_SIGNALS: list[int] = []


def terminated() -> bool:
    """Whether the last interrupt of a sweep in this process came from SIGTERM."""
    return bool(_SIGNALS) and _SIGNALS[-1] == signal.SIGTERM


@contextmanager
def _sigterm_as_interrupt():
    """SIGTERM stops a sweep like Ctrl-C: running cells are dropped, finished ones kept."""
    if sys.platform == "win32" or \
            signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        yield
        return

    def handler(signum, frame):
        _SIGNALS.append(signum)
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _ours(name: str) -> bool:
    """Files an interrupted start may leave in a study folder before its store exists."""
    return name == ".lock" or name.startswith(STORE_NAME + ".creating") or \
        name.startswith("spec.yaml.")


def _check_folder(out: Path) -> None:
    """Refuse a file, or a folder that holds something other than a study, up front."""
    if out.exists() and not out.is_dir():
        raise NesyError("is not a folder", file=str(out))
    if out.is_dir() and not (out / STORE_NAME).exists() and \
            any(not _ours(p.name) for p in out.iterdir()):
        raise NesyError("folder exists and is not a study (no results.sqlite); choose an "
                        "empty or new --out", file=str(out))


def lock_holder(study_dir) -> int | None:
    """The pid of the driver running the study now, or None (nobody holds its lock)."""
    try:
        fh = open(Path(study_dir) / ".lock")
    except OSError:
        return None
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = fh.read().strip()
            try:
                return int(text.split()[-1])
            except (ValueError, IndexError):
                return -1
        except OSError:
            return None
        fcntl.flock(fh, fcntl.LOCK_UN)
        return None


def _prepare_study(spec: GridSpec, out: Path, force_new: bool) -> tuple[Store, bool]:
    """Open or create the study's store; returns (store, created)."""
    store_path = out / STORE_NAME
    if out.exists() and not out.is_dir():
        raise NesyError("is not a folder", file=str(out))
    remove_creation_leftovers(out)
    if store_path.exists():
        store = Store.open(out, check=True)
        old = store.study()["spec"]
        same = _compatible(old, spec)
        if same is None and not force_new:
            store.close()
            raise NesyError("this folder holds a different study (function, parameters, "
                            "axes, repetitions or seed differ); use --force-new to replace it "
                            "or another --out", file=str(out))
        if same is None:
            listed = {row[1]: row[2] for row in store.artifact_rows()}
            store.close()
            _check_artifacts(out, listed)
            # the new store replaces the old one in one rename (Store.create); the old
            # one's artifacts and spec go after that
            new = Store.create(out, spec.to_dict(), spec.hash(), spec.study)
            (out / "spec.yaml").unlink(missing_ok=True)
            shutil.rmtree(out / "artifacts", ignore_errors=True)
            return new, True
        else:
            merged = _merge_axes(old, spec)
            store.set_spec(merged.to_dict(), merged.hash())
            return store, False
    elif out.exists() and any(not _ours(p.name) for p in out.iterdir()):
        raise NesyError("folder exists and is not a study (no results.sqlite); choose an "
                        "empty or new --out", file=str(out))
    store = Store.create(out, spec.to_dict(), spec.hash(), spec.study)
    return store, True


def _check_artifacts(out: Path, listed: dict[str, str]) -> None:
    """Refuse ``--force-new`` when the study's ``artifacts/`` folder holds a file the store
    does not list with the same SHA-256 (a user's file, or one changed since): the output
    rule of :mod:`nesybench.io`, with the store standing for the marker. Nothing is deleted
    then."""
    root = out / "artifacts"
    if not root.exists():
        return
    bad = []
    if root.is_symlink() or not root.is_dir():
        bad.append("artifacts")
    else:
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(out).as_posix()
            if p.is_symlink() or not (p.is_dir() or p.is_file()):
                bad.append(rel)
            elif p.is_file() and listed.get(rel) != sha256_file(p):
                bad.append(rel)
    if bad:
        refuse_unexpected(out, bad, flag="--force-new")


def _compatible(old: dict, spec: GridSpec) -> GridSpec | None:
    """The old spec as a GridSpec when ``spec`` may extend it, else None."""
    old_spec = load_spec(old)
    if old_spec.identity() != spec.identity():
        return None
    return old_spec


def _merge_axes(old: dict, spec: GridSpec) -> GridSpec:
    """Union of the axis values (old order first), so the stored spec covers every cell."""
    merged = load_spec(old)
    axes = {}
    for name, values in merged.axes.items():
        have = {value_key(v) for v in values}
        extra = [v for v in spec.axes[name] if value_key(v) not in have]
        axes[name] = values + extra
    merged.axes = axes
    # how cells run comes from the spec given now
    merged.timeout, merged.max_attempts, merged.resources = \
        spec.timeout, spec.max_attempts, spec.resources
    merged.description = spec.description or merged.description
    return merged


def _os_error(exc: OSError, where) -> NesyError:
    """An OS error at the boundary (full disk, read-only file system, permissions) as one
    line."""
    what = {errno.ENOSPC: "no space left on the device",
            errno.EROFS: "read-only file system",
            errno.EACCES: "permission denied",
            errno.EPERM: "operation not permitted",
            errno.EDQUOT: "disk quota exceeded"}.get(exc.errno, exc.strerror or str(exc))
    return NesyError(what, file=str(exc.filename or where))


def _write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.part")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def run_grid(spec, out, *, executor: str = "local", workers: int | None = None,
             address: str | None = None, fail_fast: bool = False, force_new: bool = False,
             retry_failed: bool = True, threads: int = 1, progress: bool = True,
             only_existing: bool = False, cell_timeout: float | None = None,
             max_attempts: int | None = None, allow_commands: bool = False) -> Results:
    """Run every not-yet-done cell of ``spec`` into the study folder ``out``.

    ``spec``: a :class:`GridSpec`, a mapping or a YAML path. ``executor``: ``local``
    (``workers`` processes, default the machine's cores; 0 runs inline), ``ray``
    (``address`` of a cluster, or a local instance with ``workers`` CPUs) or ``inline``.
    Finished cells are committed one by one; a failing cell (an exception, a crash of its
    process, or ``cell_timeout`` seconds passed) is recorded with its cause, tried again up
    to ``max_attempts`` times in all, and the sweep goes on (``fail_fast`` stops at the
    first cell that failed for good, with an error). ``cell_timeout`` and ``max_attempts``
    override the spec's ``timeout`` and ``max_attempts``. Returns a :class:`Results` whose
    ``summary`` says what ran.

    ``function`` must be a registered run function (:mod:`nesybench.runs.registry`). A spec
    whose parameters hold a shell learner (``system: cmd``, a ``command``) or a Prolog file
    for a learner (``aleph``), at any depth, is refused unless ``allow_commands``
    (``--allow-commands``); the study records that it needs them, and resuming it asks again.
    """
    t0 = time.perf_counter()
    spec = load_spec(spec)
    out = Path(out)
    if cell_timeout is not None and not cell_timeout > 0:
        raise NesyError(f"--cell-timeout must be > 0 seconds, got {cell_timeout}")
    if max_attempts is not None and max_attempts < 1:
        raise NesyError(f"--max-attempts must be >= 1, got {max_attempts}")
    # everything that can be wrong with the spec is found before anything is written
    fn_path = resolve_name(spec.function)
    needs = commands_in(spec.params, "params") + commands_in(spec.axes, "axes")
    require_allowed(needs, allow_commands, source=spec.source, resume=only_existing)
    fn = resolve(spec.function)
    cells = spec.cells()
    for cell in cells:
        check_params(fn, cell.params, source=spec.source)
    try:
        _check_folder(out)
    except OSError as exc:
        raise _os_error(exc, out) from None
    ex = make_executor(executor, workers=workers, address=address, threads=threads,
                       resources=spec.resources, quiet=not progress)
    try:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise NesyError(f"cannot create the study folder: "
                            f"{_os_error(exc, out).message}", file=str(out)) from None
        with _study_lock(out):
            store, created = _prepare_study(spec, out, force_new)
            try:
                if created or not (out / "spec.yaml").exists():
                    _write_text_atomic(out / "spec.yaml",
                                       yaml.safe_dump(spec.to_dict(), sort_keys=False))
                if not only_existing:
                    store.add_cells(cells)
                if needs:
                    store.set_note("needs_commands", sorted({f for f, _ in needs}))
                store.reset_running()
                run = store.study()["spec"]
                limit = cell_timeout if cell_timeout is not None else run.get("timeout")
                tries = max_attempts if max_attempts is not None else \
                    run.get("max_attempts", 1)
                summary = _drive(store, out, spec, fn_path, ex, fail_fast, retry_failed,
                                 threads, progress, limit, tries, allow_commands)
            finally:
                store.close()
    except BaseException as exc:
        ex.abort()
        if isinstance(exc, OSError):
            raise _os_error(exc, out) from None
        if isinstance(exc, sqlite3.OperationalError):
            raise store_error(exc, out / STORE_NAME) from None
        raise
    else:
        ex.close()
    summary.seconds = time.perf_counter() - t0
    return Results(out, summary)


def resume(out, *, allow_commands: bool = False, **kw) -> Results:
    """Run the not-yet-done cells of the study in ``out`` (its stored spec).

    A study folder may come from someone else: its function is resolved through the
    registry only, and a study that runs programs (recorded when it was started, or found
    in its stored cells) is refused unless ``allow_commands`` is given again."""
    store = Store.open(out, readonly=True, check=True)
    try:
        spec_dict = store.study()["spec"]
        _refuse_stored_commands(store, out, allow_commands,
                                retry_failed=kw.get("retry_failed", True))
    finally:
        store.close()
    if not isinstance(spec_dict, dict):
        raise NesyError("the stored spec is not a mapping (damaged study)",
                        file=str(Path(out) / STORE_NAME))
    return run_grid(load_spec(spec_dict, source=str(Path(out) / "spec.yaml")), out,
                    only_existing=True, allow_commands=allow_commands, **kw)


def _refuse_stored_commands(store: Store, out, allow_commands: bool, *,
                            retry_failed: bool = True, todo: list | None = None) -> None:
    """Refuse a study whose record says it runs programs, or whose cells still to run hold
    one, unless ``allow_commands``."""
    if allow_commands:
        return
    noted = store.note("needs_commands") or []
    found = [(str(f), "a program the study runs (recorded when it was started)")
             for f in (noted if isinstance(noted, list) else [noted])]
    if todo is None:
        pending = set(store.pending(retry_failed))
        todo = [c for c in store.cells() if c["cell_id"] in pending]
    for c in todo:
        found += commands_in(c["params"], f"cell {c['cell_id']} params")
    require_allowed(found, False, source=out, resume=True)


_KEPT = re.compile(r"^scratch folder kept: (.+)$", re.MULTILINE)


def _drive(store: Store, out: Path, spec: GridSpec, fn_path: str, ex, fail_fast: bool,
           retry_failed: bool, threads: int, progress: bool, timeout: float | None,
           max_attempts: int, allow_commands: bool = False) -> RunSummary:
    pending_ids = set(store.pending(retry_failed))
    all_cells = store.cells()
    todo = [c for c in all_cells if c["cell_id"] in pending_ids]
    # the cells run with the parameters stored with them: check those, not only the spec
    _refuse_stored_commands(store, out, allow_commands, todo=todo)
    total = len(all_cells)
    done = failed = 0
    bar = None
    if progress and todo:
        from tqdm import tqdm  # noqa: PLC0415

        bar = tqdm(total=len(todo), desc=f"{spec.study} [{ex.name}]", unit="cell",
                   file=sys.stderr, dynamic_ncols=True)
    queue = deque(todo)
    by_id = {c["cell_id"]: c for c in todo}
    tries: dict[str, int] = {}          # attempts made in this run
    attempt_no: dict[str, int] = {}     # the attempt number in the store
    scratch: dict[str, list[str]] = {}  # scratch folders kept by failed attempts
    try:
        with _sigterm_as_interrupt():
            while queue or ex.busy():
                while queue and ex.has_room():
                    c = queue.popleft()
                    cid = c["cell_id"]
                    attempt_no[cid] = store.mark_running([cid])
                    tries[cid] = tries.get(cid, 0) + 1
                    ex.submit(CellTask(fn_path, cid, c["params"], c["seed"], threads,
                                       timeout=timeout, attempt=attempt_no[cid]))
                outcome = ex.next_outcome()
                cid = outcome.cell_id
                store.commit_outcome(outcome, out, attempt_no.get(cid))
                kept = _KEPT.search(outcome.error or "")
                if kept:
                    scratch.setdefault(cid, []).append(kept.group(1))
                elif outcome.status == "done":      # kept only while the cell is failed
                    for path in scratch.pop(cid, []):
                        shutil.rmtree(path, ignore_errors=True)
                if outcome.status != "done" and tries.get(cid, 1) < max_attempts:
                    queue.append(by_id[cid])        # another attempt, after the others
                    continue
                if outcome.status == "done":
                    done += 1
                else:
                    failed += 1
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(failed=failed, refresh=False)
                if failed and fail_fast:
                    last = (outcome.error or "").strip().splitlines()[-1:]
                    raise NesyError(f"cell {cid} failed (--fail-fast): "
                                    f"{last[0] if last else 'error'}", file=str(out))
    finally:
        if bar is not None:
            bar.close()
    return RunSummary(study=spec.study, path=str(out), total=total, ran=done + failed,
                      done=done, failed=failed, skipped=total - len(todo), seconds=0.0,
                      executor=ex.name)


def status(out) -> dict:
    """Counts by status, whether a driver runs the study now (its pid) or it was
    interrupted, and an ETA from the mean duration of finished cells. The store is opened
    read-only and checked (a damaged store is refused with how to recover)."""
    store = Store.open(out, readonly=True, check=True)
    try:
        counts = store.counts()
        study = store.study()
        secs = [r[0] for r in store.conn.execute(
            "SELECT seconds FROM cells WHERE status = 'done' AND seconds IS NOT NULL")]
    finally:
        store.close()
    pid = lock_holder(out)
    left = counts["queued"] + counts["running"] + counts["failed"]
    if pid is not None:
        state = "running"
    elif counts["queued"] + counts["running"]:
        state = "interrupted"
    else:
        state = "finished"
    mean = sum(secs) / len(secs) if secs else None
    return {"study": study["name"], "path": str(out), "state": state, "pid": pid, **counts,
            "total": sum(counts.values()), "mean_cell_seconds": mean,
            "eta_seconds_one_worker": mean * left if mean is not None else None}
