"""Top-k proofs inference (nesybench.nesy.inference.topk): exact where nothing is truncated (textbook
multi-digit addition, negation, annotated disjunctions, evidence, learnable facts), a lower
bound growing with K on addition, exact DNF probabilities against enumerated worlds, gradients
that train, and `--inference topk:K` on the command line."""
from __future__ import annotations

import importlib.util
import itertools
import json
import math
import random

import pytest
import torch

from nesybench.errors import NesyError
from nesybench.nesy.inference.approx import build_program, parse_inference
from nesybench.nesy.inference.circuit import CompiledProgram
from nesybench.nesy.inference.topk import TopKProgram, disjoint_terms

#: more proofs than any node of the programs below has: nothing is ever cut
ALL = 10 ** 6

NEGATION = """
0.3::a. 0.6::b. 0.4::c.
0.2::col(r); 0.5::col(g); 0.3::col(b).
nn(net, [X], Y, [0, 1, 2]) :: d(X, Y).
t(0.3)::f.
p :- a, \\+ b.
p :- col(g), \\+ c.
p :- d(x1, 0), \\+ d(x2, 1).
q :- \\+ p, col(r).
q :- f, \\+ r2.
r2 :- d(x1, 2); d(x2, 2); col(b).
s :- \\+ q, \\+ p.
"""
NEGATION_QUERIES = ["p", "q", "r2", "s"]

#: a categorical label over a partial annotated disjunction (a residual outcome), negation
#: inside a rule with a label variable, and two neural choices over four values
COLOURS = """
0.1::w(red); 0.3::w(green); 0.2::w(blue).
nn(net, [X], Y, [0, 1, 2, 3]) :: d(X, Y).
0.7::on.
out(Z) :- d(x1, Z), \\+ w(red).
out(Z) :- d(x2, Z), on, \\+ d(x1, Z).
out(3) :- w(blue), \\+ on.
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))


def _addition_text(root) -> str:
    spec = importlib.util.spec_from_file_location("nesy_programs",
                                                  root / "benchmarks" / "nesy_programs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ADDITION


_ADDITION: dict = {}


def _addition(root, n):
    """``(text, queries, ground program, exact circuit)`` of the textbook addition over two
    ``n``-digit numbers, built once per test session."""
    if n not in _ADDITION:
        from nesybench.nesy.program.program import ground
        text, queries = _addition_text(root), _addition_query(n)
        _ADDITION[n] = (text, queries, ground(text, queries),
                        CompiledProgram.from_program(text, queries, use_cache=False))
    return _ADDITION[n]


def _addition_query(n: int) -> list[str]:
    a = ", ".join(f"a{i}" for i in range(n))
    b = ", ".join(f"b{i}" for i in range(n))
    return [f"multi_addition([{a}], [{b}], Z)"]


def _digits(b, n_concepts, k=10, seed=0, temp=2.0):
    g = torch.Generator().manual_seed(seed)
    return [torch.softmax(torch.randn(b, k, generator=g, dtype=torch.float64) * temp, 1)
            for _ in range(n_concepts)]


def _max_err(xs, ys) -> float:
    return max(float((x.detach() - y.detach()).abs().max()) for x, y in zip(xs, ys))


# -- choosing it ----------------------------------------------------------------------------
def test_parse_inference_topk():
    assert parse_inference("topk:3") == ("topk", 3)
    assert parse_inference("topk")[0] == "topk"
    for bad in ("topk:0", "topk:-2", "topk:x", "topk:1.5", "topk:"):
        if bad == "topk:":
            assert parse_inference(bad)[0] == "topk"      # the default K, as "topk"
            continue
        with pytest.raises(NesyError, match="integer >= 1"):
            parse_inference(bad)
    with pytest.raises(NesyError, match="topk:K"):
        parse_inference("kbest:3")
    with pytest.raises(NesyError):
        TopKProgram.from_program("0.5::a.\nquery(a).\n", None, networks=[], k=0)


# -- exact where nothing is cut ----------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2])
def test_textbook_addition_exact_when_k_is_large(root, n):
    text, queries, gp, exact = _addition(root, n)
    top = build_program(text, queries, inference=f"topk:{ALL}")
    assert isinstance(top, TopKProgram) and top.k == ALL
    assert top.label_domains == exact.label_domains
    assert top.concept_names == exact.concept_names
    ps = _digits(3, 2 * n, seed=n)
    assert _max_err(top.label_marginals(ps), exact.label_marginals(ps)) <= 1e-12
    assert not bool(top.last_truncated.any())
    labels = torch.tensor([[0], [len(top.label_domains[0]) // 2], [7]])
    assert _max_err([top(ps, labels)], [exact(ps, labels)]) <= 1e-12
    # a sum of up to 10^n digit combinations: K = 10^n proofs is already enough
    enough = TopKProgram(gp, k=10 ** n)
    assert _max_err(enough.label_marginals(ps), exact.label_marginals(ps)) <= 1e-12
    assert not bool(enough.last_truncated.any())


@pytest.mark.parametrize("text,queries,n_concepts,k", [
    (NEGATION, NEGATION_QUERIES, 2, 3),
    (COLOURS, ["out(Z)"], 2, 4),
])
def test_negation_and_disjunctions_exact_when_k_is_large(text, queries, n_concepts, k):
    exact = CompiledProgram.from_program(text, queries, use_cache=False)
    top = TopKProgram.from_program(text, queries, k=ALL)
    assert top.label_domains == exact.label_domains
    ps = _digits(4, n_concepts, k=k, seed=3, temp=1.0)
    assert _max_err(top.label_marginals(ps), exact.label_marginals(ps)) <= 1e-12
    assert not bool(top.last_truncated.any())
    # joint labels (forward), every combination that has probability > 0
    doms = [range(len(d)) for d in top.label_domains]
    labels = torch.tensor([list(c) for c in itertools.product(*doms)])
    for row in labels:
        lab = row.expand(4, -1)
        e = exact(ps, lab)
        if bool(torch.isfinite(e).all()):
            assert _max_err([top(ps, lab)], [e]) <= 1e-12
    # a small K is flagged as cut
    small = TopKProgram.from_program(text, queries, k=1)
    small.label_marginals(ps)
    assert bool(small.last_truncated.all())


def test_evidence_and_learnable_fact_exact_when_k_is_large():
    text = NEGATION + "evidence(r2, false).\n"
    exact = CompiledProgram.from_program(text, NEGATION_QUERIES, use_cache=False)
    top = TopKProgram.from_program(text, NEGATION_QUERIES, k=ALL)
    assert top.evidence == exact.evidence == ["r2"]
    assert top.learnable_facts == exact.learnable_facts == ["f"]
    ps = _digits(3, 2, k=3, seed=5, temp=1.0)
    assert _max_err(top.label_marginals(ps), exact.label_marginals(ps)) <= 1e-12
    labels = torch.tensor([[1, 0, 0, 0], [0, 1, 0, 1], [1, 1, 0, 0]])
    e, t = exact(ps, labels), top(ps, labels)
    ok = torch.isfinite(e)
    assert float((e[ok] - t[ok]).detach().abs().max()) <= 1e-12
    assert bool((t[~ok] < -700).all())                    # log 0, clamped
    # gradient of the learnable fact agrees with the circuit's
    ge = torch.autograd.grad(e[ok].sum(), exact.fact_logits)[0]
    gt = torch.autograd.grad(t[ok].sum(), top.fact_logits)[0]
    assert float((ge - gt).abs().max()) <= 1e-10
    # alarm: P(burglary | alarm) = 0.1 / 0.28
    alarm = ("0.1::burglary. 0.2::earthquake.\nalarm :- burglary.\nalarm :- earthquake.\n"
             "evidence(alarm, true).\nquery(burglary).\n")
    m = TopKProgram.from_program(alarm, None, networks=[], k=2).label_marginals([])
    assert float(m[0][0, 1]) == pytest.approx(0.1 / 0.28, abs=1e-12)


# -- the error for small K: a lower bound that grows with K ------------------------------------
def test_small_k_is_a_lower_bound_growing_to_exact(root):
    """Textbook addition N = 1, 2: each value's top-K probability is at most the exact one
    and grows with K to it. Measured here (random digit distributions, softmax of 2 x N(0, 1)
    logits, 4 examples): the largest error over all sum values."""
    report = {}
    for n in (1, 2):
        _, _, gp, exact = _addition(root, n)
        ps = _digits(3, 2 * n, seed=10 + n)
        pe = exact.label_marginals(ps)[0]
        prev = None
        for k in (1, 2, 3, 5, 10, 30, 10 ** n):
            pk = TopKProgram(gp, k=k).label_marginals(ps)[0].detach()
            assert bool((pk <= pe + 1e-12).all())
            if prev is not None:
                assert bool((pk >= prev - 1e-12).all())
            prev = pk
            report[(n, k)] = float((pe - pk).max())
        assert report[(n, 10 ** n)] <= 1e-12
    # the bound is loose for K = 1 and tightens: K = 10 leaves less than a third of it
    for n in (1, 2):
        assert report[(n, 1)] > 0.01
        assert report[(n, 10)] < report[(n, 1)] / 3
    print("max P_exact - P_topK:", {f"N={n} K={k}": f"{v:.3g}" for (n, k), v in report.items()})


# -- the DNF probability against enumerated worlds ---------------------------------------------
def test_disjoint_terms_match_enumerated_worlds():
    """Random DNFs over three categorical choices (value masks, as negation makes them): the
    sum over the disjoint terms equals the probability mass of the worlds some proof holds in."""
    rng = random.Random(0)
    sizes = [2, 3, 4]
    probs = []
    for d in sizes:
        w = [rng.random() + 0.05 for _ in range(d)]
        probs.append([x / sum(w) for x in w])
    for _ in range(200):
        proofs = []
        for _ in range(rng.randint(0, 5)):
            cs = sorted(rng.sample(range(3), rng.randint(0, 3)))
            proofs.append(tuple((c, rng.randint(1, (1 << sizes[c]) - 2)) for c in cs))
        brute = 0.0
        for world in itertools.product(*(range(d) for d in sizes)):
            if any(all((m >> world[c]) & 1 for c, m in p) for p in proofs):
                brute += math.prod(probs[c][v] for c, v in enumerate(world))
        terms = disjoint_terms(proofs, sizes)
        total = sum(math.prod(sum(probs[c][v] for v in range(sizes[c]) if (m >> v) & 1)
                              for c, m in t) for t in terms)
        assert total == pytest.approx(brute, abs=1e-12)
        # disjoint: no world satisfies two terms
        for world in itertools.product(*(range(d) for d in sizes)):
            hits = sum(all((m >> world[c]) & 1 for c, m in t) for t in terms)
            assert hits <= 1


def test_tiny_program_against_enumerated_worlds():
    """Every label value of the negation program, K large, against the sum over all
    3 x 3 x 2 x 2 x 3 x 2 x 2 worlds of its ground DAG evaluated by hand."""
    from nesybench.nesy.program.program import ground
    gp = ground(NEGATION, NEGATION_QUERIES)
    top = TopKProgram(gp, k=ALL)
    ps = _digits(2, 2, k=3, seed=9, temp=1.0)
    marg = top.label_marginals(ps)
    dists = []
    for c in gp.choices:
        dists.append(None if c.neural else list(c.probs))
    for b in range(2):
        rows = [ps[i][b].tolist() for i in range(2)] + dists[2:]
        brute = [torch.zeros(len(lab.values), dtype=torch.float64) for lab in gp.labels]
        for world in itertools.product(*(range(len(c.values)) for c in gp.choices)):
            w = math.prod(rows[c][v] for c, v in enumerate(world))
            val = {}

            def truth(k):
                if k is None:
                    return False
                if k == 0:
                    return True
                if k < 0:
                    return not truth(-k)
                if k not in val:
                    nd = gp.nodes[k]
                    if nd[0] == "lit":
                        val[k] = world[nd[1]] == nd[2]
                    elif nd[0] == "and":
                        val[k] = all(truth(x) for x in nd[1])
                    else:
                        val[k] = any(truth(x) for x in nd[1])
                return val[k]
            for j, lab in enumerate(gp.labels):
                for i, nd in enumerate(lab.nodes):
                    if truth(nd):
                        brute[j][i] += w
        for j in range(len(gp.labels)):
            assert float((marg[j][b].detach() - brute[j]).abs().max()) <= 1e-12


# -- gradients ---------------------------------------------------------------------------------
def test_gradients_match_exact_and_a_training_step_moves_the_network(root):
    _, _, gp, exact = _addition(root, 1)
    top = TopKProgram(gp, k=ALL)
    logits = torch.randn(3, 2, 10, generator=torch.Generator().manual_seed(1),
                         dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([[7], [12], [3]])

    def grad(prog):
        ps = [torch.softmax(logits[:, i], -1) for i in range(2)]
        return torch.autograd.grad(prog(ps, labels).sum(), logits)[0]
    assert float((grad(top) - grad(exact)).abs().max()) <= 1e-10
    # a training step with K = 3 changes the network and raises the bound
    torch.manual_seed(0)
    small = TopKProgram(gp, k=3)
    net = torch.nn.Linear(4, 10)
    x = torch.randn(6, 2, 4)
    y = torch.tensor([[3], [9], [12], [5], [10], [1]])
    before = [p.detach().clone() for p in net.parameters()]
    opt = torch.optim.SGD(net.parameters(), lr=0.5)

    def loss():
        p = torch.softmax(net(x), -1)
        return -small([p[:, 0], p[:, 1]], y).mean()
    first = loss()
    opt.zero_grad()
    first.backward()
    assert all(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in net.parameters())
    opt.step()
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, net.parameters()))
    assert float(loss().detach()) < float(first.detach())


# -- everywhere sampling is ---------------------------------------------------------------------
def test_build_semantics_topk_on_a_task():
    from nesybench.nesy.learn.engines import build_semantics
    from nesybench.nesy.inference.semantics import WorldEnumeration
    from nesybench.shortcuts.task import load_task

    task = load_task("curricula/rs/xor.yaml")
    sem = build_semantics("circuit", task, inference=f"topk:{ALL}")
    assert isinstance(sem, TopKProgram)
    exact = WorldEnumeration(task)
    g = torch.Generator().manual_seed(0)
    ps = [torch.softmax(torch.randn(5, k, generator=g, dtype=torch.float64), 1)
          for k in exact.concept_domains]
    assert _max_err(sem.label_marginals(ps), exact.label_marginals(ps)) <= 1e-12


def test_infer_cli_topk(tmp_path):
    from click.testing import CliRunner

    from nesybench.cli import cli
    prog = tmp_path / "alarm.pl"
    prog.write_text("0.1::burglary. 0.2::earthquake.\nalarm :- burglary.\n"
                    "alarm :- earthquake.\nquery(alarm).\nquery(burglary).\n")
    res = CliRunner().invoke(cli, ["nesy", "infer", str(prog), "--inference", "topk:3"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines == ["alarm: 0.28", "burglary: 0.1"]
    # K = 1 keeps the more probable proof of alarm only: a lower bound
    res = CliRunner().invoke(cli, ["nesy", "infer", str(prog), "--inference", "topk:1",
                                   "--json"])
    out = json.loads(res.output)
    assert out["results"][0]["p"] == pytest.approx(0.2)
    assert out["stats"]["inference"] == "topk:1"


@pytest.mark.parametrize("bad", ["topk:0", "topk:-1", "topk:two"])
def test_infer_cli_bad_k_is_one_line_exit_2(tmp_path, capsys, bad):
    from nesybench.cli import main
    prog = tmp_path / "a.pl"
    prog.write_text("0.5::a.\nquery(a).\n")
    assert main(["nesy", "infer", str(prog), "--inference", bad]) == 2
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1, err
    assert "integer >= 1" in err and out == ""


def test_train_cli_topk(root, tmp_path, capsys):
    from nesybench.cli import main
    from nesybench.shortcuts.generate import generate
    from nesybench.shortcuts.task import load_task
    data = tmp_path / "xor"
    generate(load_task(root / "curricula/rs/xor.yaml"), data, seed=0,
             samples={"train": 16, "val": 8, "test": 8, "ood": 0})
    threads = torch.get_num_threads()
    try:
        rc = main(["nesy", "train", str(root / "curricula/rs/xor.yaml"), "--model", "dpl",
                   "--semantics", "circuit", "--data", str(data), "--epochs", "1", "--batch",
                   "8", "--threads", "1", "--inference", "topk:2", "--out",
                   str(tmp_path / "run"), "--json"])
    finally:
        torch.set_num_threads(threads)
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["config"]["inference"] == "topk:2"
    assert main(["nesy", "train", str(root / "curricula/rs/xor.yaml"), "--inference",
                 "topk:0", "--out", str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("text, bound, exact", [
    ("0.4::a. 0.5::b.\nr :- a.\nr :- b.\nquery(r).\n", "lower bound", 0.7),
    ("0.4::a. 0.5::b. 0.3::c.\nq :- a, \\+ b.\nq :- c.\nquery(q).\n", "no bound: negation",
     0.44),
    ("0.4::a. 0.5::b.\nr :- a.\nr :- b.\nquery(r).\nevidence(b, false).\n",
     "no bound: evidence", 0.4),
])
def test_infer_says_when_top_k_is_no_bound(text, bound, exact, tmp_path, capsys):
    """The JSON of `nesy infer --inference topk:K` names what the number is to the exact
    probability, and whether a proof was cut (with none cut it is the exact value)."""
    from nesybench.cli import main as cli_main
    prog = tmp_path / "p.pl"
    prog.write_text(text)
    runs = {}
    for k in (1, 50):
        assert cli_main(["nesy", "infer", str(prog), "--inference", f"topk:{k}",
                         "--json"]) == 0
        runs[k] = json.loads(capsys.readouterr().out)
    assert {r["stats"]["bound"] for r in runs.values()} == {bound}
    assert runs[1]["stats"]["truncated"] and not runs[50]["stats"]["truncated"]
    assert runs[50]["results"][0]["p"] == pytest.approx(exact, abs=1e-12)
    if bound == "lower bound":
        assert runs[1]["results"][0]["p"] <= exact
