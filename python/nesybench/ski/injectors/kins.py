"""KINS (Magnini, Ciatto & Omicini): the MLP plus modules that mimic the rules.

Each class rule becomes a module whose output, before training, is the rule's truth; the
modules read the input and their outputs (one per class with rules) are concatenated to
the output of hidden layer ``layer`` (default: the last one, i.e. they feed the output
layer; 0 = concatenated to the input). Two styles of module (option ``modules``):

* ``"sigmoid"`` (default): trainable sigmoid threshold units built exactly as KBANN builds
  them (:func:`nesybench.ski.rules.unit_graph`; options ``omega``, ``mofn``), trained
  together with the MLP;
* ``"psyki"``: the layers of PSyKI's KINS, whose structuring fuzzifier makes every
  comparison a clipped linear unit, a conjunction the minimum and a disjunction the maximum
  of its antecedents (:func:`nesybench.ski.rules.clipped_net`). Their weights are fixed, as
  PSyKI's are (its formulae are not trainable unless marked so): the modules are a fixed
  function of the input, and training moves the MLP, including the weights by which layer
  ``layer`` + 1 reads the modules. ``omega`` and ``mofn`` do not apply.

Engines: the native kernel has neither min/max units nor fixed weights, so
``modules="psyki"`` trains with the PyTorch trainer whatever ``engine`` says, with a one-line
warning (the kernel was not extended for it).

Options: ``modules`` ("sigmoid" | "psyki"), ``omega`` (6), ``layer`` (None = last hidden
layer), ``mofn``, ``delta`` (1, the comparisons' ramp width).
"""
from __future__ import annotations

import torch

from ...errors import NesyError
from .. import native
from ..ensemble import dense, glorot, matmul_t
from .base import MLPMixin, Predictor
from .kbann import rule_forward, rule_layers, rule_plan

#: rows per evaluation of the fixed modules in :meth:`KINS.constants` (bounds the memory of
#: their intermediate state)
_CHUNK = 65536


class KINS(MLPMixin, Predictor):
    name = "kins"
    OPTIONS = {"omega": 6.0, "layer": None, "mofn": "towell", "delta": 1.0,
               "modules": "sigmoid"}
    CHOICES = {"mofn": ("towell", "psyki"), "modules": ("sigmoid", "psyki")}

    @property
    def _psyki(self) -> bool:
        return self.opts["modules"] == "psyki"

    def native_unsupported(self) -> str | None:
        if self._psyki:
            return "kins.modules=psyki (min/max units, fixed weights) has no native kernel"
        return None

    def _setup(self):
        if self._psyki:
            graph = self.knowledge.clipped_net(self.opts["delta"])
        else:
            graph = self.knowledge.unit_graph(self.opts["omega"], self.opts["delta"],
                                              self.opts["mofn"])
        layer = self.opts["layer"]
        layer = len(self.hidden) if layer is None else int(layer)
        if not 0 <= layer <= len(self.hidden):
            raise NesyError(f"kins: layer must be 0..{len(self.hidden)} (the MLP layer whose "
                            f"input gets the rule modules), not {layer}", field="layer")
        return graph, layer

    def init_member(self, gen):
        if self._psyki:
            return self._init_clipped(gen)
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

    def _init_clipped(self, gen):
        """``[W1, b1, …, WL, bL, rule_w]``: the MLP (Glorot, zero biases) and the columns
        of layer ``layer`` + 1 that read the fixed modules (which have no parameters)."""
        net, layer = self._setup()
        self._net, self._layer = net, layer
        self._cols = torch.tensor(net.classes, dtype=torch.long)
        self._n_mod = 0
        R = len(net.classes)
        sizes = [self.n_features, *self.hidden, self.n_classes]
        out = []
        for i, (a, o) in enumerate(zip(sizes[:-1], sizes[1:])):
            W = glorot(gen, a + (R if i == layer else 0), o)
            out += [W[:, :a].contiguous(), torch.zeros(o)]
            if i == layer:
                rule_w = W[:, a:].contiguous()
        return out + [rule_w]

    def plan(self):
        """Kernel plan: the rule modules (:func:`rule_plan`), a copy of the class units'
        truths placed right after the activations of the MLP layer that reads them."""
        self.laid_out()
        if self._psyki:
            raise NesyError(f"{self.native_unsupported()}: use engine torch", field="engine")
        plan = native.Plan(self.n_features)
        hs, z0 = rule_plan(self._net, plan)
        sizes = [self.n_features, *self.hidden, self.n_classes]
        n, layer, R = len(sizes) - 1, self._layer, len(self._cols)
        rules = plan.region(R) if layer == 0 else None
        outs = []
        for i in range(n):                  # outs[i]: the output of MLP layer i
            outs.append(plan.region(sizes[i + 1]))
            if layer == i + 1:              # layer i + 1 reads [outs[i], rules]
                rules = plan.region(R)
        hcols = native.cols_of(hs, 0)
        plan.copy(rules, [hcols[c] for c in self._cols.tolist()])
        rule_key = self._n_mod + 2 * (n - 1)
        for i in range(n):
            act = "relu" if i < n - 1 else "id"
            if i == 0:
                ins = [rules] if layer == 0 else []
                w, stride, _ = plan.dense(outs[0], ins, act, base=z0)
            else:
                ins = [outs[i - 1]] + ([rules] if layer == i else [])
                w, stride, b = plan.dense(outs[i], ins, act)
                k = self._n_mod + 2 * (i - 1)
                plan.place(k, w, stride, range(sizes[i]), range(sizes[i + 1]))
                plan.place(k + 1, b, 0, None, range(sizes[i + 1]))
            if i == layer:
                plan.place(rule_key, w, stride,
                           [rules.start - ins[0].start + r for r in range(R)],
                           range(sizes[i + 1]))
        plan.logits = outs[-1]
        return plan

    def module_truths(self, params, x):
        """Outputs of the rule modules [E, B, #classes with rules] (sigmoid truths, or the
        clipped modules' fuzzy truths)."""
        self.laid_out()
        if self._psyki:
            return self._net(x)
        h, _ = rule_forward(self._net, params[:self._n_mod], x)
        return h[..., self._cols]

    def constants(self, X):
        """The fixed PSyKI-style modules' truths of every training row, [S, N, R] (None for
        sigmoid modules, which train): the trainer computes them once instead of once per
        mini-batch (a census step ×1.47 faster). Row by row, in chunks (a noise cell's
        X holds one matrix per member), with the same operations as in :meth:`forward`:
        the same numbers."""
        self.laid_out()
        if not self._psyki:
            return None
        flat = X.reshape(-1, X.shape[-1])
        out = torch.cat([self._net(flat[s:s + _CHUNK])
                         for s in range(0, flat.shape[0], _CHUNK)])
        return out.view(*X.shape[:-1], out.shape[-1])

    def forward(self, params, x, rules=None):
        """Logits [E, B, K] of inputs ``x [E, B, D]``; ``rules``: the fixed modules' truths
        of these rows from :meth:`constants` (PSyKI style; computed here when None)."""
        self.laid_out()
        if self._psyki:
            if rules is None:
                rules = self._net(x)
            z = dense(x, params[0], params[1])
            for i in range((len(params) - 1) // 2):
                if i:
                    z = dense(torch.relu(z), params[2 * i], params[2 * i + 1])
                if i == self._layer:
                    z = matmul_t(rules, params[-1], z)
            return z
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
