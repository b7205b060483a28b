"""ProbLog's ground formula as a DAG, without the cost of cycle breaking when there is no cycle.

ProbLog turns a ground :class:`~problog.formula.LogicFormula` into a
:class:`~problog.formula.LogicDAG` by breaking cycles (``problog.cycles.break_cycles``). To
know when a translated node may be reused, that transformation keeps, for every node, the set
of compound nodes below it: memory and time quadratic in the formula's size. On the
multi-digit MNIST-Addition program (N = 15, 7,890 ground nodes) those sets are most of the
grounding's peak memory.

A formula whose reachable part has no cycle needs none of it: every translated node can be
reused, so the DAG is a memoised copy of the reachable nodes, made in the same order as
ProbLog's own transformation and therefore node for node the same DAG. :func:`to_dag` checks
for a cycle first (one depth-first pass) and hands cyclic formulas to ProbLog.
"""
from __future__ import annotations

from problog.formula import LogicDAG, LogicFormula


class _DAG(LogicDAG):
    """A :class:`LogicDAG` that keeps an atom's own name when a query label is added for it.
    ProbLog renames a fact's atom after a query proved by that fact alone; the query here is
    nesybench's internal label atom, and the fact (a learnable ``t(P)`` one, say) must keep the
    name users know it by."""

    def add_name(self, name, key, label=None, keep_name=False):
        keep_name = keep_name or getattr(name, "functor", None) == "nesy__label"
        return super().add_name(name, key, label=label, keep_name=keep_name)


def _roots(source: LogicFormula) -> list[int]:
    return ([abs(n) for _, n, _ in source.labeled() if source.is_probabilistic(n)]
            + [abs(n) for _, n, _ in source.evidence_all() if source.is_probabilistic(n)])


def has_cycle(source: LogicFormula) -> bool:
    """Whether a cycle is reachable from the formula's queries and evidence (iterative
    depth-first search; negative children are followed as their nodes)."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour: dict[int, int] = {}
    for root in _roots(source):
        if colour.get(root, WHITE) != WHITE:
            continue
        colour[root] = GREY
        stack = [(root, iter(_children(source, root)))]
        while stack:
            nid, it = stack[-1]
            for child in it:
                c = colour.get(child, WHITE)
                if c == GREY:
                    return True
                if c == WHITE:
                    colour[child] = GREY
                    stack.append((child, iter(_children(source, child))))
                    break
            else:
                colour[nid] = BLACK
                stack.pop()
    return False


def _children(source: LogicFormula, nid: int) -> list[int]:
    node = source.get_node(nid)
    if type(node).__name__ == "atom":
        return []
    return [abs(c) for c in node.children if c is not None and c != 0]


def _copy(source: LogicFormula, target: LogicDAG, root: int, memo: dict,
          is_evidence: bool):
    """The target node of ``root`` (negated for a negative ``root``), copying what it needs
    depth first, children in order: the order of ``problog.cycles._break_cycles``."""
    stack = [(abs(root), False)]
    while stack:
        nid, expanded = stack.pop()
        if nid in memo and not expanded:
            continue
        if nid == 0:                        # a child that evidence has made true
            memo[0] = target.TRUE
            continue
        if not is_evidence:
            ev = source.get_evidence_value(nid)
            if not source.is_probabilistic(ev):      # fixed by evidence: a constant
                memo[nid] = ev
                continue
        node = source.get_node(nid)
        if type(node).__name__ == "atom":
            memo[nid] = target.add_atom(node.identifier, node.probability, group=node.group,
                                        name=node.name, is_extra=node.is_extra)
            continue
        if not expanded:
            stack.append((nid, True))
            stack.extend((abs(c), False) for c in reversed(node.children)
                         if abs(c) not in memo)
            continue
        children = [memo[c] if c >= 0 else target.negate(memo[-c]) for c in node.children]
        if type(node).__name__ == "conj":
            memo[nid] = target.add_and(children, name=node.name)
        else:
            memo[nid] = target.add_or(children, name=node.name)
    out = memo[abs(root)]
    return target.negate(out) if root < 0 else out


def to_dag(source: LogicFormula) -> LogicDAG:
    """``LogicDAG.create_from(source)``, made as a memoised copy when no cycle is reachable."""
    if has_cycle(source):
        from problog.cycles import break_cycles
        return break_cycles(source, _DAG())
    target = _DAG()
    memo: dict = {}
    for q, n, label in source.labeled():
        new = _copy(source, target, n, memo, False) if source.is_probabilistic(n) else n
        target.add_name(q, new, label)
    memo = {}                                  # evidence: a fresh translation, as ProbLog's
    for q, n, v in source.evidence_all():
        if source.is_probabilistic(n):
            new = _copy(source, target, abs(n), memo, True)
        else:
            new = n
        if n is not None and n < 0:
            new = target.negate(new)
        if v > 0:
            target.add_name(q, new, target.LABEL_EVIDENCE_POS)
        elif v < 0:
            target.add_name(q, new, target.LABEL_EVIDENCE_NEG)
        else:
            target.add_name(q, new, target.LABEL_EVIDENCE_MAYBE)
    return target
