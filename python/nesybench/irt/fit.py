"""Dichotomous IRT by marginal maximum likelihood: Bock–Aitkin EM, Gauss–Hermite quadrature.

Models (respondent j = a classifier, item i = an instance, ``U[j, i] = 1`` when j is right):

* ``1pl`` (Rasch, the paper's choice): ``P(U_ji = 1 | θ_j) = σ(θ_j − b_i)`` with every
  discrimination fixed to 1 and the ability distribution ``θ ~ N(0, s²)``, ``s`` estimated
  (as mirt's ``Rasch`` item type does); ``b`` is in logits.
* ``2pl`` (what the paper's R code fits): ``P = σ(a_i (θ_j − b_i))`` with ``θ ~ N(0, 1)``.

Each EM cycle computes, for all respondents at once, the posterior weights of the ``Q``
quadrature nodes (one ``J×I`` by ``I×Q`` matrix product), the expected counts
``n_q`` (respondents at node q) and ``r_qi`` (of them, right on item i; one ``Q×J`` by
``J×I`` product), then one Newton step per item on the expected complete-data
log-likelihood ``Σ_q r_qi log P_qi + (n_q − r_qi) log(1 − P_qi)``, vectorised over items.
Abilities are EAP estimates (posterior means, with posterior SDs) under the fitted items.

Items every respondent gets right (or wrong) carry no information about b: they are
**excluded from the fit and reported** (``all_right``/``all_wrong``; their ``b`` is NaN,
``±inf`` in spirit). After the fit, items beyond ``outlier`` (6 by default, as the paper) are
flagged as outliers and dropped (``kept`` is False, ``b`` stays in ``b_raw``): with
``outlier_rule="paper"`` every |b̂| > 6, by default (``"significant"``) only an item whose
95 % interval b̂ ± 1.96·se lies wholly beyond it (:func:`beyond`); for 2PL,
items with a negative discrimination are reported (``negative_a``), not dropped.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import NesyError

MODELS = ("1pl", "2pl")
#: ``paper``: drop |b̂| > limit (the paper's rule); ``significant``: drop only an item whose
#: whole 95 % interval b̂ ± 1.96·se lies beyond the limit
OUTLIER_RULES = ("significant", "paper")
#: the normal quantile of a two-sided 95 % interval
Z95 = 1.959963984540054


def beyond(b_raw: np.ndarray, se_b: np.ndarray, limit: float, rule: str) -> np.ndarray:
    """Indices of the items an outlier ``rule`` drops (see :data:`OUTLIER_RULES`).

    With a few hundred respondents, |b̂| > 6 means "at most two or three minority answers":
    the paper's rule then trims the hardest and easiest items, whose standard errors are near
    1 and whose true |b| is often well inside the limit. ``significant`` keeps an item unless
    even the near end of its interval, |b̂| − 1.96·se, is past the limit (an item with no
    standard error is judged by b̂ alone)."""
    with np.errstate(invalid="ignore"):
        mag = np.abs(b_raw)
        if rule == "significant":
            mag = mag - Z95 * np.nan_to_num(se_b, nan=0.0, posinf=np.inf)
        return np.flatnonzero(mag > limit)


@dataclass
class IRTFit:
    """Result of :func:`fit_irt`. Arrays over items have length ``I``, over respondents ``J``.

    b         difficulty of each item (NaN when excluded or outlier)       shape (I,)
    b_raw     difficulty before outlier removal (NaN only when excluded)   shape (I,)
    a         discrimination (1 for 1PL; NaN when excluded)                shape (I,)
    theta     EAP ability of each respondent                               shape (J,)
    theta_sd  posterior SD of each ability                                 shape (J,)
    kept      items with a usable difficulty (fitted and |b| <= outlier)   shape (I,) bool
    """

    model: str
    b: np.ndarray
    b_raw: np.ndarray
    a: np.ndarray
    theta: np.ndarray
    theta_sd: np.ndarray
    kept: np.ndarray
    all_right: np.ndarray
    all_wrong: np.ndarray
    outliers: np.ndarray
    negative_a: np.ndarray
    outlier_rule: str
    latent_sd: float
    loglik: float
    iterations: int
    converged: bool
    seconds: float
    n_quad: int
    history: list = field(default_factory=list)
    #: standard error of b and of a (NaN when excluded; a's is NaN for 1PL)
    se_b: np.ndarray | None = None
    se_a: np.ndarray | None = None
    #: information-weighted (infit) and unweighted (outfit) mean-square residuals per item
    #: (≈ 1 when the item fits; < 1 steeper, > 1 flatter or noisier than the model)
    infit: np.ndarray | None = None
    outfit: np.ndarray | None = None

    def to_pandas(self, what: str = "items"):
        """``items``: one row per item (b, b_raw, a, se_b, se_a, infit, outfit, kept, the
        exclusion reason); ``respondents``: one row per respondent (theta, theta_sd)."""
        import pandas as pd  # noqa: PLC0415

        if what == "respondents":
            return pd.DataFrame({"respondent": np.arange(self.theta.size), "theta": self.theta,
                                 "theta_sd": self.theta_sd})
        if what != "items":
            raise NesyError(f"to_pandas: 'items' or 'respondents', not {what!r}", field="what")
        n = self.b.size
        reason = np.full(n, "", dtype=object)
        reason[self.all_right] = "all right"
        reason[self.all_wrong] = "all wrong"
        reason[self.outliers] = "outlier"
        nan = np.full(n, np.nan)
        return pd.DataFrame({"item": np.arange(n), "b": self.b, "b_raw": self.b_raw,
                             "a": self.a,
                             "se_b": nan if self.se_b is None else self.se_b,
                             "se_a": nan if self.se_a is None else self.se_a,
                             "infit": nan if self.infit is None else self.infit,
                             "outfit": nan if self.outfit is None else self.outfit,
                             "kept": self.kept, "excluded": reason})

    def misfit(self, low: float = 0.7, high: float = 1.3) -> np.ndarray:
        """Items whose infit mean square is outside [low, high] (the usual Rasch screen)."""
        f = np.nan_to_num(self.infit, nan=1.0)
        return (f < low) | (f > high)

    def summary(self) -> dict:
        """JSON-able summary (counts and difficulty statistics of the kept items)."""
        bk = self.b[self.kept]
        return {
            "model": self.model, "respondents": int(self.theta.size), "items": int(self.b.size),
            "kept": int(self.kept.sum()), "all_right": int(self.all_right.size),
            "all_wrong": int(self.all_wrong.size), "outliers": int(self.outliers.size),
            "negative_a": int(self.negative_a.size), "outlier_rule": self.outlier_rule,
            "misfit": int(self.misfit().sum()) if self.infit is not None else 0,
            "b_mean": float(bk.mean()) if bk.size else float("nan"),
            "b_sd": float(bk.std(ddof=1)) if bk.size > 1 else float("nan"),
            "latent_sd": self.latent_sd, "loglik": self.loglik,
            "iterations": self.iterations, "converged": self.converged,
            "seconds": round(self.seconds, 3),
        }


def quadrature(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights for E[f(Z)], Z ~ N(0, 1): Gauss–Hermite, ``x = √2·t``, ``w/√π``."""
    t, w = np.polynomial.hermite.hermgauss(n)
    return t * np.sqrt(2.0), w / np.sqrt(np.pi)


def _check(U) -> tuple[np.ndarray, np.ndarray | None]:
    """``U`` as float64 0/1 and the mask of observed responses (None when complete).
    NaN means "not administered" (mirt's NA): left out of the likelihood."""
    try:
        U = np.asarray(U, dtype=np.float64) if np.asarray(U).dtype != bool \
            else np.asarray(U).astype(np.float64)
    except (TypeError, ValueError):
        raise NesyError("a response matrix holds 0, 1 or NaN (not administered)",
                        field="responses") from None
    if U.ndim != 2 or U.shape[0] < 2 or U.shape[1] < 1:
        raise NesyError(f"a response matrix is respondents × items with at least 2 respondents, "
                        f"got shape {U.shape}", field="responses")
    missing = np.isnan(U)
    if not np.all(missing | (U == 0) | (U == 1)):
        raise NesyError("a response matrix holds 0, 1 or NaN (not administered)",
                        field="responses")
    if not missing.any():
        return U, None
    if (~missing).sum(axis=1).min() == 0:
        j = int(np.flatnonzero((~missing).sum(axis=1) == 0)[0])
        raise NesyError(f"respondent {j + 1} answered no item", field="responses")
    return np.where(missing, 0.0, U), ~missing


def _log_sigmoid(z):
    return -np.logaddexp(0.0, -z)


def rectangular(n: int, limit: float = 6.0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` evenly spaced nodes on [−limit, limit] weighted by the N(0, 1) density
    (normalised): R mirt's quadrature for one factor."""
    x = np.linspace(-limit, limit, n)
    w = np.exp(-0.5 * x ** 2)
    return x, w / w.sum()


#: fewest and most nodes of the data-chosen rectangular grid
AUTO_NODES = (61, 2401)


def auto_nodes(n_items: int, limit: float = 6.0) -> int:
    """Nodes of the rectangular grid on [−limit, limit] with a spacing of one posterior SD
    of θ. With ``I`` items of slope ≈ 1 near P = ½ that SD is about 2/√I (Fisher
    information I/4), so the grid has limit·√I + 1 nodes, between :data:`AUTO_NODES`.

    Why it matters: a grid much coarser than the posteriors snaps each respondent onto a
    node; the rounding acts as measurement error in θ, which shrinks the fitted 2PL slopes
    and inflates b = −c/a (21 Gauss–Hermite nodes: b spread 2.3× the truth at 500 × 3,000).
    A spacing of one SD already gives the fine-grid limit there (241 and 481 nodes end at
    the same log-likelihood and difficulties; ``benchmarks/irt_fit.py`` prints the slopes)."""
    n = int(np.ceil(limit * np.sqrt(max(n_items, 1)))) + 1
    return int(min(max(n, AUTO_NODES[0]), AUTO_NODES[1]))


def fit_irt(U, model: str = "1pl", *, quad: str = "rect", n_quad: int | None = None,
            max_iter: int = 500, tol: float = 1e-4, ll_tol: float = 0.0,
            outlier: float = 6.0, outlier_rule: str = "significant", bound: float = 30.0,
            slope_prior: float | None = None) -> IRTFit:
    """Fit a 1PL or 2PL model to ``U`` (J respondents × I items; 0, 1, or NaN for a
    response not administered) by Bock–Aitkin EM.

    ``quad``: ``"rect"`` (the default: evenly spaced nodes on [−6, 6]; ``n_quad`` nodes, by
    default :func:`auto_nodes` of the number of items, 61 at the least as R mirt) or
    ``"hermite"`` (``n_quad`` Gauss–Hermite nodes, 21 by default, as the Python mirt; too
    coarse when respondents answer thousands of items, see :func:`auto_nodes`).

    Each EM cycle uses that the log-odds are linear in θ: a respondent's log-likelihood at
    node q is ``θ_q·(U_j·a) + U_j·c + Σ_i log σ(−z_qi)`` (observed items only), and the
    M-step's gradient needs ``Σ_j U_ji (E[θ_j], 1)`` and the node counts only. A cycle is
    O(J·I + Q·I + J·Q) for a complete matrix, so fine grids cost little; with missing
    responses the node sums run over each respondent's own items (O(J·I·Q)).

    The EM stops when no item parameter (and the latent SD) moves by more than ``tol`` in a
    cycle, or (``ll_tol`` > 0) when a cycle raises the marginal log-likelihood by less than
    ``ll_tol`` times its size. On a fine grid the parameter rule can take hundreds of cycles
    of tiny likelihood gains; a relative ``ll_tol`` of 1e-7 stops far earlier but, on some
    draws, before the difficulties' spread has settled (measured: spread 1.12 instead of 1.08
    of the truth at 200 × 1,000), so the default keeps the parameter rule alone. ``bound`` clips intercepts/difficulties (|b| <= bound) and 2PL slopes
    (|a| <= 10) so nearly perfect items cannot diverge. Raises :class:`NesyError` when the
    matrix is not 0/1/NaN, or when no item varies (every item answered all right or all
    wrong by those who answered it).

    ``slope_prior`` (2PL only; ``None``, the default, is plain marginal maximum likelihood,
    the paper's fit): the standard deviation σ of a lognormal prior on each slope,
    log a ~ N(0, σ²), as BILOG-MG's default (σ = 0.5) — the M-step then maximises the
    marginal log-likelihood plus Σ_i log p(a_i) (a posterior mode; slopes stay positive).
    Without it the slope of an item that nearly everyone answers right (or wrong) is barely
    identified and can collapse towards 0, which sends b = −c/a far out: measured at
    500 × 3,000 (``simulate(..., b_sd=1.5)``, seed 0), three items with true |b| < 4 came
    out past |b| = 6 and were dropped as outliers; with σ = 0.5 none was.
    """
    if model not in MODELS:
        raise NesyError(f"unknown IRT model {model!r} (choose {', '.join(MODELS)})",
                        field="model")
    if not (isinstance(outlier, (int, float)) and outlier > 0):
        raise NesyError(f"the outlier limit must be > 0, got {outlier}", field="outlier")
    if outlier_rule not in OUTLIER_RULES:
        raise NesyError(f"unknown outlier rule {outlier_rule!r} (choose "
                        f"{', '.join(OUTLIER_RULES)})", field="outlier_rule")
    if slope_prior is not None and (isinstance(slope_prior, bool) or not isinstance(
            slope_prior, (int, float)) or not 0 < slope_prior < 1e6):
        raise NesyError(f"the slope prior's SD must be a positive number, got {slope_prior!r}",
                        field="slope_prior")
    if slope_prior is not None and model != "2pl":
        raise NesyError("a slope prior applies to the 2PL model only (the 1PL has one common "
                        "slope, the latent SD)", field="slope_prior")
    t0 = time.perf_counter()
    U, observed = _check(U)
    J, I = U.shape
    n_obs = np.full(I, float(J)) if observed is None else observed.sum(axis=0).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_right = U.sum(axis=0) / n_obs
    all_right = np.flatnonzero(p_right == 1.0)
    all_wrong = np.flatnonzero((p_right == 0.0) | (n_obs == 0))
    fit_items = np.flatnonzero((p_right > 0.0) & (p_right < 1.0))
    if fit_items.size == 0:
        raise NesyError(f"the response matrix has no variance: all {I} items are answered "
                        f"all right or all wrong by the {J} respondents", field="responses")
    X = np.ascontiguousarray(U[:, fit_items])                      # (J, I') 0/1
    M = None if observed is None else np.ascontiguousarray(observed[:, fit_items],
                                                            dtype=np.float64)
    p = p_right[fit_items]
    if quad == "hermite":
        n_quad = n_quad or 21
        x, w = quadrature(n_quad)
    elif quad == "rect":
        n_quad = n_quad or auto_nodes(fit_items.size)
        x, w = rectangular(n_quad)
    else:
        raise NesyError(f"unknown quadrature {quad!r} (rect, hermite)", field="quad")
    logw = np.log(w)
    # start values: logit of the proportion right (slope-intercept z = a·θ + c)
    c = np.log(p / (1 - p))
    a = np.ones_like(c)
    s = 1.0                                  # latent SD (1PL only; a ≡ s on the N(0,1) grid)
    history = []
    converged = False
    it = 0

    def posterior(a, c):
        """Posterior node weights (J, Q) and the marginal log-likelihood."""
        Z = x[:, None] * a[None, :] + c[None, :]                   # (Q, I')
        e = np.exp(-np.abs(Z))                                     # one exp for both
        lq = -(np.maximum(Z, 0.0) + np.log1p(e))                   # log σ(−z)
        P = np.where(Z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))       # σ(z)
        # Σ_i U_ji z_qi = θ_q (U_j·a) + U_j·c: log σ(z) − log σ(−z) = z
        L = np.outer(X @ a, x) + (X @ c)[:, None]
        L += (lq.sum(axis=1)[None, :] if M is None else M @ lq.T) + logw[None, :]
        Lmax = L.max(axis=1, keepdims=True)
        post = np.exp(L - Lmax)
        norm = post.sum(axis=1, keepdims=True)
        return post / norm, float((Lmax[:, 0] + np.log(norm[:, 0])).sum()), P

    for it in range(1, max_iter + 1):
        post, loglik, P = posterior(a, c)                          # P: (Q, I')
        history.append(loglik)
        if M is None:
            n_qi = post.sum(axis=0)[:, None]                       # (Q, 1): every item
        else:
            n_qi = post.T @ M                                      # (Q, I'): who answered
        m = post @ x                                               # E[x_j] (J,)
        # gradient of the expected complete-data log-likelihood in (slope, intercept):
        # Σ_q r_qi (x_q, 1) = Σ_j U_ji (E[x_j], 1);  minus Σ_q n_qi P_qi (x_q, 1)
        nP = n_qi * P
        g_c = X.sum(axis=0) - nP.sum(axis=0)
        g_x = X.T @ m - (nP * x[:, None]).sum(axis=0)
        info = n_qi * P * (1 - P)                                  # (Q, I')
        if model == "1pl":
            # z = s·x + c = θ + c with θ = s·x ~ N(0, s²): Newton steps on every c_i and on
            # the common slope s (the latent SD), on the fixed N(0, 1) quadrature grid
            h_c = info.sum(axis=0) + 1e-12
            dc = np.clip(g_c / h_c, -1.0, 1.0)
            c_new = np.clip(c + dc, -bound, bound)
            g_s = float(g_x.sum())
            h_s = float((info * x[:, None] ** 2).sum()) + 1e-12
            s_new = float(np.clip(s + np.clip(g_s / h_s, -0.5, 0.5), 0.05, 20.0))
            delta = max(float(np.abs(c_new - c).max()), abs(s_new - s))
            c, s = c_new, s_new
            a = np.full_like(c, s)
        else:
            g_a = g_x
            h_aa = (info * x[:, None] ** 2).sum(axis=0) + 1e-12
            if slope_prior is not None:
                # log p(log a) = −(log a)²/(2σ²) (+ const), the mode at a = 1: its gradient in
                # a joins the score, minus its curvature (kept ≥ 0) the information
                la, v = np.log(a), slope_prior ** 2
                g_a = g_a - la / (v * a)
                h_aa = h_aa + np.maximum((1.0 - la) / (v * a * a), 0.0)
            h_ac = (info * x[:, None]).sum(axis=0)
            h_cc = info.sum(axis=0) + 1e-12
            det = h_aa * h_cc - h_ac ** 2
            det = np.where(det > 1e-12, det, 1e-12)
            da = (h_cc * g_a - h_ac * g_c) / det
            dc = (h_aa * g_c - h_ac * g_a) / det
            step = np.maximum(1.0, np.maximum(np.abs(da), np.abs(dc)))   # at most 1 per cycle
            a_new = np.clip(a + da / step, -10.0 if slope_prior is None else 0.05, 10.0)
            c_new = np.clip(c + dc / step, -bound * 10, bound * 10)
            delta = max(float(np.abs(a_new - a).max()), float(np.abs(c_new - c).max()))
            a, c = a_new, c_new
        gain = history[-1] - history[-2] if len(history) > 1 else np.inf
        if delta < tol or 0.0 <= gain < ll_tol * abs(history[-1]):
            converged = True
            break
    # EAP abilities under the final parameters (1PL: on the logit scale, θ = s·x)
    if model == "1pl":
        a = np.full_like(c, s)
    post, _ll, _P = posterior(a, c)
    nodes = x * s if model == "1pl" else x
    theta = post @ nodes
    theta_sd = np.sqrt(np.maximum(post @ nodes ** 2 - theta ** 2, 0.0))
    # difficulties on the θ scale: 1PL b = −c (logits), 2PL b = −c / a
    b_fit = -c if model == "1pl" else -c / np.where(np.abs(a) > 1e-8, a, 1e-8)
    b_raw = np.full(I, np.nan)
    b_raw[fit_items] = b_fit
    a_all = np.full(I, np.nan)
    a_all[fit_items] = a if model == "2pl" else 1.0
    negative_a = fit_items[a < 0] if model == "2pl" else np.array([], dtype=int)
    se_b_fit, se_a_fit, infit_fit, outfit_fit = _errors_and_fit(X, M, post, _P, x, a, c, model)
    # the shift of the ability mean shared by all items: the model fixes the population mean
    # at 0, so every difficulty moves with the sample's mean ability, whose variance is
    # s²/J (1PL, θ ~ N(0, s²)) or 1/J (2PL, θ ~ N(0, 1)); item-by-item information leaves
    # it out (coverage 0.934–0.940 of a nominal 0.95 without it)
    se_b_fit = np.sqrt(se_b_fit ** 2 + (s * s if model == "1pl" else 1.0) / J)
    full = lambda v: _spread(v, fit_items, I)  # noqa: E731
    outliers = beyond(b_raw, full(se_b_fit), outlier, outlier_rule)
    kept = np.isfinite(b_raw)
    kept[outliers] = False
    b = np.where(kept, b_raw, np.nan)
    return IRTFit(model=model, b=b, b_raw=b_raw, a=a_all, theta=theta, theta_sd=theta_sd,
                  kept=kept, all_right=all_right, all_wrong=all_wrong, outliers=outliers,
                  negative_a=negative_a, outlier_rule=outlier_rule, latent_sd=float(s),
                  loglik=history[-1],
                  iterations=it, converged=converged, seconds=time.perf_counter() - t0,
                  n_quad=n_quad, history=history, se_b=full(se_b_fit), se_a=full(se_a_fit),
                  infit=full(infit_fit), outfit=full(outfit_fit))


def _spread(values: np.ndarray, items: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, np.nan)
    out[items] = values
    return out


def _errors_and_fit(X, M, post, P, x, a, c, model):
    """Standard errors from the cross-product (empirical) information of each item's
    parameters — Σ_j s_j s_jᵀ with s_j respondent j's score, mirt's ``SE.type =
    "crossprod"``; item by item, so the covariance between items and with the latent SD is
    left out — and the infit/outfit mean squares of the residuals U − E[P(θ_j)] under each
    respondent's posterior. Returns per fitted item: se_b, se_a (NaN for 1PL), infit,
    outfit; :func:`fit_irt` then adds the common ability-mean shift's variance to se_b."""
    m = post @ x                                                   # E[x_j]   (J,)
    EP = post @ P                                                  # E[P]     (J, I')
    EPx = post @ (P * x[:, None])                                  # E[x·P]   (J, I')
    obs = np.ones_like(X) if M is None else M
    s_c = obs * (X - EP)
    s_x = obs * (X * m[:, None] - EPx)
    with np.errstate(divide="ignore", invalid="ignore"):
        if model == "1pl":
            var_c = 1.0 / (s_c ** 2).sum(axis=0)
            se_b, se_a = np.sqrt(var_c), np.full(c.size, np.nan)
        else:
            i_aa, i_cc = (s_x ** 2).sum(axis=0), (s_c ** 2).sum(axis=0)
            i_ac = (s_x * s_c).sum(axis=0)
            det = i_aa * i_cc - i_ac ** 2
            var_a, var_c, cov = i_cc / det, i_aa / det, -i_ac / det
            # b = −c/a: the delta method
            db_dc, db_da = -1.0 / a, c / a ** 2
            var_b = db_dc ** 2 * var_c + db_da ** 2 * var_a + 2 * db_dc * db_da * cov
            se_b, se_a = np.sqrt(np.maximum(var_b, 0.0)), np.sqrt(np.maximum(var_a, 0.0))
        W = EP * (1.0 - EP)
        R2 = obs * (X - EP) ** 2
        infit = R2.sum(axis=0) / (obs * W).sum(axis=0)
        outfit = (R2 / np.where(W > 1e-12, W, 1e-12)).sum(axis=0) / obs.sum(axis=0)
    return se_b, se_a, infit, outfit


def simulate(n_respondents: int, n_items: int, model: str = "1pl", seed: int = 0,
             theta_sd: float = 1.0, b_sd: float = 1.0):
    """Draw ``(U, theta, a, b)`` from a 1PL/2PL model (2PL slopes ~ lognormal(0, 0.3))."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, theta_sd, n_respondents)
    b = rng.normal(0.0, b_sd, n_items)
    a = np.ones(n_items) if model == "1pl" else rng.lognormal(0.0, 0.3, n_items)
    p = 1.0 / (1.0 + np.exp(-a[None, :] * (theta[:, None] - b[None, :])))
    U = (rng.random(p.shape) < p).astype(np.int8)
    return U, theta, a, b
