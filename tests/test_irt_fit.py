"""IRT fit: the Bock–Aitkin EM recovers known parameters; degenerate items are reported."""
import numpy as np
import pytest

from nesybench.errors import NesyError
from nesybench.irt.fit import beyond, fit_irt, quadrature, simulate


def test_quadrature_integrates_normal_moments():
    x, w = quadrature(21)
    assert w.sum() == pytest.approx(1.0)
    assert (w * x).sum() == pytest.approx(0.0, abs=1e-12)
    assert (w * x ** 2).sum() == pytest.approx(1.0)
    assert (w * x ** 4).sum() == pytest.approx(3.0)


def test_1pl_recovers_difficulties_and_abilities():
    U, theta, a, b = simulate(300, 150, "1pl", seed=3)
    fit = fit_irt(U, "1pl")
    assert fit.converged
    k = fit.kept
    assert k.sum() >= 147
    assert np.corrcoef(fit.b[k], b[k])[0, 1] > 0.98
    assert np.corrcoef(fit.theta, theta)[0, 1] > 0.97
    # absolute values, not only their order: a rescaled fit has the same correlations
    assert np.mean(np.abs(fit.b[k] - b[k])) < 0.25
    assert np.polyfit(b[k], fit.b[k], 1)[0] == pytest.approx(1.0, abs=0.1)
    assert np.all(fit.a[k] == 1.0)
    assert fit.latent_sd == pytest.approx(1.0, abs=0.15)
    # the EM never lowers the marginal likelihood (up to the float32 products' rounding)
    assert np.all(np.diff(fit.history) > -1e-6 * abs(fit.history[-1]))


def test_2pl_recovers_difficulties_and_discriminations():
    U, theta, a, b = simulate(500, 100, "2pl", seed=5)
    fit = fit_irt(U, "2pl")
    k = fit.kept
    assert np.corrcoef(fit.b[k], b[k])[0, 1] > 0.97
    assert np.corrcoef(fit.a[k], a[k])[0, 1] > 0.8
    assert np.corrcoef(fit.theta, theta)[0, 1] > 0.97
    assert np.mean(np.abs(fit.b[k] - b[k])) < 0.3
    assert np.mean(fit.a[k]) == pytest.approx(np.mean(a[k]), rel=0.15)
    assert fit.negative_a.size == 0


def test_all_right_and_all_wrong_items_are_excluded_and_reported():
    U, *_ = simulate(100, 30, "1pl", seed=1)
    U = U.copy()
    U[:, 3] = 1
    U[:, 7] = 0
    fit = fit_irt(U)
    assert fit.all_right.tolist() == [3]
    assert fit.all_wrong.tolist() == [7]
    assert np.isnan(fit.b[3]) and np.isnan(fit.b[7])
    assert not fit.kept[3] and not fit.kept[7]
    assert fit.kept.sum() == 28 - fit.outliers.size


def test_outliers_beyond_six_are_dropped():
    rng = np.random.default_rng(0)
    U, *_ = simulate(300, 20, "1pl", seed=2)
    U = U.copy()
    U[:, 0] = 1
    U[rng.integers(300), 0] = 0          # one wrong answer in 300: b far below −6
    fit = fit_irt(U, outlier_rule="paper")
    assert 0 in fit.outliers.tolist()
    assert fit.b_raw[0] < -6 and np.isnan(fit.b[0]) and not fit.kept[0]
    assert fit.summary()["outlier_rule"] == "paper"
    # the default keeps it: one minority answer in 300 puts b̂ past −6, but b̂ + 1.96·se is
    # far inside the limit (se ≈ 1)
    fit = fit_irt(U)
    assert fit.b_raw[0] < -6 and fit.se_b[0] > 0.8 and fit.b_raw[0] + 1.96 * fit.se_b[0] > -6
    assert fit.kept[0] and fit.b[0] == fit.b_raw[0] and 0 not in fit.outliers.tolist()


def test_the_significant_rule_drops_only_items_whose_interval_is_beyond_the_limit():
    b = np.array([-7.0, -9.0, 8.5, 3.0, np.nan, 6.5])
    se = np.array([1.0, 1.0, 1.0, 5.0, np.nan, np.nan])
    assert beyond(b, se, 6.0, "paper").tolist() == [0, 1, 2, 5]
    # −7 ± 1.96 reaches −5.04: inside; −9 + 1.96 = −7.04 and 8.5 − 1.96 = 6.54: beyond;
    # 3 ± 9.8 is no evidence of anything; no standard error: b̂ alone
    assert beyond(b, se, 6.0, "significant").tolist() == [1, 2, 5]
    assert beyond(b, se, 6.0, "significant").tolist() == \
        np.flatnonzero(np.abs(b) - 1.959963984540054 * np.nan_to_num(se) > 6).tolist()
    with pytest.raises(NesyError, match="outlier rule"):
        fit_irt(np.eye(3), outlier_rule="tails")


def test_negative_discrimination_is_reported():
    U, theta, a, b = simulate(600, 30, "2pl", seed=4)
    U = U.copy()
    U[:, 5] = 1 - U[:, 5]                # an item the able get wrong
    fit = fit_irt(U, "2pl")
    assert 5 in fit.negative_a.tolist()
    assert fit.a[5] < 0


def test_no_variance_and_bad_values_are_errors():
    with pytest.raises(NesyError, match="no variance"):
        fit_irt(np.ones((5, 4)))
    with pytest.raises(NesyError, match="holds 0, 1 or NaN"):
        fit_irt(np.array([[0, 1], [2, 0]]))
    with pytest.raises(NesyError, match="unknown IRT model"):
        fit_irt(np.array([[0, 1], [1, 0]]), "3pl")


def test_same_input_same_numbers():
    U, *_ = simulate(50, 40, "2pl", seed=9)
    f1, f2 = fit_irt(U, "2pl"), fit_irt(U, "2pl")
    assert np.array_equal(f1.b_raw, f2.b_raw, equal_nan=True)
    assert np.array_equal(f1.theta, f2.theta)
