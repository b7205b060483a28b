"""Turn a parsed set alternative into one grounded symbol: expand, ground, expand again.

The three phases of the paper (§3.1, footnote 5):

1. *before grounding*: ``*_before`` list operators, random compositional choices
   (``any_line`` ...), set operators and ``store_before`` are applied to templates;
2. *grounding*: every atomic template picks one value per attribute; ``store`` remembers
   grounded objects, ``recall`` returns them (or grounds the template afresh when the alias was
   stored before grounding);
3. *after grounding*: the remaining list operators (``repeat``, ``palindrome``, ``sort`` ...)
   rewrite the grounded lists, which are flattened into their parent.

All randomness comes from one ``numpy.random.Generator`` and every choice is over a tuple in a
fixed order, so a seed gives the same symbols on any machine and any ``PYTHONHASHSEED``.
Memory (aliases) lives in a per-sample :class:`_Context`: nothing leaks between samples.

Documented departures from the reference generator: ``shift`` with ``n > 0`` rotates to the
*right* as its documentation says (the reference rotates left); aliases are cleared between
samples (the reference keeps them).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import NesyError
from .language import (MAX_LIST_ITEMS, RANDOM_COMPOSITIONS, Atom, Comp, ListOp, Node, Recall,
                       SetOp, Store, resolve_set)
from .symbols import Composite, Domain, Shape

#: ``sort`` by shape uses the number of sides: circle (0) < triangle (3) < square (4).
SHAPE_SIDES = {"circle": 0, "triangle": 3, "square": 4}


@dataclass
class _Context:
    rng: np.random.Generator
    domain: Domain
    #: alias -> ("template", nodes) from store_before, or ("grounded", items) from store
    aliases: dict = field(default_factory=dict)


class _Grounded:
    """A grounded list item still carrying an after-grounding list operator."""

    __slots__ = ("op", "items")

    def __init__(self, op: ListOp, items: list):
        self.op, self.items = op, items


def sample_symbol(alternatives: tuple[Node, ...], rng: np.random.Generator, domain: Domain):
    """Pick one alternative uniformly and turn it into a grounded symbol.

    Raises :class:`NesyError` (with the field path) when an operator cannot apply, e.g.
    ``pick`` of more items than the list has, or an alternative that expands to zero or
    several top-level objects.
    """
    alt = alternatives[int(rng.integers(len(alternatives)))]
    ctx = _Context(rng, domain)
    pre = _pre(alt, ctx)
    if len(pre) != 1:
        raise NesyError(f"a set alternative must expand to exactly one object, got {len(pre)}",
                        field=alt.path, line=alt.line)
    grounded = _ground(pre, ctx)
    items = _post(grounded, ctx)
    if len(items) != 1:
        raise NesyError(f"a set alternative must expand to exactly one object, got {len(items)}",
                        field=alt.path, line=alt.line)
    return items[0]


# --------------------------------------------------------------------------- phase 1
def _pre(node: Node, ctx: _Context) -> list:
    """Expand before-grounding operators; returns a list of template nodes."""
    if node.expands_to_itself:
        return [node]
    if isinstance(node, SetOp):
        aliases = {k: v[1] for k, v in ctx.aliases.items() if v[0] == "template"}
        return [resolve_set(node, ctx.domain, aliases, ctx)]
    if isinstance(node, Comp):
        op = node.op
        if op in RANDOM_COMPOSITIONS:
            choices = RANDOM_COMPOSITIONS[op]
            op = choices[int(ctx.rng.integers(len(choices)))]
        return [Comp(node.path, node.line, op=op, children=tuple(_pre_list(node.children, ctx)))]
    if isinstance(node, Store):
        kids = _pre_list(node.children, ctx)
        if node.before:
            ctx.aliases[node.alias] = ("template", kids)
            return kids
        return [Store(node.path, node.line, alias=node.alias, before=False, children=tuple(kids))]
    if isinstance(node, ListOp):
        kids = _pre_list(node.children, ctx)
        if node.before:
            return _apply(node, kids, ctx)
        return [ListOp(node.path, node.line, op=node.op, before=False, params=node.params,
                       children=tuple(kids))]
    raise NesyError(f"cannot expand node {node!r}")  # pragma: no cover - parser guarantees


def _pre_list(nodes, ctx) -> list:
    out = []
    for n in nodes:
        if type(n) is Atom or n.expands_to_itself:     # the common cases, without a call
            out.append(n)
        else:
            out.extend(_pre(n, ctx))
    return out


# --------------------------------------------------------------------------- phase 2
def _ground(nodes: list, ctx: _Context) -> list:
    out = []
    integers = ctx.rng.integers
    for node in nodes:
        if type(node) is Atom:          # the common leaf, inlined (hot loop); same draws
            sh, co, si = node.shape, node.color, node.size
            out.append(Shape(sh[int(integers(len(sh)))] if len(sh) > 1 else sh[0],
                             co[int(integers(len(co)))] if len(co) > 1 else co[0],
                             si[int(integers(len(si)))] if len(si) > 1 else si[0]))
        else:
            out.extend(_ground_one(node, ctx))
    return out


def _choice(values: tuple[str, ...], rng) -> str:
    # integers(1) consumes no random bits, so skipping the call keeps the stream identical
    return values[int(rng.integers(len(values)))] if len(values) > 1 else values[0]


def _ground_one(node, ctx: _Context) -> list:
    if isinstance(node, Atom):
        return [Shape(_choice(node.shape, ctx.rng), _choice(node.color, ctx.rng),
                      _choice(node.size, ctx.rng))]
    if isinstance(node, Comp):
        return [Composite(node.op, tuple(_post(_ground(list(node.children), ctx), ctx)))]
    if isinstance(node, Store):
        items = _post(_ground(list(node.children), ctx), ctx)
        ctx.aliases[node.alias] = ("grounded", items)
        return list(items)
    if isinstance(node, Recall):
        if node.alias not in ctx.aliases:
            raise NesyError(f"recall of alias {node.alias!r} before any store of it in this "
                            f"sample", field=node.path, line=node.line)
        kind, value = ctx.aliases[node.alias]
        if kind == "template":              # stored before grounding: ground afresh
            return _ground(list(value), ctx)
        return list(value)
    if isinstance(node, ListOp):            # after-grounding operator: keep for phase 3
        return [_Grounded(node, _ground(list(node.children), ctx))]
    raise NesyError(f"cannot ground {node!r}")  # pragma: no cover


# --------------------------------------------------------------------------- phase 3
def _post(items: list, ctx: _Context) -> list:
    if not any(type(item) is _Grounded for item in items):
        return items
    out = []
    for item in items:
        if isinstance(item, _Grounded):
            out.extend(_apply(item.op, _post(item.items, ctx), ctx))
        else:
            out.append(item)
    return out


#: list operators whose result can be longer than their input (checked against the cap)
_GROWING = frozenset({"repeat", "random_repeat", "mirror", "palindrome", "sample"})


def _apply(op: ListOp, items: list, ctx: _Context) -> list:
    """Apply one list-expansion operator to an already expanded list."""
    name, rng = op.op, ctx.rng
    n_items = len(items)
    param = op.param

    def need(cond: bool, message: str):
        if not cond:
            raise NesyError(message, field=op.path, line=op.line)

    if name == "first":
        return items[:op.param("n")]
    if name == "last":
        n = op.param("n")
        return items[n_items - n:] if n else []
    if name == "shift":                      # barrel shift to the right for n > 0
        if not items:
            return []
        k = op.param("n") % n_items
        return items[n_items - k:] + items[:n_items - k]
    if name in _GROWING:
        # the longest list the operator can make, against the cap
        size = (param("n") * n_items if name == "repeat" else
                param("max") * n_items if name == "random_repeat" else
                param("n") if name == "sample" else 2 * n_items)
        if size > MAX_LIST_ITEMS:
            need(False, f"{name} would make a list of up to {size} items "
                 f"(the cap is {MAX_LIST_ITEMS})")
    if name == "repeat":
        return items * op.param("n")
    if name == "mirror":
        return items + items[::-1]
    if name == "palindrome":
        return items + items[-2::-1]
    if name == "permute":
        return [items[i] for i in rng.permutation(n_items)]
    if name == "random_shift":
        if not items:
            return []
        k = int(rng.integers(n_items))
        return items[n_items - k:] + items[:n_items - k]
    if name == "random_repeat":
        lo, hi = param("min"), param("max")
        return items * int(rng.integers(lo, hi + 1))
    if name == "sample":
        n = op.param("n")
        need(n == 0 or n_items > 0, "sample from an empty list")
        return [items[int(i)] for i in rng.integers(0, n_items, size=n)] if n else []
    if name == "pick":
        n = param("n")
        if n > n_items:
            need(False, f"pick n={n} from a list of {n_items} items (no repetition)")
        return [items[int(i)] for i in rng.permutation(n_items)[:n]]
    if name == "argsort":
        idx = op.param("idx")
        need(sorted(idx) == list(range(n_items)),
             f"argsort idx {list(idx)} is not a permutation of 0..{n_items - 1}")
        return [items[i] for i in idx]
    if name == "sort":
        return _sort(op, items, ctx.domain, need)
    raise NesyError(f"unknown list operator {name!r}", field=op.path,
                    line=op.line)  # pragma: no cover


def _sort(op: ListOp, items: list, domain: Domain, need) -> list:
    keys, order = op.param("keys"), op.param("order")
    has_comp = any(not isinstance(x, Shape) for x in items)
    need(not has_comp or tuple(keys) == ("n",),
         "lists holding compositions can only be sorted by the key n")

    def key(x):
        out = []
        for k in keys:
            if k == "n":
                out.append(1 if isinstance(x, Shape) else len(x.children))
            elif k == "shape":
                out.append(SHAPE_SIDES.get(x.shape, 99))
            elif k == "color":
                out.append(domain.colors.index(x.color))
            else:
                out.append(domain.sizes.index(x.size))
        return tuple(out)

    # stable sort; descending keeps equal items in their original order too
    return sorted(items, key=key, reverse=(order == "desc"))
