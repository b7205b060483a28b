r"""What a ProbLog program handed to nesybench may do: an allow-list, checked before grounding.

ProbLog is a Prolog engine written in Python, and its builtin table reaches far beyond logic:
``consult/1``, ``use_module/1`` (which imports a Python file), ``'_use_module'/2``,
``subquery/2``, ``writeln/1``, ``cmd_args/1``, ``dbg_printdb/0``... A program from someone else
(a shared task file, a model zoo entry) is therefore code. This module decides, before ProbLog
sees the text, that a program uses only

* the **language**: facts, rules, probabilistic facts and annotated disjunctions (numeric, ``t(_)``
  learnable or ``nn(...)`` neural), ``query/1``, ``evidence/1``, ``evidence/2``;
* the **builtins listed in** :data:`BUILTINS` (unification, comparison, arithmetic, type checks,
  term inspection) and the **meta-calls** of :data:`META` whose goal arguments are themselves
  checked (a goal that is a variable at load time, e.g. built with ``=..`` and passed to
  ``call/1``, is refused because nothing can be known about it);
* the predicates of the libraries in :data:`LIBRARIES`, imported with
  ``:- use_module(library(Name)).`` — the only directive there is;
* **predicates the program defines itself**, with any name and arity, unless the name starts
  with an underscore (ProbLog's internal predicates) or is one of ProbLog's builtins (a
  definition there would not be the one that runs).

A goal that is a variable when the program is loaded (``and([H|T]) :- H, and(T).``, or the
goal of ``\+``, ``once/1``, ``call/1``, ``findall/3``) cannot be checked in advance. It is run
through a **dispatcher** instead: the variable becomes ``nesy__call(G)``, and ``nesy__call/1``
has one clause per allowed predicate (those the program defines, its imported libraries' and
the builtins above, plus ``,``/``;``/``\+``), so whatever ``G`` is bound to at run time either
is one of them or fails. (Unlike Prolog, an unbound ``G`` enumerates them rather than raising
an instantiation error.) A variable goal that would receive extra arguments (``call(G, X)``,
``maplist(G, L)``) is refused.

Anything else is refused with the file, line and column of the goal and its ``name/arity``.
The check walks goals, not data: an atom ``'x.py'`` as an argument is inert unless something
executes it, and nothing on the lists executes data.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import NesyError

#: builtins a goal may call directly: pure logic, no I/O, no database, no engine state
BUILTINS: frozenset[str] = frozenset({
    # control
    "true/0", "fail/0", "false/0",
    # unification and standard order
    "=/2", "\\=/2", "==/2", "\\==/2", "@</2", "@=</2", "@>/2", "@>=/2", "compare/3",
    # arithmetic
    "is/2", "</2", "=</2", ">/2", ">=/2", "=:=/2", "=\\=/2", "between/3", "succ/2", "plus/3",
    # type checks
    "var/1", "nonvar/1", "atom/1", "atomic/1", "compound/1", "callable/1", "float/1",
    "integer/1", "number/1", "is_list/1", "ground/1",
    # term inspection and construction (building a term never runs it)
    "functor/3", "arg/3", "=../2", "atom_number/2", "length/2", "sort/2",
    "subsumes_term/2",
})

#: meta-calls: predicate -> positions (0-based) of goal arguments and how many extra
#: arguments the call appends to that goal
META: dict[str, tuple[tuple[int, int], ...]] = {
    "\\+/1": ((0, 0),), "not/1": ((0, 0),), "once/1": ((0, 0),),
    "findall/3": ((1, 0),), "all/3": ((1, 0),),
    **{f"call/{n}": ((0, n - 1),) for n in range(1, 9)},
    # library(apply)
    **{f"maplist/{n}": ((0, n - 1),) for n in range(2, 6)},
    "include/3": ((0, 1),), "exclude/3": ((0, 1),), "partition/4": ((0, 1),),
    **{f"foldl/{n}": ((0, n - 2),) for n in range(4, 7)},
}

#: libraries a program may import, and the predicates each defines for it
LIBRARIES: dict[str, frozenset[str]] = {
    "lists": frozenset({
        "memberchk/2", "member/2", "append/3", "append/2", "prefix/2", "select/3",
        "selectchk/3", "select/4", "selectchk/4", "nextto/3", "delete/3", "nth0/3", "nth1/3",
        "nth0/4", "nth1/4", "last/2", "proper_length/2", "same_length/2", "reverse/2",
        "permutation/2", "flatten/2", "max_member/2", "min_member/2", "sum_list/2",
        "max_list/2", "min_list/2", "numlist/3", "is_set/1", "list_to_set/2", "intersection/3",
        "union/3", "subset/2", "subtract/3", "select_uniform/4", "select_weighted/5",
        "select_weighted/4",
    }),
    "apply": frozenset({"maplist/2", "maplist/3", "maplist/4", "maplist/5", "include/3",
                        "exclude/3", "partition/4", "foldl/4", "foldl/5", "foldl/6"}),
}

#: facts with a meaning to the engine (they are statements, not calls)
STATEMENTS = frozenset({"query/1", "evidence/1", "evidence/2"})

#: control constructs of clause bodies (walked, not called)
CONTROL = frozenset({",/2", ";/2"})

ARITH_OK = (int, float)

#: what a probability annotation may be built from (besides numbers and variables)
PROBABILITY_FUNCTORS = frozenset({
    "+", "-", "*", "/", "//", "**", "^", "mod", "min", "max", "abs", "exp", "log", "sqrt",
    "sin", "cos", "tan", "atan", "pi", "e", "float", "integer", "t", "nn",
})


@dataclass(frozen=True)
class Where:
    """A position in the program text (1-based line and column)."""

    line: int | None
    column: int | None


def position(text: str, location) -> Where:
    """Line and column of a ProbLog ``location``: its parser and engine errors give
    ``(file, line, column)``, parsed terms ``(file_index, char_offset)``."""
    if isinstance(location, tuple) and len(location) == 3:
        line, col = location[1], location[2]
        return Where(line if isinstance(line, int) else None, col if isinstance(col, int) else None)
    offset = location[1] if isinstance(location, tuple) and len(location) > 1 else location
    if not isinstance(offset, int) or offset < 0:
        return Where(None, None)
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return Where(line, offset - start + 1)


def _name(term) -> str:
    """The functor as written, without the quotes ProbLog keeps on some names."""
    name = str(term.functor)
    if len(name) >= 2 and name[0] == "'" and name[-1] == "'":
        name = name[1:-1]
    return name


def _signature(term) -> str:
    return f"{_name(term)}/{term.arity}"


def _engine_builtins() -> frozenset[str]:
    """Every builtin of ProbLog's engine (names a program may not redefine)."""
    from problog.engine import DefaultEngine
    return frozenset(DefaultEngine().get_builtins())


class ProgramChecker:
    """Check parsed ProbLog clauses against the allow-list (see the module docstring).

    ``check(clauses)`` raises :class:`~nesybench.errors.NesyError` on the first refused goal,
    naming file, line, column and the predicate."""

    def __init__(self, text: str, source: str | None = None):
        self.text = text
        self.source = source
        self.reserved = _engine_builtins() | CONTROL | {"\\+/1", ":-/1", ":-/2", "::/2"}
        self.needs_dispatch = False     # a variable goal was found (see the module docstring)
        self.known: set[str] = set()
        self.defined: set[str] = set()

    # -- errors --------------------------------------------------------------------------
    def _refuse(self, message: str, node, clause) -> NesyError:
        where = position(self.text, getattr(node, "location", None))
        if where.line is None:
            where = position(self.text, getattr(clause, "location", None))
        return NesyError("program refused: " + message, file=self.source, line=where.line,
                         column=where.column)

    # -- the program ---------------------------------------------------------------------
    def check(self, clauses) -> None:
        from problog.logic import AnnotatedDisjunction, Clause, Or, Term

        defined: set[str] = set()
        libraries: set[str] = set()
        bodies = []          # (body, clause) pairs, checked once every head is known
        for cl in clauses:
            if isinstance(cl, Clause) and (cl.head is None or _name(cl.head) == "_directive") \
                    or (isinstance(cl, Term) and cl.functor == ":-" and cl.arity == 1):
                libraries.add(self._directive(cl.body if isinstance(cl, Clause) else
                                              cl.args[0], cl))
                continue
            if isinstance(cl, AnnotatedDisjunction):
                heads, body = cl.heads, cl.body
            elif isinstance(cl, Clause):
                heads, body = [cl.head], cl.body
            elif isinstance(cl, Or):           # an annotated disjunction written as a fact
                heads, body = list(_disjuncts(cl)), None
            else:
                heads, body = [cl], None
            for h in heads:
                self._head(h, cl)
                self._probability(getattr(h, "probability", None), h, cl)
                defined.add(_signature(h))
            if body is not None:
                bodies.append((body, cl))
        known = set(defined)
        for lib in libraries:
            known |= LIBRARIES[lib]
        self.known, self.defined = known, defined
        for body, cl in bodies:
            self._goal(body, cl, known, 0)

    def _directive(self, goal, clause) -> str:
        from problog.logic import Term
        if isinstance(goal, Term) and goal.functor == "use_module" and goal.arity == 1:
            lib = goal.args[0]
            if isinstance(lib, Term) and lib.functor == "library" and lib.arity == 1:
                name = _name(lib.args[0]) if isinstance(lib.args[0], Term) else str(lib.args[0])
                if name in LIBRARIES:
                    return name
                raise self._refuse(f"library {name!r} is not allowed (allowed: "
                                   f"{', '.join(sorted(LIBRARIES))})", goal, clause)
        what = _signature(goal) if isinstance(goal, Term) else str(goal)
        raise self._refuse(f"directive {what} is not allowed: the only directive is "
                           ":- use_module(library(Name)) for " + ", ".join(sorted(LIBRARIES)),
                           goal, clause)

    def _head(self, head, clause) -> None:
        from problog.logic import Term
        if not isinstance(head, Term) or head.is_var():
            raise self._refuse("a clause head must be an atom or compound term", head, clause)
        sig = _signature(head)
        if sig in STATEMENTS:
            return
        if _name(head).startswith("_"):
            raise self._refuse(f"predicate {sig}: names starting with an underscore are "
                               "reserved for the engine", head, clause)
        if sig in self.reserved:
            raise self._refuse(f"{sig} is a builtin and cannot be redefined", head, clause)

    def _probability(self, prob, head, clause) -> None:
        """A probability is arithmetic over numbers and variables, ``t(_)`` or ``nn(...)``."""
        from problog.logic import Constant, Term
        stack = [prob]
        while stack:
            p = stack.pop()
            if p is None or isinstance(p, (Constant, *ARITH_OK)) or \
                    (isinstance(p, Term) and p.is_var()):
                continue
            if isinstance(p, Term) and p.functor == "nn":
                continue          # checked by the neural-predicate parser
            if not isinstance(p, Term) or _name(p) not in PROBABILITY_FUNCTORS:
                raise self._refuse(f"probability {p} of {_signature(head)} is not a number, "
                                   "arithmetic, t(_) or nn(...)", head, clause)
            stack.extend(p.args)

    def _goal(self, goal, clause, known: set[str], depth: int) -> None:
        from problog.logic import And, Not, Or, Term, Var
        if depth > 10_000:
            raise self._refuse("clause body nested too deeply", goal, clause)
        if isinstance(goal, Var) or (isinstance(goal, Term) and goal.is_var()):
            self.needs_dispatch = True      # checked at run time by nesy__call/1
            return
        if not isinstance(goal, Term) or isinstance(goal.functor, ARITH_OK):
            raise self._refuse(f"{goal} is not a goal", goal, clause)
        if isinstance(goal, (And, Or)) or _signature(goal) in CONTROL:
            for part in goal.args:
                self._goal(part, clause, known, depth + 1)
            return
        if isinstance(goal, Not):
            self._goal(goal.child, clause, known, depth + 1)
            return
        sig = _signature(goal)
        if _name(goal).startswith("_"):
            raise self._refuse(f"{sig} is internal to the engine and not allowed", goal, clause)
        if sig in META and sig not in self.defined:
            for pos, extra in META[sig]:
                sub = goal.args[pos]
                if isinstance(sub, Var) or (isinstance(sub, Term) and sub.is_var()):
                    if extra == 0:
                        self.needs_dispatch = True
                        continue
                    raise self._refuse(f"{sig}: its goal is a variable at load time and gets "
                                       f"{extra} more argument(s); it cannot be checked",
                                       goal, clause)
                if not isinstance(sub, Term) or isinstance(sub.functor, ARITH_OK):
                    raise self._refuse(f"{sig}: {sub} is not a goal", goal, clause)
                if extra:
                    sub = sub(*sub.args, *([Var("_")] * extra))
                self._goal(sub, clause, known, depth + 1)
            lib_meta = any(sig in LIBRARIES[lib] for lib in ("apply",))
            if lib_meta and sig not in known:
                raise self._refuse(f"{sig} needs :- use_module(library(apply)).", goal, clause)
            return
        if sig in known and sig not in self.reserved:
            return
        if sig in BUILTINS:
            return
        lib = next((n for n, preds in LIBRARIES.items() if sig in preds), None)
        if lib is not None:
            raise self._refuse(f"{sig} needs :- use_module(library({lib})).", goal, clause)
        if sig in self.reserved:
            raise self._refuse(f"{sig} is not allowed in a program (file, database, output "
                               "and engine builtins are refused; see the allowed list in "
                               "nesybench.nesy.sandbox)", goal, clause)
        raise self._refuse(f"{sig} is not defined in the program and is not an allowed "
                           "builtin", goal, clause)


DISPATCH = "nesy__call"


def _is_var(t) -> bool:
    from problog.logic import Term, Var
    return isinstance(t, Var) or (isinstance(t, Term) and t.is_var())


def guard_body(goal, defined=frozenset()):
    """``goal`` with every variable in a goal position wrapped as ``nesy__call(G)``
    (``defined``: the program's own predicates, which are not meta-calls even when a library
    predicate has their name)."""
    from problog.logic import And, Not, Or, Term
    if _is_var(goal):
        return Term(DISPATCH, goal)
    if isinstance(goal, And):
        return And(guard_body(goal.op1, defined), guard_body(goal.op2, defined))
    if isinstance(goal, Or):
        return Or(guard_body(goal.op1, defined), guard_body(goal.op2, defined))
    if isinstance(goal, Not):
        return Not(goal.functor, guard_body(goal.child, defined))
    if isinstance(goal, Term) and _signature(goal) in META and not (
            defined and _signature(goal) in defined):
        args = list(goal.args)
        changed = False
        for pos, extra in META[_signature(goal)]:
            if extra == 0 and _is_var(args[pos]):
                args[pos] = Term(DISPATCH, args[pos])
                changed = True
            elif extra == 0 and isinstance(args[pos], Term):
                new = guard_body(args[pos], defined)
                changed = changed or new is not args[pos]
                args[pos] = new
        if changed:
            return goal(*args)
    return goal


def dispatcher(known: set[str]) -> list:
    """The clauses of ``nesy__call/1``: one per allowed predicate, and the control constructs."""
    from problog.logic import And, Clause, Not, Term, Var
    clauses = []
    for sig in sorted(known | BUILTINS):
        name, arity = sig.rsplit("/", 1)
        args = [Var(f"A{i}") for i in range(int(arity))]
        goal = Term(name, *args)
        clauses.append(Clause(Term(DISPATCH, goal), goal))
    a, b = Var("A"), Var("B")
    call_a, call_b = Term(DISPATCH, a), Term(DISPATCH, b)
    clauses.append(Clause(Term(DISPATCH, Term(",", a, b)), And(call_a, call_b)))
    clauses.append(Clause(Term(DISPATCH, Term(";", a, b)), call_a))
    clauses.append(Clause(Term(DISPATCH, Term(";", a, b)), call_b))
    clauses.append(Clause(Term(DISPATCH, Term("\\+", a)), Not("\\+", call_a)))
    return clauses


def _disjuncts(term):
    """The heads of an annotated disjunction written as ``p::a; q::b.``"""
    from problog.logic import Or
    stack = [term]
    while stack:
        t = stack.pop()
        if isinstance(t, Or):
            stack.append(t.op2)
            stack.append(t.op1)
        else:
            yield t


def check_program(clauses, text: str, source: str | None = None) -> list:
    """Refuse ``clauses`` (parsed from ``text``) unless every goal is on the allow-list; return
    the clauses to run: the same, or with variable goals guarded by the dispatcher."""
    from problog.logic import AnnotatedDisjunction, Clause
    checker = ProgramChecker(text, source)
    checker.check(clauses)
    if not checker.needs_dispatch:
        return list(clauses)
    out = []
    for cl in clauses:
        if isinstance(cl, Clause) and cl.head is not None and _name(cl.head) != "_directive":
            cl = Clause(cl.head, guard_body(cl.body, checker.defined), location=getattr(cl, "location", None))
        elif isinstance(cl, AnnotatedDisjunction):
            cl = AnnotatedDisjunction(cl.heads, guard_body(cl.body, checker.defined))
        out.append(cl)
    return out + dispatcher(checker.known)
