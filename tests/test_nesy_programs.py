"""Programs written the way DeepProbLog users write them run unchanged: the textbook
multi-digit addition (a wide label, by both compile strategies), variable goals (Coins'
``and/1``), library(lists) with learnable annotated disjunctions (Poker's form), learnable
facts (noisy addition), and the forms that are not supported get one precise error."""
from __future__ import annotations

import pytest
import torch

from nesybench.errors import NesyError
from nesybench.nesy.inference.circuit import CompiledProgram
from nesybench.nesy.inference import compile as compile_mod
from nesybench.nesy.program.program import ground


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))


TEXTBOOK = """nn(d, [X], Y, [0, 1, 2, 3, 4, 5]) :: digit(X, Y).
number([], Acc, Acc).
number([H|T], Acc, N) :- digit(H, V), Acc1 is 10 * Acc + V, number(T, Acc1, N).
multi_addition(X, Y, Z) :- number(X, 0, A), number(Y, 0, B), Z is A + B.
"""


def _rows(n, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.softmax(torch.randn(1, 6, generator=g, dtype=torch.float64), 1)
            for _ in range(n)]


@pytest.mark.parametrize("strategy", ["apply", "minimise"])
def test_textbook_addition_wide_label_matches_enumeration(strategy, monkeypatch):
    if strategy == "minimise":      # a live-size limit the fast strategy passes: restart
        monkeypatch.setattr(compile_mod, "FAST_LIMIT", 100)
    query = "multi_addition([a0, a1], [b0, b1], Z)"
    prog = CompiledProgram.from_program(TEXTBOOK, query, use_cache=False)
    assert prog.stats["compile_strategy"] == strategy
    dom = prog.label_domains[0]
    assert len(dom) == 111               # 0..110, each value one term of the balanced join
    rows = _rows(4, 3)
    got = prog.label_marginals(rows)[0][0]
    # independent: sum over the 6^4 digit assignments
    want = torch.zeros(len(dom), dtype=torch.float64)
    import itertools
    for a0, a1, b0, b1 in itertools.product(range(6), repeat=4):
        z = 10 * a0 + a1 + 10 * b0 + b1
        want[dom.index(z)] += rows[0][0, a0] * rows[1][0, a1] * rows[2][0, b0] * rows[3][0, b1]
    assert torch.allclose(got, want, atol=1e-12)


def test_variable_goals_as_in_the_coins_example():
    text = """nn(n1, [X], Y, [heads, tails]) :: coin(1, X, Y).
nn(n2, [X], Y, [heads, tails]) :: coin(2, X, Y).
outcome(X, X, win).
outcome(X, Y, loss) :- \\+ outcome(X, Y, win).
game(X, O) :- coin(1, X, C1), coin(2, X, C2), outcome(C1, C2, O).
all_true([]).
all_true([G|Gs]) :- G, all_true(Gs).
both(X) :- all_true([coin(1, X, heads), coin(2, X, heads)]).
"""
    prog = CompiledProgram.from_program(text, ["game(x, O)", "both(x)"], use_cache=False)
    c1 = torch.tensor([[0.7, 0.3]], dtype=torch.float64)
    c2 = torch.tensor([[0.4, 0.6]], dtype=torch.float64)
    game, both = prog.label_marginals([c1, c2])
    assert prog.label_domains[0] == ["loss", "win"]
    assert float(game[0, 1]) == pytest.approx(0.7 * 0.4 + 0.3 * 0.6, abs=1e-15)
    assert float(both[0, prog.label_domains[1].index(1)]) == pytest.approx(0.28, abs=1e-15)


def test_lists_library_and_learnable_disjunction_as_in_the_poker_example():
    text = """:- use_module(library(lists)).
t(1/2)::house(low); t(1/2)::house(high).
nn(r, [X], Z, [low, high]) :: rank(X, Z).
hand(Cards, pair(R)) :- select(R, Cards, Rest), member(R, Rest).
hand(Cards, high(R)) :- member(R, Cards).
value(pair(_), 2).
value(high(_), 1).
best(Cards, V) :- hand(Cards, H), value(H, V), \\+ (hand(Cards, H2), value(H2, V2), V2 > V).
game(C, V) :- rank(C, R), house(H), best([R, H], V).
"""
    prog = CompiledProgram.from_program(text, "game(c, V)", use_cache=False)
    assert prog.learnable_ads == [["house(low)", "house(high)"]]
    p = torch.tensor([[0.3, 0.7]], dtype=torch.float64)
    (m,) = prog.label_marginals([p])
    # a pair when the card's rank equals the house's: 0.3 * 0.5 + 0.7 * 0.5
    assert float(m[0, prog.label_domains[0].index(2)]) == pytest.approx(0.5, abs=1e-6)


def test_learnable_fact_as_in_noisy_addition():
    text = """nn(d, [X], Y, [0, 1]) :: digit(X, Y).
t(0.1) :: noisy.
0.5::uniform(X, Y, 0); 0.5::uniform(X, Y, 1).
add(X, Y, Z) :- noisy, uniform(X, Y, Z).
add(X, Y, Z) :- \\+ noisy, digit(X, A), digit(Y, B), Z is (A + B) mod 2.
"""
    prog = CompiledProgram.from_program(text, "add(a, b, Z)", use_cache=False)
    assert prog.learnable_facts == ["noisy"]
    p = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    (m,) = prog.label_marginals([p, p])
    assert float(m[0, 0]) == pytest.approx(0.9 + 0.1 * 0.5, abs=1e-6)


@pytest.mark.parametrize("annotation, what", [
    ("nn(rnn, [T], E) :: embed(T, E).\nq(X) :- embed(X, _).", "tensor-valued network"),
    ("nn(net, [X]) :: good(X).\nq(X) :- good(X).", "neural fact"),
])
def test_unsupported_neural_forms_are_named(annotation, what):
    with pytest.raises(NesyError, match=what) as err:
        ground(annotation + "\n", ["q(x)"])
    assert err.value.line == 1


class _RecordingBar:
    """Stands in for tqdm: records what the compiler reports."""
    made: list = []

    def __init__(self, total=None, **kw):
        self.total, self.kw, self.n, self.resets, self.descs = total, kw, 0, 0, []
        _RecordingBar.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, k=1):
        self.n += k

    def reset(self):
        self.resets += 1
        self.n = 0

    def set_description(self, d):
        self.descs.append(d)


@pytest.mark.parametrize("strategy", ["apply", "minimise"])
def test_compile_progress_counts_every_ground_node_and_label_value(strategy, monkeypatch):
    """The bar's total is the ground nodes plus the label values, and it ends full — after a
    restart with minimisation too (one bar, reset and renamed)."""
    import tqdm

    from nesybench.nesy.inference.compile import compile_program

    monkeypatch.setattr(tqdm, "tqdm", _RecordingBar)
    _RecordingBar.made = []
    if strategy == "minimise":
        monkeypatch.setattr(compile_mod, "FAST_LIMIT", 100)
    gp = ground(TEXTBOOK, ["multi_addition([a0, a1], [b0, b1], Z)"])
    comp = compile_program(gp, progress=True)
    assert comp.strategy == strategy
    (bar,) = _RecordingBar.made
    values = sum(len(lab.nodes) for lab in gp.labels)
    assert bar.total == len(gp.nodes) - 1 + values
    assert bar.n == bar.total
    assert bar.kw["delay"] > 0 and not bar.kw["disable"]
    assert bar.descs[-1] == ("compiling (minimising)" if strategy == "minimise" else "compiling")
    assert bar.resets == (2 if strategy == "minimise" else 1)
