"""The uneducated network: the paper's MLP (ReLU hidden layers, softmax output)."""
from __future__ import annotations

from .base import MLPMixin, Predictor


class Uneducated(MLPMixin, Predictor):
    name = "uneducated"

    def init_member(self, gen):
        return self.mlp_init(gen, [self.n_features, *self.hidden, self.n_classes])

    def forward(self, params, x):
        return self.mlp_forward(params, x)
