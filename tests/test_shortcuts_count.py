"""Reasoning-shortcut counting: regression values and brute force on small tasks."""
import math

import pytest

from nesybench.errors import NesyError
from nesybench.shortcuts.count import brute_force, count_rs
from nesybench.shortcuts.task import load_task


def xor(n, maps="separate", knowledge="kb/shortcuts/xor.lp", **kw):
    return load_task({"name": f"xor{n}", "maps": maps, "knowledge": knowledge,
                      "concepts": [{"name": "b", "count": n, "domain": [0, 1]}], **kw})


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_xor_regression_values(n):
    t = xor(n)
    assert count_rs(t).count == 2 ** (n - 1)
    assert count_rs(t, map_class="perm").count == math.factorial(n) * 2 ** (n - 1)
    j = count_rs(t, map_class="joint")
    assert j.count == (2 ** (n - 1)) ** (2 ** n)
    assert j.count_without_identity == j.count - 1


def test_xor_perm_sequence_and_n8():
    assert [count_rs(xor(n), map_class="perm").count for n in (2, 3, 4, 5)] == [4, 24, 192, 1920]
    assert count_rs(xor(8), map_class="perm").count == math.factorial(8) * 2 ** 7
    assert count_rs(xor(8)).count == 128


def test_and3_perm_is_6():
    t = load_task("curricula/rs/and3.yaml")
    r = count_rs(t, map_class="perm")
    assert r.count == 6 and r.count_without_identity == 5
    assert brute_force(t, t.support(), map_class="perm") == 6


def test_mnist_regressions():
    assert count_rs(load_task("curricula/rs/mnadd_half.yaml")).count == 3
    assert count_rs(load_task("curricula/rs/mnist_addition.yaml")).count == 1
    r = count_rs(load_task("curricula/rs/mnadd_evenodd.yaml"), list_n=5)
    assert r.count == 36 and r.count_without_identity == 35 and len(r.rss) == 5


def test_evenodd_is_36_not_49():
    """The paper's 49 needs digit images up to 10 (test_shortcuts_fidelity.py)."""
    # With the image domain restricted to 0-9 the count is 36; the 49 cannot be reached.
    t = load_task("curricula/rs/mnadd_evenodd.yaml")
    assert count_rs(t, maps="shared").count != 49


@pytest.mark.parametrize("formula", ["b1 & b2 & b3", "b1 | ~b2", "Or(And(b1, b2), Not(b3))",
                                     "b1 ^ b2 ^ b3", "b1 -> b2", "(b1 <-> b2) & b3"])
@pytest.mark.parametrize("maps", ["separate", "shared"])
def test_formula_matches_brute_force(formula, maps):
    t = xor(3, maps=maps, knowledge="kb/shortcuts/formula.lp", formula=formula)
    for support in (t.support(), t.support()[::2], t.support()[1:4]):
        bf = brute_force(t, support, maps=maps)
        assert count_rs(t, support=support, engine="asp").count == bf
        assert count_rs(t, support=support, engine="elim").count == bf
    sup = t.support()[1:4]
    assert count_rs(t, support=sup, map_class="perm").count == \
        brute_force(t, sup, map_class="perm")
    assert count_rs(t, support=sup[:2], map_class="joint").count == \
        brute_force(t, sup[:2], map_class="joint")


def test_perm_symmetric_shortcut_equals_enumeration():
    t = xor(4)
    fast = count_rs(t, map_class="perm")
    slow = count_rs(t, map_class="perm", list_n=1)   # listing forces the plain enumeration
    assert "symmetry" in fast.method and fast.count == slow.count == 192


def test_addition_brute_force_restricted_support():
    t = load_task({"name": "add3", "knowledge": "kb/shortcuts/addition.lp",
                   "concepts": [{"name": "d", "count": 2, "domain": {"range": [0, 3]},
                                 "map": "digit"}]})
    for sup in ([(0, 1), (2, 3)], [(1, 1), (0, 3), (2, 2)], list(t.all_worlds())[::3]):
        for maps in ("shared", "separate"):
            for engine in ("asp", "elim"):
                assert count_rs(t, support=sup, maps=maps, engine=engine).count == \
                    brute_force(t, sup, maps=maps)
        assert count_rs(t, support=sup, map_class="perm").count == \
            brute_force(t, sup, map_class="perm")


def test_supervision_and_brute_force():
    t = xor(3)
    sup = t.support()
    for engine in ("asp", "elim"):
        r = count_rs(t, supervised=["b(1)"], engine=engine)
        assert r.count == brute_force(t, sup, supervised=["b(1)"]) == 2
    assert count_rs(t, supervised=["b(1)", "b(2)"]).count_without_identity == 0
    assert count_rs(t, map_class="joint", supervised=["b(1)", "b(2)"]).count == 1


def test_big_integers_and_listing():
    j = count_rs(xor(10), map_class="joint", list_n=2)
    assert j.count == (2 ** 9) ** 1024 and len(j.rss) == 2
    assert j.to_json()["count_digits"] == len(str(j.count))


def test_decomposition_into_components():
    t = load_task({"name": "two", "knowledge": "kb/shortcuts/linear.lp", "maps": "separate",
                   "concepts": [{"name": "a", "count": 2, "domain": [0, 1]},
                                {"name": "z", "domain": [0, 1, 2]}],
                   "coef": {"p": {"a(1)": 1}, "q": {"a(2)": 2}},
                   "depends": {"p": ["a(1)"], "q": ["a(2)"]}})
    r = count_rs(t, engine="asp")     # the general engine splits into components
    assert len(r.components) == 3 and r.components[-1]["free"]
    assert r.count == brute_force(t, t.support(), maps="separate") == 1 * 1 * 27
    assert count_rs(t).count == 27    # structured (linear labels on all worlds)


def test_bad_inputs():
    t = load_task("curricula/rs/mnadd_half.yaml")
    with pytest.raises(NesyError, match="outside its domain"):
        count_rs(t, support=[(0, 7)])
    with pytest.raises(NesyError, match="map class"):
        count_rs(t, map_class="weird")
    with pytest.raises(NesyError, match="joint class"):
        count_rs(load_task({"name": "big", "knowledge": "kb/shortcuts/addition.lp",
                            "concepts": [{"name": "d", "count": 7, "domain": {"range": [0, 9]}}],
                            "support": ["0,0,0,0,0,0,1"]}), map_class="joint")


def test_variable_elimination_fallback_matches_enumeration():
    t = load_task({"name": "add3", "knowledge": "kb/shortcuts/addition.lp",
                   "concepts": [{"name": "d", "count": 2, "domain": {"range": [0, 3]},
                                 "map": "digit"}]})
    t._structure = None   # as for user knowledge: no structured counter
    for sup in ([(0, 1), (2, 3)], [(1, 1), (0, 3), (2, 2)], list(t.all_worlds())[::3]):
        for maps in ("shared", "separate"):
            full = count_rs(t, support=sup, maps=maps)
            ve = count_rs(t, support=sup, maps=maps, budget=0)
            assert "elimination" in ve.method
            assert ve.count == full.count == brute_force(t, sup, maps=maps)
    x4 = xor(4)
    x4._structure = None
    r = count_rs(x4, budget=0, supervised=["b(2)"])
    assert r.count == brute_force(x4, x4.support(), supervised=["b(2)"])
    evenodd = load_task("curricula/rs/mnadd_evenodd.yaml")
    assert count_rs(evenodd, budget=0).count == 36


def test_prolog_knowledge_same_counts_as_asp():
    base = {"concepts": [{"name": "d", "count": 2, "domain": {"range": [0, 9]}, "map": "digit"}],
            "support": ["0,6", "2,8", "4,6", "4,8", "1,5", "3,7", "1,9", "3,9"]}
    t = load_task({"name": "evenodd_pl", "knowledge": "kb/shortcuts/addition.pl", **base})
    assert count_rs(t).count == count_rs(t, engine="asp").count == 36
    p = xor(4, knowledge="kb/shortcuts/parity.pl")
    assert count_rs(p).count == 8 and count_rs(p, map_class="perm").count == 192


def test_prolog_knowledge_errors(tmp_path):
    kb = tmp_path / "k.pl"
    spec = {"name": "bad", "knowledge": str(kb), "concepts": [{"name": "b", "count": 2, "domain": [0, 1]}]}
    kb.write_text("label(W, y, 1) :- shell('touch /tmp/x').\n")
    with pytest.raises(NesyError, match="unsafe"):
        load_task(spec)
    kb.write_text("label(W, y, 1) :- \n  foo(W,.\n")
    with pytest.raises(NesyError, match="k.pl"):
        load_task(spec)


@pytest.mark.parametrize("formula", ["b1 & b2 & b3", "b1 ^ b2 ^ b3", "b1 | (b2 & ~b3)"])
def test_perm_with_supervision_matches_brute_force(formula):
    t = xor(3, knowledge="kb/shortcuts/formula.lp", formula=formula)
    for sup in (["b(1)"], ["b(2)", "b(3)"]):
        assert count_rs(t, map_class="perm", supervised=sup).count == \
            brute_force(t, t.support(), map_class="perm", supervised=sup)


def test_driving_components_and_ambulance_severity():
    from nesybench.shortcuts.severity import severity
    d = load_task("curricula/rs/driving.yaml")
    r = count_rs(d)             # rsbench's miniBOIA worlds: 46 x 47 x 47 maps
    assert [c["count"] for c in r.components] == [46, 47, 47]
    assert r.count == math.prod(c["count"] for c in r.components) == 101_614
    # 300 uniform worlds: 39 maps, few enough for an exhaustive severity
    d.support_spec = {"sample": 300, "seed": 0}
    amb = load_task("curricula/rs/driving_ambulance.yaml")
    amb.support_spec = {"sample": 300, "seed": 1}
    r = count_rs(d)
    assert len(r.components) == 3
    assert r.count == math.prod(c["count"] for c in r.components)
    s = severity(d, amb)
    assert s.exhaustive and s.n_maps == r.count_without_identity
