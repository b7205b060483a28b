"""Ψ (``ski/magnitude.py``, the paper's eq. 2) on the class sizes the shipped data never has:
a class of two rows (sample covariance), of one row (no spread: the ridge alone), a class
missing from the perturbed set or from the reference, and the position a non-finite value is
reported at. The oracle is a plain numpy KL between Gaussians, written out here."""
from __future__ import annotations

import numpy as np
import pytest

from nesybench.errors import NesyError
from nesybench.ski.magnitude import RIDGE, psi


def _moments(A):
    mu = A.mean(0)
    if len(A) < 2:
        return mu, np.zeros((A.shape[1], A.shape[1]))
    return mu, np.cov(A, rowvar=False, ddof=1).reshape(A.shape[1], A.shape[1])


def psi_numpy(XA, yA, XB, yB, n_classes, ridge=RIDGE):
    """Σ_k n_k/n · KL(N(μ_A,k, Σ_A,k + λI) ‖ N(μ_B,k, Σ_B,k + λI)), λ = ridge·tr(Σ_A,k)/d
    (at least 1e-12); a class missing from A or B adds nothing; negative KL (rounding) is 0."""
    d, total = XA.shape[1], 0.0
    for k in range(n_classes):
        A, B = XA[yA == k], XB[yB == k]
        if len(A) == 0 or len(B) == 0:
            continue
        mu_a, ca = _moments(A)
        mu_b, cb = _moments(B)
        lam = max(ridge * np.trace(ca) / d, 1e-12)
        sa, sb = ca + lam * np.eye(d), cb + lam * np.eye(d)
        sb_inv = np.linalg.inv(sb)
        diff = mu_b - mu_a
        kl = 0.5 * (np.trace(sb_inv @ sa) - d + np.log(np.linalg.det(sb) / np.linalg.det(sa))
                    + diff @ sb_inv @ diff)
        total += len(A) * max(kl, 0.0)
    return total / len(XA)


def _data(sizes_a, sizes_b, d=3, seed=0):
    rng = np.random.default_rng(seed)
    def part(sizes, shift):
        X = np.concatenate([rng.normal(k + shift, 1.0 + 0.3 * k, size=(n, d))
                            for k, n in enumerate(sizes)])
        y = np.concatenate([np.full(n, k) for k, n in enumerate(sizes)])
        return X, y
    return (*part(sizes_a, 0.0), *part(sizes_b, 0.4))


@pytest.mark.parametrize("sizes_a, sizes_b", [
    ([30, 2, 25], [28, 9, 20]),     # a class of two rows in A: its sample covariance
    ([30, 1, 25], [28, 9, 20]),     # one row in A: zero covariance, the ridge floor
    ([30, 12, 25], [28, 1, 20]),    # one row in B
    ([30, 12, 25], [28, 0, 20]),    # a class missing from B adds nothing
    ([30, 0, 25], [28, 9, 20]),     # ... and one missing from A
])
def test_psi_on_small_and_missing_classes_equals_numpy(sizes_a, sizes_b):
    XA, yA, XB, yB = _data(sizes_a, sizes_b)
    want = psi_numpy(XA, yA, XB, yB, 3)
    assert want > 0
    assert psi(XA, yA, XB, yB, 3) == pytest.approx(want, rel=1e-6)


def test_psi_ridge_scales_with_the_mean_variance():
    """λ = ridge · tr(Σ)/d: with features on very different scales the ridge is the mean
    variance's share, not the total's (d = 6 makes the difference visible)."""
    XA, yA, XB, yB = _data([40, 35], [38, 30], d=6, seed=3)
    XA[:, 0] *= 50.0
    XB[:, 0] *= 50.0
    for ridge in (1e-3, 0.5):
        want = psi_numpy(XA, yA, XB, yB, 2, ridge=ridge)
        assert psi(XA, yA, XB, yB, 2, ridge=ridge) == pytest.approx(want, rel=1e-6)


def test_non_finite_value_is_reported_at_its_row_and_column():
    XA, yA, XB, yB = _data([10, 10], [10, 10])
    XB[4, 1] = np.nan
    with pytest.raises(NesyError, match=r"perturbed data has a value that is not finite "
                                        r"\(row 5, column 2: nan\)"):
        psi(XA, yA, XB, yB, 2)
    XA[0, 2] = np.inf
    with pytest.raises(NesyError, match=r"reference data .*\(row 1, column 3: inf\)"):
        psi(XA, yA, XB, yB, 2)
