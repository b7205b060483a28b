r"""What a ProbLog program handed to nesybench may do: an engine that has only pure builtins,
and an allow-list checked before grounding for clear errors.

ProbLog is a Prolog engine written in Python, and its builtin table reaches far beyond logic:
``consult/1``, ``use_module/1`` (which imports a Python file), ``'_use_module'/2``,
``subquery/2``, ``writeln/1``, ``cmd_args/1``, ``dbg_printdb/0``... A program from someone else
(a shared task file, a model zoo entry) is therefore code. Two layers keep it logic:

1. **The engine** (:func:`safe_engine`) is ProbLog's stack-based engine built *without* its
   builtin table; only the builtins of :data:`ENGINE_BUILTINS` are registered (pure logic:
   unification, comparison, arithmetic, type checks, term inspection, and the meta-calls
   ``call/N``, ``once/1``, ``findall/3`` whose goals this same engine resolves). Whatever path
   a goal takes (``call/N``, ``\+``, ``findall``, ``maplist``/``include``/``foldl`` of any
   arity, ``query/1``, ``evidence/1,2``, a goal built with ``=..``), a predicate outside that
   table does not exist there: grounding stops with a one-line refusal naming it.
   ``:- use_module(library(Name))`` for a library of :data:`LIBRARIES` is resolved by
   :func:`library_clauses`, which adds the clauses of ProbLog's Prolog library (no file is
   loaded at run time). The few predicates ProbLog's libraries define in Python (string
   concatenation, grouping) are ProbLog's own functions, registered as engine builtins under
   internal names (:data:`LIBRARY_PYTHON`).
2. **The static check** (:class:`ProgramChecker`), before ProbLog sees the program, refuses
   with file, line and column what is never allowed: a builtin outside :data:`BUILTINS` and
   :data:`META` (files, databases, output, engine state), a library predicate without its
   import, directives other than the library imports and ``:- unknown(fail|error).``, and
   ``query``/``evidence`` written as rules or probabilistic facts, or over an atom the program
   cannot define. A goal naming a predicate that nothing defines is, as in ProbLog, an error
   when it is called (both grounders refuse the call, naming it), not when a clause that is
   never called, or is read as data by ``clause/2``, names it. Goals that are variables at
   load time cannot be checked in advance: they run on the engine above, which is the layer
   that holds.

Programs may define predicates with any name and arity, unless the name starts with an
underscore (ProbLog's internal predicates) or is one of ProbLog's builtins (a definition there
would not be the one that runs).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import NesyError

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
    # the program's own clauses as data (read, never changed)
    "clause/2", "clause/3",
    # ProbLog's further term builtins (pure; ground by ProbLog's engine)
    "rational/1", "simple/1", "dbreference/1", "primitive/1", "numbervars/2",
    "numbervars/3", "varnumbers/2", "subsumes_chk/2",
    # a hint to ProbLog's engine not to table a predicate (answers do not change)
    "nocache/2",
})

#: meta-calls: predicate -> positions (0-based) of goal arguments and how many extra
#: arguments the call appends to that goal
META: dict[str, tuple[tuple[int, int], ...]] = {
    "\\+/1": ((0, 0),), "not/1": ((0, 0),), "once/1": ((0, 0),),
    "findall/3": ((1, 0),), "all/3": ((1, 0),), "all_or_none/3": ((1, 0),),
    "forall/2": ((0, 0), (1, 0)),
    **{f"call/{n}": ((0, n - 1),) for n in range(1, 10)},
    **{f"try_call/{n}": ((0, n - 1),) for n in range(1, 10)},
    **{f"call_nc/{n}": ((0, n - 1),) for n in range(1, 10)},
    # library(apply)
    **{f"maplist/{n}": ((0, n - 1),) for n in range(2, 6)},
    "include/3": ((0, 1),), "exclude/3": ((0, 1),), "partition/4": ((0, 1),),
    **{f"foldl/{n}": ((0, n - 1),) for n in range(4, 7)},
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
        "select_weighted/4", "enum_groups/3", "enum_groups/4",
    }),
    # ProbLog loads its library(builtin) into every program (forall/2)
    "builtin": frozenset({"forall/2"}),
    "apply": frozenset({"maplist/2", "maplist/3", "maplist/4", "maplist/5", "include/3",
                        "exclude/3", "partition/4", "foldl/4", "foldl/5", "foldl/6"}),
    # aggregates over the answers of a body (``p(G, avg<X>) :- body.``, which ProbLog's
    # reader turns into aggregate/5); all/3 makes them ProbLog's grounder's
    "aggregate": frozenset({"aggregate/5", "avg/2", "sum/2", "sum/3", "min/2", "min/3",
                            "max/2", "max/3"}),
    # ``Body => Group/Collector``: the collector ``collect_<name>`` the program defines
    "collect": frozenset({"=>/2", "collectgroup/4", "collect_list/3", "collect_list/4"}),
    # ordered rules: cut(r(X)) takes the first rule r(I, X) by index I that succeeds
    "cut": frozenset({"cut/1", "cut/2", "cut/4"}),
    # scoped atoms Scope:Atom
    "scope": frozenset({":/2"}),
    # strings as atoms (ProbLog's Python helpers, pure)
    "string": frozenset({"concat/2", "join/3", "str2lst/2", "lst2str/2", "str2int/2",
                         "sub_string/5"}),
}

#: libraries a library imports itself (ProbLog's ``:- use_module`` lines in its text)
LIBRARY_IMPORTS: dict[str, tuple[str, ...]] = {
    "aggregate": ("lists", "apply"), "collect": ("lists", "apply", "string"),
    "scope": ("lists",), "string": ("lists",),
}

#: predicates ProbLog's libraries define in Python (``lists.py``, ``string.py``): each is a
#: pure function of its arguments, registered on the engine as ``_lib_<name>`` (a name no
#: program may call) and reached through a clause ``name(A, ...) :- '_lib_name'(A, ...).``
#: that the library adds, so that a program which does not import the library may define
#: the same name itself
LIBRARY_PYTHON: dict[str, tuple[str, ...]] = {
    "lists": ("enum_groups/3", "enum_groups/4"),
    "string": ("concat/2", "join/3", "str2lst/2", "lst2str/2", "str2int/2"),
}


def python_helper(sig: str) -> str:
    """The engine builtin behind the library predicate ``sig`` (``name/arity``)."""
    name, arity = sig.rsplit("/", 1)
    return f"_lib_{name}/{arity}"


#: engine builtin -> the library predicate it implements (for messages)
PYTHON_HELPERS: dict[str, str] = {python_helper(sig): sig
                                  for sigs in LIBRARY_PYTHON.values() for sig in sigs}

#: the builtins the grounding engine registers at all (:func:`safe_engine`): :data:`BUILTINS`,
#: the meta-calls that are builtins of ProbLog's engine (their goals are resolved by the same
#: engine), the two pure helpers ProbLog's ``lists.pl`` calls and the Python predicates of
#: ProbLog's libraries (:data:`LIBRARY_PYTHON`). Nothing else exists there.
ENGINE_BUILTINS: frozenset[str] = BUILTINS | frozenset({
    "findall/3", "all/3", "all_or_none/3", "once/1", *(f"call/{n}" for n in range(1, 10)),
    *(f"try_call/{n}" for n in range(1, 10)), *(f"call_nc/{n}" for n in range(1, 10)),
    "memberchk_ground/2", "ground_list/2", *PYTHON_HELPERS,
})

#: builtins of :data:`ENGINE_BUILTINS` registered with nesybench's own function rather than
#: the one of ProbLog's table
_OWN_BUILTINS = frozenset({"memberchk_ground/2", "ground_list/2", *PYTHON_HELPERS,
                           "clause/2", "clause/3",
                           *(f"try_call/{n}" for n in range(1, 10))})

#: ProbLog's engine refers to its first eight builtins by position: they are registered first,
#: in this order (all eight are pure; the three aggregates resolve their goal on this engine)
_FIXED_ORDER = ("true/0", "fail/0", "false/0", "=/2", "\\=/2", "findall/3", "all/3",
                "all_or_none/3")


#: Prolog builtins with side effects that ProbLog's engine does not have either: a program
#: that names one without defining it is refused when read, not only when the goal is called
#: (the engine could not run it in any case; the early line says why)
SIDE_EFFECTS: frozenset[str] = frozenset({
    "assert/1", "asserta/1", "assertz/1", "asserta/2", "assertz/2", "retract/1",
    "retractall/1", "abolish/1", "abolish/2", "erase/1", "recorda/2", "recorda/3",
    "recordz/2", "recordz/3", "recorded/2", "recorded/3", "flag/3", "nb_setval/2",
    "b_setval/2", "nb_getval/2", "b_getval/2", "set_prolog_flag/2",
    "shell/0", "shell/1", "shell/2", "system/1", "process_create/3", "halt/0", "halt/1",
    "getenv/2", "setenv/2", "unsetenv/1",
    "open/3", "open/4", "close/1", "close/2", "see/1", "seen/0", "tell/1", "told/0",
    "append/1", "read/1", "read/2", "read_term/2", "read_term/3", "format/1", "format/2",
    "format/3", "print/1", "print/2", "tab/1", "put_char/1", "get_char/1",
    "load_files/1", "load_files/2", "ensure_loaded/1", "include/1", "use_foreign_library/1",
    "exists_file/1", "delete_file/1", "rename_file/2", "make_directory/1",
    "directory_files/2", "tmp_file/2",
})

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


_FULL_TABLE: list[frozenset[str]] = []


def _engine_builtins() -> frozenset[str]:
    """Every builtin of ProbLog's full engine (names a program may not redefine or call). The
    full engine is built only to read its table's names; it never runs a program."""
    if not _FULL_TABLE:
        from problog.engine import DefaultEngine
        _FULL_TABLE.append(frozenset(DefaultEngine().get_builtins()))
    return _FULL_TABLE[0]


def engine_builtin_names() -> frozenset[str]:
    """The signatures of every builtin ProbLog's full engine registers (public name)."""
    return _engine_builtins()


class ProgramChecker:
    """Check parsed ProbLog clauses against the allow-list (see the module docstring).

    ``check(clauses)`` raises :class:`~nesybench.errors.NesyError` on the first refused goal,
    naming file, line, column and the predicate."""

    def __init__(self, text: str, source: str | None = None):
        self.text = text
        self.source = source
        self.reserved = _engine_builtins() | CONTROL | {"\\+/1", ":-/1", ":-/2", "::/2"}
        self.libraries: set[str] = set()
        self.known: set[str] = set()
        #: ``:- unknown(fail).`` was stated: a call to an undefined predicate fails (ProbLog's
        #: flag), and ``undefined`` collects those predicates (each gets a failing clause)
        self.unknown_fail = False
        self.undefined: set[str] = set()
        self.defined: set[str] = set()
        #: predicates a body names that nothing defines (refused when called)
        self.uncalled: set[str] = set()

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
        statements = []      # query/evidence facts, their atoms checked likewise
        for cl in clauses:
            if isinstance(cl, Clause) and (cl.head is None or _name(cl.head) == "_directive") \
                    or (isinstance(cl, Term) and cl.functor == ":-" and cl.arity == 1):
                lib = self._directive(cl.body if isinstance(cl, Clause) else cl.args[0], cl)
                if lib is not None:
                    libraries.add(lib)
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
                if _signature(h) in STATEMENTS:
                    self._statement_form(h, cl, body, len(heads))
                    statements.append((h, cl))
                    continue
                self._probability(getattr(h, "probability", None), h, cl)
                defined.add(_signature(h))
            if body is not None:
                bodies.append((body, cl))
        if "forall/2" not in defined:
            libraries.add("builtin")     # always there in ProbLog, as here
        known = set(defined)
        for lib in libraries:
            known |= LIBRARIES[lib]
        self.known, self.defined, self.libraries = known, defined, libraries
        for body, cl in bodies:
            self._goal(body, cl, known, 0)
        for h, cl in statements:
            self.check_atom(h.args[0], f"{_signature(h)}", h, cl)

    def _statement_form(self, head, clause, body, n_heads: int) -> None:
        """``query/1`` and ``evidence/1,2`` are statements: plain facts, never probabilistic
        facts or heads of a disjunction (ProbLog would ground their argument as a goal, or
        crash), and rules only as ProbLog's query rules ``query(p(X)) :- a(X).``"""
        from problog.logic import Term
        sig = _signature(head)
        if sig == "query/1" and body is not None and n_heads == 1 and \
                getattr(head, "probability", None) is None:
            return          # a query rule: query(p(X)) :- a(X). (its body is checked as a body)
        if body is not None or n_heads > 1 or getattr(head, "probability", None) is not None:
            raise self._refuse(f"{sig} is a statement: write it as a plain fact, "
                               f"e.g. {_name(head)}(a).", head, clause)
        if sig == "evidence/2":
            value = head.args[1]
            if not (isinstance(value, Term) and not value.is_var() and value.arity == 0
                    and _name(value) in ("true", "false")):
                raise self._refuse(f"evidence/2: the observed value must be true or false, "
                                   f"not {value}", head, clause)

    def check_atom(self, atom, what: str, node, clause=None) -> None:
        """``atom`` (the argument of a ``query``/``evidence`` statement, or a query atom given
        from outside) must be an atom the program can define, or a pure builtin."""
        from problog.logic import Not, Term, Var
        if isinstance(atom, Not) or (isinstance(atom, Term) and _signature(atom) == "\\+/1"):
            self.check_atom(atom.args[0], what, node, clause)   # evidence(\+ a): a is false
            return
        if isinstance(atom, Var) or not isinstance(atom, Term) or atom.is_var() or \
                isinstance(atom.functor, ARITH_OK):
            raise self._refuse(f"{what}: {atom} is not an atom", node, clause)
        sig = _signature(atom)
        if _name(atom).startswith("_"):
            raise self._refuse(f"{what}: {sig} is internal to the engine and not allowed",
                               node, clause)
        if sig in self.known and sig not in self.reserved or sig in BUILTINS:
            return
        if sig in self.reserved or sig in META:
            raise self._refuse(f"{what}: {sig} is not allowed in a program (file, database, "
                               "output and engine builtins are refused; see the allowed list "
                               "in nesybench.nesy.program.sandbox)", node, clause)
        if self.unknown_fail:
            self.undefined.add(sig)
            return
        raise self._refuse(f"{what}: {sig} is not defined in the program", node, clause)

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
        if isinstance(goal, Term) and goal.functor == "unknown" and goal.arity == 1 and \
                isinstance(goal.args[0], Term) and _name(goal.args[0]) in ("fail", "error"):
            self.unknown_fail = _name(goal.args[0]) == "fail"    # ProbLog's flag
            return None
        what = _signature(goal) if isinstance(goal, Term) else str(goal)
        raise self._refuse(f"directive {what} is not allowed: the directives are "
                           ":- use_module(library(Name)) for " + ", ".join(sorted(LIBRARIES))
                           + " and :- unknown(fail). or :- unknown(error).", goal, clause)

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
            return          # known only at run time: the engine has nothing unsafe to reach
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
                    continue        # resolved at run time by the engine (module docstring)
                if not isinstance(sub, Term) or isinstance(sub.functor, ARITH_OK):
                    raise self._refuse(f"{sig}: {sub} is not a goal", goal, clause)
                if extra:
                    # a plain term: call((a ; b), X) calls ';'/3, not a disjunction (ProbLog's
                    # And/Or/Not classes take exactly their own arguments)
                    sub = Term(sub.functor, *sub.args, *([Var("_")] * extra))
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
                               "nesybench.nesy.program.sandbox)", goal, clause)
        if self.unknown_fail:
            self.undefined.add(sig)       # fails, as in ProbLog (side effects or not)
            return
        if sig in SIDE_EFFECTS:
            raise self._refuse(f"{sig} is a Prolog builtin with side effects (files, the "
                               "database, the process), which ProbLog's engine and "
                               "nesybench's do not have", goal, clause)
        # not defined anywhere: as in ProbLog, an error when the goal is called (both
        # grounders refuse the call, naming it), not when a clause that is never called
        # (or is read as data by clause/2) names it
        self.uncalled.add(sig)


class _Registrar:
    """Stands in for an engine while ProbLog's standard builtins are added: only the
    signatures of ``allowed`` reach the real engine, the rest are never registered."""

    def __init__(self, engine, allowed: frozenset[str]):
        self.engine = engine
        self.allowed = allowed
        self.registered: list[str] = []

    def add_builtin(self, name, arity, function) -> None:
        sig = f"{name}/{arity}"
        if sig in self.allowed and sig not in self.registered:
            self.engine.add_builtin(name, arity, function)
            self.registered.append(sig)


def _memberchk_ground(element, lst, **_):
    """``memberchk_ground(X, L)`` of ProbLog's ``lists.pl``: memberchk/2 over a ground list,
    walked here rather than by one tabled call per element; fails for anything else."""
    from problog.engine_unify import UnifyError, unify_value
    from problog.logic import is_ground, term2list
    if lst is None or not is_ground(lst):
        return []
    try:
        elements = term2list(lst, deep=False)
    except ValueError:
        return []
    for e in elements:
        if element is None:
            return [(e, lst)]
        try:
            unify_value(element, e, {})
        except UnifyError:
            continue
        return [(e, lst)]
    return []


def _ground_list(lst, flag, **_):
    """``ground_list(L, B)``: ``B`` is ``true`` when ``L`` is a ground proper list."""
    from problog.engine_unify import UnifyError, unify_value
    from problog.logic import Term, is_ground, term2list
    answer = Term("false")
    if lst is not None and is_ground(lst):
        try:
            term2list(lst, deep=False)
            answer = Term("true")
        except ValueError:
            pass
    if flag is None:
        return [(lst, answer)]
    try:
        unify_value(flag, answer, {})
    except UnifyError:
        return []
    return [(lst, answer)]


def _try_call(term, *args, **kwargs):
    """``try_call(G, ...)``: ``call(G, ...)``, failing where ProbLog's ``try_call`` fails: when
    ``G`` is undefined or raises an error of the program. A budget's interruption (a
    ``BaseException``) is not caught, unlike ProbLog's bare ``except``, so that a limit still
    stops grounding inside it."""
    from problog.engine_builtin import _builtin_call
    from problog.logic import Term
    try:
        if isinstance(term, Term) and _internal_head(Term(term.functor, *term.args, *args)):
            # ProbLog's engine has no clauses for ','/2, ';'/2 and '\+'/1 as called terms,
            # so its try_call fails on them (nesybench's control clauses would run them)
            return True, kwargs["callback"].notifyComplete()
        return _builtin_call(term, args, **kwargs)
    except Exception:   # noqa: BLE001 - ProbLog's try_call fails on any error of the goal
        return True, kwargs["callback"].notifyComplete()


_HELPERS: dict = {}


def _python_helpers() -> dict:
    """``{'_lib_name/arity': function}`` for :data:`LIBRARY_PYTHON`: the functions of
    ProbLog's own ``library/lists.py`` and ``library/string.py``, read from the installed
    ``problog`` package by running each module with ProbLog's export registry pointed at a
    collector (the same wrappers ProbLog's ``use_module`` registers: argument modes, type
    conversion, unification of the outputs)."""
    if _HELPERS:
        return _HELPERS
    import importlib.util

    from problog import extern

    collected: dict = {}

    class _Collector:
        def add_extern(self, name, arity, function, scope=None):
            collected[f"{name}/{arity}"] = function

    saved = extern.problog_export.database
    extern.problog_export.database = _Collector()
    try:
        for lib in LIBRARY_PYTHON:
            spec = importlib.util.find_spec(f"problog.library.{lib}")
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
    finally:
        extern.problog_export.database = saved
    for lib, sigs in LIBRARY_PYTHON.items():
        for sig in sigs:
            if sig not in collected:
                raise NesyError(f"ProbLog's library({lib}) has no {sig}: not the ProbLog "
                                "release nesybench was built for")
            _HELPERS[python_helper(sig)] = collected[sig]
    return _HELPERS


def _clause_hiding_internals(function):
    """ProbLog's ``clause/2,3`` over the program's clauses, without nesybench's own helper
    clauses (the label and query-rule clauses, the control constructs as callable terms)."""
    def clause(*args, **kwargs):
        return [r for r in function(*args, **kwargs) if not _internal_head(r[0])]
    return clause


def _internal_head(head) -> bool:
    from problog.logic import Term
    if not isinstance(head, Term):
        return False
    name = str(head.functor)
    return name.startswith("nesy__") or (name, head.arity) in (
        (",", 2), (";", 2), ("\\+", 1), ("'\\+'", 1))


def install_builtins(engine) -> list[str]:
    """Register on ``engine`` (built with ``builtins=False``) the builtins of
    :data:`ENGINE_BUILTINS` and nothing else; return their signatures in table order."""
    from problog.engine_builtin import add_standard_builtins
    from problog.engine_stack import (BooleanBuiltIn, SimpleBuiltIn,
                                      SimpleProbabilisticBuiltIn)
    reg = _Registrar(engine, ENGINE_BUILTINS - _OWN_BUILTINS)
    # the positional eight first: let them through alone, then the whole table filtered
    first = _Registrar(engine, frozenset(_FIXED_ORDER))
    add_standard_builtins(first, BooleanBuiltIn, SimpleBuiltIn, SimpleProbabilisticBuiltIn)
    if tuple(first.registered) != _FIXED_ORDER:      # a ProbLog release that changed its table
        raise NesyError("ProbLog's builtin table is not the one nesybench was built for "
                        f"(first entries {first.registered}); refusing to ground")
    reg.registered = list(first.registered)
    add_standard_builtins(reg, BooleanBuiltIn, SimpleBuiltIn, SimpleProbabilisticBuiltIn)
    engine.add_builtin("memberchk_ground", 2, SimpleBuiltIn(_memberchk_ground))
    engine.add_builtin("ground_list", 2, SimpleBuiltIn(_ground_list))
    reg.registered += ["memberchk_ground/2", "ground_list/2"]
    from problog.engine_builtin import _builtin_clause, _builtin_clause3
    engine.add_builtin("clause", 2, SimpleBuiltIn(_clause_hiding_internals(_builtin_clause)))
    engine.add_builtin("clause", 3, SimpleBuiltIn(_clause_hiding_internals(_builtin_clause3)))
    reg.registered += ["clause/2", "clause/3"]
    for n in range(1, 10):
        engine.add_builtin("try_call", n, _try_call)
        reg.registered.append(f"try_call/{n}")
    for helper, function in _python_helpers().items():
        name, arity = helper.rsplit("/", 1)
        engine.add_builtin(name, int(arity), SimpleBuiltIn(function))
        reg.registered.append(helper)
    registered = set(engine.get_builtins())
    if not registered <= ENGINE_BUILTINS:           # by construction; checked all the same
        raise NesyError("the grounding engine holds builtins outside the allow-list: "
                        + ", ".join(sorted(registered - ENGINE_BUILTINS)))
    return reg.registered


def safe_engine(cls=None, **kwargs):
    """An instance of ProbLog's stack-based engine (or of ``cls``, a subclass) that has only the
    builtins of :data:`ENGINE_BUILTINS`. A goal naming any other builtin finds no definition:
    ProbLog raises ``UnknownClause``, which :func:`nesybench.nesy.program.program.ground` reports as a
    refusal."""
    from problog.engine_stack import StackBasedEngine
    engine = (cls or StackBasedEngine)(builtins=False, **kwargs)
    install_builtins(engine)
    return engine


_LIBRARY_TEXT: dict[str, str] = {}


def library_clauses(name: str) -> list:
    """The clauses of ProbLog's Prolog library ``name`` (one of :data:`LIBRARIES`), read from
    the installed ``problog`` package and parsed as data: its ``:- module`` and
    ``:- use_module`` directives are dropped (the Python helpers ``lists.pl`` imports are the
    two pure builtins of :data:`ENGINE_BUILTINS`)."""
    from importlib.resources import files

    from problog.logic import Clause, Term
    from problog.program import PrologString
    if name not in LIBRARIES:
        raise NesyError(f"library {name!r} is not allowed")
    out = _python_helper_clauses(name)
    if name in LIBRARY_PYTHON and not (files("problog") / "library" / f"{name}.pl").is_file():
        return out
    text = _LIBRARY_TEXT.get(name)
    if text is None:
        text = (files("problog") / "library" / f"{name}.pl").read_text(encoding="utf-8")
        _LIBRARY_TEXT[name] = text
    for cl in PrologString(text):
        if isinstance(cl, Clause) and cl.head is not None and _name(cl.head) == "_directive":
            continue
        if isinstance(cl, Term) and cl.functor == ":-" and cl.arity == 1:
            continue
        _forget_locations(cl)
        out.append(cl)
    return out


def _python_helper_clauses(name: str) -> list:
    """``p(A1, ..., An) :- '_lib_p'(A1, ..., An).`` for each Python predicate of library
    ``name`` (:data:`LIBRARY_PYTHON`)."""
    from problog.logic import Clause, Term, Var
    out = []
    for sig in LIBRARY_PYTHON.get(name, ()):
        pred, arity = sig.rsplit("/", 1)
        args = [Var(f"A{i}") for i in range(int(arity))]
        out.append(Clause(Term(pred, *args), Term(f"_lib_{pred}", *args)))
    return out


def with_imports(libraries) -> list[str]:
    """``libraries`` and the libraries they import (:data:`LIBRARY_IMPORTS`), sorted."""
    out, stack = set(), list(libraries)
    while stack:
        lib = stack.pop()
        if lib not in out:
            out.add(lib)
            stack.extend(LIBRARY_IMPORTS.get(lib, ()))
    return sorted(out)


def _forget_locations(term) -> None:
    """Drop the source positions of a library clause: they are offsets into the library's
    text, and an error there must not be reported at that offset of the user's program."""
    from problog.logic import Term
    stack = [term]
    while stack:
        t = stack.pop()
        if isinstance(t, Term):
            try:
                t.location = None
            except AttributeError:
                pass
            stack.extend(t.args)


def control_clauses() -> list:
    """Clauses for ``','/2``, ``';'/2`` and ``'\\+'/1`` as goals built at run time
    (``G = (a, b), call(G)``): ProbLog compiles these constructs when they are written in a
    body, and has no definition for them as called terms."""
    from problog.logic import And, Clause, Not, Term, Var
    a, b = Var("A"), Var("B")
    return [Clause(Term(",", a, b), And(Term("call", a), Term("call", b))),
            Clause(Term(";", a, b), Term("call", a)),
            Clause(Term(";", a, b), Term("call", b)),
            Clause(Term("\\+", a), Not("\\+", Term("call", a)))]


def _is_directive(cl) -> bool:
    from problog.logic import Clause, Term
    return (isinstance(cl, Clause) and (cl.head is None or _name(cl.head) == "_directive")) \
        or (isinstance(cl, Term) and cl.functor == ":-" and cl.arity == 1)


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
    the clauses to ground: the program's own (without its directives) followed by the clauses
    of the libraries it imports."""
    checker = ProgramChecker(text, source)
    checker.check(clauses)
    out = [cl for cl in clauses if not _is_directive(cl)]
    for lib in with_imports(checker.libraries):
        out.extend(library_clauses(lib))
    return out + control_clauses() + _failing_clauses(checker.undefined)


def _failing_clauses(signatures) -> list:
    """``p(_, ..., _) :- fail.`` for each ``p/n`` called but undefined under
    ``:- unknown(fail).``: ProbLog fails such a call, and so does every grounder here."""
    from problog.logic import Clause, Term, Var
    out = []
    for sig in sorted(signatures):
        name, arity = sig.rsplit("/", 1)
        out.append(Clause(Term(name, *(Var(f"A{i}") for i in range(int(arity)))),
                          Term("fail")))
    return out
