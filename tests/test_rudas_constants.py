"""RuDaS generator: constants in rules occur with probability p_c, and never with p_c = 0.

Every body position of a generated rule is either one of the head-variable positions
(placed first, one per head argument) or a draw of §4: head variable (p_h), introduced
variable (p_v), constant (p_c), fresh variable (p_f). So the number of constants over many
rules is Binomial(n, p_c) with n = body positions - head arity, whatever the rule shapes.
"""
from __future__ import annotations

import re

import pytest
from scipy.stats import binom

from nesybench.logic import prolog
from nesybench.rudas import RudasParams, generate

COUNT = """
findall(_NC-_ND, ( between(S0, S1, _Seed),
                 put_dict(seed, Params, _Seed, _P0),
                 rudas_generate:resolve_params(_P0, _P),
                 set_random(seed(_Seed)),
                 rudas_generate:generate_rules(_P, _, _Rules),
                 member(rule(_H, _B), _Rules),
                 functor(_H, _, _HA),
                 findall(x, ( member(_A, _B), arg(_, _A, _T), atom(_T) ), _Cs), length(_Cs, _NC),
                 findall(x, ( member(_A2, _B), arg(_, _A2, _) ), _Ps), length(_Ps, _NP),
                 _ND is _NP - _HA ), _Pairs),
pairs_keys_values(_Pairs, _NCs, _NDs), sum_list(_NCs, Consts), sum_list(_NDs, Draws)
"""


def _count(params: dict, seeds: range) -> tuple[int, int]:
    """(constants, drawn positions) over the rules of every seed."""
    prolog.use("prolog/rudas/rudas.pl")
    res = prolog.once(COUNT, Params=params, S0=seeds.start, S1=seeds.stop - 1)
    return int(res["Consts"]), int(res["Draws"])


CASES = [  # (parameters, seeds): p_v large so that the "no variable introduced yet" case is common
    ({"category": "rdg", "size": "xs", "depth": 2, "p_h": 0.2, "p_v": 0.6, "p_c": 0.0}, range(1, 401)),
    ({"category": "rdg", "size": "xs", "depth": 2, "p_h": 0.2, "p_v": 0.6, "p_c": 0.02}, range(1, 401)),
    ({"category": "chain", "size": "xs", "depth": 3, "p_h": 0.1, "p_v": 0.5, "p_c": 0.2}, range(1, 401)),
    ({"category": "drdg", "size": "xs", "depth": 3, "p_h": 0.0, "p_v": 0.9, "p_c": 0.1, "max_body": 3}, range(1, 201)),
    ({"category": "mixed", "size": "xs", "depth": 2, "p_h": 0.3, "p_v": 0.3, "p_c": 0.4, "max_components": 2, "max_arity": 3}, range(1, 201)),
]


@pytest.mark.parametrize("params,seeds", CASES, ids=[f"{p['category']}-pc{p['p_c']}" for p, _ in CASES])
def test_constant_share_matches_p_c(params, seeds):
    consts, draws = _count(params, seeds)
    p = params["p_c"]
    assert draws > 500, draws                  # enough draws for the bound to mean something
    if p == 0:
        assert consts == 0
        return
    # two-sided binomial bound at 1e-6 (a correct generator fails it once in a million runs)
    lo, hi = binom.ppf(5e-7, draws, p), binom.ppf(1 - 5e-7, draws, p)
    assert lo <= consts <= hi, f"{consts} constants in {draws} draws, expected {p * draws:.1f} ({lo:.0f}..{hi:.0f})"


def test_p_c_zero_gives_constant_free_rule_files(tmp_path):
    """End to end, the issue's case: RDG-XS-2, seeds 1-20, --p-c 0: no rule has a constant."""
    n_rules = 0
    for seed in range(1, 21):
        res = generate(RudasParams(seed=seed, category="rdg", size="xs", depth=2, p_c=0.0),
                       tmp_path / f"d{seed}")
        for line in (res.path / "rules.txt").read_text().splitlines():
            n_rules += 1
            terms = [t.strip() for a in re.findall(r"\(([^)]*)\)", line) for t in a.split(",")]
            assert all(t[:1].isupper() for t in terms), line
    assert n_rules == 60
