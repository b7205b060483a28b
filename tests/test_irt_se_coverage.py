"""Standard errors of the difficulties cover the truth at the nominal rate once the shift of
the ability mean shared by all items is included (item-by-item information alone: 0.928 for
1PL and 0.932 for 2PL on these draws)."""
from __future__ import annotations

import numpy as np
import pytest

from nesybench.irt.fit import fit_irt, simulate


@pytest.mark.parametrize("model", ["1pl", "2pl"])
def test_difficulty_intervals_cover_at_95_percent(model):
    hits = n = 0
    for r in range(30):                      # 30 replications × 100 items, fixed seeds
        U, _theta, _a, b = simulate(500, 100, model, seed=1000 + r)
        f = fit_irt(U, model)
        k = f.kept & np.isfinite(f.se_b)
        hits += int((np.abs(f.b[k] - b[k]) <= 1.959964 * f.se_b[k]).sum())
        n += int(k.sum())
    assert n >= 2900
    assert 0.94 <= hits / n <= 0.96, hits / n
