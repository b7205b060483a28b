"""Reasoning-shortcut counting (``shortcuts/count.py``) where the regression tests did not
look: the identity-free count on the structured path of a partial support, the enumeration
budgets at their exact edge (a count equal to the budget is returned, one more is refused),
and the listed permutation maps. Every count is checked against ``brute_force``."""
from __future__ import annotations

import pytest

from nesybench.errors import BudgetExceeded, NesyError
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


# -- budgets, reported fields, boundaries (the second, whole-module mutation run) ------------
def test_time_budget_left_and_exhausted():
    import time as _time

    from nesybench.shortcuts.count import _deadline_left
    assert _deadline_left(None) is None
    left = _deadline_left(_time.monotonic() + 0.5)         # half a second is still time left
    assert 0 < left <= 0.5
    with pytest.raises(BudgetExceeded, match="time budget exhausted"):
        _deadline_left(_time.monotonic() - 1)
    t = xor(3)
    t._structure = None
    n = brute_force(t, SUPPORT)
    assert count_rs(t, support=SUPPORT, time_limit=None).count == n     # no budget at all
    with pytest.raises(BudgetExceeded, match="time budget"):
        count_rs(t, support=SUPPORT, engine="asp", time_limit=1e-9)


def test_reported_fields_of_each_class():
    import time as _time
    t = xor(3)
    t0 = _time.perf_counter()
    r = count_rs(t, support=SUPPORT, supervised=["b(2)"])
    wall = _time.perf_counter() - t0
    assert 0 <= r.seconds <= wall + 1e-4 and r.seconds == round(r.seconds, 4)
    assert r.maps == "separate" and r.supervised == ["b(2)"]
    for mode in ("functions", "pairs"):
        p = count_rs(t, support=[(0, 0, 0)], map_class="perm", perm_count=mode)
        assert p.maps == "-" and p.method.endswith(f"; {mode} counted")
        assert p.count == (136 if mode == "functions" else 192)
    assert count_rs(t, support=[(0, 0, 0)], map_class="perm").count == \
        brute_force(t, [(0, 0, 0)], map_class="perm")
    assert count_rs(t, map_class="joint", support=SUPPORT).maps == "-"


def test_joint_listing_stops_at_every_other_map():
    """Joint maps of one even-parity world: the four even worlds are its images, so three
    maps besides the identity, however many are asked for; each distinct and label-keeping."""
    t = xor(3)
    for ask in (10, 2):
        r = count_rs(t, map_class="joint", support=[(0, 0, 0)], list_n=ask)
        assert r.count == 4
        images = [m["(0,0,0)"] for m in r.rss]
        assert len(images) == min(ask, 3) == len(set(images))
        assert set(images) <= {"(0,1,1)", "(1,0,1)", "(1,1,0)"}


def test_components_joined_through_a_shared_group():
    """Label p reads a(1) and a(2), label q reads a(2) and z: one component of three groups
    (joined through a(2)); with z read by no label, two components, one free."""
    joined = _linear({"p": {"a(1)": 1, "a(2)": 2}, "q": {"a(2)": 1, "z": 1}},
                     depends={"p": ["a(1)", "a(2)"], "q": ["a(2)", "z"]})
    split = _linear({"p": {"a(1)": 1, "a(2)": 2}}, depends={"p": ["a(1)", "a(2)"]})
    support = [(0, 1, 2), (1, 1, 0)]
    for t, comps in ((joined, [["a(1)", "a(2)", "z"]]), (split, [["a(1)", "a(2)"], ["z"]])):
        t._structure = None
        r = count_rs(t, support=support, engine="asp")
        assert r.count == brute_force(t, support, maps="separate")
        assert [c["groups"] for c in r.components] == comps
        assert ("2 independent components" in r.method) == (len(comps) == 2)


def test_world_and_grounding_limits_at_their_exact_edge(monkeypatch):
    import nesybench.shortcuts.count as count
    t = _linear({"p": {"a(1)": 1, "a(2)": 2, "z": 3}})
    t._structure = None
    n_worlds = t.n_worlds                                   # 2 * 2 * 3
    support = [(0, 1, 2), (1, 1, 0)]
    joint = brute_force(t, support, map_class="joint")
    dis = brute_force(t, support, maps="separate")
    monkeypatch.setattr(count, "JOINT_WORLDS", n_worlds)
    assert count_rs(t, map_class="joint", support=support).count == joint
    assert count_rs(t, support=support, engine="elim").count == dis
    monkeypatch.setattr(count, "JOINT_WORLDS", n_worlds - 1)
    with pytest.raises(NesyError, match="joint class"):
        count_rs(t, map_class="joint", support=support)
    with pytest.raises(BudgetExceeded, match="too many worlds"):
        count_rs(t, support=support, engine="elim")
    # the quick elimination runs for tasks of up to QUICK_VE_WORLDS worlds
    monkeypatch.setattr(count, "JOINT_WORLDS", 10_000)
    monkeypatch.setattr(count, "QUICK_VE_WORLDS", n_worlds)
    assert "elimination" in count_rs(t, support=support).method
    monkeypatch.setattr(count, "QUICK_VE_WORLDS", n_worlds - 1)
    assert "clingo" in count_rs(t, support=support).method
    # clingo's image atoms: support worlds x variables x the largest domain (x variables
    # again for the permutation class)
    size = len(support) * 3 * 3
    monkeypatch.setattr(count, "GROUND_BUDGET", size)
    assert count_rs(t, support=support, engine="asp").count == dis
    monkeypatch.setattr(count, "GROUND_BUDGET", size - 1)
    with pytest.raises(BudgetExceeded, match=rf"about {size} image atoms \(2 support worlds"):
        count_rs(t, support=support, engine="asp")
    monkeypatch.setattr(count, "GROUND_BUDGET", size * 3)
    assert count_rs(t, support=support, map_class="perm").count == \
        brute_force(t, support, map_class="perm")
    monkeypatch.setattr(count, "GROUND_BUDGET", size * 3 - 1)
    with pytest.raises(BudgetExceeded, match=rf"about {size * 3} image atoms"):
        count_rs(t, support=support, map_class="perm")


def test_permutation_symmetry_shortcut_only_on_symmetric_supports():
    """The symmetry shortcut (prod |G|! x per-variable count) applies when swapping two
    variables of a group keeps the support and its labels, and, counting functions, when no
    optimal map is constant; otherwise the count is clingo's enumeration (forced here by
    asking for a listing). Each equals brute force or that enumeration."""
    t = xor(3, maps="shared")
    t._structure = None
    every = list(t.all_worlds())
    r = count_rs(t, support=every, map_class="perm")
    assert r.method.startswith("symmetry") and r.count == brute_force(t, every, map_class="perm")
    even = [(0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 0)]
    functions = count_rs(t, support=even, map_class="perm")      # a constant map exists
    assert functions.method.startswith("clingo")
    assert functions.count == brute_force(t, even, map_class="perm")
    pairs = count_rs(t, support=even, map_class="perm", perm_count="pairs")
    assert pairs.method.startswith("symmetry")
    assert pairs.count == count_rs(t, support=even, map_class="perm", perm_count="pairs",
                                   list_n=1).count
    for asym in ([(0, 0, 0), (0, 1, 1)], [(0, 1, 1), (1, 1, 0), (1, 0, 1)][:2]):
        a = count_rs(t, support=asym, map_class="perm", perm_count="pairs")
        assert a.method.startswith("clingo")
        assert count_rs(t, support=asym, map_class="perm").count == \
            brute_force(t, asym, map_class="perm")


def test_kandinsky_permutations_pairs_and_functions():
    """Kandinsky's structured permutation count on one figure of two objects: pairs
    (permutation, per-variable map) and distinct functions differ when some optimal map is
    constant; the functions equal brute force and clingo's enumeration."""
    t = load_task({"name": "kand1x2", "knowledge": "kb/shortcuts/kandinsky.lp",
                   "maps": "shared",
                   "concepts": [{"name": "shape", "count": [1, 2], "domain": [0, 1]},
                                {"name": "color", "count": [1, 2], "domain": [0, 1]}]})
    worlds = list(t.all_worlds())
    labels = [lab for lab, in t.labels_of(worlds)]
    positive = [w for w, y in zip(worlds, labels) if y == 1][:6]
    f = count_rs(t, support=positive, map_class="perm")
    p = count_rs(t, support=positive, map_class="perm", perm_count="pairs")
    assert "Kandinsky" in f.method and "Kandinsky" in p.method
    assert (f.count, p.count) == (36, 64)
    assert f.count == brute_force(t, positive, map_class="perm")
    assert count_rs(t, support=positive, map_class="perm", engine="asp").count == 36
