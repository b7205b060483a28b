"""Ground a parsed ProbLog program in SWI-Prolog (``prolog/problog_ground.pl``).

The program's clauses (already parsed and checked by :mod:`nesybench.nesy.program.program`) cross to
SWI-Prolog as *data*: every term ProbLog's reader built is encoded as nested lists (numbers
as numbers, atoms by the names ProbLog gives them, variables by index; see
:func:`encode`), handed to the grounder in one call per query shape, and rebuilt there. No
text is written to be read again, so the grounder sees exactly the clauses ProbLog's reader
saw. The ground program comes back as lists of integers (node table, choices, labels,
evidence), with the terms it names encoded the same way and rebuilt here as ProbLog's terms
(:func:`decode`). Prolog holds the clauses as data and resolves every goal itself against
them or against its table of pure builtins, so a program has no path to any other predicate
(see the module documentation of ``problog_ground.pl``); arithmetic is ProbLog's
(:mod:`nesybench.nesy.program.arith`).

A construct this grounder does not handle (findall/3 over a probabilistic goal, a negation on
a cycle, ...) raises :class:`Unsupported`, naming it; the caller then grounds with ProbLog's
engine (``--grounder auto``) or reports it. An error of the program (a builtin's error, a
refused call) is the program's: :class:`ProgramFault`, with the clause's line and column.
"""
from __future__ import annotations

from ...errors import NesyError

#: goal arguments of the control constructs (0-based positions): names in goal position are
#: unquoted, as ProbLog looks predicates up by their unquoted name
_GOAL_ARGS = {(",", 2): (0, 1), (";", 2): (0, 1), ("->", 2): (0, 1), ("\\+", 1): (0,),
              ("not", 1): (0,), ("once", 1): (0,), ("findall", 3): (1,), ("forall", 2): (0, 1),
              **{("call", n): (0,) for n in range(1, 10)}}
_CONTROL_HEADS = {(",", 2), (";", 2), ("\\+", 1)}


class Unsupported(Exception):
    """The program uses a construct the SWI-Prolog grounder does not handle (the message says
    which)."""


class Refused(Exception):
    """The program called ``name/arity`` (the message), which it does not define and the
    builtin table does not have; ``where`` holds the line and column of the clause whose body
    made the call, where known."""

    def __init__(self, sig: str, where: dict | None = None):
        super().__init__(sig)
        self.where = where or {}


class ProgramFault(NesyError):
    """The program fails while grounding (a builtin's error, an arithmetic error): one line,
    with the clause's line and column where the grounder knows them."""


class _Encoder:
    """ProbLog terms as the nested lists of ``decode/3`` in ``problog_ground.pl``; variables
    numbered per clause (each anonymous ``_`` a fresh one)."""

    def __init__(self, spellings: dict | None = None):
        self.names: dict[str, int] = {}
        self.count = 0
        self.spellings = spellings if spellings is not None else {}

    def var(self, name: str) -> list:
        if name == "_":
            self.count += 1
            return ["v", self.count - 1]
        k = self.names.get(name)
        if k is None:
            k = self.names[name] = self.count
            self.count += 1
        return ["v", k]

    def term(self, t, goal: bool = False):
        from problog.logic import Constant, Term, Var
        if isinstance(t, Var):
            return self.var(t.name)
        if isinstance(t, Constant):
            v = t.value
            if isinstance(v, bool):
                return int(v)
            if isinstance(v, (int, float)):
                return v
            return ["s", str(v)]
        if isinstance(t, bool):
            return int(t)
        if isinstance(t, (int, float)):
            return t
        if not isinstance(t, Term):
            raise Unsupported(f"a term of type {type(t).__name__}")
        functor, arity = str(t.functor), t.arity
        if goal:
            functor = functor.strip("'")
        else:
            self.spellings.setdefault((functor.strip("'"), arity), set()).add(functor)
        if functor == "." and arity == 2 and not goal:
            return ["l", self.term(t.args[0]), self.term(t.args[1])]
        if arity == 0:
            return ["n"] if functor == "[]" else ["a", functor]
        goal_args = _GOAL_ARGS.get((functor, arity), ()) if goal else ()
        return ["c", functor, [self.term(a, i in goal_args) for i, a in enumerate(t.args)]]

    def named(self) -> list[int]:
        return [k for name, k in self.names.items()]


#: ProbLog's operators whose terms it prints in operator form (``1-0``, ``a mod b``, ``-b``)
_BINARY_OPS = ("- + * / // ** ^ mod rem = \\= == \\== @< @=< @> @>= is < > =< >= =:= =\\= : "
               "-> =.. << >> /\\ \\/ xor & | as").split()
_UNARY_OPS = ("-", "+", "\\")


def _operator_table() -> dict:
    """``(quoted name, arity) -> (priority, spec)`` of ProbLog's operators, as ProbLog's own
    parser gives them (read once from a fixed term of ours, so the table is ProbLog's)."""
    global _OPS
    if _OPS is None:
        import warnings

        from problog.program import PrologString
        text = "nesy__ops(" + ", ".join(f"(a {o} b)" for o in _BINARY_OPS) + ", " + \
            ", ".join(f"({o} b)" for o in _UNARY_OPS) + ")."
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # ProbLog warns of == in any program
            (fact,) = list(PrologString(text))
        _OPS = {(str(t.functor), t.arity): (t.op_priority, t.op_spec) for t in fact.args
                if getattr(t, "op_spec", None) is not None}
    return _OPS


_OPS: dict | None = None


def problog_term(functor: str, args: list):
    """The term ``functor(args)`` as ProbLog's reader would have built it: conjunctions and
    disjunctions as ``And``/``Or``, negation as ``Not``, operators with their priority, so
    that it prints as ProbLog prints it (``1-0``, ``(a, b)``)."""
    from problog.logic import And, Not, Or, Term
    n = len(args)
    if n == 2 and functor == ",":
        return And(*args)
    if n == 2 and functor == ";":
        return Or(*args)
    if n == 1 and functor.strip("'") == "\\+":
        return Not("\\+", args[0])
    quoted = functor if functor.startswith("'") else f"'{functor}'"
    op = _operator_table().get((quoted, n))
    if op is not None:
        return Term(quoted, *args, priority=op[0], opspec=op[1])
    return Term(functor, *args)


def decode(e):
    """The ProbLog term of an encoded term from the grounder (the inverse of ``encode/2`` in
    ``problog_ground.pl``)."""
    from problog.logic import Constant, Term, Var
    if isinstance(e, (int, float)):
        return Constant(e)
    tag = e[0]
    if tag == "a":
        return Term(e[1])
    if tag == "n":
        return Term("[]")
    if tag == "l":
        return Term(".", decode(e[1]), decode(e[2]))
    if tag == "c":
        return problog_term(e[1], [decode(a) for a in e[2]])
    if tag == "s":
        return Constant(e[1])
    return Var("_")


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


def check_spellings(spellings: dict) -> None:
    """Raise :class:`Unsupported` where one name of one arity is written two ways, as
    ``'abc'`` and ``abc``, ``'[]'`` and ``[]``, or ``'5'`` and the number 5 (``spellings``:
    ``(unquoted name, arity)`` to the names as written).

    ProbLog keeps a quoted atom's quotes, and tells the two spellings apart in some places
    and not in others: clause lookup on a ground argument and ``==`` compare the spelling,
    ``=/2`` and head unification below a variable compare the unquoted name (``'abc' = abc``
    holds, ``p('abc')`` does not answer ``p(abc)``). The SWI-Prolog grounder keeps one meaning
    of a term, so such a program is ProbLog's own grounder's."""
    import re
    number = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|nan)")
    for (bare, arity), written in sorted(spellings.items()):
        lists = (bare, arity) in (("[]", 0), (".", 2))
        if len(written) > 1 or (lists or number.fullmatch(bare)) and written != {bare}:
            shown = " and ".join(sorted(written | {bare}))
            raise Unsupported(f"the name {bare} written as {shown}, which ProbLog's "
                              "unification and clause lookup tell apart differently")


def program_data(clauses, queries, evidence) -> list:
    """The grounder's input ``[Clauses, Queries, Evidence]`` (see ``pg_ground/3``): one entry
    per clause head (clause ids are positions in ``clauses``), per query (its free variables
    in order) and per evidence statement (``1`` observed true, ``0`` false).

    Raises :class:`Unsupported` for a name written two ways (:func:`check_spellings`)."""
    spellings: dict = {}
    out_clauses = []
    for cid, cl in enumerate(clauses):
        w = _Encoder(spellings)
        entries = []
        for head, body, kind, prob in _clause_items(cl):
            h = head.with_probability(None) if getattr(head, "probability", None) is not None \
                else head
            if (str(h.functor).strip("'"), h.arity) in _CONTROL_HEADS:
                break                      # the grounder resolves control constructs itself
            he, be = w.term(h, goal=True), w.term(body, goal=True)
            if kind[0] == "det":
                ke = "det"
            elif kind[0] == "fact":
                ke = ["fact", w.term(prob)]
            else:
                ke = ["ad", kind[1], w.term(prob), None]
            entries.append([he, cid, be, ke])
        named = w.named()
        for he, _, be, ke in entries:
            if isinstance(ke, list) and ke[0] == "ad":
                ke[3] = named
            out_clauses.append([he, cid, be, ke, w.count])
    out_queries = []
    for j, (q, qvars) in enumerate(queries):
        w = _Encoder(spellings)
        qe = w.term(q, goal=True)
        out_queries.append([j, qe, [w.var(v.name)[1] for v in qvars], w.count])
    out_evidence = []
    for k, (atom, value) in enumerate(evidence):
        w = _Encoder(spellings)
        out_evidence.append([k, w.term(atom, goal=True), 1 if value else 0, w.count])
    check_spellings(spellings)
    return [out_clauses, out_queries, out_evidence]


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


def ground_swi(clauses, queries, evidence, *, clock, source=None, where=None):
    """Run the SWI-Prolog grounder on ``clauses`` for ``queries`` (``(atom, free vars)``) and
    ``evidence`` (``(atom, observed)``); ``where(clause)`` gives a clause's ``line`` and
    ``column`` keywords for error messages.

    Returns the grounder's ``[choices, nodes, labels, evidence]`` lists (see ``pg_ground/3``;
    :func:`nesybench.nesy.program.program.ground` turns them into a ground program). Raises
    :class:`Unsupported`, :class:`Refused` (a call outside the program and the builtins),
    :class:`ProgramFault` (an error of the program) or a budget's error."""
    import time

    from ...logic import prolog
    from .budget import BudgetExceeded
    try:
        data = program_data(clauses, queries, evidence)
    except RecursionError:
        raise Unsupported("a term nested too deeply to pass") from None
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
    res = prolog.once(f"problog_ground:pg_ground(Data, [{','.join(limits)}], R)", Data=data)
    r = res["R"] if res else ["error", "the grounder failed"]
    kind = r[0]
    located = {}
    if kind == "at":
        _, cid, kind, msg = r
        r = [kind, msg]
        if where is not None and 0 <= int(cid) < len(clauses):
            located = where(clauses[int(cid)])
    if kind == "unsupported":
        raise Unsupported(str(r[1]))
    if kind == "refused":
        raise Refused(str(r[1]), located)
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
        raise ProgramFault(f"grounding failed: {r[1]}", file=source, **located)
    return r[1:]


def learnable_value(v, source) -> float | None:
    """The initial value of a learnable ``t(P)`` (``None`` for ``t(_)``)."""
    if v == "none" or v is None:
        return None
    return float(v)


def check_probability(p: float, source) -> None:
    if not 0 <= p <= 1:
        raise NesyError(f"probability {p} is outside [0, 1]", file=source)
