"""The continual-learning strategies as published: A-GEM's memory of previous tasks only
(Chaudhry et al. 2019), EWC's per-task penalties (Kirkpatrick et al. 2017) and online EWC
(Schwarz et al. 2018)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from nesybench.errors import NesyError
from nesybench.kandy.generate import generate
from nesybench.kandy.learn.data import load_data
from nesybench.kandy.learn.settings import _optimizer, _Trainer, resolve_config, train
from nesybench.kandy.learn.strategies import STRATEGIES, make_strategy

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def three(tmp_path_factory) -> Path:
    """Easy tasks 0, 5 and 10, 24 samples each (12/6/6), 32×32 pictures."""
    out = tmp_path_factory.mktemp("kandy3") / "three"
    generate(ROOT / "curricula/kandy/easy.yaml", out, tasks=[0, 5, 10], samples=24,
             render={"canvas": [32, 32]})
    return out


def _cfg(strategy, **kw):
    base = dict(epochs=2, batch=4, lr=0.05, optim="sgd", buffer=8, strategy=strategy)
    base.update(kw)
    return resolve_config("mlp", "task_incremental", **base)


def _run(d, strategy, probe=None, **kw):
    """Train an MLP over the tasks of ``d`` one after the other; ``probe(st)`` runs once the
    strategy exists. Returns (model, strategy)."""
    cfg = _cfg(strategy, **kw)
    torch.manual_seed(0)
    tr = _Trainer(d, cfg, 0, False, None)
    model = tr.new_model(len(d.task_ids))
    head_of = {t: j for j, t in enumerate(d.task_ids)}
    opt = _optimizer(model, cfg)
    st = make_strategy(strategy, tr, model, head_of)
    if probe is not None:
        probe(st)
    for t in d.task_ids:
        st.begin_task(t)
        for _ in range(cfg.epochs):
            tr.run_epoch(model, opt, tr.task_epoch(t), head_of, st)
        st.end_task(t)
    return model, st


# ----------------------------------------------------------------------------- A-GEM

def test_agem_on_one_task_is_naive_fine_tuning_bit_for_bit(three):
    """No memory and no projection during the first task, and the memory's draws come from
    A-GEM's own generator: on a single task A-GEM's parameters, losses and accuracies are
    exactly fine-tuning's."""
    d = load_data(three, size=16, tasks=[0])
    m_naive, _ = _run(d, "naive")
    m_agem, st = _run(d, "agem")
    for a, b in zip(m_naive.state_dict().values(), m_agem.state_dict().values()):
        assert torch.equal(a, b)
    assert st.dots == []
    for setting in ("task_incremental", "continual_online"):
        n = train(d, resolve_config("mlp", setting, epochs=2, batch=4, lr=0.05, optim="sgd",
                                    buffer=8, strategy="naive"), seed=3)
        a = train(d, resolve_config("mlp", setting, epochs=2, batch=4, lr=0.05, optim="sgd",
                                    buffer=8, strategy="agem"), seed=3)
        assert n.losses == a.losses and np.array_equal(n.A, a.A)
        assert np.array_equal(n.thresholds, a.thresholds)
        assert n.train_samples == a.train_samples


def test_agem_reference_batch_holds_previous_tasks_only(three):
    """A probe on every loss the strategy computes for its reference gradient: none during
    task 1, and during tasks 2 and 3 not one sample of the task being trained."""
    d = load_data(three, size=16)
    split = d.splits["train"]
    refs: list[tuple[int, Counter]] = []

    def probe(st):
        inner = st._bce

        def bce(idx):
            refs.append((st.task, Counter(int(t) for t in split.tasks[idx])))
            return inner(idx)

        st._bce = bce

    _, st = _run(d, "agem", probe=probe, agem_ref_batch=5)
    by_task = Counter(t for t, _ in refs)
    assert by_task[0] == 0                       # no reference gradient in task 1
    assert by_task[5] > 0 and by_task[10] > 0
    for task, seen in refs:
        assert seen[task] == 0                   # 0 current-task samples
        assert sum(seen.values()) == 5           # agem_ref_batch samples
    assert {t for t, s in refs for t in s if t} <= {0, 5}
    assert any(s[5] for t, s in refs if t == 10)  # task 2's samples are used in task 3
    # the memory holds finished tasks only, balanced over (task, label)
    assert set(st.buffer.counts()) == {(0, 0), (0, 1), (5, 0), (5, 1), (10, 0), (10, 1)}
    assert len(st.buffer) == 8


def test_agem_reference_batch_is_a_setting_with_the_papers_default():
    assert resolve_config("mlp", "task_incremental", strategy="agem").agem_ref_batch == 256
    assert resolve_config("mlp", "task_incremental", strategy="agem",
                          agem_ref_batch=10).agem_ref_batch == 10
    with pytest.raises(NesyError, match="agem_ref_batch"):
        resolve_config("mlp", "task_incremental", strategy="agem", agem_ref_batch=0)
