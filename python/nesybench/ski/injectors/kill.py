"""KILL (Magnini, Ciatto & Omicini): the MLP trained with a penalty for violating the rules.

For a sample x with fuzzy rule truths r_k(x) (:meth:`nesybench.ski.rules.Knowledge.truths`,
comparisons as ramps, ``>`` rising and ``<`` falling) and predicted probabilities
p = softmax(logits), the penalty is the Łukasiewicz violation of each rule
"body_k(x) → class k":  Σ_k max(0, r_k(x) − p_k(x)), weighted by ``weight`` (1) and added
to the cross-entropy during training only; inference is the plain MLP. It is 0 when the
outputs satisfy every rule (p_k ≥ r_k) and grows with the violation. (PSyKI's KILL adds the
violation to the network's output inside a lambda layer instead of to the loss.)
Options: ``weight`` (1.0), ``delta`` (1.0, the comparison ramp width).
"""
from __future__ import annotations

import torch

from .base import MLPMixin, Predictor


class KILL(MLPMixin, Predictor):
    name = "kill"
    OPTIONS = {"weight": 1.0, "delta": 1.0}

    def init_member(self, gen):
        return self.mlp_init(gen, [self.n_features, *self.hidden, self.n_classes])

    def forward(self, params, x):
        return self.mlp_forward(params, x)

    def aux(self, X):
        """Rule truths of every training row: [S, N, K] (computed once before training)."""
        return self.knowledge.truths(X, delta=float(self.opts["delta"]))

    def penalty_weight(self) -> float:
        """The penalty's weight, for the native trainer (which fuses it into the loss)."""
        return float(self.opts["weight"])

    def penalty(self, logits, truths):
        """[E, B]: weight · Σ_k max(0, r_k − p_k) (``logits``/``truths`` [E, B, K]).

        The softmax runs over dim 1 of the class-major ``[E, K, B]`` transpose: fast when
        ``logits`` is the trainer's class-major view (see ``ensemble._cross_entropy``)."""
        p = torch.softmax(logits.transpose(1, 2), dim=1)
        return float(self.opts["weight"]) * torch.relu(truths.transpose(1, 2) - p).sum(1)
