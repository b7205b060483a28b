"""Result files follow the output rules, output folders need a real marker, and every parse
error of user data is one line (file:line:column for YAML, one wording everywhere)."""
from __future__ import annotations

import contextlib
import io
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nesybench import io as nio
from nesybench.cli import main as cli_main
from nesybench.errors import NesyError

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "curricula" / "rs" / "and3.yaml"


def _run(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli_main([str(a) for a in args])
        except SystemExit as exc:          # commands that exit themselves (ski)
            rc = exc.code
    return rc, out.getvalue(), err.getvalue().strip()


def _one_error(*args, contains: str = "") -> str:
    rc, _, err = _run(*args)
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("nesybench: error:"), err
    assert "Traceback" not in err and contains in err, err
    return err


# ------------------------------------------------------------------ rs count/severity --out
def test_rs_count_out_follows_the_file_rules(tmp_path):
    task = tmp_path / "t.yaml"
    task.write_text(TASK.read_text())
    before = task.read_bytes()
    # its own input, with or without --overwrite
    _one_error("rs", "count", task, "--out", task, contains="input")
    _one_error("rs", "count", task, "--out", task, "--overwrite", contains="input")
    assert task.read_bytes() == before
    # an existing file only with --overwrite
    out = tmp_path / "r.json"
    out.write_text("mine\n")
    _one_error("rs", "count", task, "--out", out, contains="--overwrite")
    assert out.read_text() == "mine\n"
    assert _run("rs", "count", task, "--out", out, "--overwrite")[0] == 0
    assert '"count"' in out.read_text()
    # never through a symbolic link (the file it points at stays as it was)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    _one_error("rs", "count", task, "--out", link, "--overwrite", contains="symbolic link")
    assert victim.read_text() == "keep\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "r.json", "t.yaml",
                                                         "victim.txt"]


def test_rs_severity_out_refuses_an_input(tmp_path):
    src = tmp_path / "s.yaml"
    src.write_text(TASK.read_text())
    before = src.read_bytes()
    _one_error("rs", "severity", src, TASK, "--out", src, "--overwrite", contains="input")
    assert src.read_bytes() == before


def test_a_forged_marker_does_not_make_a_folder_replaceable(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("x")
    for forged in ("", "{}", '{"written_by": "someone"}', "not json", "[1]"):
        (out / nio.MARKER).write_text(forged)
        with pytest.raises(NesyError, match="not written by"):
            with nio.atomic_output_dir(out, overwrite=True):
                pass
        assert (out / "precious.txt").exists()
    with nio.atomic_output_dir(tmp_path / "real") as tmp:
        (tmp / "a").write_text("a")
    assert nio.is_nesybench_output(tmp_path / "real")
    with nio.atomic_output_dir(tmp_path / "real", overwrite=True) as tmp:
        (tmp / "b").write_text("b")
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == [nio.MARKER, "b"]


def _write(out, files):
    with nio.atomic_output_dir(out, overwrite=True) as tmp:
        for name, text in files.items():
            (tmp / name).write_text(text)
    return (out / nio.MARKER).read_text()


def test_the_marker_is_bound_to_the_manifest_beside_it(tmp_path):
    import hashlib
    import json
    a = tmp_path / "a"
    marker = _write(a, {"manifest.json": '{"n": 1}\n', "data.csv": "1\n"})
    record = json.loads(marker)
    assert record["manifest"] == "manifest.json"
    assert record["sha256"] == hashlib.sha256(b'{"n": 1}\n').hexdigest()
    # deterministic: the same output gives the same marker bytes
    assert _write(tmp_path / "a2", {"manifest.json": '{"n": 1}\n', "data.csv": "1\n"}) == marker
    # a folder without a manifest is bound to its listing (names and sizes)
    b = tmp_path / "b"
    record_b = json.loads(_write(b, {"x.txt": "abc"}))
    assert record_b["manifest"] == "listing"
    assert record_b["sha256"] == hashlib.sha256(b"x.txt\t3\n").hexdigest()


def test_a_foreign_or_stale_marker_does_not_allow_deletion(tmp_path):
    real = tmp_path / "real"
    marker = _write(real, {"manifest.json": '{"n": 1}\n'})
    # a genuine marker copied next to someone else's files
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "manifest.json").write_text('{"mine": true}\n')
    (victim / "thesis.tex").write_text("precious")
    (victim / nio.MARKER).write_text(marker)
    assert not nio.is_nesybench_output(victim)
    with pytest.raises(NesyError, match="not written by"):
        with nio.atomic_output_dir(victim, overwrite=True):
            pass
    assert (victim / "thesis.tex").read_text() == "precious"
    # a listing-bound marker copied into a folder with other files
    lst = tmp_path / "lst"
    marker = _write(lst, {"x.txt": "abc"})
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("abcd")
    (other / nio.MARKER).write_text(marker)
    with pytest.raises(NesyError, match="not written by"):
        with nio.atomic_output_dir(other, overwrite=True):
            pass
    assert (other / "x.txt").read_text() == "abcd"
    # the nesybench output itself, its manifest edited afterwards: no longer replaceable
    (real / "manifest.json").write_text('{"n": 2}\n')
    with pytest.raises(NesyError, match="not written by"):
        with nio.atomic_output_dir(real, overwrite=True):
            pass
    # an unchanged nesybench output is replaced
    _write(lst, {"y.txt": "y"})
    assert sorted(p.name for p in lst.iterdir()) == [nio.MARKER, "y.txt"]


# ---------------------------------------------------------------------- one-line parse errors
def test_yaml_errors_have_one_wording_with_line_and_column(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nconcepts: [a, b\n")
    rs = _one_error("rs", "count", bad, contains="YAML does not parse")
    kandy = _one_error("kandy", "generate", bad, "--out", tmp_path / "o",
                       contains="YAML does not parse")
    assert f"{bad}:3:1:" in rs and f"{bad}:3:1:" in kandy
    runs = _one_error("runs", "start", bad, "--out", tmp_path / "study",
                      contains="YAML does not parse")
    assert f"{bad}:3:1:" in runs and not (tmp_path / "study").exists()


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet=list("[]{}:,'\"&*!|>-? ab1\n"), min_size=1, max_size=12))
def test_injector_option_values_never_raise_a_traceback(value):
    from nesybench.ski.cli import _injector_options
    try:
        _injector_options([f"kbann.mofn={value}"], ["kbann"])
    except NesyError as exc:
        assert "\n" not in str(exc)


def test_ski_run_bad_yaml_in_an_injector_option_is_one_line(tmp_path):
    _one_error("ski", "run", "--out", tmp_path / "s", "--injectors", "kbann",
               "--injector-option", "kbann.mofn=[1", contains="YAML does not parse")
    assert not (tmp_path / "s").exists()


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_a_hostile_checkpoint_is_one_error(tmp_path):
    from nesybench.nesy.learn.train import load_checkpoint
    bad = tmp_path / "best.pt"
    bad.write_bytes(pickle.dumps({"state_dict": _Boom()}))
    with pytest.raises(NesyError, match="cannot load checkpoint"):
        load_checkpoint(object(), bad)
    bad.write_bytes(b"\x80\x04garbage")
    with pytest.raises(NesyError, match="cannot load checkpoint"):
        load_checkpoint(object(), bad)


def test_irt_fit_refuses_an_object_array(tmp_path):
    npy = tmp_path / "u.npy"
    np.save(npy, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    _one_error("irt", "fit", "--responses", npy, contains="not a numeric .npy matrix")
    txt = tmp_path / "s.npy"
    np.save(txt, np.array([["a", "b"]]))
    _one_error("irt", "fit", "--responses", txt, contains="not a numeric .npy matrix")


# ---------------------------------------------------------------------- --overwrite keeps a user's files
def _rudas(out, *extra):
    return _run("rudas", "generate", "--out", out, "--size", "xs", "--seed", "3", *extra)


def test_overwrite_refuses_a_folder_holding_a_users_file(tmp_path):
    """A user's NOTES.md, mywork/ or an edited file inside an earlier output: --overwrite
    names them (at most 5) and deletes nothing; the unchanged output is replaced."""
    out = tmp_path / "ds"
    assert _rudas(out)[0] == 0
    record = __import__("json").loads((out / nio.MARKER).read_text())
    assert "manifest.json" in record["files"]             # every file with its hash
    assert _rudas(out, "--overwrite")[0] == 0             # nothing added: replaced
    (out / "NOTES.md").write_text("my notes")
    err = _one_error("rudas", "generate", "--out", out, "--size", "xs", "--overwrite",
                     contains="NOTES.md")
    assert "not written by nesybench" in err
    assert (out / "NOTES.md").read_text() == "my notes"
    (out / "NOTES.md").unlink()
    (out / "mywork").mkdir()
    (out / "mywork" / "a.txt").write_text("a")
    _one_error("rudas", "generate", "--out", out, "--size", "xs", "--overwrite",
               contains="mywork/")
    assert (out / "mywork" / "a.txt").read_text() == "a"
    for i in range(7):
        (out / f"extra{i}.txt").write_text(str(i))
    err = _one_error("rudas", "generate", "--out", out, "--size", "xs", "--overwrite",
                     contains="and 3 more")
    assert "extra4.txt" in err and "extra5.txt" not in err
    assert len(list(out.glob("extra*.txt"))) == 7


def test_a_changed_file_or_a_symlink_inside_an_output_is_a_users(tmp_path):
    out = tmp_path / "ds"
    assert _rudas(out)[0] == 0
    (out / "train.txt").write_text("p(a,b).\n")       # edited by the user
    _one_error("rudas", "generate", "--out", out, "--size", "xs", "--overwrite",
               contains="train.txt")
    assert (out / "train.txt").read_text() == "p(a,b).\n"
    other = tmp_path / "o2"
    assert _rudas(other)[0] == 0
    (other / "link").symlink_to(tmp_path)
    _one_error("rudas", "generate", "--out", other, "--size", "xs", "--overwrite",
               contains="link")
    assert (other / "link").is_symlink()


def test_a_later_nesybench_output_inside_an_output_is_not_a_users_file(tmp_path):
    out = tmp_path / "ds"
    with nio.atomic_output_dir(out) as tmp:
        (tmp / "a.txt").write_text("a")
    with nio.atomic_output_dir(out / "grids") as tmp:        # e.g. kandy show's DS/grids
        (tmp / "g.png").write_bytes(b"png")
    assert nio.unexpected_files(out) == []
    with nio.atomic_output_dir(out, overwrite=True) as tmp:
        (tmp / "b.txt").write_text("b")
    assert sorted(p.name for p in out.iterdir()) == [nio.MARKER, "b.txt"]


def test_export_refuses_a_table_input_inside_out(tmp_path):
    csv = ROOT / "tests" / "data" / "readme" / "my_vectors.csv"
    out = tmp_path / "D"
    # an output folder that nesybench wrote and that lists the table: still an input
    with nio.atomic_output_dir(out) as tmp:
        (tmp / "t.csv").write_bytes(csv.read_bytes())
    _one_error("export", out / "t.csv", "--out", out, "--overwrite", "-q", contains="input")
    assert (out / "t.csv").read_bytes() == csv.read_bytes()


def test_a_symlinked_or_over_long_out_is_one_line(tmp_path):
    target = tmp_path / "elsewhere"
    link = tmp_path / "link"
    link.symlink_to(target)                                  # dangling
    _one_error("rudas", "generate", "--out", link, "--size", "xs", contains="symbolic link")
    assert not target.exists()
    target.mkdir()
    _one_error("rudas", "generate", "--out", link, "--size", "xs", "--overwrite",
               contains="symbolic link")
    assert not any(target.iterdir())
    long = tmp_path / ("x" * 300)
    _one_error("rudas", "generate", "--out", long, "--size", "xs",
               contains="longer than 255 bytes")
    _one_error("rudas", "learn", tmp_path, "--system", "foil", "--out", long / "r.pl",
               contains="")
    with pytest.raises(NesyError, match="longer than 255"):
        nio.write_output_file(tmp_path / ("y" * 256), "x")


# ---------------------------------------------------------------------- file outputs
@pytest.fixture(scope="module")
def toy_study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study")
    spec = tmp / "spec.yaml"
    spec.write_text("study: toy\nfunction: demo.toy\naxes: {x: [1, 2]}\n")
    rc, _, err = _run("runs", "start", spec, "--out", tmp / "s", "-e", "inline", "-q")
    assert rc == 0, err
    return tmp / "s"


def test_runs_plot_out_needs_overwrite_to_replace_a_file(tmp_path, toy_study):
    fig = tmp_path / "fig.png"
    fig.write_text("my figure")
    _one_error("runs", "plot", toy_study, "--x", "x", "--y", "y", "--out", fig,
               contains="--overwrite")
    assert fig.read_text() == "my figure"
    rc, out, err = _run("runs", "plot", toy_study, "--x", "x", "--y", "y", "--out", fig,
                        "--overwrite")
    assert rc == 0, err
    assert fig.read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.png"]
    # the default file inside the study is refreshed without --overwrite
    assert _run("runs", "plot", toy_study, "--x", "x", "--y", "y")[0] == 0
    assert _run("runs", "plot", toy_study, "--x", "x", "--y", "y")[0] == 0


def test_irt_fit_out_is_exactly_the_named_npz(tmp_path):
    responses = ROOT / "tests" / "data" / "readme" / "responses.csv"
    _one_error("irt", "fit", "--responses", responses, "--out", tmp_path / "c.json",
               contains=".npz")
    assert list(tmp_path.iterdir()) == []
    out = tmp_path / "c.npz"
    out.write_text("mine")
    _one_error("irt", "fit", "--responses", responses, "--out", out, contains="--overwrite")
    assert out.read_text() == "mine"
    rc, _, err = _run("irt", "fit", "--responses", responses, "--out", out, "--overwrite")
    assert rc == 0, err
    assert sorted(np.load(out).files) == sorted(["b", "b_raw", "a", "theta", "kept", "se_b",
                                                 "se_a", "infit", "outfit"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.npz"]


def test_rudas_learn_checks_out_before_the_learner_runs(tmp_path):
    ds = tmp_path / "ds"
    assert _rudas(ds)[0] == 0
    out = tmp_path / "rules.pl"
    out.write_text("% mine\n")
    canary = tmp_path / "ran"
    _one_error("rudas", "learn", ds, "--system", "cmd", "--command", f"touch {canary}",
               "--out", out, contains="--overwrite")
    assert not canary.exists() and out.read_text() == "% mine\n"


# ------------------------------------------------- every folder writer follows the marker rule
def _experiment_spec(tmp_path):
    spec = tmp_path / "exp.yaml"
    spec.write_text(
        "experiment: tiny\nseed: 1\n"
        "systems: [{name: shell, system: cmd, command: \"echo 'p0(X,Y) :- p1(X,Y).'\"}]\n"
        "thresholds: {grid: [0.5]}\ntimeout: 60\n"
        "datasets: {overall: {categories: [chain], sizes: [xs], depths: [2], per_cell: 1}}\n")
    return spec


def test_rudas_experiment_overwrite_keeps_a_users_files(tmp_path):
    """--overwrite replaced any folder holding experiment.json; now only one whose marker
    lists every file, and --force-new replaces datasets/ only when it holds only data sets."""
    spec = _experiment_spec(tmp_path)
    out = tmp_path / "exp"
    args = ("rudas", "experiment", spec, "--out", out, "-j", "0", "-q", "--allow-commands")
    rc, _, err = _run(*args)
    assert rc == 0, err
    assert nio.is_nesybench_output(out)
    (out / "NOTES.md").write_text("my notes")
    (out / "study" / "mine.txt").write_text("mine")
    err = _one_error(*args, "--overwrite", contains="NOTES.md")
    assert "study/mine.txt" in err
    assert (out / "NOTES.md").read_text() == "my notes"
    assert (out / "experiment.json").is_file() and (out / "study" / "mine.txt").is_file()
    (out / "NOTES.md").unlink()
    (out / "study" / "mine.txt").unlink()
    rc, _, err = _run(*args, "--overwrite")
    assert rc == 0, err
    # another seed with --force-new replaces the data sets, not a user's file beside them
    (out / "datasets" / "mine.txt").write_text("mine")
    _one_error(*args, "--seed", "7", "--force-new", contains="mine.txt")
    assert (out / "datasets" / "mine.txt").read_text() == "mine"
    assert (out / "datasets" / "CHAIN-XS-2-000" / "manifest.json").is_file()


def test_rudas_experiment_overwrite_refuses_an_unfinished_folder(tmp_path):
    out = tmp_path / "exp"
    out.mkdir()
    (out / "experiment.json").write_text("{}")
    (out / "mine.txt").write_text("mine")
    _one_error("rudas", "experiment", _experiment_spec(tmp_path), "--out", out, "-j", "0",
               "-q", "--allow-commands", "--overwrite", contains="did not finish")
    assert sorted(p.name for p in out.iterdir()) == ["experiment.json", "mine.txt"]


def test_runs_start_force_new_keeps_a_users_file_in_artifacts(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("study: toy\nfunction: demo.toy\naxes: {x: [1, 2]}\n")
    study = tmp_path / "s"
    assert _run("runs", "start", spec, "--out", study, "-e", "inline", "-q")[0] == 0
    (study / "artifacts").mkdir(exist_ok=True)
    (study / "artifacts" / "mine.txt").write_text("mine")
    other = tmp_path / "other.yaml"
    other.write_text("study: toy\nfunction: demo.toy\naxes: {x: [5]}\nseed: 9\n")
    err = _one_error("runs", "start", other, "--out", study, "-e", "inline", "-q",
                     "--force-new", contains="artifacts/mine.txt")
    assert "--force-new" in err
    assert (study / "artifacts" / "mine.txt").read_text() == "mine"
    (study / "artifacts" / "mine.txt").unlink()
    rc, _, err = _run("runs", "start", other, "--out", study, "-e", "inline", "-q",
                      "--force-new")
    assert rc == 0, err


def test_runs_export_follows_the_output_rules(tmp_path, toy_study):
    dest = tmp_path / "csv"
    dest.mkdir()
    (dest / "cells.csv").write_text("my table\n")
    _one_error("runs", "export", toy_study, "--out", dest, contains="--overwrite")
    _one_error("runs", "export", toy_study, "--out", dest, "--overwrite", contains="cells.csv")
    assert (dest / "cells.csv").read_text() == "my table\n"
    (dest / "cells.csv").unlink()
    assert _run("runs", "export", toy_study, "--out", dest, "--overwrite")[0] == 0
    assert _run("runs", "export", toy_study, "--out", dest, "--overwrite")[0] == 0
    (dest / "NOTES.md").write_text("mine")
    _one_error("runs", "export", toy_study, "--out", dest, "--overwrite", contains="NOTES.md")
    assert (dest / "NOTES.md").read_text() == "mine" and (dest / "metrics.csv").is_file()
    _one_error("runs", "export", toy_study, "--out", toy_study, "--overwrite",
               contains="input")
