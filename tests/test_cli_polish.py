"""The first hour at the command line: bare commands print their formatted help, and the
writers share -o/--out."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nesybench.cli import main

NB = str(Path(sys.executable).with_name("nesybench"))


def test_bare_nesybench_prints_its_help_and_succeeds():
    res = subprocess.run([NB], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("Usage: nesybench [OPTIONS] COMMAND [ARGS]...")
    assert "\n  kandy " in res.stdout and "\n  doctor " in res.stdout   # formatted, not one line
    assert "error" not in res.stderr


@pytest.mark.parametrize("group", ["kandy", "runs", "data"])
def test_a_bare_group_prints_its_formatted_help(group, capsys):
    assert main([group]) == 2                      # click's own status for a missing command
    err = capsys.readouterr().err
    assert err.startswith(f"Usage: nesybench {group} [OPTIONS] COMMAND [ARGS]...")
    assert len(err.splitlines()) > 5 and "error:" not in err


def test_irt_fit_has_a_short_out(tmp_path, capsys):
    from nesybench.irt.fit import simulate
    f = tmp_path / "r.npy"
    np.save(f, simulate(30, 20, "1pl", seed=0)[0])
    assert main(["irt", "fit", "--responses", str(f), "-o", str(tmp_path / "fit.npz")]) == 0
    assert set(np.load(tmp_path / "fit.npz").files) >= {"b", "theta"}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    from nesybench.runs import GridSpec, run_grid
    out = tmp_path_factory.mktemp("study") / "toy"
    spec = GridSpec(study="toy", function="demo.toy", params={"steps": 2},
                    axes={"x": [0.0, 1.0]}, repetitions=1, seed=3)
    run_grid(spec, out, executor="inline", progress=False)
    return out


@pytest.mark.parametrize("flag", ["-o", "--out", "--csv"])
def test_runs_export_writes_to_out_and_keeps_csv_as_an_alias(study, tmp_path, flag, capsys):
    assert main(["runs", "export", str(study), flag, str(tmp_path / "csv")]) == 0
    assert (tmp_path / "csv" / "metrics.csv").is_file()
    assert (tmp_path / "csv" / "cells.csv").read_text().count("\n") == 3   # header + 2 cells
