"""Structure-aware counting checked against brute force on small
tasks, the closed forms on large ones, budgets, and rsbench-code's (permutation, map) pairs."""
import itertools
import math
import random

import numpy as np
import pytest
import yaml

from nesybench.errors import BudgetExceeded, NesyError
from nesybench.shortcuts import structure
from nesybench.shortcuts.count import brute_force, count_rs
from nesybench.shortcuts.task import load_task


def xor(n, maps="separate", **kw):
    return load_task({"name": f"xor{n}", "maps": maps, "knowledge": "kb/shortcuts/xor.lp",
                      "concepts": [{"name": "b", "count": n, "domain": [0, 1]}], **kw})


def numbers(k, hi=9, n_numbers=2, name="addk"):
    """MNIST-Addition with k digits per number: label = Σ numbers (linear.lp)."""
    coef = {f"d({a * k + i + 1})": 10 ** (k - 1 - i) for a in range(n_numbers) for i in range(k)}
    return load_task({"name": name, "knowledge": "kb/shortcuts/linear.lp", "coef": {"s": coef},
                      "concepts": [{"name": "d", "count": n_numbers * k,
                                    "domain": {"range": [0, hi]}, "map": "digit"}]})


def plain(task):
    """The same task as user knowledge would be: no structured counter."""
    task._structure = None
    return task


# -- item 12: counting scales ----------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("maps", ["separate", "shared"])
def test_xor_all_worlds_structured_equals_brute_force(n, maps):
    t = xor(n, maps)
    r = count_rs(t, engine="struct")
    assert "structure" in r.method
    assert r.count == brute_force(t, t.support(), maps=maps)
    for sup in (["b(1)"], ["b(1)", "b(2)"]):
        assert count_rs(t, supervised=sup, engine="struct").count == \
            brute_force(t, t.support(), maps=maps, supervised=sup)


@pytest.mark.parametrize("n", [16, 32, 64])
def test_xor_large_closed_forms(n):
    """Exact and linear in n (a brute force runs out of memory at n = 16)."""
    t = xor(n)
    assert count_rs(t).count == 2 ** (n - 1)
    assert count_rs(t, map_class="perm").count == math.factorial(n) * 2 ** (n - 1)
    assert count_rs(t, map_class="perm", perm_count="pairs").count == \
        math.factorial(n) * 2 ** (n - 1)
    assert count_rs(xor(n, "shared")).count == 2     # identity and negation (n even)


def test_perm_symmetry_on_all_worlds_matches_enumeration():
    for n in (3, 4):
        t = xor(n)
        fast = count_rs(t, map_class="perm")
        assert "symmetry on all worlds" in fast.method
        assert fast.count == brute_force(t, t.support(), map_class="perm")
    # an explicit list of every world (e.g. --support FILE) takes the same closed form
    t12 = xor(12)
    r = count_rs(t12, map_class="perm", support=list(t12.all_worlds()))
    assert "symmetry on all worlds" in r.method   # was 219 s through clingo
    assert r.count == math.factorial(12) * 2 ** 11


@pytest.mark.parametrize("formula", ["b1 & b2 & b3", "b1 | ~b2", "Or(And(b1, b2), Not(b3))",
                                     "b1 ^ b2 ^ b3", "b1 -> (b2 <-> b3)", "And(b1, b2, 1)"])
def test_read_once_formula_tree_equals_brute_force(formula):
    t = xor(3, knowledge="kb/shortcuts/formula.lp", formula=formula)
    r = count_rs(t, engine="struct")
    assert r.count == brute_force(t, t.support(), maps="separate")
    assert count_rs(t, supervised=["b(2)"]).count == \
        brute_force(t, t.support(), maps="separate", supervised=["b(2)"])


def test_formula_labels_match_asp():
    t = xor(4, knowledge="kb/shortcuts/formula.lp", formula="(b1 & ~b2) | (b3 ^ b4) -> b1")
    st = structure.recognise(t)
    w = list(t.all_worlds())
    assert structure.labels_np(t, st, structure.world_positions(t, w)).tolist() == \
        [list(x) for x in t.labels_of(w)]


@pytest.mark.parametrize("lattice", [True, False])
def test_multi_digit_addition_row_dp_equals_brute_force(lattice, monkeypatch):
    """Numbers of 2 digits in 0..2 (label 3a + b + 3c + d), restricted supports; both the
    linear-equation (lattice) method and the row-by-row programme."""
    if not lattice:
        monkeypatch.setattr(structure, "LATTICE_ENUM", 0)
    t = numbers(2, hi=2)
    st = structure.recognise(t)
    w = list(t.all_worlds())
    assert structure.labels_np(t, st, structure.world_positions(t, w)).tolist() == \
        [list(x) for x in t.labels_of(w)]
    rng = random.Random(0)
    for size in (1, 2, 4, 9):
        sup = rng.sample(w, size)
        r = count_rs(t, support=sup, engine="struct")
        assert "additive labels on the support" in r.method
        assert r.count == brute_force(t, sup, maps="shared")
        assert r.count == count_rs(plain(numbers(2, hi=2)), support=sup).count
    # separate maps: 3 variables (brute force over 27^3 maps)
    t3 = load_task({"name": "lin3", "knowledge": "kb/shortcuts/linear.lp",
                    "coef": {"s": {"d(1)": 3, "d(2)": 1, "d(3)": 1}},
                    "concepts": [{"name": "d", "count": 3, "domain": {"range": [0, 2]}}],
                    "maps": "separate"})
    for sup in ([(0, 1, 2)], [(0, 1, 2), (2, 0, 1)], [(1, 1, 1), (0, 2, 2), (2, 2, 0)]):
        assert count_rs(t3, support=sup).count == brute_force(t3, sup, maps="separate")
        assert count_rs(t3, support=sup, supervised=["d(1)"]).count == \
            brute_force(t3, sup, maps="separate", supervised=["d(1)"])
    assert count_rs(t3).count == brute_force(t3, t3.support(), maps="separate")


def test_four_digit_numbers_scale():
    """MNIST-Addition with 4 digits per number (10^8 worlds), one digit map."""
    t = numbers(4)
    assert count_rs(t).count == 1                      # all worlds: only the identity
    rng = random.Random(1)
    sup = [tuple(rng.randrange(10) for _ in range(8)) for _ in range(40)]
    assert count_rs(t, support=sup).count == 1
    # a support that never shows digits 5..9 leaves them free: 10^5 maps
    low = [(0, 1, 2, 3, 4, 0, 1, 2), (4, 3, 2, 1, 0, 4, 3, 2), (1, 1, 1, 1, 2, 2, 2, 2)]
    assert count_rs(t, support=low).count == 10 ** 5 * count_rs(
        numbers(4, hi=4), support=low).count


@pytest.mark.timing
def test_state_and_time_budgets_raise_clear_errors(monkeypatch):
    monkeypatch.setattr(structure, "LATTICE_ENUM", 0)     # force the row-by-row programme
    t = numbers(2, hi=9)
    sup = [(1, 2, 3, 4), (5, 6, 7, 8), (9, 0, 1, 2)]
    with pytest.raises(BudgetExceeded, match="partial states"):
        count_rs(t, support=sup, maps="separate", max_states=3)
    with pytest.raises(BudgetExceeded, match="time budget"):
        count_rs(load_task("curricula/rs/kandinsky.yaml"), map_class="perm", time_limit=1e-9)
    with pytest.raises(NesyError, match="perm_count"):
        count_rs(t, map_class="perm", perm_count="both")
    with pytest.raises(NesyError, match="no structured counting"):
        count_rs(plain(xor(3)), engine="struct")
    # clingo's grounding cannot be interrupted: its size is bounded up front
    from nesybench.shortcuts import count as C
    monkeypatch.setattr(C, "GROUND_BUDGET", 20)
    with pytest.raises(BudgetExceeded, match="would ground about 48 image atoms"):
        count_rs(plain(xor(3)), engine="asp")
    with pytest.raises(BudgetExceeded, match="would ground"):
        count_rs(plain(xor(2)), map_class="perm", support=[(0, 1), (1, 1), (0, 0)])


# -- item 13: Kandinsky ----------------------------------------------------------------------
def kandinsky(figs=2, objs=3, support=None):
    d = yaml.safe_load(open("curricula/rs/kandinsky.yaml"))
    d["concepts"] = [{"name": "shape", "count": [figs, objs], "domain": ["circle", "square", "triangle"]},
                     {"name": "color", "count": [figs, objs], "domain": ["red", "yellow", "blue"]}]
    if support is not None:
        d["support"] = support
    return load_task(d)


def test_kandinsky_numpy_labels_match_asp():
    t = kandinsky(1, 3)
    st = structure.recognise(t)
    w = list(t.all_worlds())
    assert structure.labels_np(t, st, structure.world_positions(t, w)).tolist() == \
        [list(x) for x in t.labels_of(w)]
    big = load_task("curricula/rs/kandinsky.yaml")
    sample = big.support()[:200]
    assert structure.labels_np(big, structure.recognise(big),
                               structure.world_positions(big, sample)).tolist() == \
        [list(x) for x in big.labels_of(sample)]


def test_kandinsky_counts_match_brute_force():
    t = kandinsky(2, 2, support={"sample": 30, "seed": 0})
    sup = t.support()
    assert count_rs(t).count == brute_force(t, sup, maps="shared")
    full = kandinsky(1, 2, support="all")
    assert count_rs(full).count == brute_force(full, full.support(), maps="shared")
    # joint: numpy labels agree with the ASP labelling path
    assert count_rs(t, map_class="joint").count == count_rs(plain(kandinsky(
        2, 2, support={"sample": 30, "seed": 0})), map_class="joint").count
    assert count_rs(t, map_class="joint", supervised=["shape(1,1)"]).count == count_rs(
        plain(kandinsky(2, 2, support={"sample": 30, "seed": 0})), map_class="joint",
        supervised=["shape(1,1)"]).count


def test_shipped_kandinsky_fast_paths():
    """Support 'all' (brute force: 36) and the joint class are counted in seconds."""
    t = load_task("curricula/rs/kandinsky.yaml")
    assert count_rs(t).count == 36
    assert count_rs(kandinsky(support="all")).count == 36
    j = count_rs(t, map_class="joint")
    assert "numpy" in j.method and j.count > 10 ** 2000


# -- item 15: (permutation, map) pairs as rsbench-code counts them ---------------------------
def reference_pairs(task, worlds):
    """rsbench-code's count, enumerated its way: a 0/1 matrix A sends every input bit (S, x)
    to exactly one output bit (T, z); the bits of one input variable all go into one output
    variable's block (its O matrix); every image must be one-hot per variable and keep the
    label. Small Boolean tasks only."""
    n = len(task.variables)
    dom = list(task.variables[0].domain)
    k = len(dom)
    bits = [(v, x) for v in range(n) for x in range(k)]
    all_w = list(task.all_worlds())
    lab = dict(zip(all_w, task.labels_of(all_w)))
    count = 0
    for assign in itertools.product(range(len(bits)), repeat=len(bits)):
        targets = {}
        if any(targets.setdefault(s, bits[o][0]) != bits[o][0]
               for (s, _), o in zip(bits, assign)):
            continue
        ok = True
        for w in worlds:
            img = np.zeros((n, k), dtype=int)
            for s in range(n):
                t, z = bits[assign[s * k + dom.index(w[s])]]
                img[t, z] += 1
            if (img.sum(axis=1) != 1).any() or \
                    lab[tuple(dom[int(r.argmax())] for r in img)] != lab[w]:
                ok = False
                break
        count += ok
    return count


@pytest.mark.parametrize("case,ref,ours", [
    ("xor3", 48, 28), ("and3", 36, 30), ("mnist_logic", 26, 21)])
def test_perm_pairs_match_reference_enumeration(case, ref, ours):
    if case == "xor3":
        t, sup = xor(3), [(0, 0, 0), (0, 1, 1), (1, 0, 1)]
    elif case == "and3":
        t, sup = load_task("curricula/rs/and3.yaml"), [(1, 1, 1), (0, 1, 0)]
    else:
        t = load_task("curricula/rs/mnist_logic.yaml")
        sup = t.support()
    assert reference_pairs(t, sup) == ref
    assert count_rs(t, support=sup, map_class="perm", perm_count="pairs").count == ref
    assert count_rs(t, support=sup, map_class="perm").count == ours == \
        brute_force(t, sup, map_class="perm")
