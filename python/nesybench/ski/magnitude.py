"""The magnitude of a perturbation: Ψ(D, D′), the class-weighted Gaussian KL divergence.

    ψ(A, B) = ½ [ tr(Σ_B⁻¹ Σ_A) − d + ln(det Σ_B / det Σ_A) + (μ_B − μ_A)ᵀ Σ_B⁻¹ (μ_B − μ_A) ]
    Ψ(A, B) = (1/|A|) Σ_k |A_k| · ψ(A_k, B_k)                                (paper eq. 2)

i.e. KL(N(μ_A, Σ_A) ‖ N(μ_B, Σ_B)) per class, weighted by the class sizes of A = D.

Regularisation: one-hot and multi-hot features are often constant within a class, so the
sample covariances are singular (det = 0, ψ undefined). Both covariances get the same ridge
λ·I, λ = ``ridge`` · (mean variance of A_k over its features), floored at 1e-12 — a fixed
fraction of A's own scale, so Ψ(D, D) = 0 exactly, Ψ is invariant to rescaling all features
together, and nothing is ever NaN or infinite. A class with one row has covariance 0 (ridge
only). All in float64 with Cholesky factors. The result is clamped at 0 (round-off).
"""
from __future__ import annotations

import numpy as np
import torch

from ..errors import NesyError

RIDGE = 1e-3


def _moments(A: torch.Tensor):
    mu = A.mean(0)
    if A.shape[0] < 2:
        return mu, torch.zeros(A.shape[1], A.shape[1], dtype=A.dtype)
    C = A - mu
    return mu, C.T @ C / (A.shape[0] - 1)


def _tri(L, B):
    return torch.linalg.solve_triangular(L, B, upper=False)


def gaussian_kl(mu_a, cov_a, mu_b, cov_b) -> float:
    """KL(N(mu_a, cov_a) ‖ N(mu_b, cov_b)) for positive definite covariances (eq. 2's ψ)."""
    mu_a, cov_a, mu_b, cov_b = (torch.as_tensor(t, dtype=torch.float64)
                                for t in (mu_a, cov_a, mu_b, cov_b))
    La = torch.linalg.cholesky(cov_a)
    return _kl_chol(mu_a, La, mu_b, cov_b)


def _kl_chol(mu_a, La, mu_b, cov_b) -> float:
    d = mu_a.shape[0]
    Lb = torch.linalg.cholesky(cov_b)
    M = _tri(Lb, La)                                  # Lb⁻¹ La: tr(Σb⁻¹Σa) = ‖M‖²_F
    diff = _tri(Lb, (mu_b - mu_a).unsqueeze(1)).squeeze(1)
    logdet = 2.0 * (torch.log(torch.diagonal(Lb)).sum() - torch.log(torch.diagonal(La)).sum())
    return 0.5 * float((M * M).sum() - d + logdet + diff @ diff)


def _finite(X: torch.Tensor, what: str) -> None:
    """Ψ is a distance between Gaussians fitted to the rows: NaN or ±inf has no moments."""
    bad = torch.nonzero(~torch.isfinite(X))
    if len(bad):
        i, j = (int(v) for v in bad[0])
        raise NesyError(f"Ψ: {what} has a value that is not finite (row {i + 1}, column "
                        f"{j + 1}: {float(X[i, j])})", field="data")


class Reference:
    """The class-wise moments of A = D (computed once, reused for every D′)."""

    def __init__(self, XA: np.ndarray, yA: np.ndarray, n_classes: int, ridge: float = RIDGE):
        XA = torch.as_tensor(np.asarray(XA), dtype=torch.float64)
        _finite(XA, "the reference data")
        yA = np.asarray(yA)
        self.n, self.d, self.n_classes = XA.shape[0], XA.shape[1], n_classes
        self.parts = []
        for k in range(n_classes):
            A = XA[torch.from_numpy(yA == k)]
            if A.shape[0] == 0:
                self.parts.append(None)
                continue
            mu, ca = _moments(A)
            lam = max(ridge * float(torch.trace(ca)) / self.d, 1e-12)
            eye = torch.eye(self.d, dtype=torch.float64) * lam
            self.parts.append((A.shape[0], mu, torch.linalg.cholesky(ca + eye), eye))

    def psi(self, XB: np.ndarray, yB: np.ndarray) -> float:
        """Ψ(A, B) (eq. 2)."""
        XB = torch.as_tensor(np.asarray(XB), dtype=torch.float64)
        if XB.shape[1] != self.d:
            raise NesyError("Ψ needs data sets with the same features")
        _finite(XB, "the perturbed data")
        yB = np.asarray(yB)
        total = 0.0
        for k, part in enumerate(self.parts):
            B = XB[torch.from_numpy(yB == k)]
            if part is None or B.shape[0] == 0:
                continue
            n_a, mu_a, La, eye = part
            mu_b, cb = _moments(B)
            total += n_a * max(_kl_chol(mu_a, La, mu_b, cb + eye), 0.0)
        return total / self.n


def psi(XA: np.ndarray, yA: np.ndarray, XB: np.ndarray, yB: np.ndarray, n_classes: int,
        ridge: float = RIDGE) -> float:
    """Ψ(A, B) (eq. 2). A class with no row in B contributes nothing (it cannot be
    compared); a class absent from A has weight 0."""
    return Reference(XA, yA, n_classes, ridge).psi(XB, yB)
