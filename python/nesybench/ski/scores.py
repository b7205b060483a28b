"""Robustness score ρ (eq. 1), robustness gain R, and Mann–Whitney U tests.

    ρ_N(𝐃) = (1/n) Σ_{ΔD ∈ 𝐃} ‖ΔD‖ · π(N_ΔD) / π(N)                             (eq. 1)

with ‖ΔD‖ = Ψ(D, D∘ΔD) (:mod:`.magnitude`) and π the accuracy on the clean test split.
𝐃 is the set of non-zero levels of one degradation (level 0 has ‖ΔD‖ = 0 and is π(N));
each term uses the means over the repetitions of Ψ and of the accuracy at that level.
R = ρ(educated) / ρ(uneducated), computed on the same perturbed data sets (the degradation
draws depend on data set, degradation, level and repetition — not on the predictor).
"""
from __future__ import annotations

import numpy as np


def rho(levels, psi_means, acc_means) -> float:
    """ρ from per-level means; ``levels[0]`` must be the unperturbed level 0."""
    levels = np.asarray(levels, dtype=float)
    psi_means = np.asarray(psi_means, dtype=float)
    acc_means = np.asarray(acc_means, dtype=float)
    if len(levels) == 0 or levels[0] != 0:
        raise ValueError("ρ needs level 0 (the unperturbed predictor) first")
    base = acc_means[0]
    nz = levels > 0
    if not nz.any() or base <= 0:
        return float("nan")
    return float(np.mean(psi_means[nz] * acc_means[nz] / base))


def gain(rho_educated: float, rho_uneducated: float) -> float:
    """R = ρ(educated) / ρ(uneducated)."""
    return float(rho_educated / rho_uneducated) if rho_uneducated else float("nan")


def mann_whitney(a, b) -> float:
    """Two-sided Mann–Whitney U p-value (1.0 when both samples are constant and equal)."""
    from scipy.stats import mannwhitneyu  # noqa: PLC0415

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    if np.all(a == a[0]) and np.all(b == a[0]):
        return 1.0
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)


def auc(levels, acc_means) -> float:
    """Normalised area under the mean-accuracy-vs-level curve (trapezoids over the levels,
    divided by the level range): the mean accuracy over the degradation's range, every
    level weighted by its spacing rather than by Ψ. Ours, not the paper's: unlike ρ it is not
    dominated by the highest levels, where Ψ explodes."""
    levels = np.asarray(levels, dtype=float)
    acc_means = np.asarray(acc_means, dtype=float)
    if len(levels) < 2 or levels[-1] == levels[0]:
        return float("nan")
    widths = np.diff(levels)
    return float(np.sum(widths * (acc_means[1:] + acc_means[:-1]) / 2) / (levels[-1] - levels[0]))


def level_thirds(levels) -> list[list[int]]:
    """Indices of the non-zero levels cut into three consecutive groups (low, middle, high;
    sizes differ by at most one), each to be scored with level 0 as its base."""
    nz = [i for i, lv in enumerate(levels) if lv > 0]
    return [list(part) for part in np.array_split(np.array(nz, dtype=int), 3)]


def mann_whitney_levels(acc_by_level_a, acc_by_level_b) -> float:
    """Mann–Whitney U on the per-level mean accuracies (one value per level per predictor):
    the test of the mean curves, next to the pooled test of every repetition."""
    a = [float(np.mean(v)) for v in acc_by_level_a]
    b = [float(np.mean(v)) for v in acc_by_level_b]
    return mann_whitney(a, b)


def gain_bootstrap(levels, psi, acc_educated, acc_uneducated,  # defaults: no mutate
                   n: int = 1000, seed: int = 0) -> np.ndarray:  # no mutate
    """R recomputed on ``n`` bootstrap resamples of the repetitions: ``psi``, ``acc_*`` are
    [levels, reps] arrays; at every level the same repetitions are drawn for both
    predictors (they trained on the same perturbed data sets: a paired design), and Ψ's
    mean is taken over the drawn repetitions too. Returns the ``n`` values of R."""
    psi = np.asarray(psi, dtype=float)
    ae, au = np.asarray(acc_educated, dtype=float), np.asarray(acc_uneducated, dtype=float)
    levels = np.asarray(levels, dtype=float)
    L, R = ae.shape
    idx = np.random.default_rng(seed).integers(0, R, size=(n, L, R))
    pick = lambda m: np.take_along_axis(np.broadcast_to(m, (n, L, R)), idx, axis=2).mean(2)  # noqa: E731
    p, e, u = pick(psi), pick(ae), pick(au)
    nz = levels > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        rho_e = (p[:, nz] * e[:, nz] / e[:, :1]).mean(1)
        rho_u = (p[:, nz] * u[:, nz] / u[:, :1]).mean(1)
        return rho_e / rho_u
