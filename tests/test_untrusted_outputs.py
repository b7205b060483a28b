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
    from nesybench.nesy.train import load_checkpoint
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
