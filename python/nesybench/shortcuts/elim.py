"""Exact counting of disentangled maps by variable elimination (the fallback when clingo's
enumeration of projected models would explode).

The unknowns are the *rows* of the maps: ``α_G(x)`` for every group ``G`` and every value
``x`` that the support uses (values never seen are free: a factor ``|D_G|`` each). Each support
world ``w`` is a 0/1 factor over the rows it touches, 1 where the image world has the same
labels (looked up in a label table over all worlds). The count of optimal maps is the sum over
row assignments of the product of factors — a tensor contraction computed exactly with Python
integers (object arrays), eliminating the row of least degree first.
"""
from __future__ import annotations

import numpy as np

from ..errors import BudgetExceeded

#: largest factor (entries) built during elimination: object arrays of Python ints take about
#: 40-80 bytes an entry, so this bounds the memory of one product to a few hundred MB
MAX_FACTOR = 1 << 22


def count_rows(n_rows_dom: list[int], factors: list[tuple[tuple[int, ...], np.ndarray]],
               max_factor: int = MAX_FACTOR) -> int:
    """Sum over all assignments of rows (row ``r`` ranges over ``n_rows_dom[r]`` values) of
    the product of ``factors`` (``(rows, 0/1 array with one axis per row)``)."""
    # dedupe identical factors (0/1 factors are idempotent under multiplication)
    uniq: dict = {}
    for rows, t in factors:
        order = np.argsort(rows)
        rows_s = tuple(rows[i] for i in order)
        t_i = np.ascontiguousarray(np.transpose(np.asarray(t), order)).astype(np.int8)
        uniq.setdefault((rows_s, t_i.tobytes()), (rows_s, t_i.astype(object)))
    facs = list(uniq.values())
    live = {r for rows, _ in facs for r in rows}
    result = 1
    for r in range(len(n_rows_dom)):
        if r not in live:
            result *= n_rows_dom[r]
    while live:
        # least-degree row: fewest distinct neighbours
        def cost(r):
            nb = set()
            for rows, _ in facs:
                if r in rows:
                    nb.update(rows)
            size = 1
            for x in nb:
                size *= n_rows_dom[x]
            return size
        r = min(live, key=cost)
        if cost(r) > max_factor:
            raise BudgetExceeded(f"the map-row interaction graph is too dense for exact "
                                 f"elimination (a factor of {cost(r)} entries, memory budget "
                                 f"{max_factor})")
        touching = [f for f in facs if r in f[0]]
        facs = [f for f in facs if r not in f[0]]
        union = sorted({x for rows, _ in touching for x in rows})
        prod = np.ones([n_rows_dom[x] for x in union], dtype=object)
        for rows, t in touching:
            shape = [n_rows_dom[x] if x in rows else 1 for x in union]
            prod = prod * t.reshape(shape)
        ax = union.index(r)
        summed = prod.sum(axis=ax)
        rest = tuple(x for x in union if x != r)
        live.discard(r)
        if rest:
            facs.append((rest, np.asarray(summed, dtype=object)))
        else:
            result *= int(summed)
    for _, t in facs:  # scalars left over
        result *= int(np.asarray(t).sum()) if np.asarray(t).ndim == 0 else 1
    return result
