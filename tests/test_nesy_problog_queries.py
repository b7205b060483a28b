"""ProbLog's queries as ProbLog answers them, under every grounder, from our own programs for
each construct: non-ground queries (one marginal per answer, printed as ProbLog prints the
atom), a query with no answer, query rules, forall/2, once/1, compare/3, evidence on an atom
with variables, instantiation tests, and the process bounds of ``nesy infer``.

Each expected value is ProbLog's own (stock ``problog``, its SDD pipeline, in this process).
"""
from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest

from nesybench.errors import NesyError
from nesybench.nesy.program.budget import Budget
from nesybench.nesy.inference.marginals import marginals

GROUNDERS = ("auto", "prolog", "problog")

PROGRAMS = {
    "numbers as answers": "0.3::a. 0.6::b. r(0) :- a. r(1) :- b. query(r(V)).",
    "independent answers": "0.5::p(X) :- between(1, 24, X). query(p(X)).",
    "operator answers": ":- use_module(library(lists)).\n"
                        "r(X) :- member(X, [1-0, (a, b), f(- a), 3 mod 2, (a; b)]).\n"
                        "query(r(X)).",
    "no answer": "0.3::a(1). f(L) :- findall(A, a(A), L). query(f([X, Y])). query(f([a])).",
    "query rule": "0.2::appears(i2, 2). 0.3::appears(i3, 3). interested(a1, i2).\n"
                  "bid(I, T, A) :- appears(I, T), interested(A, I).\n"
                  "query(bid(I, T, A)) :- appears(I, T), interested(A, I).",
    "query rule with a recursive predicate":
        "0.3::p(1). 0.2::p(2). 0.5::p(X) :- X > 2, Y is X - 1, p(Y).\n"
        "a(1). a(3). a(4).\nquery(p(X)) :- a(X).",
    "forall": ":- use_module(library(lists)).\neven(X) :- X mod 2 =:= 0.\n"
              "0.4::w.\ne(L) :- w, forall(member(E, L), even(E)).\n"
              "a :- e([2, 4]). b :- e([1, 2]). query(a). query(b).",
    "once is a plain call": "d(1). d(2). 0.5::r(X) :- once(d(X)). query(r(X)).",
    "compare with quoted order atoms": "c1 :- compare('<', a, b).\nc2(X) :- compare(X, 2, 1).\n"
                                       "query(c1). query(c2(_)).",
    "evidence on an atom with variables": "0.3::f(1). 0.6::f(2). g(X) :- f(X).\n"
                                          "evidence(g(X)). query(f(1)).",
    "a program without random choices": "a.\nb :- a, \\+ c.\nc :- fail.\nd :- \\+ b.\n"
                                        "e :- q(1).\nq(X) :- X > 0.\n"
                                        "query(a). query(b). query(c). query(d). query(e).",
    "a non-finite float compared with its name": "0.5::a.\nt :- a, X is inf, X == inf.\n"
                                                 "query(t).",
    "instantiation test in a probabilistic predicate":
        "0.1::p1.\np(A) :- p1, A = unknown.\nfill(A) :- A == unknown.\n"
        "fill(A) :- p(A), fill(A).\nq :- fill(_A).\nquery(q).",

    'library(aggregate) over probabilistic answers':
        ':- use_module(library(aggregate)).\n'
        '0.3::score(a, 3). 0.6::score(b, 5). 0.5::score(c, 4).\n'
        'team(a, red). team(b, red). team(c, blue).\n'
        'total(T, sum<S>) :- score(P, S), team(P, T).\n'
        'best(max<S>) :- score(_, S).\n'
        'worst(min<S>) :- score(_, S).\n'
        'mean(avg<S>) :- score(_, S).\n'
        'query(total(T, S)). query(best(B)). query(worst(W)). query(mean(M)).',
    "library(collect) with the program's own collector":
        ':- use_module(library(collect)).\n'
        '0.4::likes(ann, tea). 0.7::likes(bob, tea). likes(ann, jam).\n'
        'collect_count(CB, G, N) :- collect_list(CB, G, _, L), length(L, N).\n'
        'fans(T, L) :- likes(P, T) => T/list(P, L).\n'
        'n_fans(T, N) :- likes(P, T) => T/count(N).\n'
        'query(fans(tea, L)). query(n_fans(T, N)).',
    'library(cut) takes the first rule that succeeds':
        ':- use_module(library(cut)).\n'
        '0.4::rain. 0.7::wind.\n'
        'weather(1, storm) :- rain, wind.\n'
        'weather(2, wet) :- rain.\n'
        'weather(3, dry).\n'
        'forecast(W) :- cut(weather(W)).\n'
        'which(I) :- cut(weather(_), I).\n'
        'query(forecast(W)). query(which(I)).',
    'library(scope) over scoped facts':
        ':- use_module(library(scope)).\n'
        '0.3::rain.\n'
        'morning:wet :- rain.\n'
        'evening:wet :- morning:wet.\n'
        'evening:cold.\n'
        'query(evening:wet). query([morning, evening]:cold). query(evening:(wet, cold)).',
    'library(string)':
        ':- use_module(library(string)).\n'
        '0.5::p(ab). 0.2::p(x).\n'
        'r(S) :- p(X), concat([X, cd], S).\n'
        "j(S) :- p(X), join('-', [X, y], S).\n"
        'query(r(S)). query(j(S)).',
    "clause/2 and clause/3 read the program's clauses":
        '0.3::b. a :- b. c :- d, e.\n'
        '0.6::f(1).\n'
        'body_of(H, B) :- clause(H, B).\n'
        'prob_of(H, P) :- clause(H, true, P).\n'
        'query(body_of(a, B)). query(body_of(c, B)). query(prob_of(f(X), P)).',
    "a program's own concat/2 without library(string)":
        'concat(X, Y) :- Y = got(X).\n'
        '0.3::p.\n'
        'r(Y) :- p, concat(ab, Y).\n'
        'query(r(Y)).',
    'an undefined predicate in a clause that is never called':
        'a :- not_defined_anywhere.\n'
        '0.4::q.\n'
        'query(q).',
    'try_call fails on an undefined goal':
        '0.5::p.\n'
        'r :- try_call(nothere).\n'
        's :- try_call(p).\n'
        'u :- try_call((p, nothere)).\n'
        'query(r). query(s). query(u).',
}


def _problog(text: str) -> dict:
    from problog import get_evaluatable
    from problog.program import PrologString
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = get_evaluatable("sdd").create_from(PrologString(text)).evaluate()
    return {_canon(str(k)): float(v) for k, v in res.items()}


def _canon(atom: str) -> str:
    import re
    names: dict[str, str] = {}
    return re.sub(r"(?<![\w'])(_\w*|[A-Z]\w*)",
                  lambda m: names.setdefault(m.group(0), f"V{len(names)}"),
                  re.sub(r"\s+", "", atom))


@pytest.mark.parametrize("grounder", GROUNDERS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_answers_are_problogs(name, grounder):
    text = PROGRAMS[name]
    want = _problog(text)
    try:
        res = marginals(text, budget=Budget(grounder=grounder))
    except NesyError as exc:
        # only the SWI-Prolog grounder may decline, naming the construct, never auto
        assert grounder == "prolog" and "does not handle" in exc.message, exc.message
        return
    got = {_canon(a.atom): a.p for a in res.answers}
    assert set(got) == set(want), (got, want)
    for k, p in want.items():
        assert got[k] == pytest.approx(p, abs=1e-9), k


def test_instantiation_tests_route_auto_to_problogs_grounder():
    res = marginals(PROGRAMS["instantiation test in a probabilistic predicate"])
    assert res.stats["grounder"] == "problog"
    assert "testing whether a head argument is bound (==/2)" in res.stats["grounder_note"]


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "nesybench", "nesy", "infer", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_cli_prints_each_answer_as_problog_does(tmp_path):
    prog = tmp_path / "r.pl"
    prog.write_text(PROGRAMS["numbers as answers"])
    out = _cli(str(prog))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["r(0): 0.3", "r(1): 0.6"]
    res = json.loads(_cli(str(prog), "--json").stdout)
    assert [(r["atom"], r["query"], r["value"]) for r in res["results"]] == \
        [("r(0)", "r(V)", 0), ("r(1)", "r(V)", 1)]


@pytest.mark.parametrize("program,args", [
    ("r(N) :- length(L, 100000000), length(L, N).\nquery(r(_)).\n",
     ["--grounder", "problog", "--max-memory", "300"]),
    ("nat(0).\nnat(s(N)) :- nat(N).\n0.5::p(X) :- nat(X).\nquery(p(_)).\n",
     ["--max-memory", "300", "--timeout", "5"]),
    # the approximate methods ground in the same bounded child
    ("r(N) :- length(L, 100000000), length(L, N).\nquery(r(_)).\n",
     ["--grounder", "problog", "--max-memory", "300", "--inference", "sample:10"]),
    ("r(N) :- length(L, 100000000), length(L, N).\nquery(r(_)).\n",
     ["--grounder", "problog", "--max-memory", "300", "--inference", "topk:2"]),
    ("nat(0).\nnat(s(N)) :- nat(N).\n0.5::p(X) :- nat(X).\nquery(p(_)).\n",
     ["--max-memory", "300", "--timeout", "5", "--inference", "sample:10"]),
])
def test_runaway_programs_end_in_one_line_within_their_budget(tmp_path, program, args):
    prog = tmp_path / "p.pl"
    prog.write_text(program)
    out = _cli(str(prog), *args)
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr


def test_the_child_address_space_is_bounded(tmp_path):
    """The child that grounds and compiles cannot grow past --max-memory: a program that
    allocates a list of 10^8 cells is stopped by the allocator, not by a check of ours."""
    prog = tmp_path / "p.pl"
    prog.write_text("r(N) :- length(L, 100000000), length(L, N).\nquery(r(_)).\n")
    out = _cli(str(prog), "--grounder", "problog", "--max-memory", "200")
    assert out.returncode == 2
    assert "MemoryError" in out.stderr or "--max-memory" in out.stderr, out.stderr


@pytest.mark.parametrize("grounder", ["auto", "problog"])
def test_generated_programs_end_in_an_answer_or_one_line_never_a_traceback(grounder):
    """The generated first-order programs of tests/problog_reference.py (lists, arithmetic,
    standard order, cycles, negation, findall, evidence, non-ground queries) under ProbLog's
    grounder and auto: each is answered or refused with a NesyError (exit 0 or 2), never
    another exception (a traceback, exit 1)."""
    import problog_reference as reference
    for seed in range(60):
        text = reference.program(seed)
        try:
            marginals(text, budget=Budget(grounder=grounder, timeout=20))
        except NesyError:
            pass


@pytest.mark.parametrize("grounder", GROUNDERS)
def test_unknown_fail_makes_an_undefined_call_fail(grounder):
    text = ":- unknown(fail).\n0.5::b.\np :- a.\nq :- b, \\+ a.\nquery(p). query(q). query(a).\n"
    got = {a.atom: a.p for a in marginals(text, budget=Budget(grounder=grounder)).answers}
    assert got == _problog(text) == {"p": 0.0, "q": 0.5, "a": 0.0}
    with pytest.raises(NesyError, match="a/0 was called, and it is neither defined"):
        marginals(":- unknown(error).\np :- a.\nquery(p).\n")


def test_try_call_with_extra_arguments_calls_like_call_n():
    """ProbLog 2.3's try_call/2..9 raise a Python TypeError (its try_calln passes the extra
    arguments as one); nesybench's behave as call/N does, failing on an undefined goal."""
    text = ("0.5::p(1).\nr(X) :- try_call(p, X).\ns :- try_call(nothere, 1).\n"
            "query(r(X)). query(s).\n")
    for grounder in ("auto", "problog"):
        got = {a.atom: a.p for a in marginals(text, budget=Budget(grounder=grounder)).answers}
        assert got == {"r(1)": pytest.approx(0.5, abs=1e-12), "s": 0.0}


@pytest.mark.parametrize("lib", ["aggregate", "collect", "cut", "scope", "string"])
def test_libraries_of_problog_are_routed_and_named_under_the_prolog_grounder(lib):
    name = {"aggregate": "library(aggregate) over probabilistic answers",
            "collect": "library(collect) with the program's own collector",
            "cut": "library(cut) takes the first rule that succeeds",
            "scope": "library(scope) over scoped facts", "string": "library(string)"}[lib]
    res = marginals(PROGRAMS[name])
    assert res.stats["grounder"] == "problog"
    with pytest.raises(NesyError, match="does not handle .*; ground this program with "
                                        "--grounder problog"):
        marginals(PROGRAMS[name], budget=Budget(grounder="prolog"))


def test_an_undefined_call_is_an_error_when_called_and_side_effects_when_read():
    # as in ProbLog: a clause that is never called may name anything; a called one is refused
    assert [a.p for a in marginals("a :- b.\nq.\nquery(q).\n").answers] == [1.0]
    with pytest.raises(NesyError, match=r"b/0 was called, and it is neither defined"):
        marginals("a :- b.\nq :- a.\nquery(q).\n")
    # a Prolog builtin with side effects is refused when the program is read, with its place
    with pytest.raises(NesyError, match=r"line 1, column 6: .*assertz/1 is a Prolog builtin "
                                        "with side effects"):
        marginals("a :- assertz(b).\nq.\nquery(q).\n")


def test_a_control_construct_called_with_extra_arguments_is_one_line():
    """call((a ; b), x) calls ';'/3, which nothing defines (ProbLog itself ends in a Python
    TypeError): one line under every grounder, never a traceback; try_call fails on it."""
    for grounder in GROUNDERS:
        with pytest.raises(NesyError) as info:
            marginals("0.5::a.\nr :- call((a ; b), x).\nquery(r).\n",
                      budget=Budget(grounder=grounder))
        assert "\n" not in info.value.message
    text = "0.5::a.\ns :- try_call((a ; b), x).\nt :- a, try_call((a, a)).\nquery(s). query(t).\n"
    for grounder in ("auto", "problog"):
        got = {a.atom: a.p for a in marginals(text, budget=Budget(grounder=grounder)).answers}
        assert got == {"s": 0.0, "t": 0.0}
