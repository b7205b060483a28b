"""Every grounder against the language's reference, stock ProbLog 2.3: 500 generated
first-order programs (tests/problog_reference.py), the cases that used to differ (SWI-Prolog's
arithmetic, quoted atoms, anonymous query variables, ProbLog's standard order), atoms with
every special character read once, errors in one line with their place, and arithmetic that
no budget could stop bounded before it runs."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nesybench.errors import NesyError
from nesybench.nesy.program import program as program_module
from nesybench.nesy.program.budget import Budget
from nesybench.nesy.program.program import ground

sys.path.insert(0, str(Path(__file__).parent))
import problog_reference as reference  # noqa: E402

GROUNDERS = ("auto", "prolog", "problog")
#: 500 programs in 10 chunks (seeds 0-499; make fuzz runs 10,000 others)
CHUNKS = [range(lo, lo + 50) for lo in range(0, 500, 50)]


@pytest.mark.parametrize("seeds", CHUNKS, ids=lambda r: f"seeds{r.start}-{r.stop - 1}")
def test_generated_programs_agree_with_stock_problog(seeds):
    """Each grounder gives stock ProbLog's probability to 1e-9 for every answer of every
    query, or refuses the program in one line where ProbLog does (or where nesybench
    deliberately differs: see the guide)."""
    failures = {}
    for seed in seeds:
        problems = reference.compare(reference.program(seed))
        if problems:
            failures[seed] = problems[:3]
    assert not failures, failures


def _answers(text: str, grounder: str) -> list[dict]:
    got = reference.ours(text, grounder)
    if isinstance(got, Exception):
        raise got
    return got


# -- the meaning of arithmetic, terms and queries ------------------------------------------

@pytest.mark.parametrize("grounder", GROUNDERS)
@pytest.mark.parametrize("expr, value", [
    ("X // 2", -4),            # floor division
    ("X rem 3", 2),            # Python's % for rem and mod
    ("X mod 3", 2),
    ("X / 7", -1.0),           # / always gives a float
    ("X ** 2", 49),
    ("integer(X / 2)", -3),    # integer() truncates
    ("sign(X)", -1),
])
def test_arithmetic_is_problogs(grounder, expr, value):
    text = f"0.5::a(-7).\nr(Q) :- a(X), Q is {expr}.\nquery(r(Q)).\n"
    (got,) = _answers(text, grounder)
    assert got == {value: pytest.approx(0.5, abs=1e-15)}
    assert type(next(iter(got))) is type(value)
    assert not reference.compare(text, grounders=(grounder,))


@pytest.mark.parametrize("grounder", GROUNDERS)
def test_a_float_result_does_not_unify_with_an_integer(grounder):
    text = "0.5::a.\nq :- a, Y is 5 / 5, Y = 1.\nquery(q).\n"
    assert _answers(text, grounder)[0].get(1, 0.0) == 0.0
    assert not reference.compare(text, grounders=(grounder,))


@pytest.mark.parametrize("grounder", GROUNDERS)
def test_problogs_standard_order(grounder):
    """Numbers of different value by their text (ProbLog 2.3), strings before atoms."""
    text = ('0.5::c.\ns(S) :- c, sort([1.0, 10, 2, -7, "s", b, f(x), [1]], S).\n'
            "lt :- c, 10 @< 2.\nquery(s(S)).\nquery(lt).\n")
    assert not reference.compare(text, grounders=(grounder,))
    got = _answers(text, grounder)
    assert got[0] == {'[-7, 1.0, 10, 2, "s", b, f(x), [1]]': pytest.approx(0.5)}
    assert got[1][1] == pytest.approx(0.5)


def test_quoted_and_plain_atoms_are_problogs():
    """ProbLog keeps a quoted atom's quotes: 'abc' does not answer abc. The SWI-Prolog
    grounder leaves a program that writes one name both ways to ProbLog's (ProbLog tells the
    spellings apart in clause lookup, not in =/2), naming why."""
    text = "0.5::p('abc').\nq :- p(abc).\nquery(q).\n"
    for grounder in ("auto", "problog"):
        assert _answers(text, grounder)[0].get(1, 0.0) == 0.0
    bare = text.replace("query(q).\n", "")
    gp = ground(bare, ["q"])
    assert gp.grounder == "problog" and "'abc' and abc" in gp.grounder_note
    with pytest.raises(NesyError, match="name abc written as 'abc' and abc"):
        ground(bare, ["q"], grounder="prolog")
    text = "0.5::p('A b').\nq(X) :- p(X).\nquery(q(X)).\n"
    for grounder in GROUNDERS:
        assert _answers(text, grounder) == [{"A b": pytest.approx(0.5)}]


@pytest.mark.parametrize("grounder", GROUNDERS)
def test_anonymous_query_variables_are_answered(grounder):
    text = "0.3::p(a).\n0.6::p(b).\nquery(p(_)).\n"
    assert _answers(text, grounder) == [{"a": pytest.approx(0.3), "b": pytest.approx(0.6)}]
    assert not reference.compare(text, grounders=(grounder,))


# -- the program is read once ---------------------------------------------------------------

INJECTION = ("0.1::b.\n"
             "p(X) :- X = 'a\\\\'),det). c(b,77,true,fact(0.99)). %'.\n"
             "query(b).\n")


@pytest.mark.parametrize("grounder", GROUNDERS)
def test_a_quoted_atom_stays_one_atom(grounder):
    """ProbLog's tokenizer reads no escape in a quoted atom: the clause text inside it is
    part of the atom, in every grounder (P(b) = 0.1, not 0.991)."""
    assert reference.stock(INJECTION)
    (got,) = _answers(INJECTION, grounder)
    assert got[1] == pytest.approx(0.1, abs=1e-15)


@pytest.mark.parametrize("grounder", GROUNDERS)
def test_queries_from_the_command_line_take_the_same_path(grounder, tmp_path):
    prog = tmp_path / "p.pl"
    prog.write_text("0.1::b.\nq(X) :- X = 1.\n")
    trick = "q('a\\\\'),det). c(b,77,true,fact(0.99)). %')"
    out = subprocess.run([sys.executable, "-m", "nesybench", "nesy", "infer", str(prog),
                          "--grounder", grounder, "--query", "b", "--query", trick, "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)["results"]
    assert results[0]["p"] == pytest.approx(0.1, abs=1e-15)
    assert results[1]["p"] == 0.0


@pytest.mark.parametrize("grounder", GROUNDERS)
def test_an_nn_term_takes_the_same_path(grounder):
    text = ("0.1::b.\nnn(net, [X], Y, [a, 'z\\\\'),det). c(b,77,true,fact(0.99)). %']) :: "
            "d(X, Y).\nq(Y) :- d(i1, Y).\n")
    gp = ground(text, ["b", "q(Y)"], grounder=grounder)
    assert gp.grounder == ("problog" if grounder == "problog" else "prolog")
    assert gp.labels[1].values == ["a", "z\\\\'),det). c(b,77,true,fact(0.99)). %"]
    (fact,) = [c for c in gp.choices if c.key == "b"]
    assert fact.probs == pytest.approx([0.1, 0.9], abs=1e-15)
    assert [c.key for c in gp.choices] == ["net(i1)", "b"]


#: characters that a reader could take for syntax: quotes, backslashes, comment and clause
#: ends, operators, brackets, braces, whitespace and unicode
SPECIAL = "abcAB01_ '\\%.,;:-+*/()[]{}|!\"`~^&$#@=<>?éλ∀中\t"


@settings(max_examples=60, deadline=None)
@given(st.text(SPECIAL, min_size=1, max_size=12))
def test_atoms_with_special_characters_read_once(name):
    """An atom written with any of these characters means to every grounder what it means to
    stock ProbLog (or every grounder refuses the program, as ProbLog does)."""
    quoted = "'" + name.replace("'", "''") + "'"
    text = f"0.5::p({quoted}).\n0.25::p(x).\nq(X) :- p(X).\nquery(q(X)).\n"
    assert not reference.compare(text)


# -- errors: one line, with their place, never a fallback -------------------------------------

@pytest.mark.parametrize("grounder", GROUNDERS)
@pytest.mark.parametrize("text, line, why", [
    ("0.5::a.\nq(X) :- a, X is 7 ** (10 ** 9).\n", 2, "integer result too large"),
    ("0.5::a.\nq(X) :- a, X is 10.0 ** 400.\n", 2, "float overflow"),
    ("0.5::a.\nq(X) :- a, Y is 2 ** 50000, X is Y * Y.\n", 2, "integer result too large"),
    ("(7 ** (10 ** 9))::a.\nq(1) :- a.\n", 1, "integer result too large"),
    ("0.5::a.\nq(X) :- a, X is foo + 1.\n", 2, "foo"),
])
def test_program_errors_are_one_line_with_their_line(grounder, text, line, why):
    t0 = time.perf_counter()
    with pytest.raises(NesyError) as info:
        ground(text, ["q(X)"], budget=Budget(grounder=grounder, timeout=10))
    assert time.perf_counter() - t0 < 15
    msg = str(info.value)
    assert "\n" not in msg.strip() and why in msg and f"line {line}" in msg


@pytest.mark.parametrize("grounder", GROUNDERS)
def test_huge_powers_stop_at_once_on_the_command_line(grounder, tmp_path):
    prog = tmp_path / "p.pl"
    prog.write_text("0.5::a.\nq(X) :- a, X is 7 ** (10 ** 9).\nquery(q(X)).\n")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "nesybench", "nesy", "infer", str(prog),
                          "--grounder", grounder, "--timeout", "10"],
                         capture_output=True, text=True, timeout=60)
    assert time.perf_counter() - t0 < 15
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_auto_does_not_fall_back_on_a_program_error(monkeypatch):
    """A program's error is its error: auto does not retry with ProbLog's grounder (which
    would report it again, or not at all)."""
    def no_fallback(*a, **k):
        raise AssertionError("fell back to ProbLog's grounder")
    monkeypatch.setattr(program_module, "_ground_problog", no_fallback)
    with pytest.raises(NesyError, match="line 2"):
        ground("0.5::a.\nq(X) :- a, X is 1 / 0.\n", ["q(X)"])
    with pytest.raises(NesyError, match="outside its argument modes"):
        ground("0.5::a.\nq(X) :- a, X is Y + 1.\n", ["q(X)"])


# -- arithmetic computed in SWI-Prolog itself: the same numbers as ProbLog's table -----------

_NUMBER = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.integers(min_value=-2**60, max_value=2**60),
    st.sampled_from([0.1, 0.2, 1 / 3, 1e16 / 3, 5e-16, 1.0000000000000005, -0.0, 0, 1, -1,
                     2**53, 2**53 + 1, 1e300, 1e-300]))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["+", "-", "*", "/", "//", "mod", "rem", "min", "max"]), _NUMBER,
       _NUMBER)
def test_arithmetic_done_in_prolog_is_problogs(op, a, b):
    """The steps the SWI-Prolog grounder computes itself (integer operations, one IEEE
    operation on floats, the 15-decimal rounding of a stored float) give the number ProbLog's
    table gives, or an error where it does."""
    import janus_swi as janus
    from nesybench.nesy.program import arith
    ground("0.5::a.\nq :- a.\n", ["q"], grounder="prolog")     # the grounder is loaded
    want = arith.apply(op, [a, b])
    got = janus.query_once(
        "catch((_X =.. [Op, A, B], problog_ground:pg_eval(_X, _V0), "
        "problog_ground:stored_value(_V0, V)), _, V = error)", {"Op": op, "A": a, "B": b})
    if want[0] == 0:
        assert got["V"] == "error"
        return
    w = arith.result(want[1])
    assert type(got["V"]) is type(w)
    assert got["V"] == w or (w != w and got["V"] != got["V"])
