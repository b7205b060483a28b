"""The paper's three training-data degradations (§3.2), applied to the training split only.

* ``drop``  — sample drop, p = 0, 0.05, …, 0.95: round(p·n_k) rows of every class k are
  removed (stratified: the class proportions stay; at least one row per class is kept);
  under the ``paper`` profile each row is removed independently with probability p.
* ``noise`` — noise addition, v = 0, 0.1, …, 1.0, per declared feature type
  (:class:`nesybench.ski.data.FeatureGroup`), labels never touched:
  ordinal: x + round(√v·σ·Z), clipped to the observed range (a discretised Gaussian of
  variance ≈ v·σ², σ the feature's standard deviation, so v means the same on every scale);
  numeric: x + √v·σ·Z, clipped; categorical (one-/multi-hot groups) and binary: with
  probability q(v) = P(round(√v·Z) ≠ 0) = 2(1 − Φ(1/(2√v))) the value is re-drawn uniformly
  among the *other* values (the paper: "analogously to label flipping"); q(1) ≈ 0.62.
  Under the ``paper`` profile ordinal and numeric noise is N(0, v) on the raw scale, unclipped.
* ``flip``  — label flipping, f = 0, 0.08, …, 0.88 (the paper's "0.0 to 0.90 step 0.08"
  ends at 0.88): each label flips with probability f to a class drawn uniformly among the
  other K − 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import NesyError
from .data import FeatureGroup

LEVELS: dict[str, list[float]] = {
    "drop": [round(0.05 * i, 2) for i in range(20)],
    "noise": [round(0.1 * i, 1) for i in range(11)],
    "flip": [round(0.08 * i, 2) for i in range(12)],
}
DEGRADATIONS = tuple(LEVELS)


def check(degradation: str) -> None:
    if degradation not in LEVELS:
        raise NesyError(f"unknown degradation {degradation!r} (known: "
                        f"{', '.join(DEGRADATIONS)})", field="degradation")


@dataclass
class Degraded:
    """A degraded training set: ``rows`` of the original kept, ``X`` (None = unchanged),
    ``y`` (the labels of all original rows, possibly flipped)."""

    rows: np.ndarray
    X: np.ndarray | None
    y: np.ndarray


def drop(y: np.ndarray, p: float, rng: np.random.Generator) -> np.ndarray:
    """Indices of the rows kept after dropping round(p·n_k) rows of every class k."""
    if not 0.0 <= p < 1.0:
        raise NesyError(f"drop probability must be in [0, 1), got {p}", field="level")
    keep = []
    for k in np.unique(y):
        idx = np.flatnonzero(y == k)
        n_drop = min(int(round(p * len(idx))), len(idx) - 1)
        keep.append(np.sort(rng.permutation(idx)[n_drop:]))
    return np.sort(np.concatenate(keep))


def drop_bernoulli(y: np.ndarray, p: float, rng: np.random.Generator) -> np.ndarray:
    """Indices kept when every row is dropped independently with probability ``p`` (the
    paper's X_d ~ B(p)); a class that would lose every row keeps one, drawn at random, so
    that Ψ and training stay defined."""
    if not 0.0 <= p < 1.0:
        raise NesyError(f"drop probability must be in [0, 1), got {p}", field="level")
    keep = rng.random(len(y)) >= p
    for k in np.unique(y):
        idx = np.flatnonzero(y == k)
        if not keep[idx].any():
            keep[idx[rng.integers(len(idx))]] = True
    return np.flatnonzero(keep)


def redraw_probability(v: float) -> float:
    """q(v) = P(round(√v·Z) ≠ 0) for Z ~ N(0, 1)."""
    if v <= 0:
        return 0.0
    return 2.0 * (1.0 - 0.5 * (1.0 + math.erf(1.0 / (2.0 * math.sqrt(v)) / math.sqrt(2.0))))


def noise(X: np.ndarray, groups: list[FeatureGroup], v: float,
          rng: np.random.Generator, scale: str = "scaled") -> np.ndarray:
    """A noisy copy of ``X`` (labels are not an input: they cannot be touched).

    ``scale``: ``scaled`` (the default) adds N(0, v·σ²) with σ each feature's standard
    deviation and clips to the observed range; ``raw`` adds N(0, v) on the raw scale
    (rounded for ordinal features) and does not clip, the paper's D′ = {d + V_d}."""
    if v < 0:
        raise NesyError(f"noise intensity must be >= 0, got {v}", field="level")
    out = X.copy()
    if v == 0:
        return out
    q = redraw_probability(v)
    n = X.shape[0]
    for g in groups:
        cols = list(g.columns)
        if g.kind in ("ordinal", "numeric"):
            z = rng.standard_normal(n) * math.sqrt(v) * (g.std if scale == "scaled" else 1.0)
            if g.kind == "ordinal":
                z = np.round(z)
            moved = X[:, cols[0]] + z
            out[:, cols[0]] = np.clip(moved, g.lo, g.hi) if scale == "scaled" else moved
        elif g.kind == "binary":
            hit = rng.random(n) < q
            out[hit, cols[0]] = 1.0 - X[hit, cols[0]]
        elif g.kind == "categorical":
            hit = np.flatnonzero(rng.random(n) < q)
            if len(hit) == 0:
                continue
            cur = X[np.ix_(hit, cols)] >= 0.5
            allowed = ~cur
            allowed[~allowed.any(1)] = True       # every value set (e.g. code N): any
            keys = np.where(allowed, rng.random(allowed.shape), -1.0)
            new = keys.argmax(1)
            block = np.zeros((len(hit), len(cols)), dtype=X.dtype)
            block[np.arange(len(hit)), new] = 1.0
            out[np.ix_(hit, cols)] = block
        else:
            raise NesyError(f"feature {g.name}: unknown kind {g.kind!r}")
    return out


def flip(y: np.ndarray, f: float, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """Labels flipped with probability ``f`` to a uniformly drawn other class."""
    if not 0.0 <= f < 1.0:
        raise NesyError(f"flip probability must be in [0, 1), got {f}", field="level")
    hit = rng.random(len(y)) < f
    shift = rng.integers(1, n_classes, size=len(y))
    return np.where(hit, (y + shift) % n_classes, y)


def degrade(degradation: str, level: float, X: np.ndarray, y: np.ndarray,
            groups: list[FeatureGroup], n_classes: int, rng: np.random.Generator,
            drop_mode: str = "stratified", noise_scale: str = "scaled") -> Degraded:
    """Apply one degradation at one level to a training set (``drop_mode`` and
    ``noise_scale``: the reading of :mod:`nesybench.ski.profiles`)."""
    check(degradation)
    if degradation == "drop":
        rows = drop_bernoulli(y, level, rng) if drop_mode == "bernoulli" else drop(y, level, rng)
        return Degraded(rows, None, y)
    if degradation == "noise":
        return Degraded(np.arange(len(y)), noise(X, groups, level, rng, noise_scale), y)
    return Degraded(np.arange(len(y)), None, flip(y, level, n_classes, rng))
