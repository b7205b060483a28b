"""Training many small networks as one: stacked parameters, batched matmuls, batched Adam.

A *member* is one repetition (and, when a cell groups them, one degradation level): its own
initial weights, its own training set (rows of a shared or per-member matrix, own labels),
its own shuffling. Every parameter tensor has the members as its leading dimension
``E``; a dense layer is ``x [E, B, in] @ W [E, out, in]ᵀ + b`` (:func:`dense`).

Each optimiser step takes the next mini-batch (size ``batch_size``, the last one of an
epoch smaller) of every member that still has one; members whose epoch is over (smaller
training sets) are left out of that step entirely: their parameters, Adam moments and step
counts do not move, so every member follows exactly the trajectory it would follow if it
were trained alone (:func:`train` with one member gives the same numbers up to
floating-point summation order; ``tests/test_ski_ensemble.py`` checks it).

Adam with Keras's defaults (the paper's set-up): lr 1e-3, β = (0.9, 0.999), ε = 1e-7, in
PyTorch's formula (ε added to the bias-corrected √v̂; Keras adds it to √v, which differs only
where √v ≲ 1e-7) and PyTorch's fused single-pass kernel, so one step of a member is exactly
``torch.optim.Adam``'s (tested); the loss of a member is the mean cross-entropy over its
mini-batch (+ the injector's penalty).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.optim.adam import adam as adam_step


@dataclass
class TrainConfig:
    epochs: int = 100
    batch_size: int = 32
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-7
    #: "native" (kernel.c, see native.py) or "torch" (this module: the reference)
    engine: str = "native"
    #: early stopping: stop a member after this many epochs without a lower validation
    #: loss (``epochs`` is then the limit); None trains exactly ``epochs`` epochs
    patience: int | None = None
    #: share of each member's training rows held out to monitor (with ``patience``)
    val_fraction: float = 0.1


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
    """Keras's default initialiser: U(±sqrt(6 / (fan_in + fan_out))), shape [fan_out, fan_in]
    (a weight is stored output-major, like ``nn.Linear``'s; see :func:`dense`)."""
    a = math.sqrt(6.0 / (fan_in + fan_out))
    return ((torch.rand(fan_in, fan_out, generator=gen) * 2.0 - 1.0) * a).t().contiguous()


class _AddMatmulT(torch.autograd.Function):
    """``acc + h @ Wᵀ`` per member (``acc`` a bias ``[E, out]`` broadcast over the rows when
    ``bias``, else pre-activations ``[E, B, out]``), with a hand-written backward.

    Why: autograd's backward of ``bmm(h, Wᵀ)`` forms ``hᵀ @ g`` (a transposed read of the
    whole mini-batch) and hands back its transpose, a non-contiguous view; ``gᵀ @ h`` gives
    the output-major gradient directly, about twice as fast on this shape of problem (32
    rows, many members), in ``W``'s own layout, which the fused Adam kernel needs (it walks
    raw memory); and no gradient is formed for an input that does not need one.
    """

    @staticmethod
    def forward(ctx, h, W, acc, bias):
        ctx.save_for_backward(h, W)
        ctx.bias = bias
        return torch.baddbmm(acc.unsqueeze(1) if bias else acc, h, W.transpose(1, 2))

    @staticmethod
    def backward(ctx, g):
        h, W = ctx.saved_tensors
        need_h, need_w, need_acc, _ = ctx.needs_input_grad
        gh = torch.bmm(g, W) if need_h else None
        gw = torch.bmm(g.transpose(1, 2), h) if need_w else None
        gacc = (g.sum(1) if ctx.bias else g) if need_acc else None
        return gh, gw, gacc, None


def dense(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-member affine map: x [E, B, in], W [E, out, in], b [E, out] -> [E, B, out]."""
    return _AddMatmulT.apply(x, W, b, True)


def matmul_t(h: torch.Tensor, W: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
    """``acc + h @ Wᵀ`` per member (W [E, out, in]): a dense map without bias added to
    pre-activations computed elsewhere."""
    return _AddMatmulT.apply(h, W, acc, False)


def _gather(t: torch.Tensor, off: torch.Tensor, idx: torch.Tensor,
            out: torch.Tensor | None = None) -> torch.Tensor:
    """Rows ``idx [A, B]`` of each member's matrix ``t [S, N, ...]``: of the shared one when
    S = 1, else of member ``a``'s own at flat row ``off[a] + idx[a, b]``."""
    A, B = idx.shape
    flat = idx.reshape(-1) if t.shape[0] == 1 else (off.view(A, 1) + idx).reshape(-1)
    src = t.reshape(-1, *t.shape[2:])
    if out is None:
        res = torch.index_select(src, 0, flat)
    else:
        res = torch.index_select(src, 0, flat, out=out[:A * B])
    return res.view(A, B, *t.shape[2:])


def _cross_entropy(logits: torch.Tensor, y: torch.Tensor):
    """Per-sample cross-entropy ``[E, B]`` of ``logits [E, B, K]`` against ``y [E, B]``, and
    the logits as a ``[E, B, K]`` view of class-major memory ``[E, K, B]``.

    Why class-major: PyTorch's (log-)softmax over a last dimension of 2 or 3 classes runs a
    scalar loop per row and took 10-20× longer than over the same numbers laid out with the
    32 rows of a mini-batch innermost (``softmax(dim=1)`` of ``[E, K, B]``), forward and
    backward; the copy costs one small transpose. A penalty that takes the returned view
    (KILL's softmax) gets the fast layout too.
    """
    zt = logits.transpose(1, 2).contiguous()
    per = -torch.log_softmax(zt, 1).gather(1, y.unsqueeze(1)).squeeze(1)
    return per, zt.transpose(1, 2)


def _prefix_plan(nb: list[int]):
    """Members sorted by decreasing number of mini-batches per epoch (stable), so that the
    members still in their epoch at batch ``b`` are always a prefix ``[:k]``; and the groups
    of members with equal ``nb`` (equal step counts, hence one Adam bias correction each)
    as ``(lo, hi, nb)`` ranges of that order."""
    order = sorted(range(len(nb)), key=lambda e: -nb[e])
    groups, lo = [], 0
    for i in range(1, len(order) + 1):
        if i == len(order) or nb[order[i]] != nb[order[lo]]:
            groups.append((lo, i, nb[order[lo]]))
            lo = i
    return order, groups


def train(model, params: list[torch.Tensor], data: Members, cfg: TrainConfig,
          order_seeds: list[int], progress=None, on_epoch=None) -> list[torch.Tensor]:
    """:func:`_train` with denormal floats flushed to zero.

    Gradients through KBANN's saturated sigmoid units reach 1e-38; a matmul over a few such
    subnormal values runs up to 3× slower on x86. Flushing them changes numbers only below
    1.2e-38, far below any float32 weight update. (The flag is per thread; it is turned off
    again afterwards, PyTorch's default.)"""
    torch.set_flush_denormal(True)
    try:
        return _train(model, params, data, cfg, order_seeds, progress, on_epoch)
    finally:
        torch.set_flush_denormal(False)


def _train(model, params: list[torch.Tensor], data: Members, cfg: TrainConfig,
           order_seeds: list[int], progress=None, on_epoch=None) -> list[torch.Tensor]:
    """Train ``params`` (leading dim E) of ``model`` on ``data`` in place; returns them.

    ``on_epoch(epoch, current)``, if given, is called after every epoch with a function
    that returns the parameters in member order; a true result ends training early.

    ``model`` gives ``forward(params, x) -> logits [E, B, K]`` and optionally
    ``aux(X [S, N, D]) -> [S, N, A] | None`` (per-sample constants, e.g. rule truths) and
    ``penalty(logits, aux_batch) -> [E, B]`` added to each sample's loss, and
    ``constants(X [S, N, D]) -> [S, N, C] | None``: per-sample values of the forward pass
    that no parameter changes (fixed rule modules), computed once here and handed to
    ``forward(params, x, constants_batch)`` instead of once per batch.

    Cost (why it looks the way it does): at the paper's batch of 32 the matmuls are small, so
    what used to dominate was everything around them. Each parameter tensor is its own
    leaf (no slicing of one flat vector, whose backward zero-fills a full copy per slice);
    members are ordered so that those still in their epoch are a prefix (views, no index
    copies); Adam is PyTorch's fused single-pass update (``torch.optim.adam.adam`` with
    ``fused=True``), called on one view per group of members with equal step counts;
    mini-batches are gathered into preallocated buffers.
    """
    E = data.size
    B = cfg.batch_size
    nb = [(len(r) + B - 1) // B for r in data.rows]
    order, groups = _prefix_plan(nb)
    nb_max = max(nb) if E else 0
    perm = torch.tensor(order, dtype=torch.long)
    identity = order == list(range(E))
    P = [p.detach().clone() if identity else p.detach()[perm].contiguous() for p in params]
    gens = [torch.Generator().manual_seed(int(order_seeds[e]) % (2**63)) for e in order]
    rows = [data.rows[e] for e in order]
    sizes = torch.tensor([len(r) for r in rows])
    aux = model.aux(data.X) if hasattr(model, "aux") else None
    const = model.constants(data.X) if hasattr(model, "constants") else None
    exp_avg = [torch.zeros_like(p) for p in P]
    exp_avg_sq = [torch.zeros_like(p) for p in P]
    # one step count per parameter and group: Adam's functional API advances each listed
    # count once per call, so no count may appear twice in one call's list
    steps = [[torch.zeros(()) for _ in groups] for _ in P]
    # at batch b the active members are [:k]; the groups they form
    active = []
    for b in range(nb_max):
        gs = [gi for gi, (_lo, _hi, n) in enumerate(groups) if n > b]
        k = groups[gs[-1]][1]
        partial = bool(((sizes[:k] - b * B) < B).any())     # some batch shorter than B
        active.append((k, gs, partial))
    views = {}                                  # active groups -> Adam's tensor lists

    def adam_lists(gs):
        key = tuple(gs)
        if key not in views:
            sl = [slice(groups[g][0], groups[g][1]) for g in gs]
            views[key] = ([p[s] for p in P for s in sl], [m[s] for m in exp_avg for s in sl],
                          [v[s] for v in exp_avg_sq for s in sl],
                          [steps[pi][g] for pi in range(len(P)) for g in gs], sl)
        return views[key]

    member_of = perm                            # internal position -> data member
    inv_perm = torch.empty_like(perm)
    inv_perm[perm] = torch.arange(E)
    X, y = data.X, data.y
    xbuf = torch.empty(E * B, *X.shape[2:])
    cbuf = None if const is None else torch.empty(E * B, *const.shape[2:])
    for _epoch in range(cfg.epochs):
        idx = torch.zeros(E, nb_max * B, dtype=torch.long)
        mask = torch.zeros(E, nb_max * B)
        for e in range(E):
            k = len(rows[e])
            idx[e, :k] = rows[e][torch.randperm(k, generator=gens[e])]
            mask[e, :k] = 1.0
        idx = idx.view(E, nb_max, B)
        mask = mask.view(E, nb_max, B)
        # row offsets into per-member matrices (noise: X [E, N, D]; flip: y [E, N])
        off = (member_of * X.shape[1]).view(E, 1, 1)
        for b in range(nb_max):
            k, gs, partial = active[b]
            ib = idx[:k, b]
            xs = _gather(X, off[:k, 0], ib, xbuf)
            ys = _gather(y, off[:k, 0], ib)
            leaves = [p[:k].detach().requires_grad_(True) for p in P]
            if const is None:
                logits = model.forward(leaves, xs)
            else:
                logits = model.forward(leaves, xs, _gather(const, off[:k, 0], ib, cbuf))
            per, logits = _cross_entropy(logits, ys)
            if aux is not None:
                per = per + model.penalty(logits, _gather(aux, off[:k, 0], ib))
            if partial:
                mb = mask[:k, b]
                loss = ((per * mb).sum(1) / mb.sum(1)).sum()
            else:
                loss = per.mean(1).sum()
            # the fused kernel below walks raw memory: every gradient must have its
            # parameter's (contiguous) layout; a no-op unless a forward changed it
            grads = [gr.contiguous() for gr in torch.autograd.grad(loss, leaves)]
            ps, ms, vs, st, sl = adam_lists(gs)
            # torch.optim.Adam(fused=True)'s update through its functional form: one pass
            # per tensor, each member's bias correction from its group's own step count
            adam_step(ps, [g[s] for g in grads for s in sl], ms, vs, [], st, fused=True,
                      amsgrad=False, lr=cfg.lr, beta1=cfg.betas[0], beta2=cfg.betas[1],
                      weight_decay=0.0, eps=cfg.eps, maximize=False)
        if progress is not None:
            progress(1)
        if on_epoch is not None and on_epoch(
                _epoch, lambda: [p.detach().clone() if identity else p.detach()[inv_perm]
                                 for p in P]):
            break
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(E)
    for p, new in zip(params, P):
        p.data = new if identity else new[inv].contiguous()
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
