"""ProbLog's builtin table is the specification (``nesybench.nesy.program.builtin_table``).

Every builtin of ProbLog's engine has a row; a proven row is checked differentially against
ProbLog's own engine on generated arguments; a routed row makes ``auto`` ground with ProbLog's
engine and ``--grounder prolog`` refuse it by name; a refused row is refused in one line.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from nesybench.errors import NesyError
from nesybench.nesy.program import builtin_table as bt
from nesybench.nesy.program.budget import Budget
from nesybench.nesy.inference.marginals import marginals

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _problog_table() -> set[tuple[str, int]]:
    from problog.engine import DefaultEngine
    return {(s.rsplit("/", 1)[0], int(s.rsplit("/", 1)[1]))
            for s in DefaultEngine().get_builtins()}


def test_every_problog_builtin_has_a_row():
    missing = sorted(k for k in _problog_table() if bt.row(*k) is None)
    assert not missing, f"ProbLog builtins without a row in builtin_table: {missing}"
    # and the table names nothing ProbLog does not have (a stale row)
    stale = sorted(k for k in bt.ENGINE if k not in _problog_table())
    assert not stale, f"rows for builtins ProbLog does not define: {stale}"


def test_library_builtin_and_the_libraries_are_covered():
    from importlib.resources import files

    from nesybench.nesy.program.sandbox import LIBRARIES
    text = (files("problog") / "library" / "builtin.pl").read_text()
    assert "forall/2" in text and ("forall", 2) in bt.CONTROL
    for lib in ("lists", "apply"):
        assert LIBRARIES[lib], lib


def _swi_builtins() -> set[tuple[str, int]]:
    from nesybench.logic import prolog
    prolog.use("prolog/problog_ground.pl")
    rows = prolog.solutions("problog_ground:builtin(N, A)")
    return {(str(r["N"]), int(r["A"])) for r in rows}


def test_proven_engine_rows_are_builtins_of_the_swi_grounder():
    have = _swi_builtins()
    control = {("call", n) for n in range(1, 10)} | {("once", 1), ("findall", 3)}
    proven = {k for k, r in bt.ENGINE.items() if isinstance(r, bt.Proven)} - control
    assert proven <= have, sorted(proven - have)
    routed = {k for k, r in bt.ENGINE.items() if not isinstance(r, bt.Proven)}
    assert not (routed & have), sorted(routed & have)


def _outcome(text: str, grounder: str):
    try:
        res = marginals(text, budget=Budget(timeout=20, grounder=grounder))
    except NesyError as exc:
        if "does not handle" in exc.message:
            return ("unsupported",)
        return ("error",)
    return tuple(sorted((_canonical(a.atom), round(a.p, 9)) for a in res.answers))


def _canonical(atom: str) -> str:
    """An answer's text read back by ProbLog's reader and printed again, variables renamed in
    order: two printings of one term (ProbLog prints a list its =.. built as ``.(H, T)``)
    compare equal, two different terms do not."""
    import re

    from problog.program import PrologString
    try:
        (t,) = list(PrologString(f"nesy__answer({atom})."))
        text = str(t)
    except Exception:       # noqa: BLE001 - a text ProbLog's reader does not take back
        text = atom
    names: dict[str, str] = {}
    return re.sub(r"(?<![\w'])(_\w*|[A-Z]\w*)",
                  lambda m: names.setdefault(m.group(0), f"V{len(names)}"),
                  re.sub(r"\s+", "", text))


#: a call with an answer, where the generic ``name(X, p(X), L)`` has none
_ROUTED_CALLS = {
    "clause/2": "clause(p(L), true)", "clause/3": "clause(p(L), true, _)",
    **{f"{c}/1": f"{c}(p(L))" for c in ("try_call", "call_nc")},
    **{f"{c}/{n}": f"{c}(q{n - 1}{', 1' * (n - 2)}, L)" for c in ("try_call", "call_nc")
       for n in range(2, 10)},
    **{f"{t}/1": f"p(L), {t}(L)" for t in ("simple", "primitive")},
    **{f"{t}/1": f"p(L), \\+ {t}(L)" for t in ("rational", "dbreference")},
    "numbervars/2": "numbervars(f(_), L)", "numbervars/3": "numbervars(f(_, _), 3, L)",
    "varnumbers/2": "varnumbers(f(1), L)", "subsumes_chk/2": "p(L), subsumes_chk(_, L)",
    "nocache/2": "nocache(p, 1), p(L)",
}


@pytest.mark.parametrize("sig", sorted(bt.routed_names()))
def test_routed_builtins_go_to_problogs_grounder(sig):
    name, arity = sig.rsplit("/", 1)
    args = ", ".join(["X", "p(X)", "L"][:int(arity)])
    goal = _ROUTED_CALLS.get(sig, f"{name}({args})")
    helpers = "".join(f"q{n}({', '.join(['_'] * (n - 1) + ['L'])}) :- p(L).\n"
                      for n in range(1, 9))
    text = f"p(1). p(2).\n{helpers}r(L) :- {goal}.\nquery(r(L)).\n"
    from nesybench.nesy.program.program import ground
    gp = ground(text, networks=[], grounder="auto")
    assert gp.grounder == "problog"
    with pytest.raises(NesyError, match=sig.replace("/", "/")):
        ground(text, networks=[], grounder="prolog")


@pytest.mark.parametrize("sig", sorted(f"{n}/{a}" for (n, a), r in bt.ENGINE.items()
                                       if isinstance(r, bt.Refused) and n not in (".",)))
def test_refused_builtins_are_one_line_refusals(sig):
    name, arity = sig.rsplit("/", 1)
    args = ", ".join(f"A{i}" for i in range(int(arity)))
    goal = f"'{name}'({args})" if int(arity) else f"'{name}'"
    text = f"q :- {goal}.\nquery(q).\n"
    for g in ("auto", "problog"):
        with pytest.raises(NesyError) as info:
            marginals(text, budget=Budget(grounder=g))
        assert "\n" not in info.value.message


#: arguments as a program would write them: numbers (big, negative, float, special), atoms,
#: quoted atoms, strings, lists (proper, partial, with variables), compounds, fresh variables
ARGS = ["0", "1", "-2", "3", "2.5", "-0.0", "100000", "inf", "nan", "a", "b",
        "'A b'", "'[]'", "[]", "\"s\"", "[1, 2]", "[b, a, b]", "[X|T]", "[1|T]", "f(a)",
        "f(X)", "g(X, Y)", "1+2", "a-1", "X", "Y", "_", "(a, b)"]

PROVEN = sorted(k for k, r in bt.ENGINE.items() if isinstance(r, bt.Proven)
                and k[0] not in ("call", "once", "findall", "true", "fail", "false"))


@pytest.mark.parametrize("name,arity", PROVEN, ids=[f"{n}/{a}" for n, a in PROVEN])
@settings(max_examples=15, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],   # a failure shows its program
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_proven_builtin_equals_problogs(name, arity, data):
    args = [data.draw(st.sampled_from(ARGS), label=f"arg{i}") for i in range(arity)]
    vs = ", ".join(f"V{i}" for i in range(arity))
    call = f"'{name}'({vs})" if arity else f"'{name}'"
    text = f"r({vs}) :- {call}.\nquery(r({', '.join(args)})).\n"
    ours = _outcome(text, "prolog")
    if ours == ("unsupported",):
        return                      # routed for this program: auto grounds it with ProbLog
    assert ours == _outcome(text, "problog"), text


def test_every_refused_builtin_is_refused_by_decision():
    """No builtin of ProbLog's table is left as "not supported yet": a refusal is a decision
    (it reaches files, output or Python, or ProbLog's engine state), the rest is proven or
    routed."""
    decided = (bt._SAFETY, bt._ENGINE, "a list cell called as a goal", "as a goal (a flag")
    undecided = sorted(k for k, r in bt.ENGINE.items()
                       if isinstance(r, bt.Refused) and not r.reason.startswith(decided))
    assert not undecided, undecided
