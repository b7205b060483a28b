"""Learnable probabilities held as logits or as probabilities, and DeepProbLog's optimiser.

Oracles: ProbLog evaluates the same program with the ``t(_)`` annotations replaced by the
numbers the module holds (values, and gradients by central differences of ProbLog's own
answers); the optimiser's step is checked against DeepProbLog's update written out by hand
(``P ← clip(P − lr·g, 0, 1)``, each disjunction divided by its sum).
"""
from __future__ import annotations

import math

import pytest
import torch

from nesybench.errors import NesyError
from nesybench.nesy.inference.approx import SampledProgram
from nesybench.nesy.inference.circuit import CompiledProgram
from nesybench.nesy.inference.learnable import ProbabilitySGD

RULES = """wet :- rain.
wet :- sprinkler, \\+ weather(storm).
slippery :- wet, weather(cloud).
"""


def program(rain="t(0.3)", sprinkler="t(0.6)", ads=("t(0.5)", "t(0.3)", "t(0.2)")) -> str:
    sun, cloud, storm = ads
    return (f"{rain}::rain.\n{sprinkler}::sprinkler.\n"
            f"{sun}::weather(sun); {cloud}::weather(cloud); {storm}::weather(storm).\n" + RULES)


def problog(text: str, query: str) -> float:
    from problog import get_evaluatable
    from problog.program import PrologString

    res = get_evaluatable("sdd").create_from(PrologString(text + f"query({query}).\n")).evaluate()
    (value,) = res.values()
    return float(value)


def compiled(query: str, semiring: str = "log") -> CompiledProgram:
    return CompiledProgram.from_program(program(), [query], networks=[], use_cache=False,
                                        semiring=semiring)


def prob_true(prog) -> torch.Tensor:
    """P(query) as a differentiable scalar, from the module's label marginals."""
    dom = prog.label_domains[0]
    lab = torch.tensor([[dom.index(1)]])
    return torch.exp(prog([], lab)[0])            # forward gives log P in either semiring


HEADS = ["weather(sun)", "weather(cloud)", "weather(storm)"]


def numbers(prog) -> dict[str, float]:
    """The module's probabilities by name; heads that grounding never reached share the
    disjunction's residual outcome (the query cannot tell them apart), split evenly."""
    out = prog.learned_probabilities()
    missing = [h for h in HEADS if h not in out]
    residual = [k for k in out if k not in HEADS and k not in ("rain", "sprinkler")]
    assert len(residual) == (1 if missing else 0)
    for h in missing:
        out[h] = out[residual[0]] / len(missing)
    return out


def problog_at(values: dict[str, float], query: str) -> float:
    v = {k: f"{x!r}" for k, x in values.items()}
    text = program(v["rain"], v["sprinkler"],
                   (v["weather(sun)"], v["weather(cloud)"], v["weather(storm)"]))
    return problog(text, query)


@pytest.mark.parametrize("semiring", ["log", "real"])
@pytest.mark.parametrize("query", ["wet", "slippery"])
def test_both_spaces_compute_problogs_value(query, semiring):
    prog = compiled(query, semiring)
    want = problog_at(numbers(prog), query)
    with torch.no_grad():
        assert float(prob_true(prog)) == pytest.approx(want, abs=1e-6)    # float32 logits
    prog.use_probability_parameters()
    assert prog.fact_logits is None and prog.ad_logits is None
    assert prog.fact_probs.dtype == torch.float64
    with torch.no_grad():
        assert float(prob_true(prog)) == pytest.approx(problog_at(numbers(prog), query),
                                                       abs=1e-12)


@pytest.mark.parametrize("query", ["wet", "slippery"])
def test_probability_space_gradient_is_problogs_partial_derivative(query):
    """∂P(q)/∂P(parameter), each parameter moved alone (the disjunction's heads too: DeepProbLog
    differentiates each head's probability on its own, the normalisation is the optimiser's)."""
    prog = compiled(query, "real").use_probability_parameters()
    p = prob_true(prog)
    p.backward()
    grads = dict(zip(prog.learnable_facts, prog.fact_probs.grad.tolist()))
    for heads, g in zip(prog.learnable_ads, torch.split(prog.ad_probs.grad, prog.ad_sizes)):
        grads.update(zip(heads, g.tolist()))
    base = numbers(prog)
    h = 1e-4
    for name, g in grads.items():
        if name not in HEADS + ["rain", "sprinkler"]:   # the residual: any head it stands for
            name = next(n for n in HEADS if n not in prog.learned_probabilities())
        up, down = dict(base), dict(base)
        up[name] += h
        down[name] -= h
        if name.startswith("weather"):
            # ProbLog refuses a disjunction summing past 1: move the others' residual instead
            # (the circuit is linear in each head, so the partial derivative is unchanged)
            fd = (_ad_value(up, query) - _ad_value(down, query)) / (2 * h)
        else:
            fd = (problog_at(up, query) - problog_at(down, query)) / (2 * h)
        assert g == pytest.approx(fd, abs=1e-7), name


def _ad_value(values: dict[str, float], query: str) -> float:
    """P(query) as a linear function of each head's probability: ProbLog's value with the
    heads scaled to sum 1, times the scale (the circuit is homogeneous of degree 1 in a
    disjunction whose heads cover every world)."""
    s = sum(values[h] for h in HEADS)
    scaled = dict(values, **{h: values[h] / s for h in HEADS})
    return problog_at(scaled, query) * s


def test_sgd_step_is_deepproblogs_update():
    prog = compiled("slippery", "real").use_probability_parameters()
    lr = 0.05
    opt = ProbabilitySGD(prog, lr=lr)
    before_f = prog.fact_probs.detach().clone()
    before_a = prog.ad_probs.detach().clone()
    loss = -torch.log(prob_true(prog))
    opt.zero_grad()
    loss.backward()
    gf, ga = prog.fact_probs.grad.clone(), prog.ad_probs.grad.clone()
    opt.step()
    want_f = (before_f - lr * gf).clamp(0, 1)
    raw = (before_a - lr * ga).clamp(0, 1)
    want_a = raw / raw.sum()
    assert torch.allclose(prog.fact_probs.detach(), want_f, atol=1e-15, rtol=0)
    assert torch.allclose(prog.ad_probs.detach(), want_a, atol=1e-15, rtol=0)
    assert float(prog.ad_probs.detach().sum()) == pytest.approx(1.0, abs=1e-15)
    # raising P(slippery) needs cloud weather and rain
    assert prog.fact_probs[0] > before_f[0]
    cloud = prog.learnable_ads[0].index("weather(cloud)")
    assert prog.ad_probs[cloud] > before_a[cloud]


def test_sgd_clips_to_the_unit_interval_and_keeps_disjunctions_distributions():
    prog = compiled("slippery", "real").use_probability_parameters()
    opt = ProbabilitySGD(prog, lr=100.0)
    loss = -torch.log(prob_true(prog))
    loss.backward()
    opt.step()
    assert float(prog.fact_probs.detach()[0]) == 1.0            # rain: pushed far past 1, clipped
    assert torch.all((prog.ad_probs >= 0) & (prog.ad_probs <= 1))
    assert float(prog.ad_probs.detach().sum()) == pytest.approx(1.0, abs=1e-12)


def test_sgd_finds_the_maximum_likelihood_probability():
    """70 of 100 observations say ``wet`` with only ``rain`` learnable: the likelihood is
    maximal where P(wet) = 0.7, i.e. P(rain) = 1 − 0.3 / (1 − P(sprinkler ∧ ¬storm))."""
    text = program("t(0.5)", "0.6", ("0.5", "0.3", "0.2"))
    prog = CompiledProgram.from_program(text, ["wet"], networks=[], use_cache=False)
    prog.use_probability_parameters()
    opt = ProbabilitySGD(prog, lr=0.05)
    dom = prog.label_domains[0]
    wet, dry = torch.tensor([[dom.index(1)]]), torch.tensor([[dom.index(0)]])
    for _ in range(1000):
        opt.zero_grad()
        (-(0.7 * prog([], wet) + 0.3 * prog([], dry)).sum()).backward()
        opt.step()
    q = 0.6 * 0.8
    assert float(prog.fact_probs.detach()[0]) == pytest.approx(1 - 0.3 / (1 - q), abs=1e-6)


def test_sampled_program_holds_probabilities_too():
    prog = SampledProgram.from_program(program(), ["slippery"], networks=[], samples=64, seed=0)
    before = numbers(prog)
    prog.use_probability_parameters()
    assert numbers(prog) == pytest.approx(before, abs=1e-7)
    est, _ = prog.estimate([])
    assert est[0].shape[-1] == len(prog.label_domains[0])
    ProbabilitySGD(prog, lr=1e-3)           # accepted: its parameters are probabilities


def test_optimiser_refuses_logits_and_bad_rates():
    prog = compiled("wet")
    with pytest.raises(NesyError, match="use_probability_parameters"):
        ProbabilitySGD(prog)
    prog.use_probability_parameters()
    with pytest.raises(NesyError, match="lr must be > 0"):
        ProbabilitySGD(prog, lr=0.0)
    assert prog.use_probability_parameters() is prog       # idempotent


def test_state_dict_round_trip_in_probability_space():
    prog = compiled("slippery", "real").use_probability_parameters()
    opt = ProbabilitySGD(prog, lr=0.05)
    (-torch.log(prob_true(prog))).backward()
    opt.step()
    state = prog.state_dict()
    assert {"fact_probs", "ad_probs"} <= set(state) and "fact_logits" not in state
    fresh = compiled("slippery", "real").use_probability_parameters()
    fresh.load_state_dict(state)
    assert fresh.learned_probabilities() == prog.learned_probabilities()
    with torch.no_grad():
        assert float(prob_true(fresh)) == float(prob_true(prog))


def test_probability_sgd_equals_deepproblogs_update_made_on_a_logit():
    """The noisy-addition fact trained with the networks for 100 steps: ProbabilitySGD and
    DeepProbLog's update written on a float32 logit (P ← P − lr·∂L/∂P, ∂L/∂P from the logit's
    gradient) follow the same path up to rounding."""
    from test_nesy_dpl_programs import noisy_addition

    g = torch.Generator().manual_seed(0)
    n = 200
    digits = torch.randint(0, 10, (n, 2), generator=g)
    labels = digits.sum(1)

    def run(space: str):
        prog = CompiledProgram.from_program(noisy_addition("t(0.1)"), ["addition_noisy(x1, x2, Z)"],
                                            networks=["mnist_net"], concept_order=["x1", "x2"],
                                            use_cache=False)
        lab = prog.label_index(labels.tolist())
        logits = torch.nn.Parameter(torch.randn(n, 2, 10, generator=torch.Generator()
                                                .manual_seed(1)) * 0.1)
        opt = torch.optim.Adam([logits], lr=1e-2)
        if space == "probability":
            prob_opt = ProbabilitySGD(prog.use_probability_parameters(), lr=0.05)
        for s in range(100):
            ix = torch.arange(2 * s % n, 2 * s % n + 2)
            probs = torch.softmax(logits[ix], -1)
            loss = -prog([probs[:, 0], probs[:, 1]], lab[ix]).mean()
            opt.zero_grad()
            if space == "probability":
                prob_opt.zero_grad()
            loss.backward()
            opt.step()
            if space == "probability":
                prob_opt.step()
                continue
            with torch.no_grad():
                th = prog.fact_logits
                p = torch.sigmoid(th)
                p_new = (p - 0.05 * th.grad / (p * (1 - p))).clamp(1e-6, 1 - 1e-6)
                th.copy_(torch.log(p_new) - torch.log1p(-p_new))
                th.grad = None
        return prog.learned_probabilities()["noisy"]

    by_logit, by_probability = run("logit"), run("probability")
    assert by_probability != pytest.approx(0.1, abs=1e-3)       # the fact moved
    assert by_probability == pytest.approx(by_logit, abs=1e-5)


def test_a_disjunction_clipped_to_zero_everywhere_becomes_uniform():
    """Every head pushed below 0 at once: DeepProbLog would divide by zero; the optimiser
    makes the disjunction uniform instead."""
    text = "t(0.5)::w(a); t(0.3)::w(b); t(0.2)::w(c).\nany :- w(_).\n"
    prog = CompiledProgram.from_program(text, ["any"], networks=[], use_cache=False,
                                        semiring="real")
    prog.use_probability_parameters()
    opt = ProbabilitySGD(prog, lr=10.0)
    prob_true(prog).backward()          # minimise P(any): every head's gradient is +1
    assert torch.all(prog.ad_probs.grad > 0)
    opt.step()
    assert prog.ad_probs.detach().tolist() == pytest.approx([1 / 3] * 3, abs=1e-15)
    # a small step leaves the heads summing to less than 1: divided by their sum
    prog = CompiledProgram.from_program(text, ["any"], networks=[], use_cache=False,
                                        semiring="real").use_probability_parameters()
    opt = ProbabilitySGD(prog, lr=0.01)
    prob_true(prog).backward()
    opt.step()
    raw = [0.5 - 0.01, 0.3 - 0.01, 0.2 - 0.01]
    # (the heads start from float32 logits: 1e-8 off the annotations)
    assert prog.ad_probs.detach().tolist() == pytest.approx([r / sum(raw) for r in raw],
                                                            abs=1e-7)


def test_parameters_start_at_the_annotations_in_either_space():
    """The logit of ``t(0.3)`` is log(0.3/0.7); the heads start at their annotations."""
    want = {"rain": 0.3, "sprinkler": 0.6, "weather(sun)": 0.5, "weather(cloud)": 0.3,
            "weather(storm)": 0.2}
    prog = compiled("slippery")
    got = numbers(prog)
    assert {k: got[k] for k in want} == pytest.approx(want, abs=1e-7)
    assert float(prog.fact_logits[0]) == pytest.approx(math.log(0.3 / 0.7), abs=1e-6)
    # one parameter per learnable probability, nothing else
    assert sum(p.numel() for p in prog.parameters()) == len(want)
    prog.use_probability_parameters()
    got = numbers(prog)
    assert {k: got[k] for k in want} == pytest.approx(want, abs=1e-7)
    assert sum(p.numel() for p in prog.parameters()) == len(want)
    facts_only = CompiledProgram.from_program("t(0.4)::a.\nq :- a.\n", ["q"], networks=[],
                                              use_cache=False).use_probability_parameters()
    assert [p.numel() for p in facts_only.parameters()] == [1, 0]


@pytest.mark.parametrize("space", ["logit", "probability"])
def test_probabilities_come_in_the_dtype_asked_for(space):
    prog = compiled("slippery")
    if space == "probability":
        prog.use_probability_parameters()
    for dtype in (torch.float32, torch.float64):
        assert prog.fact_probabilities(dtype).dtype == dtype
        assert all(t.dtype == dtype for t in prog.ad_probabilities(dtype))
        assert all(t.dtype == dtype for t in prog.fact_probability_pair(dtype, log=True))


def test_default_learning_rate_is_deepproblogs_example():
    prog = compiled("wet").use_probability_parameters()
    assert ProbabilitySGD(prog).param_groups[0]["lr"] == 1e-3
