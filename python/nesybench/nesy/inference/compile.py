"""Compile a :class:`~nesybench.nesy.program.program.GroundProgram` into one SDD (PySDD).

The compiled function over Boolean SDD variables is

    F = AND_j OR_v (q_{j,v} AND e_{j,v})  AND  AND_c ExactlyOne(x_{c,1..k_c})

* ``x_{c,v}``: outcome ``v`` of choice ``c`` (an annotated disjunction or neural predicate;
  a probabilistic fact is a single variable ``x_c``). Weights: positive literal ``p_{c,v}``,
  negative literal **1** (not ``1 - p``: with the exactly-one constraint every model has one
  outcome true, so the weighted model count is the annotated-disjunction probability);
  for a fact ``p`` and ``1 - p``.
* ``e_{j,v}``: *evidence indicator* of label ``j`` having value ``v``. Weights
  ``w(e) = [v = y_j]`` and ``w(¬e) = 1 - [v = y_j]`` select one label value per example, so a
  batch with different labels runs through one circuit: ``WMC(F) = P(AND_j q_{j,y_j})``.
  Turning all indicators of a label on (``w(e)=1, w(¬e)=0``) marginalises that label out;
  a label that is not a total function gets one more indicator ``e_{j,none}`` for the worlds
  where none of its values is provable (``OR_v (q_{j,v} AND e_{j,v}) OR (AND_v ¬q_{j,v} AND
  e_{j,none})``), so marginalising stays exact.

Variable order (the vtree's leaves, left to right): a depth-first walk of the label formulas
in label order, each choice's outcome variables together where the walk first meets it, each
label's indicators right after its formula. For a carry program this interleaves digit
positions (a_0, b_0, e_0, a_1, b_1, e_1, ...), keeping the interface between positions small.
The default vtree, ``"blocks"``, is balanced inside each label's block of variables and
right-linear across blocks (``"blocks-left"``: left-linear). Measured on the MNIST-Addition
carry program (SDD size / compile seconds): N=4 blocks 4,037 / 3.1, balanced 4,237 / 4.6,
right-linear 2,634 / 15.5; N=7 blocks 7,133 / 5.8, balanced 27,089 / 105, right-linear
4,668 / 63 — balanced and right-linear blow up in intermediate size, the block vtree stays
linear in N. ``"balanced"``, ``"right"``, ``"left"`` and ``"vertical"`` (over the same order)
are available.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ...errors import NesyError
from ..program.program import GroundProgram

VTREES = ("blocks", "blocks-left", "balanced", "right", "left", "vertical")


@dataclass
class VarMap:
    """SDD variable numbering (1-based) of every choice outcome and label indicator.

    ``choice_vars[c][v]`` is the variable of outcome ``v`` of choice ``c`` (for a fact:
    ``[x, -x]``, the negative meaning "the fact is false"); ``label_vars[j][v]`` the indicator of
    label ``j`` taking its ``v``-th value (last: no value); ``order`` the vtree's leaf order."""

    var_count: int
    choice_vars: list[list[int]]
    label_vars: list[list[int]]
    order: list[int] = field(default_factory=list)


@dataclass
class Compiled:
    """An SDD and its variable map, plus compile statistics."""

    manager: object
    sdd: object
    varmap: VarMap
    vtree: str
    seconds: float
    size: int
    peak_live: int
    collections: int = 0      # garbage collections the fast strategy ran
    strategy: str = "apply"   # "apply" (bottom-up, no vtree search) or "minimise"


def variable_order(gp: GroundProgram, blocks: list | None = None
                   ) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """Assign SDD variables (see module docstring) and return (choice_vars, label_vars, order);
    ``blocks`` (if given) receives the variables first met by each label, in label order."""
    blocks = [] if blocks is None else blocks
    n_choice = len(gp.choices)
    choice_vars: list[list[int] | None] = [None] * n_choice
    label_vars: list[list[int]] = []
    order: list[int] = []
    nxt = [1]

    def new_var() -> int:
        v = nxt[0]
        nxt[0] += 1
        order.append(v)
        return v

    def place_choice(ci: int) -> None:
        if choice_vars[ci] is not None:
            return
        ch = gp.choices[ci]
        if ch.fact:
            x = new_var()
            choice_vars[ci] = [x, -x]
        else:
            choice_vars[ci] = [new_var() for _ in ch.values]

    seen = set()
    blocks.clear()
    first = positional_order(gp)
    for lab in gp.labels:
        start = len(order)
        for ci in first if lab is gp.labels[0] else ():
            place_choice(ci)
        stack = [abs(n) for n in lab.nodes if n]
        # iterative DFS, children in order
        while stack:
            n = stack.pop()
            if n in seen or n == 0:
                continue
            seen.add(n)
            node = gp.nodes[n]
            if node[0] == "lit":
                place_choice(node[1])
            else:
                stack.extend(abs(k) for k in reversed(node[1]) if k)
        mid = len(order)
        label_vars.append([new_var() for _ in range(len(lab.values) + 1)])   # + "no value"
        blocks.append((order[start:mid], order[mid:]))
    start = len(order)
    for ci in range(n_choice):
        place_choice(ci)
    if len(order) > start:
        blocks.append(order[start:])
    return choice_vars, label_vars, order  # type: ignore[return-value]


def positional_order(gp: GroundProgram) -> list[int]:
    """Neural choices ordered by where their input sits in the query shape's lists, when the
    shape has two or more lists of inputs and every neural choice reads one input from them:
    the same position of each list side by side (``a_0, b_0, a_1, b_1, ...`` for
    ``add([a_0, a_1, ...], [b_0, b_1, ...], Z)``). An arithmetic label over numbers read
    digit by digit then has a small interface between a prefix of positions and the rest (a
    carry), as the carry encoding has by construction; the depth-first order puts all of one
    number first, and a prefix then fixes a whole operand. Empty otherwise."""
    from problog.logic import Term, term2list
    from problog.program import PrologString
    where: dict[str, tuple[int, int]] = {}
    lists = 0
    for lab in gp.labels:
        q = lab.term
        if q is None:
            try:
                (q,) = list(PrologString(lab.query.strip().rstrip(".") + "."))
            except Exception:   # noqa: BLE001 - any shape we cannot read: no reordering
                return []
        for arg in getattr(q, "args", ()):
            if not (isinstance(arg, Term) and arg.functor == "." and arg.arity == 2):
                continue
            try:
                items = term2list(arg, deep=False)
            except Exception:   # noqa: BLE001 - a partial list
                continue
            lists += 1
            for i, x in enumerate(items):
                where.setdefault(str(x), (i, lists))
    neural = [i for i, c in enumerate(gp.choices) if c.neural]
    if lists < 2 or not neural or any(len(gp.choices[i].inputs) != 1 or
                                      gp.choices[i].inputs[0] not in where for i in neural):
        return []
    return sorted(neural, key=lambda i: where[gp.choices[i].inputs[0]])


def _balanced(vars_, out, nid):
    """Append a balanced vtree over ``vars_`` to ``out`` (lines); return its root id."""
    if len(vars_) == 1:
        out.append(f"L {nid[0]} {vars_[0]}")
        nid[0] += 1
        return nid[0] - 1
    mid = len(vars_) // 2
    left = _balanced(vars_[:mid], out, nid)
    right = _balanced(vars_[mid:], out, nid)
    out.append(f"I {nid[0]} {left} {right}")
    nid[0] += 1
    return nid[0] - 1


def _flat(block) -> list[int]:
    return [*block[0], *block[1]] if isinstance(block, tuple) else list(block)


def _block(block, out, nid):
    """The vtree of one block: balanced over its variables, or, for a label's block
    ``(choice variables, indicator variables)``, the two balanced halves side by side. With
    the choices left of the indicators, a label's SDD decomposes as ``OR_v (q_v AND e_v)``:
    primes over the choices, each value's indicator as its sub, and no prime mixes the two
    (DeepProbLog's Forth addition, 200 label values: 4,942 nodes in 0.32 s with the
    variables mixed, 2,331 nodes in 0.09 s with them apart; the carry program at N = 15: 15,389
    nodes in 0.67 s, then 13,714 in 0.54 s)."""
    if not isinstance(block, tuple):
        return _balanced(list(block), out, nid)
    choices, indicators = block
    if not choices or not indicators:
        return _balanced([*choices, *indicators], out, nid)
    left = _balanced(list(choices), out, nid)
    right = _balanced(list(indicators), out, nid)
    out.append(f"I {nid[0]} {left} {right}")
    nid[0] += 1
    return nid[0] - 1


def block_vtree(blocks: list, *, left: bool = False):
    """A vtree that is balanced inside each block and linear across blocks: right-linear
    ``(B_0, (B_1, (B_2, ...)))`` by default, left-linear ``(((B_0, B_1), B_2), ...)`` with
    ``left=True``. For label blocks of a carry program the interface between a prefix of
    positions and the rest is the carry, so this is an OBDD over blocks of bounded width."""
    from pysdd.sdd import Vtree
    lines: list[str] = []
    nid = [0]
    roots = [_block(b, lines, nid) for b in blocks if _flat(b)]
    if left:
        acc = roots[0]
        for r in roots[1:]:
            lines.append(f"I {nid[0]} {acc} {r}")
            acc = nid[0]
            nid[0] += 1
    else:
        acc = roots[-1]
        for r in reversed(roots[:-1]):
            lines.append(f"I {nid[0]} {r} {acc}")
            acc = nid[0]
            nid[0] += 1
    import os
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".vtree", delete=False) as fh:
        fh.write(f"vtree {nid[0]}\n" + "\n".join(lines) + "\n")
        name = fh.name
    try:
        return Vtree.from_file(name.encode())
    finally:
        os.unlink(name)


#: most terms the DNF route (:func:`label_dnfs`) expands a label's values into
DNF_LIMIT = 4_000_000


def label_dnfs(gp: GroundProgram, limit: int = DNF_LIMIT, position: dict | None = None,
               ) -> tuple[dict, int] | None:
    """The DNF of every label value node of ``gp``, as ``({node: [term, ...]}, M)``: a term is
    a sorted tuple of literal codes ``position[choice] * M + value`` (``position``: the
    choices' order, default their index), inconsistent terms (two values of one choice) left
    out. ``None`` when a value node is not a negation-free AND/OR of choice literals, or when
    the terms would pass ``limit``.

    Ground programs of arithmetic over categorical results (the textbook sum of two N-digit
    numbers: one conjunction per pair of operand values, 10^(2N) in all) are such DNFs; they
    are compiled as decision diagrams over the choices in vtree order, whose sub-diagrams are
    shared (the rest of a sum depends on the digits so far only through their sum), instead of
    one SDD operation per conjunction."""
    roots = [abs(n) for lab in gp.labels for n in lab.nodes if n]
    if any(n is not None and n < 0 for lab in gp.labels for n in lab.nodes):
        return None
    m = max((len(c.values) for c in gp.choices), default=1) + 1
    position = position or {ci: ci for ci in range(len(gp.choices))}
    memo: dict[int, list] = {0: [()]}
    codes: dict[int, int] = {}                  # one int object per literal code
    total = 0
    for root in roots:
        stack = [(root, False)]
        while stack:
            n, done = stack.pop()
            if n in memo:
                continue
            node = gp.nodes[n]
            if node[0] == "lit":
                code = position[node[1]] * m + node[2]
                memo[n] = [(codes.setdefault(code, code),)]
                continue
            kids = node[1]
            if any(k is not None and k < 0 for k in kids):
                return None
            if not done:
                stack.append((n, True))
                stack.extend((k, False) for k in kids if k and k not in memo)
                continue
            if node[0] == "or":
                out = [t for k in kids if k is not None for t in memo[k]]
            else:
                out = [()]
                for k in kids:
                    if k is None:
                        out = []
                        break
                    kid = memo[k]
                    if len(out) * len(kid) > limit:
                        return None
                    out = [t for a in out for b in kid if (t := _merge(a, b, m)) is not None]
            total += len(out)
            if total > limit:
                return None
            memo[n] = out
    return {n: memo[n] for n in roots}, m


def _merge(a: tuple, b: tuple, m: int) -> tuple | None:
    """The conjunction of two terms (sorted literal codes), ``None`` if inconsistent."""
    if not a:
        return b
    if not b:
        return a
    t = tuple(sorted(set(a + b)))
    for x, y in zip(t, t[1:]):
        if x // m == y // m:                   # two values of one choice
            return None
    return t


def compile_program(gp: GroundProgram, *, vtree: str = "blocks", budget=None,
                    clock=None, progress: bool = False, strategy: str = "auto") -> Compiled:
    """Compile ``gp`` into an SDD with PySDD: first bottom-up ``apply`` with minimisation off
    (fast on vtrees that fit); when the live size passes :data:`FAST_LIMIT`, again with the SDD
    library's dynamic vtree minimisation (as ProbLog compiles). The choice depends on sizes
    only, never on time, so the same program always gets the same strategy.
    ``strategy="minimise"`` skips the first (a smaller circuit, built more slowly).

    Evidence (``gp.evidence``) is conjoined into the function, so ``WMC(F)`` with every label
    indicator on is ``P(e)`` and with one value per label ``P(q ∧ e)``. ``budget``/``clock``
    (:mod:`nesybench.nesy.program.budget`) bound the live SDD size and the time; ``progress`` shows a
    bar over the ground nodes and label values when compiling takes more than a second."""
    from tqdm import tqdm

    from ..program.budget import Budget
    if strategy not in ("auto", "minimise"):
        raise NesyError(f"strategy must be auto or minimise, not {strategy!r}")
    clock = clock or (budget or Budget()).start()
    # one step per ground node built and per label value conditioned; shown only when the
    # compilation lasts more than a second
    n_steps = len(gp.nodes) - 1 + sum(len(lab.nodes) for lab in gp.labels)
    with clock.watch("compilation"), tqdm(total=n_steps, unit="step", leave=False, delay=1.0,
                                          disable=not progress) as bar:
        if strategy == "minimise":
            return _compile_sdd(gp, vtree, clock, bar, minimize=True)
        try:
            return _compile_sdd(gp, vtree, clock, bar, fast_limit=FAST_LIMIT)
        except _Restart:
            return _compile_sdd(gp, vtree, clock, bar, minimize=True)


#: live SDD size past which the fast strategy gives way to dynamic minimisation. Our own
#: encodings stay far below it (MNIST-Addition with carries, N = 15: 340,128 at the peak), and
#: so do wide labels written for ProbLog once values are one-hot leaves and the per-value
#: terms are joined as a balanced tree (the textbook sum of two 2-digit numbers, 199 values,
#: compiles 15× faster than with minimisation from the start:
#: ``benchmarks/nesy_programs.py --strategies auto,minimise``)
FAST_LIMIT = 2_000_000


class _Restart(Exception):
    """The fast strategy grew past its live-size limit: compile again with minimisation."""


#: AND/OR nodes with more kids than this are joined as a balanced tree by the fast strategy
WIDE = 8

#: the fast strategy (which never minimises) collects garbage when the dead SDD nodes are
#: more than GC_DEAD_NODES and more than GC_DEAD_RATIO times the live ones
GC_DEAD_NODES = 50_000
GC_DEAD_RATIO = 4


def _compile_sdd(gp: GroundProgram, vtree: str, clock, bar, minimize: bool = False,
                 fast_limit: int | None = None) -> Compiled:
    """One compilation. ``minimize=False``: bottom-up ``apply`` with garbage collection and
    vtree search off (fastest when the vtree fits the program, as for our own encodings);
    ``minimize=True``: the SDD library's automatic garbage collection and dynamic vtree
    minimisation, as ProbLog compiles (every SDD kept across operations is referenced).
    ``fast_limit``: raise :class:`_Restart` when the live size passes it. ``bar``: a tqdm bar
    over :func:`compile_program`'s steps, restarted here."""
    from pysdd.sdd import SddManager, Vtree

    ops = [0]
    collections = [0]

    def tick() -> None:
        ops[0] += 1
        if ops[0] & 255 == 0:
            if not minimize and mgr.dead_count() > max(GC_DEAD_NODES,
                                                        GC_DEAD_RATIO * mgr.live_count()):
                # PySDD references every node a Python object holds, so what the build
                # still uses is live; without this, dead intermediate results (99 % of the
                # nodes on MNIST-Addition N = 15) stay allocated to the end
                mgr.garbage_collect()
                collections[0] += 1
            live = mgr.live_size()
            if fast_limit is not None and live > fast_limit:
                raise _Restart
            clock.check_circuit(live)
            clock.check_time("compilation", f"{mgr.live_size():,} live SDD nodes")

    if vtree not in VTREES:
        raise NesyError(f"vtree must be one of {', '.join(VTREES)}, not {vtree!r}")
    t0 = time.perf_counter()
    blocks: list[list[int]] = []
    choice_vars, label_vars, order = variable_order(gp, blocks)
    n_vars = len(order)
    if vtree.startswith("blocks"):
        vt = block_vtree(blocks, left=vtree == "blocks-left")
    else:
        vt = Vtree(var_count=n_vars, var_order=order, vtree_type=vtree)
    mgr = SddManager.from_vtree(vt)
    if minimize:
        mgr.auto_gc_and_minimize_on()
    else:
        mgr.auto_gc_and_minimize_off()
    true, false = mgr.true(), mgr.false()

    def keep(node):
        """Reference ``node`` (needed only when garbage collection is on)."""
        if minimize:
            node.ref()
        return node

    def drop(node) -> None:
        if minimize:
            node.deref()

    one_hot: dict[tuple[int, int], object] = {}

    def lit(ci: int, vi: int):
        """Value ``vi`` of choice ``ci``: for a choice of several values, the whole one-hot
        assignment (x_v and no other x_w). Equivalent to x_v under the exactly-one
        constraints every query is conjoined with, and it keeps the disjunctions that
        ground programs build over a choice's values small before those constraints apply
        (DeepProbLog's all-digit addition: an SDD of 42,229 without it, 249 with it)."""
        x = choice_vars[ci][vi]
        if gp.choices[ci].fact or len(choice_vars[ci]) < 3:
            return mgr.literal(x)
        key = (ci, vi)
        if key not in one_hot:
            term = mgr.literal(x)
            for w in choice_vars[ci]:
                if w != x:
                    term = mgr.conjoin(term, mgr.literal(-w))
            one_hot[key] = keep(term)
        return one_hot[key]

    cache: dict[int, object] = {0: true}
    peak = [0]

    def dnf_route() -> None:
        """Build the label value nodes that are DNFs as decision diagrams over the choices
        in vtree order (see :func:`label_dnfs`), into ``cache``."""
        where = {v: i for i, v in enumerate(order)}
        rank = {ci: min(where[abs(x)] for x in xs) for ci, xs in enumerate(choice_vars)}
        by_rank = sorted(rank, key=rank.get)
        found = label_dnfs(gp, position={ci: i for i, ci in enumerate(by_rank)})
        if not found:
            return
        dnfs, m = found
        memo: dict = {(): false}

        def diagram(terms: tuple):
            """SDD of the disjunction of ``terms`` (sorted tuples of literal codes)."""
            hit = memo.get(terms)
            if hit is not None:
                return hit
            if terms[0] == ():
                memo[terms] = true
                return true
            first = terms[0][0] // m         # sorted: the first choice in vtree order
            groups: dict = {}
            free = []
            for t in terms:
                if t[0] // m == first:
                    groups.setdefault(t[0] % m, []).append(t[1:])
                else:
                    free.append(t)
            ci = by_rank[first]
            acc = diagram(tuple(free)) if free else false
            for v, rest in groups.items():
                sub = diagram(tuple(sorted(set(rest))))
                acc = mgr.disjoin(acc, mgr.conjoin(lit(ci, v), sub))
                tick()
            memo[terms] = keep(acc)
            return acc

        for n in list(dnfs):
            terms = dnfs.pop(n)
            if n not in cache:
                key = tuple(sorted(set(terms)))
                cache[n] = keep(diagram(key)) if key else false
                bar.update()

    bar.reset()
    bar.set_description("compiling" + (" (minimising)" if minimize else ""))
    if not minimize:
        dnf_route()

    def build(root: int):
        """SDD of node ``root`` (iterative post-order, memoised)."""
        stack = [(root, False)]
        while stack:
            n, done = stack.pop()
            if n in cache:
                continue
            node = gp.nodes[n]
            if node[0] == "lit":
                cache[n] = lit(node[1], node[2])
                bar.update()
                continue
            kids = node[1]
            if not done:
                stack.append((n, True))
                stack.extend((abs(k), False) for k in kids if k and abs(k) not in cache)
                continue
            is_and = node[0] == "and"
            parts = []
            for k in kids:
                if k is None:
                    s = false
                elif k == 0:
                    s = true
                else:
                    s = cache[abs(k)]
                    if k < 0:
                        s = mgr.negate(s)
                parts.append(s)
            op = mgr.conjoin if is_and else mgr.disjoin
            if minimize or len(parts) <= WIDE:
                acc = true if is_and else false
                for s in parts:
                    acc = op(acc, s)
                    tick()
            else:
                # a wide node as a balanced tree: a chain costs one operation on the
                # growing result per kid (the textbook sum's values have up to 1,000)
                while len(parts) > 1:
                    nxt = [op(a, b) for a, b in zip(parts[::2], parts[1::2])]
                    if len(parts) % 2:
                        nxt.append(parts[-1])
                    for _ in range(len(parts) // 2):
                        tick()
                    parts = nxt
                acc = parts[0] if parts else (true if is_and else false)
            cache[n] = keep(acc)
            bar.update()
        return cache[root]

    def signed(k):
        if k is None:
            return false
        if k == 0:
            return true
        s = build(abs(k))
        return mgr.negate(s) if k < 0 else s

    f = keep(true)
    for ci, ch in enumerate(gp.choices):
        if ch.fact:
            continue
        xs = [mgr.literal(x) for x in choice_vars[ci]]
        eo = false
        for i, xi in enumerate(xs):
            term = xi
            for j, xj in enumerate(xs):
                if j != i:
                    term = mgr.conjoin(term, mgr.negate(xj))
            eo = mgr.disjoin(eo, term)
        f, old = keep(mgr.conjoin(f, eo)), f
        drop(old)
    for atom, node, observed in gp.evidence:
        ev = keep(signed(node if observed else -node))
        f, old = keep(mgr.conjoin(f, ev)), f
        drop(old)
        drop(ev)
        if f.is_false():
            raise NesyError(f"the evidence has probability 0 (inconsistent from {atom} = "
                            f"{str(observed).lower()} on)", file=gp.source, field="evidence")
    def disjoin_all(terms: list):
        """The disjunction of ``terms`` (each referenced; released here) as a balanced tree:
        a chain ``((t1 ∨ t2) ∨ t3) ∨ ...`` costs one operation on the growing result per
        term, the tree log2(n) rounds of operations on halves."""
        if not terms:
            return keep(false)
        while len(terms) > 1:
            nxt = []
            for a, b in zip(terms[::2], terms[1::2]):
                nxt.append(keep(mgr.disjoin(a, b)))
                drop(a)
                drop(b)
                tick()
            if len(terms) % 2:
                nxt.append(terms[-1])
            terms = nxt
        return terms[0]

    def label_terms(j: int, lab):
        """``(lj, anyq)``: the label's valued terms ∨_v (f ∧ q_v ∧ e_v) and ∨_v (f ∧ q_v)."""
        def value(v, k):
            # condition on the constraints so far first: the unconstrained q_{j,v} over
            # Boolean outcome variables can be far larger than under exactly-one
            sk = keep(signed(k))
            q = keep(mgr.conjoin(f, sk))
            drop(sk)
            tick()
            bar.update()
            return q, keep(mgr.conjoin(q, mgr.literal(label_vars[j][v])))

        if not minimize:
            qs, valued = zip(*(value(v, k) for v, k in enumerate(lab.nodes))) \
                if lab.nodes else ((), ())
            return disjoin_all(list(valued)), disjoin_all(list(qs))
        # with minimisation each value joins the running result at once: holding every
        # value's terms until a tree joins them makes the vtree searches work over all of
        # them (slower on the textbook two-digit addition)
        lj, anyq = keep(false), keep(false)
        for v, k in enumerate(lab.nodes):
            q, qe = value(v, k)
            anyq, old = keep(mgr.disjoin(anyq, q)), anyq
            drop(old)
            lj, old = keep(mgr.disjoin(lj, qe)), lj
            drop(old)
            drop(q)
            drop(qe)
        return lj, anyq

    for j, lab in enumerate(gp.labels):
        lj, anyq = label_terms(j, lab)
        # worlds where the label has no value: indicator e_{j,none}, so that switching all
        # indicators of a label on marginalises it out even when it is not a total function
        rest = keep(mgr.conjoin(f, mgr.negate(anyq)))
        drop(anyq)
        if not rest.is_false():
            lj, old = keep(mgr.disjoin(lj, mgr.conjoin(rest, mgr.literal(label_vars[j][-1])))), lj
            drop(old)
        drop(rest)
        drop(f)
        f = lj
        peak[0] = max(peak[0], mgr.live_size())
        clock.check_circuit(peak[0])
    bar.update(bar.total - bar.n)         # ground nodes no label or evidence reads
    if f.is_false():
        raise NesyError("the program is inconsistent: no world satisfies it", file=gp.source)
    seconds = time.perf_counter() - t0
    vm = VarMap(var_count=n_vars, choice_vars=choice_vars, label_vars=label_vars, order=order)
    return Compiled(manager=mgr, sdd=f, varmap=vm, vtree=vtree, seconds=seconds,
                    size=f.size(), peak_live=max(peak[0], mgr.live_size()),
                    collections=collections[0], strategy="minimise" if minimize else "apply")
