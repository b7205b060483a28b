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


def _linear(coef, depends=None):
    """Two binary concepts and a ternary one: unequal domain sizes, so a world's mixed-radix
    position depends on the order of its strides."""
    spec = {"name": "lin", "knowledge": "kb/shortcuts/linear.lp", "maps": "separate",
            "concepts": [{"name": "a", "count": 2, "domain": [0, 1]},
                         {"name": "z", "domain": [0, 1, 2]}],
            "coef": coef}
    if depends:
        spec["depends"] = depends
    return load_task(spec)


@pytest.mark.parametrize("structured", [True, False])
def test_joint_counts_with_unequal_domains_against_brute_force(structured):
    """The joint class's mixed-radix strides: with domains of sizes 2, 2 and 3 and an
    asymmetric label, strides in the wrong order index other worlds."""
    t = _linear({"p": {"a(1)": 1, "a(2)": 2, "z": 3}})
    if not structured:
        t._structure = None
    for support in ([(0, 1, 2), (1, 0, 0)], [(1, 1, 1), (0, 0, 2), (1, 0, 1)]):
        r = count_rs(t, map_class="joint", support=support)
        assert r.count == brute_force(t, support, map_class="joint")


def test_elimination_per_component_against_brute_force():
    """Exact elimination of one component at a time (``depends:`` splits the labels) on a
    partial support, with and without supervision, against brute force."""
    t = _linear({"p": {"a(1)": 1, "z": 2}, "q": {"a(2)": 1}},
                depends={"p": ["a(1)", "z"], "q": ["a(2)"]})
    t._structure = None
    for support in ([(0, 1, 2), (1, 0, 1)], [(1, 1, 0), (0, 0, 2), (1, 0, 1)]):
        for sup in ((), ("z",)):
            r = count_rs(t, support=support, engine="elim", supervised=list(sup))
            assert len(r.components) >= 2
            assert r.count == brute_force(t, support, maps="separate", supervised=sup)


def test_listed_disentangled_maps_are_named_by_group_and_keep_the_labels():
    """Listing maps of the disentangled class: as many as the count less the identity, each
    keyed by its group's name, a function from that group's domain into it, distinct, not
    the identity, and giving every support world its label. Values no support world shows
    (``a(2) = 0`` and ``z = 1`` here) map anywhere, so most maps differ from the identity
    only there, and a group no label reads maps freely."""
    for t in (_linear({"p": {"a(1)": 1, "a(2)": 2, "z": 3}}),
              _linear({"p": {"a(1)": 1, "z": 3}}, depends={"p": ["a(1)", "z"]})):
        t._structure = None
        support = [(0, 1, 2), (1, 1, 0)]
        n = brute_force(t, support, maps="separate")
        assert n >= 3
        for ask in (n + 3, n - 2):
            listed = count_rs(t, support=support, list_n=ask, engine="asp").rss
            assert len(listed) == min(ask, n - 1)
            _check_disentangled_listing(t, support, listed)


def _check_disentangled_listing(t, support, listed):
    groups = t.groups("separate")
    domains = {key: {str(x): x for x in dom} for key, dom, _ in groups}
    all_w = list(t.all_worlds())
    lab = dict(zip(all_w, t.labels_of(all_w)))
    seen = set()
    for m in listed:
        assert set(m) == set(domains)
        assert any(str(k) != str(v) for table in m.values() for k, v in table.items())
        for key, table in m.items():
            assert set(table) == set(domains[key])
            assert set(table.values()) <= set(domains[key].values())
        image = {i: {x: m[key][str(x)] for x in dom} for key, dom, ix in groups for i in ix}
        for w in support:
            assert lab[tuple(image[i][x] for i, x in enumerate(w))] == lab[w]
        frozen = tuple(sorted((k, tuple(sorted(v.items()))) for k, v in m.items()))
        assert frozen not in seen
        seen.add(frozen)
