"""KANDY samples as trees: atomic shapes at the leaves, compositional operators inside.

A grounded sample (a *symbol*) has exactly three spellings, all 1-to-1:

* Python: :class:`Shape` / :class:`Composite` (frozen, hashable);
* JSON (the reference's "dictionary of lists"): ``{"stack": [{"shape": "triangle",
  "color": "red", "size": "small"}, ...]}``;
* Prolog (the natural encoding of the paper, §4.5.3): ``stack([triangle_red_small, ...])``.
  The Prolog text is the *canonical* form used for de-duplication.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Union

#: The 13 compositional operators (placement of children's bounding boxes).
COMPOSITIONS = (
    "in", "quadrant_ul", "quadrant_ur", "quadrant_ll", "quadrant_lr", "random",
    "stack", "side_by_side", "stack_reduce_bb", "side_by_side_reduce_bb",
    "diag_ul_lr", "diag_ll_ur", "grid",
)


@dataclass(frozen=True)
class Domain:
    """The attribute values atomic shapes can take, in their configured order.

    The order matters for ``sort`` on colour/size keys and for the HSV palette. Values must
    be lowercase Prolog atoms without underscores (they are joined as ``shape_color_size``).
    """

    shapes: tuple[str, ...] = ("triangle", "square", "circle")
    colors: tuple[str, ...] = ("red", "green", "blue", "cyan", "magenta", "yellow")
    sizes: tuple[str, ...] = ("small", "large")

    def values(self, attribute: str) -> tuple[str, ...]:
        return {"shape": self.shapes, "color": self.colors, "size": self.sizes}[attribute]


ATTRIBUTES = ("shape", "color", "size")


@dataclass(frozen=True)
class Shape:
    """An atomic object."""

    shape: str
    color: str
    size: str

    def to_prolog(self) -> str:
        return f"{self.shape}_{self.color}_{self.size}"

    def to_json(self) -> dict:
        return {"shape": self.shape, "color": self.color, "size": self.size}


@dataclass(frozen=True)
class Composite:
    """A compositional operator applied to an ordered tuple of children."""

    op: str
    children: tuple["Symbol", ...] = field(default_factory=tuple)

    def to_prolog(self) -> str:
        return f"{self.op}([{', '.join(c.to_prolog() for c in self.children)}])"

    def to_json(self) -> dict:
        return {self.op: [c.to_json() for c in self.children]}


Symbol = Union[Shape, Composite]


def to_prolog(symbol: Symbol) -> str:
    """Canonical Prolog text of a symbol (natural encoding)."""
    return symbol.to_prolog()


def to_json(symbol: Symbol) -> dict:
    return symbol.to_json()


def to_data(symbol: Symbol):
    """The symbol as data for Prolog (``kandy:check_sample_data/3``): an atomic shape is its
    name ``"shape_color_size"``, a composition the pair ``(op, [children])``, which janus
    passes as the term ``op-[...]``; nothing is written out to be parsed again."""
    if isinstance(symbol, Shape):
        return symbol.to_prolog()
    return (symbol.op, [to_data(child) for child in symbol.children])


def json_text(symbol: Symbol) -> str:
    """Compact JSON text of :func:`to_json` (``json.dumps(to_json(symbol),
    separators=(",", ":"))``, byte for byte), built from cached pieces: a data set's
    annotations hold one per sample, and most leaves repeat."""
    if isinstance(symbol, Shape):
        return _leaf_json(symbol)
    return (f"{{{_key_json(symbol.op)}:["
            + ",".join(json_text(child) for child in symbol.children) + "]}")


@lru_cache(maxsize=4096)
def _leaf_json(shape: Shape) -> str:
    return json.dumps(shape.to_json(), separators=(",", ":"))


@lru_cache(maxsize=64)
def _key_json(op: str) -> str:
    return json.dumps(op)


def from_json(obj) -> Symbol:
    """Inverse of :func:`to_json`; raises ``ValueError`` on anything else."""
    if isinstance(obj, dict) and set(obj) == set(ATTRIBUTES):
        return Shape(obj["shape"], obj["color"], obj["size"])
    if isinstance(obj, dict) and len(obj) == 1:
        (op, kids), = obj.items()
        if op in COMPOSITIONS and isinstance(kids, list):
            return Composite(op, tuple(from_json(k) for k in kids))
    raise ValueError(f"not a KANDY symbol: {obj!r}")


def from_prolog(text: str) -> Symbol:
    """Parse the natural-encoding Prolog text written by :func:`to_prolog`."""
    pos = 0
    text = text.strip()

    def parse() -> Symbol:
        nonlocal pos
        start = pos
        while pos < len(text) and (text[pos].isalnum() or text[pos] == "_"):
            pos += 1
        name = text[start:pos]
        if pos < len(text) and text[pos] == "(":
            if text[pos:pos + 2] != "([":
                raise ValueError(f"expected '([' at {pos} in {text!r}")
            pos += 2
            kids = []
            while True:
                while text[pos] == " ":
                    pos += 1
                if text[pos] == "]":
                    pos += 1
                    break
                kids.append(parse())
                while text[pos] == " ":
                    pos += 1
                if text[pos] == ",":
                    pos += 1
            if text[pos] != ")":
                raise ValueError(f"expected ')' at {pos} in {text!r}")
            pos += 1
            if name not in COMPOSITIONS:
                raise ValueError(f"unknown operator {name!r}")
            return Composite(name, tuple(kids))
        parts = name.split("_")
        if len(parts) != 3:
            raise ValueError(f"not an atomic shape: {name!r}")
        return Shape(*parts)

    sym = parse()
    if pos != len(text):
        raise ValueError(f"trailing text in {text!r}")
    return sym


def leaves(symbol: Symbol) -> list[Shape]:
    """Atomic shapes in drawing order (depth-first, left to right)."""
    if isinstance(symbol, Shape):
        return [symbol]
    out: list[Shape] = []
    for child in symbol.children:
        out.extend(leaves(child))
    return out


def depth(symbol: Symbol) -> int:
    if isinstance(symbol, Shape):
        return 0
    return 1 + max((depth(c) for c in symbol.children), default=0)
