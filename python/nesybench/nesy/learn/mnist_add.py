"""Multi-digit MNIST-Addition with an explicit carry program (grounding and circuit linear in N).

Two N-digit numbers ``a`` and ``b`` (one image per digit) and the label ``a + b``. Instead of
DeepProbLog's ``number/3`` program (which builds every number and grounds one N=3 query in
minutes), the program adds digit by digit with a carry, and the *label is the N+1 digits of
the sum*, each one label of the query shape (evidence indicators): one circuit of O(N) size
serves every example and every label.

Indexing convention (everywhere in this module): position ``i`` is the ``10^i`` place, so the
concepts are ``[a_0, ..., a_{N-1}, b_0, ..., b_{N-1}]`` (least significant first) and the labels
are ``[s_0, ..., s_N]`` (``s_N`` is the final carry, 0 or 1).

The program for N = 2 (``addition_program(2).text``)::

    nn(digit_net, [X], Y, [0,1,2,3,4,5,6,7,8,9]) :: digit(X, Y).
    pos(0, a0, b0). pos(1, a1, b1). top(2).
    carry(0, 0).
    carry(I, C) :- I > 0, J is I - 1, pos(J, A, B), carry(J, Cin),
                   digit(A, DA), digit(B, DB), C is (DA + DB + Cin) // 10.
    sum_digit(I, S) :- pos(I, A, B), digit(A, DA), digit(B, DB), carry(I, Cin),
                       S is (DA + DB + Cin) mod 10.
    sum_digit(I, C) :- top(I), carry(I, C).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...errors import NesyError

DIGITS = list(range(10))


@dataclass
class AdditionShape:
    """A query shape: program text, query atoms (labels) and concept order."""

    n_digits: int
    text: str
    queries: list[str]
    concept_order: list[str]


def addition_program(n_digits: int, *, net: str = "digit_net") -> AdditionShape:
    """The carry program and query shape for two ``n_digits``-digit numbers."""
    if n_digits < 1:
        raise NesyError("MNIST-Addition needs at least one digit per number", field="n_digits")
    n = n_digits
    pos = " ".join(f"pos({i}, a{i}, b{i})." for i in range(n))
    text = (
        f"nn({net}, [X], Y, [{','.join(map(str, DIGITS))}]) :: digit(X, Y).\n"
        f"{pos} top({n}).\n"
        "carry(0, 0).\n"
        "carry(I, C) :- I > 0, J is I - 1, pos(J, A, B), carry(J, Cin),\n"
        "               digit(A, DA), digit(B, DB), C is (DA + DB + Cin) // 10.\n"
        "sum_digit(I, S) :- pos(I, A, B), digit(A, DA), digit(B, DB), carry(I, Cin),\n"
        "                   S is (DA + DB + Cin) mod 10.\n"
        "sum_digit(I, C) :- top(I), carry(I, C).\n"
    )
    queries = [f"sum_digit({i}, S)" for i in range(n + 1)]
    order = [f"a{i}" for i in range(n)] + [f"b{i}" for i in range(n)]
    return AdditionShape(n, text, queries, order)


def compile_addition(n_digits: int, **kw):
    """The compiled :class:`~nesybench.nesy.inference.circuit.CompiledProgram` for ``n_digits``."""
    from ..inference.circuit import CompiledProgram
    shape = addition_program(n_digits)
    return CompiledProgram.from_program(shape.text, shape.queries,
                                        concept_order=shape.concept_order, **kw)


def to_digits(x: torch.Tensor, n: int) -> torch.Tensor:
    """Integers (B,) -> digits (B, n), least significant first."""
    x = torch.as_tensor(x, dtype=torch.long)
    p = 10 ** torch.arange(n, device=x.device)
    return (x[:, None] // p) % 10


def from_digits(d: torch.Tensor) -> torch.Tensor:
    """Digits (B, n) least significant first -> integers (B,)."""
    p = 10 ** torch.arange(d.shape[1], device=d.device)
    return (d.long() * p).sum(1)


def sum_labels(a: torch.Tensor, b: torch.Tensor, n: int, prog=None) -> torch.Tensor:
    """Label indices (B, n+1) of the sums ``a + b`` for the circuit's label domains."""
    s = to_digits(torch.as_tensor(a) + torch.as_tensor(b), n + 1)
    if prog is None:
        return s
    cols = []
    for j, dom in enumerate(prog.label_domains):
        lut = torch.full((10,), -1, dtype=torch.long)
        for i, v in enumerate(dom):
            lut[int(v)] = i
        cols.append(lut[s[:, j]])
    return torch.stack(cols, 1)


def predict_sum(prog, concept_probs) -> torch.Tensor:
    """Most probable value of each sum digit (marginal MAP per digit) as an integer (B,)."""
    marg = prog.label_marginals(concept_probs)
    digits = torch.stack([torch.as_tensor([int(v) for v in dom])[m.argmax(1).cpu()]
                          for dom, m in zip(prog.label_domains, marg)], 1)
    return from_digits(digits)
