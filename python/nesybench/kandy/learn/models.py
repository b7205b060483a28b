"""The paper's neural baselines (KANDY §4), each a trunk plus one output unit per task.

Every model maps images float ``[B, 3, S, S]`` in [0, 1] to logits ``[B, heads]``; head ``j``
is task ``j``'s binary predictor ``m_j = sigmoid(logit_j)`` (the sigmoid lives in the loss,
``BCEWithLogits``, and in :func:`predict`).

* ``mlp``: pixels → 100 tanh units → heads (spatial information is lost, as in the paper).
* ``cnn``: conv 64 5×5 → max-pool 2 → conv 128 3×3 stride 2 → max-pool 2 → conv 256 3×3
  stride 2 → adaptive max-pool to 5×5 → dense 4096 (ReLU, dropout 0.5) → heads. ReLU after
  every conv. At 224×224 input the last conv map is 13×13; at 64×64 it is 3×3 and the
  adaptive pool replicates it to 5×5 (same parameter count as the paper's).
* ``resnet50``: He et al. (2016) bottleneck ResNet-50 ([3, 4, 6, 3] blocks, 2048 features,
  global average pool), trained from scratch. Parameter names follow the usual ImageNet
  checkpoints (``conv1``, ``bn1``, ``layer1.0.conv1`` ... ``downsample.0``), so that such
  a checkpoint loads unchanged into
* ``resnet50_h``: the same trunk loaded from a user's weights file (a ``state_dict``; keys
  ``fc.*`` are ignored), frozen; only the heads learn (paper's RESNET-50 (H)). No download.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from ...errors import NesyError

MODELS = ("mlp", "cnn", "resnet50", "resnet50_h")
#: smallest input side for which the CNN's last conv still has a 3×3 map to read
CNN_MIN_SIZE = 30
#: smallest input side for which ResNet-50's last stage keeps a 2×2 map
RESNET_MIN_SIZE = 33


class MLP(nn.Module):
    """Pixels → ``hidden`` tanh units → ``heads`` logits."""

    def __init__(self, size: int, heads: int, hidden: int = 100):
        super().__init__()
        self.trunk = nn.Sequential(nn.Flatten(), nn.Linear(3 * size * size, hidden), nn.Tanh())
        self.heads = nn.Linear(hidden, heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.heads(self.trunk(x))


class CNN(nn.Module):
    """The paper's CNN (see module docstring); ``dropout`` before the heads."""

    def __init__(self, heads: int, dropout: float = 0.5):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Conv2d(3, 64, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, stride=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(128, 256, 3, stride=2), nn.ReLU(), nn.AdaptiveMaxPool2d(5),
            nn.Flatten(), nn.Linear(256 * 5 * 5, 4096), nn.ReLU(), nn.Dropout(dropout))
        self.heads = nn.Linear(4096, heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.heads(self.trunk(x))


class Bottleneck(nn.Module):
    """1×1 reduce → 3×3 (stride here) → 1×1 expand ×4, batch norm, identity or projection."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1):
        super().__init__()
        out = planes * self.expansion
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != out:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride=stride,
                                                      bias=False), nn.BatchNorm2d(out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + idt)


class ResNet50Trunk(nn.Module):
    """ResNet-50 without its classifier: ``[B, 3, S, S]`` → ``[B, 2048]``."""

    def __init__(self, layers=(3, 4, 6, 3)):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        inplanes = 64
        for i, (planes, blocks) in enumerate(zip((64, 128, 256, 512), layers)):
            stride = 1 if i == 0 else 2
            mods = []
            for b in range(blocks):
                mods.append(Bottleneck(inplanes, planes, stride if b == 0 else 1))
                inplanes = planes * Bottleneck.expansion
            setattr(self, f"layer{i + 1}", nn.Sequential(*mods))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return torch.flatten(self.avgpool(x), 1)


#: ImageNet normalisation applied in front of the pretrained trunk (its training inputs)
_MEAN = (0.485, 0.456, 0.406)
_STD = (0.229, 0.224, 0.225)


class ResNet50(nn.Module):
    """ResNet-50 trunk + one logit per task. ``frozen``: the trunk is fixed (eval mode, no
    gradients) and inputs are ImageNet-normalised (the pretrained-head variant)."""

    def __init__(self, heads: int, frozen: bool = False):
        super().__init__()
        self.trunk = ResNet50Trunk()
        self.heads = nn.Linear(2048, heads)
        self.frozen = frozen
        self.register_buffer("mean", torch.tensor(_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(_STD).view(1, 3, 1, 1), persistent=False)
        if frozen:
            for p in self.trunk.parameters():
                p.requires_grad_(False)

    def train(self, mode: bool = True):
        super().train(mode)
        if self.frozen:
            self.trunk.eval()
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.frozen:
            x = (x - self.mean) / self.std
            with torch.no_grad():
                f = self.trunk(x)
            return self.heads(f)
        return self.heads(self.trunk(x))


def load_trunk_weights(trunk: nn.Module, path: str | os.PathLike) -> None:
    """Load a ResNet-50 ``state_dict`` file into ``trunk``, shape-checked key by key.

    Accepts a bare state dict or ``{"state_dict": ...}``; ignores ``fc.*`` (the ImageNet
    classifier) and a ``module.`` prefix. Any missing key, unexpected key or wrong shape is a
    :class:`NesyError` naming the first offending tensor.
    """
    p = Path(path)
    if not p.is_file():
        raise NesyError("weights file not found", file=str(p), field="weights")
    try:
        sd = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unpickling problem is bad input
        raise NesyError(f"cannot read weights (a torch state_dict is expected): {exc}",
                        file=str(p), field="weights") from None
    if isinstance(sd, dict) and isinstance(sd.get("state_dict"), dict):
        sd = sd["state_dict"]
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise NesyError("not a state_dict of tensors", file=str(p), field="weights")
    sd = {k.removeprefix("module."): v for k, v in sd.items() if not k.removeprefix(
        "module.").startswith("fc.")}
    own = trunk.state_dict()
    for k, v in own.items():
        if k not in sd:
            raise NesyError(f"weights lack tensor {k!r} (expected a ResNet-50 checkpoint)",
                            file=str(p), field="weights")
        if tuple(sd[k].shape) != tuple(v.shape):
            raise NesyError(f"tensor {k!r} has shape {tuple(sd[k].shape)}, the model needs "
                            f"{tuple(v.shape)}", file=str(p), field="weights")
    extra = sorted(set(sd) - set(own))
    if extra:
        raise NesyError(f"unexpected tensor {extra[0]!r} in the weights (expected a ResNet-50 "
                        f"checkpoint)", file=str(p), field="weights")
    trunk.load_state_dict(sd)


def build_model(name: str, *, size: int, heads: int, weights: str | None = None,
                dropout: float = 0.5) -> nn.Module:
    """A fresh model ``name`` (one of :data:`MODELS`) for ``size``×``size`` inputs."""
    if name not in MODELS:
        raise NesyError(f"unknown model {name!r} (expected one of {', '.join(MODELS)})",
                        field="model")
    if name == "resnet50_h" and not weights:
        raise NesyError("model resnet50_h needs a weights file (--weights PATH.pt: a "
                        "ResNet-50 state_dict; nothing is downloaded)", field="weights")
    if weights and name != "resnet50_h":
        raise NesyError(f"--weights is only used by resnet50_h, not {name}", field="weights")
    if name == "mlp":
        return MLP(size, heads)
    if name == "cnn":
        if size < CNN_MIN_SIZE:
            raise NesyError(f"the CNN needs inputs of at least {CNN_MIN_SIZE}×{CNN_MIN_SIZE} "
                            f"pixels (its third conv has nothing left to convolve), got {size}",
                            field="size")
        return CNN(heads, dropout=dropout)
    if name == "resnet50" and size < RESNET_MIN_SIZE:
        raise NesyError(f"ResNet-50 trained from scratch needs inputs of at least "
                        f"{RESNET_MIN_SIZE}×{RESNET_MIN_SIZE} pixels (smaller ones leave a 1×1 "
                        f"map whose batch norm cannot train on one sample), got {size}",
                        field="size")
    model = ResNet50(heads, frozen=(name == "resnet50_h"))
    if weights:
        load_trunk_weights(model.trunk, weights)
    return model
