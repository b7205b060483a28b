"""Reference evaluators used as test oracles for the compiled circuits (slow, exact, float64).

* :func:`sdd_wmc` — our own weighted model count of the compiled SDD file: a memoised walk over
  PySDD's nodes with explicit smoothing (a variable of a vtree node that a sub-SDD does not
  mention contributes ``w(x) + w(¬x)``), independent of KLay.
* :func:`enumerate_worlds` — brute force over the ground program: every joint outcome of the
  choices, each DAG node evaluated as a Boolean, the label values read off; gives the exact
  ``P(labels)`` and marginals, independent of the SDD compiler.
* :func:`problog_probability` — ProbLog itself (its own grounding and knowledge compilation) on
  the program with each neural predicate replaced by a numeric annotated disjunction.
"""
from __future__ import annotations

import itertools
import math
from pathlib import Path

from ..program.program import GroundProgram, NN_FUNCTOR, parse, read_program


def sdd_wmc(sdd_path, vtree_path, pos: dict[int, float], neg: dict[int, float]) -> float:
    """Weighted model count of the SDD in ``sdd_path`` (variables 1..n, weights by variable)."""
    from pysdd.sdd import SddManager, Vtree

    vt = Vtree.from_file(str(vtree_path).encode())
    mgr = SddManager.from_vtree(vt)
    root = mgr.read_sdd_file(str(sdd_path).encode())
    var_sets: dict[int, frozenset] = {}

    def vars_of(v) -> frozenset:
        key = v.position()
        if key not in var_sets:
            var_sets[key] = frozenset([v.var()]) if v.is_leaf() else \
                vars_of(v.left()) | vars_of(v.right())
        return var_sets[key]

    def gap(missing) -> float:
        out = 1.0
        for x in missing:
            out *= pos[x] + neg[x]
        return out

    memo: dict[int, tuple[float, frozenset]] = {}

    def ev(node) -> tuple[float, frozenset]:
        if node.id in memo:
            return memo[node.id]
        if node.is_true():
            r = (1.0, frozenset())
        elif node.is_false():
            r = (0.0, frozenset())
        elif node.is_literal():
            lit = node.literal
            r = (pos[lit] if lit > 0 else neg[-lit], frozenset([abs(lit)]))
        else:
            vt_ = node.vtree()
            lv, rv = vars_of(vt_.left()), vars_of(vt_.right())
            tot = 0.0
            for p, s in node.elements():
                wp, sp = ev(p)
                ws, ss = ev(s)
                tot += wp * gap(lv - sp) * ws * gap(rv - ss)
            r = (tot, lv | rv)
        memo[node.id] = r
        return r

    w, scope = ev(root)
    return w * gap(set(pos) - scope)


def choice_weights(gp_choices, concept_rows) -> list[list[float]]:
    """Outcome probabilities of every choice of a ground program for one example."""
    out, it = [], iter(concept_rows)
    for ch in gp_choices:
        out.append(list(next(it)) if ch.neural else list(ch.probs))
    return out


def enumerate_worlds(gp: GroundProgram, concept_rows) -> dict[tuple, float]:
    """``{label value tuple: probability}`` by enumerating every joint outcome of the choices.

    ``concept_rows``: one probability list per neural choice (in ``gp.concepts`` order).
    A world where a label has no provable value contributes to the key ``None`` at that label
    (several values: the tuple of them)."""
    probs = choice_weights(gp.choices, concept_rows)
    dist: dict[tuple, float] = {}
    for outcome in itertools.product(*[range(len(p)) for p in probs]):
        w = math.prod(probs[c][v] for c, v in enumerate(outcome))
        if w == 0:
            continue
        val: dict[int, bool] = {0: True}

        def truth(k) -> bool:
            if k is None:
                return False
            if k < 0:
                return not truth(-k)
            if k in val:
                return val[k]
            node = gp.nodes[k]
            if node[0] == "lit":
                r = outcome[node[1]] == node[2]
            elif node[0] == "and":
                r = all(truth(x) for x in node[1])
            else:
                r = any(truth(x) for x in node[1])
            val[k] = r
            return r

        key = []
        for lab in gp.labels:
            vs = [v for v, n in zip(lab.values, lab.nodes) if truth(n)]
            key.append(vs[0] if len(vs) == 1 else (None if not vs else tuple(vs)))
        key = tuple(key)
        dist[key] = dist.get(key, 0.0) + w
    return dist


def problog_probability(text_or_path, concepts: list[tuple[str, tuple, list]],
                        evidence: list[str]) -> float:
    """``P(AND evidence)`` computed by ProbLog on the program with its neural predicates
    replaced by numeric annotated disjunctions.

    ``concepts``: ``(net, inputs, probs)`` per neural choice (inputs as placeholder strings);
    ``evidence``: ground atoms (e.g. ``["addition(x1, x2, 7)"]``)."""
    from problog import get_evaluatable
    from problog.logic import AnnotatedDisjunction, Clause, Constant, Term, Var, term2list
    from problog.program import PrologString, SimpleProgram

    text, source = read_program(text_or_path)
    prog = SimpleProgram()
    table = {(net, tuple(ins)): probs for net, ins, probs in concepts}
    for cl in parse(text, source):
        if isinstance(cl, AnnotatedDisjunction) and cl.heads and \
                getattr(cl.heads[0].probability, "functor", None) == "nesy__nn":
            pt = cl.heads[0].probability
            net = str(pt.args[0])
            ins_t = term2list(pt.args[1], deep=False)
            for (n2, ins), probs in table.items():
                if n2 != net or len(ins) != len(ins_t):
                    continue
                subst = {}
                ok = True
                for a, b in zip(ins_t, ins):
                    if isinstance(a, Var):
                        subst[a.name] = Term(b) if not b.lstrip("-").isdigit() else Constant(int(b))
                    elif str(a) != b:
                        ok = False
                if not ok:
                    continue
                from ..program.program import _Subst
                heads = [h.with_probability(None).apply(_Subst(subst)).with_probability(
                    Constant(float(p))) for h, p in zip(cl.heads, probs)]
                prog.add_clause(AnnotatedDisjunction(heads, cl.body.apply(_Subst(subst))))
        else:
            prog.add_clause(cl)
    ev_terms = [list(PrologString(e.rstrip(".") + "."))[0] for e in evidence]
    body = ev_terms[0]
    for t in ev_terms[1:]:
        body = body & t
    prog.add_clause(Clause(Term("nesy__oracle"), body))
    prog.add_clause(Term("query", Term("nesy__oracle")))
    res = get_evaluatable().create_from(prog).evaluate()
    return float(next(iter(res.values())))


def cached_paths(prog) -> tuple[Path, Path]:
    """The SDD and vtree files of a (cached) :class:`CompiledProgram`."""
    p = Path(prog.sdd_path)
    return p, p.with_suffix(".vtree")
