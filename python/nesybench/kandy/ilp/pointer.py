"""The pointer (PTR) encoding of KANDY samples: every composition is a constant ``cNNNNNN``
defined by a ``defined_as/3`` fact, and ``sample_is/2`` links a sample constant to its root.

Numbering is deterministic: within a task, samples are numbered over the splits in the order
train, val, test (file order), ``s00001`` first, and objects in depth-first pre-order,
``c000000`` first; export and evaluation share it through :func:`pointer_encode`.
"""
from __future__ import annotations

import itertools

from ..symbols import Composite, Shape, Symbol, from_prolog
from .bias import SPLITS
from .task import Sample


def pointer_facts(symbol: Symbol, sample_id: str, counter: "itertools.count",
                  prefix: str = "c") -> list[str]:
    """``sample_is/2`` + ``defined_as/3`` facts (text, no final dot) for one sample.

    Objects take the numbers ``next(counter)`` in depth-first pre-order (``c%06d``); an
    atomic sample (no composition) is linked directly: ``sample_is(s00001, circle_red_small)``.
    """
    facts: list[str] = []

    def name(sym: Symbol) -> str:
        if isinstance(sym, Shape):
            return sym.to_prolog()
        me = f"{prefix}{next(counter):06d}"
        slot = len(facts)
        facts.append("")  # reserve: parents before children
        kids = [name(k) for k in sym.children]
        facts[slot] = f"defined_as({me}, {sym.op}, [{', '.join(kids)}])"
        return me

    root = name(symbol)
    return [f"sample_is({sample_id}, {root})"] + facts


def pointer_symbol(facts: list[str], sample_id: str) -> Symbol:
    """Inverse of :func:`pointer_facts` (used by tests and for checking exports)."""
    defs: dict[str, tuple[str, list[str]]] = {}
    root = None
    for f in facts:
        f = f.strip().rstrip(".")
        if f.startswith("sample_is("):
            sid, obj = [x.strip() for x in f[len("sample_is("):-1].split(",")]
            if sid == sample_id:
                root = obj
        elif f.startswith("defined_as("):
            inner = f[len("defined_as("):-1]
            obj, op, rest = inner.split(",", 2)
            kids = [k.strip() for k in rest.strip()[1:-1].split(",") if k.strip()]
            defs[obj.strip()] = (op.strip(), kids)
    if root is None:
        raise ValueError(f"no sample_is/2 fact for {sample_id}")

    def build(name: str) -> Symbol:
        if name in defs:
            op, kids = defs[name]
            return Composite(op, tuple(build(k) for k in kids))
        return from_prolog(name)

    return build(root)


def pointer_encode(splits: dict[str, list[Sample]]) -> dict[tuple[str, int], tuple[str, list[str]]]:
    """(split, index in split) -> (sample constant, facts), numbered over train, val, test."""
    samples = itertools.count(1)
    objects = itertools.count(0)
    out = {}
    for split in SPLITS:
        for i, s in enumerate(splits.get(split, [])):
            sid = f"s{next(samples):05d}"
            out[(split, i)] = (sid, pointer_facts(s.symbol, sid, objects))
    return out

