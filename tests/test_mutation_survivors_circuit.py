"""The compiled-circuit semantics (``nesy/inference/circuit.py``) where the engine tests did not look:
label values that are tuples (through the circuit cache too), several learnable facts,
learnable probabilities stated as 0 or 1, evidence with several labels in both semirings,
the label index's bounds, log inputs in the real semiring, the compile statistics and the
file named by a budget error. Each value is checked against an independent computation:
worlds enumerated by hand, derivatives written out, ProbLog's own inference."""
from __future__ import annotations

import itertools
import math
import time

import pytest
import torch

from nesybench.errors import BudgetExceeded, NesyError
from nesybench.nesy.program.budget import Budget
from nesybench.nesy.inference.circuit import CompiledProgram
from nesybench.nesy.program.program import ground


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))


def _probs(b, k, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(b, k, generator=g, dtype=torch.float64), 1)


# -- label values ------------------------------------------------------------------------------
PAIR = "nn(net, [X], Y, [0, 1, 2]) :: d(X, Y).\npair(X, A, B) :- d(X, A), B is A mod 2.\n"


def test_tuple_label_values_fresh_and_from_the_cache():
    """A query with two free variables has tuple values; the cache stores them as JSON and
    must give back the same tuples (and the same probabilities)."""
    fresh = CompiledProgram.from_program(PAIR, "pair(x, A, B)")
    cached = CompiledProgram.from_program(PAIR, "pair(x, A, B)")
    assert not fresh.stats["cache_hit"] and cached.stats["cache_hit"]
    for prog in (fresh, cached):
        assert prog.label_domains == [[(0, 0), (1, 1), (2, 0)]]
        assert all(isinstance(v, tuple) for v in prog.label_domains[0])
        p = _probs(2, 3, 5)
        (m,) = prog.label_marginals([p])
        assert torch.allclose(m, p, atol=1e-12)        # P(pair = (a, a mod 2)) = P(d = a)
        assert prog.label_index([(2, 0), (1, 1)]).tolist() == [[2], [1]]


# -- learnable facts and disjunctions ---------------------------------------------------------
@pytest.mark.parametrize("semiring", ["log", "real"])
def test_two_learnable_facts_values_and_gradients(semiring):
    """P(q) = f (1 - g) for ``q :- f, \\+ g``; the derivatives in the logits by hand."""
    text = "t(0.3)::f. t(0.6)::g.\nq :- f, \\+ g.\nquery(q).\n"
    prog = CompiledProgram.from_program(text, None, use_cache=False, semiring=semiring)
    assert prog.learnable_facts == ["f", "g"]
    m = prog.label_marginals([])[0].detach()
    assert prog.label_domains == [[0, 1]]
    assert float(m[0, 1]) == pytest.approx(0.3 * 0.4, abs=1e-6)
    assert float(m[0, 0]) == pytest.approx(1 - 0.3 * 0.4, abs=1e-6)
    lp = prog([], torch.tensor([[1]]))
    lp.sum().backward()
    f, g = torch.sigmoid(prog.fact_logits.detach().double()).tolist()
    # log P = log f + log(1 - g): d/dθf = 1 - f, d/dθg = -g
    assert prog.fact_logits.grad.double().tolist() == pytest.approx([1 - f, -g], abs=1e-5)


@pytest.mark.parametrize("semiring", ["log", "real"])
def test_learnable_probabilities_stated_as_0_or_1_start_inside(semiring):
    """``t(1.0)``, ``t(0.0)`` facts and a disjunction head ``t(0.0)`` start 1e-6 inside (0, 1):
    finite logits and finite gradients, so that training can move them."""
    text = "t(1.0)::f. t(0.0)::g.\nq :- f.\nq :- g.\nquery(q).\n"
    prog = CompiledProgram.from_program(text, None, use_cache=False, semiring=semiring)
    assert torch.isfinite(prog.fact_logits).all()
    f, g = torch.sigmoid(prog.fact_logits.detach().double()).tolist()
    assert 1 - f == pytest.approx(1e-6, rel=0.05) and g == pytest.approx(1e-6, rel=0.05)
    m = prog.label_marginals([])[0].detach()
    assert float(m[0, 0]) == pytest.approx((1 - f) * (1 - g), rel=1e-3)
    lp = prog([], torch.tensor([[0]]))
    lp.sum().backward()
    assert torch.isfinite(prog.fact_logits.grad).all()
    ad = CompiledProgram.from_program("t(0.0)::c(a); t(1.0)::c(b).\nquery(c(X)).\n", None,
                                      use_cache=False, semiring=semiring)
    m = ad.label_marginals([])[0].detach()
    assert ad.label_domains == [["a", "b"]]
    assert float(m[0, 0]) == pytest.approx(1e-6, rel=0.05)
    assert torch.isfinite(ad.ad_logits).all()


# -- evidence with several labels --------------------------------------------------------------
EVIDENCE = """nn(net, [X], Y, [0, 1, 2]) :: d(X, Y).
0.3::noise.
0.4::tint(red); 0.6::tint(blue).
big(X) :- d(X, 2).
big(X) :- noise, d(X, 1).
big(X) :- tint(red), d(X, 0).
evidence(big(x1)).
"""


def _evidence_brute(p):
    """{(d, tint): P(d, tint | big)} for one row ``p`` of P(d), by enumerating the worlds."""
    joint = {}
    for d, noise, tint in itertools.product(range(3), (0, 1), ("red", "blue")):
        w = float(p[d]) * (0.3 if noise else 0.7) * (0.4 if tint == "red" else 0.6)
        big = d == 2 or (noise and d == 1) or (tint == "red" and d == 0)
        if big:
            joint[(d, tint)] = joint.get((d, tint), 0.0) + w
    z = sum(joint.values())
    return {k: v / z for k, v in joint.items()}


@pytest.mark.parametrize("semiring", ["log", "real"])
def test_evidence_with_two_labels_against_enumeration(semiring):
    prog = CompiledProgram.from_program(EVIDENCE, ["d(x1, Y)", "tint(C)"], use_cache=False,
                                        semiring=semiring)
    assert prog.evidence == ["big(x1)"]
    assert prog.label_domains == [[0, 1, 2], ["blue", "red"]]
    p = _probs(3, 3, 11)
    m_d, m_t = prog.label_marginals([p])
    for b in range(3):
        want = _evidence_brute(p[b])
        for d in range(3):
            assert float(m_d[b, d]) == pytest.approx(
                sum(v for (dd, _), v in want.items() if dd == d), abs=1e-9)
        for c, tint in enumerate(["blue", "red"]):
            assert float(m_t[b, c]) == pytest.approx(
                sum(v for (_, tt), v in want.items() if tt == tint), abs=1e-9)
    for d, c in itertools.product(range(3), range(2)):
        lp = prog([p], torch.tensor([[d, c]] * 3))
        for b in range(3):
            want = _evidence_brute(p[b]).get((d, ["blue", "red"][c]), 0.0)
            assert math.exp(float(lp[b])) == pytest.approx(want, abs=1e-9)


def test_evidence_marginals_agree_with_problog():
    """The same program with the network's outputs written in as numbers: ProbLog's own
    conditional marginals."""
    from problog import get_evaluatable
    from problog.program import PrologString

    prog = CompiledProgram.from_program(EVIDENCE, ["d(x1, Y)", "tint(C)"], use_cache=False)
    p = [0.5, 0.2, 0.3]
    m_d, m_t = prog.label_marginals([torch.tensor([p], dtype=torch.float64)])
    text = EVIDENCE.replace("nn(net, [X], Y, [0, 1, 2]) :: d(X, Y).",
                            "; ".join(f"{v}::d(x1, {i})" for i, v in enumerate(p)) + ".")
    text += "query(d(x1, Y)).\nquery(tint(C)).\n"
    want = {str(k): v for k, v in
            get_evaluatable("sdd").create_from(PrologString(text)).evaluate().items()}
    for i in range(3):
        assert float(m_d[0, i]) == pytest.approx(want[f"d(x1,{i})"], abs=1e-12)
    for c, tint in enumerate(["blue", "red"]):
        assert float(m_t[0, c]) == pytest.approx(want[f"tint({tint})"], abs=1e-12)


# -- a label with several values in one world -------------------------------------------------
PATHS = """0.6::edge(a, b). 0.5::edge(b, c). 0.3::edge(a, c). 0.4::edge(c, d).
path(X, Y) :- edge(X, Y).
path(X, Y) :- edge(X, Z), path(Z, Y).
"""


@pytest.mark.parametrize("semiring", ["log", "real"])
def test_a_label_with_several_values_in_one_world_against_problog(semiring):
    """``path(a, Y)`` holds for several Y in one world: the label "value v" is the event
    ``path(a, v)`` whatever the other values do (the other indicators' negative weights are 1).
    Marginals and joint values of two such labels against ProbLog's own inference."""
    from problog import get_evaluatable
    from problog.program import PrologString

    from nesybench.nesy.inference.oracle import problog_probability

    prog = CompiledProgram.from_program(PATHS, ["path(a, Y)", "path(b, Y)"], use_cache=False,
                                        semiring=semiring)
    assert prog.label_domains == [["b", "c", "d"], ["c", "d"]]
    want = {str(k): v for k, v in get_evaluatable("sdd").create_from(
        PrologString(PATHS + "query(path(a, Y)).\nquery(path(b, Y)).\n")).evaluate().items()}
    m_a, m_b = prog.label_marginals([])
    for i, v in enumerate(["b", "c", "d"]):
        assert float(m_a[0, i]) == pytest.approx(want[f"path(a,{v})"], abs=1e-12)
    for i, v in enumerate(["c", "d"]):
        assert float(m_b[0, i]) == pytest.approx(want[f"path(b,{v})"], abs=1e-12)
    assert float(m_a.sum()) > 1          # the values are not exclusive
    for (i, v), (k, w) in itertools.product(enumerate(["b", "c", "d"]), enumerate(["c", "d"])):
        got = math.exp(float(prog([], torch.tensor([[i, k]]))))
        assert got == pytest.approx(
            problog_probability(PATHS, [], [f"path(a, {v})", f"path(b, {w})"]), abs=1e-12)


# -- inputs and labels -------------------------------------------------------------------------
ADD = """
nn(digit_net, [X], Y, [0, 1, 2, 3]) :: digit(X, Y).
addition(X, Y, Z) :- digit(X, N1), digit(Y, N2), Z is N1 + N2.
"""


def test_label_index_bounds_and_message():
    prog = CompiledProgram.from_program(ADD, "addition(x1, x2, Z)")
    p = [_probs(1, 4, 1), _probs(1, 4, 2)]
    assert prog.label_domains == [list(range(7))]
    for bad in (7, -1):       # one past the last value (the "no value" slot) and below 0
        with pytest.raises(NesyError, match=r"index out of range 0\.\.6"):
            prog(p, torch.tensor([[bad]]))
    want = float(sum(p[0][0, a] * p[1][0, 6 - a] for a in range(3, 4)))
    assert math.exp(float(prog(p, torch.tensor([[6]])))) == pytest.approx(want, abs=1e-12)
    with pytest.raises(NesyError, match=r"expected \(B, 4\)"):
        prog([_probs(1, 4, 1)[0], p[1]], torch.tensor([[1]]))        # a 1-D concept tensor


@pytest.mark.parametrize("semiring", ["log", "real"])
def test_log_inputs_in_both_semirings(semiring):
    prog = CompiledProgram.from_program(ADD, "addition(x1, x2, Z)", semiring=semiring)
    p = [_probs(4, 4, 3), _probs(4, 4, 4)]
    y = torch.tensor([0, 3, 5, 6])
    plain = prog(p, y)
    logged = prog([t.log() for t in p], y, log_input=True)
    assert torch.allclose(plain, logged, atol=1e-12)
    for b in range(4):
        s = int(y[b])
        want = sum(float(p[0][b, a] * p[1][b, s - a]) for a in range(4) if 0 <= s - a < 4)
        assert math.exp(float(plain[b])) == pytest.approx(want, abs=1e-12)
    m1 = prog.label_marginals(p)[0]
    m2 = prog.label_marginals([t.log() for t in p], log_input=True)[0]
    assert torch.allclose(m1, m2, atol=1e-12)


# -- statistics and errors ---------------------------------------------------------------------
def test_compile_statistics():
    """Seconds are given to 0.1 ms and the grounding's are within the call's wall time; the
    ground program's size counts its nodes (not the unused slot 0 of its node list)."""
    texts = [f"0.{i + 1}::a. 0.5::b{i}.\nq :- a, b{i}.\nr :- \\+ a.\nquery(q).\nquery(r).\n"
             for i in range(6)]
    for text in texts:
        t0 = time.perf_counter()
        prog = CompiledProgram.from_program(text, None, use_cache=False)
        wall = time.perf_counter() - t0
        st = prog.stats
        for key in ("ground_seconds", "compile_seconds"):
            assert st[key] == round(st[key], 4), (key, st[key])
        assert 0 <= st["ground_seconds"] <= wall + 1e-4
        gp = ground(text, [])
        assert st["ground_nodes"] == sum(n is not None for n in gp.nodes) > 0
        assert not st["cache_hit"]


def test_circuit_budget_error_names_the_program_file(tmp_path):
    text = "".join(f"0.5::x{i}. 0.5::y{i}.\n" for i in range(12)) + \
        "q :- " + "; ".join(f"(x{i}, y{(i * 5) % 12})" for i in range(12)) + ".\nquery(q).\n"
    f = tmp_path / "wide.pl"
    f.write_text(text)
    with pytest.raises(BudgetExceeded, match="approximate inference") as err:
        CompiledProgram.from_program(f, None, use_cache=False,
                                     budget=Budget(max_circuit_nodes=10))
    assert err.value.file == str(f)
    with pytest.raises(BudgetExceeded) as err:
        CompiledProgram.from_program(text, None, use_cache=False,
                                     budget=Budget(max_circuit_nodes=10))
    assert err.value.file is None
