"""The KANDY rasteriser as it was before its fast paths: the straightforward per-sample form
that :mod:`nesybench.kandy.render`'s drawing is checked against, bit for bit.

:func:`coverages` evaluates each shape's inside test on every one of the ``(tile·ss)²``
sample points of its tile and sums them per pixel; :func:`draw_batch` fills the whole work
buffer with the background, then blends the shapes layer by layer. Both are copies of
``render._coverages`` / ``render._draw_batch`` (with their helpers) as of the commit that
introduced the faster forms; they are kept here unchanged so that any later change of the
renderer can be compared with them pixel for pixel.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from nesybench.kandy.render import SHAPES

_SQRT3 = math.sqrt(3.0)

#: word type, byte-summing multiplier and shift for :func:`box_sum` of 0/1 bytes
_WORDS = {2: (np.uint16, np.uint16(0x0101), 8), 4: (np.uint32, np.uint32(0x01010101), 24),
          8: (np.uint64, np.uint64(0x0101010101010101), 56)}

#: most sub-pixel samples rasterised in one vectorised pass
BATCH_SAMPLES = 1 << 18


@lru_cache(maxsize=16)
def sample_offsets(tile: int, ss: int) -> np.ndarray:
    """Sub-pixel sample positions along one axis of a tile: pixel ``i`` gets
    ``i + (k + 0.5) / ss`` for ``k < ss``, shape ``(tile * ss,)``."""
    offs = (np.arange(ss, dtype=np.float64) + 0.5) / ss
    return np.repeat(np.arange(tile, dtype=np.float64), ss) + np.tile(offs, tile)


def coverages(kind: str, cx: np.ndarray, cy: np.ndarray, size: np.ndarray,
              x0: np.ndarray, y0: np.ndarray, tile: int, ss: int) -> np.ndarray:
    """uint16 alpha (N × tile × tile) of N shapes of one ``kind``, each over its own pixel
    tile with top-left pixel (x0, y0): the rounded fraction (0..255) of every pixel's ``ss²``
    samples that pass the shape's inside test."""
    grid = sample_offsets(tile, ss)
    X = ((x0[:, None] + grid[None, :]) - cx[:, None])[:, None, :]       # (N, 1, tile*ss)
    Y = ((y0[:, None] + grid[None, :]) - cy[:, None])[:, :, None]       # (N, tile*ss, 1)
    rr = (size / 2.0)[:, None, None]
    if kind == "square":
        cnt = box_sum(np.abs(Y) <= rr, ss, axis=1) * box_sum(np.abs(X) <= rr, ss, axis=2)
    else:
        if kind == "circle":
            inside = X * X + Y * Y <= rr * rr
        else:  # equilateral triangle, side = size, apex up, bounding box centred at (cx, cy)
            half_h = size[:, None, None] * _SQRT3 / 4.0
            inside = (Y <= half_h) & (_SQRT3 * np.abs(X) <= Y + half_h)
        cnt = box_sum(box_sum(inside, ss, axis=2), ss, axis=1)
    return (cnt * 255 + (ss * ss) // 2) // (ss * ss)


def box_sum(a: np.ndarray, ss: int, axis: int) -> np.ndarray:
    """Sum groups of ``ss`` consecutive entries along ``axis`` (1 or 2) of a 3-d array, as
    uint16."""
    if a.dtype == bool:
        a = a.view(np.uint8)
        word = _WORDS.get(ss)
        if axis == 2 and word is not None and a.flags.c_contiguous:
            dtype, ones, shift = word
            return ((a.view(dtype) * ones) >> shift).astype(np.uint16)
    parts = [a[:, k::ss, :] if axis == 1 else a[:, :, k::ss] for k in range(ss)]
    out = parts[0].astype(np.uint16)
    for part in parts[1:]:
        out += part
    return out


def draw_batch(dims: tuple[int, int, int], base, shapes, ss: int,
               scratch: list | None = None) -> tuple[np.ndarray, int]:
    """Composite every shape of ``shapes`` (a ``render._Shapes``) onto its picture, as
    ``render._draw_batch`` did: returns the ``(B, H + 2m, W + 2m, 3)`` work array and the
    margin ``m``; the pictures are ``out[:, m:m + H, m:m + W]``."""
    B, H, W = dims
    n = len(shapes.kind)
    geom = np.array(shapes.geom, dtype=np.float64).reshape(n, 3)
    cx, cy, size = geom[:, 0], geom[:, 1], geom[:, 2]
    r = size / 2.0
    x0 = np.floor(cx - r) - 1
    y0 = np.floor(cy - r) - 1
    need = np.maximum(np.ceil(cx + r) + 1 - x0, np.ceil(cy + r) + 1 - y0).astype(np.int64)
    tile = -(-need // 4) * 4
    xi, yi = x0.astype(np.int64), y0.astype(np.int64)
    seen = (xi < W) & (yi < H) & (xi + tile > 0) & (yi + tile > 0)
    m = int(np.max(np.maximum.reduce([-xi, -yi, xi + tile - W, yi + tile - H],
                                     where=seen, initial=0), initial=0))
    dims_work = (B, H + 2 * m, W + 2 * m, 3)
    if scratch is None:
        work = np.empty(dims_work, dtype=np.uint8)
    else:
        need_bytes = math.prod(dims_work)
        if not scratch or scratch[0].size < need_bytes:
            scratch[:] = [np.empty(need_bytes, dtype=np.uint8)]
        work = scratch[0][:need_bytes].reshape(dims_work)
    if isinstance(base, np.ndarray):
        if m:
            work[:] = base[:, :1, :1]
        work[:, m:m + H, m:m + W] = base
    else:
        work.reshape(B, H + 2 * m, 3 * (W + 2 * m))[:] = np.tile(
            np.array(base, dtype=np.uint8), W + 2 * m)
    image = np.array(shapes.image, dtype=np.int64)
    layer = np.array(shapes.layer, dtype=np.int64)
    cols = np.array(shapes.rgb, dtype=np.uint16).reshape(n, 3)
    kinds = np.array([SHAPES.index(k) for k in shapes.kind], dtype=np.int64)

    keeps: dict[int, np.ndarray] = {}
    adds: dict[int, np.ndarray] = {}
    row = np.zeros(n, dtype=np.int64)
    for t in np.unique(tile[seen]).tolist():
        members = np.flatnonzero(seen & (tile == t))
        row[members] = np.arange(len(members))
        alpha = np.empty((len(members), t, t), dtype=np.uint16)
        step = max(1, BATCH_SAMPLES // (t * ss) ** 2)
        for kind in np.unique(kinds[members]).tolist():
            sel = np.flatnonzero(kinds[members] == kind)
            for k in range(0, len(sel), step):
                part = sel[k:k + step]
                idx = members[part]
                alpha[part] = coverages(SHAPES[kind], cx[idx], cy[idx], size[idx],
                                        x0[idx], y0[idx], t, ss)
        alpha = np.repeat(alpha, 3, axis=2)                           # (g, t, 3t)
        keeps[t] = 255 - alpha
        alpha *= np.tile(cols[members], (1, t))[:, None, :]
        alpha += 127
        adds[t] = alpha

    if not seen.any():
        return work, m
    order = np.lexsort((tile, layer))
    order = order[seen[order]]
    key = layer[order] * (int(tile.max()) + 1) + tile[order]
    cuts = np.flatnonzero(np.diff(key)) + 1
    rows = work.reshape(B, H + 2 * m, 3 * (W + 2 * m))
    windows: dict[int, np.ndarray] = {}
    for grp in np.split(order, cuts):
        t = int(tile[grp[0]])
        win = windows.get(t)
        if win is None:
            win = windows[t] = np.lib.stride_tricks.sliding_window_view(
                rows, (t, 3 * t), axis=(1, 2), writeable=True)
        at = (image[grp], yi[grp] + m, 3 * (xi[grp] + m))
        k = row[grp]
        region = win[at].astype(np.uint16)
        region *= keeps[t][k]
        region += adds[t][k]
        region //= 255
        win[at] = region
    return work, m
