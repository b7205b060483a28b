"""Reasoning-shortcut counting (``shortcuts/count.py``) where the regression tests did not
look: the identity-free count on the structured path of a partial support, the enumeration
budgets at their exact edge (a count equal to the budget is returned, one more is refused),
and the listed permutation maps. Every count is checked against ``brute_force``."""
from __future__ import annotations

import pytest

from nesybench.errors import BudgetExceeded
from nesybench.shortcuts.count import brute_force, count_rs
from nesybench.shortcuts.task import load_task


def xor(n, maps="separate"):
    return load_task({"name": f"xor{n}", "maps": maps, "knowledge": "kb/shortcuts/xor.lp",
                      "concepts": [{"name": "b", "count": n, "domain": [0, 1]}]})


SUPPORT = [(0, 0, 1), (0, 1, 1), (1, 1, 0), (1, 0, 0)]


def test_structured_count_on_a_partial_support_excludes_the_identity_once():
    t = xor(3)
    r = count_rs(t, support=SUPPORT)
    assert "structure" in r.method or "enumeration" in r.method
    assert r.count == brute_force(t, SUPPORT)
    assert r.count_without_identity == r.count - 1


def test_clingo_budget_edge_on_disentangled_maps():
    maps = "separate"
    t = xor(3, maps)
    t._structure = None                      # no structured counter: clingo enumerates
    n = brute_force(t, SUPPORT, maps=maps)
    assert n >= 2
    r = count_rs(t, support=SUPPORT, maps=maps, engine="asp", budget=n)
    assert r.count == n and r.count_without_identity == n - 1
    with pytest.raises(BudgetExceeded, match=f"more than {n - 1} maps"):
        count_rs(t, support=SUPPORT, maps=maps, engine="asp", budget=n - 1)


def test_permutation_budget_edge_and_listing():
    t = xor(3)
    sup = ["b(1)"]                           # supervision skips the symmetry shortcut
    n = brute_force(t, t.support(), map_class="perm", supervised=sup)
    assert n >= 2
    r = count_rs(t, map_class="perm", supervised=sup, budget=n, engine="asp")
    assert r.count == n and r.count_without_identity == n - 1
    with pytest.raises(BudgetExceeded, match="permutation class"):
        count_rs(t, map_class="perm", supervised=sup, budget=n - 1, engine="asp")
    # listing every map but the identity: n - 1 of them, none the identity, however many
    # were asked for
    for ask in (n - 1, n + 5):
        listed = count_rs(t, map_class="perm", supervised=sup, list_n=ask, engine="asp").rss
        assert len(listed) == n - 1
        for m in listed:
            assert not _is_identity(m)


def _is_identity(m: dict) -> bool:
    return all(v["from"] == k and all(str(x) == str(z) for x, z in v["map"].items())
               for k, v in m.items())


@pytest.mark.parametrize("structured", [True, False])
def test_joint_counts_on_a_support_against_brute_force(structured):
    """The joint class on a partial support: numpy's vectorised labelling (a recognised
    structure) and the generic path (none) give brute force's count."""
    t = xor(3)
    if not structured:
        t._structure = None
    for support in (SUPPORT, [(1, 1, 1), (0, 0, 0)]):
        r = count_rs(t, map_class="joint", support=support)
        assert r.count == brute_force(t, support, map_class="joint")
        assert r.count_without_identity == r.count - 1
