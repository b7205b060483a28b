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

from ...errors import NesyError
from ..ensemble import dense, glorot, matmul_t
from ..rules import unit_graph
from .base import MLPMixin, Predictor
from .kbann import rule_forward, rule_layers


class KINS(MLPMixin, Predictor):
    name = "kins"
    OPTIONS = {"omega": 6.0, "layer": None, "mofn": "towell", "delta": 1.0}
    CHOICES = {"mofn": ("towell", "psyki")}

    def _setup(self):
        key = (float(self.opts["omega"]), float(self.opts["delta"]), self.opts["mofn"])
        if getattr(self, "_graph_key", None) != key:        # built once per configuration
            self._graph_cache = unit_graph(self.knowledge, omega=key[0], delta=key[1],
                                           mofn=key[2])
            self._graph_key = key
        graph = self._graph_cache
        layer = self.opts["layer"]
        layer = len(self.hidden) if layer is None else int(layer)
        if not 0 <= layer <= len(self.hidden):
            raise NesyError(f"kins: layer must be 0..{len(self.hidden)} (the MLP layer whose "
                            f"input gets the rule modules), not {layer}", field="layer")
        return graph, layer

    def init_member(self, gen):
        graph, layer = self._setup()
        sizes = [self.n_features, *self.hidden, self.n_classes]
        # the first MLP layer's input rows share the rule modules' input matmul
        mod, net = rule_layers(graph, self.n_features, 0, gen, 0.0, 0.0,
                               extra_cols=sizes[1])
        self._net = net
        self._cols = torch.tensor([net.pos[graph.class_units[k]]
                                   for k in sorted(graph.class_units)], dtype=torch.long)
        R = len(self._cols)
        mlp = []
        for i, (a, o) in enumerate(zip(sizes[:-1], sizes[1:])):
            W = glorot(gen, a + (R if i == layer else 0), o)       # [o, a (+ R)]
            bias = torch.zeros(o)
            if i == 0:
                mod[0][net.width:] = W[:, :a]
                mod[1][net.width:] = bias
            else:
                mlp += [W[:, :a].contiguous(), bias]
            if i == layer:
                rule_w = W[:, a:].contiguous()    # the rule truths' columns of that layer
        self._layer = layer
        self._n_mod = len(mod)
        return mod + mlp + [rule_w]

    def module_truths(self, params, x):
        """Outputs of the rule modules [E, B, #classes with rules] (sigmoid truths)."""
        if not hasattr(self, "_net"):
            self.init_member(torch.Generator().manual_seed(0))
        h, _ = rule_forward(self._net, params[:self._n_mod], x)
        return h[..., self._cols]

    def forward(self, params, x):
        if not hasattr(self, "_net"):
            self.init_member(torch.Generator().manual_seed(0))
        h_mod, z = rule_forward(self._net, params[:self._n_mod], x)
        rules = h_mod[..., self._cols]
        mlp, rule_w = params[self._n_mod:-1], params[-1]
        n = len(mlp) // 2 + 1                     # MLP layers; layer 0's z is computed
        if self._layer == 0:
            z = matmul_t(rules, rule_w, z)
        for i in range(1, n):
            z = dense(torch.relu(z), mlp[2 * (i - 1)], mlp[2 * (i - 1) + 1])
            if i == self._layer:
                z = matmul_t(rules, rule_w, z)
        return z
