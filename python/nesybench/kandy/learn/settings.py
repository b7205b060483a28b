"""The paper's four learning settings (KANDY §4, supp. §2) over a decoded curriculum.

* ``independent``: one fresh model (one head) per task, trained ``epochs`` on that task only.
* ``joint``: one model, one head per task; each epoch is the union of every task's
  class-balanced epoch, shuffled (mini-batches mix tasks; each sample's loss uses its task's
  head).
* ``task_incremental``: the joint model sees the tasks one after the other, ``epochs`` each.
* ``continual_online``: the same with a single pass (``epochs`` is forced to 1; each
  supervised sample once, in the order of ``annotations.csv`` — the curriculum's order, as
  the reference implementation streams it — or in random order with ``shuffle``; no class
  re-balancing of the stream: the replay buffer is what balances).

The continual settings replay experiences from a class-balanced reservoir
(:class:`.replay.ClassBalancedReservoir`, classes = (task, label), ``buffer`` items); each
supervised training sample is offered to it once, the first time it is used. The loss of a
step is (supp. §2)::

    1/b Σ_{x∈B} BCE(f_task(x)(x), y) + λ_r · 1/b Σ_{x∈R̃} BCE(f_task(x)(x), y)

with ``R̃`` a mini-batch of ``b`` items drawn from the buffer (fewer while it holds fewer).

Training batches are drawn only from **supervised** samples (option *ignore*: unsupervised
samples contribute no loss; there is no unsupervised objective). Each task's epoch is class
balanced (:func:`.data.balanced_order`). A task without any supervised training sample is not
trained (its head stays as initialised) and is counted in ``untrained_tasks``; nothing crashes
for γ < 1.

Evaluation: after each time step ``z`` (continual) or once at the end (other settings), every
task's decision threshold τ_j is tuned on the supervised samples of its validation split
(:func:`.metrics.tune_threshold`, maximising balanced accuracy; with ``thresholds="seen"``
τ_j = 0.5 for tasks not yet trained), then the test split gives ``A[z, j]`` (balanced) and
``A_micro[z, j]`` (plain).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from ...errors import NesyError
from .augment import augment, parse_augment
from .data import KandyData, SplitTensors, balanced_order
from .metrics import balanced_accuracy, over_time, plain_accuracy, tune_threshold
from .models import MODELS, build_model
from .strategies import AGEM_MEMORIES, STRATEGIES, STRATEGY_HPARAMS, make_strategy

SETTINGS = ("independent", "joint", "task_incremental", "continual_online")
CONTINUAL = ("task_incremental", "continual_online")
OPTIMS = ("sgd", "adam")

#: Optimal hyper-parameters of supp. Table 4 (neural models): (lr, optimiser, batch, epochs,
#: buffer |R|) per curriculum (Easy, Hard, Hard-Large: the columns of the table), model and
#: setting; λ_r = 1 whenever |R| > 0. ``vit_h`` is the paper's VIT (H) row. The ViTs trained
#: from scratch (``vit``, ``vit_b16``) have no row in the paper: they take ResNet-50's (the
#: paper's other deep network trained from scratch), filled in by :func:`_from_scratch_vits`.
PAPER_HPARAMS: dict[str, dict[tuple[str, str], tuple]] = {
    "easy": {
        ("mlp", "independent"): (1e-2, "sgd", 1, 1, 0),
        ("cnn", "independent"): (1e-2, "sgd", 1, 10, 0),
        ("resnet50", "independent"): (1e-4, "adam", 16, 10, 0),
        ("resnet50_h", "independent"): (1e-2, "adam", 16, 10, 0),
        ("vit_h", "independent"): (1e-2, "adam", 16, 10, 0),
        ("mlp", "joint"): (1e-2, "sgd", 1, 1, 0),
        ("cnn", "joint"): (1e-4, "adam", 1, 10, 0),
        ("resnet50", "joint"): (1e-2, "adam", 16, 10, 0),
        ("resnet50_h", "joint"): (1e-2, "adam", 16, 10, 0),
        ("vit_h", "joint"): (1e-2, "adam", 16, 10, 0),
        ("mlp", "task_incremental"): (1e-2, "sgd", 1, 1, 0),
        ("cnn", "task_incremental"): (1e-4, "adam", 1, 10, 200),
        ("resnet50", "task_incremental"): (1e-2, "adam", 16, 10, 200),
        ("resnet50_h", "task_incremental"): (1e-2, "adam", 16, 10, 200),
        ("vit_h", "task_incremental"): (1e-2, "adam", 16, 10, 200),
        ("mlp", "continual_online"): (1e-2, "sgd", 1, 1, 0),
        ("cnn", "continual_online"): (1e-4, "adam", 1, 1, 200),
        ("resnet50", "continual_online"): (1e-4, "adam", 16, 1, 200),
        ("resnet50_h", "continual_online"): (1e-2, "adam", 16, 1, 200),
        ("vit_h", "continual_online"): (1e-2, "adam", 16, 1, 200),
    },
    "hard": {
        ("mlp", "independent"): (1e-4, "adam", 16, 1, 0),
        ("cnn", "independent"): (1e-2, "sgd", 16, 10, 0),
        ("resnet50", "independent"): (1e-4, "adam", 16, 10, 0),
        ("resnet50_h", "independent"): (1e-2, "adam", 16, 10, 0),
        ("vit_h", "independent"): (1e-4, "adam", 1, 10, 0),
        ("mlp", "joint"): (1e-4, "sgd", 1, 1, 0),
        ("cnn", "joint"): (1e-2, "sgd", 16, 10, 0),
        ("resnet50", "joint"): (1e-4, "adam", 1, 10, 0),
        ("resnet50_h", "joint"): (1e-2, "adam", 16, 10, 0),
        ("vit_h", "joint"): (1e-2, "sgd", 1, 10, 0),
        ("mlp", "task_incremental"): (1e-2, "sgd", 1, 1, 0),
        ("cnn", "task_incremental"): (1e-4, "adam", 1, 1, 200),
        ("resnet50", "task_incremental"): (1e-4, "adam", 16, 10, 200),
        ("resnet50_h", "task_incremental"): (1e-2, "adam", 16, 1, 200),
        ("vit_h", "task_incremental"): (1e-4, "adam", 1, 10, 200),
        ("mlp", "continual_online"): (1e-2, "sgd", 1, 1, 200),
        ("cnn", "continual_online"): (1e-4, "adam", 1, 1, 200),
        ("resnet50", "continual_online"): (1e-4, "adam", 16, 1, 200),
        ("resnet50_h", "continual_online"): (1e-2, "adam", 16, 1, 200),
        ("vit_h", "continual_online"): (1e-2, "sgd", 1, 1, 0),
    },
    "hard_large": {
        ("mlp", "independent"): (1e-4, "adam", 16, 10, 0),
        ("cnn", "independent"): (1e-4, "adam", 16, 10, 0),
        ("resnet50", "independent"): (1e-4, "adam", 16, 10, 0),
        ("resnet50_h", "independent"): (1e-2, "adam", 16, 10, 0),
        ("vit_h", "independent"): (1e-2, "sgd", 1, 10, 0),
        ("mlp", "joint"): (1e-4, "adam", 1, 10, 0),
        ("cnn", "joint"): (1e-4, "adam", 1, 10, 0),
        ("resnet50", "joint"): (1e-4, "adam", 16, 10, 0),
        ("resnet50_h", "joint"): (1e-2, "adam", 16, 10, 0),
        ("vit_h", "joint"): (1e-2, "adam", 16, 10, 0),
        ("mlp", "task_incremental"): (1e-4, "adam", 1, 10, 0),
        ("cnn", "task_incremental"): (1e-2, "sgd", 16, 10, 200),
        ("resnet50", "task_incremental"): (1e-2, "adam", 16, 10, 200),
        ("resnet50_h", "task_incremental"): (1e-2, "adam", 16, 10, 200),
        ("vit_h", "task_incremental"): (1e-2, "sgd", 1, 10, 0),
        ("mlp", "continual_online"): (1e-4, "adam", 16, 1, 0),
        ("cnn", "continual_online"): (1e-4, "adam", 1, 1, 200),
        ("resnet50", "continual_online"): (1e-4, "adam", 16, 1, 200),
        ("resnet50_h", "continual_online"): (1e-2, "adam", 16, 1, 200),
        ("vit_h", "continual_online"): (1e-2, "adam", 16, 1, 200),
    },
}


def _from_scratch_vits() -> None:
    for table in PAPER_HPARAMS.values():
        for (m, st), row in list(table.items()):
            if m == "resnet50":
                table[("vit", st)] = table[("vit_b16", st)] = row


_from_scratch_vits()
#: ``--hparams`` names of the columns
HPARAM_TABLES = tuple(PAPER_HPARAMS)


def normalise_hparams(name: str) -> str:
    """``hard-large``, ``Hard_Large`` → ``hard_large``; unknown → NesyError."""
    h = str(name).strip().lower().replace("-", "_")
    if h not in PAPER_HPARAMS:
        raise NesyError(f"unknown hyper-parameter table {name!r} (easy, hard or hard-large)",
                        field="hparams")
    return h


def normalise_setting(name: str) -> str:
    """``TASK-INCREMENTAL``, ``task-incremental`` → ``task_incremental``; unknown → NesyError."""
    s = str(name).strip().lower().replace("-", "_").replace(" ", "_")
    if s not in SETTINGS:
        raise NesyError(f"unknown setting {name!r} (expected one of {', '.join(SETTINGS)})",
                        field="setting")
    return s


@dataclass
class TrainConfig:
    """Everything that defines one training run (recorded with its results).

    lr: learning rate; optim: ``sgd`` | ``adam``; batch: mini-batch size b; epochs: per task
    (independent, task_incremental) or overall (joint); buffer: replay memory |R| (continual
    settings only); replay_weight: λ_r; device: ``cpu`` | ``cuda``; weights: ResNet-50
    state_dict for ``resnet50_h``; eval_batch: inference batch size; thresholds: ``all`` tunes
    τ_j of every task at every time step on its validation split (as the reference code does,
    which is what gives forward transfer a meaning), ``seen`` only those of tasks trained so
    far (0.5 for the others: no peeking at future tasks' labels); shuffle: CONTINUAL-ONLINE
    streams each task's samples in file order unless true (then in random order); augment:
    ``""`` (none, the default) or a comma list of ``crop``, ``flip``, ``jitter``
    (:mod:`.augment`, applied to each training batch of the current task); the strategies'
    hyper-parameters (:data:`.strategies.STRATEGY_HPARAMS`) and agem_memory: A-GEM's
    episodic memory, ``balanced`` (one class-balanced reservoir, the default) or
    ``per-task`` (one fixed memory per finished task, the paper's; :class:`.strategies.AGEM`).
    """

    model: str = "cnn"
    setting: str = "joint"
    lr: float = 1e-4
    optim: str = "adam"
    batch: int = 1
    epochs: int = 10
    buffer: int = 0
    replay_weight: float = 1.0
    dropout: float = 0.5
    device: str = "cpu"
    weights: str | None = None
    eval_batch: int = 256
    hparams: str = "easy"
    thresholds: str = "all"
    shuffle: bool = False
    strategy: str = "replay"
    ewc_lambda: float = STRATEGY_HPARAMS["ewc_lambda"]
    ewc_gamma: float = STRATEGY_HPARAMS["ewc_gamma"]
    fisher_samples: int = STRATEGY_HPARAMS["fisher_samples"]
    lwf_lambda: float = STRATEGY_HPARAMS["lwf_lambda"]
    lwf_temperature: float = STRATEGY_HPARAMS["lwf_temperature"]
    der_alpha: float = STRATEGY_HPARAMS["der_alpha"]
    der_beta: float = STRATEGY_HPARAMS["der_beta"]
    agem_ref_batch: int = STRATEGY_HPARAMS["agem_ref_batch"]
    agem_memory: str = "balanced"
    augment: str = ""

    def validate(self) -> "TrainConfig":
        if self.model not in MODELS:
            raise NesyError(f"unknown model {self.model!r} (expected one of "
                            f"{', '.join(MODELS)})", field="model")
        self.setting = normalise_setting(self.setting)
        if self.optim not in OPTIMS:
            raise NesyError(f"unknown optimiser {self.optim!r} (expected sgd or adam)",
                            field="optim")
        for name in ("batch", "epochs", "eval_batch"):
            if int(getattr(self, name)) < 1:
                raise NesyError(f"{name} must be >= 1", field=name)
        if self.thresholds not in ("all", "seen"):
            raise NesyError(f"thresholds must be 'all' or 'seen', got {self.thresholds!r}",
                            field="thresholds")
        if self.buffer < 0 or self.replay_weight < 0 or not self.lr > 0:
            raise NesyError("buffer and replay_weight must be >= 0 and lr > 0", field="buffer")
        if self.strategy not in STRATEGIES:
            raise NesyError(f"unknown strategy {self.strategy!r} (expected one of "
                            f"{', '.join(STRATEGIES)})", field="strategy")
        if (min(self.ewc_lambda, self.lwf_lambda, self.der_alpha, self.der_beta) < 0
                or not self.lwf_temperature > 0 or int(self.fisher_samples) < 1):
            raise NesyError("strategy weights must be >= 0, lwf_temperature > 0 and "
                            "fisher_samples >= 1", field="strategy")
        if not 0 <= self.ewc_gamma <= 1:
            raise NesyError(f"ewc_gamma must be in [0, 1], got {self.ewc_gamma}",
                            field="ewc_gamma")
        if int(self.agem_ref_batch) < 1:
            raise NesyError("agem_ref_batch must be >= 1", field="agem_ref_batch")
        if self.agem_memory not in AGEM_MEMORIES:
            raise NesyError(f"agem_memory must be {' or '.join(AGEM_MEMORIES)}, got "
                            f"{self.agem_memory!r}", field="agem_memory")
        self.augment = parse_augment(self.augment)
        if self.setting == "continual_online":
            self.epochs = 1
        if self.setting not in CONTINUAL:
            self.buffer = 0
        if self.device not in ("cpu", "cuda") and not str(self.device).startswith("cuda:"):
            raise NesyError(f"unknown device {self.device!r} (cpu or cuda)", field="device")
        if str(self.device).startswith("cuda") and not torch.cuda.is_available():
            raise NesyError("--device cuda: no CUDA device is available to this torch",
                            field="device")
        return self


def resolve_config(model: str, setting: str, *, hparams: str = "easy", **overrides) -> TrainConfig:
    """The paper's optimal hyper-parameters for (``hparams`` curriculum, model, setting),
    then ``overrides`` (``None`` values are ignored)."""
    setting = normalise_setting(setting)
    hparams = normalise_hparams(hparams)
    if model not in MODELS:
        raise NesyError(f"unknown model {model!r} (expected one of {', '.join(MODELS)})",
                        field="model")
    lr, optim, batch, epochs, buffer = PAPER_HPARAMS[hparams][(model, setting)]
    cfg = TrainConfig(model=model, setting=setting, lr=lr, optim=optim, batch=batch,
                      epochs=epochs, buffer=buffer, hparams=hparams)
    for k, v in overrides.items():
        if v is not None:
            if not hasattr(cfg, k):
                raise NesyError(f"unknown training option {k!r}", field=k)
            setattr(cfg, k, v)
    return cfg.validate()


@dataclass
class TrainResult:
    """Outcome of :func:`train`.

    A, A_micro, thresholds: float [T, N] (T = N time steps for the continual settings, 1
    otherwise; row ``r`` is the model at time ``times[r]``); losses: mean training loss per
    logged step (``loss_steps``); train/eval sample counts and seconds for throughput.
    """

    config: dict
    task_ids: list[int]
    A: np.ndarray
    A_micro: np.ndarray
    thresholds: np.ndarray
    times: list[int]
    losses: list[float] = field(default_factory=list)
    loss_steps: list[int] = field(default_factory=list)
    train_samples: int = 0
    train_seconds: float = 0.0
    eval_samples: int = 0
    eval_seconds: float = 0.0
    untrained_tasks: list[int] = field(default_factory=list)

    @property
    def continual(self) -> bool:
        return self.config["setting"] in CONTINUAL

    def final_metrics(self) -> dict[str, float]:
        """avg_acc (balanced), avg_acc_micro, per-task acc at the end, and for continual
        settings forgetting / bwt / fwt at the last time."""
        n = len(self.task_ids)
        out = {"avg_acc": float(np.mean(self.A[-1])),
               "avg_acc_micro": float(np.mean(self.A_micro[-1]))}
        for j, t in enumerate(self.task_ids):
            out[f"acc_t{t:02d}"] = float(self.A[-1, j])
        if self.continual and n > 1:
            m = over_time(self.A)
            for k in ("forgetting", "bwt", "bwt_raw", "fwt"):
                out[k] = m[k][-1]
        out["train_samples_per_s"] = self.train_samples / max(self.train_seconds, 1e-9)
        out["eval_samples_per_s"] = self.eval_samples / max(self.eval_seconds, 1e-9)
        out["train_seconds"] = self.train_seconds
        out["untrained_tasks"] = float(len(self.untrained_tasks))
        return out

    def to_pandas(self):
        """The accuracy matrices as a long ``pandas.DataFrame``: one row per (time, task)
        with ``time`` (index of the model in ``times``), ``trained_up_to`` (``times[r]``),
        ``task``, ``acc`` (balanced), ``acc_micro`` and ``threshold``."""
        import pandas as pd  # noqa: PLC0415

        rows = [{"time": r, "trained_up_to": self.times[r], "task": t,
                 "acc": float(self.A[r, j]), "acc_micro": float(self.A_micro[r, j]),
                 "threshold": float(self.thresholds[r, j])}
                for r in range(self.A.shape[0]) for j, t in enumerate(self.task_ids)]
        return pd.DataFrame(rows, columns=["time", "trained_up_to", "task", "acc",
                                           "acc_micro", "threshold"])

    def to_json(self) -> dict:
        return {"config": self.config, "tasks": self.task_ids, "times": self.times,
                "A": self.A.tolist(), "A_micro": self.A_micro.tolist(),
                "thresholds": self.thresholds.tolist(), "losses": self.losses,
                "loss_steps": self.loss_steps, "untrained_tasks": self.untrained_tasks,
                "metrics_over_time": over_time(self.A) if self.continual else {}}


class _Logger:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, name, value, step=None):
        if self.fn is not None and value is not None and not (
                isinstance(value, float) and math.isnan(value)):
            self.fn(name, float(value), step)


def _optimizer(model: nn.Module, cfg: TrainConfig):
    """SGD or Adam over the trainable parameters; the fused implementation where torch has
    one for the device (on CPU, fused Adam's step is ~6x faster for the CNN's 26 M-parameter
    dense layer; same update rule)."""
    params = [p for p in model.parameters() if p.requires_grad]
    cls = torch.optim.SGD if cfg.optim == "sgd" else torch.optim.Adam
    try:
        return cls(params, lr=cfg.lr, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return cls(params, lr=cfg.lr)


@torch.no_grad()
def _scores(model, split: SplitTensors, task: int, head: int, device: str, bs: int):
    """Sigmoid scores, labels and supervised flags of one task's samples of a split."""
    idx = split.task_indices(task)
    out = []
    for k in range(0, len(idx), bs):
        b = idx[k:k + bs]
        out.append(torch.sigmoid(model(split.batch(b, device))[:, head]).float().cpu())
    s = torch.cat(out).numpy() if out else np.zeros(0)
    return s, split.labels[idx].numpy(), split.supervised[idx].numpy()


class _Trainer:
    def __init__(self, data: KandyData, cfg: TrainConfig, seed: int, progress: bool, log):
        self.data, self.cfg, self.seed = data, cfg, seed
        self.log = _Logger(log)
        self.gen = torch.Generator().manual_seed(seed % (2 ** 63))
        # augmentation draws from its own stream: runs without it are unchanged
        self.aug_gen = torch.Generator().manual_seed((seed + 0x5EED) % (2 ** 63))
        self.train_split = data.splits["train"]
        self.tasks = data.task_ids
        self.n = len(self.tasks)
        self.progress = progress
        self.train_samples = 0
        self.train_seconds = 0.0
        self.eval_samples = 0
        self.eval_seconds = 0.0
        self.losses: list[float] = []
        self.loss_steps: list[int] = []
        self.untrained: list[int] = []
        self.bar = None

    # -- batches -----------------------------------------------------------------------
    def task_epoch(self, task: int) -> torch.Tensor:
        """One class-balanced epoch (sample indices) of ``task``'s supervised samples; in
        ``continual_online`` a single pass: each supervised sample once, in file order (random
        order with ``shuffle``)."""
        sup = self.train_split.supervised_indices(task)
        if len(sup) == 0:
            return sup
        if self.cfg.setting == "continual_online":
            if not self.cfg.shuffle:
                return sup
            return sup[torch.randperm(len(sup), generator=self.gen)]
        return sup[balanced_order(self.train_split.labels[sup], self.gen)]

    def steps_per_epoch(self, task: int) -> int:
        sup = self.train_split.supervised_indices(task)
        if len(sup) == 0:
            return 0
        lab = self.train_split.labels[sup]
        npos = int(lab.sum())
        n = 2 * max(npos, len(lab) - npos) if 0 < npos < len(lab) else len(lab)
        if self.cfg.setting == "continual_online":
            n = len(lab)
        return -(-n // self.cfg.batch)

    def _bar(self, total: int, desc: str):
        if self.progress:
            from tqdm import tqdm  # noqa: PLC0415

            self.bar = tqdm(total=total, desc=desc, unit="step", leave=False)

    def _tick(self, loss: float | None = None):
        if self.bar is not None:
            self.bar.update(1)
            if loss is not None:
                self.bar.set_postfix(loss=f"{loss:.3f}", refresh=False)

    def _close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def run_epoch(self, model, opt, order: torch.Tensor, head_of, strategy=None) -> float:
        """One pass over ``order`` in mini-batches; returns the mean step loss. ``strategy``
        (continual settings, :mod:`.strategies`) adds its loss terms, may change the
        gradient, and sees each batch after the step."""
        cfg, split, dev = self.cfg, self.train_split, self.cfg.device
        model.train()
        total, steps = 0.0, 0
        t0 = time.perf_counter()
        for k in range(0, len(order), cfg.batch):
            idx = order[k:k + cfg.batch]
            x = split.batch(idx, dev)
            if cfg.augment:
                x = augment(x, cfg.augment, self.aug_gen)
            out = model(x)
            heads = torch.tensor([head_of[int(t)] for t in split.tasks[idx]], device=dev)
            y = split.labels[idx].to(device=dev, dtype=torch.float32)
            loss = nn.functional.binary_cross_entropy_with_logits(
                out.gather(1, heads[:, None]).squeeze(1), y)
            seen = len(idx)
            if strategy is not None:
                extra, used = strategy.extra_loss(idx, x, out)
                if extra is not None:
                    loss = loss + extra
                seen += used
            opt.zero_grad(set_to_none=True)
            if strategy is not None:
                strategy.backward(loss)
            else:
                loss.backward()
            opt.step()
            if strategy is not None:
                strategy.observe(idx, out.detach())
            lv = float(loss.detach())
            total += lv
            steps += 1
            self.train_samples += seen
            self._tick(lv)
        self.train_seconds += time.perf_counter() - t0
        return total / max(steps, 1)

    # -- evaluation ----------------------------------------------------------------------
    def eval_task(self, model: nn.Module, head: int, t: int, trained: bool):
        """(balanced acc, plain acc, τ) of task ``t`` on test, τ tuned on its val split."""
        t0 = time.perf_counter()
        model.eval()
        val, test = self.data.splits["val"], self.data.splits["test"]
        tau = 0.5
        if trained or self.cfg.thresholds == "all":
            s, y, sup = _scores(model, val, t, head, self.cfg.device, self.cfg.eval_batch)
            tau = tune_threshold(s[sup], y[sup])
            self.eval_samples += len(s)
        s, y, _ = _scores(model, test, t, head, self.cfg.device, self.cfg.eval_batch)
        self.eval_samples += len(s)
        self.eval_seconds += time.perf_counter() - t0
        return balanced_accuracy(s >= tau, y), plain_accuracy(s >= tau, y), tau

    def evaluate(self, models: dict[int, tuple[nn.Module, int]], trained: set[int]):
        """One row of A, A_micro and τ: ``models[task] = (model, head)``."""
        res = [self.eval_task(*models[t], t, t in trained) for t in self.tasks]
        return [r[0] for r in res], [r[1] for r in res], [r[2] for r in res]

    def record_loss(self, value: float):
        step = len(self.losses)
        self.losses.append(value)
        self.loss_steps.append(step)
        self.log("train_loss", value, step)

    def new_model(self, heads: int) -> nn.Module:
        c = self.cfg
        return build_model(c.model, size=self.data.size, heads=heads, weights=c.weights,
                           dropout=c.dropout).to(c.device)

    # -- settings ----------------------------------------------------------------------
    def independent(self):
        cfg = self.cfg
        models = {}
        trained = set()
        self._bar(sum(self.steps_per_epoch(t) for t in self.tasks) * cfg.epochs, "independent")
        for t in self.tasks:
            model = self.new_model(1)
            opt = _optimizer(model, cfg)
            if len(self.train_split.supervised_indices(t)) == 0:
                self.untrained.append(t)
            else:
                trained.add(t)
                for _ in range(cfg.epochs):
                    self.record_loss(self.run_epoch(model, opt, self.task_epoch(t), {t: 0}))
            # evaluate now and free the model (20 CNNs need not coexist)
            models[t] = self.eval_task(model, 0, t, t in trained)
            del model, opt
        self._close()
        A = np.array([[models[t][0] for t in self.tasks]])
        Am = np.array([[models[t][1] for t in self.tasks]])
        T = np.array([[models[t][2] for t in self.tasks]])
        return A, Am, T, [self.n - 1]

    def joint(self):
        cfg = self.cfg
        model = self.new_model(self.n)
        head_of = {t: j for j, t in enumerate(self.tasks)}
        opt = _optimizer(model, cfg)
        trained = {t for t in self.tasks if len(self.train_split.supervised_indices(t))}
        self.untrained = [t for t in self.tasks if t not in trained]
        self._bar(sum(self.steps_per_epoch(t) for t in self.tasks) * cfg.epochs, "joint")
        for _ in range(cfg.epochs):
            parts = [self.task_epoch(t) for t in self.tasks]
            order = torch.cat(parts)
            order = order[torch.randperm(len(order), generator=self.gen)]
            self.record_loss(self.run_epoch(model, opt, order, head_of))
        self._close()
        row, micro, taus = self.evaluate({t: (model, head_of[t]) for t in self.tasks}, trained)
        return np.array([row]), np.array([micro]), np.array([taus]), [self.n - 1]

    def continual(self):
        cfg = self.cfg
        model = self.new_model(self.n)
        head_of = {t: j for j, t in enumerate(self.tasks)}
        opt = _optimizer(model, cfg)
        strategy = make_strategy(cfg.strategy, self, model, head_of)
        buffer = getattr(strategy, "buffer", None)
        rows, micros, taus_all = [], [], []
        trained: set[int] = set()
        self._bar(sum(self.steps_per_epoch(t) for t in self.tasks) * cfg.epochs, cfg.setting)
        for z, t in enumerate(self.tasks):
            if len(self.train_split.supervised_indices(t)) == 0:
                self.untrained.append(t)
            else:
                trained.add(t)
                strategy.begin_task(t)
                for _ in range(cfg.epochs):
                    self.record_loss(self.run_epoch(model, opt, self.task_epoch(t), head_of,
                                                    strategy))
                strategy.end_task(t)
            row, micro, taus = self.evaluate({u: (model, head_of[u]) for u in self.tasks},
                                             trained)
            rows.append(row)
            micros.append(micro)
            taus_all.append(taus)
            A = np.array(rows)
            self.log("avg_acc", float(np.mean(row[: z + 1])), z)
            if buffer is not None:
                self.log("buffer_size", len(buffer), z)
            for j, u in enumerate(self.tasks):
                self.log(f"A_t{u:02d}", row[j], z)
            if z >= 1:
                m = over_time(np.vstack([A, np.zeros((self.n - len(rows), self.n))])[: z + 1])
                for k in ("forgetting", "bwt", "fwt"):
                    self.log(k, m[k][z], z)
        self._close()
        return np.array(rows), np.array(micros), np.array(taus_all), list(range(self.n))


def train(data: KandyData, cfg: TrainConfig, seed: int = 0, *, progress: bool = False,
          log=None) -> TrainResult:
    """Train ``cfg.model`` in ``cfg.setting`` on ``data`` and measure the accuracy matrix.

    ``log(name, value, step)`` receives the curves (``train_loss`` per epoch; for continual
    settings ``avg_acc``, ``forgetting``, ``bwt``, ``fwt`` and ``A_tNN`` per time step ``z``).
    Same seed, same numbers on CPU.
    """
    cfg.validate()
    torch.manual_seed(seed % (2 ** 63))
    tr = _Trainer(data, cfg, seed, progress, log)
    if cfg.setting == "independent":
        A, Am, T, times = tr.independent()
    elif cfg.setting == "joint":
        A, Am, T, times = tr.joint()
    else:
        A, Am, T, times = tr.continual()
    if cfg.setting not in CONTINUAL:
        for j, t in enumerate(tr.tasks):
            tr.log(f"A_t{t:02d}", A[-1, j], times[-1])
    conf = asdict(cfg)
    conf.update(size=data.size, original_size=data.original_size, seed=seed,
                supervision="ignore")
    return TrainResult(config=conf, task_ids=tr.tasks, A=A, A_micro=Am, thresholds=T,
                       times=times, losses=tr.losses, loss_steps=tr.loss_steps,
                       train_samples=tr.train_samples, train_seconds=tr.train_seconds,
                       eval_samples=tr.eval_samples, eval_seconds=tr.eval_seconds,
                       untrained_tasks=tr.untrained)
