"""ProbLog's builtin table as nesybench's specification: one row per builtin.

ProbLog registers its builtins in one table (``problog.engine_builtin``: name, arity,
function), adds ``forall/2`` from its ``library(builtin)``, and ships the Prolog libraries
``lists`` and ``apply``. Every entry has a row here, in one of three states:

* :class:`Proven`: the SWI-Prolog grounder gives ProbLog's answers, failures and errors;
  ``tests/test_nesy_builtin_table.py`` calls ProbLog's builtin and ours on generated arguments
  (ground, partly bound, wrong types, fresh variables, big and special numbers) and requires the
  same outcome;
* :class:`Routed`: the SWI-Prolog grounder does not run it: ``--grounder auto`` grounds a
  program that calls it with ProbLog's engine, ``--grounder prolog`` refuses it naming it;
* :class:`Refused`: no grounder runs it, a decision: it reads or writes outside the program
  (files, databases, output, Python) or reaches into ProbLog's engine state (scopes,
  flags, counters, sampling while grounding). The program is refused in one line naming it.

The test walks ProbLog's table and fails on an entry without a row, so a new ProbLog release
cannot add a builtin silently. The same rows cover the control constructs (``once``, ``\\+``,
``->``, ``forall``, ``findall``, ``all``, ``call/N``) and evidence on atoms with variables.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Proven:
    """The SWI-Prolog grounder implements ProbLog's behaviour (``note``: how, where it is
    not a plain SWI-Prolog builtin)."""

    note: str = ""


@dataclass(frozen=True)
class Routed:
    """Programs that call it are ground by ProbLog's engine (``reason``: why)."""

    reason: str


@dataclass(frozen=True)
class Refused:
    """Programs that call it are refused (``reason``: why)."""

    reason: str


_SAFETY = "reads or writes outside the program (files, databases, output, Python)"
_ENGINE = "reaches into ProbLog's engine state (scopes, flags, tracing)"
_TERMS = "a term builtin of ProbLog's engine (pure), run there"

#: control constructs and evidence, which ProbLog compiles rather than calls
CONTROL = {
    ("\\+", 1): Proven("negation as failure over the ground program (a literal)"),
    ("not", 1): Proven("as \\+/1"),
    ("->", 2): Proven("if-then(-else) whose condition is deterministic; a probabilistic "
                      "condition is ProbLog's grounder's"),
    ("once", 1): Proven("a plain call, as in ProbLog 2.3 (every answer)"),
    ("forall", 2): Proven("ProbLog's library(builtin) clause, \\+ (C, \\+ A)"),
    ("findall", 3): Proven("over a deterministic goal; over a probabilistic goal ProbLog's "
                           "grounder runs (routed)"),
    ("evidence", 1): Proven("on an atom with variables: every answer observed true, as in "
                            "ProbLog; observed false: ProbLog's grounder"),
}

#: ProbLog's engine builtins (``DefaultEngine().get_builtins()``), name and arity
ENGINE = {
    **{(n, 0): Proven() for n in ("true", "fail", "false")},
    **{(n, 2): Proven() for n in ("=", "\\=", "==", "\\==", "@<", "@=<", "@>", "@>=",
                                  "is", "<", "=<", ">", ">=", "=:=", "=\\=", "=..",
                                  "atom_number", "length", "sort", "subsumes_term", "succ")},
    ("compare", 3): Proven("answers with ProbLog's quoted atoms '<', '=' and '>'"),
    ("between", 3): Proven(), ("plus", 3): Proven(), ("functor", 3): Proven(),
    ("arg", 3): Proven(),
    **{(n, 1): Proven() for n in ("var", "nonvar", "atom", "atomic", "compound", "callable",
                                  "float", "integer", "number", "is_list", "ground")},
    **{("call", n): Proven() for n in range(1, 10)},
    ("once", 1): CONTROL[("once", 1)],
    ("findall", 3): CONTROL[("findall", 3)],
    ("all", 3): Routed("aggregates over the program's possible answers (ProbLog's engine)"),
    ("all_or_none", 3): Routed("all/3 that answers [] where the goal has no answer "
                               "(library(collect))"),
    (".", 2): Refused("a list cell called as a goal (consult a file, in Prolog)"),
    ("consult", 1): Refused(_SAFETY), ("_consult", 2): Refused(_SAFETY),
    ("use_module", 1): Refused(_SAFETY + "; ProbLog's libraries lists, apply, aggregate, "
                                         "collect, cut, scope and string are allowed"),
    ("use_module", 2): Refused(_SAFETY), ("_use_module", 2): Refused(_SAFETY),
    ("_use_module", 3): Refused(_SAFETY), ("module", 2): Refused(_SAFETY),
    ("cmd_args", 1): Refused(_SAFETY), ("nl", 0): Refused(_SAFETY),
    **{(w, n): Refused(_SAFETY) for w in ("write", "writeln", "writenl") for n in range(1, 10)},
    **{("debugprint", n): Refused(_SAFETY) for n in range(1, 10)},
    **{("error", n): Refused(_SAFETY) for n in range(1, 10)},
    ("dbg_printdb", 0): Refused(_SAFETY), ("print_state", 0): Refused(_SAFETY),
    ("trace", 0): Refused(_ENGINE), ("notrace", 0): Refused(_ENGINE),
    **{("subquery", n): Refused(_SAFETY + ": a second inference inside grounding")
       for n in (2, 3, 5)},
    **{("subquery_in_scope", n): Refused(_SAFETY) for n in (3, 4, 6)},
    **{("call_in_scope", n): Refused(_ENGINE) for n in range(2, 11)},
    ("create_scope", 2): Refused(_ENGINE), ("find_scope", 2): Refused(_ENGINE),
    ("set_state", 1): Refused(_ENGINE), ("reset_state", 0): Refused(_ENGINE),
    ("check_state", 1): Refused(_ENGINE),
    ("dbreference", 1): Routed(_TERMS), ("seq", 1): Refused(_ENGINE + ": a counter that "
                                                              "differs between runs"),
    ("possible", 1): Refused(_ENGINE + ": a second grounding inside grounding"),
    ("primitive", 1): Routed(_TERMS), ("simple", 1): Routed(_TERMS),
    ("condition", 1): Refused(_ENGINE), ("probabilityX", 1): Refused(_SAFETY),
    ("sample_uniform1", 3): Refused(_ENGINE + ": random sampling while grounding"),
    ("unknown", 1): Refused("as a goal (a flag of ProbLog's engine); the directive "
                            ":- unknown(fail). is supported (a call to an undefined predicate "
                            "fails, as in ProbLog)"),
    ("clause", 2): Routed("the program's own clauses as data (library(cut) too); "
                          "nesybench's helper clauses are not among them"),
    ("clause", 3): Routed("the program's own clauses and their probabilities as data"),
    **{("call_nc", n): Routed("call/N without ProbLog's tabling of the call")
       for n in range(1, 10)},
    **{("try_call", n): Routed("call/N that fails where the goal is undefined or raises "
                               "(library(scope)); a budget still stops it")
       for n in range(1, 10)},
    ("numbervars", 2): Routed(_TERMS), ("numbervars", 3): Routed(_TERMS),
    ("varnumbers", 2): Routed(_TERMS), ("rational", 1): Routed(_TERMS),
    ("subsumes_chk", 2): Routed(_TERMS), ("nocache", 2): Routed(
        "a hint not to table a predicate; the answers are the same"),
}

#: the libraries a program may import: ProbLog's own Prolog clauses, given to both grounders
#: (the Python predicates of lists and string are routed: ProbLog's own functions, run on
#: ProbLog's engine)
LIBRARY = Proven("ProbLog's own library clauses, resolved by the grounder like the program's")


def row(name: str, arity: int):
    """The row of builtin ``name/arity`` (``None``: no row)."""
    key = (name, arity)
    return ENGINE.get(key) or CONTROL.get(key)


def routed_names() -> set[str]:
    """``name/arity`` of every routed builtin."""
    return {f"{n}/{a}" for (n, a), r in ENGINE.items() if isinstance(r, Routed)}


def as_markdown() -> str:
    """The table as Markdown, grouped by state (for the limitations page)."""
    groups: dict[str, list[str]] = {}
    for (n, a), r in sorted({**ENGINE, **CONTROL}.items()):
        state = type(r).__name__.lower()
        why = getattr(r, "reason", "") or getattr(r, "note", "")
        groups.setdefault(state, []).append(f"`{n}/{a}`" + (f" ({why})" if why else ""))
    return "\n".join(f"- **{k}**: " + ", ".join(v) for k, v in groups.items())
