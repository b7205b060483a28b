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
* ``vit``, ``vit_b16``: a Vision Transformer (Dosovitskiy et al. 2021) written here: 16×16
  patches embedded by a stride-16 convolution, a class token, learned position embeddings,
  pre-norm encoder blocks (LayerNorm → multi-head self-attention → residual, LayerNorm → MLP
  with GELU → residual), a final LayerNorm, the class token's features into the heads.
  ``vit_b16`` has ViT-Base/16's dimensions (width 768, 12 blocks, 12 heads, MLP 3072; 85.8 M
  trunk parameters at 224×224); ``vit`` is a small configuration for the CPU (width 192, 6
  blocks, 3 heads, MLP 768). Both are trained from scratch. Parameter names follow the usual
  ViT-B/16 ImageNet checkpoints (``conv_proj``, ``class_token``, ``encoder.pos_embedding``,
  ``encoder.layers.encoder_layer_0.ln_1`` ... ``self_attention.in_proj_weight`` ...
  ``mlp.0``/``mlp.3``, ``encoder.ln``), so that such a checkpoint loads unchanged into
* ``vit_h``: ViT-B/16 loaded from a user's weights file (keys ``heads.*`` ignored; the
  position embeddings are resized bicubically when the input is not 224×224), frozen; only
  the heads learn (the paper's VIT-16 (H)). No download.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

import torch
from torch import nn

from ...errors import NesyError

MODELS = ("mlp", "cnn", "resnet50", "resnet50_h", "vit", "vit_b16", "vit_h")
#: models whose trunk comes from ``--weights`` (frozen; only the heads learn)
PRETRAINED = ("resnet50_h", "vit_h")
#: ViT configurations: (width, blocks, heads, MLP width); patch side 16
VIT_CONFIGS = {"vit": (192, 6, 3, 768), "vit_b16": (768, 12, 12, 3072),
               "vit_h": (768, 12, 12, 3072)}
VIT_PATCH = 16
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


class _Backbone(nn.Module):
    """A trunk (``[B, 3, H, W]`` → ``[B, width]``) + one logit per task. ``frozen``: the trunk
    is fixed (eval mode, no gradients) and inputs are normalised with ``mean``/``std``, the
    statistics its pretrained weights were trained on."""

    def __init__(self, trunk: nn.Module, width: int, heads: int, frozen: bool, mean, std):
        super().__init__()
        self.trunk = trunk
        self.heads = nn.Linear(width, heads)
        self.frozen = frozen
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1), persistent=False)
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
            with torch.no_grad():
                f = self.trunk((x - self.mean) / self.std)
            return self.heads(f)
        return self.heads(self.trunk(x))


class ResNet50(_Backbone):
    """ResNet-50 trunk + one logit per task. ``frozen``: the trunk is fixed (eval mode, no
    gradients) and inputs are ImageNet-normalised (the pretrained-head variant)."""

    def __init__(self, heads: int, frozen: bool = False):
        super().__init__(ResNet50Trunk(), 2048, heads, frozen, _MEAN, _STD)


class EncoderBlock(nn.Module):
    """Pre-norm transformer block: ``x + MSA(LN(x))``, then ``x + MLP(LN(x))``."""

    def __init__(self, dim: int, heads: int, mlp: int, dropout: float = 0.0):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(dim, heads, dropout=dropout,
                                                    batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(mlp, dim), nn.Dropout(dropout))
        for m in self.mlp:
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.normal_(m.bias, std=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ln_1(x)
        y, _ = self.self_attention(y, y, y, need_weights=False)
        x = x + self.dropout(y)
        return x + self.mlp(self.ln_2(x))


class ViTEncoder(nn.Module):
    def __init__(self, tokens: int, dim: int, depth: int, heads: int, mlp: int,
                 dropout: float = 0.0):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, tokens, dim).normal_(std=0.02))
        self.dropout = nn.Dropout(dropout)
        # names as in the usual checkpoints: layers.encoder_layer_0 ...
        self.layers = nn.Sequential(OrderedDict(
            (f"encoder_layer_{i}", EncoderBlock(dim, heads, mlp, dropout))
            for i in range(depth)))
        self.ln = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(self.layers(self.dropout(x + self.pos_embedding)))


class ViTTrunk(nn.Module):
    """ViT without its classifier: ``[B, 3, S, S]`` → class-token features ``[B, width]``
    (``S // 16`` patches per side; a remainder of the side is not seen)."""

    def __init__(self, size: int, dim: int, depth: int, heads: int, mlp: int,
                 patch: int = VIT_PATCH, dropout: float = 0.0):
        super().__init__()
        self.patch, self.dim = patch, dim
        self.grid = size // patch
        self.conv_proj = nn.Conv2d(3, dim, patch, stride=patch)
        fan_in = 3 * patch * patch
        nn.init.trunc_normal_(self.conv_proj.weight, std=(1.0 / fan_in) ** 0.5)
        nn.init.zeros_(self.conv_proj.bias)
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.encoder = ViTEncoder(self.grid * self.grid + 1, dim, depth, heads, mlp, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.conv_proj(x)                                  # [B, D, g, g]
        p = p.flatten(2).transpose(1, 2)                       # [B, g·g, D]
        cls = self.class_token.expand(p.shape[0], -1, -1)
        return self.encoder(torch.cat([cls, p], dim=1))[:, 0]


_VIT_MEAN = (0.5, 0.5, 0.5)      # the usual ViT-B/16 ImageNet checkpoints' normalisation
_VIT_STD = (0.5, 0.5, 0.5)


class ViT(_Backbone):
    """ViT trunk + one logit per task; ``frozen`` as in :class:`ResNet50`."""

    def __init__(self, size: int, heads: int, dim: int, depth: int, n_heads: int, mlp: int,
                 frozen: bool = False):
        super().__init__(ViTTrunk(size, dim, depth, n_heads, mlp), dim, heads, frozen,
                         _VIT_MEAN, _VIT_STD)


def _resize_pos_embedding(pe: torch.Tensor, tokens: int) -> torch.Tensor:
    """Position embeddings [1, 1 + g², D] of a checkpoint resized (bicubic, on the patch
    grid) to ``tokens`` = 1 + h² entries; the class token's entry is kept."""
    g_old = int(round((pe.shape[1] - 1) ** 0.5))
    g_new = int(round((tokens - 1) ** 0.5))
    if g_old * g_old + 1 != pe.shape[1] or g_new * g_new + 1 != tokens:
        raise ValueError("not a square patch grid")
    grid = pe[:, 1:].reshape(1, g_old, g_old, -1).permute(0, 3, 1, 2)
    grid = nn.functional.interpolate(grid.float(), size=(g_new, g_new), mode="bicubic",
                                     align_corners=False)
    return torch.cat([pe[:, :1], grid.permute(0, 2, 3, 1).reshape(1, g_new * g_new, -1)], 1)


#: the largest --weights file read (a ViT-B/16 checkpoint is about 330 MB)
MAX_WEIGHTS_BYTES = 1 << 30


def _read_state_dict(path) -> tuple[Path, dict]:
    """The ``state_dict`` of the checkpoint ``path`` (``--weights``), read through
    :func:`nesybench.folder.read_input` (a regular file of at most :data:`MAX_WEIGHTS_BYTES`)
    and, for a zip checkpoint (torch's format since 1.6), its entries' declared sizes checked
    by :func:`nesybench.folder.check_zip` before torch decompresses anything; then
    ``torch.load(..., weights_only=True)`` on the bytes (tensors only, no code)."""
    import io  # noqa: PLC0415
    import warnings  # noqa: PLC0415

    from ...folder import check_zip, read_input  # noqa: PLC0415
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise NesyError("weights file not found", file=str(p), field="weights")
    try:
        data = read_input(p, max_bytes=MAX_WEIGHTS_BYTES)
        if data[:2] == b"PK":           # the zip format; the legacy format is not compressed
            check_zip(data, str(p), max_bytes=MAX_WEIGHTS_BYTES)
    except NesyError as exc:
        raise exc.where(field="weights") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sd = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unpickling problem is bad input
        raise NesyError(f"cannot read weights (a torch state_dict is expected): "
                        f"{str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}",
                        file=str(p), field="weights") from None
    del data
    if isinstance(sd, dict) and isinstance(sd.get("state_dict"), dict):
        sd = sd["state_dict"]
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise NesyError("not a state_dict of tensors", file=str(p), field="weights")
    return p, sd


def _check_and_load(trunk: nn.Module, sd: dict, p: Path, what: str) -> None:
    own = trunk.state_dict()
    for k, v in own.items():
        if k not in sd:
            raise NesyError(f"weights lack tensor {k!r} (expected a {what} checkpoint)",
                            file=str(p), field="weights")
        if tuple(sd[k].shape) != tuple(v.shape):
            raise NesyError(f"tensor {k!r} has shape {tuple(sd[k].shape)}, the model needs "
                            f"{tuple(v.shape)}", file=str(p), field="weights")
    extra = sorted(set(sd) - set(own))
    if extra:
        raise NesyError(f"unexpected tensor {extra[0]!r} in the weights (expected a {what} "
                        f"checkpoint)", file=str(p), field="weights")
    trunk.load_state_dict(sd)


def load_vit_weights(trunk: ViTTrunk, path: str | os.PathLike) -> None:
    """Load a ViT-B/16 ``state_dict`` into ``trunk``, shape-checked key by key (``heads.*``
    and a ``module.`` prefix ignored; older ``mlp.linear_1``/``linear_2`` names accepted;
    position embeddings resized to the trunk's patch grid)."""
    p, sd = _read_state_dict(path)
    out = {}
    for k, v in sd.items():
        k = k.removeprefix("module.")
        if k.startswith("heads."):
            continue
        k = k.replace(".mlp.linear_1.", ".mlp.0.").replace(".mlp.linear_2.", ".mlp.3.")
        out[k] = v
    pe = out.get("encoder.pos_embedding")
    want = trunk.encoder.pos_embedding.shape
    if pe is not None and pe.dim() == 3 and pe.shape[2] == want[2] and pe.shape[1] != want[1]:
        try:
            out["encoder.pos_embedding"] = _resize_pos_embedding(pe, want[1])
        except ValueError:
            pass                      # reported as a shape mismatch below
    _check_and_load(trunk, out, p, "ViT-B/16")


def load_trunk_weights(trunk: nn.Module, path: str | os.PathLike) -> None:
    """Load a ResNet-50 ``state_dict`` file into ``trunk``, shape-checked key by key.

    Accepts a bare state dict or ``{"state_dict": ...}``; ignores ``fc.*`` (the ImageNet
    classifier) and a ``module.`` prefix. Any missing key, unexpected key or wrong shape is a
    :class:`NesyError` naming the first offending tensor.
    """
    p, sd = _read_state_dict(path)
    sd = {k.removeprefix("module."): v for k, v in sd.items() if not k.removeprefix(
        "module.").startswith("fc.")}
    _check_and_load(trunk, sd, p, "ResNet-50")


def build_model(name: str, *, size: int, heads: int, weights: str | None = None,
                dropout: float = 0.5) -> nn.Module:
    """A fresh model ``name`` (one of :data:`MODELS`) for ``size``×``size`` inputs."""
    if name not in MODELS:
        raise NesyError(f"unknown model {name!r} (expected one of {', '.join(MODELS)})",
                        field="model")
    if name in PRETRAINED and not weights:
        kind = "ResNet-50" if name == "resnet50_h" else "ViT-B/16"
        raise NesyError(f"model {name} needs a weights file (--weights PATH.pt: a {kind} "
                        f"state_dict; nothing is downloaded)", field="weights")
    if weights and name not in PRETRAINED:
        raise NesyError(f"--weights is only used by resnet50_h and vit_h, not {name}",
                        field="weights")
    if name in VIT_CONFIGS:
        if size < VIT_PATCH:
            raise NesyError(f"a ViT needs inputs of at least {VIT_PATCH}×{VIT_PATCH} pixels "
                            f"(one 16×16 patch), got {size}", field="size")
        dim, depth, n_heads, mlp = VIT_CONFIGS[name]
        model = ViT(size, heads, dim, depth, n_heads, mlp, frozen=(name == "vit_h"))
        if weights:
            load_vit_weights(model.trunk, weights)
        return model
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
