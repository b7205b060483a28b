"""KBANN (Towell & Shavlik): a network built from the rules, then trained.

The rules become sigmoid threshold units (:func:`nesybench.ski.rules.unit_graph`: weights
±ω, biases from the number of positive antecedents, m-of-n thresholds at m − ½), grouped
into layers by depth; every layer sees the inputs and all earlier layers (links that no rule
asks for start near 0). ``extra_units`` more units per layer (incoming weights
N(0, ``extra_std``)) let the network learn beyond the rules, and every weight gets a small
perturbation N(0, ``perturb``) (Towell). The output logits are ω·(u_k − ½) of each class's
rule unit (0 for a class without rules), so before training the argmax is the rules'
answer. Options: ``omega`` (6), ``extra_units`` (8), ``perturb`` (0.01), ``extra_std``
(0.1), ``mofn`` ("towell" | "psyki"), ``construction`` ("towell" | "psyki").

``construction="psyki"`` builds PSyKI's KBANN network instead (its ``Injector.kbann`` with
the Towell fuzzifier), unit for unit (:func:`nesybench.ski.rules.psyki_graph`): only the rule
connections exist (every other weight is 0 and stays 0: the weights are masked to the rule
graph), they start at exactly ±ω, the thresholds are constants (m − ω/2 for m-of-n), the class
units are the outputs and nothing else reads the inputs (the predictor's own network is
discarded, as PSyKI's injector does). The loss is Keras's sparse categorical cross-entropy on
these sigmoid outputs u: −log(u_y / Σ_k u_k), each u clipped to [1e-7, 1 − 1e-7] first; the
forward pass returns log u as the logits, whose softmax is u / Σu. ``extra_units``,
``perturb``, ``extra_std``, ``mofn`` and ``delta`` do not apply to it. It trains with the
PyTorch trainer (the native kernel has no masked or fixed-bias layout).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...errors import NesyError
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


#: Keras's clipping of probabilities in its cross-entropy (``backend.epsilon()``)
KERAS_EPSILON = 1e-7


def psyki_layers(graph: UnitGraph, n_features: int):
    """PSyKI's KBANN laid out as :func:`rule_layers` lays out a rule network (layer ``l``
    reads the inputs and every earlier layer), with no extra units or columns: the initial
    ``[Wx, Wh_2, …]`` (±ω on the rule edges, 0 elsewhere), their 0/1 masks (1 on the rule
    edges), the fixed biases ``b [width]`` (−θ) and the :class:`RuleNet`."""
    per = [[i for i, u in enumerate(graph.units) if u.depth == d]
           for d in range(1, graph.depth + 1)]
    sizes = [len(units) for units in per]
    pos, width = {}, 0
    for units in per:
        for j, i in enumerate(units):
            pos[i] = width + j
        width += len(units)
    W = torch.zeros(width, n_features + width)         # output-major, over [x, h]
    M = torch.zeros(width, n_features + width)
    b = torch.zeros(width)
    for i, u in enumerate(graph.units):
        for (kind, ref), w in u.inputs:
            c = ref if kind == "x" else n_features + pos[ref]
            W[pos[i], c] += w
            M[pos[i], c] = 1.0
        b[pos[i]] = u.bias
    params, masks, off = [W[:, :n_features].contiguous()], [M[:, :n_features].contiguous()], 0
    for li, size in enumerate(sizes):
        if li:
            params.append(W[off:off + size, n_features:n_features + off].contiguous())
            masks.append(M[off:off + size, n_features:n_features + off].contiguous())
        off += size
    return params, masks, b, RuleNet(tuple(sizes), pos, 0)


class KBANN(Predictor):
    name = "kbann"
    OPTIONS = {"omega": 6.0, "extra_units": 8, "perturb": 0.01, "extra_std": 0.1,
               "mofn": "towell", "delta": 1.0, "construction": "towell"}
    CHOICES = {"mofn": ("towell", "psyki"), "construction": ("towell", "psyki")}

    @property
    def _psyki(self) -> bool:
        return self.opts["construction"] == "psyki"

    def _graph(self):
        if self._psyki:
            return self.knowledge.psyki_graph(self.opts["omega"])
        return self.knowledge.unit_graph(self.opts["omega"], self.opts["delta"],
                                         self.opts["mofn"])

    def native_unsupported(self) -> str | None:
        if self._psyki:
            return ("kbann.construction=psyki (weights masked to the rule graph, fixed "
                    "thresholds, the loss on the sigmoid outputs) has no native kernel")
        return None

    def init_member(self, gen):
        if self._psyki:
            # PSyKI's network is the rules alone and draws nothing: every member starts the same
            params, masks, bias, net = psyki_layers(self._graph(), self.n_features)
            self._net, self._masks, self._bias = net, masks, bias
            self._out = torch.tensor([net.pos[self._graph().class_units[k]]
                                      for k in range(self.n_classes)], dtype=torch.long)
            return params
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
        if self._psyki:
            raise NesyError(f"{self.native_unsupported()}: use engine torch", field="engine")
        plan = native.Plan(self.n_features)
        hs, zout = rule_plan(self._net, plan)
        plan.logits = plan.region(self.n_classes)
        w, stride, _ = plan.dense(plan.logits, hs, "id", base=zout)
        rows = native.cols_of(hs, hs[0].start) if hs else []
        plan.place(self._net.n_params, w, stride, rows, range(self.n_classes))
        return plan

    def outputs(self, params, x):
        """``construction="psyki"``: the class units' sigmoid outputs ``u [E, B, K]`` (the
        output of PSyKI's network)."""
        self.laid_out()
        E = params[0].shape[0]
        masked = [p * m for p, m in zip(params, self._masks)]
        layers = [masked[0], self._bias.expand(E, -1), *masked[1:]]
        h, _ = rule_forward(self._net, layers, x)
        return h[..., self._out]

    def forward(self, params, x):
        self.laid_out()
        if self._psyki:
            # softmax(log u) = u / Σu: the trainer's cross-entropy is then Keras's on u
            u = self.outputs(params, x)
            return torch.log(u.clamp(KERAS_EPSILON, 1.0 - KERAS_EPSILON))
        h, zout = rule_forward(self._net, params[:-1], x)
        return matmul_t(h, params[-1], zout)
