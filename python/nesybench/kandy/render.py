"""Render KANDY symbols (trees of compositional operators over atomic shapes) to images.

Paper reference: KANDY main §3.1 ("Compositional operators", "Image rendering") and
supplementary §4.3. Rendering is split in two pure steps:

1. :func:`layout` turns a symbol into a flat list of placed atomic shapes
   ``(Shape, (cx, cy, size_px))`` — centre in pixels (x right, y down, origin at the top-left
   corner of the canvas) and the side of the shape's bounding square in pixels. Every
   compositional operator only *places its children's bounding boxes*; atomic shapes always keep
   their configured pixel size (plus optional noise) whatever their depth, centred in the box
   they are given (supp. §4.3).
2. :func:`render` draws those shapes with analytic supersampled coverage (``supersample``\\ ²
   sample points per pixel, i.e. a box filter: antialiased edges, exact interior colours, no
   ringing) over a flat background, and applies colour noise in HSV.

Determinism: all randomness comes from ``numpy.random.Generator(PCG64(seed))`` consumed in a
fixed order (layout in depth-first child order — size noise, then ``random`` placements — then
one HSV triple per leaf in drawing order). Drawing uses only IEEE arithmetic and integer
compositing, so the same seed gives the same pixel bytes on any machine. Dataset PNGs are
written by :func:`encode_png` (unfiltered rows, no metadata, deflated by
:data:`PNG_DEFLATE`: zlib-ng level 2, or zlib level :data:`PNG_COMPRESS_LEVEL` without the
``zlib-ng`` package); their bytes are a function of the pixels and that encoder's version.

Speed: the generator draws pictures in batches (:func:`render_batch`). The shapes of a whole
batch are rasterised in a few vectorised numpy passes (one per kind and tile size,
:func:`_coverages`), then composited with exact uint16 arithmetic in passes that each blend
the k-th shape of every picture (:func:`_draw_batch`), so that the numpy call count grows
with the most shapes in one picture, not with the number of pictures.

Operator layouts inside a box ``(x, y, w, h)`` with ``n`` children (child ``i`` from 0):

========================  =============================================================
``in``                    every child gets the whole box (drawn in order, later on top)
``quadrant_ul/ur/ll/lr``  every child gets the upper-left/upper-right/lower-left/lower-right
                          quarter of the box
``stack``                 row ``i`` of ``n`` equal rows, full width (top to bottom)
``side_by_side``          column ``i`` of ``n`` equal columns, full height (left to right)
``stack_reduce_bb``       as ``stack`` but the child box is ``w/n × h/n``, centred horizontally
``side_by_side_reduce_bb`` as ``side_by_side`` but ``w/n × h/n``, centred vertically
``diag_ul_lr``            cell ``(i, i)`` of an ``n × n`` grid (upper-left → lower-right)
``diag_ll_ur``            cell ``(row n-1-i, column i)`` (lower-left → upper-right)
``grid``                  smallest ``k`` with ``k² ≥ n``; cell ``(i // k, i % k)`` row-major
``random``                each child is laid out in a ``w/k × h/k`` box (``k`` as for grid)
                          and translated uniformly at random so that its shapes stay inside
                          the box; greedy rejection (``patience`` tries) against the shapes
                          already placed by this operator, no backtracking; if every try
                          overlaps, the try with the least overlap is kept
========================  =============================================================

The drawable area is the canvas minus ``padding`` pixels on every side.

No shape leaves the canvas (format 1.1): after a child is laid out in its slot, its shapes are
translated as one group the least distance that brings them inside the *operator's* box
(:func:`_fit_into`; centred when they are larger than it), and the whole picture likewise into
the drawable area. Only children larger than their slot move; crowded compositions (more
shape than room) overlap, as the paper's footnote 4 allows, but never leave the canvas. Format
1.0 centred every shape in its slot and clipped 394 of 1,800 Hard samples at the border.
"""
from __future__ import annotations

import colorsys
import hashlib
import io
import json
import math
import os
import re
import struct
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image

from ..errors import NesyError
from .symbols import COMPOSITIONS, Composite, Shape, Symbol, from_json, from_prolog

#: Atomic shapes the renderer can draw.
SHAPES = ("triangle", "square", "circle")

#: Default RGB table for the default :class:`~nesybench.kandy.symbols.Domain` colours.
DEFAULT_COLORS = {
    "red": "#ff0000",
    "green": "#00ff00",
    "blue": "#0000ff",
    "cyan": "#00ffff",
    "magenta": "#ff00ff",
    "yellow": "#ffff00",
}

#: Default sizes (side of the bounding square, pixels).
DEFAULT_SIZES = {"small": 10, "large": 25}

#: Pillow options for pictures saved through PIL (sample grids): no metadata is ever attached.
PNG_SAVE_OPTIONS = {"format": "PNG", "optimize": False, "compress_level": 6}

#: zlib level of the dataset images when zlib-ng is not installed (see :data:`PNG_DEFLATE`).
PNG_COMPRESS_LEVEL = 3

#: zlib-ng level of the dataset images (its ``deflate_fast``: greedy matching)
PNG_ZLIB_NG_LEVEL = 2

try:
    # zlib-ng at level 2 writes these pictures ~2.3x faster than zlib at level 3, and a quarter
    # smaller. Its matcher is portable C (one hash function; the SIMD parts only compare bytes
    # and return exact lengths) on a window it zeroes itself, so its bytes are a function of
    # the input and the zlib-ng version, whatever the CPU. ISA-L's level 1, faster still,
    # once gave two processes of one run different bytes for the same pixels.
    from zlib_ng import zlib_ng as _zlib_ng
except ImportError:  # pragma: no cover - zlib-ng is a dependency; zlib keeps a bare install working
    _zlib_ng = None

#: The deflate behind the dataset images (:func:`encode_png` without ``level``), as written
#: to a dataset's manifest: PNG bytes are a function of the pixels and this encoder.
PNG_DEFLATE = (f"zlib-ng {_zlib_ng.ZLIBNG_VERSION} level {PNG_ZLIB_NG_LEVEL}"
               if _zlib_ng is not None
               else f"zlib {zlib.ZLIB_RUNTIME_VERSION} level {PNG_COMPRESS_LEVEL} memLevel 5")

_HEX = re.compile(r"^#[0-9a-fA-F]{6}$")
_NAME = re.compile(r"^[a-z][a-z0-9]*$")


def hex_to_rgb(text: str) -> tuple[int, int, int]:
    """``"#7f7f7f"`` → ``(127, 127, 127)``; raises :class:`NesyError` on anything else."""
    if not isinstance(text, str) or not _HEX.match(text):
        raise NesyError(f"not a #rrggbb colour: {text!r}")
    return int(text[1:3], 16), int(text[3:5], 16), int(text[5:7], 16)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass
class RenderConfig:
    """How symbols become pictures (defaults: the KANDY paper's supplementary §4 and the reference configuration).

    Attributes
    ----------
    canvas : (width, height) in pixels, default (224, 224)
    background : "#rrggbb" background colour, default "#7f7f7f"
    padding : empty margin on every side of the canvas, pixels (default 3)
    sizes : size name → side of the shape's bounding square in pixels ({"small": 10, "large": 25})
    size_noise : half-width of the uniform size noise U(−a, a), pixels (default 2)
    hsv_sigma : std-devs of the Gaussian noise added to (H, S, V), all in [0, 1] units;
        hue wraps around, saturation and value are clipped to [0, 1]. Default (0.01, 0.2, 0.2)
    colors : colour name → "#rrggbb" (default: the six Domain colours)
    supersample : sample points per pixel along each axis for antialiasing (default 4 → 16/px)
    noisy_color, noisy_size : default noise switches used when :func:`render` is not told
    patience : tries per child of ``random`` before accepting an overlap (default 100)
    """

    canvas: tuple[int, int] = (224, 224)
    background: str = "#7f7f7f"
    padding: int = 3
    sizes: dict = field(default_factory=lambda: dict(DEFAULT_SIZES))
    size_noise: float = 2.0
    hsv_sigma: tuple[float, float, float] = (0.01, 0.2, 0.2)
    colors: dict = field(default_factory=lambda: dict(DEFAULT_COLORS))
    supersample: int = 4
    noisy_color: bool = True
    noisy_size: bool = True
    patience: int = 100

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> "RenderConfig":
        """Check every field; raise :class:`NesyError` naming the bad field."""
        def bad(fld: str, msg: str):
            raise NesyError(msg, field=f"render.{fld}")

        c = self.canvas
        if (not isinstance(c, (tuple, list)) or len(c) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in c)):
            bad("canvas", f"canvas must be [width, height] in integer pixels, got {c!r}")
        if not all(8 <= v <= 8192 for v in c):
            bad("canvas", f"canvas sides must be between 8 and 8192 pixels, got {list(c)}")
        self.canvas = (int(c[0]), int(c[1]))
        try:
            hex_to_rgb(self.background)
        except NesyError as e:
            bad("background", e.message)
        p = self.padding
        if not isinstance(p, int) or isinstance(p, bool) or p < 0:
            bad("padding", f"padding must be a non-negative integer, got {p!r}")
        if 2 * p >= min(self.canvas):
            bad("padding", f"padding {p} leaves no drawable area on a {list(self.canvas)} canvas")
        if not isinstance(self.sizes, Mapping) or not self.sizes:
            bad("sizes", f"sizes must be a non-empty mapping name → pixels, got {self.sizes!r}")
        for name, px in self.sizes.items():
            if not isinstance(name, str) or not _NAME.match(name):
                bad(f"sizes.{name}", f"size name {name!r} must be a lowercase atom without '_'")
            if not _is_number(px) or px <= 0:
                bad(f"sizes.{name}", f"size must be a positive number of pixels, got {px!r}")
        self.sizes = dict(self.sizes)
        if not _is_number(self.size_noise) or self.size_noise < 0:
            bad("size_noise", f"size_noise must be a number >= 0, got {self.size_noise!r}")
        s = self.hsv_sigma
        if (not isinstance(s, (tuple, list)) or len(s) != 3
                or not all(_is_number(v) and v >= 0 for v in s)):
            bad("hsv_sigma", f"hsv_sigma must be three numbers >= 0 (H, S, V), got {s!r}")
        self.hsv_sigma = tuple(float(v) for v in s)
        if not isinstance(self.colors, Mapping) or not self.colors:
            bad("colors", f"colors must be a non-empty mapping name → #rrggbb, got {self.colors!r}")
        for name, hx in self.colors.items():
            if not isinstance(name, str) or not _NAME.match(name):
                bad(f"colors.{name}", f"colour name {name!r} must be a lowercase atom without '_'")
            try:
                hex_to_rgb(hx)
            except NesyError as e:
                bad(f"colors.{name}", e.message)
        self.colors = dict(self.colors)
        ss = self.supersample
        if not isinstance(ss, int) or isinstance(ss, bool) or not 1 <= ss <= 16:
            bad("supersample", f"supersample must be an integer in 1..16, got {ss!r}")
        for fld in ("noisy_color", "noisy_size"):
            if not isinstance(getattr(self, fld), bool):
                bad(fld, f"{fld} must be true or false, got {getattr(self, fld)!r}")
        pt = self.patience
        if not isinstance(pt, int) or isinstance(pt, bool) or pt < 1:
            bad("patience", f"patience must be a positive integer, got {pt!r}")
        return self

    def to_dict(self) -> dict:
        """Plain JSON-able dict (lists instead of tuples); inverse of :meth:`from_dict`."""
        d = asdict(self)
        d["canvas"] = list(self.canvas)
        d["hsv_sigma"] = list(self.hsv_sigma)
        return d

    @classmethod
    def from_dict(cls, d: Mapping | None) -> "RenderConfig":
        """Build from a (partial) dict; unknown keys raise :class:`NesyError`."""
        if d is None:
            return cls()
        if isinstance(d, RenderConfig):
            return d
        if not isinstance(d, Mapping):
            raise NesyError(f"render config must be a mapping, got {type(d).__name__}",
                            field="render")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(d) - known)
        if unknown:
            raise NesyError(f"unknown render option(s) {unknown}; known: {sorted(known)}",
                            field=f"render.{unknown[0]}")
        kw = dict(d)
        for key in ("canvas", "hsv_sigma"):
            if isinstance(kw.get(key), list):
                kw[key] = tuple(kw[key])
        return cls(**kw)


# --------------------------------------------------------------------------------------------
# Layout
# --------------------------------------------------------------------------------------------

def as_symbol(obj) -> Symbol:
    """Accept a Shape/Composite, its JSON dict, JSON text or Prolog text."""
    if isinstance(obj, (Shape, Composite)):
        return obj
    try:
        if isinstance(obj, str):
            text = obj.strip()
            if text.startswith("{"):
                from ..folder import json_loads  # noqa: PLC0415
                return from_json(json_loads(text))
            return from_prolog(text)
        return from_json(obj)
    except (ValueError, IndexError) as exc:
        raise NesyError(f"cannot read symbol: {exc}") from None


def _grid_side(n: int) -> int:
    """Smallest k with k*k >= n (k >= 1)."""
    return 1 if n <= 1 else math.isqrt(n - 1) + 1


def _check_leaf(s: Shape, cfg: RenderConfig) -> None:
    if s.shape not in SHAPES:
        raise NesyError(f"unknown shape {s.shape!r} in {s.to_prolog()} (known: {list(SHAPES)})")
    if s.color not in cfg.colors:
        raise NesyError(f"colour {s.color!r} of {s.to_prolog()} has no RGB value in the render "
                        f"config (known: {list(cfg.colors)})")
    if s.size not in cfg.sizes:
        raise NesyError(f"size {s.size!r} of {s.to_prolog()} has no pixel value in the render "
                        f"config (known: {list(cfg.sizes)})")


def _extent(items) -> tuple[float, float, float, float]:
    # one pass (layout calls this for every child of every composition)
    _, cx, cy, s = items[0]
    x0, y0, x1, y1 = cx - s / 2, cy - s / 2, cx + s / 2, cy + s / 2
    for _, cx, cy, s in items[1:]:
        h = s / 2
        if cx - h < x0:
            x0 = cx - h
        if cy - h < y0:
            y0 = cy - h
        if cx + h > x1:
            x1 = cx + h
        if cy + h > y1:
            y1 = cy + h
    return x0, y0, x1, y1


def _overlap_area(a, b, gap: float = 1.0) -> float:
    """Overlap of two placed shapes' bounding squares, each grown by ``gap/2`` px."""
    _, ax, ay, asz = a
    _, bx, by, bsz = b
    h = (asz + bsz) / 2 + gap
    dx = h - abs(ax - bx)
    dy = h - abs(ay - by)
    return dx * dy if dx > 0 and dy > 0 else 0.0


def _layout(sym: Symbol, box, cfg: RenderConfig, rng, noisy_size: bool, out: list) -> None:
    if isinstance(sym, Shape):
        out.append(_place_leaf(sym, box, cfg, rng, noisy_size))
        return
    if not isinstance(sym, Composite) or sym.op not in COMPOSITIONS:
        raise NesyError(f"not a KANDY symbol: {sym!r}")
    x, y, w, h = box
    kids = sym.children
    n = len(kids)
    if n == 0:
        return
    op = sym.op
    if op == "in":
        boxes = [box] * n
    elif op.startswith("quadrant_"):
        qx = x + (w / 2 if op[-1] == "r" else 0.0)
        qy = y + (h / 2 if op[-2] == "l" else 0.0)
        boxes = [(qx, qy, w / 2, h / 2)] * n
    elif op == "stack":
        boxes = [(x, y + i * h / n, w, h / n) for i in range(n)]
    elif op == "side_by_side":
        boxes = [(x + i * w / n, y, w / n, h) for i in range(n)]
    elif op == "stack_reduce_bb":
        boxes = [(x + (w - w / n) / 2, y + i * h / n, w / n, h / n) for i in range(n)]
    elif op == "side_by_side_reduce_bb":
        boxes = [(x + i * w / n, y + (h - h / n) / 2, w / n, h / n) for i in range(n)]
    elif op == "diag_ul_lr":
        boxes = [(x + i * w / n, y + i * h / n, w / n, h / n) for i in range(n)]
    elif op == "diag_ll_ur":
        boxes = [(x + i * w / n, y + (n - 1 - i) * h / n, w / n, h / n) for i in range(n)]
    elif op == "grid":
        k = _grid_side(n)
        boxes = [(x + (i % k) * w / k, y + (i // k) * h / k, w / k, h / k) for i in range(n)]
    elif op == "random":
        _layout_random(kids, box, cfg, rng, noisy_size, out)
        return
    else:  # pragma: no cover - COMPOSITIONS is exhaustive above
        raise NesyError(f"unknown operator {op!r}")
    right, bottom = x + w, y + h
    for kid, kbox in zip(kids, boxes):
        if isinstance(kid, Shape):
            # a leaf child, without the recursion: _fit_into of its one placed shape
            s, cx, cy, size = _place_leaf(kid, kbox, cfg, rng, noisy_size)
            r = size / 2
            dx = _shift(cx - r, cx + r, x, right)
            dy = _shift(cy - r, cy + r, y, bottom)
            out.append((s, cx + dx, cy + dy, size) if dx != 0.0 or dy != 0.0
                       else (s, cx, cy, size))
            continue
        sub: list = []
        _layout(kid, kbox, cfg, rng, noisy_size, sub)
        out.extend(_fit_into(sub, box))


def _place_leaf(s: Shape, box, cfg: RenderConfig, rng, noisy_size: bool) -> tuple:
    """``(shape, cx, cy, size)`` of an atomic shape centred in ``box``; the size noise
    U(−a, a) is ``-a + 2a·u`` with one ``rng.random()``, the very value (and stream) of
    ``rng.uniform(-a, a)``, at a quarter of its call cost."""
    if s.shape not in SHAPES or s.color not in cfg.colors or s.size not in cfg.sizes:
        _check_leaf(s, cfg)                        # raises the error that names the value
    x, y, w, h = box
    size = float(cfg.sizes[s.size])
    if noisy_size and cfg.size_noise > 0:
        lo, hi = -float(cfg.size_noise), float(cfg.size_noise)
        size = max(1.0, size + (lo + (hi - lo) * rng.random()))
    return (s, x + w / 2, y + h / 2, size)


def _shift(lo: float, hi: float, b0: float, b1: float) -> float:
    """The least translation bringing [lo, hi] inside [b0, b1] (centred when larger)."""
    if hi - lo > b1 - b0:
        return (b0 + b1) / 2 - (lo + hi) / 2
    if lo < b0:
        return b0 - lo
    if hi > b1:
        return b1 - hi
    return 0.0


def _fit_into(items: list, box) -> list:
    """Translate a child's placed shapes, as one rigid group, the least distance that brings
    their extent inside ``box = (x, y, w, h)`` (per axis; centred on the box when the extent
    is larger than the box). A child whose shapes already lie inside is unchanged. Applied at
    every composition, this keeps every shape inside the drawable area whenever the picture
    fits at all: a shape larger than its slot (e.g. 25 px in a 20 px row at the canvas edge)
    moves inward instead of leaving the canvas, and a group moves whole, so its inner layout
    (e.g. a tower's squares) is kept (format 1.1)."""
    if not items:
        return items
    x, y, w, h = box
    ex0, ey0, ex1, ey1 = _extent(items)
    dx = _shift(ex0, ex1, x, x + w)
    dy = _shift(ey0, ey1, y, y + h)
    if dx == 0.0 and dy == 0.0:
        return items
    return [(s, cx + dx, cy + dy, sz) for s, cx, cy, sz in items]


def _layout_random(kids, box, cfg, rng, noisy_size, out) -> None:
    x, y, w, h = box
    k = _grid_side(len(kids))
    placed: list = []
    for kid in kids:
        sub: list = []
        _layout(kid, (0.0, 0.0, w / k, h / k), cfg, rng, noisy_size, sub)
        if not sub:
            continue
        ex0, ey0, ex1, ey1 = _extent(sub)
        # translation range keeping the child's shapes inside the box (centred if too big)
        lo_x, hi_x = x - ex0, x + w - ex1
        lo_y, hi_y = y - ey0, y + h - ey1
        if lo_x > hi_x:
            lo_x = hi_x = (lo_x + hi_x) / 2
        if lo_y > hi_y:
            lo_y = hi_y = (lo_y + hi_y) / 2
        best, best_cost = None, math.inf
        for _ in range(cfg.patience):
            # lo + (hi − lo)·u: the value and stream of rng.uniform(lo, hi), called faster
            tx = lo_x + (hi_x - lo_x) * rng.random() if hi_x > lo_x else lo_x
            ty = lo_y + (hi_y - lo_y) * rng.random() if hi_y > lo_y else lo_y
            cand = [(s, cx + tx, cy + ty, sz) for s, cx, cy, sz in sub]
            cost = sum(_overlap_area(a, b) for a in cand for b in placed)
            if cost < best_cost:
                best, best_cost = cand, cost
            if cost == 0.0:
                break
        placed.extend(best)
    out.extend(placed)


def layout(symbol, config: RenderConfig | None = None, rng: np.random.Generator | None = None,
           noisy_size: bool | None = None) -> list[tuple[Shape, tuple[float, float, float]]]:
    """Place every atomic shape of ``symbol`` on the canvas (no pixels drawn).

    Returns ``[(Shape, (cx, cy, size_px)), ...]`` in drawing order: centre in canvas pixels
    (float, origin top-left, y down) and the side of the shape's bounding square in pixels
    (nominal size plus U(−size_noise, size_noise) when ``noisy_size``; never below 1).
    ``rng`` defaults to ``Generator(PCG64(0))``; ``noisy_size=None`` uses ``config.noisy_size``.
    """
    cfg = config or RenderConfig()
    if rng is None:
        rng = np.random.Generator(np.random.PCG64(0))
    ns = cfg.noisy_size if noisy_size is None else bool(noisy_size)
    p = cfg.padding
    W, H = cfg.canvas
    out: list = []
    area = (float(p), float(p), float(W - 2 * p), float(H - 2 * p))
    _layout(as_symbol(symbol), area, cfg, rng, ns, out)
    out = _fit_into(out, area)
    return [(s, (cx, cy, sz)) for s, cx, cy, sz in out]


# --------------------------------------------------------------------------------------------
# Drawing
# --------------------------------------------------------------------------------------------

_SQRT3 = math.sqrt(3.0)


def noisy_rgb(rgb: tuple[int, int, int], sigma, rng) -> tuple[int, int, int]:
    """Add N(0, σ) noise to (H, S, V) in [0, 1] units: H wraps, S and V are clipped."""
    return _hsv_jitter(rgb, sigma, rng.normal(0.0, 1.0, 3))


@lru_cache(maxsize=64)
def _rgb(text: str) -> tuple[int, int, int]:
    return hex_to_rgb(text)


@lru_cache(maxsize=16)
def _sample_offsets(tile: int, ss: int) -> np.ndarray:
    """Sub-pixel sample positions along one axis of a tile: pixel ``i`` gets
    ``i + (k + 0.5) / ss`` for ``k < ss`` (exact dyadic values), shape ``(tile * ss,)``."""
    offs = (np.arange(ss, dtype=np.float64) + 0.5) / ss
    return np.repeat(np.arange(tile, dtype=np.float64), ss) + np.tile(offs, tile)


def _coverages(kind: str, cx: np.ndarray, cy: np.ndarray, size: np.ndarray,
               x0: np.ndarray, y0: np.ndarray, tile: int, ss: int) -> np.ndarray:
    """uint16 alpha (N × tile × tile) of N shapes of one ``kind`` (see :data:`SHAPES`), each
    over its own pixel tile with top-left pixel (x0, y0), in one vectorised pass.

    A sample point belongs to a shape by the exact float test of :func:`_inside`; a pixel's
    alpha is the rounded fraction of its ``ss²`` samples inside, in 0..255. Squares are
    separable (a pixel's count is (#x inside) × (#y inside)); circles and triangles are
    counted from the run of inside samples on each sample row (:func:`_runs`), which gives
    the same counts as testing every sample at a fraction of the work.
    """
    grid = _sample_offsets(tile, ss)
    # (x0 + offset) is exact, so each sample coordinate is one rounding away from the truth
    X = (x0[:, None] + grid[None, :]) - cx[:, None]       # (N, tile*ss), increasing along rows
    Y = (y0[:, None] + grid[None, :]) - cy[:, None]       # (N, tile*ss)
    if kind == "square":
        rr = (size / 2.0)[:, None]
        cnt = (_box_sum((np.abs(Y) <= rr)[:, :, None], ss, axis=1)
               * _box_sum((np.abs(X) <= rr)[:, None, :], ss, axis=2))
    else:
        start, stop = _runs(kind, X, Y, size, ss)
        cnt = _run_counts(start, stop, tile, ss)
    return (cnt * 255 + (ss * ss) // 2) // (ss * ss)


def _inside(kind: str, X: np.ndarray, Y: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The inside test of a circle or triangle at sample offsets ``(X, Y)`` from the centre
    (pixels, y down; arrays broadcast against ``size``, the side of the bounding square).

    This float expression defines the pictures' pixels; :func:`_runs` evaluates it in two
    parts, :func:`_column_term` (``X`` alone) and :func:`_row_terms` (``Y`` and ``size``),
    joined by :func:`_join`, the same operations on the same values. For a fixed ``Y`` it
    depends on ``X`` only through the column term, and is monotone in it, which is monotone
    in ``|X|`` (float ``*`` and ``+`` round monotonically): the inside samples of a sample
    row form one run.
    """
    return _join(kind, _column_term(kind, X), _row_terms(kind, Y, size))


def _column_term(kind: str, X: np.ndarray) -> np.ndarray:
    """The part of :func:`_inside` that depends on ``X`` alone (``+inf`` at ``X = ±inf``)."""
    return X * X if kind == "circle" else _SQRT3 * np.abs(X)


def _row_terms(kind: str, Y: np.ndarray, size: np.ndarray) -> tuple:
    """The parts of :func:`_inside` that depend on ``Y`` and ``size``: ``(add, limit, rows)``
    — the test is ``col + add <= limit`` for circles, ``rows & (col <= limit)`` for
    triangles (``rows``: the sample rows between apex height and base)."""
    if kind == "circle":
        rr = size / 2.0
        return Y * Y, rr * rr, None
    # equilateral triangle, side = size, apex up, bounding box centred at (cx, cy):
    # apex (0, -half_h); base y = +half_h; edges |X| <= (Y + half_h) / sqrt(3)
    half_h = size * _SQRT3 / 4.0
    return None, Y + half_h, Y <= half_h


def _join(kind: str, col: np.ndarray, terms: tuple, rows: bool = True) -> np.ndarray:
    """:func:`_inside` from its column term and row terms; ``rows=False`` leaves out the
    triangle's row condition (for callers that apply it themselves)."""
    add, limit, between = terms
    if kind == "circle":
        return col + add <= limit
    return between & (col <= limit) if rows else col <= limit


def _runs(kind: str, X: np.ndarray, Y: np.ndarray, size: np.ndarray,
          ss: int) -> tuple[np.ndarray, np.ndarray]:
    """The inside samples of every sample row of N circles or triangles, as runs
    ``[start, stop)`` of sample indices (two ``(N, S)`` int arrays, ``start == stop`` on rows
    with none). ``X``, ``Y``: ``(N, S)`` sample offsets from the centres (``X`` increasing
    along each row, ``ss`` samples per pixel); ``size``: ``(N,)``.

    Why exact: on one row :func:`_inside` is monotone in the column term, so the row has an
    inside sample iff its sample of least column term is inside, and the inside samples form
    one run: ``start`` is the only index inside whose left neighbour is not (likewise
    ``stop − 1`` on the right). The ends are estimated from the shape's true outline and kept
    only where :func:`_inside` confirms both of those; a row whose estimate misses (float
    rounding right at a sample) is tested at every sample instead.
    """
    n, S = X.shape
    sz = size[:, None]
    terms = _row_terms(kind, Y, sz)
    # column terms padded with +inf (never inside) so that indices −1 and S need no checks
    col = np.empty((n, S + 2))
    col[:, 0] = np.inf
    col[:, 1:-1] = _column_term(kind, X)
    col[:, -1] = np.inf
    hit = _join(kind, col[:, 1:-1].min(axis=1)[:, None], terms)         # (N, S)
    ends = np.empty((2, n, S), dtype=np.intp)
    ends[:] = np.clip(_run_estimates(kind, X, terms, ss), 0, S)
    at = ends + (np.arange(n) * (S + 2))[:, None]
    # (just left of start, start, stop − 1, stop) of every row: padded index = index + 1;
    # rows outside a triangle's height are not hit, so its row condition can be left out
    got = _join(kind, np.take(col, np.stack([at[0], at[0] + 1, at[1], at[1] + 1])), terms,
                rows=False)
    ok = got[1] & got[2] & ~(got[0] | got[3])
    start, stop = ends
    bad = hit & ~ok
    if bad.any():
        r, j = np.nonzero(bad)
        row = _inside(kind, X[r], Y[r, j][:, None], sz[r])             # (k, S)
        start[r, j] = np.argmax(row, axis=1)
        stop[r, j] = S - np.argmax(row[:, ::-1], axis=1)
    np.copyto(stop, start, where=~hit)
    return start, stop


def _run_estimates(kind: str, X: np.ndarray, terms: tuple, ss: int) -> np.ndarray:
    """Float estimates ``(2, N, S)`` of the runs' ``start`` and ``stop`` (see :func:`_runs`)
    from the shapes' true outlines: the half-width of a circle's chord, or of a triangle's
    cross-section, at each sample row, in samples, around the centre. ``X_i ≈ X_0 + i / ss``,
    so the run is the samples from the first at or right of −half to the last at or left of
    +half. Only a guess: :func:`_runs` checks it."""
    add, limit, _ = terms
    if kind == "circle":
        half = np.sqrt(np.maximum(limit - add, 0.0))
    else:
        half = np.maximum(limit, 0.0) / _SQRT3
    half *= ss
    first = X[:, :1] * ss
    return np.stack([np.ceil(-half - first), np.floor(half - first) + 1])


def _run_counts(start: np.ndarray, stop: np.ndarray, tile: int, ss: int) -> np.ndarray:
    """uint16 ``(N, tile, tile)`` count of inside samples per pixel, from the runs
    ``[start, stop)`` of every sample row (``(N, tile*ss)``, ``start <= stop``).

    Pixel column ``p`` holds samples ``[p·ss, (p+1)·ss)``; a run covers
    ``clip((p+1)·ss, start, stop) − clip(p·ss, start, stop)`` of them. The clipped edges are
    small integers (uint8 while ``tile·ss < 256``), so this costs about ``tile + 1`` narrow
    operations per sample row instead of one test per sample. The work is laid out
    ``(N, column edge, sample row)`` so that numpy's inner loops run along the sample rows.
    """
    S = tile * ss
    dt = np.uint8 if S < 256 else np.uint16 if S < 65536 else np.uint32
    edges = np.arange(0, S + 1, ss, dtype=dt)[None, :, None]            # (1, tile + 1, 1)
    at = np.maximum(edges, start.astype(dt)[:, None, :])
    np.minimum(at, stop.astype(dt)[:, None, :], out=at)                 # (N, tile + 1, S)
    per_row = at[:, 1:] - at[:, :-1]                                    # (N, tile, S) <= ss
    return _box_sum(per_row, ss, axis=2, most=ss).transpose(0, 2, 1)


def _box_sum(a: np.ndarray, ss: int, axis: int, most: int = 1) -> np.ndarray:
    """Sum groups of ``ss`` consecutive entries along ``axis`` (1 or 2) of a 3-d array, as
    uint16. Strided slice adds are ~10x faster than a reshape-and-reduce at these sizes.
    ``most``: an upper bound of the entries of a uint8 ``a`` (bool arrays: 1)."""
    if a.dtype == bool:
        a = a.view(np.uint8)
    if a.dtype == np.uint8 and axis == 2 and ss * most < 256 and a.flags.c_contiguous:
        word = _WORDS.get(ss)
        if word is not None:
            # ss bytes read as one word: multiplying by 0x0101… gathers their sum in the top
            # byte (no carries: every partial sum is at most ss·most < 256), whatever the
            # byte order
            dtype, ones, shift = word
            return ((a.view(dtype) * ones) >> shift).astype(np.uint16)
    parts = [a[:, k::ss, :] if axis == 1 else a[:, :, k::ss] for k in range(ss)]
    out = parts[0].astype(np.uint16)
    for part in parts[1:]:
        out += part
    return out


#: word type, byte-summing multiplier and shift for :func:`_box_sum` of small bytes
_WORDS = {2: (np.uint16, np.uint16(0x0101), 8), 4: (np.uint32, np.uint32(0x01010101), 24),
          8: (np.uint64, np.uint64(0x0101010101010101), 56)}

#: most (sample row × pixel column edge) pairs of :func:`_run_counts` in one vectorised pass
#: of :func:`_coverages` (``tile·ss·(tile + 1)`` per shape): bounds memory for huge shapes,
#: and keeps a pass's arrays in cache (~125 shapes of 32² pixels at ``ss = 4``)
_BATCH_SAMPLES = 1 << 19


def _draw_all(canvas: np.ndarray, placed, rgbs, ss: int) -> None:
    """Composite the placed shapes onto ``canvas`` (H × W × 3 uint8) in drawing order
    (:func:`_draw_batch` for one picture)."""
    if not placed:
        return
    H, W, _ = canvas.shape
    shapes = _Shapes()
    shapes.add(0, placed, rgbs)
    work, m = _draw_batch((1, H, W), canvas[None], shapes, ss)
    canvas[...] = work[0, m:m + H, m:m + W]


class _Shapes:
    """Flat columns of the placed shapes of a batch of pictures, in drawing order per picture."""

    def __init__(self) -> None:
        self.image: list[int] = []
        self.layer: list[int] = []
        self.kind: list[str] = []
        self.geom: list[tuple[float, float, float]] = []
        self.rgb: list = []

    def add(self, image: int, placed, rgbs) -> None:
        self.image.extend([image] * len(placed))
        self.layer.extend(range(len(placed)))
        self.kind.extend(shape.shape for shape, _ in placed)
        self.geom.extend(p for _, p in placed)
        self.rgb.extend(rgbs)


def _draw_batch(dims: tuple[int, int, int], base, shapes: _Shapes, ss: int,
                scratch: list | None = None) -> tuple[np.ndarray, int]:
    """Composite every shape of ``shapes`` onto its picture: ``dims = (B, H, W)``, ``base``
    the B pictures' starting pixels (a ``(B, H, W, 3)`` uint8 array) or one background
    ``(r, g, b)`` for all. Returns a ``(B, H + 2m, W + 2m, 3)`` array and the margin ``m``;
    the pictures are ``out[:, m:m + H, m:m + W]``. With ``scratch`` (a list, empty at first,
    that this function keeps its buffer in: :func:`_canvas`), the array lives in a buffer
    reused by later calls (the caller must not write into it): fresh pages for every batch
    would cost the kernel more than the drawing, and a reused buffer only needs the tiles
    that the previous batch drew over set back to the background.

    Each shape's alpha comes from :func:`_coverages` over a tile of whole pixels (groups of
    one kind and tile size, across all pictures, rasterised in one numpy pass each). Blending
    is ``(canvas·(255 − α) + colour·α + 127) // 255`` per channel: the largest intermediate,
    255·255 + 127, fits uint16 exactly, and α = 0 leaves a pixel unchanged. Shapes are blended
    in passes of one *layer* (the k-th shape of every picture that has one) and one tile size:
    a pass touches each picture at most once, so it can gather, blend and scatter all its
    tiles at once, and every picture still receives its shapes in drawing order. The margin
    lets tiles that overhang the canvas be blended whole; the overhang is dropped, which is
    the same as clipping them.
    """
    B, H, W = dims
    n = len(shapes.kind)
    geom = np.array(shapes.geom, dtype=np.float64).reshape(n, 3)
    cx, cy, size = geom[:, 0], geom[:, 1], geom[:, 2]
    r = size / 2.0
    # one pixel of margin around the bounding square; pixels outside get alpha 0 exactly
    x0 = np.floor(cx - r) - 1
    y0 = np.floor(cy - r) - 1
    need = np.maximum(np.ceil(cx + r) + 1 - x0, np.ceil(cy + r) + 1 - y0).astype(np.int64)
    tile = -(-need // 4) * 4
    xi, yi = x0.astype(np.int64), y0.astype(np.int64)
    # tiles that miss the canvas entirely draw nothing: drop them before sizing the margin
    seen = (xi < W) & (yi < H) & (xi + tile > 0) & (yi + tile > 0)
    m = int(np.max(np.maximum.reduce([-xi, -yi, xi + tile - W, yi + tile - H],
                                     where=seen, initial=0), initial=0))
    image = np.array(shapes.image, dtype=np.int64)
    layer = np.array(shapes.layer, dtype=np.int64)
    # passes in drawing order: by layer, then tile size; a tile size's shapes are numbered in
    # that order too, so that a pass's blend factors are one slice of its size's arrays
    order = np.lexsort((tile, layer))
    order = order[seen[order]]
    work, m = _canvas(dims, m, base, scratch, (image[order], yi[order], xi[order], tile[order]))
    if not len(order):
        return work, m
    cols = np.array(shapes.rgb, dtype=np.uint16).reshape(n, 3)
    kinds = np.array([SHAPES.index(k) for k in shapes.kind], dtype=np.int64)
    row = np.zeros(n, dtype=np.int64)
    keeps: dict[int, np.ndarray] = {}
    adds: dict[int, np.ndarray] = {}
    for t in np.unique(tile[order]).tolist():
        members = order[tile[order] == t]
        row[members] = np.arange(len(members))
        alpha = np.empty((len(members), t, t), dtype=np.uint16)
        step = max(1, _BATCH_SAMPLES // (t * ss * (t + 1)))
        for kind in np.unique(kinds[members]).tolist():
            sel = np.flatnonzero(kinds[members] == kind)
            for k in range(0, len(sel), step):
                part = sel[k:k + step]
                idx = members[part]
                alpha[part] = _coverages(SHAPES[kind], cx[idx], cy[idx], size[idx],
                                         x0[idx], y0[idx], t, ss)
        keeps[t], adds[t] = _blend_factors(alpha, cols[members])

    key = layer[order] * (int(tile.max()) + 1) + tile[order]
    cuts = np.flatnonzero(np.diff(key)) + 1
    # the canvas as rows of 3W bytes: a tile is t runs of 3t contiguous bytes, which numpy
    # gathers and scatters several times faster than t × t pixels of 3 strided channels
    rows = work.reshape(B, H + 2 * m, 3 * (W + 2 * m))
    windows: dict[int, np.ndarray] = {}
    for grp in np.split(order, cuts):
        t = int(tile[grp[0]])
        win = windows.get(t)
        if win is None:
            win = windows[t] = _windows(rows, t)
        at = (image[grp], yi[grp] + m, 3 * (xi[grp] + m))
        k = slice(int(row[grp[0]]), int(row[grp[-1]]) + 1)   # consecutive: numbered in order
        region = win[at].astype(np.uint16)              # (g, t, 3t)
        region *= keeps[t][k]
        region += adds[t][k]
        region //= 255
        win[at] = region
    return work, m


def _windows(rows: np.ndarray, t: int) -> np.ndarray:
    """Writable view ``[b, y, 3x]`` → the ``(t, 3t)`` bytes of the t × t pixel tile at
    ``(x, y)`` of picture ``b``, over ``rows``: pictures as ``(B, H, 3W)`` uint8 rows."""
    return np.lib.stride_tricks.sliding_window_view(rows, (t, 3 * t), axis=(1, 2),
                                                    writeable=True)


def _blend_factors(alpha: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(keep, add)`` uint16 ``(g, t, 3t)`` arrays laid out like canvas rows (every alpha
    repeated over the 3 channels): ``keep = 255 − α`` and ``add = colour·α + 127`` for ``g``
    shapes' ``(g, t, t)`` alphas and ``(g, 3)`` colours. The repeat is three strided copies,
    about twice as fast as ``np.repeat`` over a last axis of 3."""
    g, t, _ = alpha.shape
    keep = np.empty((g, t, t, 3), dtype=np.uint16)
    for c in range(3):
        keep[..., c] = alpha
    keep = keep.reshape(g, t, 3 * t)
    add = keep * np.tile(cols, (1, t))[:, None, :]
    add += 127
    np.subtract(255, keep, out=keep)
    return keep, add


def _canvas(dims: tuple[int, int, int], m: int, base, scratch: list | None,
            tiles: tuple) -> tuple[np.ndarray, int]:
    """The ``(B, H + 2m, W + 2m, 3)`` uint8 work array :func:`_draw_batch` draws on, holding
    ``base`` (see there) inside the margin; the margin's bytes are left as they are (any
    value: it is cropped away). Returns it and its margin, at least ``m``.

    ``scratch`` (a list, or ``None`` for a fresh array) keeps ``[buffer, record]`` between
    calls: the flat uint8 buffer, grown as needed, and when ``base`` was one colour, what it
    holds — ``(H, W, margin, colour, pictures, tiles)``: the first ``pictures`` pictures are
    that colour but for the ``tiles`` drawn last, ``(image, y, x, side)`` arrays of tile
    origins in canvas pixels. A call with the same canvas and colour sets just those tiles
    back to the colour (keeping the recorded margin when it is wide enough) instead of
    filling the whole buffer again, and records ``tiles``, the tiles it is about to draw.
    """
    B, H, W = dims
    colour = None if isinstance(base, np.ndarray) else tuple(int(v) for v in base)
    record = scratch[1] if scratch is not None and len(scratch) == 2 else None
    if (colour is not None and record is not None and record[:2] == (H, W)
            and record[3] == colour and record[2] >= m
            and scratch[0].size >= B * (H + 2 * record[2]) * (W + 2 * record[2]) * 3):
        m, done = record[2], record[4]
        held = _pictures(scratch[0], max(B, done), H + 2 * m, W + 2 * m)
        _reset_tiles(held, m, colour, record[5])
        if B > done:
            _fill(held[done:B], colour)
            done = B
        work = held[:B]
    else:
        dims_work = (B, H + 2 * m, W + 2 * m)
        if scratch is None:
            work = np.empty(dims_work + (3,), dtype=np.uint8)
        else:
            if not scratch or scratch[0].size < math.prod(dims_work) * 3:
                scratch[:] = [np.empty(math.prod(dims_work) * 3, dtype=np.uint8)]
            work = _pictures(scratch[0], *dims_work)
        if colour is None:
            work[:, m:m + H, m:m + W] = base
        else:
            _fill(work, colour)
        done = B
    if scratch is not None:
        scratch[1:] = [None if colour is None else (H, W, m, colour, done, tiles)]
    return work, m


def _pictures(buffer: np.ndarray, b: int, h: int, w: int) -> np.ndarray:
    """The first ``b`` pictures of ``h × w`` RGB pixels of a flat uint8 ``buffer``."""
    return buffer[:b * h * w * 3].reshape(b, h, w, 3)


def _fill(work: np.ndarray, colour: tuple[int, int, int]) -> None:
    """Set every pixel of the ``(B, H, W, 3)`` array ``work`` to ``colour``, a row at a time
    (whole rows of 3W bytes copy faster than broadcasting one pixel)."""
    B, H, W, _ = work.shape
    work.reshape(B, H, 3 * W)[:] = np.tile(np.array(colour, dtype=np.uint8), W)


def _reset_tiles(work: np.ndarray, m: int, colour: tuple[int, int, int], tiles: tuple) -> None:
    """Set the pixels of ``tiles`` (``(image, y, x, side)`` arrays, canvas pixels) of the
    ``(B, H + 2m, W + 2m, 3)`` array ``work`` back to ``colour``, one pass per tile side."""
    image, y, x, side = tiles
    if not len(image):
        return
    B, Hm, Wm, _ = work.shape
    rows = work.reshape(B, Hm, 3 * Wm)
    for t in np.unique(side).tolist():
        at = side == t
        win = _windows(rows, t)
        win[image[at], y[at] + m, 3 * (x[at] + m)] = np.tile(np.array(colour, dtype=np.uint8),
                                                              (t, t))


def _placed_and_noise(symbol, cfg: RenderConfig, seed, noisy_color, noisy_size):
    """Layout of every leaf of one picture, its colours and its colour noise, consuming the
    picture's random stream in the documented order (layout, then one standard-normal
    (H, S, V) triple per leaf). Returns ``(placed, rgbs, z)``: the nominal RGB of each leaf
    and a ``(leaves, 3)`` array of normals, or ``None`` without colour noise."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise NesyError(f"render seed must be a non-negative integer, got {seed!r}")
    nc = cfg.noisy_color if noisy_color is None else bool(noisy_color)
    rng = np.random.Generator(np.random.PCG64(int(seed)))
    placed = layout(symbol, cfg, rng, noisy_size)
    colors = cfg.colors
    rgbs = [_rgb(colors[shape.color]) for shape, _ in placed]
    # one draw of N×3 normals is the same stream as N draws of 3
    z = rng.normal(0.0, 1.0, (len(placed), 3)) if nc and placed else None
    return placed, rgbs, z


def _placed_and_colours(symbol, cfg: RenderConfig, seed, noisy_color, noisy_size):
    """Layout and (noisy) RGB of every leaf of one picture (:func:`_placed_and_noise`, the
    noise applied by :func:`_hsv_jitter_many`)."""
    placed, rgbs, z = _placed_and_noise(symbol, cfg, seed, noisy_color, noisy_size)
    if z is not None:
        rgbs = [tuple(c) for c in _hsv_jitter_many(rgbs, cfg.hsv_sigma, z).tolist()]
    return placed, rgbs


def render_batch(items, config: RenderConfig | None = None, *,
                 scratch: list | None = None) -> np.ndarray:
    """Draw several pictures in one vectorised pass: ``items`` is a sequence of
    ``(symbol, seed, noisy_color, noisy_size)`` (as for :func:`render_array`). Returns a
    ``(len(items), H, W, 3)`` uint8 array (a view into a slightly larger buffer); picture
    ``i`` has the same pixels as ``render_array(*items[i])`` with the same config.
    ``scratch``: see :func:`_draw_batch` (the result is then overwritten by the next call
    with the same scratch, and is read-only to the caller: that call resets only the pixels
    this one drew)."""
    cfg = config or RenderConfig()
    W, H = cfg.canvas
    shapes = _Shapes()
    noisy, noise = [], []        # shape rows with colour noise, and their normals
    for b, (symbol, seed, noisy_color, noisy_size) in enumerate(items):
        placed, rgbs, z = _placed_and_noise(symbol, cfg, seed, noisy_color, noisy_size)
        if z is not None:
            noisy.append(np.arange(len(shapes.rgb), len(shapes.rgb) + len(placed)))
            noise.append(z)
        shapes.add(b, placed, rgbs)
    if noisy:
        # the colour noise of the whole batch in one vectorised pass
        rows = np.concatenate(noisy)
        jittered = _hsv_jitter_many([shapes.rgb[i] for i in rows.tolist()], cfg.hsv_sigma,
                                    np.concatenate(noise)).tolist()
        for i, rgb in zip(rows.tolist(), jittered):
            shapes.rgb[i] = tuple(rgb)
    work, m = _draw_batch((len(items), H, W), _rgb(cfg.background), shapes, cfg.supersample,
                          scratch)
    return work[:, m:m + H, m:m + W]


def render_array(symbol, config: RenderConfig | None = None, seed: int = 0,
                 noisy_color: bool | None = None, noisy_size: bool | None = None,
                 out: np.ndarray | None = None) -> np.ndarray:
    """Like :func:`render` but returns the pixels as a ``(H, W, 3)`` uint8 array (drawn into
    ``out`` when given: any writable ``(H, W, 3)`` uint8 array or view)."""
    cfg = config or RenderConfig()
    W, H = cfg.canvas
    if out is not None and (out.shape != (H, W, 3) or out.dtype != np.uint8):
        raise NesyError(f"render_array out= must be a ({H}, {W}, 3) uint8 array, got "
                        f"{out.dtype} {out.shape}")
    pixels = render_batch([(symbol, seed, noisy_color, noisy_size)], cfg)[0]
    if out is None:
        return np.ascontiguousarray(pixels)
    np.copyto(out, pixels)
    return out


@lru_cache(maxsize=256)
def _hsv(rgb: tuple[int, int, int]) -> tuple[float, float, float]:
    return colorsys.rgb_to_hsv(rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0)


def _hsv_jitter(rgb: tuple[int, int, int], sigma, z) -> tuple[int, int, int]:
    h, s, v = _hsv(tuple(rgb))       # few distinct colours: convert each once
    h = (h + sigma[0] * float(z[0])) % 1.0
    s = min(1.0, max(0.0, s + sigma[1] * float(z[1])))
    v = min(1.0, max(0.0, v + sigma[2] * float(z[2])))
    r, g, b = colorsys.hsv_to_rgb(h, s, v)
    return int(round(r * 255)), int(round(g * 255)), int(round(b * 255))


def _hsv_jitter_many(rgbs, sigma, z: np.ndarray) -> np.ndarray:
    """:func:`_hsv_jitter` of many colours at once: ``rgbs`` a sequence of N ``(r, g, b)``,
    ``z`` an ``(N, 3)`` array of standard normals; returns an ``(N, 3)`` int64 array.

    The same IEEE operations in the same order as the scalar form (``colorsys``' HSV to RGB,
    Python's float ``%`` and round-half-even ``round``), elementwise, so every value equals
    the scalar result exactly (checked against it in the tests)."""
    hsv = np.array([_hsv(tuple(c)) for c in rgbs], dtype=np.float64).reshape(-1, 3)
    z = np.asarray(z, dtype=np.float64).reshape(-1, 3)
    h = np.remainder(hsv[:, 0] + float(sigma[0]) * z[:, 0], 1.0)
    s = np.minimum(1.0, np.maximum(0.0, hsv[:, 1] + float(sigma[1]) * z[:, 1]))
    v = np.minimum(1.0, np.maximum(0.0, hsv[:, 2] + float(sigma[2]) * z[:, 2]))
    # colorsys.hsv_to_rgb: i = int(h*6) (h >= 0, so a floor), then one of six arrangements
    # of (v, t, p, q); with s == 0 all of p, q, t equal v, as colorsys' early return gives
    h6 = h * 6.0
    i = np.trunc(h6)
    f = h6 - i
    p = v * (1.0 - s)
    q = v * (1.0 - s * f)
    t = v * (1.0 - s * (1.0 - f))
    sector = i.astype(np.int64) % 6
    table = np.stack([np.stack(c, axis=1) for c in
                      ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q))])
    rgb = table[sector, np.arange(len(h))]
    return np.rint(rgb * 255).astype(np.int64)


def render(symbol, config: RenderConfig | None = None, seed: int = 0,
           noisy_color: bool | None = None, noisy_size: bool | None = None) -> Image.Image:
    """Draw ``symbol`` as an RGB :class:`PIL.Image.Image` of ``config.canvas`` size.

    ``symbol`` may be a Shape/Composite, its JSON dict/text, or its Prolog text. ``seed`` (int
    ≥ 0) drives ``numpy.random.Generator(PCG64(seed))``; the same inputs give identical pixels.
    ``noisy_color``/``noisy_size`` default (``None``) to the config's switches.
    """
    return Image.fromarray(render_array(symbol, config, seed, noisy_color, noisy_size), "RGB")


def encode_png(pixels: np.ndarray, level: int | None = None) -> bytes:
    """PNG bytes of an ``(H, W, 3)`` uint8 RGB array: 8-bit truecolour, no interlace, filter
    type 0 on every row, one zlib stream, no metadata chunks.

    ``level=None`` uses the dataset encoder :data:`PNG_DEFLATE`; an integer uses zlib at that
    level. KANDY pictures are flat backgrounds with a few shapes: unfiltered rows compress
    better here than the Sub or Up filters, and at zlib-ng's level 2 (or zlib's level 3) to
    about the size Pillow's adaptive filters reach at level 6, at a fraction of the time (see
    ``benchmarks/kandy_render.py``). Bytes depend only on the pixels and the encoder.
    """
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 3:
        raise NesyError(f"encode_png needs an (H, W, 3) uint8 array, got {pixels.dtype} "
                        f"{pixels.shape}")
    h, w, _ = pixels.shape
    raw = _png_rows(h, w)
    raw[:, 1:] = pixels.reshape(h, 3 * w)
    return _png_from_rows(raw, level)


def _png_rows(height: int, width: int) -> np.ndarray:
    """A ``(height, 3·width + 1)`` uint8 buffer of PNG scanlines, filter bytes set to 0;
    ``buf[:, 1:].reshape(height, width, 3)`` is a writable pixel view into it."""
    raw = np.empty((height, 3 * width + 1), dtype=np.uint8)
    raw[:, 0] = 0
    return raw


def _png_from_rows(raw: np.ndarray, level: int | None = None) -> bytes:
    h, w = raw.shape[0], (raw.shape[1] - 1) // 3
    return b"".join((_png_head(w, h), _png_chunk(b"IDAT", _deflate(raw, level)), _PNG_TAIL))


@lru_cache(maxsize=8)
def _png_head(width: int, height: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height,
                                                                   8, 2, 0, 0, 0))


def _deflate(data, level: int | None) -> bytes:
    if level is None:
        if _zlib_ng is not None:
            return _zlib_ng.compress(data, PNG_ZLIB_NG_LEVEL)
        level = PNG_COMPRESS_LEVEL
    # memLevel 5 (a smaller hash table than zlib's default 8) stays in cache: ~15 % faster
    # on these pictures at the same size
    comp = zlib.compressobj(level, zlib.DEFLATED, 15, 5)
    return comp.compress(data) + comp.flush()


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


_PNG_TAIL = _png_chunk(b"IEND", b"")


def png_bytes(image: Image.Image) -> bytes:
    """Encode a PIL image with :func:`encode_png` (RGB; no metadata)."""
    return encode_png(np.asarray(image.convert("RGB")))


def render_to_png_bytes(symbol, config: RenderConfig | None = None, seed: int = 0,
                        noisy_color: bool | None = None, noisy_size: bool | None = None) -> bytes:
    """:func:`render_array` then :func:`encode_png`."""
    return encode_png(render_array(symbol, config, seed, noisy_color, noisy_size))


@lru_cache(maxsize=32)
def _cached_config(key: str) -> RenderConfig:
    return RenderConfig.from_dict(json.loads(key))


def render_job(args) -> str:
    """Worker entry point for :func:`nesybench.parallel.map_ordered` (picklable, top level).

    ``args = (symbol_json, config_dict, seed, noisy_color, noisy_size, out_path)`` where
    ``symbol_json`` is the JSON dict or text of the symbol, ``config_dict`` a
    :meth:`RenderConfig.to_dict` dict (or ``None`` for defaults), ``noisy_*`` booleans or
    ``None`` (config default). Writes the PNG (creating parent folders) and returns
    ``str(out_path)``.
    """
    symbol_json, config_dict, seed, noisy_color, noisy_size, out_path = args
    cfg = _cached_config(json.dumps(config_dict, sort_keys=True)) if config_dict is not None \
        else _cached_config("null")
    data = render_to_png_bytes(symbol_json, cfg, seed, noisy_color, noisy_size)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as fh:
        fh.write(data)
    return os.fspath(out_path)


#: most pixels drawn in one vectorised pass by :func:`render_chunk` (128 pictures of 224²:
#: a ~19 MB canvas batch; fewer pictures per pass on larger canvases)
_BATCH_PIXELS = 128 * 224 * 224

#: the canvas buffer :func:`render_chunk` draws into, kept for the worker's next chunk
_SCRATCH: list = []


def render_chunk(args) -> list[tuple[str, str]]:
    """Worker entry point for dataset generation (picklable, top level).

    ``args = (config_dict, root, jobs)``: a :meth:`RenderConfig.to_dict` dict (sent once per
    chunk, not per picture), the output root folder, and ``jobs`` — a list of
    ``(symbol_json, seed, noisy_color, noisy_size, relpath)``. Draws the pictures in batches
    (:func:`render_batch`), writes each PNG to ``root/relpath`` (:func:`write_pngs`) and
    returns the SHA-256 hex digests of the bytes written, as ``[(relpath, digest), ...]`` in
    job order, so the manifest needs no second read of the files.
    """
    config_dict, root, jobs = args
    cfg = _cached_config(json.dumps(config_dict, sort_keys=True))
    step = max(1, _BATCH_PIXELS // (cfg.canvas[0] * cfg.canvas[1]))
    made: set = set()
    digests = []
    for k in range(0, len(jobs), step):
        part = jobs[k:k + step]
        pixels = render_batch([job[:4] for job in part], cfg, scratch=_SCRATCH)
        digests.extend(write_pngs(pixels, root, [job[4] for job in part], made))
    return digests


def write_pngs(pixels, root, relpaths, made: set | None = None) -> list[tuple[str, str]]:
    """Encode picture ``i`` of ``pixels`` (``(N, H, W, 3)`` uint8, any strides) as the dataset
    PNG (:func:`encode_png` without ``level``), write it to ``root/relpaths[i]`` (creating
    folders; ``made`` remembers those already made) and return ``[(relpath, sha256 hex)]``."""
    root = Path(root)
    made = set() if made is None else made
    n, h, w, _ = pixels.shape
    rows = _png_rows(h, w)
    out = []
    for i, rel in enumerate(relpaths):
        rows[:, 1:].reshape(h, w, 3)[...] = pixels[i]
        data = _png_from_rows(rows)
        path = root / rel
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        with open(path, "wb") as fh:
            fh.write(data)
        out.append((rel, hashlib.sha256(data).hexdigest()))
    return out


__all__ = ["RenderConfig", "DEFAULT_COLORS", "DEFAULT_SIZES", "PNG_SAVE_OPTIONS", "SHAPES",
           "as_symbol", "layout", "render", "render_array", "render_batch", "render_to_png_bytes",
           "render_job", "render_chunk", "write_pngs",
           "png_bytes", "encode_png", "PNG_COMPRESS_LEVEL", "PNG_DEFLATE",
           "noisy_rgb", "hex_to_rgb"]
