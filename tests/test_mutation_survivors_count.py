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
              _linear({"p": {"a(1)": 1, "z": 3}}, depends={"p": ["a(1)", "z"]}),
              _linear({"p": {"a(1)": 1, "a(2)": 1}, "q": {"z": 1}},
                      depends={"p": ["a(1)", "a(2)"], "q": ["z"]})):
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
        assert ("independent components" in r.method) == (len(comps) > 1)
        if len(comps) > 1:
            assert f"{len(comps)} independent components" in r.method


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
    assert (f.count_without_identity, p.count_without_identity) == (35, 63)
    assert f.count == brute_force(t, positive, map_class="perm")
    assert count_rs(t, support=positive, map_class="perm", engine="asp").count == 36


def _fake_clock(monkeypatch, late: float, after: int):
    """``time.monotonic`` as counting sees it: 0 for the first ``after`` calls (the deadline
    is set, the budget checked before clingo starts), then ``late``."""
    import time as _time
    from types import SimpleNamespace

    import nesybench.shortcuts.count as count
    calls = {"n": 0}

    def monotonic():
        calls["n"] += 1
        return 0.0 if calls["n"] <= after else late
    monkeypatch.setattr(count, "time", SimpleNamespace(monotonic=monotonic,
                                                       perf_counter=_time.perf_counter))


def test_clingo_enumeration_stops_when_the_budget_runs_out_during_it(monkeypatch):
    """The deadline checked as clingo reports each map: a clock just at the deadline goes
    on; one past it stops the enumeration with a budget error."""
    t = xor(3)
    t._structure = None
    n = brute_force(t, SUPPORT)
    _fake_clock(monkeypatch, late=10.0, after=2)       # time_limit 10: at the deadline
    assert count_rs(t, support=SUPPORT, engine="asp", time_limit=10.0).count == n
    _fake_clock(monkeypatch, late=10.5, after=2)
    with pytest.raises(BudgetExceeded, match="while clingo enumerated maps"):
        count_rs(t, support=SUPPORT, engine="asp", time_limit=10.0)


def test_default_seed_is_zero_for_joint_listings():
    t = xor(3)
    ask = dict(map_class="joint", support=[(0, 0, 0), (1, 1, 0)], list_n=6)
    assert count_rs(t, **ask).rss == count_rs(t, **ask, seed=0).rss
    assert any(count_rs(t, **ask, seed=s).rss != count_rs(t, **ask).rss for s in (1, 2, 3))


def test_joint_on_all_worlds_respects_the_world_limit(monkeypatch):
    import nesybench.shortcuts.count as count
    t = xor(3)
    # each of the 8 worlds maps to any of the 4 worlds of its parity
    assert count_rs(t, map_class="joint").count == 4 ** 8
    monkeypatch.setattr(count, "JOINT_WORLDS", t.n_worlds - 1)
    with pytest.raises(NesyError, match="joint class"):
        count_rs(t, map_class="joint")


def test_structured_permutations_on_all_worlds_with_a_constant_variable():
    """Additive labels on all worlds: the permutation count by symmetry needs every group's
    variables to weigh alike, and, counting functions, no constant variable (z, weight 0,
    in a group of its own): then the enumeration counts; both equal brute force."""
    sym = _linear({"p": {"a(1)": 1, "a(2)": 1, "z": 1}})
    zero = _linear({"p": {"a(1)": 1, "a(2)": 1, "z": 0}})
    for t in (sym, zero):
        r = count_rs(t, map_class="perm")
        assert r.count == brute_force(t, t.support(), map_class="perm")
        assert r.count_without_identity == r.count - 1
    assert count_rs(sym, map_class="perm").method.startswith("symmetry on all worlds")
    assert not count_rs(zero, map_class="perm").method.startswith("symmetry on all worlds")
    pairs = count_rs(zero, map_class="perm", perm_count="pairs")
    assert pairs.method.startswith("symmetry on all worlds")
    assert pairs.count == count_rs(zero, map_class="perm", perm_count="pairs", list_n=1).count


def test_disentangled_enumeration_on_all_worlds_at_the_world_limit(monkeypatch):
    """A recognised structure that is neither additive nor a formula (Kandinsky's) counts
    the maps of all worlds by enumeration for up to ``JOINT_WORLDS`` worlds."""
    import nesybench.shortcuts.count as count
    t = load_task({"name": "kand1x2", "knowledge": "kb/shortcuts/kandinsky.lp",
                   "maps": "shared",
                   "concepts": [{"name": "shape", "count": [1, 2], "domain": [0, 1]},
                                {"name": "color", "count": [1, 2], "domain": [0, 1]}]})
    monkeypatch.setattr(count, "JOINT_WORLDS", t.n_worlds)
    r = count_rs(t)
    assert r.method == "enumeration of all maps, numpy labels on all worlds"
    assert r.count == brute_force(t, t.support(), maps="shared")


def test_budget_error_names_the_component_groups(monkeypatch):
    import nesybench.shortcuts.count as count
    t = _linear({"p": {"a(1)": 1, "a(2)": 2, "z": 3}})
    t._structure = None
    monkeypatch.setattr(count, "JOINT_WORLDS", 1)          # no elimination either
    with pytest.raises(BudgetExceeded, match=r"component of \['a\(1\)', 'a\(2\)', 'z'\]"):
        count_rs(t, support=[(0, 1, 2)], budget=0)


def test_listing_every_disentangled_map_of_a_support_that_shows_every_value():
    """No unseen value: every listed map comes from clingo's models, as many as asked up to
    the count less the identity, wherever clingo enumerates the identity."""
    t = _linear({"p": {"a(1)": 1, "a(2)": 1, "z": 1}})
    t._structure = None
    support = [(0, 0, 1), (0, 0, 2), (1, 1, 0)]
    n = brute_force(t, support, maps="separate")
    assert n == 12
    for ask in range(1, n + 1):
        listed = count_rs(t, support=support, list_n=ask, engine="asp").rss
        assert len(listed) == min(ask, n - 1)
        _check_disentangled_listing(t, support, listed)


def test_permutation_listing_with_constant_maps():
    """Permutation maps listed as ``{variable: {"from": source, "map": ...}}``, a constant
    one as ``{"from": None, "map": {"*": value}}``: on the even-parity worlds of xor some
    optimal maps are constant; every listed map keeps the labels, and asking for k maps
    gives k whatever the place of the identity in clingo's order."""
    t = xor(3, maps="shared")
    t._structure = None
    even = [(0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 0)]
    n = brute_force(t, even, map_class="perm")
    names = [v.name for v in t.variables]
    all_w = list(t.all_worlds())
    lab = dict(zip(all_w, t.labels_of(all_w)))
    listed = count_rs(t, support=even, map_class="perm", list_n=n).rss
    assert len(listed) == n - 1
    constant = 0
    for m in listed:
        assert sorted(m) == sorted(names)
        image = []
        for k in names:
            if m[k]["from"] is None:
                constant += 1
                image.append(lambda w, z=m[k]["map"]["*"]: z)
            else:
                src = names.index(m[k]["from"])
                image.append(lambda w, src=src, table=m[k]["map"]: table[str(w[src])])
        for w in even:
            assert lab[tuple(f(w) for f in image)] == lab[w]
    assert constant > 0
    for ask in range(1, 6):
        assert len(count_rs(t, support=even, map_class="perm", list_n=ask).rss) == ask


def test_symmetry_path_budget_edges(monkeypatch):
    """The symmetry shortcut's per-variable count is clingo's, under the map budget at its
    exact edge, and its symmetry check is skipped past the grounding budget."""
    import nesybench.shortcuts.count as count
    t = xor(3, maps="shared")
    t._structure = None
    even = [(0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 0)]
    sep = xor(3, maps="separate")
    sep._structure = None
    n_sep = count_rs(sep, support=even, engine="asp").count
    pairs = count_rs(t, support=even, map_class="perm", perm_count="pairs", list_n=1).count
    r = count_rs(t, support=even, map_class="perm", perm_count="pairs", budget=n_sep)
    assert r.method.startswith("symmetry") and r.count == pairs == n_sep * 6
    with pytest.raises(BudgetExceeded, match="permutation class"):
        count_rs(t, support=even, map_class="perm", perm_count="pairs", budget=n_sep - 1)
    size = len(even) * 3 * 2                 # support worlds x variables x domain
    monkeypatch.setattr(count, "GROUND_BUDGET", size)
    # the symmetry check runs; its clingo count fits the budget
    assert count_rs(t, support=even, map_class="perm", perm_count="pairs").count == pairs
    monkeypatch.setattr(count, "GROUND_BUDGET", size - 1)
    # no symmetry check: the permutation encoding's own estimate refuses
    with pytest.raises(BudgetExceeded, match=rf"about {size * 3} image atoms"):
        count_rs(t, support=even, map_class="perm", perm_count="pairs")
