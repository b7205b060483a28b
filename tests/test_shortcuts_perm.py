"""The structured perm-class counter for Kandinsky knowledge
(shortcuts/perm.py) against an independent brute-force enumeration of every (permutation,
per-variable map) pair, in both --perm-count modes."""
import itertools
import math
import random

import numpy as np
import pytest

from nesybench.errors import BudgetExceeded
from nesybench.shortcuts.count import brute_force, count_rs
from nesybench.shortcuts.task import load_task


def kandinsky(figs, objs, shapes, colours, support="all"):
    return load_task({"name": f"kand{figs}x{objs}", "knowledge": "kb/shortcuts/kandinsky.lp",
                      "maps": "shared", "support": support,
                      "concepts": [{"name": "shape", "count": [figs, objs], "domain": shapes},
                                   {"name": "color", "count": [figs, objs], "domain": colours}]})


def enumerate_pairs(task, worlds):
    """(pairs, functions) by trying every permutation of the shape and of the colour variables
    and every tuple of per-variable maps, with the ASP labels of all worlds. A function is
    keyed per variable by its constant value, or by (source variable, map) when not constant."""
    n = len(task.variables)
    doms = [list(v.domain) for v in task.variables]
    sizes = [len(d) for d in doms]
    label = np.array([lab for lab, in task.labels_of(task.all_worlds())])
    stride = np.array([int(np.prod(sizes[i + 1:])) for i in range(n)])
    wpos = np.array([[doms[i].index(x) for i, x in enumerate(w)] for w in worlds])
    want = label[(wpos * stride).sum(axis=1)]
    maps = [np.array(list(itertools.product(range(s), repeat=s))) for s in sizes]
    combos = np.array(list(itertools.product(*[range(len(m)) for m in maps])))
    groups = [ix for _, _, ix in task.groups("shared")]
    # a one-value domain has one (constant) map: all permutations of its variables give the
    # same image, so they are counted by a factor instead of being enumerated
    frozen = [ix for ix in groups if len(task.variables[ix[0]].domain) == 1]
    groups = [ix for ix in groups if ix not in frozen]
    pairs, keys = 0, []
    for choice in itertools.product(*[itertools.permutations(ix) for ix in groups]):
        src = {t: s for ix, p in zip(groups, choice) for t, s in zip(ix, p)}
        src.update({t: t for ix in frozen for t in ix})
        alive = np.arange(len(combos))
        for w, y in zip(wpos, want):
            img = sum(maps[t][combos[alive, t], w[src[t]]] * stride[t] for t in range(n))
            alive = alive[label[img] == y]
            if not len(alive):
                break
        pairs += len(alive)
        key = np.empty((len(alive), n), dtype=np.int64)
        for t in range(n):
            m = maps[t][combos[alive, t]]
            const = (m == m[:, :1]).all(axis=1)
            key[:, t] = np.where(const, m[:, 0], sizes[t] + src[t] * len(maps[t]) +
                                 combos[alive, t])
        keys.append(key)
    for ix in frozen:
        pairs *= math.factorial(len(ix))
    return pairs, len(np.unique(np.concatenate(keys), axis=0))


def support_of(task, kind, seed=0):
    worlds = list(task.all_worlds())
    labels = [lab for lab, in task.labels_of(worlds)]
    rng = random.Random(seed)
    if kind == "all":
        return worlds
    if kind == "positive":
        return [w for w, y in zip(worlds, labels) if y == 1][:6]
    if kind == "negative":
        return [w for w, y in zip(worlds, labels) if y == 0][:5]
    return rng.sample(worlds, int(kind))


@pytest.mark.parametrize("figs,objs,shapes,colours,kind,expect", [
    (2, 2, [0, 1], [0, 1], "all", (1024, 1024)),
    (2, 2, [0, 1], [0, 1], "positive", (98304, 13328)),     # constant maps: pairs != functions
    (1, 3, [0, 1], [0, 1], "3", None),
    (1, 2, [0, 1, 2], [0, 1], "negative", None),
    (1, 3, [0, 1, 2], [0], "12", None),                     # 3 x 3 shape maps, one colour
    (2, 1, [0, 1], [0, 1], "all", (1024, 784)),               # no pairs: the label is always 0
    (3, 2, [0, 1], [0], "12", None),                          # three figures, one colour
])
def test_perm_counts_match_enumeration(figs, objs, shapes, colours, kind, expect):
    t = kandinsky(figs, objs, shapes, colours)
    sup = support_of(t, kind)
    fast = count_rs(t, support=sup, map_class="perm")
    pairs = count_rs(t, support=sup, map_class="perm", perm_count="pairs")
    assert "Kandinsky" in fast.method and "Kandinsky" in pairs.method
    assert (pairs.count, fast.count) == enumerate_pairs(t, sup)
    if expect:
        assert (pairs.count, fast.count) == expect


def test_perm_agrees_with_clingo_and_brute_force():
    t = kandinsky(1, 2, [0, 1], [0, 1])
    sup = support_of(t, "5", seed=3)
    fast = count_rs(t, support=sup, map_class="perm")
    slow = count_rs(t, support=sup, map_class="perm", list_n=1)   # listing: clingo
    assert "clingo" in slow.method
    assert fast.count == slow.count == brute_force(t, sup, map_class="perm")
    assert count_rs(t, support=sup, map_class="perm", perm_count="pairs").count == \
        count_rs(t, support=sup, map_class="perm", perm_count="pairs", list_n=1).count
    # concept supervision is left to clingo
    sup_r = count_rs(t, support=sup, map_class="perm", supervised=["shape(1,1)"])
    assert "clingo" in sup_r.method
    assert sup_r.count == brute_force(t, sup, map_class="perm", supervised=["shape(1,1)"])


def test_shipped_kandinsky_perm_is_structured():
    """Before: 720 x 720 permutations, clingo ran until the time limit. 93,312 = 2! (figures)
    x 3!^2 (objects) x (3! shapes x 3! colours)^2 (value permutations per figure)."""
    t = load_task("curricula/rs/kandinsky.yaml")
    for mode in ("functions", "pairs"):
        r = count_rs(t, map_class="perm", perm_count=mode, time_limit=60)
        assert r.count == 93312 and "Kandinsky" in r.method
    with pytest.raises(BudgetExceeded, match="figure options"):
        count_rs(t, map_class="perm", max_states=100)
