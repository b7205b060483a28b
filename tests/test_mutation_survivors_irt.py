"""IRT fit on the cases the mutation run found untested. The reported log-likelihood,
standard errors and infit/outfit are checked against a brute-force computation under the
fitted parameters: each respondent's likelihood on the fit's grid as a plain product over
items, scores by finite differences, the definitions of the docstrings written out. The rest
are boundaries of the documented rules (grid size, outlier limit, misfit screen, degenerate
inputs), worked out by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from nesybench.errors import NesyError
from nesybench.irt.fit import auto_nodes, fit_irt, rectangular, simulate


def _params(fit):
    """(items, a, c) of the fitted items, slope-intercept form z = a·x + c on the N(0, 1) grid."""
    items = np.flatnonzero(np.isfinite(fit.b_raw))
    if fit.model == "1pl":
        a = np.full(items.size, fit.latent_sd)
        c = -fit.b_raw[items]
    else:
        a = fit.a[items]
        c = -fit.b_raw[items] * a
    return items, a, c


def _loglik_j(u, obs, a, c, x, w):
    """log Σ_q w_q Π_i P(u_i | x_q), observed items only, as a plain product."""
    total = 0.0
    for xq, wq in zip(x, w):
        lik = wq
        for ui, oi, ai, ci in zip(u, obs, a, c):
            if oi:
                p = 1.0 / (1.0 + math.exp(-(ai * xq + ci)))
                lik *= p if ui == 1 else 1.0 - p
        total += lik
    return math.log(total)


def _brute(U, fit):
    U = np.asarray(U, dtype=float)
    items, a, c = _params(fit)
    X = U[:, items]
    obs = np.isfinite(X)
    x, w = rectangular(fit.n_quad)
    J = X.shape[0]
    ll = sum(_loglik_j(X[j], obs[j], a, c, x, w) for j in range(J))
    # posterior of each respondent (weights times the product of the item probabilities)
    P = 1.0 / (1.0 + np.exp(-(np.outer(x, a) + c)))                 # (Q, I)
    post = np.empty((J, x.size))
    for j in range(J):
        lik = w.copy()
        for i in range(items.size):
            if obs[j, i]:
                lik = lik * (P[:, i] if X[j, i] == 1 else 1 - P[:, i])
        post[j] = lik / lik.sum()
    EP = post @ P
    W = EP * (1 - EP)
    R2 = np.where(obs, (np.nan_to_num(X) - EP) ** 2, 0.0)
    infit = R2.sum(0) / np.where(obs, W, 0.0).sum(0)
    outfit = (R2 / W).sum(0) / obs.sum(0)
    # scores of each respondent by central differences of its marginal log-likelihood
    h = 1e-5
    se_b, se_a = [], []
    for i in range(items.size):
        def score(which):
            out = []
            for j in range(J):
                up, dn = a.copy(), a.copy()
                cu, cd = c.copy(), c.copy()
                if which == "a":
                    up[i] += h
                    dn[i] -= h
                else:
                    cu[i] += h
                    cd[i] -= h
                out.append((_loglik_j(X[j], obs[j], up, cu, x, w)
                            - _loglik_j(X[j], obs[j], dn, cd, x, w)) / (2 * h))
            return np.array(out)
        s_c = score("c")
        if fit.model == "1pl":
            se_b.append(1 / math.sqrt((s_c ** 2).sum()))
            continue
        s_a = score("a")
        info = np.array([[s_a @ s_a, s_a @ s_c], [s_a @ s_c, s_c @ s_c]])
        cov = np.linalg.inv(info)
        g = np.array([c[i] / a[i] ** 2, -1 / a[i]])                 # d(−c/a)/d(a, c)
        se_b.append(math.sqrt(g @ cov @ g))
        se_a.append(math.sqrt(cov[0, 0]))
    # plus the variance of the common ability-mean shift: s²/J (1PL), 1/J (2PL)
    shift = (fit.latent_sd ** 2 if fit.model == "1pl" else 1.0) / J
    se_b = np.sqrt(np.array(se_b) ** 2 + shift)
    return {"items": items, "loglik": ll, "infit": infit, "outfit": outfit,
            "se_b": se_b, "se_a": np.array(se_a)}


@pytest.mark.parametrize("model, missing", [("1pl", False), ("2pl", False), ("1pl", True)])
def test_loglik_errors_and_fit_statistics_by_brute_force(model, missing):
    U, *_ = simulate(60, 5, model, seed=11)
    U = U.astype(float)
    if missing:
        rng = np.random.default_rng(1)
        U[rng.random(U.shape) < 0.2] = np.nan
        U[np.isnan(U).all(axis=1), 0] = 1.0
    fit = fit_irt(U, model, tol=1e-7)
    want = _brute(U, fit)
    it = want["items"]
    assert it.size == 5
    assert fit.loglik == pytest.approx(want["loglik"], abs=1e-4)
    assert fit.se_b[it] == pytest.approx(want["se_b"], rel=1e-4)
    if model == "2pl":
        assert fit.se_a[it] == pytest.approx(want["se_a"], rel=1e-4)
    else:
        assert np.isnan(fit.se_a).all()
    assert fit.infit[it] == pytest.approx(want["infit"], rel=1e-6)
    assert fit.outfit[it] == pytest.approx(want["outfit"], rel=1e-6)
    items = fit.to_pandas()
    assert items["se_b"].to_numpy() == pytest.approx(fit.se_b, nan_ok=True)
    assert items["infit"].to_numpy() == pytest.approx(fit.infit, nan_ok=True)


def test_grid_size_is_limit_times_root_items_plus_one_between_61_and_2401():
    # 6·√I + 1 nodes: 6·10 + 1 = 61, 6·20 + 1 = 121, 6·100 + 1 = 601; at least 61, at most 2401
    assert [auto_nodes(i) for i in (1, 4, 100, 400, 10_000)] == [61, 61, 61, 121, 601]
    assert auto_nodes(1000) == math.ceil(6 * math.sqrt(1000)) + 1 == 191
    assert auto_nodes(10 ** 6) == 2401
    U, *_ = simulate(40, 400, "1pl", seed=2)
    assert fit_irt(U, max_iter=2).n_quad == 121
    assert fit_irt(U, quad="hermite", max_iter=2).n_quad == 21      # the Python mirt's 21


def test_outlier_limit_is_inclusive_and_may_be_below_one():
    U, *_ = simulate(150, 12, "1pl", seed=6)
    first = fit_irt(U)
    i = int(np.nanargmax(np.abs(first.b_raw)))
    limit = float(abs(first.b_raw[i]))
    for rule in ("paper", "significant"):
        again = fit_irt(U, outlier=limit, outlier_rule=rule)   # |b_i| == limit: kept
        assert again.b_raw[i] == first.b_raw[i]
        assert again.kept[i] and i not in again.outliers.tolist()
    small = fit_irt(U, outlier=0.5, outlier_rule="paper")
    assert set(small.outliers.tolist()) == set(np.flatnonzero(np.abs(small.b_raw) > 0.5))
    small = fit_irt(U, outlier=0.5)
    near = np.abs(small.b_raw) - 1.959963984540054 * small.se_b
    assert set(small.outliers.tolist()) == set(np.flatnonzero(near > 0.5))
    with pytest.raises(NesyError, match="outlier limit"):
        fit_irt(U, outlier=0)


def test_one_varying_item_is_enough():
    U = np.zeros((6, 3))
    U[:, 0] = 1
    U[:3, 1] = 1                                 # item 1: half right; the others constant
    fit = fit_irt(U)
    assert fit.kept.tolist() == [False, True, False]
    assert fit.all_right.tolist() == [0] and fit.all_wrong.tolist() == [2]


def test_misfit_screen_defaults_and_excluded_items():
    U, *_ = simulate(100, 8, "1pl", seed=3)
    U = U.astype(float)
    U[:, 2] = 1                                  # excluded: NaN infit, never a misfit
    fit = fit_irt(U)
    fit.infit[3], fit.infit[4], fit.infit[5], fit.infit[6] = 0.69, 0.7, 1.3, 1.31
    flagged = fit.misfit()
    assert not flagged[2]
    assert flagged[3] and not flagged[4] and not flagged[5] and flagged[6]
    assert fit.summary()["misfit"] == int(flagged.sum())


def test_respondents_with_no_or_one_answer():
    U = np.array([[1, 0, np.nan], [np.nan, np.nan, np.nan], [0, 1, 1], [1, 1, 0]])
    with pytest.raises(NesyError, match="respondent 2 answered no item"):
        fit_irt(U)
    U[1, 2] = 1                                  # one answer is enough
    fit = fit_irt(U)
    assert np.isfinite(fit.theta).all()
    with pytest.raises(NesyError, match="at least 2 respondents"):
        fit_irt(np.array([[0.0, 1.0]]))
    with pytest.raises(NesyError, match="at least 2 respondents"):
        fit_irt(np.zeros((3, 0)))


def test_likelihood_stopping_rule_stops_at_the_first_small_gain():
    # ll_tol > 0: the EM stops after the first cycle that raises the marginal
    # log-likelihood by less than ll_tol times its size (or when no parameter moves by tol)
    U, *_ = simulate(200, 30, "2pl", seed=8)
    fit = fit_irt(U, "2pl", ll_tol=1e-6, tol=1e-9)
    h = fit.history
    small = [k for k in range(1, len(h)) if 0.0 <= h[k] - h[k - 1] < 1e-6 * abs(h[k])]
    assert fit.converged and small
    assert fit.iterations == small[0] + 1 == len(h)
    assert fit_irt(U, "2pl", tol=1e-9).iterations > fit.iterations
