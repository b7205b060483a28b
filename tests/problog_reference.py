"""Generated first-order ProbLog programs, and nesybench's grounders judged against stock
ProbLog on them.

:func:`program` writes a program as a user would: probabilistic facts over integers,
floats, negative numbers, plain and quoted atoms; annotated disjunctions with non-ground
heads; probabilistic rules; negation; lists (``length/2``, ``member/2``, ``sort/2``, list
patterns); ``findall/3`` over deterministic goals; every function of ProbLog's arithmetic
table over negative, zero, float and large operands; comparisons that tell integers from
floats; cyclic reachability; evidence on derived atoms; ground, non-ground and anonymous
queries. :func:`compare` evaluates one program with stock ProbLog (``get_evaluatable()``, as
ProbLog's own documentation uses it) and with each of nesybench's grounders through the public
:class:`~nesybench.nesy.inference.circuit.CompiledProgram`, and returns the disagreements (a program
that stock ProbLog rejects must be rejected with one line by every grounder).
"""
from __future__ import annotations

import random
import warnings

INTS = [-7, -3, -1, 0, 1, 2, 3, 5, 10, 12345678901234567890]
FLOATS = [-2.5, -0.5, 0.0, 0.1, 0.5, 1.0, 2.5, 3.75, 1e-3, 1e16]
ATOMS = ["a", "b", "c", "abc", "'abc'", "'A b'", "'x-y'", "[]", "'[]'", "nil"]
#: the quoted spellings of names also written plainly
TWINS = ["'abc'", "'[]'"]

#: ProbLog's arithmetic functions, by arity
BINARY = ["+", "-", "*", "/", "//", "mod", "rem", "div", "**", "^", "min", "max", "atan2",
          "<<", ">>", "/\\", "\\/", "xor", "exp"]
UNARY = ["-", "+", "abs", "sign", "integer", "float", "float_integer_part",
         "float_fractional_part", "truncate", "round", "ceiling", "floor", "sqrt", "exp",
         "log", "sin", "cos", "atan", "\\"]
NULLARY = ["pi", "e", "inf", "nan", "epsilon"]
COMPARE = ["<", "=<", ">", ">=", "=:=", "=\\="]


#: nesybench's deliberate differences from stock ProbLog (errors where ProbLog computes a
#: complex number or an integer of more than 100,000 bits), by their messages
DELIBERATE = ("is not a real number", "integer result too large")


def _p(rng) -> str:
    return f"{rng.choice([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]):g}"


def _number(rng) -> str:
    v = rng.choice(INTS + FLOATS)
    return repr(v) if isinstance(v, float) else str(v)


def _constant(rng, atoms=ATOMS) -> str:
    return rng.choice([_number(rng), rng.choice(atoms)])


def _expr(rng, var: str, depth: int = 0) -> str:
    r = rng.random()
    if depth >= 2 or r < 0.25:
        return rng.choice([var, var, _number(rng)])
    if r < 0.3:
        return rng.choice(NULLARY)
    if r < 0.55:
        f = rng.choice(UNARY)
        inner = _expr(rng, var, depth + 1)
        return f"{f}({inner})" if f.isalpha() else f"{f}({inner})"
    f = rng.choice(BINARY)
    a, b = _expr(rng, var, depth + 1), _expr(rng, var, depth + 1)
    if f.isalpha() or f in ("atan2",):
        return f"{f}({a}, {b})"
    return f"({a}) {f} ({b})"


def program(seed: int) -> str:
    """One generated program (deterministic in ``seed``)."""
    rng = random.Random(seed)
    lines = [":- use_module(library(lists))."]
    # a name written two ways ('abc' and abc) in one program in a quarter of the programs
    # (the SWI-Prolog grounder leaves those to ProbLog's own)
    atoms = ATOMS if rng.random() < 0.25 else [a for a in ATOMS if a not in TWINS]
    consts = rng.sample(atoms, 4) + [_number(rng) for _ in range(3)]
    nums = [_number(rng) for _ in range(rng.randint(2, 4))]
    # probabilistic facts and deterministic facts
    for c in rng.sample(consts, rng.randint(2, 5)):
        lines.append(f"{_p(rng)}::f({c}).")
    for c in rng.sample(consts, rng.randint(1, 4)):
        lines.append(f"{_p(rng)}::g({c}).")
    for n in nums:
        lines.append(f"num({n}).")
    queries, derived = [], []
    kinds = rng.sample(["arith", "compare", "ad", "neg", "list", "findall", "cycle", "rule",
                        "quoted", "intfloat", "order", "terms"], rng.randint(2, 5))
    for k in kinds:
        if k == "arith":
            e = _expr(rng, "X")
            lines.append(f"0.5::h(X, V) :- num(X), V is {e}.")
            queries.append("h(X, V)")
        elif k == "compare":
            op = rng.choice(COMPARE)
            lines.append(f"cmp(X) :- f(X), number(X), X {op} {_expr(rng, 'X', 1)}.")
            lines.append(f"cmp(X) :- num(X), {_expr(rng, 'X', 1)} {op} {_number(rng)}, g(X).")
            queries.append(rng.choice(["cmp(X)", "cmp(_)"]))
            derived.append("cmp(X)")
        elif k == "ad":
            a1, a2 = rng.sample(atoms, 2)
            lines.append(f"{_p(rng)}::col(X, {a1}); {_p(rng) if rng.random() < 0.5 else '0.1'}"
                         f"::col(X, {a2}) :- f(X).")
            queries.append(rng.choice(["col(X, C)", f"col(_, {a1})", "col(X, _)"]))
            derived.append(f"col(X, {a1})")
        elif k == "neg":
            lines.append("lone(X) :- f(X), \\+ g(X).")
            lines.append("lone(X) :- num(X), \\+ f(X).")
            queries.append("lone(X)")
            derived.append("lone(X)")
        elif k == "list":
            items = ", ".join(rng.choice(consts) for _ in range(rng.randint(0, 4)))
            lines.append(f"lst([{items}]).")
            lines.append("inl(X, N) :- lst(L), member(X, L), f(X), length(L, N).")
            lines.append("srt(S) :- lst(L), sort(L, S), g(_).")
            lines.append("hd(H) :- lst([H|_]), f(H).")
            queries.append(rng.choice(["inl(X, N)", "srt(S)", "hd(H)", "inl(_, N)"]))
        elif k == "findall":
            lines.append("cnt(N, S) :- findall(X, num(X), L), length(L, N), g(Y), "
                         "findall(Z, (num(Z), Z > 0), P), sort(P, S).")
            queries.append("cnt(N, S)")
        elif k == "cycle":
            nodes = ["n0", "n1", "n2", "n3"]
            for _ in range(rng.randint(3, 6)):
                a, b = rng.choice(nodes), rng.choice(nodes)
                lines.append(f"{_p(rng)}::edge({a}, {b}).")
            lines.append("path(X, Y) :- edge(X, Y).")
            lines.append("path(X, Y) :- edge(X, Z), path(Z, Y).")
            queries.append(rng.choice(["path(n0, X)", "path(n0, n3)", "path(X, n1)"]))
            derived.append("path(n0, n1)")
        elif k == "rule":
            lines.append(f"{_p(rng)}::both(X) :- f(X), g(X).")
            lines.append(f"{_p(rng)}::both(X) :- num(X), g(X).")
            queries.append(rng.choice(["both(X)", "both(_)"]))
            derived.append("both(X)")
        elif k == "quoted":
            lines.append("same(X) :- f(X), g(Y), X == Y.")
            lines.append(f"same(X) :- f(X), X = {rng.choice(atoms)}.")
            lines.append(f"q0 :- f({rng.choice(atoms)}).")
            queries.append(rng.choice(["same(X)", "q0"]))
            derived.append("q0")
        elif k == "order":
            op = rng.choice(["@<", "@=<", "@>", "@>=", "==", "\\=="])
            lines.append(f"ord(X, Y) :- f(X), g(Y), X {op} Y.")
            lines.append(f"cmpo(O, X) :- f(X), num(Y), compare(O, X, Y).")
            items = ", ".join(_constant(rng, atoms) for _ in range(rng.randint(0, 4)))
            lines.append(f"srt2(S) :- findall(X, num(X), L), sort([{items} | L], S), f(_).")
            queries.append(rng.choice(["ord(X, Y)", "cmpo(O, X)", "srt2(S)", "ord(_, Y)"]))
        elif k == "terms":
            # the modes ProbLog accepts, guarded; now and then unguarded (a mode error)
            ok = "integer(X), " if rng.random() < 0.8 else ""
            lo = rng.choice([-3, -1, 0, 1, 5])
            lines.append(f"tm(N) :- num(X), {ok}X < 50, between({lo}, X, N), f(_).")
            lines.append(f"tm(N) :- num(X), {ok}succ(N, X), g(_).")
            lines.append(f"tm(N) :- num(X), {ok}plus(X, {rng.choice(INTS)}, N), g(_).")
            lines.append("fa(F, A) :- f(X), functor(X, F, A).")
            lines.append("fa(F, A) :- g(X), X =.. [F|A].")
            guard = "atom(X), " if rng.random() < 0.8 else ""
            lines.append(f"fa(F, A) :- f(X), {guard}functor(T, X, {rng.choice([0, 1, 2])}), "
                         "T =.. [F|Args], length(Args, A).")
            queries.append(rng.choice(["tm(N)", "fa(F, A)", "tm(_)"]))
        else:
            lines.append(f"kind(X, int) :- num(X), Y is X / {rng.choice(['1', '2', '1.0'])}, "
                         "integer(Y).")
            lines.append(f"kind(X, flt) :- num(X), Y is X * {rng.choice(['1', '1.0', '2'])}, "
                         f"Y = {_number(rng)}.")
            lines.append("kind(X, eq) :- num(X), Y is X + 0, Y == X, f(Z).")
            queries.append("kind(X, K)")
    if derived and rng.random() < 0.4:
        atom = rng.choice(derived).replace("X", rng.choice(consts))
        lines.append(f"evidence({atom}, {rng.choice(['true', 'false'])}).")
    for q in dict.fromkeys(queries):
        lines.append(f"query({q}).")
    return "\n".join(lines) + "\n"


def _stock_here(text: str):
    from problog import get_evaluatable
    from problog.program import PrologString
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return get_evaluatable().create_from(PrologString(text)).evaluate()
        except Exception as exc:   # any failure of the reference is a rejection
            return exc


class StockTimeout(Exception):
    """Stock ProbLog did not answer within the time limit (it computes, say, ``7 ** 7 **
    20`` in one native step)."""


def _serve(conn) -> None:
    while True:
        text = conn.recv()
        out = _stock_here(text)
        if isinstance(out, Exception):
            out = RuntimeError(f"{type(out).__name__}: {out}")
        conn.send(out)


_worker: list = []


def stock(text: str, timeout: float = 10.0):
    """Stock ProbLog's answer: ``{atom: probability}`` or the exception it raised, as
    ``get_evaluatable().create_from(PrologString(text)).evaluate()`` (ProbLog's own
    documented use) gives it, computed in a child process that is killed after ``timeout``
    seconds (:class:`StockTimeout`)."""
    import multiprocessing as mp
    if not _worker or not _worker[0].is_alive():
        _worker.clear()
        ctx = mp.get_context("fork")
        here, there = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(there,), daemon=True)
        proc.start()
        _worker.extend([proc, here])
    proc, conn = _worker
    conn.send(text)
    if conn.poll(timeout):
        return conn.recv()
    proc.kill()
    proc.join()
    _worker.clear()
    return StockTimeout(f"stock ProbLog gave no answer in {timeout:g} s")


def _match(pattern, term, binding: dict) -> bool:
    from problog.logic import Constant, Term, Var
    if isinstance(term, (int, float)):
        term = Constant(term)
    if isinstance(pattern, Var):
        if pattern.name in binding:
            return binding[pattern.name] == term
        binding[pattern.name] = term
        return True
    if isinstance(pattern, Constant) or isinstance(term, Constant):
        return isinstance(pattern, Constant) and isinstance(term, Constant) and \
            type(pattern.value) is type(term.value) and pattern.value == term.value
    if not isinstance(term, Term):
        return False
    return pattern.functor == term.functor and pattern.arity == term.arity and \
        all(_match(a, b, binding) for a, b in zip(pattern.args, term.args))


def _expected(text: str, answer: dict) -> list[tuple[dict, bool]] | None:
    """Stock answers per query statement, keyed as nesybench's labels are (``None`` where
    two answers share one label value, as ``'abc'`` and ``abc`` do once unquoted)."""
    from problog.logic import Term
    from problog.program import PrologString

    from nesybench.nesy.program.program import _free_vars, _name_anonymous_query, _py

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stmts = [cl for cl in PrologString(text) if isinstance(cl, Term)
                 and cl.functor == "query" and cl.arity == 1]
    out = []
    for st in stmts:
        q = _name_anonymous_query(st.args[0])
        names = [v.name for v in _free_vars(q)]
        per: dict = {}
        for atom, p in answer.items():
            if hasattr(atom, "is_ground") and not atom.is_ground():
                continue               # ProbLog's way of saying "no answer": q(X1) at 0.0
            b: dict = {}
            if not _match(q, atom, b):
                continue
            val = tuple(_py(b[n]) for n in names)
            val = (val[0] if len(val) == 1 else val) if names else 1
            if val in per:
                return None
            per[val] = p
        out.append((per, not names))
    return out


def _refused_unanswered(text: str, want: list, err: Exception) -> bool:
    """Whether ``err`` is nesybench's refusal of a non-ground query that stock ProbLog answers
    with no binding at all (its ``q(X1): 0.0``): the one deliberate difference."""
    import re
    from problog.program import PrologString
    m = re.search(r"query '(.*)' grounds to nothing", str(err))
    if not m:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stmts = [str(cl.args[0]).replace(" ", "") for cl in PrologString(text)
                 if getattr(cl, "functor", None) == "query" and cl.arity == 1]
    named = m.group(1).replace(" ", "")
    return any(q == named and not w and not ground
               for q, (w, ground) in zip(stmts, want))


def ours(text: str, grounder: str):
    """nesybench's answer under ``grounder``: per query statement ``{label value:
    probability}``, or the :class:`~nesybench.errors.NesyError` it raised."""
    from nesybench.errors import NesyError
    from nesybench.nesy.program.budget import Budget
    from nesybench.nesy.inference.circuit import CompiledProgram
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            prog = CompiledProgram.from_program(text, None, use_cache=False,
                                                budget=Budget(grounder=grounder, timeout=60))
        except NesyError as exc:
            return exc
    out = []
    for dom, m in zip(prog.label_domains, prog.label_marginals([])):
        out.append({v: float(p) for v, p in zip(dom, m[0].detach())})
    return out


def _nan_keys(d: dict) -> dict:
    """``d`` with NaN in its keys spelt ``"nan"`` (NaN equals nothing, not even itself)."""
    def key(v):
        if isinstance(v, float) and v != v:
            return "nan"
        return tuple(key(x) for x in v) if isinstance(v, tuple) else v
    out: dict = {}
    for k, p in d.items():
        out[key(k)] = out.get(key(k), 0.0) + p
    return out


def compare(text: str, grounders=("auto", "prolog", "problog"), tol: float = 1e-9,
            stock_answer=None) -> list[str]:
    """The disagreements of nesybench's grounders with stock ProbLog on ``text`` (empty: all
    agree); ``stock_answer``: :func:`stock`'s answer where already known."""
    ref = stock(text) if stock_answer is None else stock_answer
    problems = []
    for g in grounders:
        got = ours(text, g)
        if isinstance(ref, Exception):
            if not isinstance(got, Exception):
                problems.append(f"{g}: stock ProbLog rejects the program ({type(ref).__name__}: "
                                f"{str(ref)[:120]}), {g} answers {got}")
            elif "\n" in str(got).strip():
                problems.append(f"{g}: the error is not one line: {got}")
            continue
        if isinstance(got, Exception) and any(d in str(got) for d in DELIBERATE):
            continue                   # a documented difference: an error where ProbLog computes
        if g == "prolog" and isinstance(got, Exception) and "does not handle" in str(got):
            continue                   # refused, named: --grounder prolog's documented answer
        want = _expected(text, ref)
        if want is None:
            continue                   # two answers share a label value: not comparable
        if isinstance(got, Exception):
            if _refused_unanswered(text, want, got):
                continue               # nesybench refuses a query with no answer at all
            problems.append(f"{g}: {type(got).__name__}: {got}; stock answers {ref}")
            continue
        for j, ((w, ground), o) in enumerate(zip(want, got)):
            if ground:
                o = {1: o.get(1, 0.0)}      # a ground query: the label is true or false
            w, o = _nan_keys(w), _nan_keys(o)
            for v in set(w) | set(o):
                a, b = o.get(v, 0.0), w.get(v, 0.0)
                if abs(a - b) > tol:
                    problems.append(f"{g}: query {j} value {v!r}: {a!r}, stock ProbLog {b!r}")
    return problems
