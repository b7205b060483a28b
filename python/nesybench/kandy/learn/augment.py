"""Data augmentation for the KANDY learners (``kandy train --augment``; off by default, as in
the paper, whose supplementary reports that augmentation did not help).

Done in torch on the float batch ``[B, 3, S, S]`` (values in [0, 1]) each training step,
with its own seeded ``torch.Generator`` (the same seed gives the same augmented batches; with
augmentation off no random number is drawn, so runs without it are unchanged). Operations,
applied in this order to each picture independently:

* ``crop``: pad by ``S // 8`` pixels on every side (edge pixels repeated: the grey background
  extends), then cut an ``S × S`` window at a uniformly random offset (a shift of up to
  ``S // 8`` pixels in each direction);
* ``flip``: mirror left-right with probability 0.5;
* ``jitter``: brightness, contrast and saturation each scaled by a factor drawn uniformly in
  ``[1 − s, 1 + s]`` with ``s = 0.1``, then clipped to [0, 1].

Beware that the operations are not neutral for every KANDY rule: a flip swaps left and right
(order-sensitive tasks such as ``side_by_side`` sequences), a crop may cut a shape at the
border, and jitter moves colours towards their neighbours. Choose the subset that keeps the
curriculum's labels true (``--augment crop,jitter``).
"""
from __future__ import annotations

import torch

from ...errors import NesyError

AUGMENTATIONS = ("crop", "flip", "jitter")
JITTER = 0.1


def parse_augment(value) -> str:
    """``None``/``""``/``none`` → ``""``; ``all`` → ``crop,flip,jitter``; else a checked,
    de-duplicated comma list in canonical order."""
    if value is None:
        return ""
    text = str(value).strip().lower()
    if text in ("", "none", "off"):
        return ""
    if text == "all":
        return ",".join(AUGMENTATIONS)
    names = [t.strip() for t in text.split(",") if t.strip()]
    for n in names:
        if n not in AUGMENTATIONS:
            raise NesyError(f"unknown augmentation {n!r} (expected all or a comma list of "
                            f"{', '.join(AUGMENTATIONS)})", field="augment")
    return ",".join(a for a in AUGMENTATIONS if a in names)


def _u(gen: torch.Generator, n: int, lo: float, hi: float) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(n, generator=gen)


def augment(x: torch.Tensor, ops: str, gen: torch.Generator) -> torch.Tensor:
    """The batch ``x`` (float ``[B, 3, S, S]`` in [0, 1]) augmented by ``ops`` (see module
    docstring); random numbers from ``gen`` (CPU), a new tensor on ``x``'s device."""
    names = [o for o in ops.split(",") if o]
    if not names or x.shape[0] == 0:
        return x
    b, _, s, _ = x.shape
    dev = x.device
    if "crop" in names:
        p = max(1, s // 8)
        padded = torch.nn.functional.pad(x, (p, p, p, p), mode="replicate")
        oy = torch.randint(0, 2 * p + 1, (b,), generator=gen).tolist()
        ox = torch.randint(0, 2 * p + 1, (b,), generator=gen).tolist()
        x = torch.stack([padded[i, :, oy[i]:oy[i] + s, ox[i]:ox[i] + s] for i in range(b)])
    if "flip" in names:
        m = (torch.rand(b, generator=gen) < 0.5).to(dev)
        x = torch.where(m[:, None, None, None], x.flip(-1), x)
    if "jitter" in names:
        fb, fc, fs = (_u(gen, b, 1 - JITTER, 1 + JITTER).to(dev)[:, None, None, None]
                      for _ in range(3))
        x = x * fb
        mean = x.mean(dim=(1, 2, 3), keepdim=True)
        x = (x - mean) * fc + mean
        gray = (0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3])
        x = ((x - gray) * fs + gray).clamp_(0.0, 1.0)
    return x
