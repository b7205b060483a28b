"""Every shipped shortcut task: the generated ProbLog program (compiled circuit) and the task's
ASP counting knowledge give the same label on every world (small tasks) or on the support plus
a random sample of worlds (large tasks)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from nesybench import ROOT
from nesybench.nesy.inference.circuit import CompiledProgram
from nesybench.nesy.inference.from_task import task_program
from nesybench.shortcuts.task import load_task

TASKS = sorted((ROOT / "curricula" / "rs").glob("*.yaml"))


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))


def _worlds(task):
    if task.n_worlds <= 5000:
        return list(task.all_worlds())
    rng = random.Random(0)
    worlds = list(task.support())[:200]
    worlds += [tuple(rng.choice(v.domain) for v in task.variables) for _ in range(200)]
    return worlds


def test_every_shipped_task_has_a_program():
    assert len(TASKS) >= 10
    for path in TASKS:
        text, queries, order = task_program(load_task(path))
        assert "nn(" in text and queries and len(order) == len(load_task(path).variables)


@pytest.mark.parametrize("path", TASKS, ids=lambda p: p.stem)
def test_program_and_counting_knowledge_agree(path: Path):
    task = load_task(path)
    prog = CompiledProgram.from_task(task, semiring="real")
    assert prog.concept_domains == [len(v.domain) for v in task.variables]
    worlds = _worlds(task)
    want = task.labels_of(worlds)
    onehot = []
    for i, v in enumerate(task.variables):
        idx = torch.tensor([v.domain.index(w[i]) for w in worlds])
        onehot.append(torch.nn.functional.one_hot(idx, len(v.domain)).float())
    marg = prog.label_marginals(onehot)
    for j, (dom, m) in enumerate(zip(prog.label_domains, marg)):
        # a deterministic world gives its label probability 1
        assert torch.allclose(m.max(1).values, torch.ones(len(worlds)), atol=1e-6)
        got = [dom[k] for k in m.argmax(1).tolist()]
        assert [str(g) for g in got] == [str(w[j]) for w in want], prog.label_names[j]
    # the label as evidence: log P(label | world) = 0 for the knowledge's label
    idx = prog.label_index([list(w) if len(w) > 1 else w[0] for w in want])
    assert torch.allclose(prog(onehot, idx), torch.zeros(len(worlds)), atol=1e-5)
