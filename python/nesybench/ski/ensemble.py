"""Training many small networks as one: stacked parameters, batched matmuls, batched Adam.

A *member* is one repetition (and, when a cell groups them, one degradation level): its own
initial weights, its own training set (rows of a shared or per-member matrix, own labels),
its own shuffling. Every parameter tensor has the members as its leading dimension
``E``; a dense layer is ``torch.baddbmm(b[:, None], x [E, B, in], W [E, in, out])``.

Each optimiser step takes the next mini-batch (size ``batch_size``, the last one of an
epoch smaller) of every member that still has one; members whose epoch is over (smaller
training sets) are left out of that step entirely: their parameters, Adam moments and step
counts do not move, so every member follows exactly the trajectory it would follow if it
were trained alone (:func:`train` with one member gives the same numbers up to
floating-point summation order; ``tests/test_ski_ensemble.py`` checks it).

Adam with Keras's defaults (the paper's set-up): lr 1e-3, β = (0.9, 0.999), ε = 1e-7; the
loss of a member is the mean cross-entropy over its mini-batch (+ the injector's penalty).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class TrainConfig:
    epochs: int = 100
    batch_size: int = 32
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-7


@dataclass
class Members:
    """Training data of ``E`` members.

    X     float [S, N, D], S = 1 (shared) or E (one matrix per member, e.g. noise)
    y     long [T, N], T = 1 or E (e.g. flipped labels)
    rows  one LongTensor per member: the rows of X/y it trains on (e.g. after a drop)
    """

    X: torch.Tensor
    y: torch.Tensor
    rows: list[torch.Tensor]

    @property
    def size(self) -> int:
        return len(self.rows)

    def select(self, members: list[int]) -> "Members":
        """The sub-ensemble of the given members (for one-at-a-time training)."""
        X = self.X if self.X.shape[0] == 1 else self.X[members]
        y = self.y if self.y.shape[0] == 1 else self.y[members]
        return Members(X, y, [self.rows[i] for i in members])


def glorot(gen: torch.Generator, fan_in: int, fan_out: int) -> torch.Tensor:
    """Keras's default initialiser: U(±sqrt(6 / (fan_in + fan_out))), shape [fan_in, fan_out]."""
    a = math.sqrt(6.0 / (fan_in + fan_out))
    return (torch.rand(fan_in, fan_out, generator=gen) * 2.0 - 1.0) * a


def dense(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-member affine map: x [E, B, in], W [E, in, out], b [E, out] -> [E, B, out]."""
    return torch.baddbmm(b.unsqueeze(1), x, W)


def _gather(t: torch.Tensor, members: torch.Tensor | None, idx: torch.Tensor) -> torch.Tensor:
    """Rows ``idx [A, B]`` of each member's matrix ``t [S, N, ...]`` (S = 1: shared)."""
    A, B = idx.shape
    if t.shape[0] == 1:
        out = torch.index_select(t[0], 0, idx.reshape(-1))
    else:
        sel = members if members is not None else torch.arange(t.shape[0])
        flat = (sel.unsqueeze(1) * t.shape[1] + idx).reshape(-1)
        out = torch.index_select(t.reshape(-1, *t.shape[2:]), 0, flat)
    return out.view(A, B, *t.shape[2:])


def _unflatten(flat: torch.Tensor, shapes) -> list[torch.Tensor]:
    out, off = [], 0
    for shape in shapes:
        n = 1
        for d in shape:
            n *= d
        out.append(flat[:, off:off + n].view(flat.shape[0], *shape))
        off += n
    return out


def train(model, params: list[torch.Tensor], data: Members, cfg: TrainConfig,
          order_seeds: list[int], progress=None) -> list[torch.Tensor]:
    """Train ``params`` (leading dim E) of ``model`` on ``data`` in place; returns them.

    ``model`` gives ``forward(params, x) -> logits [E, B, K]`` and optionally
    ``aux(X [S, N, D]) -> [S, N, A] | None`` (per-sample constants, e.g. rule truths) and
    ``penalty(logits, aux_batch) -> [E, B]`` added to each sample's loss.
    """
    E = data.size
    B = cfg.batch_size
    gens = [torch.Generator().manual_seed(int(s) % (2**63)) for s in order_seeds]
    n = torch.tensor([len(r) for r in data.rows])
    nb = (n + B - 1) // B
    nb_max = int(nb.max()) if E else 0
    aux = model.aux(data.X) if hasattr(model, "aux") else None
    b1, b2 = cfg.betas
    # all parameters of a member live in one row of a flat [E, P] leaf: one gradient and
    # a handful of Adam operations per step, whatever the number of layers
    shapes = [tuple(p.shape[1:]) for p in params]
    flat = torch.cat([p.detach().reshape(E, -1) for p in params], dim=1).requires_grad_(True)
    m = torch.zeros_like(flat)
    v = torch.zeros_like(flat)
    t = torch.zeros(E, 1)
    # members that are still in their epoch at batch b: precomputed per distinct set
    active_at = []
    for b in range(nb_max):
        act = nb > b
        active_at.append(None if bool(act.all()) else act.nonzero().squeeze(1))
    for _epoch in range(cfg.epochs):
        idx = torch.zeros(E, nb_max * B, dtype=torch.long)
        mask = torch.zeros(E, nb_max * B)
        for e in range(E):
            k = len(data.rows[e])
            idx[e, :k] = data.rows[e][torch.randperm(k, generator=gens[e])]
            mask[e, :k] = 1.0
        idx = idx.view(E, nb_max, B)
        mask = mask.view(E, nb_max, B)
        for b in range(nb_max):
            ai = active_at[b]
            ib = idx[:, b] if ai is None else idx[ai, b]
            mb = mask[:, b] if ai is None else mask[ai, b]
            xs = _gather(data.X, ai, ib)
            ys = _gather(data.y, ai, ib)
            sub = _unflatten(flat if ai is None else flat[ai], shapes)
            logits = model.forward(sub, xs)
            ce = F.cross_entropy(logits.flatten(0, 1), ys.flatten(), reduction="none")
            per = ce.view_as(mb)
            if aux is not None:
                per = per + model.penalty(logits, _gather(aux, ai, ib))
            loss = ((per * mb).sum(1) / mb.sum(1)).sum()
            (g,) = torch.autograd.grad(loss, flat)
            with torch.no_grad():
                if ai is None:
                    t += 1.0
                    m.mul_(b1).add_(g, alpha=1.0 - b1)
                    v.mul_(b2).addcmul_(g, g, value=1.0 - b2)
                    step = (m / (1.0 - b1 ** t)) / ((v / (1.0 - b2 ** t)).sqrt_().add_(cfg.eps))
                    flat.sub_(step, alpha=cfg.lr)
                else:
                    a = torch.zeros(E, 1).index_fill_(0, ai, 1.0)
                    t += a
                    m.mul_(1.0 - a * (1.0 - b1)).add_(a * (1.0 - b1) * g)
                    v.mul_(1.0 - a * (1.0 - b2)).add_(a * (1.0 - b2) * g * g)
                    tc = t.clamp(min=1.0)
                    step = (m / (1.0 - b1 ** tc)) / ((v / (1.0 - b2 ** tc)).sqrt_().add_(cfg.eps))
                    flat.sub_(a * step * cfg.lr)
        if progress is not None:
            progress(1)
    out = [p.clone() for p in _unflatten(flat.detach(), shapes)]
    for p, new in zip(params, out):
        p.data = new
    return params


@torch.no_grad()
def predict(model, params: list[torch.Tensor], X: torch.Tensor, chunk: int = 8192):
    """Class index predicted by every member for every row of ``X [N, D]``: [E, N]."""
    E = params[0].shape[0]
    out = []
    for s in range(0, X.shape[0], chunk):
        xs = X[s:s + chunk].unsqueeze(0).expand(E, -1, -1)
        out.append(model.forward(params, xs).argmax(-1))
    return torch.cat(out, dim=1)
