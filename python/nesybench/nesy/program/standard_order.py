"""ProbLog's standard order of terms, one implementation for every grounder.

ProbLog orders terms with ``problog.engine_builtin.struct_cmp`` (variables, then numbers,
then strings, then atoms and compound terms by arity, name and arguments). Two numbers of
different value are ordered by their *text* (ProbLog 2.3 compares them by value only to tell
``1`` from ``1.0``), so that ``10 @< 2`` holds and ``sort([10, 2], S)`` gives ``[10, 2]``;
``sort/2`` removes the duplicates Python's set would. SWI-Prolog's standard order differs
in all of these, so the SWI-Prolog grounder (``prolog/problog_ground.pl``) calls
:func:`order` and :func:`sort_indices` for ``compare/3``, ``@<``, ``@=<``, ``@>``, ``@>=``
and ``sort/2``: both grounders order with ProbLog's own code.

Terms arrive in the grounder's encoding (``decode()`` of :mod:`.swi_ground`), a variable as
``["v", K]``, numbered from 0 in the order the grounder met it.
"""
from __future__ import annotations

from .swi_ground import decode


def _term(e):
    from problog.logic import Var
    if isinstance(e, list) and e and e[0] == "v":
        return Var(f"_{e[1]}")
    if isinstance(e, list) and e and e[0] in ("l", "c"):
        from problog.logic import Term
        if e[0] == "l":
            return Term(".", _term(e[1]), _term(e[2]))
        return Term(e[1], *(_term(a) for a in e[2]))
    return decode(e)


def order(a, b) -> int:
    """-1, 0 or 1: ProbLog's order of the encoded terms ``a`` and ``b``."""
    from problog.engine_builtin import struct_cmp
    r = struct_cmp(_term(a), _term(b))
    return (r > 0) - (r < 0)


def sort_indices(items: list) -> list[int]:
    """The positions, in ``items`` (encoded terms), of ``sort/2``'s result as ProbLog
    computes it: ``sorted(set(items), key=StructSort)``, each kept term at its first
    position."""
    from problog.engine_builtin import StructSort
    first: dict = {}
    for i, e in enumerate(items):
        first.setdefault(_term(e), i)
    return [first[t] for t in sorted(first, key=StructSort)]
