"""Structure-aware counting of reasoning shortcuts for the shipped knowledge bases.

Counting by clingo or by a label table over all worlds is exponential in the number of
variables. The shipped knowledge has structure that decomposes along the variables:

* **additive labels** (``xor.lp``: Σ x mod 2; ``addition.lp``: Σ x; ``linear.lp``:
  ``(Σ_i a_{L,i} x_i)_L``): every label vector is ``K(w) = Σ_i f_i(w_i)`` in an abelian group
  ``G`` (``Z_2`` or ``Z^L``) and distinct sums are distinct labels;
* **read-once formulas** (``formula.lp`` with every variable in one leaf): a tree;
* **Kandinsky** (``kandinsky.lp``): vectorised labelling in numpy.

Counting disentangled maps α with ``K(α(w)) = K(w)`` on the support S:

* ``S`` = all worlds (a product): writing ``Δ_i = {f_i(α(x)) − f_i(x) : x ∈ D_i}``, the
  label differences on S form the Minkowski sum ``Δ_1 + … + Δ_n``, which is ``{0}`` only if
  every ``Δ_i`` is a single ``δ_i`` (``|A + B| ≥ |A|`` in a group) and ``Σ δ_i = 0``. So a
  group's map is counted per δ-vector (``Π_x |{z : f_i(z) = f_i(x) + δ_i ∀ i ∈ G}|``) and the
  groups are combined by a dynamic programme over the partial sum of δ: linear in n;
* ``S`` = an explicit list: a frontier dynamic programme over the map rows ``α_G(x)`` (values
  the support uses), the state being the partial label difference of every support world
  that has some but not all of its rows assigned; a world closes when its difference is 0;
  partial differences that the remaining rows cannot bring back to 0 are pruned (bounds in
  ``Z``). The number of states is bounded (memory budget) and so is the time;
* read-once formulas on all worlds, one map per variable: a tree programme whose state at a
  node is the relation ``R = {(φ(w), φ(α(w)))}`` ⊆ {0,1}² (children have disjoint variables,
  so the relation of a node is the image of the product of its children's relations).

Everything is exact (Python ints). Functions return ``None`` when the structure does not
apply, so the caller can fall back to the general engines.
"""
from __future__ import annotations

import time
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import product

import numpy as np

from .. import ROOT
from ..errors import BudgetExceeded

#: DP states kept at once (each state holds a tuple per open support world)
MAX_STATES = 2_000_000
#: bytes the vectorised paths may allocate at once
MEMORY_BUDGET = 2 << 30
#: worlds up to which enumeration uses a label table over all worlds (int32 ids)
TABLE_WORLDS = 1 << 24


@dataclass
class Additive:
    """``K(w) = (Σ_i f[i][pos(w_i)])`` in ``Z_mod^L`` (``mod`` = 0: the integers)."""

    mod: int
    f: list[list[tuple[int, ...]]]     # per variable, per domain position: vector of length L
    n_labels: int

    def norm(self, v):
        return tuple(x % self.mod for x in v) if self.mod else tuple(v)


@dataclass
class Formula:
    """A propositional formula tree (formula.lp facts)."""

    root: int
    nodes: dict = field(default_factory=dict)    # id -> (op, [child ids])
    leaves: dict = field(default_factory=dict)   # id -> variable index
    konst: dict = field(default_factory=dict)    # id -> 0/1


@dataclass
class Kandinsky:
    """Figures of objects with ``shape(F, O)`` and ``color(F, O)`` (kandinsky.lp)."""

    figures: list[list[tuple[int, int]]]   # per figure: (shape var, colour var) per object


def _kb(task, name: str) -> bool:
    return len(task.knowledge) == 1 and \
        task.knowledge[0].resolve() == (ROOT / "kb" / "shortcuts" / name).resolve()


def recognise(task):
    """The structure of ``task``'s knowledge, or ``None`` (user knowledge: general engines)."""
    cached = getattr(task, "_structure", False)
    if cached is not False:
        return cached
    st = _recognise(task)
    try:
        task._structure = st
    except AttributeError:  # pragma: no cover
        pass
    return st


def _recognise(task):
    ints = all(all(isinstance(x, int) for x in v.domain) for v in task.variables)
    if _kb(task, "xor.lp") and ints and not task.params:
        return Additive(2, [[(x % 2,) for x in v.domain] for v in task.variables], 1)
    if _kb(task, "addition.lp") and ints and not task.params:
        return Additive(0, [[(x,) for x in v.domain] for v in task.variables], 1)
    if _kb(task, "linear.lp") and ints:
        coef: dict = {}
        for p in task.params:
            if p[0] != "coef" or len(p) != 4:
                return None
            coef.setdefault(p[1], {})[p[2]] = coef.get(p[1], {}).get(p[2], 0) + p[3]
        names = task.label_names()
        if sorted(map(str, coef)) != sorted(map(str, names)):
            return None
        rows = [coef[next(k for k in coef if str(k) == str(lab))] for lab in names]
        terms = {v.term for v in task.variables}
        if any(t not in terms for r in rows for t in r):
            return None
        return Additive(0, [[tuple(r.get(v.term, 0) * x for r in rows) for x in v.domain]
                            for v in task.variables], len(names))
    if _kb(task, "formula.lp"):
        if not all(set(v.domain) <= {0, 1} for v in task.variables):
            return None
        fo = Formula(root=-1)
        ix = {v.term: i for i, v in enumerate(task.variables)}
        for p in task.params:
            if p[0] == "root":
                fo.root = p[1]
            elif p[0] == "node":
                fo.nodes.setdefault(p[1], [p[2], []])[0] = p[2]
            elif p[0] == "arg":
                fo.nodes.setdefault(p[1], [None, []])[1].append((p[2], p[3]))
            elif p[0] == "leaf":
                if p[2] not in ix:
                    return None
                fo.leaves[p[1]] = ix[p[2]]
            elif p[0] == "konst":
                fo.konst[p[1]] = p[2]
            else:
                return None
        fo.nodes = {k: (op, [c for _, c in sorted(args)]) for k, (op, args) in fo.nodes.items()}
        return fo if fo.root >= 0 else None
    if _kb(task, "kandinsky.lp") and not task.params:
        objs: dict = {}
        for i, v in enumerate(task.variables):
            t = v.term
            if not (isinstance(t, tuple) and len(t) == 3 and t[0] in ("shape", "color")):
                return None
            objs.setdefault(t[1], {}).setdefault(t[2], {})[t[0]] = i
        figs = []
        for f in sorted(objs):
            os_ = objs[f]
            if any(set(o) != {"shape", "color"} for o in os_.values()):
                return None
            figs.append([(os_[o]["shape"], os_[o]["color"]) for o in sorted(os_)])
        return Kandinsky(figs)
    return None


# -- vectorised labelling ------------------------------------------------------------------
def labels_np(task, st, pos: np.ndarray) -> np.ndarray:
    """Labels of worlds given as domain positions ``pos`` [N, n] -> int64 [N, L] in the order
    of ``task.label_names()`` (the values the ASP knowledge gives)."""
    pos = np.asarray(pos)
    if isinstance(st, Additive):
        out = np.zeros((pos.shape[0], st.n_labels), dtype=np.int64)
        for i, fi in enumerate(st.f):
            out += np.asarray(fi, dtype=np.int64)[pos[:, i]]
        return out % st.mod if st.mod else out
    if isinstance(st, Formula):
        vals = [np.asarray(v.domain, dtype=np.int8)[pos[:, i]].astype(bool)
                for i, v in enumerate(task.variables)]

        def ev(n):
            if n in st.leaves:
                return vals[st.leaves[n]]
            if n in st.konst:
                return np.full(pos.shape[0], bool(st.konst[n]))
            op, ch = st.nodes[n]
            xs = [ev(c) for c in ch]
            if op == "and":
                return np.logical_and.reduce(xs) if xs else np.ones(pos.shape[0], bool)
            if op == "or":
                return np.logical_or.reduce(xs) if xs else np.zeros(pos.shape[0], bool)
            if op == "neg":
                return ~xs[0]
            if op == "xor":
                return np.logical_xor.reduce(xs)
            if op == "implies":
                return ~xs[0] | xs[1]
            if op == "iff":
                return xs[0] == xs[1]
            raise ValueError(op)
        return ev(st.root).astype(np.int64)[:, None]
    if isinstance(st, Kandinsky):
        ok = np.ones(pos.shape[0], dtype=bool)
        for fig in st.figures:
            pat = np.zeros(pos.shape[0], dtype=bool)
            for a in range(len(fig)):
                for b in range(a + 1, len(fig)):
                    pat |= (pos[:, fig[a][0]] == pos[:, fig[b][0]]) & \
                        (pos[:, fig[a][1]] == pos[:, fig[b][1]])
            ok &= pat
        return ok.astype(np.int64)[:, None]
    raise TypeError(st)


def world_positions(task, worlds) -> np.ndarray:
    """Domain positions [N, n] of worlds given as value tuples."""
    ix = [{x: j for j, x in enumerate(v.domain)} for v in task.variables]
    return np.array([[ix[i][x] for i, x in enumerate(w)] for w in worlds], dtype=np.int64) \
        .reshape(len(worlds), len(task.variables))


def all_positions(task, max_bytes: int = MEMORY_BUDGET) -> np.ndarray:
    """Domain positions of all worlds [N, n] (mixed radix, last variable fastest)."""
    sizes = [len(v.domain) for v in task.variables]
    n_worlds = int(np.prod(sizes, dtype=object))
    need = n_worlds * len(sizes) * 8 * 3
    if need > max_bytes:
        raise BudgetExceeded(f"labelling all {n_worlds} worlds needs about {need >> 20} MiB "
                             f"(memory budget {max_bytes >> 20} MiB)", task=task.name)
    grids = np.indices(sizes, dtype=np.int64).reshape(len(sizes), -1).T
    return grids


# -- additive labels -----------------------------------------------------------------------
def _add(a, b, st):
    return st.norm([x + y for x, y in zip(a, b)])


def _sub(a, b, st):
    return st.norm([x - y for x, y in zip(a, b)])


def count_additive_all(st: Additive, groups, sup_ix, deadline=None) -> int:
    """Disentangled maps on all worlds (module docstring): exact, linear in n."""
    zero = (0,) * st.n_labels
    total = {zero: 1}
    for _, dom, ix in groups:
        _tick(deadline)
        supv = any(i in sup_ix for i in ix)
        k = len(dom)
        per: dict = {}
        for z0 in range(k):
            dv = tuple(_sub(st.f[i][z0], st.f[i][0], st) for i in ix)
            if dv in per:
                continue
            n = 1
            for x in range(k):
                want = [_add(st.f[i][x], d, st) for i, d in zip(ix, dv)]
                c = sum(1 for z in range(k) if (not supv or z == x)
                        and all(st.norm(st.f[i][z]) == w for i, w in zip(ix, want)))
                n *= c
                if not n:
                    break
            if n:
                per[dv] = n
        new: dict = {}
        for s, c in total.items():
            for dv, n in per.items():
                t = s
                for d in dv:
                    t = _add(t, d, st)
                new[t] = new.get(t, 0) + c * n
        total = new
        if len(total) > MAX_STATES:
            raise BudgetExceeded(f"more than {MAX_STATES} partial label differences")
    return total.get(zero, 0)


def count_additive_support(st: Additive, task, groups, worlds, sup_ix, *,
                           max_states: int = MAX_STATES, deadline=None) -> int:
    """Disentangled maps on an explicit support (frontier DP over map rows; module docstring)."""
    zero = (0,) * st.n_labels
    g_of = {i: g for g, (_, _, ix) in enumerate(groups) for i in ix}
    pos = world_positions(task, worlds)
    rows: dict = {}                    # (g, x position) -> row id
    forced: set = set()
    contrib: list[dict] = []           # row -> {world: [vector per z]}
    reads: dict = {}                   # (row, world) -> variables of the world reading the row
    for w_id, w in enumerate(pos):
        for i, x in enumerate(w):
            key = (g_of[i], int(x))
            if key not in rows:
                rows[key] = len(rows)
                contrib.append({})
            r = rows[key]
            reads.setdefault((r, w_id), []).append(i)
            k = len(groups[g_of[i]][1])
            cur = contrib[r].setdefault(w_id, [zero] * k)
            contrib[r][w_id] = [_add(c, _sub(st.f[i][z], st.f[i][x], st), st)
                                for z, c in enumerate(cur)]
            if i in sup_ix:
                forced.add(r)
    n_dom = {r: len(groups[g][1]) for (g, _), r in rows.items()}
    x_of = {r: x for (_, x), r in rows.items()}
    allowed = {r: ([x_of[r]] if r in forced else list(range(n_dom[r]))) for r in rows.values()}
    # unseen values are free
    free = 1
    for g, (_, dom, _ix) in enumerate(groups):
        seen = {x for (gg, x) in rows if gg == g}
        if any(gg == g for gg, _ in rows):
            free *= len(dom) ** (len(dom) - len(seen))
        elif _ix:
            free *= len(dom) ** len(dom)
    w_rows = [set() for _ in worlds]
    for r, cw in enumerate(contrib):
        for w in cw:
            w_rows[w].add(r)
    # worlds that share no row are independent: one programme per connected component
    parent = list(range(len(worlds)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for cw in contrib:
        ws = list(cw)
        for w in ws[1:]:
            parent[find(w)] = find(ws[0])
    comps: dict = {}
    for r, cw in enumerate(contrib):
        comps.setdefault(find(next(iter(cw))), []).append(r)
    total = free
    for rows_c in comps.values():
        n = _lattice_count(st, task, groups, rows, rows_c, contrib, allowed, w_rows, reads,
                           deadline)
        if n is None:
            n = _frontier_dp(st, rows_c, contrib, w_rows, allowed, zero, max_states,
                             deadline, task.name)
        total *= n
        if not total:
            return 0
    return total


#: free-variable assignments the lattice method may enumerate
LATTICE_ENUM = 1 << 21


def _affine(st, task, i):
    """``(c, b)`` per label with ``f_i(value) = c * value + b``, or None."""
    dom = task.variables[i].domain
    if st.mod or len(dom) < 2:
        return None if st.mod else [(0, v) for v in st.f[i][0]]
    out = []
    for li in range(st.n_labels):
        c = (st.f[i][1][li] - st.f[i][0][li]) / (dom[1] - dom[0])
        if c != int(c):
            return None
        c = int(c)
        b = st.f[i][0][li] - c * dom[0]
        if any(st.f[i][j][li] != c * x + b for j, x in enumerate(dom)):
            return None
        out.append((c, b))
    return out


def _lattice_count(st, task, groups, rows, rows_c, contrib, allowed, w_rows, reads, deadline):
    """Exact count for integer labels affine in the values (sums, weighted sums): every
    support world is a linear equation over the row values ``u_r = α_G(x)``; Gaussian
    elimination (fractions) leaves a few free rows, whose assignments are enumerated (numpy,
    exact integers) while the pivot rows follow and must be integers of their domains.
    ``None`` when labels are not affine or too many free assignments remain."""
    from fractions import Fraction  # noqa: PLC0415
    from math import lcm  # noqa: PLC0415
    if st.mod:
        return None
    key_of = {r: k for k, r in rows.items()}
    g_vars = {g: ix for g, (_, _, ix) in enumerate(groups)}
    aff = {}
    for r in rows_c:
        g, _ = key_of[r]
        for i in g_vars[g]:
            if i not in aff:
                a = _affine(st, task, i)
                if a is None:
                    return None
                aff[i] = a
    cols = sorted(rows_c)
    cix = {r: j for j, r in enumerate(cols)}
    dom_vals = {r: [groups[key_of[r][0]][1][z] for z in allowed[r]] for r in cols}
    # equations: Σ_r a_r u_r = Σ_r a_r x_r per (world, label); a from the affine slopes.
    # Sparse rows {column: coefficient}, the right-hand side under key -1.
    eqs = set()
    worlds_c = sorted({w for r in cols for w in contrib[r]})
    for w in worlds_c:
        for li in range(st.n_labels):
            row: dict = {}
            rhs = 0
            for r in w_rows[w]:
                g, xpos = key_of[r]
                x = groups[g][1][xpos]
                a = sum(aff[i][li][0] for i in reads[(r, w)])
                if a:
                    row[cix[r]] = row.get(cix[r], 0) + a
                    rhs += a * x
            eqs.add((tuple(sorted((c, v) for c, v in row.items() if v)), rhs))
    for r in cols:                       # forced rows (supervision): u_r = x_r
        if len(allowed[r]) == 1:
            eqs.add((((cix[r], 1),), dom_vals[r][0]))
    # incremental sparse reduced row echelon form: basis[pivot column] = row
    basis: dict = {}
    for k, (coefs, rhs) in enumerate(sorted(eqs)):
        if not k & 0xFF:
            _tick(deadline)
        row = {c: Fraction(v) for c, v in coefs}
        row[-1] = Fraction(rhs)
        for c in [c for c in row if c in basis]:
            f = row.get(c, 0)
            if f:
                for cc, v in basis[c].items():
                    row[cc] = row.get(cc, 0) - f * v
        row = {c: v for c, v in row.items() if v}
        lead = [c for c in row if c != -1]
        if not lead:
            if row.get(-1, 0):
                return 0                      # inconsistent: no optimal map
            continue
        p = min(lead)
        pv = row[p]
        row = {c: v / pv for c, v in row.items()}
        for q, brow in basis.items():
            f = brow.get(p, 0)
            if f:
                for cc, v in row.items():
                    brow[cc] = brow.get(cc, 0) - f * v
                basis[q] = {c: v for c, v in brow.items() if v}
        basis[p] = row
    piv_cols = sorted(basis)
    m = [[basis[p].get(c, Fraction(0)) for c in range(len(cols))] + [basis[p].get(-1, Fraction(0))]
         for p in piv_cols]
    free = [c for c in range(len(cols)) if c not in piv_cols]
    space = 1
    for c in free:
        space *= len(dom_vals[cols[c]])
        if space > LATTICE_ENUM:
            return None
    grids = np.array(list(product(*[dom_vals[cols[c]] for c in free])),
                     dtype=np.int64).reshape(space, len(free))
    ok = np.ones(grids.shape[0], dtype=bool)
    for k, c in enumerate(piv_cols):
        _tick(deadline)
        row = m[k]
        den = lcm(*[v.denominator for v in row])
        num = [int(v * den) for v in row]
        if max(map(abs, num)) * (1 + max(abs(v) for r_ in cols for v in dom_vals[r_])) * \
                (len(free) + 1) > 1 << 62:
            return None                       # would overflow int64: the programme counts it
        val = num[-1] - grids @ np.array([num[f] for f in free], dtype=np.int64) \
            if free else np.full(grids.shape[0], num[-1], dtype=np.int64)
        q, rem = np.divmod(val, num[c])
        ok &= rem == 0
        ok &= np.isin(q, np.array(dom_vals[cols[c]], dtype=np.int64))
    return int(ok.sum())


def _frontier_dp(st, rows_c, contrib, w_rows, allowed, zero, max_states, deadline, name) -> int:
    """Count the row assignments of one component (see count_additive_support)."""
    # row order: in Z, rows with the widest range of contributions first (high positions of
    # multi-digit numbers pin the partial differences early); ties and Z_2: keep the
    # frontier of open worlds small
    width = {r: max((max(v[li] for v in (vec[z] for z in allowed[r])) -
                     min(v[li] for v in (vec[z] for z in allowed[r])))
                    for vec in contrib[r].values() for li in range(st.n_labels)) if not st.mod
             else 0 for r in rows_c}
    order, done, open_w = [], set(), set()
    remaining = set(rows_c)
    while remaining:
        def score(r):
            touch = contrib[r].keys()
            closes = sum(1 for w in touch if w_rows[w] - done <= {r})
            opens = sum(1 for w in touch if w not in open_w)
            return (-width[r], opens - closes, -closes, r)
        r = min(remaining, key=score)
        order.append(r)
        remaining.discard(r)
        done.add(r)
        open_w |= set(contrib[r])
        open_w -= {w for w in contrib[r] if w_rows[w] <= done}
    step = {r: s for s, r in enumerate(order)}
    worlds_c = sorted({w for r in rows_c for w in contrib[r]})
    last = {w: max(step[r] for r in w_rows[w]) for w in worlds_c}
    # bounds of what the rows after step s can still add to world w (integers only)
    bounds = None
    if not st.mod:
        bounds = {}
        for w in worlds_c:
            rs = sorted(w_rows[w], key=step.get)
            lo = [[0] * st.n_labels for _ in range(len(rs) + 1)]
            hi = [[0] * st.n_labels for _ in range(len(rs) + 1)]
            for j in range(len(rs) - 1, -1, -1):
                vs = [contrib[rs[j]][w][z] for z in allowed[rs[j]]]
                for li in range(st.n_labels):
                    lo[j][li] = lo[j + 1][li] + min(v[li] for v in vs)
                    hi[j][li] = hi[j + 1][li] + max(v[li] for v in vs)
            bounds[w] = ([step[r] for r in rs], [(lo[j + 1], hi[j + 1]) for j in range(len(rs))])

    def bound(w, s):   # what the rows of w after step s can add (w has a row at or before s)
        steps, bs = bounds[w]
        return bs[bisect_right(steps, s) - 1]
    open_list: list[int] = []
    states = {(): 1}
    for s, r in enumerate(order):
        _tick(deadline)
        touch = contrib[r]
        new_open = [w for w in sorted(touch) if w not in open_list]
        layout = open_list + new_open
        keep = [j for j, w in enumerate(layout) if last[w] > s]
        closing = [j for j, w in enumerate(layout) if last[w] == s]
        tw = [(j, touch[w]) for j, w in enumerate(layout) if w in touch]
        bk = [(j, bound(layout[j], s)) for j in keep] if bounds is not None else []
        nxt: dict = {}
        for n_done, (st_key, c) in enumerate(states.items()):
            if not n_done & 0xFFF:
                _tick(deadline)
                if len(nxt) > max_states:
                    break
            base = list(st_key) + [zero] * len(new_open)
            for z in allowed[r]:
                cur = list(base)
                for j, vec in tw:
                    cur[j] = _add(cur[j], vec[z], st)
                if any(cur[j] != zero for j in closing):
                    continue
                if any(not all(lo <= -v <= hi for v, lo, hi in zip(cur[j], *b)) for j, b in bk):
                    continue
                key = tuple(cur[j] for j in keep)
                nxt[key] = nxt.get(key, 0) + c
        states = nxt
        open_list = [layout[j] for j in keep]
        if len(states) > max_states:
            raise BudgetExceeded(
                f"more than {max_states} partial states in the row-by-row count (memory "
                "budget); restrict the support or the domains, or raise --max-states",
                task=name)
        if not states:
            return 0
    return sum(states.values())


# -- read-once formulas --------------------------------------------------------------------
_OPS = {"and": lambda xs: int(all(xs)), "or": lambda xs: int(any(xs)),
        "neg": lambda xs: 1 - xs[0], "xor": lambda xs: sum(xs) % 2,
        "implies": lambda xs: int((not xs[0]) or xs[1]), "iff": lambda xs: int(xs[0] == xs[1])}


def count_formula_all(fo: Formula, task, groups, sup_ix, deadline=None) -> int | None:
    """One map per variable, all worlds, read-once formula: tree DP over relations."""
    if any(len(ix) != 1 for _, _, ix in groups):
        return None
    leaf_vars = list(fo.leaves.values())
    if len(set(leaf_vars)) != len(leaf_vars):
        return None
    n_vars = len(task.variables)
    maps = list(product((0, 1), repeat=2))   # (α(0), α(1)) for domain [0, 1]

    def node(n) -> dict:
        _tick(deadline)
        if n in fo.leaves:
            i = fo.leaves[n]
            dom = task.variables[i].domain
            out: dict = {}
            for m in maps:
                tab = dict(zip((0, 1), m))
                if i in sup_ix and any(tab[x] != x for x in dom):
                    continue
                if any(tab[x] not in dom for x in dom):
                    continue
                rel = frozenset((x, tab[x]) for x in dom)
                out[rel] = out.get(rel, 0) + 1
            return out
        if n in fo.konst:
            return {frozenset({(fo.konst[n], fo.konst[n])}): 1}
        op, ch = fo.nodes[n]
        fn = _OPS[op]
        kids = [node(c) for c in ch]
        if op in ("and", "or", "xor") and len(kids) > 2:
            acc = kids[0]
            for k in kids[1:]:
                acc = _combine(fn, [acc, k])
            return acc
        return _combine(fn, kids)

    root = node(fo.root)
    good = {(0, 0), (1, 1)}
    total = sum(c for rel, c in root.items() if rel <= good)
    for i in range(n_vars):
        if i not in set(leaf_vars):
            d = len(task.variables[i].domain)
            total *= 1 if i in sup_ix else d ** d
    return total


def _combine(fn, kids) -> dict:
    out: dict = {}
    for combo in product(*[list(k.items()) for k in kids]):
        rels = [r for r, _ in combo]
        c = 1
        for _, x in combo:
            c *= x
        rel = frozenset((fn([a for a, _ in pairs]), fn([b for _, b in pairs]))
                        for pairs in product(*rels))
        out[rel] = out.get(rel, 0) + c
    return out


# -- brute enumeration of small map spaces with vectorised labels ----------------------------
def count_by_enumeration(task, st, groups, worlds_pos, sup_ix, *, max_maps: int = 2_000_000,
                         max_bytes: int = MEMORY_BUDGET, deadline=None) -> int | None:
    """Enumerate every disentangled map (when Π |D_G|^|D_G| ≤ ``max_maps``) and check it on
    the support with numpy labels; exact. ``None`` when the map space is larger."""
    space = 1
    for _, dom, _ in groups:
        space *= len(dom) ** len(dom)
    if space > max_maps:
        return None
    n_sup = worlds_pos.shape[0]
    want = labels_np(task, st, worlds_pos)
    g_of = {i: g for g, (_, _, ix) in enumerate(groups) for i in ix}
    per_group = []
    for g, (_, dom, ix) in enumerate(groups):
        k = len(dom)
        tabs = np.array(list(product(range(k), repeat=k)), dtype=np.int64)
        sup_vars = [i for i in ix if i in sup_ix]
        if sup_vars:
            seen = np.unique(worlds_pos[:, sup_vars])
            tabs = tabs[(tabs[:, seen] == seen).all(axis=1)]
        per_group.append(tabs)
    sizes = [len(v.domain) for v in task.variables]
    n_worlds = int(np.prod(sizes, dtype=object))
    if n_worlds <= TABLE_WORLDS:
        return _enumerate_with_table(task, st, groups, per_group, worlds_pos, want, g_of,
                                     sizes, max_bytes, deadline)
    # no table: label the image worlds of chunks of maps (chunk x support within the budget)
    chunk = max(1, max_bytes // max(1, n_sup * len(task.variables) * 8 * 4))
    total = 0
    combos = product(*[range(len(t)) for t in per_group])
    while True:
        _tick(deadline)
        block = list(_take(combos, chunk))
        if not block:
            break
        idx = np.array(block, dtype=np.int64)            # [B, n_groups]
        img = np.empty((len(block), n_sup, len(task.variables)), dtype=np.int64)
        for i in range(len(task.variables)):
            g = g_of[i]
            tab = per_group[g][idx[:, g]]                  # [B, k]
            img[:, :, i] = np.take_along_axis(tab, np.broadcast_to(
                worlds_pos[:, i][None, :], (len(block), n_sup)), axis=1)
        labs = labels_np(task, st, img.reshape(-1, len(task.variables)))
        ok = (labs.reshape(len(block), n_sup, -1) == want[None]).all(axis=(1, 2))
        total += int(ok.sum())
    return total


def _enumerate_with_table(task, st, groups, per_group, worlds_pos, want, g_of, sizes,
                          max_bytes, deadline) -> int:
    """Enumeration with a label table over all worlds (ids, int32): the image world's index
    is a sum of one part per group map, so each group map's part is computed once."""
    stride = [1] * len(sizes)
    for i in range(len(sizes) - 2, -1, -1):
        stride[i] = stride[i + 1] * sizes[i + 1]
    n_sup = worlds_pos.shape[0]
    need = int(np.prod(sizes)) * 4 + n_sup * 8 * 4 + sum(len(t) for t in per_group) * 256 * 8
    if need > max_bytes:
        raise BudgetExceeded(f"enumerating the maps needs about {need >> 20} MiB (memory "
                             f"budget {max_bytes >> 20} MiB)", task=task.name)
    labs = labels_np(task, st, all_positions(task, max_bytes))
    _, lab_id = np.unique(labs, axis=0, return_inverse=True)
    lab_id = lab_id.reshape(-1).astype(np.int32)
    stride_np = np.asarray(stride, dtype=np.int64)
    want_id = lab_id[(worlds_pos * stride_np).sum(axis=1)]
    def parts_on(rows):     # per group: [maps, len(rows)] contribution to the image index
        out = []
        for g, (_, _dom, ix) in enumerate(groups):
            part = np.zeros((len(per_group[g]), len(rows)), dtype=np.int64)
            for i in ix:
                part += per_group[g][:, worlds_pos[rows, i]] * stride[i]
            out.append(part)
        return out

    # screen every map on a few support worlds, re-screen the survivors on more, then check
    # what is left on the whole support
    screen = np.unique(np.linspace(0, n_sup - 1, min(n_sup, 256)).astype(np.int64))
    parts = parts_on(screen)
    cands = []
    for combo in product(*[range(len(p)) for p in parts[:-1]]):
        _tick(deadline)
        base = np.zeros(len(screen), dtype=np.int64)
        for g, m in enumerate(combo):
            base += parts[g][m]
        ok = (lab_id[base[None, :] + parts[-1]] == want_id[screen][None, :]).all(axis=1)
        cands.extend((*combo, int(m)) for m in np.flatnonzero(ok))
    total = 0
    for c in cands:
        _tick(deadline)
        img = np.zeros(n_sup, dtype=np.int64)
        for i in range(len(sizes)):
            img += per_group[g_of[i]][c[g_of[i]]][worlds_pos[:, i]] * stride[i]
        total += bool((lab_id[img] == want_id).all())
    return total


def _take(it, n):
    for _ in range(n):
        try:
            yield next(it)
        except StopIteration:
            return


def _tick(deadline):
    if deadline is not None and time.monotonic() > deadline:
        raise BudgetExceeded("time budget exhausted while counting (raise --time-limit)")
