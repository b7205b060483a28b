"""Specs never name code: a sweep spec's ``function`` resolves only through the registry of
run functions, and a shell learner or a learner's Prolog file, at any depth of a spec (or of
a study folder's stored cells), runs only with ``--allow-commands`` on this invocation."""
from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
import yaml

from nesybench.cli import main as cli_main
from nesybench.errors import NesyError
from nesybench.runs import registry
from nesybench.runs.runner import run_grid
from nesybench.runs.store import Store


def _run(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli_main([str(a) for a in args])
        except SystemExit as exc:
            rc = exc.code
    return rc, out.getvalue(), err.getvalue().strip()


def _one_error(*args, contains: str = "") -> str:
    rc, out, err = _run(*args)
    assert rc == 2, (out, err)
    assert len(err.splitlines()) == 1 and err.startswith("nesybench: error:"), err
    assert "Traceback" not in err and contains in err, err
    return err


def _spec(tmp: Path, data: dict, name: str = "spec.yaml") -> Path:
    p = tmp / name
    p.write_text(yaml.safe_dump(data))
    return p


TOY = {"study": "toy", "function": "demo.toy", "axes": {"x": [1, 2]}}


# ------------------------------------------------------------------ function: registry only
def test_builtins_print_is_refused_and_never_called(tmp_path):
    spec = _spec(tmp_path, {**TOY, "function": "builtins:print"})
    out = tmp_path / "study"
    rc, stdout, err = _run("runs", "start", spec, "--out", out, "-e", "inline", "-q")
    assert rc == 2 and "not registered" in err and "builtins:print" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert stdout == "" and not out.exists()          # print never ran, nothing written


def test_a_module_named_by_a_spec_is_never_imported(tmp_path, monkeypatch):
    """``this:x`` (or any module:function) is refused before the module is imported, so
    its import-time side effects never run."""
    canary = tmp_path / "imported"
    (tmp_path / "evil_cells.py").write_text(
        f"open({str(canary)!r}, 'w').close()\ndef run(p, s, c):\n    return {{}}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for fn in ("evil_cells:run", "this:x", "os:system"):
        spec = _spec(tmp_path, {**TOY, "function": fn})
        before = set(sys.modules)
        _one_error("runs", "start", spec, "--out", tmp_path / "s", "-e", "inline",
                   contains="not registered")
        assert not canary.exists()
        assert not {"evil_cells", "this"} & (set(sys.modules) - before)
        assert not (tmp_path / "s").exists()
    with pytest.raises(NesyError, match="not registered"):
        registry.resolve("evil_cells:run")
    assert not canary.exists()


def test_registered_targets_and_entry_points_still_resolve(tmp_path, monkeypatch):
    # the module:function a registered name stands for (what older studies stored)
    assert registry.resolve("nesybench.runs.demo:toy_cell") is registry.resolve("demo.toy")
    ep = EntryPoint(name="lab.toy", value="nesybench.runs.demo:toy_cell",
                    group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    assert "lab.toy" in registry.registered()
    res = run_grid({**TOY, "function": "lab.toy"}, tmp_path / "s", executor="inline",
                   progress=False)
    assert res.summary.done == 2


def test_resume_of_a_received_study_calls_only_registered_functions(tmp_path):
    out = tmp_path / "study"
    assert _run("runs", "start", _spec(tmp_path, TOY), "--out", out, "-e", "inline",
                "-q")[0] == 0
    # someone edits the stored spec to call builtins:print, and re-queues the cells
    con = sqlite3.connect(out / "results.sqlite")
    spec = json.loads(con.execute("SELECT spec FROM study").fetchone()[0])
    spec["function"] = "builtins:print"
    con.execute("UPDATE study SET spec = ?", (json.dumps(spec),))
    con.execute("UPDATE cells SET status = 'queued'")
    con.commit()
    con.close()
    rc, stdout, err = _run("runs", "resume", out, "-e", "inline", "-q")
    assert rc == 2 and "not registered" in err and len(err.splitlines()) == 1
    assert stdout == ""


# ------------------------------------------------------------------ shell learners at any depth
def test_commands_are_found_at_any_depth():
    from nesybench.runs.trust import commands_in  # noqa: PLC0415
    assert commands_in({"a": [{"b": {"system": "cmd"}}]}) == [
        ("params.a[0].b.system", "a shell learner (system: cmd)")]
    assert [f for f, _ in commands_in({"learners": {"x": {"system": "foil", "options": {
        "command": "id"}}}})] == ["params.learners.x.options.command"]
    assert [f for f, _ in commands_in([[{"options": {"aleph": "evil.pl"}}]], "axes")] == [
        "axes[0][0].options.aleph"]
    assert commands_in({"system": "foil", "options": {"command": ""}, "aleph": None}) == []


def _learn_spec(tmp: Path, canary: Path, **learner) -> dict:
    entry = learner or {"system": "cmd", "options": {"command": f"touch {canary}"}}
    return {"study": "sh", "function": "rudas.learn",
            "params": {"datasets": str(tmp), "dataset": "ds", "thresholds": [0.0],
                       "learners": {"sh": entry}},
            "axes": {"system": ["sh"]}}


@pytest.mark.parametrize("learner", [
    {},                                                           # options.command
    {"system": "cmd", "command": "touch CANARY"},                 # top-level command
    {"system": "foil", "options": {"aleph": "CANARY.pl"}},        # a learner's Prolog file
])
def test_a_shell_learner_in_study_params_needs_allow_commands(tmp_path, learner):
    canary = tmp_path / "CANARY"
    learner = json.loads(json.dumps(learner).replace("CANARY", str(canary)))
    spec = _spec(tmp_path, _learn_spec(tmp_path, canary, **learner))
    out = tmp_path / "study"
    err = _one_error("runs", "start", spec, "--out", out, "-e", "inline", "-q",
                     contains="--allow-commands")
    assert "params.learners.sh" in err
    assert not canary.exists() and not out.exists()
    with pytest.raises(NesyError, match="--allow-commands"):
        run_grid(spec, out, executor="inline", progress=False)


def test_kandy_aleph_study_spec_names_a_prolog_file(tmp_path):
    spec = _spec(tmp_path, {"study": "a", "function": "kandy.aleph",
                            "params": {"dataset": str(tmp_path), "aleph": "evil.pl"},
                            "axes": {"task": [0]}})
    _one_error("runs", "start", spec, "--out", tmp_path / "o", "-e", "inline",
               contains="params.aleph")
    assert not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def rudas_ds(tmp_path_factory):
    root = tmp_path_factory.mktemp("rudas")
    rc, _, err = _run("rudas", "generate", "--out", root / "ds", "--size", "xs", "--seed", "1")
    assert rc == 0, err
    return root


def test_allowed_study_records_it_and_resume_asks_again(tmp_path, rudas_ds):
    counter = tmp_path / "runs.txt"
    spec = _learn_spec(rudas_ds, counter, system="cmd", options={
        "command": f"echo run >> {counter}; echo 'p0(X,Y) :- p1(X,Y).'"})
    spec["repetitions"] = 2
    p = _spec(tmp_path, spec)
    out = tmp_path / "study"
    rc, _, err = _run("runs", "start", p, "--out", out, "-e", "inline", "-q",
                      "--allow-commands")
    assert rc == 0, err
    assert counter.read_text().split() == ["run", "run"]
    store = Store.open(out, readonly=True)
    try:
        assert store.note("needs_commands") == ["params.learners.sh.options.command",
                                                "params.learners.sh.system"]
    finally:
        store.close()
    # re-queue the cells: resuming asks for the flag again, and runs nothing without it
    con = sqlite3.connect(out / "results.sqlite")
    con.execute("UPDATE cells SET status = 'queued'")
    con.commit()
    con.close()
    _one_error("runs", "resume", out, "-e", "inline", "-q", contains="--allow-commands")
    assert counter.read_text().split() == ["run", "run"]
    rc, _, err = _run("runs", "resume", out, "-e", "inline", "-q", "--allow-commands")
    assert rc == 0, err
    assert counter.read_text().split() == ["run"] * 4


def test_resume_refuses_a_command_planted_in_stored_cells(tmp_path, rudas_ds):
    """A received study whose stored spec looks harmless but whose stored cell parameters
    (what the cells actually run with) hold a shell learner, and no record saying so."""
    canary = tmp_path / "CANARY"
    spec = _learn_spec(rudas_ds, canary, system="foil", options={})
    out = tmp_path / "study"
    con = None
    assert _run("runs", "start", _spec(tmp_path, spec), "--out", out, "-e", "inline",
                "-q")[0] == 0
    con = sqlite3.connect(out / "results.sqlite")
    (cid, params), = con.execute("SELECT cell_id, params FROM cells")
    params = json.loads(params)
    params["learners"]["sh"] = {"system": "cmd", "options": {"command": f"touch {canary}"}}
    con.execute("UPDATE cells SET params = ?, status = 'queued' WHERE cell_id = ?",
                (json.dumps(params), cid))
    con.commit()
    con.close()
    err = _one_error("runs", "resume", out, "-e", "inline", "-q", contains="--allow-commands")
    assert f"cell {cid} params.learners.sh" in err
    assert not canary.exists()


# ------------------------------------------------------------------ rudas experiment
EXP = {"experiment": "x", "datasets": {"overall": {"categories": ["rdg"], "sizes": ["xs"],
                                                   "depths": [2], "per_cell": 1}}}


@pytest.mark.parametrize("system, field", [
    ({"name": "sh", "system": "cmd", "options": {"command": "touch CANARY"}},
     "systems[0].options.command"),
    ("cmd", "systems[0].system"),
    ({"name": "al", "system": "aleph", "options": {"aleph": "EVIL"}},
     "systems[0].options.aleph"),
])
def test_experiment_learners_in_options_need_allow_commands(tmp_path, system, field):
    canary = tmp_path / "CANARY"
    evil = tmp_path / "evil.pl"
    evil.write_text(f":- shell('touch {canary}').\n% induce read_all\n")
    system = json.loads(json.dumps(system).replace("CANARY", str(canary))
                        .replace("EVIL", str(evil)))
    p = _spec(tmp_path, {**EXP, "systems": ["amie", system]})
    out = tmp_path / "o"
    err = _one_error("rudas", "experiment", p, "--out", out, "-j", "0", "-q",
                     contains="--allow-commands")
    assert field.replace("[0]", "[1]") in err
    assert not canary.exists() and not out.exists()
    # --systems leaving the shell learner out runs nothing of it: no refusal
    from nesybench.rudas.experiment import load_experiment  # noqa: PLC0415
    assert list(load_experiment(p, systems=["amie"])["learners"]) == ["amie"]
