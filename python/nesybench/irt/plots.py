"""Figures of the study (matplotlib, Agg): the paper's Figures 3, 4 and 5."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def _plt():
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def difficulty_histograms(study, summaries: dict, out: Path) -> Path:
    """Figure 3: histogram of the kept difficulties per data set, titled with mean ± sd."""
    from .study import load_difficulty  # noqa: PLC0415

    plt = _plt()
    names = list(summaries)
    fig, axes = plt.subplots(len(names), 1, figsize=(7, 1.9 * len(names) + 0.6), sharex=True,
                             squeeze=False)
    for ax, d in zip(axes[:, 0], names):
        z = load_difficulty(study, d)       # read contained and checked
        b = z["b"][z["kept"]]
        s = summaries[d]
        ax.hist(b, bins=50, color="#4477aa", alpha=0.85)
        title = f"{d}: {s['b_mean']:.2f} ± {s['b_sd']:.2f} ({s['kept']} of {s['items']} kept)"
        if s.get("paper_b_mean") is not None:
            title += f"   paper: {s['paper_b_mean']:.2f} ± {s['paper_b_sd']:.2f}"
        ax.set_title(title, fontsize=9)
        ax.axvline(float(np.mean(b)), color="k", lw=1)
        ax.set_ylabel("instances")
    axes[-1, 0].set_xlabel(f"IRT difficulty b ({summaries[names[0]]['model'].upper()})")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def scc_figure(dataset: str, models: list, deltas: list, K: np.ndarray, B: np.ndarray,
               out: Path, ylabel: str = "kappa (clean vs perturbed)") -> Path:
    """Figure 4 for one data set: a panel per model, kappa vs bin mean difficulty, a line per δ.

    K: (models, deltas, bins), B: (bins,)"""
    plt = _plt()
    n = len(models)
    cols = min(n, 6)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(2.2 * cols, 2.0 * rows + 0.6), sharex=True,
                             sharey=True, squeeze=False)
    cmap = plt.get_cmap("viridis")
    for j, ax in enumerate(axes.ravel()):
        if j >= n:
            ax.axis("off")
            continue
        for di, delta in enumerate(deltas):
            ax.plot(B, K[j, di], marker="o", ms=2.5, lw=1.2,
                    color=cmap(di / max(1, len(deltas) - 1)), label=f"δ={delta:g}")
        ax.set_title(models[j].split("#")[0], fontsize=9)
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("difficulty", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("kappa", fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(deltas), fontsize=8,
               title=f"{dataset}: {ylabel}; proportion of each bin perturbed", title_fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.75 / (2.0 * rows + 0.6)))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def dendrogram(tax, out: Path) -> Path:
    """Figure 5: the complete-linkage dendrogram of the kappa profiles."""
    from scipy.cluster.hierarchy import dendrogram as sp_dendrogram  # noqa: PLC0415

    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4))
    sp_dendrogram(tax.linkage, labels=tax.labels, ax=ax, leaf_rotation=90,
                  color_threshold=tax.linkage[-(tax.k - 1), 2] - 1e-9 if tax.k > 1 else 0)
    ax.set_ylabel("Euclidean distance (complete linkage)")
    ax.set_title(f"Robustness taxonomy: kappa profiles, {tax.k} clusters", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
