"""Per-task accuracy, the accuracy matrix and the continual-learning metrics (KANDY supp. §3).

Notation: ``N`` tasks, time ``z`` = index of the last task the model has been trained on
(0-based, as in the paper), ``A[z, j]`` = accuracy on task ``j`` of the model at time ``z``.
Non-continual settings have one row (the final model).

Per-task accuracy (supp. §3, "acc_j")::

    acc_j = ½·TP/(TP+FN) + ½·TN/(TN+FP)           (class-balanced; :func:`balanced_accuracy`)

The paper calls this "micro-accuracy"; we also keep the plain fraction of right answers
(:func:`plain_accuracy`, ``A_micro``). When a class is absent from a split the defined term
is used alone.

The printed formulas of supp. §3 mix 0- and 1-based indices (e.g. ``1/z Σ_{j=0}^{z}``) and swap
the sub/superscripts of ``acc`` in BWT/FWT relative to the definitions they cite (Mai et al.
2022, Díaz-Rodríguez et al. 2018). We implement the cited definitions with the paper's 0-based
time, i.e., for ``z ≥ 1`` (``P(z) = z(z+1)/2`` pairs)::

    average_accuracy(z)   = 1/(z+1) Σ_{j=0}^{z} A[z, j]
    average_forgetting(z) = 1/z Σ_{j=0}^{z-1} ( max_{k∈{0..z-1}} A[k, j] − A[z, j] )
    backward_transfer(z)  = max( 1/P(z) Σ_{i=1}^{z} Σ_{h=0}^{i-1} (A[i, h] − A[h, h]), 0 )
    forward_transfer(z)   = 1/P(z) Σ_{j=0}^{z-1} Σ_{h=j+1}^{z} (A[j, h] − acc^Δ),  acc^Δ = 0.5

(BWT: how learning task ``i`` changed the accuracy on an earlier task ``h`` relative to just
after learning it; FWT: accuracy on a not-yet-learned task ``h`` at time ``j < h`` above a random
guess.) ``backward_transfer_raw`` is the same without the ``max(·, 0)``. At ``z = 0`` forgetting,
BWT and FWT are undefined (NaN).
"""
from __future__ import annotations

import math

import numpy as np

RANDOM_GUESS = 0.5


def confusion(pred, labels) -> tuple[int, int, int, int]:
    """(TP, FN, TN, FP) of binary predictions against 0/1 labels."""
    p = np.asarray(pred).astype(bool)
    y = np.asarray(labels).astype(bool)
    return (int((p & y).sum()), int((~p & y).sum()), int((~p & ~y).sum()), int((p & ~y).sum()))


def balanced_accuracy(pred, labels) -> float:
    """½·TP/(TP+FN) + ½·TN/(TN+FP) (supp. §3); one class absent → the other's rate; NaN if
    empty."""
    tp, fn, tn, fp = confusion(pred, labels)
    rates = []
    if tp + fn:
        rates.append(tp / (tp + fn))
    if tn + fp:
        rates.append(tn / (tn + fp))
    return float(np.mean(rates)) if rates else math.nan


def plain_accuracy(pred, labels) -> float:
    """Fraction of right predictions (NaN if empty)."""
    p = np.asarray(pred).astype(bool)
    y = np.asarray(labels).astype(bool)
    return float((p == y).mean()) if len(y) else math.nan


def tune_threshold(scores, labels, *, default: float = 0.5) -> float:
    """The decision threshold τ maximising balanced accuracy of ``scores ≥ τ`` on (val)
    ``labels``.

    Candidates: 0.5 and the midpoints between consecutive distinct scores (plus just below
    the smallest / above the largest). Ties go to the candidate closest to 0.5, then the
    smaller. Needs both classes; otherwise returns ``default``.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(labels).astype(bool).ravel()
    if len(s) == 0 or y.all() or (~y).all():
        return default
    u = np.unique(s)
    cands = [0.5, float(u[0]) - 1e-6, float(u[-1]) + 1e-6]
    cands += list((u[:-1] + u[1:]) / 2.0)
    best, best_key = default, None
    for t in cands:
        acc = balanced_accuracy(s >= t, y)
        key = (-acc, abs(t - 0.5), t)
        if best_key is None or key < best_key:
            best, best_key = float(t), key
    return best


def _check(a) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"accuracy matrix must be 2-D, got shape {a.shape}")
    return a


def average_accuracy(A, z: int) -> float:
    """1/(z+1) Σ_{j≤z} A[z, j]."""
    A = _check(A)
    return float(np.mean(A[z, : z + 1]))


def average_forgetting(A, z: int) -> float:
    """1/z Σ_{j<z} (max_{k<z} A[k, j] − A[z, j]); NaN at z = 0."""
    A = _check(A)
    if z < 1:
        return math.nan
    best = A[:z, :z].max(axis=0)
    return float(np.mean(best - A[z, :z]))


def backward_transfer_raw(A, z: int) -> float:
    """1/P(z) Σ_{i=1}^{z} Σ_{h<i} (A[i, h] − A[h, h]); NaN at z = 0."""
    A = _check(A)
    if z < 1:
        return math.nan
    terms = [A[i, h] - A[h, h] for i in range(1, z + 1) for h in range(i)]
    return float(np.mean(terms))


def backward_transfer(A, z: int) -> float:
    """max(backward_transfer_raw, 0) (the paper's positive BWT)."""
    raw = backward_transfer_raw(A, z)
    return raw if math.isnan(raw) else max(raw, 0.0)


def forward_transfer(A, z: int, random_guess: float = RANDOM_GUESS) -> float:
    """1/P(z) Σ_{j<z} Σ_{j<h≤z} (A[j, h] − 0.5); NaN at z = 0."""
    A = _check(A)
    if z < 1:
        return math.nan
    terms = [A[j, h] - random_guess for j in range(z) for h in range(j + 1, z + 1)]
    return float(np.mean(terms))


def over_time(A) -> dict[str, list[float]]:
    """Every metric at every time z of a square accuracy matrix (lists of length N)."""
    A = _check(A)
    n = A.shape[0]
    return {"avg_acc": [average_accuracy(A, z) for z in range(n)],
            "forgetting": [average_forgetting(A, z) for z in range(n)],
            "bwt": [backward_transfer(A, z) for z in range(n)],
            "bwt_raw": [backward_transfer_raw(A, z) for z in range(n)],
            "fwt": [forward_transfer(A, z) for z in range(n)]}
