"""The results store: one SQLite file per study (``<study>/results.sqlite``, WAL mode).

Tables
------
``study``      one row: name, spec (JSON), spec hash, versions, created
``cells``      one row per cell: id, params (JSON), one indexed column per axis, rep, seed,
               status (queued/running/done/failed), error text, timings, host
``metrics``    (cell, name, step, value): final metrics have step NULL, curves have steps
``artifacts``  (cell, path relative to the study, sha256, bytes)
``attempts``   one row per run of a cell: attempt number, status, error (the cause: a
               traceback, the signal or exit status of a crashed worker, a timeout), timings
``notes``      (key, JSON value): facts that are not the spec, e.g. ``needs_commands``

Only the driver writes. Each finished cell is committed in one transaction (its status,
metrics and artifact rows; the artifact files are written before the commit), so a sweep
killed at any moment loses at most the cells that were running.

A study folder may come from someone else. Its store is opened only when ``results.sqlite``
is a regular file inside the folder (no symbolic link out, no FIFO or device, one hard link:
:meth:`nesybench.folder.DataFolder.check`), and reading commands open it read-only and
immutable (SQLite URI ``mode=ro&immutable=1``), so that they create no ``-wal``/``-shm`` file
and leave the folder byte-identical; only while a driver writes the study (its ``-wal`` and
``-shm`` files are there, regular files of the folder) does a reader open it ``mode=ro`` to
see the cells committed since the last checkpoint. Cell ids read back are checked
(:func:`check_cell_id`) before any path is joined with them.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

from .. import __version__
from ..errors import NesyError
from ..folder import DataFolder, parse_json

STORE_NAME = "results.sqlite"
SCHEMA_VERSION = 1
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: a cell id (16 hex digits from :func:`nesybench.runs.spec.cell_id_of`; letters, digits, ``_``
#: and ``-`` accepted): never a path
_CELL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def check_cell_id(value, where) -> str:
    """``value`` checked to be a cell id (it names a folder under ``artifacts/``): a string of
    letters, digits, ``_`` and ``-``; a ``../`` or any other path is one error naming the
    store."""
    if not isinstance(value, str) or not _CELL_ID.match(value):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise NesyError(f"a cell id is {shown}, not an id (letters, digits, _ and -): a "
                        f"damaged or forged store; {RECOVER}", file=str(where), field="cell_id")
    return value


def store_file(study_dir) -> Path:
    """The real path of ``study_dir/results.sqlite``, checked as a file of an input folder:
    a regular file inside the study (a symbolic link out, a FIFO, a device or a file with
    several hard links is one error)."""
    folder = DataFolder(study_dir)
    folder.check(STORE_NAME)
    return folder.locate(STORE_NAME)


def _live_wal(path: Path) -> bool:
    """Whether a driver is writing the store at ``path`` (real): its ``-wal`` and ``-shm``
    files exist as regular files with one link each, beside it."""
    import stat  # noqa: PLC0415

    for suffix in ("-wal", "-shm"):
        try:
            st = os.lstat(f"{path}{suffix}")
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return False
    return True

_SCHEMA = """
CREATE TABLE IF NOT EXISTS study (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  name TEXT NOT NULL, spec TEXT NOT NULL, spec_hash TEXT NOT NULL,
  schema_version INTEGER NOT NULL, versions TEXT NOT NULL, created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS cells (
  cell_id TEXT PRIMARY KEY, params TEXT NOT NULL, axes TEXT NOT NULL, rep INTEGER NOT NULL,
  seed INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'queued', error TEXT,
  queued REAL, started REAL, finished REAL, seconds REAL, host TEXT, pid INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS cells_status ON cells(status);
CREATE TABLE IF NOT EXISTS metrics (
  cell_id TEXT NOT NULL REFERENCES cells(cell_id), name TEXT NOT NULL, step INTEGER,
  value REAL
);
CREATE INDEX IF NOT EXISTS metrics_cell ON metrics(cell_id);
CREATE INDEX IF NOT EXISTS metrics_name ON metrics(name, step);
CREATE TABLE IF NOT EXISTS artifacts (
  cell_id TEXT NOT NULL REFERENCES cells(cell_id), path TEXT NOT NULL, sha256 TEXT NOT NULL,
  bytes INTEGER NOT NULL, PRIMARY KEY (cell_id, path)
);
"""

#: added after the first release: created when a store is opened for writing
_ATTEMPTS = """
CREATE TABLE IF NOT EXISTS attempts (
  cell_id TEXT NOT NULL REFERENCES cells(cell_id), attempt INTEGER NOT NULL,
  status TEXT NOT NULL, error TEXT, started REAL, finished REAL, host TEXT, pid INTEGER,
  PRIMARY KEY (cell_id, attempt)
);
"""

#: added later: facts about the study that are not its spec (``needs_commands``: the fields
#: of its cells that run programs, so resuming it asks for --allow-commands again)
_NOTES = """
CREATE TABLE IF NOT EXISTS notes (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

#: how to recover from a damaged store (said by every refusal)
RECOVER = ("export what is readable with `nesybench runs export STUDY --csv DIR`, then start "
           "the study again in a new folder")


def versions() -> dict:
    out = {"nesybench": __version__, "python": platform.python_version()}
    try:
        from importlib.metadata import version  # noqa: PLC0415

        out["torch"] = version("torch")
    except Exception:  # noqa: BLE001 - torch is optional for the store
        pass
    return out


def _axis_column(name: str) -> str:
    return "ax_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


class Store:
    """An open results store. Use :meth:`create` for a new study, :meth:`open` otherwise."""

    def __init__(self, path: Path, conn: sqlite3.Connection, readonly: bool = False):
        self.path = path
        self.conn = conn
        self.readonly = readonly

    # -- opening ----------------------------------------------------------------------
    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(str(path), timeout=10.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.OperationalError as exc:
            raise store_error(exc, path) from None
        except sqlite3.DatabaseError as exc:
            raise NesyError(f"not a readable results store ({exc})", file=str(path)) from None
        return conn

    @staticmethod
    def _connect_ro(path: Path) -> sqlite3.Connection:
        """Read-only and immutable (``mode=ro&immutable=1``: SQLite creates, locks and writes
        nothing, so no ``-wal``/``-shm`` file appears); ``mode=ro`` only while a driver
        writes the study (:func:`_live_wal`), to see what it committed since the last
        checkpoint. ``path`` is the real path :func:`store_file` checked."""
        uri = "file:" + quote(str(path))
        modes = (["mode=ro", "mode=ro&immutable=1"] if _live_wal(path)
                 else ["mode=ro&immutable=1"])
        last = None
        for mode in modes:
            try:
                conn = sqlite3.connect(f"{uri}?{mode}", uri=True, timeout=10.0,
                                       isolation_level=None)
                conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
                return conn
            except sqlite3.DatabaseError as exc:
                last = exc
                if "unable to open" not in str(exc) and "readonly" not in str(exc):
                    break
        if isinstance(last, sqlite3.OperationalError) and "unable to open" in str(last):
            raise NesyError(f"cannot open the results store read-only ({last})",
                            file=str(path))
        raise NesyError(f"is corrupt or not a results store ({last}); {RECOVER}",
                        file=str(path))

    @classmethod
    def open(cls, study_dir, *, must_exist: bool = True, readonly: bool = False,
             check: bool = False) -> "Store":
        """Open a study's store: for writing (the driver), or ``readonly`` (every reading
        command). ``check`` runs SQLite's ``quick_check`` and refuses a damaged store."""
        study_dir = Path(study_dir)
        path = study_dir / STORE_NAME
        if not path.is_file():
            if any(study_dir.glob(STORE_NAME + ".creating*")):
                raise NesyError("the study's creation was interrupted before it finished; run "
                                "`nesybench runs start SPEC --out DIR` again",
                                file=str(study_dir))
            raise NesyError(f"no results store here (expected {STORE_NAME}); start a study "
                            "with `nesybench runs start SPEC --out DIR`", file=str(study_dir))
        real = store_file(study_dir)
        conn = cls._connect_ro(real) if readonly else cls._connect(real)
        store = cls(path, conn, readonly)
        try:
            row = store.conn.execute("SELECT schema_version FROM study").fetchone()
        except sqlite3.DatabaseError as exc:
            store.close()
            msg = "is locked by another process" if "locked" in str(exc) else \
                f"is corrupt or not a results store ({exc}); {RECOVER}"
            raise NesyError(msg, file=str(path)) from None
        if row is None:
            store.close()
            raise NesyError("results store has no study row (corrupt)", file=str(path))
        if row[0] != SCHEMA_VERSION:
            store.close()
            raise NesyError(f"results store schema {row[0]} (this nesybench reads "
                            f"{SCHEMA_VERSION})", file=str(path))
        if check:
            store.check()
        if not readonly:
            try:
                store.conn.executescript(_ATTEMPTS + _NOTES)
            except sqlite3.OperationalError as exc:
                store.close()
                raise store_error(exc, path) from None
        return store

    def check(self) -> None:
        """``PRAGMA quick_check``: a damaged store is refused with how to recover."""
        try:
            rows = [r[0] for r in self.conn.execute("PRAGMA quick_check(5)")]
        except sqlite3.DatabaseError as exc:
            rows = [str(exc)]
        if rows != ["ok"]:
            self.close()
            raise NesyError(f"the results store is damaged ({'; '.join(rows)[:200]}); "
                            f"{RECOVER}", file=str(self.path))

    @classmethod
    def create(cls, study_dir, spec_dict: dict, spec_hash: str, name: str) -> "Store":
        """Create the store whole (schema + study row in a side file, then renamed), so a
        kill during creation never leaves a store without its study row."""
        study_dir = Path(study_dir)
        study_dir.mkdir(parents=True, exist_ok=True)
        path = study_dir / STORE_NAME
        tmp = study_dir / (STORE_NAME + ".creating")
        remove_creation_leftovers(study_dir)
        try:
            conn = cls._connect(tmp)
            conn.executescript(_SCHEMA + _ATTEMPTS + _NOTES)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO study VALUES (1, ?, ?, ?, ?, ?, ?)",
                         (name, json.dumps(spec_dict), spec_hash, SCHEMA_VERSION,
                          json.dumps(versions(), sort_keys=True), time.time()))
            conn.execute("COMMIT")
            conn.close()                     # checkpoints and removes the side file's WAL
            for side in ("-wal", "-shm"):    # an old store's WAL must never meet the new one
                Path(str(path) + side).unlink(missing_ok=True)
            os.replace(tmp, path)
        except BaseException as exc:
            remove_creation_leftovers(study_dir)
            if isinstance(exc, sqlite3.OperationalError):
                raise store_error(exc, path) from None
            raise
        return cls(path, cls._connect(path))

    def close(self) -> None:
        self.conn.close()

    # -- transactions -----------------------------------------------------------------
    class _Tx:
        def __init__(self, conn):
            self.conn = conn

        def __enter__(self):
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn

        def __exit__(self, et, ev, tb):
            self.conn.execute("COMMIT" if et is None else "ROLLBACK")

    def transaction(self):
        return Store._Tx(self.conn)

    # -- study ------------------------------------------------------------------------
    def study(self) -> dict:
        row = self.conn.execute(
            "SELECT name, spec, spec_hash, versions, created FROM study").fetchone()
        spec = parse_json(row[1], str(self.path), field="study.spec", constants=True)
        if not isinstance(spec, dict):
            raise NesyError(f"the stored spec is not an object: a damaged store; {RECOVER}",
                            file=str(self.path), field="study.spec")
        return {"name": row[0], "spec": spec, "spec_hash": row[2],
                "versions": parse_json(row[3], str(self.path), field="study.versions"),
                "created": row[4]}

    def set_spec(self, spec_dict: dict, spec_hash: str) -> None:
        with self.transaction():
            self.conn.execute("UPDATE study SET spec = ?, spec_hash = ?",
                              (json.dumps(spec_dict), spec_hash))

    def set_note(self, key: str, value) -> None:
        """Record a fact about the study (JSON value) under ``key``."""
        self.conn.executescript(_NOTES)
        with self.transaction():
            self.conn.execute("INSERT OR REPLACE INTO notes (key, value) VALUES (?, ?)",
                              (key, json.dumps(value)))

    def note(self, key: str, default=None):
        """A recorded fact (``default`` when absent, or in a store made before notes)."""
        try:
            row = self.conn.execute("SELECT value FROM notes WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:
            return default
        if row is None:
            return default
        try:
            return json.loads(row[0])
        except ValueError:
            return default

    def axis_columns(self) -> list[str]:
        cols = [r[1] for r in self.conn.execute("PRAGMA table_info(cells)")]
        return [c for c in cols if c.startswith("ax_")]

    # -- cells ------------------------------------------------------------------------
    def add_cells(self, cells) -> int:
        """Insert cells that are not there yet (existing cells keep their status)."""
        cells = list(cells)
        have = set(self.axis_columns())
        names = sorted({a for c in cells for a in c.axes})
        with self.transaction():
            for a in names:
                col = _axis_column(a)
                if col not in have:
                    self.conn.execute(f'ALTER TABLE cells ADD COLUMN "{col}"')
                    self.conn.execute(f'CREATE INDEX IF NOT EXISTS "idx_{col}" ON cells("{col}")')
                    have.add(col)
            before = self.conn.total_changes
            now = time.time()
            # a cell already here under an id of an older nesybench (which told 1 from
            # 1.0) is the same cell: matched by its axis values compared by value
            from .spec import cell_key  # noqa: PLC0415

            known = {cell_key(json.loads(a), r) for a, r in
                     self.conn.execute("SELECT axes, rep FROM cells")}
            for c in cells:
                if cell_key(c.axes, c.rep) in known:
                    continue
                cols = ["cell_id", "params", "axes", "rep", "seed", "status", "queued"]
                vals = [c.cell_id, json.dumps(c.params, sort_keys=True),
                        json.dumps(c.axes, sort_keys=True), c.rep, c.seed, "queued", now]
                for a, v in c.axes.items():
                    cols.append(_axis_column(a))
                    vals.append(json.dumps(v) if isinstance(v, (list, dict)) else v)
                quoted = ", ".join(f'"{x}"' for x in cols)
                self.conn.execute(
                    f"INSERT OR IGNORE INTO cells ({quoted}) VALUES "
                    f"({', '.join('?' * len(vals))})", vals)
            return self.conn.total_changes - before

    def pending(self, retry_failed: bool = True) -> list[str]:
        statuses = ("queued", "running", "failed") if retry_failed else ("queued", "running")
        q = f"SELECT cell_id FROM cells WHERE status IN ({','.join('?' * len(statuses))})"
        return [r[0] for r in self.conn.execute(q, statuses)]

    def mark_running(self, cell_ids) -> int:
        """Mark cells running; returns the attempt number of the (last) cell."""
        now = time.time()
        with self.transaction():
            self.conn.executemany(
                "UPDATE cells SET status = 'running', started = ?, attempts = attempts + 1 "
                "WHERE cell_id = ?", [(now, c) for c in cell_ids])
            row = self.conn.execute("SELECT attempts FROM cells WHERE cell_id = ?",
                                    (list(cell_ids)[-1],)).fetchone()
        return row[0] if row else 1

    def commit_outcome(self, outcome, study_dir: Path, attempt: int | None = None) -> None:
        """Write the artifact files, then the cell's rows, in one transaction. An OS error
        (full disk, read-only folder) removes what this call wrote and is raised."""
        art_rows = []
        written: list[Path] = []
        try:
            for rel, data in sorted(outcome.artifacts.items()):
                dest = Path(study_dir) / "artifacts" / outcome.cell_id / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                part = dest.with_name(dest.name + ".part")
                written.append(part)
                try:
                    part.write_bytes(data)
                    os.replace(part, dest)
                except OSError as exc:
                    if exc.filename is None:        # a failed write() names no file
                        raise OSError(exc.errno, exc.strerror, str(part)) from None
                    raise
                written[-1] = dest
                art_rows.append((outcome.cell_id, dest.relative_to(study_dir).as_posix(),
                                 hashlib.sha256(data).hexdigest(), len(data)))
            self._commit_rows(outcome, art_rows, attempt)
        except (OSError, sqlite3.OperationalError):
            for p in written:
                try:
                    p.unlink(missing_ok=True)
                except OSError:
                    pass
            raise

    def _commit_rows(self, outcome, art_rows, attempt) -> None:
        with self.transaction():
            self.conn.execute("DELETE FROM metrics WHERE cell_id = ?", (outcome.cell_id,))
            self.conn.execute("DELETE FROM artifacts WHERE cell_id = ?", (outcome.cell_id,))
            self.conn.executemany(
                "INSERT INTO metrics (cell_id, name, step, value) VALUES (?, ?, ?, ?)",
                [(outcome.cell_id, n, s, v) for n, s, v in outcome.curves] +
                [(outcome.cell_id, n, None, v) for n, v in sorted(outcome.final.items())])
            self.conn.executemany("INSERT INTO artifacts VALUES (?, ?, ?, ?)", art_rows)
            self.conn.execute(
                "UPDATE cells SET status = ?, error = ?, started = ?, finished = ?, "
                "seconds = ?, host = ?, pid = ? WHERE cell_id = ?",
                (outcome.status, outcome.error, outcome.started, outcome.finished,
                 outcome.finished - outcome.started, outcome.host, outcome.pid,
                 outcome.cell_id))
            if attempt is None:
                attempt = self.conn.execute("SELECT attempts FROM cells WHERE cell_id = ?",
                                            (outcome.cell_id,)).fetchone()[0]
            self.conn.execute(
                "INSERT OR REPLACE INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (outcome.cell_id, attempt, outcome.status, outcome.error, outcome.started,
                 outcome.finished, outcome.host, outcome.pid))

    def reset_running(self) -> int:
        """Cells left 'running' by a killed driver go back to 'queued'."""
        with self.transaction():
            cur = self.conn.execute(
                "UPDATE cells SET status = 'queued' WHERE status = 'running'")
            return cur.rowcount

    # -- reading ----------------------------------------------------------------------
    def attempts(self, cell_id: str | None = None) -> list[dict]:
        """Every recorded run of the cells (a store written before attempts were kept has
        none)."""
        q = ("SELECT cell_id, attempt, status, error, started, finished, host, pid "
             "FROM attempts")
        args: tuple = ()
        if cell_id is not None:
            q += " WHERE cell_id = ?"
            args = (cell_id,)
        q += " ORDER BY cell_id, attempt"
        try:
            rows = list(self.conn.execute(q, args))
        except sqlite3.OperationalError:
            return []
        keys = ("cell_id", "attempt", "status", "error", "started", "finished", "host", "pid")
        return [dict(zip(keys, r)) for r in rows]

    def counts(self) -> dict:
        out = {"queued": 0, "running": 0, "done": 0, "failed": 0}
        for status, n in self.conn.execute("SELECT status, COUNT(*) FROM cells GROUP BY status"):
            out[status] = n
        return out

    def cells(self, status: str | None = None, *, by_id: bool = False) -> list[dict]:
        q = ("SELECT cell_id, params, axes, rep, seed, status, error, seconds, host, "
             "attempts, started, finished, pid FROM cells")
        args: tuple = ()
        if status:
            q += " WHERE status = ?"
            args = (status,)
        q += " ORDER BY cell_id" if by_id else " ORDER BY rowid"
        def obj(text, field):
            value = parse_json(text, str(self.path), field=field, constants=True)
            if not isinstance(value, dict):
                raise NesyError(f"a cell's {field} is not an object: a damaged store; "
                                f"{RECOVER}", file=str(self.path), field=field)
            return value
        return [{"cell_id": check_cell_id(r[0], self.path), "params": obj(r[1], "params"),
                 "axes": obj(r[2], "axes"), "rep": r[3], "seed": r[4], "status": r[5],
                 "error": r[6], "seconds": r[7], "host": r[8], "attempts": r[9],
                 "started": r[10], "finished": r[11], "pid": r[12]}
                for r in self.conn.execute(q, args)]

    def metric_rows(self, name: str | None = None, final: bool | None = None,
                    *, by_id: bool = False) -> list[tuple]:
        q = "SELECT cell_id, name, step, value FROM metrics"
        cond, args = [], []
        if name is not None:
            cond.append("name = ?")
            args.append(name)
        if final is True:
            cond.append("step IS NULL")
        elif final is False:
            cond.append("step IS NOT NULL")
        if cond:
            q += " WHERE " + " AND ".join(cond)
        q += " ORDER BY cell_id, rowid" if by_id else " ORDER BY rowid"
        return list(self.conn.execute(q, args))

    def artifact_rows(self) -> list[tuple]:
        return list(self.conn.execute(
            "SELECT cell_id, path, sha256, bytes FROM artifacts ORDER BY cell_id, path"))


def remove_creation_leftovers(study_dir) -> list[Path]:
    """Remove the side files of a creation that was interrupted (``results.sqlite.creating``
    and its ``-wal``/``-shm``); returns what was removed."""
    gone = []
    for p in Path(study_dir).glob(STORE_NAME + ".creating*"):
        try:
            p.unlink()
            gone.append(p)
        except FileNotFoundError:
            pass
    return gone


def store_error(exc: sqlite3.Error, path) -> NesyError:
    """An SQLite error of the file system (full disk, read-only, permissions) as one line."""
    text = str(exc)
    if "disk is full" in text or "database or disk is full" in text:
        msg = "no space left on the device (the store is unchanged; free space and resume)"
    elif "readonly" in text or "read-only" in text:
        msg = "the results store cannot be written (read-only file or folder)"
    elif "unable to open" in text:
        msg = "cannot open the results store (missing folder or no permission)"
    elif "disk I/O error" in text:
        msg = "input/output error on the results store"
    elif "locked" in text:
        msg = "the results store is locked by another process"
    else:
        msg = f"results store error: {text}"
    return NesyError(msg, file=str(path))
