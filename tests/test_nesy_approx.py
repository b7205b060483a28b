"""Approximate inference (nesybench.nesy.inference.approx): sampled marginals and gradients agree with the
exact circuit within the documented standard error, training with sampling learns the digits,
and a compilation budget error names the approximate option."""
from __future__ import annotations

import math

import pytest
import torch

from nesybench.errors import BudgetExceeded, NesyError
from nesybench.nesy.inference.approx import SampledProgram, build_program, parse_inference
from nesybench.nesy.program.budget import Budget
from nesybench.nesy.inference.circuit import CompiledProgram
from nesybench.nesy.learn.mnist_add import addition_program, sum_labels

#: the tolerance of every comparison below, in standard errors of the estimate
Z = 5.0


def tol(p, samples):
    """What a sampled marginal may miss the exact ``p`` by: Z standard errors, plus two hits
    (2/S) for rare values, where one sampled world already moves the estimate by 1/S."""
    return Z * torch.sqrt(p * (1 - p) / samples) + 2.0 / samples


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))


def _pair(n, samples, seed=0):
    s = addition_program(n)
    kw = dict(concept_order=s.concept_order)
    return (CompiledProgram.from_program(s.text, s.queries, **kw),
            SampledProgram.from_program(s.text, s.queries, samples=samples, seed=seed, **kw))


def _probs(b, k, n, seed, temp=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, n, k, generator=g, dtype=torch.float64) * temp


def test_parse_inference():
    assert parse_inference("exact") == ("exact", None)
    assert parse_inference("sample:500") == ("sample", 500)
    assert parse_inference("sample")[0] == "sample"
    for bad in ("sample:1", "sample:x", "kbest:3", "magic"):
        with pytest.raises(NesyError):
            parse_inference(bad)


@pytest.mark.parametrize("n", [1, 2])
def test_sampled_marginals_within_standard_error_of_exact(n):
    S = 4000
    exact, approx = _pair(n, S, seed=3)
    assert approx.label_domains == exact.label_domains
    assert approx.concept_names == exact.concept_names
    logits = _probs(6, 10, 2 * n, seed=n)
    ps = [torch.softmax(logits[:, i], -1) for i in range(2 * n)]
    me = exact.label_marginals(ps)
    ms, se = approx.estimate(ps)
    worst = 0.0
    for e, a, s in zip(me, ms, se):
        sd = torch.sqrt(e * (1 - e) / S)                 # the true standard error
        err = (a.detach() - e).abs()
        assert bool((err <= tol(e, S)).all()), float((err / sd.clamp_min(1e-12)).max())
        # the reported standard error is the plug-in estimate of the same quantity
        assert bool(((s - sd).abs() <= 0.5 * sd + 2.0 / S).all())
        worst = max(worst, float(err.max()))
    assert 0 < worst <= Z * 0.5 / math.sqrt(S)           # documented bound 0.5 / sqrt(S)
    # same seed, same numbers; another seed, other numbers
    again = SampledProgram.from_program(*_shape(n), samples=S, seed=3,
                                        concept_order=addition_program(n).concept_order)
    assert torch.equal(again.estimate(ps)[0][0], ms[0])
    other = SampledProgram.from_program(*_shape(n), samples=S, seed=4,
                                        concept_order=addition_program(n).concept_order)
    assert not torch.equal(other.estimate(ps)[0][0], ms[0])


def _shape(n):
    s = addition_program(n)
    return s.text, s.queries


def test_score_function_gradient_is_unbiased():
    """The RLOO score-function gradient of P̂(y), averaged over independent runs, matches the
    exact gradient of P(y) within Z standard errors of that average."""
    exact, approx = _pair(1, 2000, seed=0)
    logits = _probs(3, 10, 2, seed=7, temp=0.5).requires_grad_(True)
    labels = torch.tensor([[7, 0], [2, 1], [5, 1]])        # sums 7, 12, 15

    def grad(prog):
        ps = [torch.softmax(logits[:, i], -1) for i in range(2)]
        return torch.autograd.grad(prog(ps, labels).exp().sum(), logits)[0]

    ge = grad(exact)
    runs = torch.stack([grad(approx) for _ in range(20)])
    mean, sem = runs.mean(0), runs.std(0) / math.sqrt(len(runs))
    assert float(ge.abs().max()) > 1e-3
    assert bool(((mean - ge).abs() <= Z * sem + 1e-4).all())
    # and the estimate is not trivially zero or of the wrong sign
    assert float((mean * ge).sum()) > 0.9 * float((ge * ge).sum())


def test_evidence_ratio_estimate():
    text = ("0.1::burglary. 0.2::earthquake.\nalarm :- burglary.\nalarm :- earthquake.\n"
            "evidence(alarm, true).\nquery(burglary).\n")
    exact = CompiledProgram.from_program(text, None, networks=[])
    S = 40000
    approx = SampledProgram.from_program(text, None, networks=[], samples=S, seed=0)
    p = float(exact.label_marginals([])[0][0, 1])
    m, se = approx.estimate([])
    assert abs(p - 0.1 / 0.28) < 1e-9
    n_e = S * 0.28
    assert abs(float(m[0][0, 1]) - p) <= Z * math.sqrt(p * (1 - p) / n_e)
    assert float(se[0][0, 1]) == pytest.approx(math.sqrt(p * (1 - p) / n_e), rel=0.2)


def test_learnable_fact_gradient_sign():
    """Sampling trains t(_) parameters too: observing the head raises the fact's probability."""
    text = "t(0.3)::rain. 0.6::sprinkler.\nwet :- rain.\nwet :- sprinkler.\nquery(wet).\n"
    approx = SampledProgram.from_program(text, None, networks=[], samples=4000, seed=0)
    lp = approx([], torch.tensor([[1]]))
    p = float(lp.detach().exp())
    exact = CompiledProgram.from_program(text, None, networks=[])
    assert p == pytest.approx(float(exact([], torch.tensor([[1]])).exp()), abs=0.04)
    (g,) = torch.autograd.grad(lp.sum(), approx.fact_logits)
    assert float(g[0]) > 0


def _digit_data(n_examples, seed):
    """Synthetic 'images': a fixed random 16-d prototype per digit plus noise."""
    g = torch.Generator().manual_seed(seed)
    protos = torch.randn(10, 16, generator=torch.Generator().manual_seed(123)) * 1.5
    d = torch.randint(0, 10, (n_examples, 2), generator=g)
    x = protos[d] + torch.randn(n_examples, 2, 16, generator=g)
    return x, d


def test_training_with_sampling_learns_and_matches_exact_marginals():
    """MNIST-Addition N = 1 from the sums only, with sampled inference (S = 100): the digit
    classifier learns (from chance 0.1 to >= 0.9), and after training the sampled marginals of
    the trained network agree with the exact circuit's within Z standard errors."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)        # one thread: the same trained network on every run
    try:
        _train_and_check()
    finally:
        torch.set_num_threads(threads)


def _train_and_check():
    torch.manual_seed(0)
    exact, approx = _pair(1, 100, seed=0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 10), torch.nn.Softmax(-1))
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    x, d = _digit_data(800, seed=1)
    labels = sum_labels(d[:, 0], d[:, 1], 1, exact)
    for _epoch in range(6):
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(_epoch))
        for s in range(0, len(x), 32):
            ix = perm[s:s + 32]
            p = net(x[ix].reshape(-1, 16)).reshape(len(ix), 2, 10)
            loss = -approx([p[:, 0], p[:, 1]], labels[ix]).mean()
            assert torch.isfinite(loss)
            opt.zero_grad()
            loss.backward()
            opt.step()
    xt, dt = _digit_data(400, seed=2)
    with torch.no_grad():
        pt = net(xt.reshape(-1, 16)).reshape(len(xt), 2, 10)
    acc = float((pt.argmax(-1) == dt).float().mean())
    assert acc >= 0.9, acc
    S = 4000
    check = SampledProgram.from_program(*_shape(1), samples=S, seed=5,
                                        concept_order=addition_program(1).concept_order)
    ps = [pt[:50, 0].double(), pt[:50, 1].double()]
    for e, a in zip(exact.label_marginals(ps), check.label_marginals(ps)):
        bad = ((a.detach() - e).abs() > tol(e, S)).nonzero().tolist()
        assert not bad, [(r, c, float(a[r, c]), float(e[r, c])) for r, c in bad]


def test_exact_budget_error_names_the_approximate_option():
    s = addition_program(2)
    with pytest.raises(BudgetExceeded) as exc:
        CompiledProgram.from_program(s.text, s.queries, concept_order=s.concept_order,
                                     use_cache=False, budget=Budget(max_circuit_nodes=50))
    assert "--inference sample:S" in str(exc.value)
    assert "--max-circuit-nodes 50" in str(exc.value)
    # the same program under the same budget runs with sampling (grounding only)
    prog = build_program(s.text, s.queries, inference="sample:200", seed=0,
                         concept_order=s.concept_order, budget=Budget(max_circuit_nodes=50))
    ps = [torch.full((2, 10), 0.1)] * 4
    assert prog(ps, torch.tensor([[0, 0, 0], [3, 4, 1]])).shape == (2,)


def test_infer_cli_prints_estimate_with_standard_error(tmp_path):
    from click.testing import CliRunner

    from nesybench.cli import cli
    prog = tmp_path / "alarm.pl"
    prog.write_text("0.1::burglary. 0.2::earthquake.\nalarm :- burglary.\n"
                    "alarm :- earthquake.\nevidence(alarm, true).\nquery(burglary).\n")
    res = CliRunner().invoke(cli, ["nesy", "infer", str(prog), "--inference", "sample:20000"])
    assert res.exit_code == 0, res.output
    line = res.output.strip().splitlines()[-1]
    assert line.startswith("burglary: ") and "standard error, 20000 samples" in line
    value = float(line.split()[1])
    assert abs(value - 0.1 / 0.28) < Z * math.sqrt(0.357 * 0.643 / (20000 * 0.28))


def test_build_semantics_samples_a_task_program():
    """--inference sample:S on a shortcut task: the task's ProbLog program, sampled, agrees with
    the exact world enumeration within the tolerance."""
    from nesybench.nesy.learn.engines import build_semantics
    from nesybench.nesy.inference.semantics import WorldEnumeration
    from nesybench.shortcuts.task import load_task

    task = load_task("curricula/rs/xor.yaml")
    S = 4000
    sem = build_semantics("worlds", task, inference=f"sample:{S}", seed=0)
    assert isinstance(sem, SampledProgram)
    exact = WorldEnumeration(task)
    assert [[str(v) for v in d] for d in sem.label_domains] == \
        [[str(v) for v in d] for d in exact.label_domains]
    g = torch.Generator().manual_seed(0)
    ps = [torch.softmax(torch.randn(5, k, generator=g, dtype=torch.float64), 1)
          for k in exact.concept_domains]
    for e, a in zip(exact.label_marginals(ps), sem.label_marginals(ps)):
        assert bool(((a.detach() - e).abs() <= tol(e, S)).all())
