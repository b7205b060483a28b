"""Robustness taxonomy (the paper's Q3): agglomerative clustering of kappa profiles.

A model's profile is its kappa for every (difficulty bin, δ) pair, averaged over the data
sets; models are clustered with Euclidean distance and complete linkage (scipy), and the
tree is cut into ``k`` clusters (3 by default: the paper finds three main clusters).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NesyError


@dataclass
class Taxonomy:
    """labels      model names, in the profile matrix's row order
    linkage     scipy linkage matrix (n−1, 4)
    clusters    cluster number (1..k) of each model after cutting into ``k``
    order       leaf order of the dendrogram (indices into ``labels``)
    """

    labels: list
    linkage: np.ndarray
    clusters: np.ndarray
    order: list
    k: int

    def to_pandas(self):
        """One row per model, in dendrogram order: ``model``, ``cluster`` (1..k), ``leaf``
        (position in the dendrogram)."""
        import pandas as pd  # noqa: PLC0415

        return pd.DataFrame([{"model": self.labels[i], "cluster": int(self.clusters[i]),
                              "leaf": pos} for pos, i in enumerate(self.order)],
                            columns=["model", "cluster", "leaf"])

    def groups(self) -> list[list[str]]:
        """The k clusters as lists of model names, in dendrogram order."""
        seen, out = {}, []
        for i in self.order:
            c = int(self.clusters[i])
            if c not in seen:
                seen[c] = len(out)
                out.append([])
            out[seen[c]].append(self.labels[i])
        return out


def cluster_profiles(profiles: np.ndarray, labels: list, k: int = 3) -> Taxonomy:
    """Complete-linkage, Euclidean hierarchical clustering of ``profiles`` (models × features)."""
    from scipy.cluster.hierarchy import fcluster, leaves_list, linkage  # noqa: PLC0415

    P = np.asarray(profiles, dtype=float)
    if P.ndim != 2 or P.shape[0] != len(labels):
        raise NesyError(f"a profile matrix is models × features with one label per row, got "
                        f"{P.shape} and {len(labels)} labels", field="profiles")
    if P.shape[0] < 2:
        raise NesyError("the taxonomy needs at least two models", field="profiles")
    if not np.all(np.isfinite(P)):
        raise NesyError("the kappa profiles hold NaN (a bin with no instance?)",
                        field="profiles")
    Z = linkage(P, method="complete", metric="euclidean")
    k = max(1, min(k, P.shape[0]))
    clusters = fcluster(Z, t=k, criterion="maxclust")
    return Taxonomy(labels=list(labels), linkage=Z, clusters=clusters,
                    order=[int(i) for i in leaves_list(Z)], k=k)


#: the paper's three clusters of Figure 5 (its 18 families)
PAPER_TAXONOMY = (("CI_T", "JRip", "C5.0", "NB"),
                  ("GBM", "RF", "MLR", "MLP", "FDA", "RPART", "RFRules"),
                  ("PART", "PLS", "LVQ", "RDA", "RBF", "3NN", "SVM"))


def agreement(groups, reference=PAPER_TAXONOMY) -> dict:
    """How far a partition of model families agrees with ``reference`` (the paper's) over
    the families both contain: pairs placed alike (together in both or apart in both) of all
    pairs, and the adjusted Rand index (1 = the same partition, ≈ 0 = chance)."""
    from sklearn.metrics import adjusted_rand_score  # noqa: PLC0415

    ours = {m: i for i, g in enumerate(groups) for m in g}
    ref = {m: i for i, g in enumerate(reference) for m in g}
    shared = sorted(set(ours) & set(ref))
    if len(shared) < 2:
        return {"families": len(shared), "pairs": 0, "pairs_alike": 0,
                "adjusted_rand": float("nan")}
    alike = sum((ours[a] == ours[b]) == (ref[a] == ref[b])
                for i, a in enumerate(shared) for b in shared[i + 1:])
    n_pairs = len(shared) * (len(shared) - 1) // 2
    return {"families": len(shared), "pairs": n_pairs, "pairs_alike": int(alike),
            "adjusted_rand": float(adjusted_rand_score([ref[m] for m in shared],
                                                       [ours[m] for m in shared]))}
