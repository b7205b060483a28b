"""Ψ against closed forms, ρ and R by hand, degradation statistics."""
import math

import numpy as np
import pytest

from nesybench.errors import NesyError
from nesybench.ski import degrade, magnitude, scores
from nesybench.ski.data import FeatureGroup

import torch as _torch  # noqa: E402

_torch.set_num_threads(1)   # tiny tensors: threads only add overhead on a shared machine


def test_gaussian_kl_closed_form_1d_and_diag():
    # 1-D: KL(N(m1,s1²)‖N(m2,s2²)) = ln(s2/s1) + (s1² + (m1-m2)²)/(2 s2²) - 1/2
    m1, s1, m2, s2 = 0.3, 1.5, -0.7, 0.8
    want = math.log(s2 / s1) + (s1**2 + (m1 - m2) ** 2) / (2 * s2**2) - 0.5
    got = magnitude.gaussian_kl(np.array([m1]), np.array([[s1**2]]), np.array([m2]),
                                np.array([[s2**2]]))
    assert got == pytest.approx(want, rel=1e-12)
    # full covariance vs eq. 2 computed with inverses and determinants
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    ca, cb = A @ A.T + np.eye(3), B @ B.T + np.eye(3)
    ma, mb = rng.standard_normal(3), rng.standard_normal(3)
    ib = np.linalg.inv(cb)
    want = 0.5 * (np.trace(ib @ ca) - 3 + math.log(np.linalg.det(cb) / np.linalg.det(ca))
                  + (mb - ma) @ ib @ (mb - ma))
    assert magnitude.gaussian_kl(ma, ca, mb, cb) == pytest.approx(want, rel=1e-10)


def test_psi_weighting_and_sample_moments():
    rng = np.random.default_rng(1)
    XA = rng.standard_normal((300, 2))
    yA = (np.arange(300) < 100).astype(int)          # class 1: 100 rows, class 0: 200
    XB = XA * 1.5 + 0.2
    ridge = 1e-9
    want = 0.0
    for k, n in ((0, 200), (1, 100)):
        A, B = XA[yA == k], XB[yA == k]
        want += n * magnitude.gaussian_kl(A.mean(0), np.cov(A.T), B.mean(0), np.cov(B.T))
    want /= 300
    assert magnitude.psi(XA, yA, XB, yA, 2, ridge=ridge) == pytest.approx(want, rel=1e-5)
    assert magnitude.psi(XA, yA, XA, yA, 2) == 0.0


def test_psi_singular_covariances_are_finite():
    X = np.zeros((50, 4))
    X[:, 0] = np.arange(50) % 2                      # one varying 0/1 column, three constant
    y = np.zeros(50, dtype=int)
    Y = X.copy()
    Y[:5, 1] = 1.0                                   # a constant column starts to vary
    v = magnitude.psi(X, y, Y, y, 1)
    assert np.isfinite(v) and v > 0
    assert np.isfinite(magnitude.psi(X, y, X[:1], y[:1], 1))   # one row left


def test_rho_and_gain_by_hand():
    levels = [0.0, 0.5, 1.0]
    psi = [0.0, 2.0, 4.0]
    acc_u = [0.8, 0.6, 0.4]
    acc_e = [0.8, 0.7, 0.6]
    rho_u = (2.0 * 0.6 / 0.8 + 4.0 * 0.4 / 0.8) / 2          # 2.5
    rho_e = (2.0 * 0.7 / 0.8 + 4.0 * 0.6 / 0.8) / 2          # 2.375 + ... = 2.375
    assert scores.rho(levels, psi, acc_u) == pytest.approx(rho_u)
    assert scores.rho(levels, psi, acc_e) == pytest.approx(rho_e)
    assert scores.gain(rho_e, rho_u) == pytest.approx(rho_e / rho_u)
    assert scores.mann_whitney([1, 1, 1], [1, 1, 1]) == 1.0
    assert scores.mann_whitney([0.9] * 10 + [0.91] * 10, [0.5] * 10 + [0.51] * 10) < 1e-5


def test_drop_rate_is_exact_and_stratified():
    y = np.array([0] * 300 + [1] * 100)
    rng = np.random.default_rng(0)
    for p in degrade.LEVELS["drop"]:
        keep = degrade.drop(y, p, rng)
        assert np.bincount(y[keep], minlength=2).tolist() == [
            300 - round(p * 300), 100 - round(p * 100)]
        assert len(np.unique(keep)) == len(keep)


def test_flip_rate_and_targets():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 60000)
    for f in (0.0, 0.24, 0.88):
        z = degrade.flip(y, f, 3, rng)
        assert abs((z != y).mean() - f) < 0.01
        moved = z[z != y] - y[z != y]
        if f:   # uniform over the two other classes
            assert abs((moved % 3 == 1).mean() - 0.5) < 0.02


def test_noise_per_feature_type_and_labels_untouched():
    rng = np.random.default_rng(0)
    n = 20000
    X = np.zeros((n, 6), dtype=np.float32)
    X[:, 0] = rng.integers(1, 11, n)                 # ordinal 1..10
    X[:, 1] = rng.standard_normal(n)                 # numeric
    X[:, 2] = rng.integers(0, 2, n)                  # binary
    X[np.arange(n), 3 + rng.integers(0, 3, n)] = 1   # categorical one-hot of 3
    groups = [FeatureGroup("o", "ordinal", (0,), 1, 10, float(X[:, 0].std())),
              FeatureGroup("x", "numeric", (1,), float(X[:, 1].min()), float(X[:, 1].max()), 1.0),
              FeatureGroup("b", "binary", (2,)), FeatureGroup("c", "categorical", (3, 4, 5))]
    y = rng.integers(0, 2, n)
    assert np.array_equal(degrade.noise(X, groups, 0.0, rng), X)
    d = degrade.degrade("noise", 1.0, X, y, groups, 2, rng)
    assert d.y is y and len(d.rows) == n              # labels untouched, no row dropped
    Z = d.X
    assert np.all(Z[:, 0] == np.round(Z[:, 0])) and Z[:, 0].min() >= 1 and Z[:, 0].max() <= 10
    q = degrade.redraw_probability(1.0)
    assert abs((Z[:, 2] != X[:, 2]).mean() - q) < 0.02
    assert np.all(Z[:, 3:].sum(1) == 1)               # still one-hot
    assert abs((Z[:, 3:].argmax(1) != X[:, 3:].argmax(1)).mean() - q) < 0.02
    assert abs(np.var(Z[:, 1] - X[:, 1]) - 1.0) < 0.1  # variance v·σ² inside the clip


def test_bad_degradations():
    with pytest.raises(NesyError, match="unknown degradation"):
        degrade.check("blur")
    with pytest.raises(NesyError):
        degrade.drop(np.zeros(3, dtype=int), 1.0, np.random.default_rng(0))


def test_score_edge_cases():
    """The undefined cases of ρ, R, the Mann–Whitney test and the AUC, each pinned."""
    import math
    with pytest.raises(ValueError):
        scores.rho([], [], [])
    with pytest.raises(ValueError):
        scores.rho([0.1, 0.2], [1.0, 2.0], [0.9, 0.8])        # no level 0 first
    assert math.isnan(scores.rho([0.0], [0.0], [0.9]))         # no perturbed level
    assert math.isnan(scores.rho([0.0, 0.5], [0.0, 2.0], [0.0, 0.5]))   # base accuracy 0
    # a negative base accuracy cannot occur, and 1 level > 0 gives ψ·acc/base exactly
    assert scores.rho([0.0, 0.5], [0.0, 2.0], [0.8, 0.4]) == pytest.approx(1.0)
    assert scores.rho([0.0, 0.5, 1.0], [0.0, 2.0, 4.0], [0.8, 0.4, 0.2]) == pytest.approx(1.0)
    assert math.isnan(scores.gain(1.0, 0.0)) and scores.gain(3.0, 2.0) == 1.5
    assert math.isnan(scores.mann_whitney([], [1.0])) and math.isnan(scores.mann_whitney([1.0], []))
    assert scores.mann_whitney([0.5, 0.5], [0.5, 0.5, 0.5]) == 1.0
    assert scores.mann_whitney([0.5, 0.5], [0.7, 0.7]) < 1.0
    assert math.isnan(scores.auc([0.0], [1.0])) and math.isnan(scores.auc([0.3, 0.3], [1, 0]))
    assert scores.auc([0.0, 1.0], [1.0, 0.0]) == pytest.approx(0.5)
    assert scores.auc([0.5, 1.0], [1.0, 1.0]) == pytest.approx(1.0)   # divided by the range
    assert scores.auc([0.0, 0.0, 1.0], [1.0, 1.0, 0.0]) == pytest.approx(0.5)  # a repeated level
    assert scores.level_thirds([0.0, 0.5]) == [[1], [], []]
    assert scores.level_thirds([0.0]) == [[], [], []]
