"""Marginal probabilities of ground queries, as ProbLog answers ``query/1``.

``nesy infer`` asks for the marginal ``P(q | e)`` of every answer of every query, separately.
The circuit of :mod:`nesybench.nesy.inference.compile` serves training instead: it conjoins every label
of a query shape (with its evidence indicators) into one function, so one pass gives the joint
probability of a whole labelling. That joint is what training needs and what marginals do not:
for ``query(path(n0, X))`` over a graph, the joint of all reachability answers is far larger
than each answer's own circuit, and for ``0.5::p(X) :- between(1, 24, X)`` it grows with
every answer although the answers are independent.

So here, as in ProbLog's own pipeline, every answer is **its own root** in **one** SDD
manager over **one** grounding:

* each choice becomes Boolean SDD variables: a probabilistic fact one variable ``x`` with
  weights ``p`` and ``1 - p``; an annotated disjunction over ``k`` outcomes (its residual
  "none" outcome included) ``k - 1`` variables in a *sequential* encoding: outcome ``i`` is
  ``¬b_0 ∧ … ∧ ¬b_(i-1) ∧ b_i`` (the last one all ``¬b``), with
  ``P(b_i) = p_i / (1 - p_0 - … - p_(i-1))``. Every assignment is one outcome, so no
  exactly-one constraint has to be conjoined and the weighted model count is the product
  of the outcome probabilities;
* each node of the ground DAG is built once, bottom up (``apply``), and shared by every answer;
* ``P(q | e) = WMC(q ∧ e) / WMC(e)`` with ``e`` the conjunction of the evidence literals.

The vtree is balanced over the variables in the order the grounder made the choices, and the
manager runs without dynamic minimisation: ProbLog's own SDD defaults.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ...errors import NesyError


@dataclass
class Answer:
    """One answer of one query: ``query`` as written (``p(X)``), ``atom`` the ground atom as
    ProbLog prints it (``p(1)``), ``value`` the free variables' value (``None`` for a ground
    query; a tuple for several variables), ``p`` its marginal ``P(atom | evidence)``."""

    query: str
    atom: str
    value: object
    p: float

    def to_json(self) -> dict:
        return {"query": self.query, "atom": self.atom,
                "value": list(self.value) if isinstance(self.value, tuple) else self.value,
                "p": self.p}


@dataclass
class Marginals:
    """The answers of a program's queries, the evidence they are conditioned on, and
    statistics (grounder, seconds of grounding and of compilation, SDD size)."""

    answers: list[Answer]
    evidence: list[str]
    stats: dict = field(default_factory=dict)


def encode_choices(choices) -> tuple[int, list[list[list[int]]], list[tuple[int, float]]]:
    """The sequential encoding of ``choices`` (see the module docstring).

    Returns ``(var_count, outcome_literals, weights)``: ``outcome_literals[c][v]`` is the list
    of SDD literals whose conjunction is outcome ``v`` of choice ``c`` (for a fact: value 0 is
    ``[x]``, value 1 ``[-x]``), ``weights`` one ``(variable, P(variable))`` per variable."""
    lits: list[list[list[int]]] = []
    weights: list[tuple[int, float]] = []
    nxt = 1
    for ch in choices:
        if ch.neural:
            raise NesyError(f"{ch.key} is a neural predicate: marginals without networks "
                            "need numeric probabilities (use nesy train)")
        probs = [float(p) for p in ch.probs]
        if ch.fact:
            weights.append((nxt, probs[0]))
            lits.append([[nxt], [-nxt]])
            nxt += 1
            continue
        k = len(probs)
        out, prefix, left = [], [], 1.0
        for i in range(k):
            if i == k - 1:
                out.append(list(prefix))
                break
            b = nxt
            nxt += 1
            weights.append((b, min(max(probs[i] / left, 0.0), 1.0) if left > 1e-300 else 0.0))
            out.append([*prefix, b])
            prefix.append(-b)
            left -= probs[i]
        lits.append(out)
    return nxt - 1, lits, weights


def marginals(text_or_path, queries=None, *, budget=None, clock=None, progress: bool = False
              ) -> Marginals:
    """``P(q | e)`` of every answer of ``queries`` (default: the program's own ``query/1``
    statements) in a ProbLog program without neural predicates, one answer at a time as ProbLog
    reports them: a non-ground query ``p(X)`` gives one :class:`Answer` per ground atom it
    proves possible (none when it has none), a ground query one answer (probability 0 when it
    is not provable).

    ``budget`` (:class:`~nesybench.nesy.program.budget.Budget`) bounds grounding and compilation
    together. Raises :class:`NesyError` (the program's errors, impossible evidence) or
    :class:`~nesybench.errors.BudgetExceeded`."""
    from ..program.budget import Budget
    from ..program.program import ground

    clock = clock or (budget or Budget()).start()
    t0 = time.perf_counter()
    gp = ground(text_or_path, queries, networks=[], clock=clock, empty_ok=True)
    t_ground = time.perf_counter() - t0
    roots: list[tuple[str, str, object, object]] = []   # (query, atom, value, node)
    for lab in gp.labels:
        if lab.values in ([0, 1], [0], [1]) and len(lab.atoms) == 1:
            node = lab.nodes[lab.values.index(1)] if 1 in lab.values else None
            roots.append((lab.query, lab.atoms[0], None, node))
        elif not lab.values:        # no answer: ProbLog reports the query itself, at 0
            roots.append((lab.query, lab.atoms[0] if lab.atoms else lab.query, None, None))
        else:
            roots.extend((lab.query, a, v, n) for v, n, a in zip(lab.values, lab.nodes,
                                                                  lab.atoms))
    t1 = time.perf_counter()
    with clock.watch("compilation"):
        probs, size = _evaluate(gp, [r[3] for r in roots], clock, gp.source)
    answers = [Answer(q, a, v, p) for (q, a, v, _), p in zip(roots, probs)]
    stats = {"grounder": gp.grounder, "ground_seconds": round(t_ground, 4),
             "compile_seconds": round(time.perf_counter() - t1, 4), "sdd_size": size,
             "ground_nodes": len(gp.nodes) - 1}
    if gp.grounder_note:
        stats["grounder_note"] = gp.grounder_note
    return Marginals(answers=answers, evidence=[a for a, _, _ in gp.evidence], stats=stats)


def _evaluate(gp, roots: list, clock, source) -> tuple[list[float], int]:
    """The conditional probability of each root node (DAG node ids as in ``gp.nodes``;
    negative: negated, ``0`` true, ``None`` false) given ``gp.evidence``, and the live SDD
    size at the end."""
    from pysdd.sdd import SddManager, Vtree

    n_vars, outcome, weights = encode_choices(gp.choices)
    if n_vars == 0:                      # a deterministic program: every root is 0 or 1
        return [_constant(gp, r) for r in roots], 0
    # the grounder's order of the choices, as ProbLog numbers its atoms: on reachability it
    # gave SDDs half the size of a depth-first order from the roots (benchmarks/nesy_queries.py)
    order = list(range(1, n_vars + 1))
    mgr = SddManager.from_vtree(Vtree(var_count=n_vars, var_order=order, vtree_type="balanced"))
    mgr.auto_gc_and_minimize_off()
    true, false = mgr.true(), mgr.false()
    memo: dict[int, object] = {}
    steps = [0]

    def literal_sdd(ci: int, vi: int):
        out = true
        for lit in outcome[ci][vi]:
            out = out & mgr.literal(lit)
        return out

    def build(root: int):
        """The SDD of DAG node ``root`` (a positive id), built iteratively bottom up."""
        stack = [root]
        while stack:
            n = stack[-1]
            if n in memo:
                stack.pop()
                continue
            node = gp.nodes[n]
            if node[0] == "lit":
                memo[n] = literal_sdd(node[1], node[2])
                stack.pop()
                continue
            missing = [abs(k) for k in node[1] if k and abs(k) not in memo]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            conj = node[0] == "and"
            acc = true if conj else false
            for k in node[1]:
                kid = false if k is None else true if k == 0 else \
                    memo[k] if k > 0 else ~memo[-k]
                acc = (acc & kid) if conj else (acc | kid)
                steps[0] += 1
                if steps[0] & 255 == 0:
                    clock.check_circuit(mgr.live_size() or mgr.size())
                    clock.check_time("compilation", f"{mgr.size():,} SDD nodes")
                if (conj and acc.is_false()) or (not conj and acc.is_true()):
                    break
            memo[n] = acc
        return memo[root]

    def sdd_of(ref):
        if ref is None:
            return false
        if ref == 0:
            return true
        return build(ref) if ref > 0 else ~build(-ref)

    evidence = true
    for atom, nid, observed in gp.evidence:
        e = sdd_of(nid)
        evidence = evidence & (e if observed else ~e)
    wmc = evidence.wmc(log_mode=False)
    for var, p in weights:
        wmc.set_literal_weight(mgr.literal(var), p)
        wmc.set_literal_weight(mgr.literal(-var), 1.0 - p)
    z = wmc.propagate()
    if not z > 0:
        atoms = ", ".join(a for a, _, _ in gp.evidence)
        raise NesyError(f"evidence {atoms} has probability 0: conditioning on it is undefined",
                        file=source, field="evidence")
    out = []
    for ref in roots:
        f = sdd_of(ref) & evidence
        w = f.wmc(log_mode=False)
        for var, p in weights:
            w.set_literal_weight(mgr.literal(var), p)
            w.set_literal_weight(mgr.literal(-var), 1.0 - p)
        out.append(min(max(w.propagate() / z, 0.0), 1.0))
    return out, mgr.size()


def _constant(gp, ref) -> float:
    """A root of a program without random choices: 1.0 or 0.0 (every node is an AND/OR of
    constants; an extra atom of ProbLog's grounder is an empty OR, false)."""
    if ref is None:
        return 0.0
    if ref == 0:
        return 1.0
    value: dict[int, bool] = {}
    stack = [abs(ref)]
    while stack:
        n = stack[-1]
        kind, kids = gp.nodes[n][0], gp.nodes[n][1]
        if kind == "lit":
            raise NesyError("a program without random choices has a choice literal")
        todo = [abs(k) for k in kids if k and abs(k) not in value]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        vals = [False if k is None else True if k == 0 else
                value[k] if k > 0 else not value[-k] for k in kids]
        value[n] = all(vals) if kind == "and" else any(vals)
    v = value[abs(ref)]
    return float(v if ref > 0 else not v)
