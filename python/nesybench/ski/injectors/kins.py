"""KINS (Magnini, Ciatto & Omicini): the MLP plus trainable modules that mimic the rules.

Each class rule becomes a module of sigmoid threshold units built exactly as KBANN builds
them (so that, before training, a module's output is the rule's truth on Boolean inputs);
the modules read the input and their outputs (one per class with rules) are concatenated to
the output of hidden layer ``layer`` (default: the last one, i.e. they feed the output
layer; 0 = concatenated to the input). Modules and MLP train together. Options: ``omega``
(6), ``layer`` (None = last hidden layer), ``mofn``, ``delta``.
"""
from __future__ import annotations

import torch

from ..ensemble import dense, glorot
from ..rules import unit_graph
from .base import MLPMixin, Predictor
from .kbann import rule_forward, rule_layers


class KINS(MLPMixin, Predictor):
    name = "kins"
    OPTIONS = {"omega": 6.0, "layer": None, "mofn": "towell", "delta": 1.0}

    def _setup(self):
        key = (float(self.opts["omega"]), float(self.opts["delta"]), self.opts["mofn"])
        if getattr(self, "_graph_key", None) != key:        # built once per configuration
            self._graph_cache = unit_graph(self.knowledge, omega=key[0], delta=key[1],
                                           mofn=key[2])
            self._graph_key = key
        graph = self._graph_cache
        layer = self.opts["layer"]
        layer = len(self.hidden) if layer is None else int(layer)
        return graph, layer

    def init_member(self, gen):
        graph, layer = self._setup()
        mod, pos, _width = rule_layers(graph, self.n_features, 0, gen, 0.0, 0.0)
        self._n_mod = len(mod)
        self._cols = [pos[graph.class_units[k]] for k in sorted(graph.class_units)]
        sizes = [self.n_features, *self.hidden, self.n_classes]
        mlp = []
        for i, (a, o) in enumerate(zip(sizes[:-1], sizes[1:])):
            fan_in = a + (len(self._cols) if i == layer else 0)
            mlp += [glorot(gen, fan_in, o), torch.zeros(o)]
        self._layer = layer
        return mod + mlp

    def module_truths(self, params, x):
        """Outputs of the rule modules [E, B, #classes with rules] (sigmoid truths)."""
        state = rule_forward(params[:self._n_mod], x)
        return state[..., self._cols]

    def forward(self, params, x):
        if not hasattr(self, "_n_mod"):
            self.init_member(torch.Generator().manual_seed(0))
        rules = self.module_truths(params, x)
        mlp = params[self._n_mod:]
        h = x
        n = len(mlp) // 2
        for i in range(n):
            if i == self._layer:
                h = torch.cat([h, rules], dim=-1)
            h = dense(h, mlp[2 * i], mlp[2 * i + 1])
            if i < n - 1:
                h = torch.relu(h)
        return h
