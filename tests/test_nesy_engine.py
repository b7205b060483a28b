"""The neuro-symbolic circuit engine: compiled circuits against brute-force enumeration, our own
SDD evaluator and ProbLog itself; AD semantics; MNIST-Addition with carries; bad input."""
from __future__ import annotations

import itertools

import pytest
import torch

from nesybench.errors import NesyError
from nesybench.nesy.inference.circuit import CompiledProgram
from nesybench.nesy.learn.mnist_add import addition_program, compile_addition, sum_labels, to_digits
from nesybench.nesy.inference.oracle import cached_paths, enumerate_worlds, problog_probability, sdd_wmc
from nesybench.nesy.program.program import ground

ADD = """
nn(digit_net, [X], Y, [0, 1, 2, 3]) :: digit(X, Y).
addition(X, Y, Z) :- digit(X, N1), digit(Y, N2), Z is N1 + N2.
"""

# probabilistic facts, a partial annotated disjunction, negation, recursion, a neural predicate
MIXED = """
nn(coin_net, [X], Y, [h, t]) :: coin(X, Y).
0.3::edge(a, b).  0.6::edge(b, c).  0.5::edge(a, c).  0.4::edge(c, a).
0.2::weather(rain); 0.5::weather(sun).
path(X, Y) :- edge(X, Y).
path(X, Y) :- edge(X, Z), path(Z, Y).
win(G) :- coin(G, h), path(a, c).
win(G) :- coin(G, t), \\+ weather(rain).
mood(G, happy) :- win(G), weather(sun).
mood(G, calm) :- win(G), \\+ weather(sun).
mood(G, sad) :- \\+ win(G).
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))


def _probs(b, k, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(b, k, generator=g, dtype=torch.float64), 1)


def _brute(gp, rows):
    """{label tuple: P} for one example (torch scalars: differentiable)."""
    return enumerate_worlds(gp, rows)


@pytest.mark.parametrize("semiring", ["log", "real"])
def test_addition_matches_enumeration_values_and_gradients(semiring):
    prog = CompiledProgram.from_program(ADD, "addition(x1, x2, Z)", semiring=semiring)
    gp = ground(ADD, ["addition(x1, x2, Z)"])
    assert prog.concept_domains == [4, 4] and prog.label_domains == [list(range(7))]
    p1 = _probs(5, 4, 0).requires_grad_()
    p2 = _probs(5, 4, 1).requires_grad_()
    labels = torch.tensor([0, 3, 6, 2, 4])
    lp = prog([p1.float(), p2.float()], labels[:, None])
    # brute force in float64 with autograd
    q1 = p1.detach().clone().requires_grad_()
    q2 = p2.detach().clone().requires_grad_()
    ref = torch.stack([torch.log(_brute(gp, [q1[b], q2[b]])[(int(labels[b]),)])
                       for b in range(5)])
    assert torch.allclose(lp.double(), ref, atol=1e-5)
    lp.sum().backward()
    ref.sum().backward()
    assert torch.allclose(p1.grad.double(), q1.grad, atol=1e-4)
    assert torch.allclose(p2.grad.double(), q2.grad, atol=1e-4)
    # without evidence: marginals are the enumeration's distribution and sum to 1
    marg = prog.label_marginals([p1.detach().float(), p2.detach().float()])[0]
    for b in range(5):
        dist = _brute(gp, [p1[b].detach(), p2[b].detach()])
        want = torch.tensor([float(dist.get((v,), 0.0)) for v in range(7)])
        assert torch.allclose(marg[b].double(), want.double(), atol=1e-5)
    assert torch.allclose(marg.sum(1), torch.ones(5), atol=1e-5)


@pytest.mark.parametrize("semiring", ["log", "real"])
def test_mixed_program_against_enumeration_problog_and_own_sdd(semiring):
    queries = ["win(g1)", "mood(g1, M)"]
    prog = CompiledProgram.from_program(MIXED, queries, semiring=semiring)
    gp = ground(MIXED, queries)
    assert prog.concept_names == ["coin_net(g1)"]
    assert prog.label_domains == [[0, 1], ["calm", "happy", "sad"]]
    p = _probs(3, 2, 7)
    # joint evidence on both labels, every combination
    for w, m in itertools.product(range(2), range(3)):
        labels = torch.tensor([[w, m]] * 3)
        got = prog([p.float()], labels).exp().double()
        for b in range(3):
            dist = _brute(gp, [p[b].tolist()])
            want = dist.get((w, ["calm", "happy", "sad"][m]), 0.0)
            assert abs(float(got[b]) - want) < 1e-5
            # ProbLog's own grounding and compilation
            ev = [("win(g1)" if w else "\\+ win(g1)"), f"mood(g1, {['calm', 'happy', 'sad'][m]})"]
            pl = problog_probability(MIXED, [("coin_net", ("g1",), p[b].tolist())], ev)
            assert abs(pl - want) < 1e-9
    # our own smoothed SDD evaluator on the cached SDD file, same weights as the circuit
    sdd, vtree = cached_paths(prog)
    vm = prog.meta["varmap"]
    n = vm["var_count"]
    for b, (w, m) in itertools.product(range(3), [(1, 0), (0, 2)]):
        pos = {x: 1.0 for x in range(1, n + 1)}
        neg = {x: 1.0 for x in range(1, n + 1)}
        for ci, ch in enumerate(prog.meta["choices"]):
            xs = vm["choice_vars"][ci]
            if ch["net"]:
                for x, pv in zip(xs, p[b].tolist()):
                    pos[x] = pv
            elif ch["fact"]:
                pos[xs[0]], neg[xs[0]] = ch["probs"][0], 1 - ch["probs"][0]
            else:
                for x, pv in zip(xs, ch["probs"]):
                    pos[x] = pv
        for j, y in enumerate((w, m)):
            for v, x in enumerate(vm["label_vars"][j]):
                pos[x], neg[x] = float(v == y), float(v != y)
        own = sdd_wmc(sdd, vtree, pos, neg)
        got = float(prog([p[b:b + 1].float()], torch.tensor([[w, m]])).exp())
        assert abs(own - got) < 1e-5


def test_annotated_disjunction_outcomes_sum_to_one():
    text = "nn(net, [X], Y, [a, b, c]) :: kind(X, Y).\n0.2::f(1); 0.3::f(2).\n"
    prog = CompiledProgram.from_program(text, ["kind(x, Y)", "f(Y)"], semiring="real")
    p = _probs(4, 3, 3).float()
    kind, f = prog.label_marginals([p])
    assert torch.allclose(kind, p, atol=1e-6)              # P(kind = v) is the network output
    assert prog.label_domains[1] == [1, 2]
    assert torch.allclose(f, torch.tensor([[0.2, 0.3]]).expand(4, 2), atol=1e-6)
    # the three outcomes of the neural AD partition the probability mass
    total = sum(prog([p], torch.tensor([[v, 0]] * 4)).exp() for v in range(3))
    assert torch.allclose(total, torch.full((4,), 0.2), atol=1e-6)


def test_mnist_addition_carry_program_matches_enumeration():
    for n in (1, 2):
        prog = compile_addition(n)
        assert len(prog.label_domains) == n + 1 and prog.concept_domains == [10] * (2 * n)
        ps = [_probs(4, 10, 10 + i) for i in range(2 * n)]
        a = torch.tensor([7, 35, 99, 40])[:] % 10 ** n
        b = torch.tensor([8, 67, 99, 0])[:] % 10 ** n
        lp = prog([p.float() for p in ps], sum_labels(a, b, n, prog))
        # enumeration: joint distribution of (A, B) as an outer product of digit marginals
        for r in range(4):
            da = [ps[i][r] for i in range(n)]
            db = [ps[n + i][r] for i in range(n)]
            pa = torch.zeros(10 ** n, dtype=torch.float64)
            pb = torch.zeros(10 ** n, dtype=torch.float64)
            for ds in itertools.product(range(10), repeat=n):
                v = sum(d * 10 ** i for i, d in enumerate(ds))
                pa[v] = torch.prod(torch.stack([da[i][d] for i, d in enumerate(ds)]))
                pb[v] = torch.prod(torch.stack([db[i][d] for i, d in enumerate(ds)]))
            s = int(a[r] + b[r])
            want = sum(pa[x] * pb[s - x] for x in range(10 ** n) if 0 <= s - x < 10 ** n)
            assert abs(float(lp[r].exp()) - float(want)) < 1e-5
    assert to_digits(torch.tensor([1234]), 5).tolist() == [[4, 3, 2, 1, 0]]


def _carry_dp(pa: list, pb: list, digits: list[int]) -> float:
    """P(the sum's digits are ``digits``) for independent digit distributions, by a dynamic
    program over the carry (least significant digit first): the oracle for long sums."""
    carry = {0: 1.0}
    for i in range(len(pa)):
        nxt: dict[int, float] = {}
        for c, pc in carry.items():
            for x in range(10):
                for y in range(10):
                    t = x + y + c
                    if t % 10 == digits[i]:
                        nxt[t // 10] = nxt.get(t // 10, 0.0) + pc * float(pa[i][x] * pb[i][y])
        carry = nxt
    return carry.get(digits[-1], 0.0)


def test_compilation_with_garbage_collection_keeps_the_circuit(monkeypatch):
    """The fast strategy collects dead SDD nodes as it goes (forced here at every check):
    the circuit is the same, and N = 4 sums match a carry dynamic program."""
    from nesybench.nesy.inference import compile as C

    n = 4
    monkeypatch.setattr(C, "GC_DEAD_NODES", 10 ** 12)
    plain = compile_addition(n, use_cache=False)
    assert plain.stats["sdd_collections"] == 0
    monkeypatch.setattr(C, "GC_DEAD_NODES", 0)
    monkeypatch.setattr(C, "GC_DEAD_RATIO", 0)
    collected = compile_addition(n, use_cache=False)
    assert collected.stats["sdd_collections"] > 0
    assert collected.stats["sdd_size"] == plain.stats["sdd_size"]
    ps = [_probs(3, 10, 40 + i) for i in range(2 * n)]
    a, b = torch.tensor([1234, 9999, 5]), torch.tensor([8766, 9999, 0])
    labels = sum_labels(a, b, n, plain)
    lp = collected([p.float() for p in ps], labels)
    assert torch.equal(lp, plain([p.float() for p in ps], labels))
    for r in range(3):
        want = _carry_dp([ps[i][r] for i in range(n)], [ps[n + i][r] for i in range(n)],
                         to_digits(a[r:r + 1] + b[r:r + 1], n + 1)[0].tolist())
        assert float(lp[r].exp()) == pytest.approx(want, rel=1e-4)


def test_addition_grounding_is_linear_in_n():
    sizes = {}
    for n in (2, 4):
        s = addition_program(n)
        sizes[n] = len(ground(s.text, s.queries, concept_order=s.concept_order).nodes)
    assert sizes[4] < 3 * sizes[2]


def test_circuit_cache_reused():
    a = CompiledProgram.from_program(ADD, "addition(x1, x2, Z)")
    b = CompiledProgram.from_program(ADD, "addition(x1, x2, Z)")
    assert not a.stats["cache_hit"] and b.stats["cache_hit"]
    p = [_probs(2, 4, 1).float(), _probs(2, 4, 2).float()]
    y = torch.tensor([[3], [5]])
    assert torch.equal(a(p, y), b(p, y))


# -- bad input -------------------------------------------------------------------------------
def test_parse_error_names_file_and_line(tmp_path):
    f = tmp_path / "bad.pl"
    f.write_text("a :- b.\nb.\nfoo(X :- .\n")
    with pytest.raises(NesyError) as e:
        CompiledProgram.from_program(f, "a")
    assert e.value.file == str(f) and e.value.line == 3


def test_unknown_network():
    with pytest.raises(NesyError, match="unknown network"):
        CompiledProgram.from_program(ADD, "addition(x1, x2, Z)", networks=["mnist_net"])


def test_query_grounds_to_nothing():
    # 9 is not a sum of two digits 0..3: no label value is derivable
    with pytest.raises(NesyError, match="grounds to nothing"):
        CompiledProgram.from_program(ADD + "big(X, Y, Z) :- addition(X, Y, Z), Z > 9.\n",
                                     "big(x1, x2, Z)")


def test_unsafe_call_rejected():
    for bad in (":- consult('/etc/passwd').\n", "a :- assertz(b).\n", "a :- shell('ls').\n"):
        with pytest.raises(NesyError, match="program refused"):
            CompiledProgram.from_program(ADD + bad, "addition(x1, x2, Z)")


def test_domain_and_shape_mismatch(tmp_path):
    from nesybench.shortcuts.task import load_task
    task = load_task("curricula/rs/xor.yaml")
    prog_file = tmp_path / "xor3.pl"
    prog_file.write_text("nn(b, [T], X, [0, 1, 2]) :: c(T, X).\n"
                         "parity(0, 0).\n"
                         "parity(I, P) :- I > 0, J is I - 1, parity(J, P0), var(J, T), c(T, X),"
                         " P is (P0 + X) mod 2.\n"
                         "y(y, P) :- nvars(N), parity(N, P).\n")
    with pytest.raises(NesyError, match="domain mismatch"):
        CompiledProgram.from_task(task, program=prog_file)
    prog = CompiledProgram.from_program(ADD, "addition(x1, x2, Z)")
    with pytest.raises(NesyError, match="4 values"):
        prog([torch.rand(2, 3), torch.rand(2, 4)], torch.tensor([[1], [2]]))
    with pytest.raises(NesyError, match="out of range"):
        prog([torch.rand(2, 4), torch.rand(2, 4)], torch.tensor([[1], [9]]))
    with pytest.raises(NesyError, match="impossible"):
        prog.label_index([3, 42])


def test_log_input_and_zero_probabilities():
    prog = CompiledProgram.from_program(ADD, "addition(x1, x2, Z)")
    logits = torch.randn(3, 4), torch.randn(3, 4)
    y = torch.tensor([[1], [3], [5]])
    a = prog([torch.softmax(t, 1) for t in logits], y)
    b = prog([torch.log_softmax(t, 1) for t in logits], y, log_input=True)
    assert torch.allclose(a, b, atol=1e-5)
    # one-hot concepts (exact zeros): log P = 0 for the right label, finite gradients
    p1 = torch.tensor([[1.0, 0, 0, 0]], requires_grad=True)
    p2 = torch.tensor([[0, 1.0, 0, 0]], requires_grad=True)
    lp = prog([p1, p2], torch.tensor([[1]]))
    lp.sum().backward()
    assert float(lp.detach()) == pytest.approx(0.0, abs=1e-6)
    assert torch.isfinite(p1.grad).all() and torch.isfinite(p2.grad).all()


@pytest.mark.parametrize("semiring", ["log", "real"])
def test_learnable_fact(semiring):
    text = ("nn(net, [X], Y, [0, 1]) :: bit(X, Y).\nt(0.3)::flip.\n"
            "out(X, V) :- bit(X, V), \\+ flip.\nout(X, V) :- bit(X, B), flip, V is 1 - B.\n")
    prog = CompiledProgram.from_program(text, "out(x, V)", semiring=semiring)
    assert prog.learnable_facts == ["flip"]
    p = torch.tensor([[0.2, 0.8]])
    assert float(prog([p], torch.tensor([[1]])).detach().exp()) == pytest.approx(0.8 * 0.7 + 0.2 * 0.3)
    opt = torch.optim.SGD(prog.parameters(), lr=1.0)
    for _ in range(5):          # P(out = 0) = 0.2 + 0.6 f grows with f
        opt.zero_grad()
        (-prog([p], torch.tensor([[0]])).sum()).backward()
        opt.step()
    assert float(torch.sigmoid(prog.fact_logits.detach())[0]) > 0.5


def test_three_digit_check_compiles_small_and_matches_enumeration():
    """DeepProbLog's all-digit addition shape: one Boolean query over three digit choices.
    Its leaves are one-hot value assignments, so the disjunction over the 55 true triples
    stays small; P(true) equals the sum over triples with c = a + b."""
    text = ("nn(net, [X], Y, [0,1,2,3,4,5,6,7,8,9]) :: digit(X, Y).\n"
            "addition(X, Y, Z) :- digit(X, X2), digit(Y, Y2), digit(Z, Z2), Z2 is X2 + Y2.\n")
    prog = CompiledProgram.from_program(text, ["addition(a, b, c)"], use_cache=False)
    assert prog.stats["peak_live_size"] < 5_000
    pa, pb, pc = _probs(3, 10, 1), _probs(3, 10, 2), _probs(3, 10, 3)
    want = sum(pa[:, x] * pb[:, y] * pc[:, x + y] for x in range(10) for y in range(10 - x))
    true = prog.label_domains[0].index(1)
    got = prog([pa, pb, pc], torch.full((3, 1), true)).exp()
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-12)
