"""Structured counting of the permutation class (``--map perm``) for Kandinsky knowledge.

A perm-class map is α(w)_T = β_T(w_π(T)): π permutes the variables of each concept (shape
variables among themselves, colour variables among themselves) and β_T is any map of the
domain. For Kandinsky (``kandinsky.lp``: figure f shows the *pattern* iff two of its objects
share shape and colour; the label is 1 iff every figure does) the image of figure f shows the
pattern iff, for some pair (a, b) of its objects,

    β_sa(w_Xa) = β_sb(w_Xb)  and  β_ca(w_Ua) = β_cb(w_Ub)

with X/U the shape/colour variables π reads for the objects. The pattern therefore sees only
the *relations* r_ab = {(x, y) : β_a(x) = β_b(y)} between the maps of one figure, so the
(k^k)^O map tuples of a figure's O shape (colour) channels collapse to a few thousand
*classes* (relations per object pair, number of constant maps) with a multiplicity each
(3 × 3 shapes, 3 objects: 19,683 tuples, 3,266 classes).

Counting (exact, Python ints):

1. **Symmetry.** The label is invariant under the group H of object permutations inside a
   figure and figure permutations (|H| = F!·(O!)^F) acting on the image variables, and H acts
   freely on (π, β) pairs, so #pairs = |H| × #pairs whose π reads increasing shape variables
   along the objects of each image figure, figures ordered by their first shape variable.
2. **Figure options.** For each image figure: its (sorted) shape sources, (ordered) colour
   sources and a shape and a colour class. An option is kept when the figure shows the pattern
   on every positive support world (necessary: the label is an AND over figures). Each side is
   screened alone first (some pair's shape relation must hold on every positive world), then
   the survivors are joined with bitsets over the positive worlds.
3. **Negatives.** An option's pattern on the negative worlds is a bitset; options are
   aggregated by (source sets, bitset, constant maps) with summed multiplicities, and the
   figures are combined by a dynamic programme over (used sources, AND of bitsets): a map is
   optimal iff the AND is empty at the end.

``pairs`` counts (π, β) pairs (rsbench-code); ``functions`` counts distinct maps α: a pair
whose β has K_s constant shape maps and K_c constant colour maps is one function together
with the K_s!·K_c! pairs that permute the sources of those constant maps (all of them optimal
or none), so #functions = Σ_pairs 1/(K_s!·K_c!).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations, permutations

import numpy as np

from ..errors import BudgetExceeded
from .structure import MAX_STATES, MEMORY_BUDGET, Kandinsky, _tick, labels_np

#: map tuples of one figure's channels we are willing to enumerate (per concept)
MAX_TUPLES = 1 << 21
#: uint64 words one vectorised join may allocate
JOIN_WORDS = 1 << 23
#: support worlds up to which the bitsets are used (the time grows with the negative worlds:
#: about 22 s at 30,000 sampled Kandinsky worlds on the 2-core development machine)
MAX_WORLDS = 1 << 15


@dataclass
class PermCount:
    """Both counts of the permutation class, and how many figure options were aggregated."""

    pairs: int
    functions: int
    options: int


@dataclass
class _Classes:
    """Map tuples of one figure's O channels of a concept (domain size k), grouped by what the
    pattern sees: ``rel[c, p]`` indexes ``relbits`` (the relation of object pair ``p`` as a
    boolean k×k table over domain positions), ``n_const[c]`` constant maps, ``mult[c]`` tuples."""

    rel: np.ndarray        # [classes, pairs] int
    relbits: np.ndarray    # [relations, k*k] bool
    n_const: np.ndarray    # [classes] int
    mult: np.ndarray       # [classes] int64


def count_kandinsky_perm(task, st: Kandinsky, worlds_pos: np.ndarray, *, deadline=None,
                         max_bytes: int = MEMORY_BUDGET,
                         max_options: int = MAX_STATES) -> PermCount | None:
    """Exact perm-class counts of a Kandinsky task on the support ``worlds_pos`` [N, n]
    (domain positions), or ``None`` when the structure does not apply (figures with different
    object counts, concept groups that are not the shape and colour variables), the map
    tuples of a figure are too many to enumerate or the support has more than ``MAX_WORLDS``
    worlds. Budgets: ``deadline`` (BudgetExceeded), ``max_options`` aggregated figure options
    or partial assignments and ``max_bytes`` for the bitsets (a weakly constraining support
    makes the options explode)."""
    sides = _sides(task, st)
    if sides is None or worlds_pos.shape[0] > MAX_WORLDS:
        return None
    n_obj = len(st.figures[0])
    classes = []
    for vars_, k in sides:
        if k ** (k * n_obj) > MAX_TUPLES:
            return None
        classes.append(_channel_classes(k, n_obj))
    _tick(deadline)
    y = labels_np(task, st, worlds_pos)[:, 0].astype(bool)
    pos_w, neg_w = worlds_pos[y], worlds_pos[~y]
    groups = _figure_options(sides, classes, n_obj, pos_w, neg_w, deadline, max_bytes,
                             max_options)
    pairs, funcs = _combine_figures(groups, len(st.figures), len(sides[0][0]), neg_w.shape[0],
                                    deadline, max_options, max_bytes)
    h = math.factorial(len(st.figures)) * math.factorial(n_obj) ** len(st.figures)
    funcs *= h
    if funcs.denominator != 1:  # pragma: no cover - a counting bug, not an input error
        raise AssertionError(f"non-integral function count {funcs}")
    return PermCount(pairs * h, int(funcs), sum(len(g.w) for g in groups.values()))


def _sides(task, st):
    """``[(shape variables, k_shape), (colour variables, k_colour)]`` with the variables in
    object order of the figures, or None when the concept groups are not exactly these."""
    if len({len(f) for f in st.figures}) != 1:
        return None
    out = []
    for j in (0, 1):
        vars_ = [obj[j] for fig in st.figures for obj in fig]
        out.append((vars_, len(task.variables[vars_[0]].domain)))
    groups = {frozenset(ix) for _, _, ix in task.groups("shared")}
    if groups != {frozenset(v) for v, _ in out}:
        return None
    return out


def _channel_classes(k: int, n_obj: int) -> _Classes:
    """Enumerate the k^(k·O) map tuples of one figure's channels and group them by the
    relations between every pair of channels and the number of constant maps."""
    tup = np.indices([k] * (k * n_obj), dtype=np.int8).reshape(k * n_obj, -1).T \
        .reshape(-1, n_obj, k)
    pairs = list(combinations(range(n_obj), 2))
    weights = 1 << np.arange(k * k, dtype=np.int64)
    rel_bits = np.stack([((tup[:, a, :, None] == tup[:, b, None, :]).reshape(len(tup), -1)
                          * weights).sum(axis=1) for a, b in pairs], axis=1) \
        if pairs else np.zeros((len(tup), 0), dtype=np.int64)
    n_const = (tup == tup[:, :, :1]).all(axis=2).sum(axis=1)
    key = np.concatenate([rel_bits, n_const[:, None]], axis=1)
    cls, mult = np.unique(key, axis=0, return_counts=True)
    rels, rel = np.unique(cls[:, :-1], return_inverse=True)
    relbits = ((rels[:, None] >> np.arange(k * k)) & 1).astype(bool)
    return _Classes(rel.reshape(len(cls), len(pairs)), relbits, cls[:, -1],
                    mult.astype(np.int64))


def _pack(bits: np.ndarray) -> np.ndarray:
    """bool [..., n] -> uint64 [..., max(1, ceil(n / 64))], padding bits 0."""
    n = bits.shape[-1]
    words = max(1, -(-n // 64))
    pad = np.zeros(bits.shape[:-1] + (words * 64,), dtype=bool)
    pad[..., :n] = bits
    return np.ascontiguousarray(np.packbits(pad, axis=-1, bitorder="little")).view("<u8")


def _relation_masks(worlds: np.ndarray, vars_, k: int, relbits: np.ndarray) -> np.ndarray:
    """[relations, n, n, words]: the worlds (bitset) where relation r holds between the values
    of source variables X and Y."""
    n = len(vars_)
    out = np.zeros((len(relbits), n, n, max(1, -(-worlds.shape[0] // 64))), dtype=np.uint64)
    for x, y in permutations(range(n), 2):
        cell = worlds[:, vars_[x]] * k + worlds[:, vars_[y]]
        out[:, x, y] = _pack(relbits[:, cell])
    return out


def _side(cls: _Classes, masks_p, all_p, tpl, pairs):
    """Classes of one side (shape or colour) whose relations, read from the source tuple
    ``tpl``, make some object pair equal on every positive world (necessary for the figure
    to show the pattern there), with their per-pair bitsets on the positives [s, pairs, wP]."""
    if not pairs:   # one object per figure: the pattern never shows
        keep = np.arange(len(cls.mult)) if not all_p.any() else np.zeros(0, dtype=np.int64)
        return keep, np.zeros((len(keep), 0, len(all_p)), np.uint64)
    mp = np.stack([masks_p[cls.rel[:, p], tpl[a], tpl[b]] for p, (a, b) in enumerate(pairs)],
                  axis=1)
    keep = np.flatnonzero((np.bitwise_or.reduce(mp, axis=1) == all_p).all(axis=1))
    return keep, mp[keep]


def _figure_options(sides, classes, n_obj, pos_w, neg_w, deadline, max_bytes,
                    max_options) -> dict:
    """Options of one image figure that show the pattern on every positive world, aggregated:
    ``{(shape source set, colour source set): _Options}`` (bitsets over the negative worlds,
    constant maps, summed multiplicities). Shape sources are increasing along the objects
    (the symmetry of module step 1)."""
    pairs = list(combinations(range(n_obj), 2))
    (s_vars, k_s), (c_vars, k_c) = sides
    cs, cc = classes
    words_n = max(1, -(-neg_w.shape[0] // 64))
    need = sum(len(c.relbits) * len(v) ** 2 * (-(-w.shape[0] // 64) + 1) * 8
               for (v, _), c in zip(sides, classes) for w in (pos_w, neg_w))
    if need > max_bytes // 2:
        raise BudgetExceeded(f"the perm-class bitsets need about {need >> 20} MiB (memory budget "
                             f"{max_bytes >> 20} MiB); use a smaller support")
    all_p = _pack(np.ones(pos_w.shape[0], dtype=bool))
    mp_s, mn_s = (_relation_masks(w, s_vars, k_s, cs.relbits) for w in (pos_w, neg_w))
    mp_c, mn_c = (_relation_masks(w, c_vars, k_c, cc.relbits) for w in (pos_w, neg_w))
    colour = {}
    for tc in permutations(range(len(c_vars)), n_obj):
        _tick(deadline)
        colour[tc] = _side(cc, mp_c, all_p, tc, pairs)
    acc: dict = {}
    kept = 0
    for ts in combinations(range(len(s_vars)), n_obj):
        _tick(deadline)
        s_keep, s_p = _side(cs, mp_s, all_p, ts, pairs)
        if not len(s_keep):
            continue
        for tc, (c_keep, c_p) in colour.items():
            if not len(c_keep):
                continue
            _tick(deadline)
            i, j = _join(s_p, c_p, all_p)
            si, cj = s_keep[i], c_keep[j]
            step = max(1, JOIN_WORDS // words_n)
            for lo in range(0, len(si), step):
                a_, b_ = si[lo:lo + step], cj[lo:lo + step]
                neg = np.zeros((len(a_), words_n), dtype=np.uint64)
                for p, (x, y) in enumerate(pairs):
                    neg |= mn_s[cs.rel[a_, p], ts[x], ts[y]] & mn_c[cc.rel[b_, p], tc[x], tc[y]]
                opts = _Options(neg, cs.n_const[a_], cc.n_const[b_],
                                cs.mult[a_] * cc.mult[b_]).dedupe()
                kept += len(opts.w)
                if kept > max_options or kept * words_n * 8 > max_bytes // 2:
                    raise BudgetExceeded(
                        f"more than {kept} figure options in the perm-class count: the support "
                        "constrains the maps too little, or has too many worlds, for the memory "
                        "budget (use another support, or raise --max-states)")
                acc.setdefault((_bits(ts), _bits(tc)), []).append(opts)
    return {key: _Options.concat(parts).dedupe() for key, parts in acc.items()}


def _join(s_p, c_p, all_p):
    """Index pairs (shape class i, colour class j) whose figure shows the pattern on every
    positive world (some object pair equal in shape and colour): screened on the first 64
    positive worlds, the candidates checked on the others."""
    step = max(1, JOIN_WORDS // max(1, c_p.shape[0]))
    out_i, out_j = [], []
    for lo in range(0, s_p.shape[0], step):
        blk = s_p[lo:lo + step, :, 0]
        cov = np.zeros((blk.shape[0], c_p.shape[0]), dtype=np.uint64)
        for p in range(s_p.shape[1]):
            cov |= blk[:, None, p] & c_p[None, :, p, 0]
        i, j = np.nonzero(cov == all_p[0])
        out_i.append(i + lo)
        out_j.append(j)
    i, j = np.concatenate(out_i), np.concatenate(out_j)
    if all_p.shape[0] > 1 and len(i):
        cov = np.zeros((len(i), all_p.shape[0] - 1), dtype=np.uint64)
        for p in range(s_p.shape[1]):
            cov |= s_p[i, p, 1:] & c_p[j, p, 1:]
        ok = (cov == all_p[1:]).all(axis=1)
        i, j = i[ok], j[ok]
    return i, j


@dataclass
class _Options:
    """Rows of (bitset over the negative worlds, constant shape maps, constant colour maps,
    multiplicity): figure options, or partial assignments of several figures."""

    neg: np.ndarray     # [m, words] uint64
    ks: np.ndarray      # [m] int
    kc: np.ndarray      # [m] int
    w: np.ndarray       # [m] int64 or object (Python ints)

    def dedupe(self) -> "_Options":
        """Merge rows with equal (bitset, ks, kc), summing multiplicities exactly."""
        key = np.concatenate([self.neg.view(np.int64), self.ks[:, None].astype(np.int64),
                              self.kc[:, None].astype(np.int64)], axis=1)
        rows = np.ascontiguousarray(key).view(np.dtype((np.void, key.shape[1] * 8))).ravel()
        _, first, inv = np.unique(rows, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        w = self.w
        if w.dtype != object and len(w) and int(w.max()) * len(w) < 1 << 62:
            sums = np.zeros(len(first), dtype=np.int64)
            np.add.at(sums, inv, w)
            sums = sums.astype(object)
        else:
            sums = np.zeros(len(first), dtype=object)
            np.add.at(sums, inv, w.astype(object))
        return _Options(self.neg[first], self.ks[first], self.kc[first], sums)

    @staticmethod
    def concat(parts) -> "_Options":
        return _Options(*(np.concatenate([getattr(o, f) for o in parts])
                          for f in ("neg", "ks", "kc")),
                        np.concatenate([o.w.astype(object) for o in parts]))


def _bits(ix) -> int:
    return sum(1 << i for i in ix)


def _combine_figures(groups: dict, n_fig: int, n_src: int, n_neg: int, deadline,
                     max_options, max_bytes) -> tuple[int, Fraction]:
    """(pairs, Σ pairs / (K_s!·K_c!)) over the canonical assignments: figure f takes the
    lowest shape source not used by figures 1..f-1, sources are disjoint, and the AND of the
    figures' bitsets on the negative worlds is empty (every negative keeps label 0)."""
    full = _pack(np.ones((1, n_neg), dtype=bool))
    zero = np.zeros(1, dtype=np.int64)
    states = {(0, 0): _Options(full, zero, zero, np.array([1], dtype=object))}
    for _fig in range(n_fig - 1):
        nxt: dict = {}
        for (used_s, used_c), st in states.items():
            low = next(i for i in range(n_src) if not used_s >> i & 1)
            for (ss, sc), g in groups.items():
                _tick(deadline)
                if not ss >> low & 1 or ss & used_s or sc & used_c:
                    continue
                if len(st.w) * len(g.w) * st.neg.shape[1] * 8 > max_bytes // 2:
                    raise BudgetExceeded("the partial assignments of the perm-class count "
                                         f"exceed the memory budget ({max_bytes >> 20} MiB)")
                prod_ = _Options((st.neg[:, None] & g.neg[None]).reshape(-1, st.neg.shape[1]),
                                 (st.ks[:, None] + g.ks[None]).reshape(-1),
                                 (st.kc[:, None] + g.kc[None]).reshape(-1),
                                 np.multiply.outer(st.w, g.w).reshape(-1))
                nxt.setdefault((used_s | ss, used_c | sc), []).append(prod_.dedupe())
        states = {key: _Options.concat(parts).dedupe() for key, parts in nxt.items()}
        if sum(len(s.w) for s in states.values()) > max_options:
            raise BudgetExceeded(f"more than {max_options} partial assignments in the "
                                 "perm-class count (raise --max-states)")
    full_s = (1 << n_src) - 1
    buckets: dict = {}
    for (used_s, used_c), st in states.items():
        g = groups.get((full_s ^ used_s, full_s ^ used_c))
        if g is not None:
            _last_figure(st, g, buckets, deadline)
    pairs = sum(buckets.values())
    funcs = sum(Fraction(v, math.factorial(ks) * math.factorial(kc))
                for (ks, kc), v in buckets.items())
    return pairs, funcs


def _last_figure(st: _Options, g: _Options, buckets: dict, deadline) -> None:
    """Add Σ w_a·w_b over the partial assignments a and last-figure options b with disjoint
    bitsets (the AND over all figures is empty) to ``buckets[(K_s, K_c)]``."""
    step = max(1, JOIN_WORDS // max(1, len(g.w) * st.neg.shape[1]))
    cols = _by_constants(g)
    for lo in range(0, len(st.w), step):
        _tick(deadline)
        part = _Options(st.neg[lo:lo + step], st.ks[lo:lo + step], st.kc[lo:lo + step],
                        st.w[lo:lo + step])
        ok = ~(part.neg[:, None] & g.neg[None]).any(axis=2)
        rows = _by_constants(part)
        for (ks_b, kc_b), cb in cols.items():
            t = part.w * _exact_matvec(ok[:, cb], g.w[cb])
            for (ks_a, kc_a), ra in rows.items():
                key = (ks_a + ks_b, kc_a + kc_b)
                buckets[key] = buckets.get(key, 0) + int(t[ra].sum())


def _by_constants(o: _Options) -> dict:
    """Row indices of ``o`` per (constant shape maps, constant colour maps)."""
    out: dict = {}
    for r, key in enumerate(zip(o.ks.tolist(), o.kc.tolist())):
        out.setdefault(key, []).append(r)
    return {k: np.array(v) for k, v in out.items()}


def _exact_matvec(m: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``m @ w`` for a 0/1 matrix and Python-int weights, exactly: int64 products of 20-bit
    digits of the weights, recombined as Python ints."""
    m = m.astype(np.int64)
    rest = [int(x) for x in w]
    out = np.zeros(m.shape[0], dtype=object)
    shift = 0
    while any(rest):
        digit = np.array([x & 0xFFFFF for x in rest], dtype=np.int64)
        out = out + (m @ digit).astype(object) * (1 << shift)
        rest = [x >> 20 for x in rest]
        shift += 20
    return out
