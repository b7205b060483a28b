"""World-enumeration semantics on the cases the mutation run found untested: the world budget
of the docs (2^20 worlds per component), the disk cache switched off, label domains that mix
numbers and names, one-valued concepts outside a component, wrong input shapes and the label
index of several labels. Each value is checked against a hand computation or brute force
over the worlds; the labels come from small Python functions, not from a solver."""
from __future__ import annotations

import itertools
import math
import sys

import numpy as np
import pytest
import torch

from nesybench.errors import NesyError
from nesybench.nesy.inference import semantics as S
from nesybench.nesy.inference.semantics import WorldEnumeration, index_labels, world_table
from nesybench.shortcuts.task import Task, Variable


class PyTask(Task):
    """A task whose labels come from ``fn(world) -> tuple`` (one value per label)."""

    def __init__(self, name, domains, labels, fn, depends=None):
        super().__init__(name=name, variables=[Variable(f"v{i}", f"v{i}", "c", tuple(d))
                                               for i, d in enumerate(domains)],
                         knowledge=[], labels=list(labels), depends=depends)
        self.fn = fn
        self.calls = 0

    def labels_of(self, worlds):
        self.calls += 1
        return [tuple(self.fn(w)) for w in worlds]


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(S, "_MEMO", {})


def test_world_budget_per_component():
    # the default is the guide's 2^20 worlds per component
    assert world_table.__kwdefaults__["budget"] == 2 ** 20
    assert WorldEnumeration.__init__.__kwdefaults__["budget"] == 2 ** 20
    xor = lambda w: (w[0] ^ w[1],)  # noqa: E731
    # exactly the budget is enumerated, one world more is refused
    comps, _ = world_table(PyTask("b4", [(0, 1), (0, 1)], ["y"], xor), budget=4, cache=False)
    assert [len(c.values) for c in comps] == [4]
    with pytest.raises(NesyError, match="needs 6 worlds"):
        world_table(PyTask("b6", [(0, 1), (0, 1, 2)], ["y"], xor), budget=4, cache=False)
    # the budget holds per component: two components of 4 worlds each fit a budget of 4
    task = PyTask("b44", [(0, 1)] * 4, ["a", "b"], lambda w: (w[0] ^ w[1], w[2] ^ w[3]),
                  depends={"a": ["v0", "v1"], "b": ["v2", "v3"]})
    comps, _ = world_table(task, budget=4, cache=False)
    assert [len(c.values) for c in comps] == [4, 4]


def test_cache_off_neither_reads_nor_writes_the_disk(tmp_path):
    task = PyTask("xor2", [(0, 1), (0, 1)], ["y"], lambda w: (w[0] ^ w[1],))
    comps, doms = world_table(task, cache=True)
    files = list((tmp_path / "cache").rglob("*.npz"))
    assert len(files) == 1 and doms == [[0, 1]]
    # plant a table with other labels under the same name: cache=False must not read it
    np.savez_compressed(files[0], meta=np.array(
        '{"components": [{"vars": [0, 1], "labels": [0]}], "label_domains": [[0, 1]]}'),
        v0=comps[0].values, l0=1 - comps[0].label_ix)
    S._MEMO.clear()
    comps2, _ = world_table(task, cache=False)
    assert comps2[0].label_ix[:, 0].tolist() == [0, 1, 1, 0]       # XOR of 00, 01, 10, 11
    S._MEMO.clear()
    other = PyTask("and2", [(0, 1), (0, 1)], ["y"], lambda w: (w[0] & w[1],))
    world_table(other, cache=False)
    assert len(list((tmp_path / "cache").rglob("*.npz"))) == 1      # nothing new written


def test_label_domain_numbers_first_then_names():
    # label values 2, "b", 10, "a": numbers sorted by value, then names sorted by text
    values = {(0,): 10, (1,): "b", (2,): 2, (3,): "a"}
    task = PyTask("mixed", [(0, 1, 2, 3)], ["y"], lambda w: (values[w],))
    _, doms = world_table(task, cache=False)
    assert doms == [[2, 10, "a", "b"]]


def test_one_valued_concept_outside_a_component():
    # v1 has a single value and no label reads it; component a = {v0}, component b = {v2}
    task = PyTask("one", [(0, 1), ("only",), (0, 1, 2)], ["a", "b"],
                  lambda w: (w[0], w[2] % 2), depends={"a": ["v0"], "b": ["v2"]})
    sem = WorldEnumeration(task, cache=False)
    assert sem.n_worlds == 2 + 3
    p = [torch.tensor([[0.3, 0.7]], dtype=torch.float64), torch.tensor([[1.0]], dtype=torch.float64),
         torch.tensor([[0.2, 0.5, 0.3]], dtype=torch.float64)]
    # P(a = 1, b = 0) = 0.7 · (0.2 + 0.3)
    assert float(sem(p, torch.tensor([[1, 0]])).exp()) == pytest.approx(0.7 * 0.5)


def test_forward_by_brute_force_over_three_valued_worlds():
    # y = (v0 + v1) mod 3 and z = v2 > v0, one component; brute force over the 27 worlds
    fn = lambda w: ((w[0] + w[1]) % 3, int(w[2] > w[0]))  # noqa: E731
    task = PyTask("mod3", [(0, 1, 2)] * 3, ["y", "z"], fn)
    sem = WorldEnumeration(task, cache=False)
    g = torch.Generator().manual_seed(5)
    p = [torch.softmax(torch.randn(4, 3, generator=g, dtype=torch.float64), 1) for _ in range(3)]
    for y, z in itertools.product(range(3), range(2)):
        lab = torch.tensor([[y, z]] * 4)
        want = [sum(math.prod(float(p[i][b, w[i]]) for i in range(3))
                    for w in itertools.product(range(3), repeat=3) if fn(w) == (y, z))
                for b in range(4)]
        got = sem(p, lab).exp()
        assert got.tolist() == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("probs, match", [
    (lambda: [torch.full((2, 2), 0.5)], "1 concept distributions given"),
    (lambda: [torch.full((2, 2), 0.5), torch.full((2, 3), 1 / 3)], r"expected \(B, 2\)"),
    (lambda: [torch.full((2, 2), 0.5), torch.full((2, 2, 1), 0.5)], r"expected \(B, 2\)"),
])
def test_wrong_concept_inputs_are_one_error(probs, match):
    sem = WorldEnumeration(PyTask("xor2", [(0, 1), (0, 1)], ["y"], lambda w: (w[0] ^ w[1],)),
                           cache=False)
    with pytest.raises(NesyError, match=match):
        sem(probs(), torch.zeros(2, 1, dtype=torch.long))
    with pytest.raises(NesyError, match=match):
        sem.label_marginals(probs())


def test_index_labels_of_one_and_of_several_labels():
    doms = [[0, 1, 2], ["no", "yes"]]
    assert index_labels([(2, "yes"), [0, "no"]], doms).tolist() == [[2, 1], [0, 0]]
    # one label: each value is a row of one, even a tuple-valued one
    assert index_labels([1, 0], [[0, 1]]).tolist() == [[1], [0]]
    assert index_labels([(1, 2)], [[(1, 2), (3, 4)]]).tolist() == [[0]]
    with pytest.raises(NesyError, match="impossible"):
        index_labels([(3, "yes")], doms)


def test_cache_folder_default_and_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("NESYBENCH_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert S.cache_dir() == tmp_path / "xdg" / "nesybench" / "nesy"
    assert ".deps" not in S.cache_dir().parts
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "c"))
    assert S.cache_dir() == tmp_path / "c" / "nesy"
