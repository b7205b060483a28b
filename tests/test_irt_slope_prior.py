"""The 2PL slope prior (``fit_irt(..., slope_prior=σ)``): log a ~ N(0, σ²), BILOG-style.

Plain marginal ML lets the slope of an item that nearly everyone answers right (or wrong)
collapse towards 0, which sends b = −c/a past the outlier limit. The simulated matrix below
(500 × 3,000, difficulties N(0, 1.5²), seed 0) loses three items with true |b| < 4 that way
without the prior (measured; that fit takes about 45 s, so it is not repeated here)."""
from __future__ import annotations

import numpy as np
import pytest

from nesybench.errors import NesyError
from nesybench.irt.fit import fit_irt, simulate


def test_no_item_with_moderate_difficulty_is_dropped_at_500_by_3000():
    U, _theta, a, b = simulate(500, 3000, "2pl", seed=0, b_sd=1.5)
    fit = fit_irt(U, "2pl", slope_prior=0.5)
    answered = np.isfinite(fit.b_raw)
    lost = np.flatnonzero((np.abs(b) < 4) & answered & ~fit.kept)
    assert lost.size == 0, [(b[i], a[i], fit.b_raw[i], fit.a[i]) for i in lost]
    assert (fit.a[answered] > 0).all()
    ok = fit.kept
    assert np.corrcoef(b[ok], fit.b[ok])[0, 1] > 0.98
    assert np.sqrt(np.mean((a[ok] - fit.a[ok]) ** 2)) < 0.2


def test_the_prior_off_is_the_plain_fit_and_it_moves_slopes_towards_one():
    U, _theta, _a, _b = simulate(200, 60, "2pl", seed=3)
    plain = fit_irt(U, "2pl")
    assert np.array_equal(plain.b_raw, fit_irt(U, "2pl", slope_prior=None).b_raw)
    tight = fit_irt(U, "2pl", slope_prior=0.05)          # a strong prior: slopes near 1
    assert np.abs(np.log(tight.a)).max() < np.abs(np.log(plain.a)).max()
    assert np.abs(np.log(tight.a)).max() < 0.2


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), True, "0.5"])
def test_bad_priors_are_refused(bad):
    U, *_ = simulate(50, 10, "2pl", seed=0)
    with pytest.raises(NesyError, match="slope prior"):
        fit_irt(U, "2pl", slope_prior=bad)


def test_the_prior_is_for_2pl_only():
    U, *_ = simulate(50, 10, "1pl", seed=0)
    with pytest.raises(NesyError, match="2PL model only"):
        fit_irt(U, "1pl", slope_prior=0.5)
