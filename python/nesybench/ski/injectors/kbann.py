"""KBANN (Towell & Shavlik): a network built from the rules, then trained.

The rules become sigmoid threshold units (:func:`nesybench.ski.rules.unit_graph`: weights
±ω, biases from the number of positive antecedents, m-of-n thresholds at m − ½), grouped
into layers by depth; every layer sees the inputs and all earlier layers (links that no rule
asks for start near 0). ``extra_units`` more units per layer (incoming weights
N(0, ``extra_std``)) let the network learn beyond the rules, and every weight gets a small
perturbation N(0, ``perturb``) (Towell). The output logits are ω·(u_k − ½) of each class's
rule unit (0 for a class without rules), so before training the argmax is the rules'
answer. Options: ``omega`` (6), ``extra_units`` (8), ``perturb`` (0.01), ``extra_std``
(0.1), ``mofn`` ("towell" | "psyki").
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import native
from ..ensemble import dense, matmul_t
from ..rules import UnitGraph
from .base import Predictor


@dataclass(frozen=True)
class RuleNet:
    """Parameter layout of a rule network (why this layout: speed, same function).

    Layer ``l`` of KBANN reads the inputs and every earlier layer. Written as one dense map
    over the growing state ``[x, h1, …]`` it would multiply the wide input block once per
    layer and back-propagate into it although the inputs need no gradient. Here the input
    rows of every layer (and ``extra`` more columns for a consumer such as KBANN's output or
    KINS's first MLP layer) are one matrix ``Wx [D, T + extra]``, used in a single matmul;
    only the narrow hidden-to-hidden blocks ``Wh_l [Σ_{j<l} s_j, s_l]`` stay per layer.
    Parameters: ``[Wx, b, Wh_2, …, Wh_L]``, stored output-major (``Wx [T + extra, D]``,
    ``Wh_l [s_l, Σ_{j<l} s_j]``, see :func:`nesybench.ski.ensemble.dense`); ``pos[u]`` is
    unit ``u``'s column in the hidden state ``h = [h1, …, hL]``.
    """

    sizes: tuple[int, ...]
    pos: dict
    extra: int

    @property
    def width(self) -> int:
        return sum(self.sizes)

    @property
    def n_params(self) -> int:
        return 2 + max(len(self.sizes) - 1, 0)


def rule_layers(graph: UnitGraph, n_features: int, extra_units: int, gen, perturb: float,
                extra_std: float, extra_cols: int = 0):
    """Initial ``[Wx, b, Wh_2, …]`` (rule weights ±ω and biases, a N(0, ``perturb``)
    perturbation of every weight, ``extra_units`` free units per layer drawn N(0,
    ``extra_std``)) and the :class:`RuleNet` layout. The last ``extra_cols`` columns of
    ``Wx``/``b`` (rows of the stored ``Wx``) are left at 0 for the caller to fill."""
    per = [[i for i, u in enumerate(graph.units) if u.depth == d]
           for d in range(1, graph.depth + 1)]
    sizes = [len(units) + extra_units for units in per]
    pos, width = {}, 0
    for units, size in zip(per, sizes):
        for j, i in enumerate(units):
            pos[i] = width + j
        width += size
    Wx = torch.zeros(n_features, width + extra_cols)
    b = torch.zeros(width + extra_cols)
    Wh, off = [], 0
    for li, (units, size) in enumerate(zip(per, sizes)):
        cols = slice(off, off + size)
        # draws in the order of the former [x; h_<l] rows, so a layer's init is unchanged
        W = torch.randn(n_features + off, size, generator=gen) * perturb
        b[cols] = torch.randn(size, generator=gen) * perturb
        if extra_units:
            W[:, len(units):] = torch.randn(n_features + off, extra_units,
                                            generator=gen) * extra_std
        for j, i in enumerate(units):
            u = graph.units[i]
            for (kind, ref), w in u.inputs:
                W[ref if kind == "x" else n_features + pos[ref], j] += w
            b[off + j] += u.bias
        Wx[:, cols] = W[:n_features]
        if li:
            Wh.append(W[n_features:].t().contiguous())
        off += size
    return [Wx.t().contiguous(), b, *Wh], RuleNet(tuple(sizes), pos, extra_cols)


def rule_forward(net: RuleNet, params, x):
    """Hidden state ``h [E, B, width]`` of the sigmoid layers and the pre-activations of the
    ``extra`` columns ``[E, B, extra]`` (``x @ Wx[:, width:] + b[width:]``).

    ``torch.split`` rather than slicing: its backward is one concatenation, where slices
    would each zero-fill a full-size gradient and add them up."""
    z = dense(x, params[0], params[1])
    parts = torch.split(z, [*net.sizes, net.extra], dim=-1)
    hs = None
    for li in range(len(net.sizes)):
        # a split is a strided view; sigmoid is ~7x slower on it than on a compact copy
        zl = parts[0].contiguous() if li == 0 else matmul_t(hs, params[1 + li], parts[li])
        h = torch.sigmoid(zl)
        hs = h if hs is None else torch.cat([hs, h], dim=-1)
    if hs is None:
        hs = z[..., :0]
    return hs, parts[-1]


def rule_plan(net: RuleNet, plan: native.Plan):
    """Lay out :func:`rule_forward` for the kernel (parameters 0 .. ``net.n_params - 1``):
    the input op computes every layer's input part and the ``extra`` columns into one
    segment each; layer ``l`` adds the earlier layers' outputs to its segment. Returns the
    hidden regions ``[H_1, …]`` and the ``extra`` columns' segment."""
    segs = plan.input([*net.sizes, net.extra])
    plan.place_input(0, 1, native.cols_of(segs, segs[0].start))
    hs = [plan.region(n) for n in net.sizes]
    for li, (h, seg) in enumerate(zip(hs, segs)):
        w, stride, _ = plan.dense(h, hs[:li], "sigmoid", base=seg)
        if li:
            plan.place(1 + li, w, stride, native.cols_of(hs[:li], hs[0].start), range(h.n))
    return hs, segs[-1]


class KBANN(Predictor):
    name = "kbann"
    OPTIONS = {"omega": 6.0, "extra_units": 8, "perturb": 0.01, "extra_std": 0.1,
               "mofn": "towell", "delta": 1.0}
    CHOICES = {"mofn": ("towell", "psyki")}

    def _graph(self):
        return self.knowledge.unit_graph(self.opts["omega"], self.opts["delta"],
                                         self.opts["mofn"])

    def init_member(self, gen):
        graph = self._graph()
        o = self.opts
        K = self.n_classes
        params, net = rule_layers(graph, self.n_features, int(o["extra_units"]), gen,
                                  float(o["perturb"]), float(o["extra_std"]), extra_cols=K)
        self._net = net
        omega, perturb = float(o["omega"]), float(o["perturb"])
        # output layer: its input rows are the inputs (in Wx's last K columns) and h
        Wo = torch.randn(self.n_features + net.width, K, generator=gen) * perturb
        bo = torch.randn(K, generator=gen) * perturb
        for k, u in graph.class_units.items():
            Wo[self.n_features + net.pos[u], k] += omega
            bo[k] -= omega / 2
        params[0][net.width:] = Wo[:self.n_features].t()
        params[1][net.width:] = bo
        return params + [Wo[self.n_features:].t().contiguous()]

    def plan(self):
        self.laid_out()
        plan = native.Plan(self.n_features)
        hs, zout = rule_plan(self._net, plan)
        plan.logits = plan.region(self.n_classes)
        w, stride, _ = plan.dense(plan.logits, hs, "id", base=zout)
        rows = native.cols_of(hs, hs[0].start) if hs else []
        plan.place(self._net.n_params, w, stride, rows, range(self.n_classes))
        return plan

    def forward(self, params, x):
        self.laid_out()
        h, zout = rule_forward(self._net, params[:-1], x)
        return matmul_t(h, params[-1], zout)
