"""The two logic bridges: janus (SWI-Prolog) and clingo."""
import pytest

from nesybench.errors import PrologError, UnsafeRuleError
from nesybench.logic import asp, prolog


def test_once_and_solutions():
    assert prolog.once("X is 6 * 7") == {"X": 42}
    assert prolog.once("member(x, [a, b])") is None
    assert prolog.solutions("member(X, [1, 2, 3])") == [{"X": 1}, {"X": 2}, {"X": 3}]


def test_prolog_exception_becomes_python_error():
    with pytest.raises(PrologError):
        prolog.once("atom_length(X, _)")


def test_load_rules_defines_predicates():
    preds = prolog.load_rules("bridge_t1", "p(a).\np(b).\nq(X) :- p(X), X \\== a.\n", [])
    assert preds == ["p/1", "q/1"]
    assert prolog.solutions("bridge_t1:q(X)") == [{"X": "b"}]
    # reloading wipes the old definition
    prolog.load_rules("bridge_t1", "p(c).\n", [])
    assert prolog.solutions("bridge_t1:p(X)") == [{"X": "c"}]
    assert prolog.once("catch(bridge_t1:q(_), _, fail)") is None


def test_syntax_error_names_file_and_line():
    with pytest.raises(PrologError) as info:
        prolog.load_rules("bridge_t2", "ok(1).\nbad(X :- x.\n", [], source="t.yaml",
                          line_offset=10, task="0 demo", field="positive_rule")
    err = info.value
    assert err.line == 12 and err.file == "t.yaml" and err.field == "positive_rule"
    assert "syntax" in str(err)


@pytest.mark.parametrize("body", ["shell(X)", "open(X, write, _)", "assertz(X)",
                                  "call(X)", "delete_file(X)", "halt"])
def test_sandbox_refuses_unsafe_calls(body):
    with pytest.raises(UnsafeRuleError):
        prolog.load_rules("bridge_t3", f"valid(X) :- atom(X), {body}.\n", [])
    # nothing of the refused program is left behind
    assert prolog.once("catch(bridge_t3:valid(a), _, fail)") is None


def test_directives_are_refused():
    with pytest.raises(UnsafeRuleError):
        prolog.load_rules("bridge_t4", ":- initialization(halt).\n", [])


def test_clingo_solve_and_count(tmp_path):
    lp = tmp_path / "maps.lp"
    lp.write_text("{ map(V, W) : val(W) } = 1 :- val(V).\n#show map/2.\n")
    res = asp.solve([lp], [("val", i) for i in range(3)])
    assert res.count == 27 and res.exhausted and len(res.models) == 27
    assert all(len(m) == 3 for m in res.models)
    assert asp.count([lp], [("val", "a"), ("val", "b")]) == 4


def test_clingo_missing_program(tmp_path):
    from nesybench.errors import NesyError
    with pytest.raises(NesyError):
        asp.solve([tmp_path / "nope.lp"])


def test_clingo_models_with_mixed_argument_types(tmp_path):
    lp = tmp_path / "mixed.lp"
    lp.write_text("m(1, 2). m(1, f(1)). m(a, \"s\").\n#show m/2.\n")
    res = asp.solve([lp])
    assert res.count == 1 and len(res.models[0]) == 3


def test_fact_symbols_from_the_memo_are_the_plain_symbols():
    """The batch path (``fact_symbol``) builds each fact from memoised arguments; it must give
    exactly ``symbol``'s terms, with True/1 and False/0 apart (equal as dict keys)."""
    from nesybench.logic.asp import fact_symbol, symbol

    facts = [("c", 0, ("color", 1), "red"), ("c", 1, ("color", 1), True), ("c", 1, 1, 1),
             ("c", 2, False, 0), ("c", 3, "Not An Atom", ("t", 1, "x")), ("Up", 1, 2),
             ("tab", 5, "y", (1, True)), ("c", 4, (1, 2), (True, 2))]
    memo: dict = {}
    for _ in range(2):                                   # the second pass reads the memo
        for f in facts:
            assert fact_symbol(f, memo) == symbol(f), f
    assert str(fact_symbol(("c", 1, ("color", 1), True), memo)) == "c(1,color(1),true)"
    assert str(fact_symbol(("c", 1, 1, 1), memo)) == "c(1,1,1)"
