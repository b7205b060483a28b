"""The continual-learning strategies as published: A-GEM's memory of previous tasks only,
its per-task memories and its reference gradient in eval mode (Chaudhry et al. 2019), EWC's
per-task penalties (Kirkpatrick et al. 2017) and online EWC's γF penalty (Schwarz et al.
2018)."""
from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from nesybench.errors import NesyError
from nesybench.kandy.generate import generate
from nesybench.kandy.learn.data import SplitTensors, load_data
from nesybench.kandy.learn.settings import _optimizer, _Trainer, resolve_config, train
from nesybench.kandy.learn import strategies as S
from nesybench.kandy.learn.strategies import STRATEGIES, head_loss, make_strategy

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


# ----------------------------------------------------------------------------- EWC

class _TwoParams(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(2))


def _ewc(strategy, fishers, anchors, **kw):
    """The strategy on a 2-parameter model after tasks with Fishers ``fishers`` ended at
    ``anchors`` (the empirical Fisher replaced by the given values)."""
    cfg = resolve_config("mlp", "task_incremental", strategy=strategy, ewc_lambda=2.0, **kw)
    model = _TwoParams()
    st = make_strategy(strategy, SimpleNamespace(cfg=cfg, train_split=None, seed=0), model,
                       {})
    for t, (f, a) in enumerate(zip(fishers, anchors)):
        st.empirical_fisher = lambda task, f=f: [torch.tensor(f)]
        with torch.no_grad():
            model.w.copy_(torch.tensor(a))
        st.end_task(t)
    return st, model


def test_ewc_keeps_one_anchor_and_fisher_per_task():
    """Kirkpatrick et al.: Σ_t (λ/2) Σ_i F_{t,i} (θ_i − θ*_{t,i})², by hand: λ = 2,
    F_1 = (1, 2) at θ*_1 = (0, 0), F_2 = (3, 0.5) at θ*_2 = (1, 1), θ = (2, −1):
    task 1: 1·4 + 2·1 = 6; task 2: 3·1 + 0.5·4 = 5; penalty = (2/2)·11 = 11."""
    st, model = _ewc("ewc", [[1.0, 2.0], [3.0, 0.5]], [[0.0, 0.0], [1.0, 1.0]])
    # at θ = θ*_2 = (1, 1) only task 1's term is left: 1·1 + 2·1 = 3
    assert float(st.penalty().detach()) == pytest.approx(3.0, abs=1e-6)
    with torch.no_grad():
        model.w.copy_(torch.tensor([2.0, -1.0]))
    assert float(st.penalty().detach()) == pytest.approx(11.0, abs=1e-6)
    # at one task's anchor, the other task's term remains: θ = θ*_1 = (0, 0) → 3·1 + 0.5·1
    with torch.no_grad():
        model.w.zero_()
    assert float(st.penalty().detach()) == pytest.approx(3.5, abs=1e-6)
    assert len(st.anchors) == 2


def test_online_ewc_keeps_one_anchor_and_a_decayed_fisher():
    """Schwarz et al.: F = γ F_1 + F_2 = 0.5·(1, 2) + (3, 0.5) = (3.5, 1.5), θ* = θ*_2 = (1, 1),
    penalty (λ/2) Σ γ F_i (θ_i − θ*_i)²: at θ = (2, −1): (2/2)·0.5·(3.5·1 + 1.5·4) = 4.75; at
    θ = (0, 0): 0.5·(3.5 + 1.5) = 2.5."""
    st, model = _ewc("ewc-online", [[1.0, 2.0], [3.0, 0.5]], [[0.0, 0.0], [1.0, 1.0]],
                     ewc_gamma=0.5)
    assert len(st.anchors) == 1
    with torch.no_grad():
        model.w.copy_(torch.tensor([2.0, -1.0]))
    assert float(st.penalty().detach()) == pytest.approx(4.75, abs=1e-6)
    with torch.no_grad():
        model.w.zero_()
    assert float(st.penalty().detach()) == pytest.approx(2.5, abs=1e-6)
    # γ = 1 (the default): the Fishers summed, (4, 2.5) at (1, 1) → 4·1 + 2.5·4 = 14
    st, model = _ewc("ewc-online", [[1.0, 2.0], [3.0, 0.5]], [[0.0, 0.0], [1.0, 1.0]])
    with torch.no_grad():
        model.w.copy_(torch.tensor([2.0, -1.0]))
    assert float(st.penalty().detach()) == pytest.approx(14.0, abs=1e-6)
    with pytest.raises(NesyError, match="ewc_gamma"):
        resolve_config("mlp", "task_incremental", strategy="ewc-online", ewc_gamma=1.5)


def test_online_ewc_penalty_is_gamma_f_at_gamma_07():
    """‖θ − θ*‖²_{γF} (Schwarz et al. 2018; van de Ven et al.'s code), by hand with λ = 2,
    γ = 0.7. After task 1 (F_1 = (1, 2) at θ*_1 = (0, 0)), at θ = (2, −1): Σ F (θ − θ*)² =
    1·4 + 2·1 = 6, penalty (2/2)·0.7·6 = 4.2. After task 2 (F_2 = (3, 0.5) at θ*_2 = (1, 1)):
    F = 0.7·(1, 2) + (3, 0.5) = (3.7, 1.9); Σ F (θ − θ*)² = 3.7·1 + 1.9·4 = 11.3, penalty
    0.7·11.3 = 7.91 (F without γ would give 11.3)."""
    st, model = _ewc("ewc-online", [[1.0, 2.0]], [[0.0, 0.0]], ewc_gamma=0.7)
    with torch.no_grad():
        model.w.copy_(torch.tensor([2.0, -1.0]))
    assert float(st.penalty().detach()) == pytest.approx(4.2, abs=1e-6)
    st, model = _ewc("ewc-online", [[1.0, 2.0], [3.0, 0.5]], [[0.0, 0.0], [1.0, 1.0]],
                     ewc_gamma=0.7)
    assert [f.tolist() for f in st.anchors[0][0]] == [pytest.approx([3.7, 1.9])]
    with torch.no_grad():
        model.w.copy_(torch.tensor([2.0, -1.0]))
    pen = st.penalty()
    assert float(pen.detach()) == pytest.approx(7.91, abs=1e-6)
    # its gradient, λ γ F (θ − θ*) = 2·0.7·(3.7·1, 1.9·(−2)) = (5.18, −5.32)
    pen.backward()
    assert model.w.grad.tolist() == pytest.approx([5.18, -5.32], abs=1e-5)
    # the loss the trainer adds is that penalty
    loss, used = st.extra_loss(None, None, None)
    assert float(loss.detach()) == pytest.approx(7.91, abs=1e-6) and used == 0


def test_both_ewcs_are_strategies_everywhere_they_are_listed(three, tmp_path, capsys):
    from nesybench.cli import main as cli_main
    from nesybench.kandy.learn.report import STRATEGY_ORDER

    assert {"ewc", "ewc-online"} <= set(STRATEGIES) and "ewc-online" in STRATEGY_ORDER
    guide = (ROOT / "docs/guides/kandy.md").read_text(encoding="utf-8")
    assert "| `ewc-online` |" in guide and "| `ewc` |" in guide
    base = ["kandy", "train", str(three), "--model", "mlp", "--epochs", "1", "--batch", "4",
            "--seeds", "1", "--size", "16", "--buffer", "8", "--workers", "0", "-q",
            "--tasks", "0,5", "--setting", "task-incremental"]
    assert cli_main(base + ["--strategy", "ewc,ewc-online", "--ewc-gamma", "0.9",
                            "--out", str(tmp_path / "s"), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"ewc-online"' in out and '"ewc"' in out
    for extra, msg in ((["--strategy", "ewc", "--ewc-gamma", "0.9"], "ewc-online only"),
                       (["--strategy", "naive", "--agem-ref-batch", "8"], "agem only")):
        assert cli_main(base + extra + ["--out", str(tmp_path / "k")]) == 2
        err = capsys.readouterr().err
        assert msg in err and len(err.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- A-GEM's memory

def test_agem_per_task_memories_are_the_papers(three):
    """``agem_memory=per-task``: each finished task keeps its own buffer // T = 9 // 3 = 3
    supervised training samples, written when it ends and never replaced; the reference batch
    is drawn from the union of the previous tasks' memories."""
    d = load_data(three, size=16)
    split = d.splits["train"]
    snapshots: dict[int, dict] = {}
    refs: list[tuple[int, list]] = []

    def probe(st):
        inner_end, inner_ref = st.end_task, st.reference_batch

        def end_task(task):
            inner_end(task)
            snapshots[task] = {k: list(v) for k, v in st.buffer.memories.items()}

        def reference_batch():
            idx = inner_ref()
            refs.append((st.task, idx.tolist()))
            return idx

        st.end_task, st.reference_batch = end_task, reference_batch

    _, st = _run(d, "agem", probe=probe, buffer=9, agem_ref_batch=4, agem_memory="per-task")
    assert isinstance(st.buffer, S.TaskMemories) and st.buffer.slots == 3
    mem = st.buffer.memories
    assert sorted(mem) == [0, 5, 10] and all(len(v) == 3 for v in mem.values())
    for task, items in mem.items():                     # its own supervised training samples
        assert set(items) <= set(split.supervised_indices(task).tolist())
    assert snapshots[0][0] == snapshots[5][0] == mem[0]  # fixed once written
    assert snapshots[5][5] == mem[5] and len(st.buffer) == 9
    assert [t for t, _ in refs if t == 0] == []          # no reference gradient in task 1
    for task, idx in refs:
        assert len(idx) == len(set(idx)) == (3 if task == 5 else 4)   # whole memory / 4
        allowed = set(mem[0]) if task == 5 else set(mem[0]) | set(mem[5])
        assert set(idx) <= allowed
    assert any(set(idx) & set(mem[5]) for t, idx in refs if t == 10)


def test_agem_memory_is_a_setting(tmp_path, three, capsys):
    from nesybench.cli import main as cli_main

    assert resolve_config("mlp", "task_incremental", strategy="agem").agem_memory == "balanced"
    with pytest.raises(NesyError, match="agem_memory must be balanced or per-task"):
        resolve_config("mlp", "task_incremental", strategy="agem", agem_memory="ring")
    base = ["kandy", "train", str(three), "--model", "mlp", "--epochs", "1", "--batch", "4",
            "--seeds", "1", "--size", "16", "--buffer", "6", "--workers", "0", "-q",
            "--tasks", "0,5", "--setting", "task-incremental"]
    assert cli_main(base + ["--strategy", "naive", "--agem-memory", "per-task",
                            "--out", str(tmp_path / "k")]) == 2
    assert "agem only" in capsys.readouterr().err
    assert cli_main(base + ["--strategy", "agem", "--agem-memory", "per-task",
                            "--out", str(tmp_path / "a"), "--json"]) == 0
    assert '"agem"' in capsys.readouterr().out


class _DropBN(nn.Module):
    """Flatten → Linear(48, 6) → BatchNorm1d → Dropout(0.5) → Linear(6, 2): what a
    train-mode forward pass changes (batch statistics, dropout masks, running statistics)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3 * 4 * 4, 6)
        self.bn = nn.BatchNorm1d(6)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(6, 2)

    def forward(self, x):
        return self.head(self.drop(self.bn(self.lin(x.flatten(1)))))


def test_agem_reference_gradient_is_computed_in_eval_mode(monkeypatch):
    """g_ref is the eval-mode gradient of the reference batch (no dropout, BatchNorm on its
    running statistics), the pass leaves the running statistics as they were, and the model
    is back in train mode afterwards."""
    g = torch.Generator().manual_seed(0)
    n = 24
    split = SplitTensors(images=torch.randint(0, 256, (n, 3, 4, 4), generator=g,
                                              dtype=torch.uint8),
                         tasks=torch.tensor([0] * 12 + [1] * 12),
                         labels=torch.tensor([0, 1] * 12), supervised=torch.ones(n, dtype=bool))
    cfg = resolve_config("mlp", "task_incremental", strategy="agem", buffer=8,
                         agem_ref_batch=5)
    torch.manual_seed(0)
    model = _DropBN()
    head_of = {0: 0, 1: 1}
    tr = SimpleNamespace(cfg=cfg, train_split=split, seed=0, train_samples=0)
    st = make_strategy("agem", tr, model, head_of)
    st.begin_task(0)
    st.end_task(0)
    st.begin_task(1)
    seen = {}

    def project(g_, g_ref):
        seen["g_ref"] = g_ref.clone()
        return S.project_agem.__wrapped__(g_, g_ref)

    project.__wrapped__ = S.project_agem
    monkeypatch.setattr(S, "project_agem", project)
    inner = st.reference_batch
    st.reference_batch = lambda: seen.setdefault("ridx", inner())
    model.train()
    loss = head_loss(model, split, torch.arange(12, 16), head_of, "cpu")
    stats = (model.bn.running_mean.clone(), model.bn.running_var.clone(),
             int(model.bn.num_batches_tracked))
    frozen = copy.deepcopy(model)                        # the parameters g_ref is taken at
    st.backward(loss)
    assert model.training and model.drop.training and model.bn.training
    assert torch.equal(model.bn.running_mean, stats[0])
    assert torch.equal(model.bn.running_var, stats[1])
    assert int(model.bn.num_batches_tracked) == stats[2]
    # the same gradient, by hand: the frozen copy in eval mode on the same reference batch
    frozen.eval()
    frozen.zero_grad()
    head_loss(frozen, split, seen["ridx"], head_of, "cpu").backward()
    want = torch.cat([p.grad.flatten() for p in frozen.parameters()])
    assert torch.allclose(seen["g_ref"], want, atol=1e-7, rtol=0)
    # in train mode the same batch would give another gradient (dropout, batch statistics)
    frozen.train()
    frozen.zero_grad()
    head_loss(frozen, split, seen["ridx"], head_of, "cpu").backward()
    other = torch.cat([p.grad.flatten() for p in frozen.parameters()])
    assert not torch.allclose(other, want, atol=1e-4)
