"""SKI input checks: a data file that cannot give a result is refused before anything is
written; custom level grids are stored by value; Ψ refuses non-finite data; the trainer
falls back to autograd without a compiler."""
import math
import warnings

import numpy as np
import pytest
import torch

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.ski import cells, magnitude, native, report, scores
from nesybench.ski import data as ski_data

torch.set_num_threads(1)

BENIGN = "1000025,5,1,1,1,2,1,3,1,1,2"
MALIGNANT = "1002945,5,4,4,5,7,10,3,2,1,4"


def _bcw(tmp_path, lines, name="bcw.data"):
    f = tmp_path / name
    f.write_text("".join(ln + "\n" for ln in lines))
    return f


def _run(args):
    """The exit status of the command line (0 when ``main`` returns)."""
    try:
        return main(args) or 0
    except SystemExit as exc:
        return exc.code or 0


@pytest.mark.parametrize("lines, message", [
    ([], "no rows"),
    ([BENIGN], "one class"),
    ([BENIGN] * 20, "one class"),
    ([BENIGN] * 5 + [MALIGNANT] * 4, "too few rows of class malignant (4)"),
    ([BENIGN] * 5 + [MALIGNANT] * 4 + ["1,5,nan,1,1,2,1,3,1,1,4"], ":10:"),
    ([BENIGN] * 5 + [MALIGNANT] * 5 + ["1,5,1,inf,1,2,1,3,1,1,2"], "expected a finite number"),
    ([BENIGN] * 5 + [MALIGNANT] * 5 + ["1,5,1,1,?,2,1,3,1,1,2"], "declared columns"),
    ([BENIGN] * 5 + [MALIGNANT] * 5 + ["1,5,1,1,1,2,1,3,1,1,3"], "expected 2 (benign) or 4"),
    ([BENIGN] * 5 + [MALIGNANT] * 5 + ["1,5,1,1,1,2,1,3,1,1"], "expected 11"),
])
def test_bad_bcw_files_are_refused_before_the_study(tmp_path, capsys, lines, message):
    f = _bcw(tmp_path, lines)
    out = tmp_path / "study"
    code = _run(["ski", "run", "--datasets", "bcw", "--injectors", "uneducated", "--reps", "1",
                 "--epochs", "1", "--data-path", f"bcw={f}", "--out", str(out), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and str(f) in err, err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_error_names_line_and_column(tmp_path):
    f = _bcw(tmp_path, [BENIGN] * 5 + [MALIGNANT] * 5 + ["1,5,1,1,1,x,1,3,1,1,2"])
    with pytest.raises(NesyError) as exc:
        ski_data.load("bcw", f)
    # field 6 (single_epithelial_cell_size) starts at column 11 of line 11
    assert (exc.value.line, exc.value.column) == (11, 11)
    assert "single_epithelial_cell_size" in str(exc.value)


def test_missing_values_only_where_declared(tmp_path):
    """BareNuclei's '?' becomes 0 (the paper); nothing else is filled in."""
    f = _bcw(tmp_path, [BENIGN] * 5 + [MALIGNANT] * 5 + ["1,5,1,1,1,2,?,3,1,1,2"])
    d = ski_data.load("bcw", f)
    assert d.X[-1, ski_data.BCW_FEATURES.index("bare_nuclei")] == 0.0
    assert np.isfinite(d.X).all() and d.counts() == [6, 5]


def test_validate_refuses_non_finite_values():
    X = np.ones((10, 2), dtype=np.float32)
    X[3, 1] = np.nan
    ds = ski_data.Dataset("bcw", X, np.array([0, 1] * 5), ["a", "b"], ["x", "y"],
                          source="mem")
    with pytest.raises(NesyError, match="row 4, feature b"):
        ski_data.validate(ds)


def test_splice_and_census_files(tmp_path):
    seq = "CCAGCTGCATCACAGGAGGCCAGCGAGCAGGTCTGTTCCAAGGGCCTTCGAGCCAGTCTG"
    sp = tmp_path / "splice.data"
    sp.write_text(f"EI, a, {seq}\n" * 5 + f"XX, b, {seq}\n")
    with pytest.raises(NesyError) as exc:
        ski_data.load("splice", sp)
    assert exc.value.line == 6 and "EI, IE or N" in str(exc.value)
    sp.write_text(f"EI, a, {seq}\n" * 5 + f"N, b, {seq[:-1]}Z\n")
    with pytest.raises(NesyError) as exc:
        ski_data.load("splice", sp)
    assert exc.value.line == 6 and "base 60" in str(exc.value)
    folder = tmp_path / "adult"
    folder.mkdir()
    row = "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, " \
          "Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K"
    (folder / "adult.data").write_text(row + "\n" + row.replace("39", "abc", 1) + "\n")
    (folder / "adult.test").write_text("")
    with pytest.raises(NesyError) as exc:
        ski_data.load("census", folder)
    assert exc.value.line == 2 and exc.value.column == 1 and "age" in str(exc.value)
    with pytest.raises(NesyError, match="no such file"):
        ski_data.load("census", tmp_path / "nowhere")


def test_psi_refuses_non_finite_data():
    X = np.random.default_rng(0).standard_normal((20, 3))
    y = np.array([0, 1] * 10)
    Y = X.copy()
    Y[4, 2] = np.nan
    with pytest.raises(NesyError, match="not finite"):
        magnitude.psi(X, y, Y, y, 2)
    with pytest.raises(NesyError, match="not finite"):
        magnitude.psi(Y, y, X, y, 2)


def test_custom_levels_are_stored_by_value(tmp_path):
    """levels [0, 0.33, 0.5]: the report reads back 0.33 and 0.5 (not the paper's grid
    values at those indices) and ρ equals a hand computation from the stored curves."""
    from nesybench.runs import GridSpec, Study, run_grid
    levels = [0.0, 0.33, 0.5]
    params = {"dataset": "bcw", "degradation": "drop", "levels": levels, "reps": 2,
              "epochs": 2}
    spec = GridSpec(study="ski", function="ski.cell", params=params,
                    axes={"injector": ["uneducated", "kbann"]}, repetitions=1, seed=0)
    run_grid(spec, tmp_path / "s", executor="inline", progress=False)
    data = report.collect(tmp_path / "s")
    for pred in ("uneducated", "kbann"):
        assert sorted(data[("bcw", "drop", pred)]) == levels
    # by hand from the raw curves: mean accuracy and Ψ per level, eq. 3's ρ
    rows = Study(tmp_path / "s").curves()
    by = {}
    for r in rows:
        if r["injector"] == "kbann" and "/" in r["name"]:
            kind = r["name"].split("/")[0]
            by.setdefault(r["step"], {}).setdefault(kind, []).append(r["value"])
    # 0.0 and 0.5 keep their index on the paper's grid; 0.33 gets one past its end (20 + 1)
    assert sorted(by) == [0, 10, 21]
    steps = [0, 21, 10]                  # in the order of ``levels``
    acc = [np.mean(by[s]["acc"]) for s in steps]
    psi = [np.mean(by[s]["psi"]) for s in steps]
    want = scores.rho(levels, psi, acc)
    got = report.rho_of(data[("bcw", "drop", "kbann")])
    assert got == pytest.approx(want, rel=1e-12) and math.isfinite(got)


def test_no_compiler_falls_back_to_autograd(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", "no-such-compiler-anywhere")
    monkeypatch.setattr(native, "library_path", lambda flags=None: tmp_path / "absent.so")
    assert not native.available()
    with pytest.raises(NesyError, match="--engine torch"):
        native.build()
    ds = cells.dataset("bcw")
    params = {"dataset": "bcw", "degradation": "drop", "level": 0.0, "reps": 1,
              "epochs": 1, "injector": "uneducated"}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = cells.run(params, seed=0)
    assert any("--engine torch" in str(w.message) for w in seen)
    torch_out = cells.run({**params, "engine": "torch"}, seed=0)
    assert np.array_equal(out["acc"], torch_out["acc"]) and ds.X.shape[1] == 9


def test_cli_warns_and_runs_without_a_compiler(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CC", "no-such-compiler-anywhere")
    monkeypatch.setattr(native, "library_path", lambda flags=None: tmp_path / "absent.so")
    code = _run(["ski", "run", "--datasets", "bcw", "--injectors", "uneducated",
                 "--degradations", "drop", "--level-stride", "19", "--reps", "1",
                 "--epochs", "1", "--executor", "inline", "--out", str(tmp_path / "s"), "-q"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "using --engine torch" in err


def test_failed_cells_exit_one(tmp_path, monkeypatch, capsys):
    def boom(params, seed, **kw):
        raise RuntimeError("planted failure")
    monkeypatch.setattr(cells, "run", boom)
    code = _run(["ski", "run", "--datasets", "bcw", "--injectors", "uneducated",
                 "--degradations", "drop", "--level-stride", "19", "--reps", "1",
                 "--epochs", "1", "--executor", "inline", "--engine", "torch",
                 "--out", str(tmp_path / "s"), "-q"])
    err = capsys.readouterr().err
    assert code == 1 and "1 of 1 cells failed" in err, err
