"""The two exact label semantics agree: the compiled circuit (ProbLog -> SDD -> KLay) and the
world enumeration over the task's counting knowledge give the same log P(y) and marginals."""
from __future__ import annotations

import pytest
import torch

from nesybench.nesy.inference.circuit import CompiledProgram
from nesybench.nesy.inference.semantics import WorldEnumeration
from nesybench.shortcuts.task import load_task


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("task_file", ["xor", "mnadd_evenodd", "mnist_logic"])
def test_circuit_and_world_enumeration_agree(root, task_file):
    task = load_task(root / "curricula" / "rs" / f"{task_file}.yaml")
    circuit = CompiledProgram.from_task(task)
    worlds = WorldEnumeration.from_task(task)
    assert circuit.concept_domains == worlds.concept_domains
    assert [[str(v) for v in d] for d in circuit.label_domains] == \
        [[str(v) for v in d] for d in worlds.label_domains]
    g = torch.Generator().manual_seed(0)
    probs = [torch.softmax(torch.randn(6, k, generator=g, dtype=torch.float64), dim=1)
             .float() for k in circuit.concept_domains]
    m_c = circuit.label_marginals(probs)
    m_w = worlds.label_marginals(probs)
    for a, b in zip(m_c, m_w):
        assert torch.allclose(a.double(), b.double(), atol=1e-5)
        assert torch.allclose(a.sum(1).double(), torch.ones(6, dtype=torch.float64), atol=1e-5)
    labels = torch.stack([torch.randint(0, len(d), (6,), generator=g)
                          for d in circuit.label_domains], dim=1)
    assert torch.allclose(circuit(probs, labels).double(), worlds(probs, labels).double(),
                          atol=1e-4)
