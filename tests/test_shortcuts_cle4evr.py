"""CLE4EVR (rsbench): the 'two objects look the same' rule counted exactly.

Disentangled maps (one colour map, one shape map shared by every object) give |C|!·|S|!
optimal maps; entangled maps (one map over (colour, shape) pairs shared by every object,
the task's ``obj`` concept) give (|C|·|S|)!, on the support of all worlds."""
import math

import pytest

from nesybench.shortcuts.count import brute_force, count_rs
from nesybench.shortcuts.task import load_task

COLOURS = ["red", "green", "blue", "yellow"]
SHAPES = ["cube", "sphere", "cylinder"]


def disentangled(nc, ns, n, support="all"):
    return load_task({"name": f"cle4evr_{nc}x{ns}", "knowledge": "kb/shortcuts/cle4evr.lp",
                      "maps": "shared", "support": support, "concepts": [
                          {"name": "color", "count": n, "domain": COLOURS[:nc]},
                          {"name": "shape", "count": n, "domain": SHAPES[:ns]}]})


def entangled(nc, ns, n, support="all"):
    pairs = [f"{c}_{s}" for c in COLOURS[:nc] for s in SHAPES[:ns]]
    return load_task({"name": f"cle4evr_ent_{nc}x{ns}", "knowledge": "kb/shortcuts/cle4evr.lp",
                      "maps": "shared", "support": support,
                      "concepts": [{"name": "obj", "count": n, "domain": pairs}]})


@pytest.mark.parametrize("nc, ns, n", [(2, 2, 2), (3, 2, 2), (2, 3, 3)])
def test_closed_forms(nc, ns, n):
    d = count_rs(disentangled(nc, ns, n))
    assert d.count == math.factorial(nc) * math.factorial(ns)
    assert d.count_without_identity == d.count - 1
    assert count_rs(entangled(nc, ns, n)).count == math.factorial(nc * ns)


def test_shipped_tasks():
    assert count_rs(load_task("curricula/rs/cle4evr.yaml")).count == 36          # 3! * 3!
    assert count_rs(load_task("curricula/rs/cle4evr_entangled.yaml")).count == 720  # (3*2)!


@pytest.mark.parametrize("n", [2, 3])
def test_brute_force_tiny(n):
    d, e = disentangled(2, 2, n), entangled(2, 2, n)
    assert brute_force(d, d.support()) == count_rs(d).count == 4
    assert brute_force(e, e.support()) == count_rs(e).count == 24


def test_support_without_the_separating_negatives_admits_more_maps():
    # only a positive world and a negative with equal colours: merging the two shapes is
    # not refuted, and the colour map only has to keep the positive's colours apart
    sup = ["red,red,cube,cube", "red,red,cube,sphere"]
    t = disentangled(2, 2, 2, support=sup)
    n = count_rs(t).count
    assert n == brute_force(t, t.support())
    assert n > 4


def test_cle4evr_has_rsbench_s_ood_split():
    """rsbench keeps prop_in_distribution (0.8 in its example) of the configurations in
    distribution and renders the rest as its OOD split; cle4evr.yaml does so over all worlds,
    with the seed in the file, and the count is the same as on all worlds."""
    t = load_task("curricula/rs/cle4evr.yaml")
    sup = t.support()
    assert t.support_spec == {"prop_in_dist": 0.8, "seed": 0}
    assert len(sup) == round(0.8 * 729) == 583 and sup == t.support(seed=9)
    ood = [w for w in t.all_worlds() if w not in set(sup)]
    assert len(ood) == 146 and t.raw["generate"]["samples"]["ood"] == 30
    assert {lab for (lab,) in t.labels_of(sup)} == {0, 1}
    assert {lab for (lab,) in t.labels_of(ood)} == {0, 1}


def test_rsbench_s_example_configuration():
    """rsbench's shipped example: two objects, red/blue, cube/star/toroid, rubber/metal,
    large/medium/small; the label compares colour, shape and material, not size."""
    t = load_task("curricula/rs/cle4evr_rsbench.yaml")
    assert t.n_worlds == (2 * 3 * 2 * 3) ** 2 and len(t.support()) == round(0.8 * 1296)
    same = ("red", "red", "star", "star", "metal", "metal", "large", "small")
    other = ("red", "red", "star", "star", "metal", "rubber", "large", "large")
    assert t.labels_of([same, other]) == [(1,), (0,)]
    # 2! colour maps * 3! shape maps * 2! material maps * every size map (3^3: size is not read)
    assert count_rs(t).count == 2 * 6 * 2 * 27 == 648
