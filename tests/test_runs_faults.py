"""The sweep runner under faults: cells that crash their worker or hang, drivers killed
alone, interrupted creation, full disks, read-only and damaged stores, leftovers.

Every test uses real processes, real SQLite files and (where marked) a real Ray instance.
Waits are on conditions with generous deadlines, never on elapsed time.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from nesybench.errors import NesyError
from nesybench.runs import GridSpec, Study, resume, run_grid, status
from nesybench.runs.report import export, table

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

#: two good cells per fault, and one bad cell per fault (x = 1)
FAULT_SPEC = {"study": "faults", "function": "demo.fault", "params": {"fault_on": [1]},
              "axes": {"x": [0, 1], "fault": ["none", "sigkill", "abort", "hang"]}}
CAUSES = {"sigkill": "killed by SIGKILL", "abort": "killed by SIGABRT",
          "hang": "timed out after 3 s"}


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    """A private system temp folder (scratch folders are counted in it)."""
    tmp = tmp_path / "systmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.update(extra)
    return env


def _cli(*args, env=None, **kw):
    return subprocess.run([PY, "-m", "nesybench", *args], capture_output=True, text=True,
                          env=env or _env(), **kw)


def _write_spec(path: Path, spec: dict) -> Path:
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _wait(cond, what: str, deadline: float = 60.0, step: float = 0.05):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"gave up waiting for {what}")


def _check_fault_study(study: Path, tmp: Path) -> None:
    st = status(study)
    assert (st["done"], st["failed"], st["queued"], st["running"]) == (5, 3, 0, 0)
    fails = {f["axes"]["fault"]: f for f in Study(study).failures()}
    assert set(fails) == set(CAUSES)
    for fault, cause in CAUSES.items():
        err = fails[fault]["error"]
        assert err.startswith(f"worker process {cause}") or err.startswith(cause), err
        assert fails[fault]["axes"]["x"] == 1
        assert [a["attempt"] for a in fails[fault]["attempts_log"]] == [1]
    # the cell's last output lines are part of the record of a crash
    assert "fault cell x=1 starting" in fails["sigkill"]["error"]
    assert "Fatal Python error: Aborted" in fails["abort"]["error"]
    done = Study(study).rows()
    assert sorted((r["x"], r["fault"]) for r in done) == \
        [(0, "abort"), (0, "hang"), (0, "none"), (0, "sigkill"), (1, "none")]
    assert all(r["y"] == 2.0 * r["x"] for r in done)
    # no scratch folder is left but those kept for failed cells, named in their failure
    assert not list(tmp.glob("nesybench-cell-*"))
    kept = sorted(tmp.glob("nesybench-failed-cell-*"))
    assert len(kept) == 3
    for p in kept:
        assert (p / "partial.txt").exists()
        assert any(f"scratch folder kept: {p}" in f["error"] for f in fails.values())


# -- a cell that crashes its worker or hangs ---------------------------------------------------

@pytest.mark.timing
def test_crashing_and_hanging_cells_fail_with_their_cause_local(tmp_path, tmpdir_env):
    spec = _write_spec(tmp_path / "faults.yaml", FAULT_SPEC)
    study = tmp_path / "study"
    r = _cli("runs", "start", str(spec), "--out", str(study), "-j", "2", "-q",
             "--cell-timeout", "3", "--json", env=_env(TMPDIR=str(tmpdir_env)), timeout=300)
    assert r.returncode == 1, r.stderr          # some cell failed: not a success
    summary = json.loads(r.stdout)
    assert (summary["done"], summary["failed"]) == (5, 3)
    _check_fault_study(study, tmpdir_env)
    r = _cli("runs", "status", str(study), "--failed")
    assert r.returncode == 0 and "killed by SIGKILL" in r.stdout and "finished" in r.stdout


def test_crashing_and_hanging_cells_fail_with_their_cause_ray(tmp_path, tmpdir_env):
    pytest.importorskip("ray")
    spec = dict(FAULT_SPEC, resources={"num_cpus": 1, "memory": "200MB"})
    path = _write_spec(tmp_path / "faults.yaml", spec)
    study = tmp_path / "study"
    r = _cli("runs", "start", str(path), "--out", str(study), "-e", "ray", "-j", "2", "-q",
             "--cell-timeout", "3", env=_env(TMPDIR=str(tmpdir_env), RAY_TMPDIR="/tmp"),
             timeout=300)
    assert r.returncode == 1, r.stderr
    _check_fault_study(study, tmpdir_env)
    assert "Token authentication" not in r.stderr       # Ray is quiet under -q
    assert Study(study).spec()["resources"] == {"num_cpus": 1, "memory": "200MB"}


def test_bad_resources_and_limits_are_refused():
    with pytest.raises(NesyError, match="size such as 2GB"):
        GridSpec(study="s", function="demo.toy", resources={"memory": "lots"})
    with pytest.raises(NesyError, match="unknown resource"):
        GridSpec(study="s", function="demo.toy", resources={"gpus": 1})
    with pytest.raises(NesyError) as err:
        GridSpec(study="s", function="demo.toy", timeout=0)
    assert err.value.field == "timeout"
    with pytest.raises(NesyError) as err:
        GridSpec(study="s", function="demo.toy", max_attempts=0)
    assert err.value.field == "max_attempts"


# -- attempts, retries and the metric rows they leave ------------------------------------------

def _metric_rows(study: Path) -> dict:
    con = sqlite3.connect(study / "results.sqlite")
    try:
        out: dict = {}
        for cid, name, step in con.execute("SELECT cell_id, name, step FROM metrics"):
            out.setdefault(cid, []).append((name, step))
        return out
    finally:
        con.close()


@pytest.mark.parametrize("executor, workers", [("inline", None), ("local", 2)])
def test_a_cell_that_fails_then_succeeds_keeps_one_set_of_metrics(tmp_path, tmpdir_env,
                                                                   executor, workers):
    state = tmp_path / "state"
    state.mkdir()
    spec = GridSpec(study="flaky", function="demo.fault", axes={"x": [0, 1, 2]},
                    params={"fail_times": 1, "state": str(state)}, max_attempts=2)
    res = run_grid(spec, tmp_path / "s", executor=executor, workers=workers, progress=False)
    assert (res.summary.done, res.summary.failed) == (3, 0)
    rows = _metric_rows(tmp_path / "s")
    assert len(rows) == 3
    for cid, names in rows.items():     # 3 curve points and 2 finals, once each
        assert sorted(names, key=str) == sorted(
            [("loss", 0), ("loss", 1), ("loss", 2), ("seed_mod", None), ("y", None)], key=str)
    attempts = Study(tmp_path / "s").attempts()
    assert [(a["attempt"], a["status"]) for a in attempts] == [(1, "failed"), (2, "done")] * 3
    assert all("planned failure 1 of 1" in a["error"] for a in attempts if a["attempt"] == 1)
    assert not list(tmpdir_env.glob("nesybench-*"))


def test_max_attempts_bounds_the_retries_and_no_retry_failed_leaves_failures(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    spec = GridSpec(study="flaky", function="demo.fault", axes={"x": [0, 1]},
                    params={"fail_times": 3, "state": str(state)})
    res = run_grid(spec, tmp_path / "s", executor="inline", max_attempts=2, progress=False)
    assert (res.summary.done, res.summary.failed) == (0, 2)
    assert [a["attempt"] for a in Study(tmp_path / "s").attempts()] == [1, 2, 1, 2]
    # --no-retry-failed: the failed cells are left alone (not run, not counted again)
    r = _cli("runs", "resume", str(tmp_path / "s"), "-e", "inline", "--no-retry-failed",
             "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ran"] == 0
    assert len(Study(tmp_path / "s").attempts()) == 4
    assert sorted(p.read_text() for p in state.iterdir()) == ["2", "2"]
    # a plain resume runs them again: attempt 3 fails, attempt 4 succeeds
    r = _cli("runs", "resume", str(tmp_path / "s"), "-e", "inline", "--max-attempts", "2",
             "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["done"] == 2
    log = Study(tmp_path / "s").attempts()
    assert [(a["attempt"], a["status"]) for a in log] == \
        [(1, "failed"), (2, "failed"), (3, "failed"), (4, "done")] * 2


# -- workers die with their driver -------------------------------------------------------------

def _descendants(pid: int) -> dict[int, int]:
    """pid -> start time of every descendant of ``pid`` (from /proc)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                text = (entry / "stat").read_text()
            except OSError:
                continue
            fields = text[text.rindex(")") + 2:].split()
            table[int(entry.name)] = (int(fields[1]), int(fields[19]), fields[0])
    out = {}
    grew = True
    while grew:
        grew = False
        for p, (ppid, start, _) in table.items():
            if (ppid == pid or ppid in out) and p not in out:
                out[p] = start
                grew = True
    return out


def _alive(pid: int, start: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[19]) == start and fields[0] != "Z"


@pytest.mark.timing
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("executor", ["local", "ray"])
def test_workers_die_with_a_driver_killed_alone(tmp_path, executor):
    if executor == "ray":
        pytest.importorskip("ray")
    spec = _write_spec(tmp_path / "hang.yaml", {
        "study": "hang", "function": "demo.fault", "params": {"fault": "hang"},
        "axes": {"x": [0, 1, 2, 3]}})
    study = tmp_path / "study"
    proc = subprocess.Popen([PY, "-m", "nesybench", "runs", "start", str(spec), "--out",
                             str(study), "-e", executor, "-j", "2", "-q"], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # both cells are running (their output came through the workers)
        _wait(lambda: (study / "results.sqlite").exists() and
              status(study)["running"] >= 2 and _descendants(proc.pid), "cells running",
              deadline=120)
        if executor == "ray":      # the cells' processes under Ray's workers are up
            _wait(lambda: sum("nesybench.runs.worker" in _cmdline(p)
                              for p in _descendants(proc.pid)) >= 2, "ray cells", 120)
        else:
            _wait(lambda: sum("nesybench.runs.worker" in _cmdline(p)
                              for p in _descendants(proc.pid)) >= 2, "workers", 60)
        family = _descendants(proc.pid)
        assert family
        proc.kill()                # the driver alone, as the OOM killer does
        proc.wait(timeout=30)
        try:
            _wait(lambda: not any(_alive(p, t) for p, t in family.items()),
                  "every worker to die with the driver", deadline=30)
        except AssertionError:
            left = [_cmdline(p)[:80] for p, t in family.items() if _alive(p, t)]
            raise AssertionError(f"still running after the driver died: {left}") from None
        # nobody holds the caller's output open: both pipes reach their end
        assert proc.stdout.read() is not None and proc.stderr.read() is not None
    finally:
        if proc.poll() is None:
            proc.kill()
    st = status(study)
    assert st["state"] == "interrupted" and st["pid"] is None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


# -- status: running vs interrupted; scratch folders after SIGTERM -----------------------------

@pytest.mark.timing
def test_status_tells_running_from_interrupted_and_sigterm_leaves_no_scratch(tmp_path,
                                                                            tmpdir_env):
    spec = _write_spec(tmp_path / "hang.yaml", {
        "study": "hang", "function": "demo.fault", "params": {"fault": "hang"},
        "axes": {"x": [0, 1, 2]}})
    study = tmp_path / "study"
    proc = subprocess.Popen([PY, "-m", "nesybench", "runs", "start", str(spec), "--out",
                             str(study), "-j", "2", "-q"], env=_env(TMPDIR=str(tmpdir_env)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait(lambda: (study / "results.sqlite").exists() and
              status(study)["running"] == 2, "two running cells", deadline=120)
        st = status(study)
        assert st["state"] == "running" and st["pid"] == proc.pid
        r = _cli("runs", "status", str(study))
        assert f"running (pid {proc.pid})" in r.stdout
        assert len(list(tmpdir_env.glob("nesybench-cell-*"))) == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not list(tmpdir_env.glob("nesybench-*"))
    st = status(study)
    assert st["state"] == "interrupted" and st["pid"] is None
    assert "interrupted" in _cli("runs", "status", str(study)).stdout


# -- creation, OS errors, read-only and damaged stores -----------------------------------------

def test_an_interrupted_creation_is_cleaned_on_the_next_start(tmp_path):
    c = tmp_path / "c"
    c.mkdir()
    (c / "results.sqlite.creating").write_bytes(b"half")
    (c / "results.sqlite.creating-wal").write_bytes(b"half")
    with pytest.raises(NesyError, match="creation was interrupted"):
        resume(c, executor="inline")
    res = run_grid(GridSpec(study="t", function="demo.toy", axes={"x": [1, 2]}), c,
                   executor="inline", progress=False)
    assert res.summary.done == 2
    assert not list(c.glob("results.sqlite.creating*"))


def test_a_full_disk_is_one_line_and_leaves_no_partial_file(tmp_path):
    spec = GridSpec(study="t", function="demo.toy", axes={"x": [1.0, 2.0]},
                    params={"artifact": True})
    study = tmp_path / "s"
    run_grid(GridSpec(study="t", function="demo.toy", axes={"x": [1.0]},
                      params={"artifact": True}), study, executor="inline", progress=False)
    cell = spec.cells()[1]
    part = study / "artifacts" / cell.cell_id / "values.txt.part"
    part.parent.mkdir(parents=True)
    part.symlink_to("/dev/full")           # writing the artifact gives ENOSPC
    path = _write_spec(tmp_path / "t.yaml", {"study": "t", "function": "demo.toy",
                                             "axes": {"x": [1.0, 2.0]},
                                             "params": {"artifact": True}})
    r = _cli("runs", "start", str(path), "--out", str(study), "-e", "inline", "-q")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"nesybench: error: {part}: no space left on the device"]
    assert not list(study.rglob("*.part"))
    st = status(study)
    assert st["done"] == 1 and st["failed"] == 0
    r = _cli("runs", "resume", str(study), "-e", "inline", "-q")
    assert r.returncode == 0, r.stderr
    assert status(study)["done"] == 2


@contextlib.contextmanager
def _readonly(folder: Path):
    """``folder`` on a read-only file system (a tmpfs remounted read-only, where the
    caller may mount), else made unwritable (not root); skips where neither works."""
    if os.geteuid() == 0:
        mnt = folder.with_name(folder.name + "-ro")
        mnt.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)],
                          capture_output=True).returncode != 0:
            mnt.rmdir()
            pytest.skip("cannot mount a tmpfs here")
        try:
            subprocess.run(["cp", "-a", f"{folder}/.", str(mnt)], check=True)
            subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
            yield mnt
        finally:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
            mnt.rmdir()
    else:
        mode = folder.stat().st_mode
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(mode)


def test_a_finished_study_is_readable_on_a_read_only_file_system(tmp_path):
    spec = _write_spec(tmp_path / "t.yaml", {"study": "t", "function": "demo.toy",
                                             "axes": {"x": [1, 2]}, "repetitions": 2})
    study = tmp_path / "s"
    assert _cli("runs", "start", str(spec), "--out", str(study), "-e", "inline",
                "-q").returncode == 0
    assert not (study / "results.sqlite-wal").exists()
    with _readonly(study) as ro:
        for args in (["status", str(ro)], ["table", str(ro)],
                     ["export", str(ro), "--csv", str(tmp_path / "csv")],
                     ["plot", str(ro), "--x", "x", "--y", "y", "-o", str(tmp_path / "p.png")]):
            r = _cli("runs", *args)
            assert r.returncode == 0, (args, r.stderr)
        assert sorted(p.name for p in ro.iterdir()) == \
            sorted(p.name for p in study.iterdir())         # nothing was created there
        for args in (["start", str(spec), "--out", str(ro), "-e", "inline"],
                     ["resume", str(ro), "-e", "inline"]):
            r = _cli("runs", *args)
            assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
            assert "Traceback" not in r.stderr
    assert len((tmp_path / "csv" / "cells.csv").read_text().splitlines()) == 5


def test_a_damaged_store_is_refused_with_how_to_recover(tmp_path):
    spec = GridSpec(study="t", function="demo.toy", axes={"x": list(range(40))},
                    params={"steps": 40}, repetitions=2)
    run_grid(spec, tmp_path / "s", executor="inline", progress=False)
    db = tmp_path / "s" / "results.sqlite"
    size = db.stat().st_size
    assert size > 64 * 1024
    data = bytearray(db.read_bytes())
    rng = random.Random(0)
    mid = size // 2
    data[mid:mid + 3072] = bytes(rng.randrange(256) for _ in range(3072))
    db.write_bytes(bytes(data))
    for args in (["status", str(tmp_path / "s")], ["resume", str(tmp_path / "s"), "-q"]):
        r = _cli("runs", *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "runs export" in lines[0], r.stderr
        assert "damaged" in lines[0] or "corrupt" in lines[0]


# -- a crash in the middle of a commit ---------------------------------------------------------

def test_resume_after_a_crash_in_the_middle_of_a_commit(tmp_path):
    """The driver dies after a cell's artifact files are written, before its rows are
    committed: resume runs that cell again and ends with one set of rows per cell."""
    study = tmp_path / "s"
    script = tmp_path / "crash.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal
        from nesybench.runs import GridSpec, run_grid
        from nesybench.runs.store import Store
        calls = []
        real = Store._commit_rows
        def commit_rows(self, *a, **kw):
            calls.append(1)
            if len(calls) == 3:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(self, *a, **kw)
        Store._commit_rows = commit_rows
        spec = GridSpec(study="t", function="demo.toy", axes={{"x": [0, 1, 2, 3, 4]}},
                        params={{"artifact": True}})
        run_grid(spec, {str(study)!r}, executor="inline", progress=False)
    """))
    r = subprocess.run([PY, str(script)], env=_env(), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert status(study)["done"] == 2
    r = _cli("runs", "resume", str(study), "-e", "inline", "-q", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ran"] == 3
    rows = _metric_rows(study)
    assert len(rows) == 5 and all(len(v) == 3 + 2 for v in rows.values())
    con = sqlite3.connect(study / "results.sqlite")
    arts = con.execute("SELECT path, sha256 FROM artifacts").fetchall()
    con.close()
    assert len(arts) == 5 and not list(study.rglob("*.part"))
    import hashlib

    for rel, sha in arts:
        assert hashlib.sha256((study / rel).read_bytes()).hexdigest() == sha


# -- axis values by value; tables and exports ---------------------------------------------------

def test_one_and_one_point_zero_are_the_same_cell(tmp_path):
    a = GridSpec(study="t", function="demo.toy", axes={"x": [1, 2]})
    b = GridSpec(study="t", function="demo.toy", axes={"x": [1.0, 2.0, 3.0]})
    assert [c.cell_id for c in a.cells()] == [c.cell_id for c in b.cells()][:2]
    assert [c.seed for c in a.cells()] == [c.seed for c in b.cells()][:2]
    run_grid(a, tmp_path / "s", executor="inline", progress=False)
    res = run_grid(b, tmp_path / "s", executor="inline", progress=False)
    assert (res.summary.ran, res.summary.skipped) == (1, 2)
    header, rows = table(tmp_path / "s", metrics=["y"], agg=["mean", "std", "count"])
    assert [r[0] for r in rows] == [1, 2, 3]
    assert Study(tmp_path / "s").spec()["axes"]["x"] == [1, 2, 3.0]
    with pytest.raises(NesyError, match="twice"):
        GridSpec(study="t", function="demo.toy", axes={"x": [1, 1.0]})
    # booleans are not numbers here
    assert len(GridSpec(study="t", function="demo.toy", axes={"x": [1, True]}).cells()) == 2


def test_table_counts_failures_and_exports_are_the_same_bytes(tmp_path):
    spec = GridSpec(study="t", function="demo.toy", axes={"x": [0, 1, 2]},
                    params={"fail_if": 1, "artifact": True}, repetitions=2)
    one = run_grid(spec, tmp_path / "one", executor="local", workers=1, progress=False)
    two = run_grid(spec, tmp_path / "two", executor="local", workers=2, progress=False)
    assert one.summary.failed == two.summary.failed == 2
    header, rows = table(tmp_path / "one", group_by=["x"], metrics=["y"],
                         agg=["mean", "std", "count"])
    assert header == ["x", "cells", "n_failed", "y_mean", "y_std", "y_count"]
    by_x = {r[0]: r for r in rows}
    assert by_x[1][1:3] == [0, 2] and isinstance(by_x[1][5], int) and by_x[1][5] == 0
    assert by_x[0][1:3] == [2, 0] and isinstance(by_x[0][5], int)
    _, single = table(tmp_path / "one", group_by=["x", "rep"], metrics=["y"], agg=["std"])
    import math

    assert all(math.isnan(r[-1]) for r in single)           # the std of one value
    r = _cli("runs", "table", str(tmp_path / "one"), "-g", "x", "-m", "y", "--agg",
             "count", "--csv")
    assert r.stdout.splitlines()[1:] == ["0,2,0,2", "1,0,2,0", "2,2,0,2"]
    export(tmp_path / "one", tmp_path / "e1")
    export(tmp_path / "two", tmp_path / "e2")
    for name in ("cells.csv", "metrics.csv", "artifacts.csv"):
        assert (tmp_path / "e1" / name).read_bytes() == (tmp_path / "e2" / name).read_bytes()
    import csv

    with open(tmp_path / "e1" / "cells.csv", newline="") as fh:
        ids = [row["cell_id"] for row in csv.DictReader(fh)]
    assert len(ids) == 6 and ids == sorted(ids)
