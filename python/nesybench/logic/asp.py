"""The clingo bridge: load ASP encodings from ``prolog/``, add facts, solve, count, read models.

Capabilities hand over *facts as data* (predicate name + Python arguments), never program
strings they assembled themselves; the encodings are the ``.lp`` files in ``prolog/``.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import PROLOG_DIR
from ..errors import BudgetExceeded, NesyError
from ..folder import read_input_text
from .prolog import resolve

Fact = tuple  # (name, arg1, arg2, ...) with str / int / tuple arguments

#: wall-clock seconds one :func:`solve` call may search before it is cancelled (the knowledge
#: of an RS task is untrusted input); ``time_limit=`` overrides it per call
DEFAULT_TIME_LIMIT = 600.0
#: ground atoms clingo may produce for a program that includes user knowledge (about 110 MiB
#: of clingo memory per million atoms); :func:`limits` or ``max_ground_atoms=`` override it
DEFAULT_MAX_GROUND_ATOMS = 2_000_000
_max_ground_atoms: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "max_ground_atoms", default=None)


@contextlib.contextmanager
def limits(*, max_ground_atoms: int | None = None) -> Iterator[None]:
    """Within the block, :func:`solve` grounds user knowledge under ``max_ground_atoms`` (the
    ``--max-ground-atoms`` option of the commands that ground user ``.lp`` files)."""
    if max_ground_atoms is not None and max_ground_atoms < 1:
        raise NesyError(f"--max-ground-atoms must be >= 1, got {max_ground_atoms}")
    token = _max_ground_atoms.set(max_ground_atoms)
    try:
        yield
    finally:
        _max_ground_atoms.reset(token)


class _GroundingOver(Exception):
    """Raised from the grounding observer: clingo stops grounding and returns."""


class _GroundBudget:
    """A clingo observer that stops grounding when the program has more than ``max_atoms``
    ground atoms (the largest atom number clingo has handed out, what its statistics call
    ``problem.lp.atoms``) or when ``deadline`` (``time.monotonic``) has passed. It sees every
    ground rule as the grounder emits it, so memory never grows far past the budget."""

    __slots__ = ("max_atoms", "deadline", "atoms", "rules", "why")

    def __init__(self, max_atoms: int, deadline: float) -> None:
        self.max_atoms, self.deadline = max_atoms, deadline
        self.atoms = self.rules = 0
        self.why = ""

    def rule(self, choice, head, body) -> None:
        self.rules += 1
        for atom in head:
            if atom > self.atoms:
                self.atoms = atom
        if self.atoms > self.max_atoms:
            self.why = "atoms"
            raise _GroundingOver
        if not self.rules & 1023 and time.monotonic() > self.deadline:
            self.why = "time"
            raise _GroundingOver

    def weight_rule(self, choice, head, lower_bound, body) -> None:
        self.rule(choice, head, body)


def _one_line(messages: list[str], limit: int = 600) -> str:
    """clingo's messages (an "unsafe variable" error spans four lines) as one line, at most
    ``limit`` characters (clingo quotes whole rules, which may be huge)."""
    text = "; ".join(" ".join(m.split()) for m in messages)
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass
class AspResult:
    """What a solve call found.

    Attributes
    ----------
    models : list of models, each a sorted list of ``(name, args)`` tuples of shown atoms
        (only when ``keep_models``)
    count : number of (projected) models enumerated
    exhausted : True when the search space was exhausted (the count is exact)
    satisfiable : whether at least one model exists
    timed_out : True when ``time_limit`` stopped the search (the count is a lower bound)
    """

    models: list[list[tuple]] = field(default_factory=list)
    count: int = 0
    exhausted: bool = True
    satisfiable: bool = False
    timed_out: bool = False


def _clingo():
    import clingo  # noqa: PLC0415 - the one place clingo is imported
    return clingo


def symbol(value):
    """Python value -> clingo Symbol (str -> constant if lowercase identifier, else String)."""
    clingo = _clingo()
    if isinstance(value, bool):
        return clingo.Function("true" if value else "false")
    if isinstance(value, int):
        return clingo.Number(value)
    if isinstance(value, tuple):
        if value and isinstance(value[0], str) and value[0][:1].islower() and \
                value[0].replace("_", "a").isalnum():
            return clingo.Function(value[0], [symbol(v) for v in value[1:]])
        return clingo.Tuple_([symbol(v) for v in value])
    if isinstance(value, str):
        if value[:1].islower() and value.replace("_", "a").isalnum():
            return clingo.Function(value)
        return clingo.String(value)
    raise NesyError(f"cannot turn {value!r} into an ASP term")


def fact_symbol(fact: tuple, memo: dict):
    """``symbol(fact)`` for a fact ``(name, arg, ...)``, its arguments taken from ``memo`` (a
    dict the caller keeps for one batch): the facts of many worlds repeat the same concept
    terms and values, and building a clingo symbol through its C interface costs far more
    than a lookup. Keys are ``repr`` of the value, so ``True`` and ``1`` stay apart."""
    if not (fact and isinstance(fact[0], str) and fact[0][:1].islower()
            and fact[0].replace("_", "a").isalnum()):
        return symbol(fact)
    args = []
    for v in fact[1:]:
        key = repr(v)
        got = memo.get(key)
        if got is None:
            got = memo[key] = symbol(v)
        args.append(got)
    return _clingo().Function(fact[0], args)


def to_python(sym):
    """clingo Symbol -> Python value (numbers int, constants/strings str, functions tuples)."""
    clingo = _clingo()
    t = sym.type
    if t == clingo.SymbolType.Number:
        return sym.number
    if t == clingo.SymbolType.String:
        return sym.string
    if t == clingo.SymbolType.Function:
        if not sym.arguments:
            return sym.name
        args = tuple(to_python(a) for a in sym.arguments)
        return (sym.name, *args) if sym.name else args
    return str(sym)


#: the ``#`` directives a user's ASP knowledge may use (aggregates, optimisation, output);
#: ``#include``, ``#script``, ``#external``, ``#program``, ``#theory``, ``#heuristic``, ``#edge``
#: and anything else are refused before clingo reads the file (its parser would follow an
#: ``#include`` at once)
ALLOWED_DIRECTIVES = frozenset({"const", "show", "project", "minimize", "maximize", "count",
                                "sum", "sum+", "min", "max", "inf", "sup", "true", "false",
                                "defined"})
#: the statement kinds of ``clingo.ast`` allowed in user knowledge (the documented subset:
#: rules, constraints, choice rules, #const, #show, #project, #minimize, #defined)
ALLOWED_STATEMENTS = frozenset({"Rule", "Definition", "ShowSignature", "ShowTerm",
                                "ProjectAtom", "ProjectSignature", "Minimize", "Defined",
                                "Comment"})
_checked: dict[tuple, str] = {}
#: bounds on one statement of user knowledge, checked on the raw text before clingo parses it:
#: clingo's parser and grounder recurse over terms in C++, and a term nested 20,000 deep (an
#: operator chain ``X+1+1+...`` or a tower of unary minus) overflows the C stack (a crash)
MAX_NESTING = 1_000
MAX_STATEMENT_TOKENS = 10_000


def _directives(text: str):
    """``(name, line)`` of every ``#`` directive outside comments and strings."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif c == "%":
            if text.startswith("%*", i):
                end = text.find("*%", i + 2)
                end = n if end < 0 else end + 2
                line += text.count("\n", i, end)
                i = end
                continue
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            line += text.count("\n", i, j)
            i = j + 1
            continue
        elif c == "#":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "_+"):
                j += 1
            yield text[i + 1:j], line
            i = j
            continue
        i += 1


def _check_shape(text: str, source: str) -> None:
    """Refuse a statement nested more than :data:`MAX_NESTING` brackets deep or longer than
    :data:`MAX_STATEMENT_TOKENS` tokens (names, numbers, variables and operator characters),
    outside comments and strings; one pass, no recursion, before anything parses the text."""
    i, n, line = 0, len(text), 1
    depth = tokens = 0
    start_line = 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if c == "%":
            if text.startswith("%*", i):
                end = text.find("*%", i + 2)
                end = n if end < 0 else end + 2
                line += text.count("\n", i, end)
                i = end
            else:
                end = text.find("\n", i)
                i = n if end < 0 else end
            continue
        if c.isspace():
            i += 1
            continue
        if tokens == 0:
            start_line = line
        tokens += 1
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            line += text.count("\n", i, j)
            i = j + 1
        elif c.isalnum() or c == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            i = j
        else:
            if c in "([{":
                depth += 1
                if depth > MAX_NESTING:
                    raise NesyError(f"a term is nested more than {MAX_NESTING:,} brackets deep",
                                    file=source, line=line)
            elif c in ")]}":
                depth = max(0, depth - 1)
            elif c == "." and not text.startswith("..", i) and \
                    not (i > 0 and text[i - 1] == "."):
                depth = tokens = 0               # the end of a statement
            i += 1
        if tokens > MAX_STATEMENT_TOKENS:
            raise NesyError(f"a statement holds more than {MAX_STATEMENT_TOKENS:,} tokens "
                            "(split it into smaller rules)", file=source, line=start_line)


def check_program(path: str | os.PathLike) -> str:
    """Refuse ASP knowledge outside the documented subset, with file:line: first a lexical
    scan of the ``#`` directives (allow-list :data:`ALLOWED_DIRECTIVES`; nothing is parsed
    before it, so an ``#include`` is never followed), the size and nesting of each statement
    (:func:`_check_shape`: nothing deep reaches clingo's recursive C++), then ``clingo.ast``
    statement kinds
    (:data:`ALLOWED_STATEMENTS`). Checked files are remembered by (path, size, mtime).
    Returns the text checked (read through the door: :func:`read_input_text`), which is what
    :func:`solve` hands to clingo: clingo opens no file of a user."""
    p = Path(path)
    try:
        st = p.stat()
        key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
        if key in _checked:
            return _checked[key]
        text = read_input_text(p)           # a regular file (no FIFO, device), bounded
    except UnicodeDecodeError:
        raise NesyError("ASP knowledge is not UTF-8 text", file=str(p)) from None
    except OSError as exc:
        raise NesyError(f"cannot read the ASP program: {exc.strerror or exc}",
                        file=str(p)) from None
    for name, line in _directives(text):
        if name not in ALLOWED_DIRECTIVES:
            raise NesyError(f"#{name} is not allowed in ASP knowledge (allowed: "
                            f"{', '.join('#' + d for d in sorted(ALLOWED_DIRECTIVES))})",
                            file=str(p), line=line)
    _check_shape(text, str(p))
    from clingo import ast as clingo_ast  # noqa: PLC0415
    statements: list = []
    messages: list[str] = []
    try:
        clingo_ast.parse_string(text, statements.append,
                                logger=lambda code, msg: messages.append(msg.strip()),
                                message_limit=5)
    except RuntimeError as exc:
        raise NesyError(f"ASP syntax error: {_one_line(messages) or exc}", file=str(p)) from None
    for stm in statements:
        kind = str(stm.ast_type).rsplit(".", 1)[-1]
        if kind == "Program" and stm.name == "base" and not stm.parameters:
            continue
        if kind not in ALLOWED_STATEMENTS:
            raise NesyError(f"{kind} statements are not allowed in ASP knowledge (rules, "
                            "constraints, choice rules, #const, #show, #project, #minimize, "
                            "#defined)", file=str(p), line=stm.location.begin.line)
    if len(_checked) >= 256:
        _checked.clear()
    _checked[key] = text
    return text


def solve(programs: Sequence[str | os.PathLike], facts: Iterable[Fact] = (), *,
          models: int = 0, project: bool = False, keep_models: bool = True,
          consts: dict[str, int | str] | None = None, options: Sequence[str] = (),
          on_model: Callable[[list[tuple]], bool | None] | None = None,
          time_limit: float | None = None, partial_ok: bool = False,
          max_ground_atoms: int | None = None) -> AspResult:
    """Ground and solve ``programs`` (``.lp`` paths, relative to the repo root) plus ``facts``.

    ``models=0`` enumerates all models; ``project=True`` enumerates distinct projections onto
    the ``#project`` atoms (or the shown atoms when the program declares none). ``on_model``
    may return False to stop early. The search stops at once on Ctrl-C / SIGTERM, and after
    ``time_limit`` seconds (default :data:`DEFAULT_TIME_LIMIT`: knowledge of an RS task is
    untrusted input) with :class:`~nesybench.errors.BudgetExceeded` — or, with
    ``partial_ok=True``, with ``timed_out`` set on the result (the count is then a lower
    bound and the caller decides).

    When a program is user knowledge (outside ``prolog/``), grounding runs under a budget:
    more than ``max_ground_atoms`` ground atoms (default: the value of :func:`limits`, else
    :data:`DEFAULT_MAX_GROUND_ATOMS`), or grounding past ``time_limit``, stops it with
    :class:`~nesybench.errors.BudgetExceeded` naming the limit and the size reached. (The
    time limit is checked as ground rules come out; a join that derives nothing holds no
    memory and runs to its end.)
    """
    clingo = _clingo()
    args = [str(models)]
    if project:
        args.append("--project")
    for k, v in (consts or {}).items():
        args.append(f"--const={k}={v}")
    args.extend(options)
    messages: list[str] = []
    ctl = clingo.Control(args, logger=lambda code, msg: messages.append(msg.strip()),
                         message_limit=20)
    user: list[str] = []
    for prog in programs:
        path = resolve(prog)
        if not Path(path).exists():
            raise NesyError("ASP program not found", file=str(path))
        text = None
        if PROLOG_DIR not in Path(path).resolve().parents:
            # user knowledge: the documented subset only, read by the door and added as text
            # (clingo loads by path only the encodings nesybench ships under prolog/)
            text = check_program(path)
            user.append(str(path))
        try:
            if text is None:
                ctl.load(str(path))
            else:
                ctl.add("base", [], text)
        except RuntimeError as exc:
            raise NesyError(f"ASP syntax error: {_one_line(messages) or exc}",
                            file=str(path)) from None
    memo: dict = {}
    with ctl.backend() as backend:
        for fact in facts:
            atom = backend.add_atom(fact_symbol(tuple(fact), memo) if len(fact) > 1
                                    else symbol(fact[0]))
            backend.add_rule([atom])
    limit = DEFAULT_TIME_LIMIT if time_limit is None else float(time_limit)
    started = time.monotonic()
    deadline = started + max(0.0, limit)
    budget = None
    if user:
        max_atoms = max_ground_atoms or _max_ground_atoms.get() or DEFAULT_MAX_GROUND_ATOMS
        budget = _GroundBudget(max_atoms, deadline)
        ctl.register_observer(budget)
    try:
        ctl.ground([("base", [])])
    except (RuntimeError, _GroundingOver) as exc:
        if budget is not None and budget.why:
            _grounding_over(budget, limit, time.monotonic() - started, user[0])
        raise NesyError(f"ASP grounding failed: {_one_line(messages) or exc}") from None
    result = AspResult()

    def _model(m) -> bool:
        result.count += 1
        result.satisfiable = True
        atoms = None
        if keep_models or on_model is not None:
            atoms = sorted((to_python(s) if s.arguments else (s.name,) for s in m.symbols(shown=True)),
                           key=repr)
            atoms = [a if isinstance(a, tuple) else (a,) for a in atoms]
        if keep_models:
            result.models.append(atoms)
        if on_model is not None and on_model(atoms) is False:
            return False
        return True

    with ctl.solve(on_model=_model, async_=True) as handle:
        try:
            # wait in short steps so that Python's signal handlers (Ctrl-C, SIGTERM) run
            while not handle.wait(min(0.1, max(0.0, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    handle.cancel()
                    if not partial_ok:
                        raise BudgetExceeded(f"clingo searched longer than {limit:g} s "
                                             f"({result.count} models so far)")
                    result.timed_out = True
                    break
        except BaseException:
            handle.cancel()
            raise
        result.exhausted = bool(handle.get().exhausted) and not result.timed_out
    return result


def _grounding_over(budget: _GroundBudget, limit: float, seconds: float, source: str):
    """Raise the one-line error for a grounding stopped by :class:`_GroundBudget`."""
    if budget.why == "atoms":
        raise BudgetExceeded(
            f"clingo grounding reached {budget.atoms:,} ground atoms, over the limit of "
            f"{budget.max_atoms:,} (--max-ground-atoms); the knowledge grounds too large",
            file=source) from None
    raise BudgetExceeded(
        f"clingo grounding ran longer than the time limit of {limit:g} s ({budget.atoms:,} "
        f"ground atoms, {budget.rules:,} ground rules after {seconds:.1f} s)",
        file=source) from None


def count(programs: Sequence[str | os.PathLike], facts: Iterable[Fact] = (), *,
          project: bool = True, consts: dict | None = None) -> int:
    """Exact number of (projected) answer sets; enumeration without keeping models."""
    return solve(programs, facts, models=0, project=project, keep_models=False,
                 consts=consts).count
