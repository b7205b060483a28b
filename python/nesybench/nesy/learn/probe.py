"""Post-hoc concept probes and TCAV scores for any trained model (``nesybench nesy probe``).

A model without concepts (the plain ``nn``) still computes *something* in its hidden layers;
the rsbench paper reads its concepts post hoc with linear classifiers on the activations.
For a frozen model and a list of layers this module

1. **collects activations** of each layer on the concept-annotated splits (forward hooks; a
   4-D convolutional activation is average-pooled to at most 4 × 4 cells per channel). Layers
   inside a concept network shared over positions (a LeNet per digit tile, the CNN per
   Kandinsky figure) give one row per position: variable *i* is read from its own position's
   row; every other layer (the label head's input and hidden layer) gives one row per
   example, read for every variable;
2. **fits a linear probe per concept variable**: multinomial logistic regression on
   standardised activations of the *fit* split (default ``train``), the inverse
   regularisation C chosen by stratified k-fold cross-validation (accuracy) from
   :data:`CS`, refit on the whole fit split, and predicts the concepts of the *evaluation*
   split (default ``test``);
3. **scores the probed concepts** with the metric code of the NeSy models
   (:func:`nesybench.shortcuts.metrics.compute`: concept accuracy, macro-F1, collapse, pooled
   per concept group as the task's ``maps``) and **classifies the probed concept map** with
   :func:`nesybench.nesy.learn.detect.detect` (identity, one of the counted reasoning shortcuts, or
   not optimal);
4. **TCAV** (Kim et al. 2018, "Interpretability beyond feature attribution: testing with
   concept activation vectors"): for a concept C = "variable i has value u", a concept
   activation vector v_C is the unit normal of a linear classifier (logistic regression)
   separating the activations of fit-split examples with C from as many random fit-split
   examples; the conceptual sensitivity of label value k at example x is the directional
   derivative S_{C,k}(x) = ∇h_k(f(x)) · v_C of the label logit h_k (the label head's
   pre-softmax output; the log-probability for models without a head) with respect to the
   layer's activation f(x), and the TCAV score is the fraction of the evaluation split's
   examples of class k with S_{C,k}(x) > 0. Significance: ``runs`` CAVs against fresh random
   sets and ``runs`` random-vs-random CAVs give two samples of TCAV scores; a two-sided
   Student t-test (equal variances, as the TCAV reference code) compares them and the
   concept is significant for the label when p < ``alpha``.
"""
from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...errors import NesyError
from ...shortcuts import metrics as rs_metrics
from .detect import detect, group_confusions

#: inverse regularisation strengths the cross-validation chooses from
CS = (0.01, 0.1, 1.0, 10.0)
#: 4-D activations are average-pooled to at most this many cells per side
POOL = 4
HEAD_INPUT = "head:input"


# -- statistics (small, pure: tested against hand computation) -------------------------------
def tcav_score(grads: np.ndarray, cav: np.ndarray) -> float:
    """Fraction of rows of ``grads`` (the gradients of one label logit at the examples of that
    label's class, (n, d)) whose directional derivative along ``cav`` is positive."""
    g = np.asarray(grads, dtype=float)
    if g.ndim != 2 or len(g) == 0:
        raise NesyError("tcav_score needs a non-empty (n, d) gradient matrix")
    return float(np.mean(g @ np.asarray(cav, dtype=float) > 0))


def t_test(a, b) -> tuple[float, float]:
    """Two-sided Student t-test with pooled variance: ``(t, p)``; ``(0, 1)`` when both
    samples are constant and equal, ``(±inf, 0)`` when constant and different."""
    from scipy import stats  # noqa: PLC0415
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        raise NesyError("the TCAV t-test needs at least 2 runs per sample")
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        if a[0] == b[0]:
            return 0.0, 1.0
        return (float("inf") if a[0] > b[0] else float("-inf")), 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # scipy's precision note on near-constant samples
        res = stats.ttest_ind(a, b, equal_var=True)
    return float(res.statistic), float(res.pvalue)


def cav(pos: np.ndarray, neg: np.ndarray, seed: int = 0) -> np.ndarray:
    """Unit concept activation vector: the normal of a logistic regression separating ``pos``
    (the concept's activations, label 1) from ``neg`` (label 0), pointing towards ``pos``."""
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415
    x = np.concatenate([pos, neg]).astype(float)
    y = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    # fitted on standardised columns (fast, well conditioned); the decision function
    # w·(x - mu)/sd + b has the normal w / sd in activation space
    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(max_iter=2000, random_state=seed).fit((x - mu) / sd, y)
    w = clf.coef_[0] / sd
    n = np.linalg.norm(w)
    return w / n if n > 0 else w


@dataclass
class Probe:
    """A fitted probe: the chosen C, cross-validated accuracy, and the classes it saw."""

    c: float | None
    cv_accuracy: float | None
    classes: list[int]
    model: object = None

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.model is None:
            return np.full(len(x), self.classes[0], dtype=np.int64)
        return np.asarray(self.model.predict(x), dtype=np.int64)


def fit_probe(x: np.ndarray, y: np.ndarray, *, cv: int = 3, seed: int = 0,
              cs=CS) -> Probe:
    """Multinomial logistic regression of ``y`` (value indices) on ``x`` (n, d), standardised;
    C chosen by ``cv``-fold cross-validation (stratified when every class has ``cv`` examples)
    by mean held-out accuracy (ties: the smaller C), then refit on all rows."""
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415
    from sklearn.model_selection import KFold, StratifiedKFold  # noqa: PLC0415
    from sklearn.pipeline import make_pipeline  # noqa: PLC0415
    from sklearn.preprocessing import StandardScaler  # noqa: PLC0415

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=np.int64)
    classes = sorted(set(y.tolist()))
    if len(classes) < 2:
        return Probe(None, None, classes)

    def make(c):
        return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000,
                                                                  random_state=seed))
    counts = np.bincount(y)
    k = max(2, min(cv, len(y)))
    split = (StratifiedKFold(k, shuffle=True, random_state=seed)
             if counts[counts > 0].min() >= k else KFold(k, shuffle=True, random_state=seed))
    scores = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in cs:
            accs = []
            for tr, te in split.split(x, y):
                if len(set(y[tr].tolist())) < 2:
                    pred = np.full(len(te), y[tr][0])
                else:
                    pred = make(c).fit(x[tr], y[tr]).predict(x[te])
                accs.append(float(np.mean(pred == y[te])))
            scores.append(float(np.mean(accs)))
        best = int(np.argmax(scores))        # first maximum: the smallest C
        model = make(cs[best]).fit(x, y)
    return Probe(float(cs[best]), scores[best], classes, model)


# -- layers and activations ------------------------------------------------------------------
def hidden_layers(model: nn.Module) -> list[str]:
    """The default probe layers: every ReLU module's output (the hidden layers of the concept
    networks and of the label head) and ``head:input`` (what the label head reads)."""
    names = [n for n, m in model.named_modules() if isinstance(m, nn.ReLU)]
    if isinstance(getattr(model, "head", None), nn.Module):
        names.append(HEAD_INPUT)
    return names


def _module(model: nn.Module, name: str) -> nn.Module:
    mods = dict(model.named_modules())
    key = "head" if name == HEAD_INPUT else name
    if key not in mods or key == "":
        raise NesyError(f"no layer {name!r} in the model (layers: "
                        f"{', '.join(hidden_layers(model))})", field="layers")
    return mods[key]


def _pool(a: Tensor) -> Tensor:
    if a.dim() == 4:
        a = F.adaptive_avg_pool2d(a, (min(POOL, a.shape[2]), min(POOL, a.shape[3])))
    return a.flatten(1)


def _slots(model: nn.Module, name: str, rows_per_example: int, n_vars: int) -> dict[int, int]:
    """{variable index: row within the example} for a layer with that many rows per example."""
    if rows_per_example == 1:
        return {i: 0 for i in range(n_vars)}
    ext = getattr(model, "extractor", None)
    if ext is not None and ext.layout == "tiles" and name.startswith("extractor.nets."):
        key = name.split(".")[2]
        ix = [i for i, k in enumerate(ext.keys) if k.replace(":", "_") == key]
        if len(ix) == rows_per_example:
            return {v: j for j, v in enumerate(ix)}
    if ext is not None and ext.layout == "figures" and ext.n_figs == rows_per_example:
        return {i: f for i, (f, _) in enumerate(ext.slots)}
    raise NesyError(f"layer {name!r} has {rows_per_example} rows per example and no known "
                    "position of the concept variables", field="layers")


def _label_scores(model, x: Tensor, head_out: list) -> list[Tensor]:
    """Per label j, the (B, m_j) scores whose gradients TCAV takes: the head's logits when the
    model has a label head, else the label log-probabilities."""
    out = model(x)
    if head_out:
        sizes = [len(d) for d in model.label_domains]
        return list(torch.split(head_out[-1], sizes, dim=1))
    return out.label_logp


@dataclass
class Activations:
    """acts[layer]: (N, rows, d) float32; grads[layer][j]: (N, rows, d) gradient of label j's
    score of each example's true value (None without gradients); slots[layer]: var -> row."""

    acts: dict
    grads: dict | None
    slots: dict


def collect(model: nn.Module, data, layers: list[str], *, gradients: bool = False,
            batch: int = 128, device: str = "cpu") -> Activations:
    """Activations (and optionally label-score gradients) of ``layers`` on ``data``."""
    dev = torch.device(device)
    model.to(dev).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    mods = {n: _module(model, n) for n in layers}
    store: dict[str, Tensor] = {}
    head_out: list[Tensor] = []
    hooks = []

    def out_hook(name):
        def h(_m, _inp, out):
            if gradients and out.requires_grad:
                out.retain_grad()
            store[name] = out
        return h

    def pre_hook(name):
        def h(_m, args):
            a = args[0]
            if gradients and a.requires_grad:
                a.retain_grad()
            store[name] = a
        return h
    for n, m in mods.items():
        hooks.append(m.register_forward_pre_hook(pre_hook(n)) if n == HEAD_INPUT
                     else m.register_forward_hook(out_hook(n)))
    if isinstance(getattr(model, "head", None), nn.Module):
        hooks.append(model.head.register_forward_hook(lambda _m, _i, o: head_out.append(o)))
    acts: dict[str, list] = {n: [] for n in layers}
    grads: dict[str, list] = {n: [[] for _ in model.label_domains] for n in layers}
    rows: dict[str, int] = {}
    try:
        for s in range(0, len(data.x), batch):
            x = data.x[s:s + batch].to(dev)
            b = x.shape[0]
            store.clear()
            head_out.clear()
            if gradients:
                x = x.clone().requires_grad_(True)   # so every layer's output needs a gradient
                with torch.enable_grad():
                    scores = _label_scores(model, x, head_out)
            else:
                with torch.no_grad():
                    scores = _label_scores(model, x, head_out)
            for n in layers:
                if n not in store:
                    raise NesyError(f"layer {n!r} was not reached by the forward pass",
                                    field="layers")
                a = store[n]
                rows[n] = a.shape[0] // b
                acts[n].append(_pool(a.detach()).reshape(b, rows[n], -1).cpu())
            if gradients:
                labels = data.labels[s:s + b].to(dev)
                for j, sc in enumerate(scores):
                    for n in layers:
                        if store[n].grad is not None:
                            store[n].grad = None
                    tot = sc.gather(1, labels[:, j:j + 1]).sum()
                    tot.backward(retain_graph=j < len(scores) - 1)
                    for n in layers:
                        g = store[n].grad
                        if g is None:
                            g = torch.zeros_like(store[n])
                        # the pooled gradient: the derivative along a direction that is
                        # constant over each pooling cell (sign-equivalent for TCAV)
                        grads[n][j].append(_pool(g).reshape(b, rows[n], -1).cpu())
    finally:
        for h in hooks:
            h.remove()
    n_vars = len(data.variable_names)
    return Activations(
        acts={n: torch.cat(v).numpy() for n, v in acts.items()},
        grads={n: [torch.cat(g).numpy() for g in v] for n, v in grads.items()} if gradients
        else None,
        slots={n: _slots(model, n, rows[n], n_vars) for n in layers})


# -- the probe report ------------------------------------------------------------------------
@dataclass
class LayerReport:
    layer: str
    dim: int
    probes: dict            # variable -> {"c", "cv_accuracy", "accuracy"}
    metrics: dict           # the rs metrics of the probed concepts (evaluation split)
    shortcut: dict | None
    tcav: list = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def probe_layers(model, task, fit_data, eval_data, layers: list[str] | None = None, *,
                 maps: str | None = None, cv: int = 3, seed: int = 0, tcav_runs: int = 10,
                 alpha: float = 0.05, min_examples: int = 5, device: str = "cpu",
                 progress=None) -> list[LayerReport]:
    """Probe ``layers`` (default :func:`hidden_layers`) of a frozen ``model`` (module
    docstring): probes fitted on ``fit_data``, scored and TCAV'd on ``eval_data``."""
    layers = list(layers) if layers else hidden_layers(model)
    if not layers:
        raise NesyError("the model has no hidden layers to probe", field="layers")
    for n in layers:
        _module(model, n)
    if tcav_runs == 1 or tcav_runs < 0:
        raise NesyError("--tcav-runs must be 0 (no TCAV) or at least 2", field="tcav_runs")
    if not 0 < alpha < 1:
        raise NesyError("--alpha must be in (0, 1)", field="alpha")
    from threadpoolctl import threadpool_limits  # noqa: PLC0415
    with threadpool_limits(limits=1):        # many small fits: BLAS threads only contend
        return _probe_layers(model, task, fit_data, eval_data, layers, maps=maps, cv=cv,
                             seed=seed, tcav_runs=tcav_runs, alpha=alpha,
                             min_examples=min_examples, device=device, progress=progress)


def _probe_layers(model, task, fit_data, eval_data, layers, *, maps, cv, seed, tcav_runs,
                  alpha, min_examples, device, progress) -> list[LayerReport]:
    fa = collect(model, fit_data, layers, device=device)
    ea = collect(model, eval_data, layers, gradients=tcav_runs > 0, device=device)
    yf = fit_data.concepts.numpy()
    ye = eval_data.concepts.numpy()
    groups = task.groups(maps)
    out = []
    for n in layers:
        slots = fa.slots[n]
        pred = np.zeros_like(ye)
        probes = {}
        for i, v in enumerate(task.variables):
            if i not in slots:
                continue
            pr = fit_probe(fa.acts[n][:, slots[i]], yf[:, i], cv=cv, seed=seed)
            pred[:, i] = pr.predict(ea.acts[n][:, slots[i]])
            probes[v.name] = {"c": pr.c, "cv_accuracy": pr.cv_accuracy,
                              "accuracy": float(np.mean(pred[:, i] == ye[:, i]))}
        seen = [i for i in range(len(task.variables)) if i in slots]
        metrics = _concept_metrics(task, ye, pred, seen, groups)
        report = None
        if len(seen) == len(task.variables):
            report = detect(task, group_confusions(task, ye, pred, maps), maps=maps).to_json()
        tc = []
        if tcav_runs > 0:
            tc = _tcav_layer(task, fa.acts[n], yf, ea.grads[n], eval_data.labels.numpy(),
                             slots, eval_data.label_names, runs=tcav_runs, alpha=alpha,
                             seed=seed, min_examples=min_examples,
                             label_domains=model.label_domains)
        out.append(LayerReport(layer=n, dim=int(fa.acts[n].shape[2]), probes=probes,
                               metrics=metrics, shortcut=report, tcav=tc))
        if progress is not None:
            progress(n)
    return out


def _concept_metrics(task, true: np.ndarray, pred: np.ndarray, seen: list[int], groups) -> dict:
    ct = {task.variables[i].name: [str(task.variables[i].domain[int(a)]) for a in true[:, i]]
          for i in seen}
    cp = {task.variables[i].name: [str(task.variables[i].domain[int(a)]) for a in pred[:, i]]
          for i in seen}
    shared = {g: [task.variables[i].name for i in ix if i in seen] for g, _, ix in groups}
    shared = {g: cols for g, cols in shared.items() if cols}
    domains = {g: [str(x) for x in dom] for g, dom, _ in groups if g in shared}
    m = rs_metrics.compute({}, {}, ct, cp, domains=domains, shared=shared)
    return m.to_json()


def _tcav_layer(task, fit_acts, fit_concepts, grads, labels, slots, label_names, *, runs,
                alpha, seed, min_examples, label_domains) -> list[dict]:
    """TCAV of every (concept value with >= min_examples fit examples) x (label value with
    examples in the evaluation split) at one layer (module docstring)."""
    rng = np.random.default_rng(seed)
    n_fit = len(fit_acts)
    rows = []
    # random-vs-random CAVs: one set per row position, as the reference code trains them
    # once per random pair (sets of the mean concept-set size)
    random_cavs: dict[int, list] = {}
    for i, v in enumerate(task.variables):
        if i not in slots:
            continue
        s = slots[i]
        a = fit_acts[:, s]
        sizes = [int(np.sum(fit_concepts[:, i] == u)) for u in range(len(v.domain))]
        sizes = [k for k in sizes if k >= min_examples]
        if not sizes:
            continue
        if s not in random_cavs:
            size = max(min_examples, int(round(np.mean(sizes))))
            rc = []
            for r in range(runs):
                r1 = rng.choice(n_fit, size=size, replace=size > n_fit)
                r2 = rng.choice(n_fit, size=size, replace=size > n_fit)
                rc.append(cav(a[r1], a[r2], seed=seed + r))
            random_cavs[s] = rc
        rcavs = random_cavs[s]
        for u, value in enumerate(v.domain):
            pos_ix = np.flatnonzero(fit_concepts[:, i] == u)
            if len(pos_ix) < min_examples:
                continue
            size = len(pos_ix)
            cavs = []
            for r in range(runs):
                neg = rng.choice(n_fit, size=size, replace=size > n_fit)
                cavs.append(cav(a[pos_ix], a[neg], seed=seed + r))
            for j, dom in enumerate(label_domains):
                g = grads[j][:, s]
                for k, lab in enumerate(dom):
                    cls = np.flatnonzero(labels[:, j] == k)
                    if len(cls) == 0:
                        continue
                    sc = [tcav_score(g[cls], c) for c in cavs]
                    rs = [tcav_score(g[cls], c) for c in rcavs]
                    t, p = t_test(sc, rs)
                    rows.append({"concept": v.name, "value": str(value),
                                 "label": label_names[j], "label_value": str(lab),
                                 "n_concept": int(size), "n_class": int(len(cls)),
                                 "score": float(np.mean(sc)), "score_sd": float(np.std(sc)),
                                 "random_score": float(np.mean(rs)), "t": t, "p": p,
                                 "significant": bool(p < alpha)})
    return rows
