"""Attribute noise of the paper (§3.3), with statistics taken from the training fold.

* numeric attribute with training-fold standard deviation σ: ``x' ~ N(x, (σ·ν)²)``;
* nominal attribute with training-fold value frequencies ``p`` (its empirical distribution)
  and the one-hot vector ``t`` of the value x: ``α = 1 − e^(−ν)``, ``p' = α·p + (1 − α)·t``,
  ``x' ~ Categorical(p')`` — so a value is kept with probability ``1 − α + α·p_x``.

ν (``nu``) is the noise level, 0.2 in the paper.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NesyError


def nominal_alpha(nu: float) -> float:
    """``α = 1 − e^(−ν)``: the weight of the empirical distribution in ``p'``."""
    return 1.0 - float(np.exp(-nu))


def nominal_distribution(x_code: int, p_empirical: np.ndarray, nu: float) -> np.ndarray:
    """``p' = α·p + (1 − α)·onehot(x)`` for one value (shape (m,), sums to 1)."""
    a = nominal_alpha(nu)
    t = np.zeros_like(p_empirical, dtype=float)
    t[int(x_code)] = 1.0
    return a * np.asarray(p_empirical, dtype=float) + (1.0 - a) * t


@dataclass
class Perturber:
    """Fitted on a training fold (:meth:`fit`), applied to test rows (:meth:`apply`).

    sigma       per numeric column, training-fold SD (population SD, ddof=0)
    freqs       per nominal column, training-fold value frequencies (length = #categories)
    """

    nu: float
    nominal: np.ndarray
    sigma: np.ndarray | None = None
    freqs: list | None = None

    def fit(self, X_train: np.ndarray, n_categories: list | None = None) -> "Perturber":
        if not (self.nu >= 0):
            raise NesyError(f"the noise level ν must be ≥ 0, got {self.nu}", field="nu")
        self.nominal = np.asarray(self.nominal, dtype=bool)
        self.sigma = X_train[:, ~self.nominal].std(axis=0)
        self.freqs = []
        for j in np.flatnonzero(self.nominal):
            m = int(n_categories[j]) if n_categories and n_categories[j] else \
                int(X_train[:, j].max()) + 1
            cnt = np.bincount(X_train[:, j].astype(int), minlength=m).astype(float)
            self.freqs.append(cnt / cnt.sum())
        return self

    def apply(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A perturbed copy of every row of ``X`` (same shape)."""
        out = np.array(X, dtype=float, copy=True)
        num = np.flatnonzero(~self.nominal)
        out[:, num] = X[:, num] + rng.standard_normal((X.shape[0], num.size)) * (
            self.sigma * self.nu)[None, :]
        a = nominal_alpha(self.nu)
        for k, j in enumerate(np.flatnonzero(self.nominal)):
            p = self.freqs[k]
            # x' = x with prob. (1 − α), else a draw from p (the mixture p' = α·p + (1 − α)·t)
            draw = rng.choice(p.size, size=X.shape[0], p=p)
            keep = rng.random(X.shape[0]) >= a
            out[:, j] = np.where(keep, X[:, j], draw)
        return out
