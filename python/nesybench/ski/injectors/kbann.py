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

import torch

from ..ensemble import dense
from ..rules import UnitGraph, unit_graph
from .base import Predictor


def layered(graph: UnitGraph, n_features: int, extra: int = 0):
    """Layer plan of a unit graph: for each depth the unit ids, and each unit's column in
    the running state ``[x, layer 1, layer 2, ...]`` (extra units appended per layer)."""
    depth = graph.depth
    per = [[i for i, u in enumerate(graph.units) if u.depth == d] for d in range(1, depth + 1)]
    pos, width, sizes = {}, n_features, []
    for units in per:
        for j, i in enumerate(units):
            pos[i] = width + j
        sizes.append(len(units) + extra)
        width += len(units) + extra
    return per, pos, sizes, width


def rule_layers(graph: UnitGraph, n_features: int, extra: int, gen, perturb: float,
                extra_std: float):
    """Initial (W, b) per layer: rule weights, perturbation, extra units."""
    per, pos, sizes, width = layered(graph, n_features, extra)
    params, fan_in = [], n_features
    for units, size in zip(per, sizes):
        W = torch.randn(fan_in, size, generator=gen) * perturb
        b = torch.randn(size, generator=gen) * perturb
        if extra:
            W[:, len(units):] = torch.randn(fan_in, extra, generator=gen) * extra_std
        for j, i in enumerate(units):
            u = graph.units[i]
            for (kind, ref), w in u.inputs:
                row = ref if kind == "x" else pos[ref]
                W[row, j] += w
            b[j] += u.bias
        params += [W, b]
        fan_in += size
    return params, pos, width


def rule_forward(params, x):
    """Run the stacked sigmoid layers; returns the state [x, h1, h2, ...] [E, B, width]."""
    state = x
    for i in range(0, len(params), 2):
        h = torch.sigmoid(dense(state, params[i], params[i + 1]))
        state = torch.cat([state, h], dim=-1)
    return state


class KBANN(Predictor):
    name = "kbann"
    OPTIONS = {"omega": 6.0, "extra_units": 8, "perturb": 0.01, "extra_std": 0.1,
               "mofn": "towell", "delta": 1.0}

    def _graph(self):
        key = (float(self.opts["omega"]), float(self.opts["delta"]), self.opts["mofn"])
        if getattr(self, "_graph_key", None) != key:        # built once per configuration
            self._graph_cache = unit_graph(self.knowledge, omega=key[0], delta=key[1],
                                           mofn=key[2])
            self._graph_key = key
        return self._graph_cache

    def init_member(self, gen):
        graph = self._graph()
        o = self.opts
        layers, pos, width = rule_layers(graph, self.n_features, int(o["extra_units"]), gen,
                                         float(o["perturb"]), float(o["extra_std"]))
        omega = float(o["omega"])
        W = torch.randn(width, self.n_classes, generator=gen) * float(o["perturb"])
        b = torch.randn(self.n_classes, generator=gen) * float(o["perturb"])
        for k, u in graph.class_units.items():
            W[pos[u], k] += omega
            b[k] -= omega / 2
        return layers + [W, b]

    def forward(self, params, x):
        state = rule_forward(params[:-2], x)
        return dense(state, params[-2], params[-1])
