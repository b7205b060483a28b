"""Ground a parsed ProbLog program in SWI-Prolog (``prolog/problog_ground.pl``).

The program's clauses (already parsed and checked by :mod:`nesybench.nesy.program`) are written
as canonical Prolog text, one ``c(Head, Id, Body, Kind)`` term per clause, and handed to the
grounder in one call per query shape; the ground program comes back as lists of integers
(node table, choices, labels, evidence). Prolog holds the clauses as data and resolves every
goal itself against them or against its table of pure builtins, so a program has no path to
any other predicate (see the module documentation of ``problog_ground.pl``).

A construct this grounder does not handle (a cyclic ground program, ``findall/3`` over a
probabilistic goal, ...) raises :class:`Unsupported`, naming it; the caller then grounds with
ProbLog's engine (``--grounder problog``) or reports it.
"""
from __future__ import annotations

import math
import re

from ..errors import NesyError

_SIMPLE_ATOM = re.compile(r"[a-z][A-Za-z0-9_]*\Z")
_SYMBOLS = re.compile(r"[-+*/\\^<>=~:.?@#&$,|;!]+\Z")
_VAR = re.compile(r"[A-Z_][A-Za-z0-9_]*\Z")
_CONTROL_HEADS = {(",", 2), (";", 2), ("\\+", 1)}


class Unsupported(Exception):
    """The program uses a construct the SWI-Prolog grounder does not handle (the message says
    which)."""


class Refused(Exception):
    """The program called ``name/arity`` (the message), which it does not define and the
    builtin table does not have."""


class ProgramFault(NesyError):
    """The program fails while grounding (a refused call, a builtin's error): the grounder has
    no source positions, so the default grounder asks ProbLog's engine for the located
    message."""


def _atom(name: str) -> str:
    """``name`` as a Prolog atom in canonical syntax."""
    if name == "[]" or _SIMPLE_ATOM.match(name):
        return name
    if len(name) >= 2 and name[0] == "'" and name[-1] == "'":
        inner = name[1:-1]
        if not _SYMBOLS.match(inner):
            return name                  # ProbLog keeps a quoted atom's source text
        name = inner                     # ... and an operator's name quoted, unescaped
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _number(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    s = repr(float(v))
    if "e" in s and "." not in s.split("e")[0]:
        m, e = s.split("e")
        s = f"{m}.0e{e}"
    return s


class _Writer:
    """ProbLog terms as canonical Prolog text (every compound as ``f(Args)``, lists as
    ``'[|]'(H, T)``, variables renamed per clause)."""

    def __init__(self):
        self.names: dict[str, str] = {}

    def var(self, name: str) -> str:
        if name == "_":
            return "_"
        out = self.names.get(name)
        if out is None:
            base = name if _VAR.match(name) else "V"
            out = f"V{len(self.names)}_{base.lstrip('_')}"
            self.names[name] = out
        return out

    def term(self, t) -> str:
        from problog.logic import Constant, Term, Var
        if isinstance(t, Var):
            return self.var(t.name)
        if isinstance(t, Constant):
            v = t.value
            if isinstance(v, (int, float)):
                return _number(v)
            return _atom(str(v))
        if isinstance(t, (int, float)):
            return _number(t)
        if not isinstance(t, Term):
            raise Unsupported(f"a term of type {type(t).__name__}")
        functor = t.functor
        if functor == "." and t.arity == 2:
            functor = "[|]"
        elif functor == "not" and t.arity == 1 and type(t).__name__ == "Not":
            functor = "\\+"
        if not t.args:
            return _atom(str(functor))
        return _atom(str(functor)) + "(" + ",".join(self.term(a) for a in t.args) + ")"

    def vars_term(self) -> str:
        named = [v for k, v in self.names.items() if k != "_"]
        return "v(" + ",".join(named) + ")" if named else "v"


def _clause_items(cl):
    """``(head, body, kind, prob)`` for each head of clause ``cl``: kind ``det``, ``fact`` or
    ``ad`` (with the head's index)."""
    from problog.logic import AnnotatedDisjunction, Clause, Or, Term
    from .sandbox import _disjuncts
    if isinstance(cl, AnnotatedDisjunction):
        return [(h, cl.body, ("ad", i), h.probability) for i, h in enumerate(cl.heads)]
    if isinstance(cl, Or):
        heads = list(_disjuncts(cl))
        return [(h, Term("true"), ("ad", i), h.probability) for i, h in enumerate(heads)]
    if isinstance(cl, Clause):
        if cl.head.probability is not None:    # p::h :- b. is an annotated disjunction of one
            return [(cl.head, cl.body, ("ad", 0), cl.head.probability)]
        return [(cl.head, cl.body, ("det",), None)]
    if isinstance(cl, Term):
        if cl.probability is not None:
            return [(cl, Term("true"), ("fact",), cl.probability)]
        return [(cl, Term("true"), ("det",), None)]
    raise Unsupported(f"a clause of type {type(cl).__name__}")


def program_text(clauses, queries, evidence) -> str:
    """The grounder's input: ``c/4`` per clause head, ``q/3`` per query (its free variables in
    order), ``e/3`` per evidence statement (``1`` observed true, ``0`` false)."""
    out = []
    for cid, cl in enumerate(clauses):
        w = _Writer()
        items = _clause_items(cl)
        texts = []
        for head, body, kind, prob in items:
            h = head.with_probability(None) if getattr(head, "probability", None) is not None \
                else head
            if (h.functor, h.arity) in _CONTROL_HEADS:
                break                      # the grounder resolves control constructs itself
            ht, bt = w.term(h), w.term(body)
            if kind[0] == "det":
                kt = "det"
            elif kind[0] == "fact":
                kt = f"fact({w.term(prob)})"
            else:
                kt = f"ad({kind[1]},{w.term(prob)},@VARS@)"
            texts.append(f"c({ht},{cid},{bt},{kt}).")
        vars_ = w.vars_term()
        out.extend(t.replace("@VARS@", vars_) for t in texts)
    for j, (q, qvars) in enumerate(queries):
        w = _Writer()
        out.append(f"q({j},{w.term(q)},[{','.join(w.var(v.name) for v in qvars)}]).")
    for k, (atom, value) in enumerate(evidence):
        w = _Writer()
        out.append(f"e({k},{w.term(atom)},{1 if value else 0}).")
    return "\n".join(out) + "\n"


def split_evidence(clauses) -> tuple[list, list]:
    """The clauses without ``evidence/1,2`` statements, and those as ``(atom, observed)``."""
    from problog.logic import Clause, Not, Term
    rest, found = [], []
    for cl in clauses:
        if isinstance(cl, Term) and not isinstance(cl, Clause) and cl.functor == "evidence" \
                and cl.arity in (1, 2) and cl.probability is None:
            atom = cl.args[0]
            value = True
            if cl.arity == 2:
                value = str(cl.args[1]) == "true"
            if isinstance(atom, Not) or (isinstance(atom, Term) and atom.functor == "\\+"
                                         and atom.arity == 1):
                atom, value = atom.args[0], not value
            found.append((atom, value))
        else:
            rest.append(cl)
    return rest, found


def ground_swi(clauses, queries, evidence, *, clock, source=None):
    """Run the SWI-Prolog grounder on ``clauses`` for ``queries`` (``(atom, free vars)``) and
    ``evidence`` (``(atom, observed)``).

    Returns the grounder's ``[choices, nodes, labels, evidence]`` lists (see ``pg_ground/3``;
    :func:`nesybench.nesy.program.ground` turns them into a ground program). Raises
    :class:`Unsupported`, :class:`Refused` (a call outside the program and the builtins),
    :class:`ProgramFault` (an error of the program) or a budget's error."""
    import time

    from ..logic import prolog
    from .budget import BudgetExceeded
    try:
        text = program_text(clauses, queries, evidence)
    except RecursionError:
        raise Unsupported("a term nested too deeply to write") from None
    budget = clock.budget
    limits = []
    if budget.max_ground_nodes is not None:
        limits.append(f"max_nodes({int(budget.max_ground_nodes)})")
    if budget.max_stack is not None:
        limits.append(f"max_depth({int(budget.max_stack)})")
    if clock.deadline is not None:
        limits.append(f"seconds({max(clock.deadline - time.perf_counter(), 0.001):.3f})")
    if budget.max_memory_mb is not None:
        limits.append(f"stack_bytes({int(budget.max_memory_mb * 2**20)})")
    prolog.use("prolog/problog_ground.pl")
    res = prolog.once(f"problog_ground:pg_ground(Text, [{','.join(limits)}], R)", Text=text)
    r = res["R"] if res else ["error", "the grounder failed"]
    kind = r[0]
    if kind == "unsupported":
        raise Unsupported(str(r[1]))
    if kind == "refused":
        raise Refused(str(r[1]))
    if kind == "budget":
        what = str(r[1])
        if what == "time":
            raise BudgetExceeded(f"grounding stopped at the --timeout of {budget.timeout:g} s")
        if what.startswith("nodes("):
            clock.check_ground(int(budget.max_ground_nodes) + 1)
        if what.startswith("stack("):
            clock.check_stack(int(budget.max_stack) + 1)
        if budget.max_memory_mb is None:      # Prolog's own stack limit, no budget of ours
            raise BudgetExceeded(f"grounding ran out of SWI-Prolog's {what} after "
                                 f"{clock.elapsed():.1f} s")
        raise BudgetExceeded(f"grounding stopped at --max-memory {budget.max_memory_mb:g} MiB "
                             f"({what} after {clock.elapsed():.1f} s)")
    if kind != "ok":
        raise ProgramFault(f"grounding failed: {r[1]}", file=source)
    return r[1:]


def learnable_value(v, source) -> float | None:
    """The initial value of a learnable ``t(P)`` (``None`` for ``t(_)``)."""
    if v == "none" or v is None:
        return None
    return float(v)


def check_probability(p: float, source) -> None:
    if not 0 <= p <= 1:
        raise NesyError(f"probability {p} is outside [0, 1]", file=source)
