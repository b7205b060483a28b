"""The grounding engine has only the allow-listed builtins: whatever path a goal takes, no other
builtin of ProbLog's engine is ever reached.

The programs are generated: every builtin ProbLog's full engine registers, reached through every
call path a program has (a clause body, a goal built at run time and called, ``call/N`` with the
goal as a closure, nested meta-calls, ``findall``, ``maplist``/``include``/``foldl``,
``query``/``evidence`` statements in their allowed and refused forms, a query shape given from
outside). Each is compiled; a probe on ProbLog's engine records every builtin that is called.
Loading-type builtins get a payload that leaves a marker file when imported or consulted.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nesybench.errors import NesyError
from nesybench.nesy.inference.circuit import CompiledProgram
from nesybench.nesy.program.sandbox import ENGINE_BUILTINS, engine_builtin_names, safe_engine


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))


@pytest.fixture()
def reached(monkeypatch):
    """Signatures of every builtin the engine calls while the test runs."""
    from problog.engine import ClauseDBEngine
    seen: set[str] = set()
    original = ClauseDBEngine.get_builtin

    def probe(self, index):
        names = {v: k for k, v in self.get_builtins().items()}
        seen.add(names.get(index, f"#{index}"))
        return original(self, index)

    monkeypatch.setattr(ClauseDBEngine, "get_builtin", probe)
    return seen


@pytest.fixture()
def payload(tmp_path):
    marker = tmp_path / "MARKER"
    pay = tmp_path / "pay.py"
    pay.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    pl = tmp_path / "pay.pl"
    pl.write_text(f"ok.\n:- use_module('{pay}').\n")
    return pay, pl, marker


def _goal(sig: str, pay: Path, pl: Path) -> str:
    """A goal calling builtin ``sig``, with a payload where it loads files."""
    name, arity = sig.rsplit("/", 1)
    n = int(arity)
    args = ["x"] * n
    if "use_module" in name or name in ("_use_module",):
        args = [f"'{pay}'"] * n
        if name.startswith("_") and n >= 2:
            args[0] = "none"
    elif "consult" in name or name == ".":
        args = [f"'{pl}'"] * n
        if name.startswith("_") and n >= 2:
            args[0] = "none"
        if name == ".":
            args = [f"'{pl}'", "[]"]
    quoted = "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return f"{quoted}({', '.join(args)})" if n else quoted


#: every way a program can get a goal executed; {G} is the goal's text
PATHS = {
    "body": "a :- {G}.\nquery(a).",
    "variable": "a :- X = {G}, call(X).",
    "univ": "a :- X = {G}, X =.. L, Y =.. L, call(Y).",
    "bare variable": "a :- X = {G}, X.",
    "call/2 closure": "a :- call(call, {G}).",
    "call once": "a :- call(once, {G}).",
    "once": "a :- once({G}).",
    "negation": "a :- \\+ \\+ {G}.",
    "findall": "a :- findall(x, {G}, _).",
    "nested findall": "a :- findall(L, findall(x, {G}, L), _).",
    "forall": "a :- forall(true, {G}).",
    "maplist call": ":- use_module(library(apply)).\na :- maplist(call, [{G}]).",
    "maplist built": ":- use_module(library(apply)).\na :- X = maplist(call, [{G}]), call(X).",
    "include": ":- use_module(library(apply)).\na :- X = include(call, [{G}], _), \\+ \\+ X.",
    "foldl findall": ":- use_module(library(apply)).\nfindall(x, y).\n"
                     "a :- foldl(findall, [x], {G}, _).",
    "foldl built": ":- use_module(library(apply)).\nf(G, A, A) :- call(G).\n"
                   "a :- X = foldl(f, [{G}], 0, _), call(X).",
    "query": "b.\nquery({G}).",
    "query rule": "b.\nquery({G}) :- true.",
    "query probabilistic": "b.\n0.5::query({G}).",
    "evidence/1": "b.\nevidence({G}).\nquery(b).",
    "evidence/2": "b.\nevidence({G}, true).\nquery(b).",
    "evidence negated": "b.\nevidence(\\+ {G}).\nquery(b).",
}


def _attempt(text: str, queries=None):
    try:
        CompiledProgram.from_program(text, queries, use_cache=False)
    except NesyError:
        return "refused"
    return "accepted"


def test_the_engine_registers_only_the_allow_list():
    engine = safe_engine()
    assert set(engine.get_builtins()) <= ENGINE_BUILTINS
    dangerous = {"use_module/1", "consult/1", "_use_module/2", "writeln/1", "subquery/2",
                 "cmd_args/1", "call_in_scope/2", "subquery_in_scope/3"}
    assert dangerous <= engine_builtin_names(), "ProbLog's own table has these"
    assert not dangerous & set(engine.get_builtins())


@pytest.mark.parametrize("path", sorted(PATHS))
def test_no_path_reaches_a_builtin_outside_the_allow_list(path, reached, payload):
    pay, pl, marker = payload
    template = PATHS[path]
    outcomes = {}
    for sig in sorted(engine_builtin_names() - ENGINE_BUILTINS):
        goal = _goal(sig, pay, pl)
        text = template.replace("{G}", goal)
        if "query(" not in text:
            text += "\nquery(a)."
        outcomes[sig] = _attempt(text)
    bad = reached - ENGINE_BUILTINS
    assert not bad, f"path {path!r} reached {sorted(bad)}"
    assert not marker.exists(), f"path {path!r} ran the payload"
    assert set(outcomes.values()) == {"refused"}, \
        [s for s, o in outcomes.items() if o != "refused"][:5]


def test_a_query_shape_from_outside_cannot_name_a_builtin(reached, payload):
    pay, pl, marker = payload
    for sig in sorted(engine_builtin_names() - ENGINE_BUILTINS):
        assert _attempt("b.\n", [_goal(sig, pay, pl)]) == "refused", sig
    assert not reached - ENGINE_BUILTINS
    assert not marker.exists()


# -- the audit's reproducers, each through the API and the CLI -------------------------------
REPRODUCERS = [
    "a. query(use_module('{pay}')).",
    "a. evidence(use_module('{pay}'), true). query(a).",
    "a. evidence(use_module('{pay}')). query(a).",
    "a. query(use_module('{pay}')) :- true.",
    "a. 0.5::query(use_module('{pay}')).",
    "a. query(consult('{pl}')).",
    "a. query(writeln(x)).",
    "a. query(debugprint(x)).",
    ":- use_module(library(apply)).\nb :- G = maplist(use_module, ['{pay}']), call(G).\nquery(b).",
    ":- use_module(library(apply)).\nb :- G = include(use_module, ['{pay}'], _), \\+ \\+ G.\n"
    "query(b).",
    ":- use_module(library(apply)).\nb :- G = foldl(use_module, ['{pay}'], x, _), call(G).\n"
    "query(b).",
    "b :- call(call, use_module('{pay}')).\nquery(b).",
    "b :- call(once, use_module('{pay}')).\nquery(b).",
    ":- use_module(library(apply)).\nb :- maplist(call, [use_module('{pay}')]).\nquery(b).",
    ":- use_module(library(apply)).\nfindall(x, y).\nb :- foldl(findall, [x], use_module('{pay}'), _).\n"
    "query(b).",
    ":- use_module(library(apply)).\nall_or_none(x, y).\n"
    "b :- foldl(all_or_none, [x], use_module('{pay}'), _).\nquery(b).",
]


@pytest.mark.parametrize("text", REPRODUCERS)
def test_reproducers_are_refused_and_run_nothing(text, payload, reached):
    pay, pl, marker = payload
    program = text.format(pay=pay, pl=pl)
    with pytest.raises(NesyError, match="program refused"):
        CompiledProgram.from_program(program, None, use_cache=False)
    assert not marker.exists()
    assert not reached - ENGINE_BUILTINS


def _cli(capsys, *args):
    from nesybench.cli import main
    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out + cap.err


def test_reproducers_exit_2_with_one_line_on_the_cli(tmp_path, payload, capsys):
    pay, pl, marker = payload
    for i, text in enumerate(REPRODUCERS):
        prog = tmp_path / f"p{i}.pl"
        prog.write_text(text.format(pay=pay, pl=pl) + "\n")
        rc, out = _cli(capsys, "nesy", "infer", prog)
        assert rc == 2, (text, out)
        lines = [ln for ln in out.splitlines() if ln.strip()]
        assert len(lines) == 1 and "program refused" in lines[0], out
    assert not marker.exists()


def test_anonymous_result_of_findall_grounds():
    # ProbLog's clause compiler crashed on a bare _ as findall's result (a traceback)
    prog = CompiledProgram.from_program("0.3::b(1). 0.4::b(2).\na :- findall(x, b(_), _).\n"
                                        "c :- \\+ b(_).\nquery(a). query(c).", None,
                                        use_cache=False)
    a, c = [m[0].tolist() for m in prog.label_marginals([])]
    assert a[1] == pytest.approx(1.0, abs=1e-15)
    assert c[1] == pytest.approx(0.7 * 0.6, abs=1e-15)


def test_control_constructs_built_at_run_time_still_run():
    prog = CompiledProgram.from_program("0.5::h. 0.4::t.\nq :- G = (h, t), once(G).\n"
                                        "r :- G = (h ; t), call(G).\ns :- G = (\\+ h), call(G).\n"
                                        "query(q). query(r). query(s).", None, use_cache=False)
    got = [float(m[0, 1]) for m in prog.label_marginals([])]
    assert got == pytest.approx([0.2, 0.7, 0.5], abs=1e-15)


# -- impossible evidence ---------------------------------------------------------------------
def test_evidence_impossible_through_a_zero_or_one_weight_is_an_error():
    prog = CompiledProgram.from_program("1.0::f0. 0.5::g. r2 :- \\+ f0, g. evidence(r2). "
                                        "query(g).", None, use_cache=False)
    with pytest.raises(NesyError, match=r"evidence r2 is impossible"):
        prog.label_marginals([])


def test_evidence_impossible_through_a_neural_input_names_the_examples():
    prog = CompiledProgram.from_program(
        "nn(net,[X],Y,[0,1,2]) :: digit(X,Y).\n0.5::g.\nq :- g.\n"
        "evidence(digit(a,1), true).\nquery(q).", None, networks=["net"], use_cache=False)
    p = torch.tensor([[0.5, 0.0, 0.5], [0.2, 0.3, 0.5], [0.1, 0.0, 0.9]], dtype=torch.float64)
    with pytest.raises(NesyError, match=r"impossible .* for 2 of 3 example\(s\) \(rows 0, 2\)"):
        prog.label_marginals([p])
    with pytest.raises(NesyError, match="impossible"):
        prog(concept_probs=[p], labels=torch.zeros(3, dtype=torch.long))
    with pytest.raises(NesyError, match="impossible"):        # log-probabilities in
        prog(concept_probs=[torch.log(p)], labels=torch.zeros(3, dtype=torch.long),
             log_input=True)
    ok = prog.label_marginals([p[1:2]])[0]
    assert ok[0].tolist() == pytest.approx([0.5, 0.5], abs=1e-15)
    # a tiny but possible probability is conditioned on exactly, not refused
    tiny = torch.tensor([[0.5, 1e-300, 0.5 - 1e-300]], dtype=torch.float64)
    assert prog.label_marginals([tiny])[0][0].tolist() == pytest.approx([0.5, 0.5], abs=1e-12)


def test_impossible_evidence_is_one_line_exit_2_on_the_cli(tmp_path, capsys):
    prog = tmp_path / "imp.pl"
    prog.write_text("1.0::f0. 0.5::g. r2 :- \\+ f0, g. evidence(r2). query(g).\n")
    rc, out = _cli(capsys, "nesy", "infer", prog)
    assert rc == 2, out
    assert "impossible" in out and "nan" not in out and "Traceback" not in out
    assert sum("nesybench: error:" in ln for ln in out.splitlines()) == 1, out


# -- learnable parameters --------------------------------------------------------------------
def test_learnable_facts_are_exact_in_float64_and_keep_their_name():
    prog = CompiledProgram.from_program("t(0.1)::noisy.\nq :- noisy.\nquery(q).", None,
                                        use_cache=False)
    assert prog.learned_probabilities() == {"noisy": pytest.approx(0.1, abs=1e-15)}
    assert float(prog.label_marginals([])[0][0, 1]) == pytest.approx(0.1, abs=1e-15)
    prog = CompiledProgram.from_program("t(0.1)::noisy.\nq :- noisy.\nq :- q.\nquery(q).",
                                        None, use_cache=False)                  # cyclic path
    assert list(prog.learned_probabilities()) == ["noisy"]


def test_noisy_addition_agrees_with_problog_to_1e12():
    from problog import get_evaluatable
    from problog.program import PrologString
    uniform = "; ".join(f"1/19::uniform(X,Y,{v})" for v in range(19))
    digits = [[0.05] * 10 for _ in range(2)]
    digits[0][3], digits[1][4] = 0.55, 0.55

    def ad(x, ps):
        return "; ".join(f"{p!r}::digit({x},{v})" for v, p in enumerate(ps)) + "."
    rules = (f"t(0.1)::noisy.\n{uniform}.\naddition_noisy(X,Y,Z) :- noisy, uniform(X,Y,Z).\n"
             "addition_noisy(X,Y,Z) :- \\+noisy, digit(X,N1), digit(Y,N2), Z is N1+N2.\n")
    ours = CompiledProgram.from_program(
        "nn(mnist_net,[X],Y,[0,1,2,3,4,5,6,7,8,9]) :: digit(X,Y).\n" + rules,
        ["addition_noisy(a, b, Z)"], networks=["mnist_net"], concept_order=["a", "b"],
        use_cache=False)
    got = ours.label_marginals([torch.tensor([d], dtype=torch.float64) for d in digits])[0][0]
    text = (rules.replace("t(0.1)::noisy", "0.1::noisy") + ad("a", digits[0]) + "\n"
            + ad("b", digits[1]) + "\nquery(addition_noisy(a, b, Z)).\n")
    ref = get_evaluatable().create_from(PrologString(text)).evaluate()
    want = {int(str(k).rstrip(")").rsplit(",", 1)[1]): v for k, v in ref.items()}
    for value, p in zip(ours.label_domains[0], got.tolist()):
        assert p == pytest.approx(want[value], abs=1e-12), value


def test_an_unknown_network_is_refused_when_the_networks_are_given():
    text = "nn('os.system', [X], Y, [0, 1]) :: d(X, Y).\nq(X) :- d(X, 1).\n"
    with pytest.raises(NesyError, match=r"unknown network 'os\.system' \(known: digit_net\)"):
        CompiledProgram.from_program(text, ["q(a)"], networks=["digit_net"], use_cache=False)


def test_grounding_errors_name_the_calling_goals_line_and_column():
    """ProbLog's engine names the goal's position; the SWI-Prolog grounder (the default)
    names the clause's (its `:-`), where the program crossed to Prolog as data."""
    from nesybench.nesy.program.budget import Budget
    text = "b.\na :- b,\n     X is foo + 1.\nquery(a)."
    with pytest.raises(NesyError) as err:
        CompiledProgram.from_program(text, None, use_cache=False,
                                     budget=Budget(grounder="problog"))
    assert (err.value.line, err.value.column) == (3, 8)
    assert "Unknown function 'foo'/0" in err.value.message
    with pytest.raises(NesyError) as err:
        CompiledProgram.from_program(text, None, use_cache=False)
    assert (err.value.line, err.value.column) == (2, 3)
    assert "unknown arithmetic function foo/0" in err.value.message
    # an error inside a library clause has no position in the user's text
    with pytest.raises(NesyError) as err:
        CompiledProgram.from_program(":- use_module(library(lists)).\na :- sum_list([x], S).\n"
                                     "query(a).", None, use_cache=False)
    assert err.value.line is None
