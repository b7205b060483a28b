"""IRT difficulties on the right scale (2PL quadrature), missing responses in the
likelihood, and the `irt fit --responses` command's errors and warnings."""
import json

import numpy as np
import pytest

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.irt.data import load_responses
from nesybench.irt.fit import auto_nodes, fit_irt, simulate


def _run(args) -> int:
    """The exit status of the command line."""
    try:
        return main(args) or 0
    except SystemExit as exc:
        return exc.code or 0


def _standardised(b, theta):
    """The truth on the fit's scale: the fit fixes θ ~ N(0, 1), so the simulated b is
    expressed in units of the sample's own θ mean and SD."""
    return (b - theta.mean()) / theta.std()


@pytest.mark.parametrize("shape, seed", [((500, 3000), 2), ((200, 1000), 3)])
def test_2pl_difficulties_have_the_right_scale(shape, seed):
    U, theta, a, b = simulate(*shape, "2pl", seed=seed)
    fit = fit_irt(U, "2pl")
    assert fit.n_quad == auto_nodes(shape[1])
    k = fit.kept
    slope = np.polyfit(_standardised(b, theta)[k], fit.b[k], 1)[0]
    assert 0.9 <= slope <= 1.1, slope
    # no real item is thrown away as an outlier
    assert not np.any(~fit.kept & (np.abs(b) < 4))
    spread = np.std(fit.b[k]) / np.std(_standardised(b, theta)[k])
    assert 0.9 <= spread <= 1.1, spread


def test_coarse_hermite_grid_inflates_2pl_difficulties():
    """Why the default changed: 21 Gauss–Hermite nodes snap respondents with thousands of
    items onto nodes and inflate b (kept as an option for comparison with Python mirt)."""
    U, theta, a, b = simulate(500, 3000, "2pl", seed=2)
    fit = fit_irt(U, "2pl", quad="hermite", n_quad=21)
    k = fit.kept
    assert np.polyfit(_standardised(b, theta)[k], fit.b[k], 1)[0] > 1.5


def test_missing_responses_recover_the_complete_fit():
    U, theta, a, b = simulate(300, 400, "1pl", seed=5)
    full = fit_irt(U, "1pl")
    rng = np.random.default_rng(0)
    Um = U.astype(float)
    Um[rng.random(U.shape) < 0.2] = np.nan
    part = fit_irt(Um, "1pl")
    both = full.kept & part.kept
    assert np.corrcoef(full.b[both], part.b[both])[0, 1] > 0.97
    assert np.polyfit(full.b[both], part.b[both], 1)[0] == pytest.approx(1.0, abs=0.1)
    assert np.corrcoef(theta, part.theta)[0, 1] > 0.9


def test_missing_responses_are_left_out_of_the_likelihood():
    """A NaN response contributes nothing: the marginal log-likelihood equals the one of
    the matrix without that respondent's item, computed by brute-force quadrature."""
    U, *_ = simulate(40, 12, "1pl", seed=1)
    Um = U.astype(float)
    Um[3, 5] = np.nan
    Um[7, 0] = np.nan
    fit = fit_irt(Um, "1pl", max_iter=1)
    # the first cycle's log-likelihood at the start values, by hand on the same grid
    from nesybench.irt.fit import rectangular
    x, w = rectangular(fit.n_quad)
    obs = ~np.isnan(Um)
    p = np.nanmean(Um, axis=0)
    c = np.log(p / (1 - p))
    ll = 0.0
    for j in range(Um.shape[0]):
        z = x[:, None] + c[None, :]
        lik = np.where(obs[j], np.where(Um[j] == 1, -np.logaddexp(0, -z),
                                        -np.logaddexp(0, z)), 0.0).sum(axis=1)
        ll += np.log(np.sum(w * np.exp(lik)))
    assert fit.history[0] == pytest.approx(ll, rel=1e-10)


def test_response_files(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("1,0,\n0,NA,1\n1,1,0\n")
    U = load_responses(f)
    assert np.isnan(U[0, 2]) and np.isnan(U[1, 1]) and U[2].tolist() == [1, 1, 0]
    f.write_text("1,0,1\n0,1\n")
    with pytest.raises(NesyError, match="2 fields where the first row has 3") as e:
        load_responses(f)
    assert e.value.line == 2
    f.write_text("1,0,2\n")
    with pytest.raises(NesyError) as e:
        load_responses(f)
    assert (e.value.line, e.value.column) == (1, 5)


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_text(""), "empty"),
    (lambda p: np.save(p, np.zeros((2, 2, 2))), "2 dimensions"),
    (lambda p: np.save(p, np.array(["a", "b"])), "not a numeric .npy"),
    (lambda p: np.save(p, np.array([[0, 1], [3, 0]])), "respondent 2, item 1"),
    (lambda p: p.write_bytes(b"\x93NUMPY\x01\x00v\x00{'descr'"), "not a numeric .npy"),
])
def test_bad_response_files_are_one_line(tmp_path, capsys, make, message):
    f = tmp_path / ("r.csv" if message == "empty" else "r.npy")
    make(f)
    code = _run(["irt", "fit", "--responses", str(f)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and "Warning" not in err


def test_fit_options_are_checked(tmp_path, capsys):
    f = tmp_path / "r.npy"
    np.save(f, simulate(30, 50, "1pl", seed=0)[0])
    for args, message in ((["--outlier", "-1"], "--outlier"), (["--bins", "0"], "--bins"),
                          (["--out", str(tmp_path / "no" / "x.npz")], "does not exist")):
        code = _run(["irt", "fit", "--responses", str(f), *args])
        assert code == 2 and message in capsys.readouterr().err


def test_json_is_strict_and_2pl_warns(tmp_path, capsys):
    f = tmp_path / "r.npy"
    rng = np.random.default_rng(0)
    np.save(f, (rng.random((30, 50)) < 0.6).astype(float))     # no structure: 2PL ill-posed
    assert _run(["irt", "fit", "--responses", str(f), "--model", "2pl", "--json"]) == 0
    out = capsys.readouterr()
    json.loads(out.out, parse_constant=lambda c: pytest.fail(f"bare {c} in --json output"))
    assert "negative 2PL slope on 30 respondents" in out.err
    U = np.ones((5, 4))
    U[0, 0] = 0
    np.save(f, U)                                # one item varies: b_sd is NaN → null
    assert _run(["irt", "fit", "--responses", str(f), "--json"]) == 0
    data = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
    assert data["b_sd"] is None


def test_standard_errors_match_the_spread_over_replications():
    """The SE of b is calibrated: over 30 simulated replications of the same items, the SD of
    b̂ matches the mean reported SE (1PL and 2PL)."""
    rng = np.random.default_rng(7)
    b = rng.normal(0, 1, 25)
    for model, J in (("1pl", 300), ("2pl", 800)):
        a = np.ones(25) if model == "1pl" else rng.lognormal(0, 0.3, 25)
        est, ses = [], []
        for r in range(30):
            g = np.random.default_rng(100 + r)
            th = g.normal(0, 1, J)
            U = (g.random((J, 25)) < 1 / (1 + np.exp(-a * (th[:, None] - b)))).astype(float)
            f = fit_irt(U, model)
            est.append(f.b_raw)
            ses.append(f.se_b)
        ratio = np.nanstd(est, axis=0, ddof=1) / np.nanmean(ses, axis=0)
        assert 0.8 <= np.median(ratio) <= 1.25, (model, np.median(ratio))


def test_infit_flags_items_steeper_or_flatter_than_the_model():
    rng = np.random.default_rng(3)
    J, I = 600, 40
    th = rng.normal(0, 1, J)
    b = rng.normal(0, 1, I)
    a = np.ones(I)
    a[0], a[1] = 4.0, 0.0                      # far steeper than the model; unrelated to θ
    U = (rng.random((J, I)) < 1 / (1 + np.exp(-a * (th[:, None] - b)))).astype(float)
    f = fit_irt(U, "1pl")
    assert f.infit[0] < 0.8 and f.infit[1] > 1.2
    assert 0.9 < np.median(f.infit[2:]) < 1.1 and 0.9 < np.median(f.outfit[2:]) < 1.1
    flagged = f.misfit(0.8, 1.2)
    assert flagged[0] and flagged[1] and flagged[2:].mean() < 0.1


def test_fit_as_dataframes():
    U, *_ = simulate(60, 30, "1pl", seed=4)
    U[:, 0] = 1                                   # an item everyone gets right
    f = fit_irt(U, "1pl")
    items = f.to_pandas()
    assert len(items) == 30 and items.loc[0, "excluded"] == "all right"
    assert np.isnan(items.loc[0, "b"]) and items["kept"].sum() == f.kept.sum()
    assert np.allclose(items["se_b"].to_numpy()[1:], f.se_b[1:])
    people = f.to_pandas("respondents")
    assert np.array_equal(people["theta"].to_numpy(), f.theta)
    with pytest.raises(NesyError):
        f.to_pandas("cells")
