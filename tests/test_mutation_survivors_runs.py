"""The results store driven directly (no sweep, no workers) on the cases the mutation run
found untested: every field of a cell row and of the study row, counts of statuses nobody
has, the metric filters, what add_cells and mark_running return, the seconds of a cell,
checked and read-only opening, a store of the first schema (before attempts were kept),
and the one-line message of each SQLite file-system error. Every expected value is the
input written by hand."""
from __future__ import annotations

import json
import sqlite3

import pytest

from nesybench.errors import NesyError
from nesybench.runs.cell import CellOutcome
from nesybench.runs.spec import Cell
from nesybench.runs.store import STORE_NAME, Store, store_error

SPEC = {"study": "t", "axes": {"x": [1, 2]}}


def _cells():
    return [Cell("c1", {"x": 1, "k": "a"}, {"x": 1}, 0, 11),
            Cell("c2", {"x": 2, "k": "a"}, {"x": 2}, 1, 22)]


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "s", SPEC, "hash0", "t")
    yield s
    s.close()


def test_study_row_and_cells_field_by_field(store, tmp_path):
    st = store.study()
    assert st["name"] == "t" and st["spec"] == SPEC and st["spec_hash"] == "hash0"
    assert "python" in st["versions"] and isinstance(st["created"], float)
    assert store.add_cells(_cells()) == 2
    assert store.add_cells(_cells()) == 0                   # already there: nothing new
    assert store.pending() == ["c1", "c2"]
    assert store.counts() == {"queued": 2, "running": 0, "done": 0, "failed": 0}
    assert store.mark_running(["c1"]) == 1
    assert store.mark_running(["c1", "c2"]) == 1            # the attempt of the last cell
    assert store.mark_running(["c2", "c1"]) == 3
    # a cell the store does not hold: no row changes, and it counts as a first attempt
    assert store.mark_running(["c9"]) == 1
    assert store.counts() == {"queued": 0, "running": 2, "done": 0, "failed": 0}
    out = CellOutcome("c1", "done", final={"acc": 0.75, "loss": 0.5},
                      curves=[("loss", 0, 2.0), ("loss", 1, 1.0)],
                      artifacts={"a/b.txt": b"hi"}, started=100.0, finished=103.5,
                      host="h1", pid=42)
    store.commit_outcome(out, tmp_path / "s")
    bad = CellOutcome("c2", "failed", error="boom", started=10.0, finished=10.25, host="h2",
                      pid=7)
    store.commit_outcome(bad, tmp_path / "s", attempt=9)
    assert store.counts() == {"queued": 0, "running": 0, "done": 1, "failed": 1}
    c1, c2 = store.cells()
    assert c1 == {"cell_id": "c1", "params": {"k": "a", "x": 1}, "axes": {"x": 1}, "rep": 0,
                  "seed": 11, "status": "done", "error": None, "seconds": 3.5, "host": "h1",
                  "attempts": 3, "started": 100.0, "finished": 103.5, "pid": 42}
    assert c2["status"] == "failed" and c2["error"] == "boom" and c2["seconds"] == 0.25
    assert c2["rep"] == 1 and c2["seed"] == 22 and c2["attempts"] == 2
    assert [c["cell_id"] for c in store.cells("failed")] == ["c2"]
    assert [c["cell_id"] for c in store.cells(by_id=True)] == ["c1", "c2"]
    assert store.pending() == ["c2"] and store.pending(retry_failed=False) == []
    # metric rows: all, by name, final only, curves only
    assert store.metric_rows("acc") == [("c1", "acc", None, 0.75)]
    assert store.metric_rows(final=True) == [("c1", "acc", None, 0.75),
                                             ("c1", "loss", None, 0.5)]
    assert store.metric_rows("loss", final=False) == [("c1", "loss", 0, 2.0),
                                                      ("c1", "loss", 1, 1.0)]
    assert len(store.metric_rows()) == 4
    assert store.artifact_rows()[0][:2] == ("c1", "artifacts/c1/a/b.txt")
    assert (tmp_path / "s" / "artifacts" / "c1" / "a" / "b.txt").read_bytes() == b"hi"
    att = store.attempts()
    assert [(a["cell_id"], a["attempt"], a["status"]) for a in att] == [("c1", 3, "done"),
                                                                        ("c2", 9, "failed")]
    assert store.attempts("c2")[0]["error"] == "boom"
    assert store.reset_running() == 0


def test_checked_and_read_only_opening(store, tmp_path):
    store.add_cells(_cells())
    ro = Store.open(tmp_path / "s", readonly=True, check=True)
    try:
        assert ro.readonly and [c["cell_id"] for c in ro.cells()] == ["c1", "c2"]
        with pytest.raises(sqlite3.OperationalError):
            ro.conn.execute("DELETE FROM cells")
    finally:
        ro.close()


def test_a_store_of_the_first_schema_opens_and_gains_attempts(tmp_path):
    study = tmp_path / "old"
    study.mkdir()
    con = sqlite3.connect(study / STORE_NAME)
    con.executescript("""
        CREATE TABLE study (id INTEGER PRIMARY KEY, name TEXT, spec TEXT, spec_hash TEXT,
                            schema_version INTEGER, versions TEXT, created REAL);
        CREATE TABLE cells (cell_id TEXT PRIMARY KEY, params TEXT, axes TEXT, rep INTEGER,
                            seed INTEGER, status TEXT, error TEXT, queued REAL, started REAL,
                            finished REAL, seconds REAL, host TEXT, pid INTEGER,
                            attempts INTEGER);
        CREATE TABLE metrics (cell_id TEXT, name TEXT, step INTEGER, value REAL);
        CREATE TABLE artifacts (cell_id TEXT, path TEXT, sha256 TEXT, bytes INTEGER);
    """)
    con.execute("INSERT INTO study VALUES (1, 'old', ?, 'h', 1, '{}', 0.0)",
                (json.dumps(SPEC),))
    con.commit()
    con.close()
    ro = Store.open(study, readonly=True)
    assert ro.study()["name"] == "old" and ro.attempts() == []      # no attempts table
    ro.close()
    rw = Store.open(study)
    assert rw.attempts() == []
    assert "attempts" in [r[0] for r in rw.conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")]
    rw.close()
    con = sqlite3.connect(study / STORE_NAME)
    con.execute("UPDATE study SET schema_version = 2")
    con.commit()
    con.close()
    with pytest.raises(NesyError, match="schema 2"):
        Store.open(study, readonly=True)


@pytest.mark.parametrize("text, message", [
    ("database or disk is full", "no space left"),
    ("disk is full", "no space left"),
    ("attempt to write a readonly database", "cannot be written"),
    ("read-only file system", "cannot be written"),
    ("unable to open database file", "cannot open the results store"),
    ("disk I/O error", "input/output error"),
    ("database is locked", "locked by another process"),
    ("something else", "results store error: something else"),
])
def test_each_sqlite_error_is_one_line(text, message):
    err = store_error(sqlite3.OperationalError(text), "x/results.sqlite")
    assert message in str(err) and err.file == "x/results.sqlite"
    assert len(str(err).splitlines()) == 1


def test_an_sqlite_file_that_is_not_a_store_and_a_missing_file(tmp_path):
    # a valid SQLite database without the study table: not a results store (not "locked")
    study = tmp_path / "s"
    study.mkdir()
    con = sqlite3.connect(study / STORE_NAME)
    con.execute("CREATE TABLE other (x)")
    con.commit()
    con.close()
    for readonly in (False, True):
        with pytest.raises(NesyError, match="corrupt or not a results store") as e:
            Store.open(study, readonly=readonly)
        assert "locked" not in str(e.value)
    # read-only opening of a file that is not there: cannot be opened (not "corrupt")
    with pytest.raises(NesyError, match="cannot open the results store read-only"):
        Store._connect_ro(tmp_path / "missing" / STORE_NAME)


def test_a_failed_commit_removes_every_artifact_it_wrote(store, tmp_path):
    store.add_cells(_cells())
    arts = tmp_path / "s" / "artifacts" / "c1"
    (arts / "c.txt" / "in-the-way").mkdir(parents=True)       # c.txt cannot be replaced
    out = CellOutcome("c1", "done", final={"acc": 1.0},
                      artifacts={"a.txt": b"1", "b.txt": b"2", "c.txt": b"3"},
                      started=1.0, finished=2.0)
    with pytest.raises(OSError):
        store.commit_outcome(out, tmp_path / "s")
    assert sorted(p.name for p in arts.iterdir()) == ["c.txt"]  # a.txt and b.txt removed
    assert store.metric_rows() == [] and store.counts()["done"] == 0
