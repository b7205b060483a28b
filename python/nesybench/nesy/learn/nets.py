"""Networks: concept extractors per input layout, and label heads.

* :class:`LeNet` — LeNet-5-style for one 28×28 grey digit (conv 5×5 ×6, pool, conv 5×5 ×16,
  pool, 120, 84, out), the network DeepProbLog and rsbench use for MNIST tasks;
* :class:`SmallCNN` — four conv blocks (16-32-64-64 channels, 3×3, ReLU, 2×2 max-pool) and
  global average pooling, for rendered RGB scenes (Kandinsky figures 64×64, driving 128×128);
* :class:`MLP` — for vector inputs and for label heads.

:class:`ConceptExtractor` maps a batch of inputs to one output block per concept variable:

* ``tiles`` (digit tasks): the image is ``n`` 28×28 digits side by side, variable ``i`` reads
  tile ``i``; one LeNet per concept (shared across positions, as rsbench does);
* ``figures`` (Kandinsky): the image is ``F`` 64×64 figures side by side; one SmallCNN shared
  across figures outputs every object slot's concept values for its figure;
* ``whole`` (driving, anything else): one SmallCNN over the whole image, all variables;
* ``vector``: an MLP over a flat feature vector, all variables.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from ...errors import NesyError


class LeNet(nn.Module):
    """(B, 1, 28, 28) -> (B, out)."""

    def __init__(self, out: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5), nn.MaxPool2d(2), nn.ReLU(),
            nn.Conv2d(6, 16, 5), nn.MaxPool2d(2), nn.ReLU())
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16 * 4 * 4, 120), nn.ReLU(),
                                  nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, out))

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


class SmallCNN(nn.Module):
    """(B, C, H, W) -> (B, out), any H, W >= 16."""

    def __init__(self, in_ch: int, out: int, width: int = 16):
        super().__init__()
        chans = [in_ch, width, 2 * width, 4 * width, 4 * width]
        layers: list[nn.Module] = []
        for a, b in zip(chans, chans[1:]):
            layers += [nn.Conv2d(a, b, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(chans[-1], out)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


class MLP(nn.Module):
    """(B, d_in) -> (B, out) with ReLU hidden layers."""

    def __init__(self, d_in: int, out: int, hidden: tuple[int, ...] = (64,)):
        super().__init__()
        dims = [d_in, *hidden]
        layers: list[nn.Module] = []
        for a, b in zip(dims, dims[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(dims[-1], out))
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x.flatten(1))


def layout_of(render: str | None, input_shape: tuple[int, ...]) -> str:
    """The extractor layout for a data set's renderer and input shape (C, H, W) or (D,)."""
    if len(input_shape) == 1:
        return "vector"
    if render in (None, "digits") and input_shape[0] == 1 and input_shape[1] == 28:
        return "tiles"
    if render == "kandinsky":
        return "figures"
    return "whole"


class ConceptExtractor(nn.Module):
    """Input batch -> list of (B, out_dims[i]) blocks, one per concept variable.

    ``variables``: the task's :class:`~nesybench.shortcuts.task.Variable` list (terms tell the
    Kandinsky layout which figure/object a variable belongs to); ``out_dims``: the block width
    per variable (its domain size for concept logits, or an embedding size).
    """

    def __init__(self, variables, out_dims: list[int], layout: str,
                 input_shape: tuple[int, ...]):
        super().__init__()
        self.layout = layout
        self.out_dims = list(out_dims)
        n = len(variables)
        if layout == "tiles":
            width = input_shape[2]
            if width != 28 * n:
                raise NesyError(f"digit images are {width} px wide, expected 28 x {n} variables")
            keys = [f"{v.concept}:{d}" for v, d in zip(variables, out_dims)]
            self.keys = keys
            self.nets = nn.ModuleDict({k.replace(":", "_"): LeNet(int(k.split(":")[1]))
                                       for k in dict.fromkeys(keys)})
        elif layout == "figures":
            figs = []
            self.slots: list[tuple[int, int]] = []   # (figure index, column offset in output)
            per_fig: dict[int, int] = {}
            for v, d in zip(variables, out_dims):
                t = v.term
                if not (isinstance(t, tuple) and len(t) >= 2 and isinstance(t[1], int)):
                    raise NesyError(f"Kandinsky layout: variable {v.name} has no figure index")
                f = t[1]
                if f not in figs:
                    figs.append(f)
                off = per_fig.get(f, 0)
                self.slots.append((figs.index(f), off))
                per_fig[f] = off + d
            self.n_figs = len(figs)
            width = max(per_fig.values())
            if input_shape[2] != input_shape[1] * self.n_figs:
                raise NesyError(f"Kandinsky images are {input_shape[2]} px wide, expected "
                                f"{self.n_figs} square figures")
            self.net = SmallCNN(input_shape[0], width)
        elif layout == "whole":
            self.net = SmallCNN(input_shape[0], sum(out_dims))
        elif layout == "vector":
            self.net = MLP(input_shape[0], sum(out_dims), hidden=(128, 64))
        else:
            raise NesyError(f"unknown layout {layout!r}")

    def forward(self, x: Tensor) -> list[Tensor]:
        if self.layout == "tiles":
            tiles = x.unfold(3, 28, 28).permute(0, 3, 1, 2, 4)   # (B, n, 1, 28, 28)
            out = []
            cache: dict[str, tuple[list[int], Tensor]] = {}
            for k in dict.fromkeys(self.keys):
                ix = [i for i, kk in enumerate(self.keys) if kk == k]
                b = tiles[:, ix].reshape(-1, 1, 28, 28)
                cache[k] = (ix, self.nets[k.replace(":", "_")](b).reshape(x.shape[0], len(ix), -1))
            for i, k in enumerate(self.keys):
                ix, t = cache[k]
                out.append(t[:, ix.index(i)])
            return out
        if self.layout == "figures":
            h = x.shape[2]
            figs = x.unfold(3, h, h).permute(0, 3, 1, 2, 4)       # (B, F, C, h, h)
            y = self.net(figs.reshape(-1, *figs.shape[2:])).reshape(x.shape[0], self.n_figs, -1)
            return [y[:, f, off:off + d] for (f, off), d in zip(self.slots, self.out_dims)]
        y = self.net(x)
        return list(torch.split(y, self.out_dims, dim=1))
