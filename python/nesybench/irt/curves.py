"""Difficulty bins, Cohen's kappa and system characteristic curves (the paper's §3.2.1, §3.4).

An SCC of a model is kappa (between its clean and its perturbed predictions, over all
instances of a bin) against the bin's mean difficulty, one curve per proportion δ of each
bin perturbed. Instances without a usable difficulty (excluded or |b| > 6) are in no bin.
"""
from __future__ import annotations

import numpy as np

from ..errors import NesyError

DELTAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
N_BINS = 5


#: how items are cut into bins (recorded in the study's difficulty summaries)
BINNING = "equal-frequency by rank; tied difficulties kept in one bin (the bin that holds " \
          "the middle of the tie)"


def equal_frequency_bins(b: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """Bin index 0..n_bins-1 of every item by difficulty rank (``-1`` where ``b`` is NaN).

    Items are sorted by ``b`` and cut into ``n_bins`` consecutive groups whose sizes differ
    by at most one (the first ``n mod n_bins`` groups get the extra item); bin 0 is the
    easiest. **Tied difficulties stay together**: a 1PL fit on J respondents of a complete
    matrix gives at most J − 1 distinct values, and splitting a tie would put identical
    instances into different bins by their position in the file. A group of equal ``b``
    goes, whole, to the bin that holds its middle position, so bin sizes move by at most
    half a tie. A tie larger than a bin can leave a bin empty: the bins are then numbered
    consecutively and there are fewer of them (``bins.max() + 1``).
    """
    b = np.asarray(b, dtype=float)
    ok = np.flatnonzero(np.isfinite(b))
    if n_bins < 1:
        raise NesyError("the number of difficulty bins must be ≥ 1", field="bins")
    if ok.size < n_bins:
        raise NesyError(f"{ok.size} items with a difficulty cannot fill {n_bins} bins",
                        field="bins")
    order = ok[np.argsort(b[ok], kind="stable")]
    sizes = [len(c) for c in np.array_split(np.arange(ok.size), n_bins)]
    starts = np.cumsum([0, *sizes[:-1]])                 # first rank of every bin
    values, first, counts = np.unique(b[order], return_index=True, return_counts=True)
    middle = first + counts / 2.0                        # a single item: rank + 0.5
    group_bin = np.searchsorted(starts, middle, side="right") - 1
    used = np.unique(group_bin)
    group_bin = np.searchsorted(used, group_bin)         # consecutive labels, none empty
    out = np.full(b.size, -1, dtype=np.int64)
    out[order] = np.repeat(group_bin, counts)
    return out


def bin_means(b: np.ndarray, bins: np.ndarray, n_bins: int) -> np.ndarray:
    """Mean difficulty of each bin (the SCC's x-axis), shape (n_bins,)."""
    return np.array([float(np.mean(b[bins == k])) for k in range(n_bins)])


def cohen_kappa(y1: np.ndarray, y2: np.ndarray) -> float:
    """Cohen's kappa ``(p_o − p_e) / (1 − p_e)`` between two label vectors.

    ``p_o`` is the observed agreement and ``p_e = Σ_c p1(c)·p2(c)`` the agreement expected
    from the two marginals. When both vectors are one and the same constant (``p_e = 1``)
    the raters agree perfectly and kappa is defined as 1; empty input is NaN.
    """
    y1, y2 = np.asarray(y1), np.asarray(y2)
    if y1.size == 0:
        return float("nan")
    labels, inv = np.unique(np.concatenate([y1, y2]), return_inverse=True)
    a, b = inv[:y1.size], inv[y1.size:]
    p_o = float(np.mean(a == b))
    p1 = np.bincount(a, minlength=labels.size) / a.size
    p2 = np.bincount(b, minlength=labels.size) / b.size
    p_e = float(p1 @ p2)
    if p_o == 1.0:
        return 1.0
    # here p_e < 1: p_e = 1 only when both vectors are the same constant, i.e. p_o = 1
    return (p_o - p_e) / (1.0 - p_e)


def perturbation_masks(bins: np.ndarray, deltas=DELTAS,
                       seed: int = 0) -> np.ndarray:  # no mutate (the default seed)
    """Which instances are perturbed at each δ: bool array (len(deltas), n).

    In every bin the instances are put in a seeded random order and the first
    ``round(δ·n_bin)`` of them are perturbed, so each bin gets exactly its proportion δ and the
    sets are nested (δ = 0.4 perturbs the δ = 0.2 instances and more). Unbinned instances
    (``bins == -1``) are never perturbed.
    """
    rng = np.random.default_rng(seed)
    bins = np.asarray(bins)
    out = np.zeros((len(deltas), bins.size), dtype=bool)
    for k in np.unique(bins[bins >= 0]):
        idx = rng.permutation(np.flatnonzero(bins == k))
        for d, delta in enumerate(deltas):
            out[d, idx[:int(round(delta * idx.size))]] = True
    return out


def scc_table(clean: np.ndarray, perturbed: np.ndarray, bins: np.ndarray, n_bins: int,
              truth: np.ndarray | None = None) -> np.ndarray:
    """Kappa per (δ, bin) between ``clean`` (n,) and each row of ``perturbed`` (D, n).

    With ``truth`` given, kappa is between the true labels and the perturbed predictions
    instead (the second view). Returns shape (D, n_bins).
    """
    out = np.empty((perturbed.shape[0], n_bins))
    ref = clean if truth is None else truth
    for d in range(perturbed.shape[0]):
        for k in range(n_bins):
            m = bins == k
            out[d, k] = cohen_kappa(ref[m], perturbed[d, m])
    return out
