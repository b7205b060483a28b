"""Training the learnable fact of a noisy-addition program, as DeepProbLog users write it.

The program reads a label as noise (a uniform sum) with the learnable probability of the fact
``noisy`` and as the sum of two neural digits otherwise. With the digit distributions held
fixed, training leaves one parameter, and its maximum-likelihood value is computed here
independently (numpy convolution of the digit distributions and a bounded 1-D search of the
log-likelihood); the engine's learned probability must land on it (within 1e-4).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from nesybench.nesy.inference.circuit import CompiledProgram

UNIFORM = "; ".join(f"1/19::uniform(X,Y,{v})" for v in range(19))


def noisy_addition(annotation: str) -> str:
    return f"""nn(mnist_net,[X],Y,[0,1,2,3,4,5,6,7,8,9]) :: digit(X,Y).
{annotation} :: noisy.
{UNIFORM}.
addition_noisy(X,Y,Z) :- noisy, uniform(X,Y,Z).
addition_noisy(X,Y,Z) :- \\+noisy, digit(X,N1), digit(Y,N2), Z is N1+N2.
"""


def synthetic(n: int = 400, noise: float = 0.3, seed: int = 0):
    """Digit distributions peaked (not one-hot) on the true digits and sums whose labels are
    replaced by a uniform 0..18 with probability ``noise``."""
    rng = np.random.default_rng(seed)
    digits = rng.integers(0, 10, size=(n, 2))
    probs = rng.dirichlet(np.full(10, 0.3), size=(n, 2))
    probs = 0.2 * probs + 0.8 * np.eye(10)[digits]
    labels = digits.sum(1)
    flip = rng.random(n) < noise
    labels[flip] = rng.integers(0, 19, size=int(flip.sum()))
    return probs, labels


def ml_noise_rate(probs: np.ndarray, labels: np.ndarray) -> float:
    """argmax_p sum_i log(p / 19 + (1 - p) q_i), q_i = P(digit sum = label_i)."""
    q = np.array([np.convolve(a, b)[y] for (a, b), y in zip(probs, labels)])
    res = minimize_scalar(lambda p: -np.log(p / 19 + (1 - p) * q).sum(),
                          bounds=(1e-9, 1 - 1e-9), method="bounded",
                          options={"xatol": 1e-10})
    return float(res.x)


@pytest.mark.parametrize("annotation", ["t(0.1)", "t(_)"])
def test_learned_noise_probability_is_the_maximum_likelihood_rate(annotation):
    prog = CompiledProgram.from_program(noisy_addition(annotation), ["addition_noisy(x1, x2, Z)"],
                                        networks=["mnist_net"], concept_order=["x1", "x2"],
                                        use_cache=False)
    assert prog.learnable_facts == ["noisy"]
    probs, labels = synthetic()
    expected = ml_noise_rate(probs, labels)
    # 0.3 of the labels were redrawn; the imperfect digits explain part of them
    assert 0.1 < expected < 0.3
    p = torch.tensor(probs)
    lab = prog.label_index(labels.tolist())
    opt = torch.optim.LBFGS(prog.parameters(), lr=1, max_iter=60, tolerance_grad=1e-10,
                            tolerance_change=1e-12, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = -prog([p[:, 0], p[:, 1]], lab).mean()
        loss.backward()
        return loss

    threads = torch.get_num_threads()
    torch.set_num_threads(1)         # one small circuit: more threads only contend
    try:
        opt.step(closure)
    finally:
        torch.set_num_threads(threads)
    learned = float(torch.sigmoid(prog.fact_logits.detach())[0])
    assert learned == pytest.approx(expected, abs=1e-4)
