"""The sweep runner: specs and seeds, executors, the results store, resume, reports."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nesybench.errors import NesyError
from nesybench.runs import GridSpec, Study, load_spec, resume, run_grid
from nesybench.runs.report import export, plot, table

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def toy_spec(**kw) -> GridSpec:
    base = dict(study="toy", function="demo.toy", params={"steps": 3},
                axes={"x": [0.0, 1.0, 2.0], "label": ["a", "b"]}, repetitions=2, seed=7)
    base.update(kw)
    return GridSpec(**base)


def rows_by_cell(res) -> dict:
    """Everything a cell computed, keyed by its id (timings and host left out)."""
    out = {}
    for r in res.rows():
        out[r["cell_id"]] = {k: v for k, v in r.items() if k not in ("seconds",)}
    curves = sorted((c["cell_id"], c["name"], c["step"], c["value"]) for c in res.curves())
    return {"rows": out, "curves": curves}


# -- specs and seeds ---------------------------------------------------------------------

def test_cells_are_the_product_and_zip_groups_vary_together():
    spec = GridSpec(study="s", function="demo.toy", axes={"x": [1, 2], "steps": [1, 2],
                    "label": ["a", "b", "c"]}, zip_axes=[["x", "steps"]], repetitions=2)
    cells = spec.cells()
    assert len(cells) == 2 * 3 * 2
    assert {(c.axes["x"], c.axes["steps"]) for c in cells} == {(1, 1), (2, 2)}
    assert len({c.cell_id for c in cells}) == len(cells)
    assert len({c.seed for c in cells}) == len(cells)


def test_axis_forms_range_and_linspace():
    spec = load_spec({"study": "s", "function": "demo.toy",
                      "axes": {"x": {"linspace": [0, 1, 5]}, "steps": {"range": [1, 7, 2]}}})
    assert spec.axes == {"x": [0.0, 0.25, 0.5, 0.75, 1.0], "steps": [1, 3, 5]}


def test_cell_seed_depends_on_its_values_not_its_position():
    small = {c.cell_id: c.seed for c in toy_spec().cells()}
    bigger = toy_spec(axes={"x": [-1.0, 0.0, 1.0, 2.0, 3.0], "label": ["z", "a", "b"]})
    big = {c.cell_id: c.seed for c in bigger.cells()}
    assert set(small) < set(big)
    assert all(big[k] == v for k, v in small.items())
    other_seed = {c.cell_id: c.seed for c in toy_spec(seed=8).cells()}
    assert set(other_seed) == set(small) and all(other_seed[k] != small[k] for k in small)


@pytest.mark.parametrize("bad, field", [
    ({"axes": {"x": []}}, "axes.x"),
    ({"axes": {"x": [1, 1]}}, "axes.x"),
    ({"axes": {"x": {"range": [1, 5, 0]}}}, "axes.x"),
    ({"axes": {"x": {"grid": [1]}}}, "axes.x"),
    ({"axes": {"x": "abc"}}, "axes.x"),
    ({"repetitions": 0}, "repetitions"),
    ({"seed": "abc"}, "seed"),
    ({"zip": [["x"]]}, "zip[0]"),
    ({"zip": [["x", "nope"]]}, "zip[0]"),
    ({"axes": {"x": [1, 2], "label": ["a"]}, "zip": [["x", "label"]]}, "zip[0]"),
    ({"params": {"x": 1}, "axes": {"x": [1, 2]}}, "axes"),
])
def test_bad_specs_name_the_field(bad, field):
    data = {"study": "s", "function": "demo.toy", "axes": {"x": [1, 2]}}
    data.update(bad)
    with pytest.raises(NesyError) as err:
        load_spec(data, source="spec.yaml")
    assert err.value.field == field and err.value.file == "spec.yaml"


def test_unknown_keys_function_and_params_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(NesyError, match="unknown key"):
        load_spec({"study": "s", "function": "demo.toy", "axis": {}})
    with pytest.raises(NesyError, match="unknown run function"):
        run_grid(toy_spec(function="no_such"), tmp_path / "a", executor="inline")
    with pytest.raises(NesyError, match="is not registered"):
        run_grid(toy_spec(function="nesybench.nope:f"), tmp_path / "b", executor="inline")
    with pytest.raises(NesyError, match="unknown parameter 'z'"):
        run_grid(toy_spec(axes={"z": [1]}), tmp_path / "c", executor="inline")
    with pytest.raises(NesyError, match="expected int"):
        run_grid(toy_spec(params={"steps": "three"}), tmp_path / "d", executor="inline")
    with pytest.raises(NesyError, match="needs parameter 'task'"):
        run_grid(GridSpec(study="s", function="rs.count", axes={"n": [2]}), tmp_path / "e",
                 executor="inline")
    assert not any(tmp_path.iterdir())


# -- executors give the same rows ---------------------------------------------------------

def test_same_rows_inline_one_and_two_workers(tmp_path):
    spec = toy_spec(params={"steps": 3, "artifact": True})
    a = run_grid(spec, tmp_path / "inline", executor="inline", progress=False)
    b = run_grid(spec, tmp_path / "one", executor="local", workers=1, progress=False)
    c = run_grid(spec, tmp_path / "two", executor="local", workers=2, progress=False)
    assert a.summary.done == 12 and a.summary.failed == 0
    assert rows_by_cell(a) == rows_by_cell(b) == rows_by_cell(c)
    arts = sorted((tmp_path / "two" / "artifacts").rglob("values.txt"))
    assert len(arts) == 12
    # each cell's artifact holds its own seed: the file came back from the worker intact
    seeds = {r["cell_id"]: r["seed"] for r in c.rows()}
    for p in arts:
        assert p.read_text().split()[1] == str(seeds[p.parent.name])


def test_ray_executor_gives_the_same_rows(tmp_path):
    pytest.importorskip("ray")
    spec = toy_spec()
    local = run_grid(spec, tmp_path / "local", executor="local", workers=2, progress=False)
    try:
        ray_res = run_grid(spec, tmp_path / "ray", executor="ray", workers=2, progress=False)
        import ray

        assert ray.is_initialized()
        assert ray.cluster_resources().get("CPU") == 2
    finally:
        import ray

        ray.shutdown()
    assert ray_res.summary.executor == "ray"
    assert rows_by_cell(ray_res) == rows_by_cell(local)


def test_ray_missing_or_unreachable_is_one_clear_error(tmp_path, monkeypatch):
    with pytest.raises(NesyError, match="cannot reach the Ray cluster"):
        run_grid(toy_spec(), tmp_path / "s", executor="ray", address="127.0.0.1:1")
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(NesyError, match="needs Ray"):
        run_grid(toy_spec(), tmp_path / "s", executor="ray")
    assert not (tmp_path / "s").exists()


# -- failures ------------------------------------------------------------------------------

def test_failing_cells_are_recorded_and_the_sweep_goes_on(tmp_path):
    spec = toy_spec(params={"steps": 2, "fail_if": 1.0})
    res = run_grid(spec, tmp_path / "s", executor="local", workers=2, progress=False)
    assert (res.summary.done, res.summary.failed) == (8, 4)
    fails = res.failures()
    assert len(fails) == 4 and all("toy cell fails on x = 1.0" in f["error"] for f in fails)
    assert all("Traceback" in f["error"] for f in fails)
    with pytest.raises(NesyError, match="--fail-fast"):
        run_grid(spec, tmp_path / "ff", executor="inline", fail_fast=True, progress=False)


# -- the store -----------------------------------------------------------------------------

def test_store_tables_and_wal(tmp_path):
    res = run_grid(toy_spec(), tmp_path / "s", executor="inline", progress=False)
    con = sqlite3.connect(tmp_path / "s" / "results.sqlite")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    study = con.execute("SELECT name, spec, versions FROM study").fetchone()
    assert study[0] == "toy" and json.loads(study[1])["axes"]["x"] == [0.0, 1.0, 2.0]
    assert "nesybench" in json.loads(study[2]) and "python" in json.loads(study[2])
    cols = [r[1] for r in con.execute("PRAGMA table_info(cells)")]
    assert "ax_x" in cols and "ax_label" in cols
    idx = [r[1] for r in con.execute("PRAGMA index_list(cells)")]
    assert "idx_ax_x" in idx
    n_curve = con.execute("SELECT COUNT(*) FROM metrics WHERE step IS NOT NULL").fetchone()[0]
    assert n_curve == 12 * 3
    assert con.execute("SELECT COUNT(*) FROM cells WHERE status='done'").fetchone()[0] == 12
    assert len(res.rows()) == 12


def test_a_different_study_in_the_folder_is_refused_unless_force_new(tmp_path):
    run_grid(toy_spec(), tmp_path / "s", executor="inline", progress=False)
    with pytest.raises(NesyError, match="different study"):
        run_grid(toy_spec(seed=1), tmp_path / "s", executor="inline", progress=False)
    res = run_grid(toy_spec(seed=1), tmp_path / "s", executor="inline", force_new=True,
                   progress=False)
    assert res.summary.ran == 12 and len(res.rows()) == 12
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(NesyError, match="not a study"):
        run_grid(toy_spec(), tmp_path / "other", executor="inline")
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == ["notes.txt"]


def test_adding_axis_values_runs_only_the_new_cells(tmp_path):
    first = run_grid(toy_spec(), tmp_path / "s", executor="inline", progress=False)
    before = rows_by_cell(first)["rows"]
    more = toy_spec(axes={"x": [0.0, 1.0, 2.0, 3.0], "label": ["a", "b"]})
    second = run_grid(more, tmp_path / "s", executor="inline", progress=False)
    assert second.summary.ran == 4 and second.summary.skipped == 12
    after = rows_by_cell(second)["rows"]
    assert all(after[k] == v for k, v in before.items())
    assert Study(tmp_path / "s").spec()["axes"]["x"] == [0.0, 1.0, 2.0, 3.0]


def test_corrupt_or_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(NesyError, match="no results store"):
        Study(tmp_path).rows()
    (tmp_path / "results.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(NesyError, match="corrupt|not a"):
        Study(tmp_path).rows()
    with pytest.raises(NesyError, match="corrupt|not a"):
        resume(tmp_path)


def test_a_second_driver_on_the_same_study_is_refused(tmp_path):
    import fcntl

    run_grid(toy_spec(), tmp_path / "s", executor="inline", progress=False)
    with open(tmp_path / "s" / ".lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(NesyError, match="being run"):
            resume(tmp_path / "s", executor="inline")


# -- killing and resuming -----------------------------------------------------------------

SLOW_SPEC = """\
study: slow
function: demo.sleep
params: {seconds: 0.25}
axes: {i: {range: [0, 16]}}
seed: 0
"""


def _cli(*args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([PY, "-m", "nesybench", *args], capture_output=True, text=True,
                          env=env, **kw)


def _done_cells(study: Path) -> dict:
    con = sqlite3.connect(study / "results.sqlite")
    try:
        return {r[0]: (r[1], r[2]) for r in con.execute(
            "SELECT cell_id, finished, attempts FROM cells WHERE status = 'done'")}
    except sqlite3.OperationalError:      # the store is being created
        return {}
    finally:
        con.close()


@pytest.mark.timing
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_resume_after_a_kill_loses_and_reruns_no_finished_cell(tmp_path, sig):
    spec = tmp_path / "slow.yaml"
    spec.write_text(SLOW_SPEC)
    study = tmp_path / "study"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    proc = subprocess.Popen([PY, "-m", "nesybench", "runs", "start", str(spec), "--out",
                             str(study), "-j", "2", "-q"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        if (study / "results.sqlite").exists() and len(_done_cells(study)) >= 3:
            break
        time.sleep(0.05)
    if sig == signal.SIGKILL:
        os.killpg(proc.pid, sig)      # the driver and its workers, as `kill -9` of a job
    else:
        proc.send_signal(sig)         # the driver alone: it must stop its workers itself
    proc.wait(timeout=30)
    if sig == signal.SIGTERM:
        assert proc.returncode == 143, proc.stderr.read()
    before = _done_cells(study)
    assert 3 <= len(before) < 16
    res = _cli("runs", "resume", str(study), "-j", "2", "-q", "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["ran"] == 16 - len(before) and summary["skipped_done"] == len(before)
    after = _done_cells(study)
    assert len(after) == 16
    assert all(after[k] == v for k, v in before.items())   # not re-run: same finish time


def test_unguarded_script_can_use_the_process_pool(tmp_path):
    script = tmp_path / "sweep.py"
    script.write_text(textwrap.dedent(f"""
        from nesybench.runs import GridSpec, run_grid
        spec = GridSpec(study="t", function="demo.toy", axes={{"x": [1, 2, 3]}})
        res = run_grid(spec, {str(tmp_path / 'study')!r}, workers=2, progress=False)
        print(res.summary.done)
    """))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    out = subprocess.run([PY, str(script)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"


# -- reports and the CLI -------------------------------------------------------------------

def test_table_aggregates_over_repetitions(tmp_path):
    res = run_grid(toy_spec(), tmp_path / "s", executor="inline", progress=False)
    rows = res.rows()
    header, table_rows = table(tmp_path / "s", group_by=["x"], metrics=["y"],
                               agg=["mean", "min", "count"])
    assert header == ["x", "cells", "n_failed", "y_mean", "y_min", "y_count"]
    for row in table_rows:
        ys = [r["y"] for r in rows if r["x"] == row[0]]
        assert row[1] == 4 and row[2] == 0 and row[5] == 4
        assert row[3] == pytest.approx(sum(ys) / 4) and row[4] == min(ys)
    with pytest.raises(NesyError, match="unknown axis"):
        table(tmp_path / "s", group_by=["nope"])
    with pytest.raises(NesyError, match="unknown metric"):
        table(tmp_path / "s", metrics=["nope"])
    with pytest.raises(NesyError, match="unknown aggregate"):
        table(tmp_path / "s", agg=["mode"])


def test_plot_and_export(tmp_path):
    run_grid(toy_spec(), tmp_path / "s", executor="inline", progress=False)
    p1 = plot(tmp_path / "s", x="x", y="y", hue="label")
    p2 = plot(tmp_path / "s", x="step", y="loss", hue="label", out=tmp_path / "loss.svg")
    assert p1.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p1.stat().st_size > 5000
    assert p2.read_text().lstrip().startswith("<?xml")
    with pytest.raises(NesyError, match="unknown x axis"):
        plot(tmp_path / "s", x="nope", y="y")
    files = export(tmp_path / "s", tmp_path / "csv")
    assert {f.name for f in files} == {"cells.csv", "metrics.csv", "artifacts.csv",
                                       "attempts.csv", "study.json"}
    lines = (tmp_path / "csv" / "cells.csv").read_text().splitlines()
    assert lines[0] == "cell_id,x,label,rep,seed,status,error" and len(lines) == 13
    attempts = (tmp_path / "csv" / "attempts.csv").read_text().splitlines()
    assert attempts[0].startswith("cell_id,attempt,status,started,finished,seconds,host")
    assert len(attempts) == 13
    metrics = (tmp_path / "csv" / "metrics.csv").read_text().splitlines()
    assert len(metrics) == 1 + 12 * (3 + 2)


def test_cli_start_status_table_plot_export(tmp_path):
    study = tmp_path / "xor"
    spec = ROOT / "curricula" / "sweeps" / "xor_counts.yaml"
    r = _cli("runs", "start", str(spec), "--out", str(study), "-j", "2", "-q", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["done"] == 15
    r = _cli("runs", "table", str(study), "-m", "log10_count", "--agg", "mean", "--json")
    got = {(row["n"], row["map_class"]): row["log10_count_mean"] for row in json.loads(r.stdout)}
    import math
    for n in range(2, 7):      # the closed forms of the README's RS section
        assert got[(n, "disentangled")] == pytest.approx(math.log10(2 ** (n - 1)))
        assert got[(n, "perm")] == pytest.approx(math.log10(math.factorial(n) * 2 ** (n - 1)))
        assert got[(n, "joint")] == pytest.approx((2 ** n) * math.log10(2 ** (n - 1)))
    r = _cli("runs", "status", str(study), "--json")
    assert json.loads(r.stdout)["done"] == 15
    r = _cli("runs", "plot", str(study), "--x", "n", "--y", "log10_count", "--hue", "map_class")
    assert r.returncode == 0 and (study / "plots" / "log10_count_vs_n.png").exists()
    r = _cli("runs", "export", str(study), "--csv", str(tmp_path / "csv"))
    assert r.returncode == 0 and (tmp_path / "csv" / "metrics.csv").exists()
    # bad input: one line on stderr, exit 2
    for args in (["runs", "table", str(tmp_path / "missing")],
                 ["runs", "start", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o")],
                 ["runs", "plot", str(study), "--x", "zz", "--y", "count"]):
        r = _cli(*args)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "o").exists()
