"""The population of classifiers (IRT respondents): the paper's 18 families and more, in sklearn.

The paper (Table 2) takes one model per behavioural family of Fabra-Boluda et al. (2020),
trained with R/caret. scikit-learn has no C5.0, ctree, RIPPER or PART, so some families are
*approximations*, each said here and in ``FAMILIES[...].approximation``:

=========  ==================================================================================
id         scikit-learn model (variant 0 = the paper's setting where it has one)
=========  ==================================================================================
C5.0       entropy-gain decision tree (C5.0's split criterion), no boosting/winnowing
RPART      CART tree, Gini, ``min_samples_split=20, min_samples_leaf=7`` (rpart's minsplit /
           minbucket), cost-complexity pruning ``ccp_alpha`` standing in for rpart's cp
CI_T       conditional-inference-tree-like: a tree that stops where no split improves
           impurity by ``min_impurity_decrease`` (a pre-pruning threshold in place of ctree's
           permutation-test p-value, mincriterion)
JRip       RIPPER-like rule set: an entropy tree limited to ``max_leaf_nodes`` leaves, each
           leaf read as one rule (RIPPER's grow/prune/optimise passes are not reproduced)
PART       PART-like: the rules of a C4.5-style tree (entropy, ``min_samples_leaf=2`` = PART's
           minNumObj, cost-complexity pruning in place of C4.5's error-based pruning)
RFRules    rules from a forest: random forest of depth-limited trees (rules of length ≤ depth),
           all features per split (the paper's mtry = 64)
3NN        k-nearest neighbours on standardised features (k = 3 first)
NB         Gaussian naive Bayes
LDA        linear discriminant analysis (shrinkage variants)
RDA        Friedman's regularised discriminant analysis (own implementation): class
           covariances shrunk by λ towards the pooled one and by γ towards a scaled identity
FDA        flexible discriminant analysis, like: LDA on a degree-1 spline (hinge) basis per
           feature — an additive MARS-like basis instead of MARS with nprune = 17
PLS        PLS-DA: PLS regression on the one-hot classes, arg-max (ncomp = 3 first)
LVQ        LVQ1 (own implementation): a class-stratified codebook (size = 50 first) moved by
           LVQ1 updates, then k-NN (k = 3) among the codebook vectors
MLP        one-hidden-layer perceptron (7 neurons first), L-BFGS for at most 200 steps (nnet)
MLR        multinomial logistic regression
SVM        SVM, polynomial kernel of degree 2 (the paper's SVM)
SVMRBF     SVM, RBF kernel
RBF        RBF network, like: k-means centres, Gaussian units (width = median centre distance),
           softmax output layer (multinomial logistic regression on the units)
RF         random forest (mtry = all features first, as the paper; 30 trees first)
GBM        gradient boosting, 3-leaf trees (interaction.depth = 2), 50 rounds first
=========  ==================================================================================

Hyper-parameter variants of every family make the population (300 models by default; the
paper fed its IRT fit with up to 2,000 OpenML runs per data set and asks for 10–20 responses
per item parameter). ``population(n)`` takes variants round-robin over the families (variant
0 of every family first), so a reduced population stays diverse.
"""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import NesyError
from ..io import derive_seed


@dataclass(frozen=True)
class Family:
    id: str
    description: str
    approximation: str
    variants: tuple          # tuple of param dicts; variant 0 is the representative


@dataclass(frozen=True)
class ModelSpec:
    """One respondent: ``family`` with its ``variant``-th parameter setting, trained on the
    folds as they are (``resample`` 0) or on the ``resample``-th bootstrap resample of each
    training fold (a separate run, as the paper's OpenML runs are)."""

    family: str
    variant: int
    params: dict = field(default_factory=dict, hash=False, compare=False)
    resample: int = 0

    @property
    def name(self) -> str:
        return f"{self.family}#{self.variant}" + (f"@{self.resample}" if self.resample else "")


def _grid(**axes) -> tuple:
    keys = list(axes)
    return tuple(dict(zip(keys, vals)) for vals in itertools.product(*(axes[k] for k in keys)))


def _first(rep: dict, grid: tuple) -> tuple:
    """Variants with ``rep`` first (and not repeated)."""
    return (rep,) + tuple(g for g in grid if g != rep)


FAMILIES: dict[str, Family] = {f.id: f for f in [
    Family("C5.0", "C5.0 decision tree", "entropy-gain CART tree (no boosting, no winnowing)",
           _first({"min_samples_leaf": 2, "max_depth": None},
                  _grid(min_samples_leaf=[1, 2, 5, 10, 25, 50], max_depth=[None, 10, 5, 3]))),
    Family("RPART", "CART / rpart", "Gini tree, minsplit 20, minbucket 7, ccp_alpha for cp",
           _grid(ccp_alpha=[0.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 2e-2, 3e-2, 5e-2, 1e-1,
                            0.15, 0.2])),
    Family("CI_T", "conditional inference tree", "tree pre-pruned by min_impurity_decrease",
           _grid(min_impurity_decrease=[1e-3, 0.0, 3e-4, 3e-3, 1e-2, 2e-2, 3e-2, 5e-2],
                 min_samples_split=[20, 50])),
    Family("JRip", "RIPPER rule learner", "entropy tree with max_leaf_nodes leaves = rules",
           _first({"max_leaf_nodes": 64, "min_samples_leaf": 2},
                  _grid(max_leaf_nodes=[4, 8, 16, 32, 64, 128, 256],
                        min_samples_leaf=[2, 5, 10]))),
    Family("PART", "PART rule learner", "entropy tree, minNumObj 2, ccp_alpha pruning",
           _grid(ccp_alpha=[1e-3, 0.0, 3e-4, 3e-3, 1e-2, 3e-2, 6e-2], min_samples_leaf=[2, 8])),
    Family("RFRules", "rules from a random forest", "forest of depth-limited trees, mtry = all",
           _grid(max_depth=[4, 2, 3, 5, 6, 8], n_estimators=[50, 20])),
    Family("3NN", "k-nearest neighbours", "standardised features",
           _grid(n_neighbors=[3, 1, 5, 7, 9, 15, 25, 50, 100], weights=["uniform", "distance"],
                 p=[2, 1])),
    Family("NB", "naive Bayes", "Gaussian naive Bayes",
           _grid(var_smoothing=[1e-9, 1e-7, 1e-5, 1e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0])),
    Family("LDA", "linear discriminant analysis", "lsqr solver with shrinkage",
           _grid(shrinkage=[None, "auto", 0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.95])),
    Family("RDA", "regularised discriminant analysis", "Friedman's RDA (λ pooled, γ identity)",
           _first({"lam": 0.5, "gamma": 0.1},
                  _grid(lam=[0.0, 0.25, 0.5, 0.75, 1.0], gamma=[0.01, 0.1, 0.3, 0.7]))),
    Family("FDA", "flexible discriminant analysis", "LDA on a degree-1 spline basis",
           _grid(n_knots=[5, 3, 4, 8], shrinkage=["auto", 0.1, 0.5])),
    Family("PLS", "PLS discriminant analysis", "PLS regression on one-hot classes, arg-max",
           _grid(n_components=[3, 1, 2, 4, 5, 6, 8, 10, 12, 16, 20, 30])),
    Family("LVQ", "learning vector quantisation", "LVQ1 codebook + k-NN among codebook vectors",
           _grid(size=[50, 10, 20, 100, 200], k=[3, 1], epochs=[10, 3])),
    Family("MLP", "multilayer perceptron", "one hidden layer, L-BFGS (as R's nnet)",
           _grid(hidden=[7, 2, 4, 15, 30, 60, 120], alpha=[1e-4, 1e-1])),
    Family("MLR", "multinomial logistic regression", "lbfgs, L2 penalty",
           _grid(C=[1.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 3.0, 10.0, 100.0])),
    Family("SVM", "SVM, polynomial kernel", "degree 2 (the paper), also degree 3",
           _grid(C=[1.0, 0.01, 0.1, 10.0, 100.0], degree=[2, 3])),
    Family("SVMRBF", "SVM, RBF kernel", "gamma relative to 1/(p·var)",
           _grid(C=[1.0, 0.1, 10.0, 100.0], gamma_scale=[1.0, 0.1, 10.0])),
    Family("RBF", "RBF network", "k-means centres, Gaussian units, softmax output",
           _grid(centers=[50, 5, 10, 20, 100, 200], C=[1.0, 0.01])),
    Family("RF", "random forest", "mtry = all features first (the paper's mtry = 64)",
           _grid(max_features=[1.0, "sqrt", 0.3], n_estimators=[30, 10, 100],
                 min_samples_leaf=[1, 10])),
    Family("GBM", "stochastic gradient boosting", "histogram GBM, max_leaf_nodes = depth + 1",
           _grid(depth=[2, 1, 3, 5], rounds=[50, 10, 150], learning_rate=[0.1, 0.3])),
]}

#: the paper's 18 families (Table 2) in its order; LDA and SVMRBF are added by nesybench
PAPER_FAMILIES = ("C5.0", "CI_T", "FDA", "GBM", "JRip", "3NN", "LVQ", "MLP", "MLR", "NB",
                  "PART", "RBF", "RDA", "RF", "RFRules", "RPART", "PLS", "SVM")

DEFAULT_MODELS = 300

#: bump when an estimator changes in a way the variant dicts do not show (cache identity)
POPULATION_VERSION = 2


def definition_hash() -> str:
    """Short digest of every family's variants: part of a population sweep's fixed
    parameters, so that cached cells are never reused after a variant changes."""
    import hashlib  # noqa: PLC0415
    import json  # noqa: PLC0415

    text = json.dumps({"version": POPULATION_VERSION,
                       "families": {f.id: [sorted(v.items(), key=str) for v in f.variants]
                                    for f in FAMILIES.values()}}, default=str, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


#: how the respondents are drawn (``irt population --population``)
POPULATIONS = ("nesybench", "paper")
#: the most respondents ``--population paper`` draws (the paper: up to 2,000 runs)
MAX_PAPER_RESPONDENTS = 5000


def population(n_models: int = DEFAULT_MODELS, families=None,
               kind: str = "nesybench") -> list[ModelSpec]:
    """``n_models`` specs, round-robin over ``families`` (all by default), variant 0 first.

    ``kind="paper"``: the respondents are separate runs, as the paper's OpenML runs — every
    variant of every family on bootstrap resample 1, then resample 2, ... — and the tested
    models (variant 0 on the plain folds, :func:`spec_of` ``"FAMILY"``) are not among them:
    a model is never a respondent of the difficulty it is then scored against."""
    if kind not in POPULATIONS:
        raise NesyError(f"unknown population {kind!r} (known: {', '.join(POPULATIONS)})",
                        field="population")
    if kind == "paper":
        return _paper_population(n_models, families)
    fams = list(families) if families else list(FAMILIES)
    for f in fams:
        if f not in FAMILIES:
            raise NesyError(f"unknown model family {f!r} (known: {', '.join(FAMILIES)})",
                            field="families")
    total = sum(len(FAMILIES[f].variants) for f in fams)
    if n_models < 1:
        raise NesyError("the population needs at least one model", field="models")
    if n_models > total:
        raise NesyError(f"asked for {n_models} models but the families offer {total} variants",
                        field="models")
    out: list[ModelSpec] = []
    for v in itertools.count():
        for f in fams:
            if v < len(FAMILIES[f].variants):
                out.append(ModelSpec(f, v, FAMILIES[f].variants[v]))
                if len(out) == n_models:
                    return out


def _paper_population(n_models: int, families) -> list[ModelSpec]:
    fams = list(families) if families else list(FAMILIES)
    for f in fams:
        if f not in FAMILIES:
            raise NesyError(f"unknown model family {f!r} (known: {', '.join(FAMILIES)})",
                            field="families")
    if not 1 <= n_models <= MAX_PAPER_RESPONDENTS:
        raise NesyError(f"the paper population has 1 to {MAX_PAPER_RESPONDENTS} respondents, "
                        f"not {n_models}", field="models")
    out: list[ModelSpec] = []
    for r in itertools.count(1):
        for v in range(max(len(FAMILIES[f].variants) for f in fams)):
            for f in fams:
                if v < len(FAMILIES[f].variants):
                    out.append(ModelSpec(f, v, FAMILIES[f].variants[v], r))
                    if len(out) == n_models:
                        return out
    return out  # pragma: no cover - the loop returns


def spec_of(name: str) -> ModelSpec:
    """Parse ``FAMILY#VARIANT`` or ``FAMILY#VARIANT@RESAMPLE`` (a bare family = variant 0)."""
    name, _, resample = name.partition("@")
    if resample and not resample.isdigit():
        raise NesyError(f"resample must be a whole number, not {resample!r}", field="model")
    fam, _, var = name.partition("#")
    if fam not in FAMILIES:
        raise NesyError(f"unknown model family {fam!r} (known: {', '.join(FAMILIES)})",
                        field="model")
    v = int(var) if var else 0
    if not 0 <= v < len(FAMILIES[fam].variants):
        raise NesyError(f"{fam} has variants 0..{len(FAMILIES[fam].variants) - 1}, not {v}",
                        field="model")
    return ModelSpec(fam, v, FAMILIES[fam].variants[v], int(resample or 0))


# --- estimators sklearn lacks ---------------------------------------------------------------

class PLSDA:
    """PLS-DA: PLS regression of the one-hot class matrix on X; predict the arg-max column."""

    def __init__(self, n_components: int = 3):
        self.n_components = n_components

    def fit(self, X, y):
        from sklearn.cross_decomposition import PLSRegression  # noqa: PLC0415

        self.classes_ = np.unique(y)
        Y = (y[:, None] == self.classes_[None, :]).astype(float)
        k = max(1, min(self.n_components, X.shape[1], X.shape[0] - 1))
        self.pls_ = PLSRegression(n_components=k, scale=False).fit(X, Y)
        return self

    def predict(self, X):
        return self.classes_[np.argmax(self.pls_.predict(X), axis=1)]


class LVQ1:
    """LVQ1 (Kohonen): ``size`` codebook vectors drawn per class in proportion to its frequency
    (at least one each); each epoch visits the training rows in a seeded random order and moves
    the nearest codebook vector ``m`` by ``±lr·(x − m)`` (towards x when the classes agree),
    with ``lr`` decreasing linearly from ``lr0`` to 0. Prediction: majority of the ``k``
    nearest codebook vectors."""

    def __init__(self, size=50, k=3, epochs=10, lr0=0.05, seed=0):
        self.size, self.k, self.epochs, self.lr0, self.seed = size, k, epochs, lr0, seed

    def fit(self, X, y):
        rng = np.random.default_rng(self.seed)
        self.classes_ = np.unique(y)
        counts = np.array([(y == c).sum() for c in self.classes_])
        per = np.maximum(1, np.round(counts * self.size / counts.sum()).astype(int))
        W, L = [], []
        for c, m in zip(self.classes_, per):
            idx = np.flatnonzero(y == c)
            pick = rng.choice(idx, size=min(m, idx.size), replace=False)
            W.append(X[pick])
            L.append(np.full(pick.size, c))
        W, L = np.vstack(W).astype(float), np.concatenate(L)
        n = X.shape[0]
        steps = self.epochs * n
        t = 0
        for _ in range(self.epochs):
            for i in rng.permutation(n):
                lr = self.lr0 * (1.0 - t / steps)
                t += 1
                d = ((W - X[i]) ** 2).sum(axis=1)
                j = int(np.argmin(d))
                W[j] += (lr if L[j] == y[i] else -lr) * (X[i] - W[j])
        self.W_, self.L_ = W, L
        return self

    def predict(self, X):
        d = ((X[:, None, :] - self.W_[None, :, :]) ** 2).sum(axis=2)
        k = min(self.k, self.W_.shape[0])
        nn = np.argsort(d, axis=1, kind="stable")[:, :k]
        votes = np.zeros((X.shape[0], self.classes_.size))
        cidx = np.searchsorted(self.classes_, self.L_[nn])
        for col in range(k):
            np.add.at(votes, (np.arange(X.shape[0]), cidx[:, col]), 1.0 / (1 + 1e-3 * col))
        return self.classes_[np.argmax(votes, axis=1)]


class RDA:
    """Friedman's (1989) regularised discriminant analysis.

    ``Σ_k(λ) = (1 − λ)·S_k + λ·S_pooled`` and ``Σ_k(λ, γ) = (1 − γ)·Σ_k(λ) + γ·(tr Σ_k(λ)/p)·I``;
    predict ``argmax_k  log π_k − ½ log|Σ_k| − ½ (x − μ_k)ᵀ Σ_k⁻¹ (x − μ_k)``.
    λ = 1, γ = 0 is LDA; λ = 0, γ = 0 is QDA."""

    def __init__(self, lam=0.5, gamma=0.1):
        self.lam, self.gamma = lam, gamma

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        n, p = X.shape
        mus, covs, ns = [], [], []
        for c in self.classes_:
            Xc = X[y == c]
            mus.append(Xc.mean(axis=0))
            D = Xc - mus[-1]
            covs.append(D.T @ D / max(1, Xc.shape[0] - 1))
            ns.append(Xc.shape[0])
        ns = np.array(ns, dtype=float)
        pooled = sum((m - 1) * S for m, S in zip(ns, covs)) / max(1.0, ns.sum() - len(ns))
        self.mu_ = np.array(mus)
        self.logprior_ = np.log(ns / ns.sum())
        self.prec_, self.logdet_ = [], []
        for S in covs:
            S = (1 - self.lam) * S + self.lam * pooled
            S = (1 - self.gamma) * S + self.gamma * (np.trace(S) / p) * np.eye(p)
            S = S + 1e-9 * np.eye(p)
            sign, logdet = np.linalg.slogdet(S)
            self.prec_.append(np.linalg.pinv(S, hermitian=True))
            self.logdet_.append(logdet if sign > 0 else np.inf)
        return self

    def predict(self, X):
        scores = np.empty((X.shape[0], self.classes_.size))
        for k in range(self.classes_.size):
            D = X - self.mu_[k]
            maha = np.einsum("ij,jk,ik->i", D, self.prec_[k], D)
            scores[:, k] = self.logprior_[k] - 0.5 * self.logdet_[k] - 0.5 * maha
        return self.classes_[np.argmax(scores, axis=1)]


class RBFUnits:
    """Transformer: Gaussian units at k-means centres, ``exp(−‖x − c‖² / (2 w²))`` with w the
    median distance between centres."""

    def __init__(self, centers=50, seed=0):
        self.centers, self.seed = centers, seed

    def fit(self, X, y=None):
        from sklearn.cluster import KMeans  # noqa: PLC0415

        k = max(2, min(self.centers, X.shape[0] // 2))
        self.C_ = KMeans(n_clusters=k, n_init=1, random_state=self.seed).fit(X).cluster_centers_
        d = np.sqrt(((self.C_[:, None] - self.C_[None]) ** 2).sum(-1))
        w = np.median(d[np.triu_indices(k, 1)])
        self.w_ = w if w > 0 else 1.0
        return self

    def transform(self, X):
        d2 = ((X[:, None, :] - self.C_[None]) ** 2).sum(-1)
        return np.exp(-d2 / (2 * self.w_ ** 2))

    def fit_transform(self, X, y=None):
        return self.fit(X, y).transform(X)

    def get_params(self, deep=True):
        return {"centers": self.centers, "seed": self.seed}

    def set_params(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)
        return self


def _estimator(spec: ModelSpec, seed: int, n_features: int):
    """The sklearn(-like) classifier of ``spec`` (features already standardised/encoded)."""
    from sklearn import discriminant_analysis as da  # noqa: PLC0415
    from sklearn import ensemble, linear_model, naive_bayes, neighbors, neural_network, svm, tree
    from sklearn.pipeline import make_pipeline  # noqa: PLC0415
    from sklearn.preprocessing import SplineTransformer  # noqa: PLC0415

    p = dict(spec.params)
    rs = seed % (2 ** 31)
    f = spec.family
    if f == "C5.0":
        return tree.DecisionTreeClassifier(criterion="entropy", random_state=rs, **p)
    if f == "RPART":
        return tree.DecisionTreeClassifier(criterion="gini", min_samples_split=20,
                                           min_samples_leaf=7, random_state=rs, **p)
    if f == "CI_T":
        return tree.DecisionTreeClassifier(criterion="gini", min_samples_leaf=7,
                                           random_state=rs, **p)
    if f == "JRip":
        return tree.DecisionTreeClassifier(criterion="entropy", random_state=rs, **p)
    if f == "PART":
        return tree.DecisionTreeClassifier(criterion="entropy", random_state=rs, **p)
    if f == "RFRules":
        return ensemble.RandomForestClassifier(max_features=None, random_state=rs, n_jobs=1, **p)
    if f == "3NN":
        return neighbors.KNeighborsClassifier(n_jobs=1, **p)
    if f == "NB":
        return naive_bayes.GaussianNB(**p)
    if f == "LDA":
        if p["shrinkage"] is None:
            return da.LinearDiscriminantAnalysis(solver="svd")
        return da.LinearDiscriminantAnalysis(solver="lsqr", shrinkage=p["shrinkage"])
    if f == "RDA":
        return RDA(**p)
    if f == "FDA":
        return make_pipeline(SplineTransformer(degree=1, n_knots=p["n_knots"]),
                             da.LinearDiscriminantAnalysis(solver="lsqr",
                                                           shrinkage=p["shrinkage"]))
    if f == "PLS":
        return PLSDA(**p)
    if f == "LVQ":
        return LVQ1(seed=rs, **p)
    if f == "MLP":
        return neural_network.MLPClassifier(hidden_layer_sizes=(p["hidden"],), alpha=p["alpha"],
                                            solver="lbfgs", max_iter=200, random_state=rs)
    if f == "MLR":
        return linear_model.LogisticRegression(C=p["C"], max_iter=500)
    if f == "SVM":
        return svm.SVC(kernel="poly", degree=p["degree"], C=p["C"], gamma="scale", coef0=1.0,
                       random_state=rs)
    if f == "SVMRBF":
        return svm.SVC(kernel="rbf", C=p["C"], gamma=p["gamma_scale"] / max(1, n_features),
                       random_state=rs)
    if f == "RBF":
        return make_pipeline(RBFUnits(centers=p["centers"], seed=rs),
                             linear_model.LogisticRegression(C=p["C"], max_iter=500))
    if f == "RF":
        return ensemble.RandomForestClassifier(random_state=rs, n_jobs=1, **p)
    if f == "GBM":
        return ensemble.HistGradientBoostingClassifier(
            max_leaf_nodes=p["depth"] + 1, max_iter=p["rounds"],
            learning_rate=p["learning_rate"], early_stopping=False, random_state=rs)
    raise NesyError(f"unknown model family {f!r}", field="model")  # pragma: no cover


class Encoder:
    """Training-fold preprocessing: nominal codes one-hot, numeric columns standardised."""

    def __init__(self, nominal: np.ndarray, categories: list):
        self.nominal = np.asarray(nominal, dtype=bool)
        self.sizes = [len(categories[j]) if self.nominal[j] and categories[j] else 0
                      for j in range(self.nominal.size)]

    def fit(self, X):
        num = ~self.nominal
        self.mu = X[:, num].mean(axis=0)
        sd = X[:, num].std(axis=0)
        self.sd = np.where(sd > 0, sd, 1.0)
        return self

    def transform(self, X):
        parts = [(X[:, ~self.nominal] - self.mu) / self.sd]
        for j in np.flatnonzero(self.nominal):
            m = max(self.sizes[j], int(X[:, j].max()) + 1 if X.size else 1)
            oh = np.zeros((X.shape[0], m))
            oh[np.arange(X.shape[0]), X[:, j].astype(int)] = 1.0
            parts.append(oh)
        return np.hstack(parts)


class Model:
    """A family's classifier behind the training-fold :class:`Encoder`."""

    def __init__(self, spec: ModelSpec, nominal, categories, seed: int = 0):
        self.spec, self.seed = spec, seed
        self.encoder = Encoder(nominal, categories)

    def fit(self, X, y):
        Z = self.encoder.fit(X).transform(X)
        self.est = _estimator(self.spec, self.seed, Z.shape[1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # convergence / collinearity chatter
            self.est.fit(Z, y)
        return self

    def predict(self, X):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(self.est.predict(self.encoder.transform(X)))


def one_thread():
    """Context: BLAS/OpenMP limited to one thread (models run side by side in the sweep
    runner, and spare threads only spin against each other on a shared machine)."""
    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    return threadpool_limits(1)


def stratified_folds(y: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Fold index (0..k-1) of every row, stratified by class.

    Raises :class:`NesyError` when some class has fewer than ``k`` rows (a fold would have no
    instance of it, and its test predictions could not be scored like the others')."""
    counts = np.bincount(y)
    present = counts[counts > 0]
    if present.size < 2:
        raise NesyError("the data has a single class; classification needs at least two",
                        field="target")
    bad = np.flatnonzero((counts > 0) & (counts < k))
    if bad.size:
        raise NesyError(f"class code(s) {bad.tolist()} have fewer than {k} instances, so a "
                        f"{k}-fold split would leave a fold without them (use fewer folds or "
                        f"more data)", field="folds")
    from sklearn.model_selection import StratifiedKFold  # noqa: PLC0415

    fold = np.empty(y.size, dtype=np.int64)
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed % (2 ** 31))
    for i, (_, test) in enumerate(skf.split(np.zeros(y.size), y)):
        fold[test] = i
    return fold


def _bootstrap(y: np.ndarray, rows: np.ndarray, seed: int) -> np.ndarray:
    """A stratified bootstrap resample of ``rows`` (same size per class, drawn with
    replacement), so every class of the fold stays present."""
    rng = np.random.default_rng(seed)
    out = [rng.choice(rows[y[rows] == k], size=int(np.sum(y[rows] == k)), replace=True)
           for k in np.unique(y[rows])]
    return np.sort(np.concatenate(out))


def cross_val_predict(spec: ModelSpec, ds, folds: np.ndarray, seed: int,
                      on_fold=None) -> np.ndarray:
    """Held-out predictions (class codes, shape (n,)) of ``spec`` under the fold assignment;
    ``on_fold(f, accuracy)`` is called after each fold (e.g. to log it)."""
    pred = np.empty(ds.n, dtype=np.int64)
    with one_thread():
        for f in range(int(folds.max()) + 1):
            tr, te = np.flatnonzero(folds != f), folds == f
            if spec.resample:
                tr = _bootstrap(ds.y, tr, derive_seed("irt.resample", seed, spec.resample, f))
            m = Model(spec, ds.nominal, ds.categories, seed).fit(ds.X[tr], ds.y[tr])
            pred[te] = m.predict(ds.X[te])
            if on_fold is not None:
                on_fold(f, float(np.mean(pred[te] == ds.y[te])))
    return pred
