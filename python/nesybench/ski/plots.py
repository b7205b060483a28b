"""Figure 1: accuracy vs degradation level, mean ± 95% CI over repetitions per predictor,
one panel per data set × degradation."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import scores
from .report import PREDICTORS, collect, profile_of

LABELS = {"drop": "drop probability p", "noise": "noise intensity v", "flip": "flip probability f"}


def figure1(study_path, out: str | Path) -> Path:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    data = collect(study_path)
    datasets = sorted({k[0] for k in data}, key=lambda d: ["bcw", "splice", "census"].index(d)
                      if d in ("bcw", "splice", "census") else 9)
    degs = [d for d in ("drop", "noise", "flip") if any(k[1] == d for k in data)]
    fig, axes = plt.subplots(len(degs), len(datasets), squeeze=False,
                             figsize=(4.2 * len(datasets), 3.2 * len(degs)))
    for i, deg in enumerate(degs):
        for j, ds in enumerate(datasets):
            ax = axes[i][j]
            for pred in PREDICTORS:
                by = data.get((ds, deg, pred))
                if not by:
                    continue
                lv = np.array(sorted(by))
                acc = [np.asarray(by[v]["acc"]) for v in lv]
                mean = np.array([a.mean() for a in acc])
                ci = np.array([1.96 * a.std(ddof=1) / np.sqrt(len(a)) if len(a) > 1 else 0.0
                               for a in acc])
                # the area under the curve beside each name (ours, not the paper's): the
                # mean accuracy over the level range, not weighted towards the top levels
                ax.plot(lv, mean, marker="o", ms=3,
                        label=f"{pred} (AUC {scores.auc(lv, mean):.3f})")
                ax.fill_between(lv, mean - ci, mean + ci, alpha=0.2)
            ax.set_title(f"{ds} — {deg}")
            ax.legend(fontsize=7, title="AUC: ours, not the paper's", title_fontsize=7)
            ax.set_xlabel(LABELS[deg])
            ax.set_ylabel("test accuracy")
            ax.grid(alpha=0.3)
    fig.suptitle(f"profile: {profile_of(study_path)}", fontsize=9)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
