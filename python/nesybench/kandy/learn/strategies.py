"""Continual-learning strategies for the continual settings (task-incremental, continual-online).

A strategy adds to the loss of a mini-batch, may change the gradient before the optimiser
step, and sees each task's start and end (``_Trainer.continual`` calls the hooks). Hyper-
parameters: :data:`STRATEGY_HPARAMS` (fields of :class:`.settings.TrainConfig`).

* ``naive``: fine-tuning, nothing added (the lower bound).
* ``replay``: class-balanced reservoir replay (CBRS, :mod:`.replay`; the paper's method):
  ``L = L_B + λ_r · L_R̃``, ``R̃`` a batch of ``b`` stored samples.
* ``ewc`` (Kirkpatrick et al. 2017): ``L = L_task + Σ_{t<T} (λ/2) Σ_i F_{t,i} (θ_i −
  θ*_{t,i})²``, one anchor ``θ*_t`` (the parameters at the end of task t) and one diagonal
  empirical Fisher ``F_t`` (mean squared per-sample gradient of the BCE of the true label over
  up to ``fisher_samples`` supervised training samples of task t) per previous task: memory
  grows with the number of tasks (two copies of the parameters per task).
* ``ewc-online`` (online EWC, Schwarz et al. 2018): one anchor ``θ*`` (the latest) and one
  Fisher, ``F ← γ F + F_t`` at the end of each task (γ = ``ewc_gamma``, default 1: the
  Fishers summed); ``L = L_task + (λ/2) Σ_i γ F_i (θ_i − θ*_i)²``, the penalty
  ``‖θ − θ*‖²_{γF}`` of the paper's compress phase (as van de Ven et al.'s reference code
  computes it: the running Fisher decayed once more in the loss).
* ``lwf`` (Li & Hoiem 2017): ``L = L_task + λ · T² · KD``, KD the mean Bernoulli KL divergence
  between the outputs of the model frozen at the end of the previous task and the current
  model, on the current inputs, for the heads of the tasks learned so far, both at
  temperature ``T`` (zero when the two agree).
* ``agem`` (Chaudhry et al. 2019): the gradient ``g`` of the batch is projected when it
  conflicts with the gradient ``g_ref`` of ``agem_ref_batch`` samples (256, the paper's
  value; the whole memory while it holds fewer) drawn from the episodic memory of the
  *previous* tasks (a task's samples enter it when the task ends):
  ``g̃ = g − (gᵀg_ref / g_refᵀg_ref) g_ref`` if ``gᵀg_ref < 0``. The memory is
  ``agem_memory``: ``balanced`` (the default) one class-balanced reservoir (CBRS) of
  ``buffer`` items over (task, label); ``per-task``, the paper's, one memory M_k of
  ``buffer // T`` items per finished task k (T tasks in the run; GEM's allocation, Lopez-Paz
  and Ranzato 2017 §3), and ``g_ref`` from the union ∪_{k<t} M_k (Chaudhry et al. 2019 §4).
  ``g_ref`` is computed with the model in eval mode (no dropout, BatchNorm on its running
  statistics, which the pass leaves as they were). No memory and no projection during the
  first task; the memory is sampled with the strategy's own generator (see :class:`AGEM`).
* ``der`` / ``derpp`` (Buzzega et al. 2020): a reservoir of (sample, logits at the time it was
  seen); ``L = L_task + α ‖f(x′) − z′‖²`` (mean over the heads) on a buffer batch, plus for
  ``derpp`` ``β · BCE(f(x″), y″)`` on another.
"""
from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from .replay import ClassBalancedReservoir

STRATEGIES = ("naive", "replay", "ewc", "ewc-online", "lwf", "agem", "der", "derpp")

#: A-GEM's episodic memories: one class-balanced reservoir, or the paper's per-task memories
AGEM_MEMORIES = ("balanced", "per-task")

#: defaults of the strategies' hyper-parameters (TrainConfig fields); ``buffer`` 0 in the
#: paper's table means 200 for a strategy that needs a memory (agem, der, derpp).
STRATEGY_HPARAMS = {"ewc_lambda": 100.0, "ewc_gamma": 1.0, "fisher_samples": 200, "lwf_lambda": 1.0,
                    "lwf_temperature": 2.0, "der_alpha": 0.3, "der_beta": 0.5,
                    "agem_ref_batch": 256, "memory_default": 200}


def project_agem(g: torch.Tensor, g_ref: torch.Tensor) -> torch.Tensor:
    """A-GEM's projection of the flat gradient ``g`` against the memory gradient ``g_ref``."""
    dot = torch.dot(g, g_ref)
    if dot < 0:
        return g - (dot / torch.dot(g_ref, g_ref).clamp_min(1e-30)) * g_ref
    return g


class Reservoir:
    """Plain reservoir sampling (Vitter's algorithm R) of ``capacity`` items."""

    def __init__(self, capacity: int, seed: int = 0):
        self.capacity, self.items, self.seen = int(capacity), [], 0
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self.items)

    def add(self, item) -> None:
        self.seen += 1
        if len(self.items) < self.capacity:
            self.items.append(item)
        else:
            j = int(self.rng.integers(self.seen))
            if j < self.capacity:
                self.items[j] = item

    def sample(self, k: int) -> list:
        if not self.items or k <= 0:
            return []
        idx = self.rng.choice(len(self.items), size=min(k, len(self.items)), replace=False)
        return [self.items[int(i)] for i in idx]


class Strategy:
    """Fine-tuning (``naive``); the base of the others."""

    def __init__(self, trainer, model: nn.Module, head_of: dict[int, int]):
        self.tr, self.cfg, self.model, self.head_of = trainer, trainer.cfg, model, head_of
        self.split, self.dev = trainer.train_split, trainer.cfg.device
        self.learned: list[int] = []           # tasks finished so far
        self.task = None

    def params(self):
        return [p for p in self.model.parameters() if p.requires_grad]

    def begin_task(self, task: int) -> None:
        self.task = task

    def extra_loss(self, idx, x, out):
        """(loss term or None, samples used) added to the batch loss."""
        return None, 0

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def observe(self, idx, out) -> None:
        """After the step: ``idx`` the batch, ``out`` its logits [B, heads] (detached)."""

    def end_task(self, task: int) -> None:
        self.learned.append(task)

    def _bce(self, idx) -> torch.Tensor:
        return head_loss(self.model, self.split, idx, self.head_of, self.dev)


def head_loss(model, split, idx: torch.Tensor, head_of: dict[int, int], device: str):
    """Binary cross-entropy of each sample's own task head (logits [B, heads] -> scalar)."""
    x = split.batch(idx, device)
    heads = torch.tensor([head_of[int(t)] for t in split.tasks[idx]], device=device)
    logits = model(x).gather(1, heads[:, None]).squeeze(1)
    y = split.labels[idx].to(device=device, dtype=torch.float32)
    return nn.functional.binary_cross_entropy_with_logits(logits, y)


class Replay(Strategy):
    """CBRS replay (see module docstring); each sample offered once, when first used."""

    def __init__(self, trainer, model, head_of, capacity: int | None = None):
        super().__init__(trainer, model, head_of)
        cap = self.cfg.buffer if capacity is None else capacity
        self.buffer = ClassBalancedReservoir(cap, seed=trainer.seed) if cap else None
        self.offered: set[int] = set()

    def begin_task(self, task):
        super().begin_task(task)
        self.offered = set()

    def extra_loss(self, idx, x, out):
        if self.buffer is None or self.cfg.replay_weight <= 0 or not len(self.buffer):
            return None, 0
        ridx = torch.tensor(self.buffer.sample(self.cfg.batch), dtype=torch.int64)
        return self.cfg.replay_weight * self._bce(ridx), len(ridx)

    def observe(self, idx, out):
        if self.buffer is None:
            return
        for i in idx.tolist():
            if i not in self.offered:
                self.offered.add(i)
                self.buffer.add(i, (self.task, int(self.split.labels[i])))


class EWC(Strategy):
    """EWC as Kirkpatrick et al. (2017): one anchor θ*_t and one diagonal empirical Fisher F_t
    per finished task t, ``L = L_task + Σ_t (λ/2) Σ_i F_{t,i} (θ_i − θ*_{t,i})²``."""

    def __init__(self, trainer, model, head_of):
        super().__init__(trainer, model, head_of)
        self.anchors: list[tuple[list[torch.Tensor], list[torch.Tensor]]] = []  # (F_t, θ*_t)

    def penalty(self) -> torch.Tensor:
        """Σ_t (λ/2) Σ_i F_{t,i} (θ_i − θ*_{t,i})² (0 before the first task ends)."""
        pen = torch.zeros((), device=self.dev)
        for fisher, star in self.anchors:
            pen = pen + sum((f * (p - s) ** 2).sum()
                            for p, f, s in zip(self.params(), fisher, star))
        return 0.5 * self.cfg.ewc_lambda * pen

    def extra_loss(self, idx, x, out):
        return (self.penalty(), 0) if self.anchors else (None, 0)

    def empirical_fisher(self, task: int) -> list[torch.Tensor]:
        """Mean squared per-sample gradient of the BCE of the true label (model in eval
        mode) over up to ``fisher_samples`` supervised training samples of ``task``."""
        sup = self.split.supervised_indices(task)
        g = torch.Generator().manual_seed(self.tr.seed + 7919 * (task + 1))
        sup = sup[torch.randperm(len(sup), generator=g)][: self.cfg.fisher_samples]
        params = self.params()
        fisher = [torch.zeros_like(p) for p in params]
        was = self.model.training
        self.model.eval()
        for i in sup.tolist():
            self.model.zero_grad(set_to_none=True)
            self._bce(torch.tensor([i])).backward()
            for f, p in zip(fisher, params):
                if p.grad is not None:
                    f += p.grad.detach() ** 2
        self.model.zero_grad(set_to_none=True)
        self.model.train(was)
        return [f / max(len(sup), 1) for f in fisher]

    def end_task(self, task):
        super().end_task(task)
        self.anchors.append((self.empirical_fisher(task),
                             [p.detach().clone() for p in self.params()]))


class OnlineEWC(EWC):
    """Online EWC (Schwarz et al. 2018): one anchor θ* (the parameters at the end of the
    latest task) and one Fisher, ``F ← γ F + F_t`` at the end of each task (γ =
    ``ewc_gamma``); ``L = L_task + (λ/2) Σ_i γ F_i (θ_i − θ*_i)²``: the compress phase's
    ``‖θ − θ*_{k−1}‖²_{γF*_{k−1}}``, the running Fisher scaled by γ in the penalty (so after
    one task, too, the penalty is γ times EWC's), as van de Ven et al.'s code has it."""

    def penalty(self) -> torch.Tensor:
        """(λ/2) Σ_i γ F_i (θ_i − θ*_i)² (0 before the first task ends)."""
        return float(self.cfg.ewc_gamma) * super().penalty()

    def end_task(self, task):
        Strategy.end_task(self, task)
        fisher = self.empirical_fisher(task)
        if self.anchors:
            g = float(self.cfg.ewc_gamma)
            fisher = [g * a + b for a, b in zip(self.anchors[0][0], fisher)]
        self.anchors = [(fisher, [p.detach().clone() for p in self.params()])]


def bernoulli_kd(new_logits, old_logits, temperature: float) -> torch.Tensor:
    """T² · mean KL(σ(old/T) ‖ σ(new/T)) over the entries (0 when they agree), in log-space."""
    t = temperature
    ls = nn.functional.logsigmoid
    p = torch.sigmoid(old_logits / t)
    kl = (p * (ls(old_logits / t) - ls(new_logits / t))
          + (1 - p) * (ls(-old_logits / t) - ls(-new_logits / t)))
    return t * t * kl.mean()


class LwF(Strategy):
    def __init__(self, trainer, model, head_of):
        super().__init__(trainer, model, head_of)
        self.old: nn.Module | None = None

    def extra_loss(self, idx, x, out):
        if self.old is None:
            return None, 0
        heads = torch.tensor([self.head_of[t] for t in self.learned], device=out.device)
        with torch.no_grad():
            old = self.old(x)[:, heads]
        return self.cfg.lwf_lambda * bernoulli_kd(out[:, heads], old,
                                                  self.cfg.lwf_temperature), 0

    def end_task(self, task):
        super().end_task(task)
        self.old = copy.deepcopy(self.model).eval()
        for p in self.old.parameters():
            p.requires_grad_(False)


class TaskMemories:
    """A-GEM's episodic memory as the paper keeps it (Chaudhry et al. 2019 §4): one memory M_k
    of at most ``slots`` items per finished task k, written once when k ends and kept fixed;
    the reference batch is drawn from their union ``items``."""

    def __init__(self, slots: int):
        self.slots = int(slots)
        self.memories: dict = {}            # task -> its stored items

    def __len__(self) -> int:
        return sum(len(m) for m in self.memories.values())

    @property
    def items(self) -> list:
        """∪_k M_k, in the order the tasks ended."""
        return [i for m in self.memories.values() for i in m]

    def add_task(self, task, items) -> None:
        self.memories[task] = list(items)[: self.slots]


class AGEM(Strategy):
    """A-GEM (Chaudhry et al. 2019) with an episodic memory of finished tasks only.

    ``agem_memory=balanced`` (the default): one memory, CBRS over the classes (task, label),
    ``buffer`` items (200 when ``buffer`` is 0), filled when a task ends: that task's
    supervised training samples are offered to it in an order drawn from the strategy's own
    generator. ``agem_memory=per-task`` (the paper's): each finished task keeps ``buffer //
    T`` of its supervised training samples (at least 1; T the tasks of the run), drawn
    uniformly with the same generator (:class:`TaskMemories`). While the first task is
    trained the memory is empty and nothing is projected; afterwards each step draws
    ``agem_ref_batch`` memory items (all of them while it holds fewer) with the same
    generator, and the reference gradient is computed with the model in eval mode, under a
    forked global RNG (seeded from that generator), then the model is put back in the mode it
    was in: the training stream's random numbers and BatchNorm statistics are those of
    fine-tuning, so on a single task A-GEM gives exactly ``naive``'s numbers.
    """

    def __init__(self, trainer, model, head_of):
        super().__init__(trainer, model, head_of)
        cap = self.cfg.buffer or STRATEGY_HPARAMS["memory_default"]
        self.per_task = self.cfg.agem_memory == "per-task"
        if self.per_task:
            self.buffer = TaskMemories(max(1, cap // max(len(head_of), 1)))
        else:
            self.buffer = ClassBalancedReservoir(cap, seed=trainer.seed)
        self.gen = torch.Generator().manual_seed((trainer.seed + 0xA6E) % (2 ** 63))
        self.dots: list[tuple[float, float]] = []   # (gᵀg_ref, g̃ᵀg_ref) per reference step

    def end_task(self, task):
        super().end_task(task)
        sup = self.split.supervised_indices(task)
        order = sup[torch.randperm(len(sup), generator=self.gen)].tolist()
        if self.per_task:
            self.buffer.add_task(task, order)
            return
        for i in order:
            self.buffer.add(i, (task, int(self.split.labels[i])))

    def reference_batch(self) -> torch.Tensor:
        """``agem_ref_batch`` memory items drawn uniformly without replacement."""
        items = self.buffer.items
        k = min(int(self.cfg.agem_ref_batch), len(items))
        pick = torch.randperm(len(items), generator=self.gen)[:k]
        return torch.tensor([items[int(i)] for i in pick], dtype=torch.int64)

    def backward(self, loss):
        loss.backward()
        if not len(self.buffer):
            return
        params = self.params()
        g = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten()
                       for p in params])
        self.model.zero_grad(set_to_none=True)
        ridx = self.reference_batch()
        devices = [torch.device(self.dev)] if str(self.dev).startswith("cuda") else []
        seed = int(torch.randint(2 ** 62, (1,), generator=self.gen))
        was = self.model.training
        self.model.eval()
        try:
            with torch.random.fork_rng(devices=devices):
                torch.manual_seed(seed)
                self._bce(ridx).backward()
        finally:
            self.model.train(was)
        g_ref = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten()
                           for p in params])
        new = project_agem(g, g_ref)
        self.dots.append((float(torch.dot(g, g_ref)), float(torch.dot(new, g_ref))))
        k = 0
        for p in params:
            n = p.numel()
            p.grad = new[k:k + n].view_as(p).clone()
            k += n
        self.tr.train_samples += len(ridx)


class DER(Strategy):
    """DER (``beta`` 0) and DER++ (``beta`` > 0)."""

    def __init__(self, trainer, model, head_of, plus: bool = False):
        super().__init__(trainer, model, head_of)
        self.plus = plus
        self.buffer = Reservoir(self.cfg.buffer or STRATEGY_HPARAMS["memory_default"],
                                seed=trainer.seed)

    def extra_loss(self, idx, x, out):
        if not len(self.buffer):
            return None, 0
        items = self.buffer.sample(self.cfg.batch)
        bidx = torch.tensor([i for i, _ in items], dtype=torch.int64)
        z = torch.stack([zz for _, zz in items]).to(self.dev)
        f = self.model(self.split.batch(bidx, self.dev))
        loss = self.cfg.der_alpha * nn.functional.mse_loss(f, z)
        used = len(bidx)
        if self.plus:
            items2 = self.buffer.sample(self.cfg.batch)
            b2 = torch.tensor([i for i, _ in items2], dtype=torch.int64)
            loss = loss + self.cfg.der_beta * self._bce(b2)
            used += len(b2)
        return loss, used

    def observe(self, idx, out):
        for i, z in zip(idx.tolist(), out.float().cpu()):
            self.buffer.add((i, z.clone()))


def make_strategy(name: str, trainer, model, head_of) -> Strategy:
    return {"naive": Strategy, "replay": Replay, "ewc": EWC, "ewc-online": OnlineEWC,
            "lwf": LwF, "agem": AGEM,
            "der": DER, "derpp": lambda *a: DER(*a, plus=True)}[name](trainer, model, head_of)
