"""Early stopping for a batched ensemble: each member stops on its own validation loss.

The paper trains with "an epoch limit of 100". Read as Keras's ``EarlyStopping`` (the
paper's code base is Keras), training stops once the validation loss has not improved for
``patience`` epochs, and the weights are those of the last epoch trained (Keras's default,
``restore_best_weights=False``). Members are independent and deterministic, so a member that
stops at epoch e has exactly the weights of a member trained for e epochs: the ensemble keeps
training as one batch (the kernel is fastest that way) and each member's weights are taken
when it stops. Training ends early once every member has stopped.

Validation rows: a share ``val_fraction`` of each member's own (degraded) training rows,
drawn with the member's seed, at least one; those rows are not trained on. The monitored
quantity is the cross-entropy of the labels the member trains with (flipped ones under
label flipping, as a held-out split of the degraded data would hold).
"""
from __future__ import annotations

import numpy as np
import torch

from ..io import derive_seed
from .ensemble import Members


def split_validation(data: Members, seeds: list[int], fraction: float):
    """(training Members, validation rows per member): ``fraction`` of each member's rows
    (at least one, and at least one left to train on) held out, drawn with its seed."""
    train_rows, val_rows = [], []
    for rows, seed in zip(data.rows, seeds):
        n = len(rows)
        k = min(max(int(round(fraction * n)), 1), n - 1) if n > 1 else 0
        gen = torch.Generator().manual_seed(derive_seed("val", seed) % (2**63))
        perm = torch.randperm(n, generator=gen)
        val_rows.append(rows[perm[:k]].sort().values)
        train_rows.append(rows[perm[k:]].sort().values)
    return Members(data.X, data.y, train_rows), val_rows


class EarlyStopping:
    """The ``on_epoch`` hook of the trainers (see the module docstring)."""

    def __init__(self, model, data: Members, val_rows: list[torch.Tensor], patience: int):
        self.model, self.patience = model, int(patience)
        E = data.size
        self.E = E
        vmax = max((len(r) for r in val_rows), default=0)
        idx = torch.zeros(E, max(vmax, 1), dtype=torch.long)
        self.mask = torch.zeros(E, max(vmax, 1))
        for e, r in enumerate(val_rows):
            idx[e, :len(r)] = r
            self.mask[e, :len(r)] = 1.0
        X = data.X if data.X.shape[0] > 1 else data.X.expand(E, -1, -1)
        y = data.y if data.y.shape[0] > 1 else data.y.expand(E, -1)
        self.xs = torch.gather(X, 1, idx.unsqueeze(-1).expand(-1, -1, X.shape[2]))
        self.ys = torch.gather(y, 1, idx)
        self.best = np.full(E, np.inf)
        self.wait = np.zeros(E, dtype=np.int64)
        self.stopped_at = np.full(E, -1, dtype=np.int64)        # epoch index, -1 = ran on
        self.weights: list[list[torch.Tensor] | None] = [None] * E

    @torch.no_grad()
    def losses(self, params) -> np.ndarray:
        logits = self.model.forward(params, self.xs)             # [E, V, K]
        logp = torch.log_softmax(logits.double(), dim=-1)
        nll = -logp.gather(-1, self.ys.unsqueeze(-1)).squeeze(-1)
        n = self.mask.sum(1).clamp(min=1.0)
        return ((nll * self.mask).sum(1) / n).numpy()

    def __call__(self, epoch: int, current) -> bool:
        params = current()
        loss = self.losses(params)
        active = self.stopped_at < 0
        better = loss < self.best
        self.best = np.where(active & better, loss, self.best)
        self.wait = np.where(active & better, 0, self.wait + active)
        newly = active & (self.wait >= self.patience)
        for e in np.flatnonzero(newly):
            self.stopped_at[e] = epoch
            self.weights[e] = [p[e].clone() for p in params]
        return bool((self.stopped_at >= 0).all())

    def apply(self, params: list[torch.Tensor]) -> None:
        """Put the stopped members' weights into ``params`` (in place)."""
        for e, w in enumerate(self.weights):
            if w is not None:
                for p, v in zip(params, w):
                    p.data[e] = v

    def epochs_trained(self, limit: int) -> np.ndarray:
        """Epochs each member trained (its stop epoch + 1, or ``limit``)."""
        return np.where(self.stopped_at >= 0, self.stopped_at + 1, limit)
