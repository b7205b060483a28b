"""The acyclic DAG copy (:mod:`nesybench.nesy.program.acyclic`) is node for node ProbLog's own
``LogicDAG.create_from``, and cycles are found exactly where a brute-force reachability
closure finds them."""
from __future__ import annotations

import random

import pytest
from problog.formula import LogicDAG, LogicFormula
from problog.program import PrologString

from nesybench.nesy.program.acyclic import has_cycle, to_dag
from nesybench.nesy.learn.mnist_add import addition_program


def _program(rng: random.Random, cyclic: bool) -> str:
    """Facts, a partial annotated disjunction, rules with negation (stratified: negation only
    of lower rules), evidence; with ``cyclic`` a rule may also call a higher rule (and negates
    only facts)."""
    n = rng.randint(3, 7)
    lines = [f"{rng.uniform(0.05, 0.95):.6f}::a{i}." for i in range(3)]
    heads = rng.sample(range(3), 2)
    lines.append("; ".join(f"{rng.uniform(0.05, 0.45):.6f}::b{h}" for h in heads) + ".")
    lines += [f"b{i} :- fail." for i in range(3)]
    base = [f"a{i}" for i in range(3)] + [f"b{i}" for i in range(3)]
    for k in range(n):
        for _ in range(rng.randint(1, 3)):
            body = []
            for _ in range(rng.randint(1, 3)):
                lower = [f"c{j}" for j in range(k)]
                higher = [f"c{j}" for j in range(k, n)] if cyclic else []
                lit = rng.choice(base + lower + higher)
                negatable = base if cyclic else base + lower    # no negative cycle
                if lit in negatable and rng.random() < 0.3:
                    lit = "\\+ " + lit
                body.append(lit)
            lines.append(f"c{k} :- {', '.join(body)}.")
    everything = base + [f"c{k}" for k in range(n)]
    lines += [f"query({q})." for q in rng.sample(everything, 2)]
    lines += [f"evidence({e}, {rng.choice(['true', 'false'])})."
              for e in rng.sample(everything, rng.randint(0, 2))]
    return "\n".join(lines) + "\n"


def _same(a: LogicDAG, b: LogicDAG) -> None:
    assert list(a) == list(b)
    assert sorted(map(str, a.labeled())) == sorted(map(str, b.labeled()))
    assert sorted(map(str, a.evidence_all())) == sorted(map(str, b.evidence_all()))


def _cycle_by_closure(lf: LogicFormula) -> bool:
    """A node reachable from a query or evidence node that reaches itself (closure by
    repeated relaxation: the independent oracle for :func:`has_cycle`)."""
    n = len(lf)
    edges = {i: set() for i in range(1, n + 1)}
    for i in range(1, n + 1):
        node = lf.get_node(i)
        if type(node).__name__ != "atom":
            edges[i] = {abs(c) for c in node.children if c}
    reach = {i: set(edges[i]) for i in edges}
    changed = True
    while changed:
        changed = False
        for i in reach:
            new = set().union(*(reach[j] for j in reach[i])) - reach[i] if reach[i] else set()
            if new:
                reach[i] |= new
                changed = True
    roots = {abs(x) for _, x, _ in lf.labeled() if x} | \
        {abs(x) for _, x, _ in lf.evidence_all() if x}
    seen = set(roots).union(*(reach[r] for r in roots)) if roots else set()
    return any(i in reach[i] for i in seen)


@pytest.mark.parametrize("cyclic", [False, True])
def test_random_formulas_copy_as_problog_breaks_them(cyclic):
    rng = random.Random(7 + cyclic)
    cycles = 0
    for _ in range(150):
        text = _program(rng, cyclic)
        lf = LogicFormula.create_from(PrologString(text))
        found = has_cycle(lf)
        assert found == _cycle_by_closure(lf), text
        cycles += found
        _same(to_dag(lf), LogicDAG.create_from(lf))
    if cyclic:
        assert cycles >= 30          # the cyclic corpus exercises ProbLog's path too
    else:
        assert cycles == 0


@pytest.mark.parametrize("n", [1, 2, 3])
def test_addition_programs_copy_as_problog_breaks_them(n):
    shape = addition_program(n)
    digits = "\n".join("; ".join(f"0.1::digit({x}, {v})" for v in range(10)) + "."
                        for i in range(n) for x in (f"a{i}", f"b{i}"))
    text = shape.text.replace(
        "nn(digit_net, [X], Y, [0,1,2,3,4,5,6,7,8,9]) :: digit(X, Y).", digits)
    text += "".join(f"query({q}).\n" for q in shape.queries)
    lf = LogicFormula.create_from(PrologString(text))
    assert not has_cycle(lf)
    _same(to_dag(lf), LogicDAG.create_from(lf))
