"""SKI rules and injectors: Prolog compilation, KBANN/KINS/KILL on a hand-made rule, bad rules."""
import itertools

import pytest
import torch

from nesybench.errors import NesyError
from nesybench.logic import prolog
from nesybench.ski import cells, injectors, rules

import torch as _torch  # noqa: E402

_torch.set_num_threads(1)   # tiny tensors: threads only add overhead on a shared machine

RULE = """
class(X, pos) :- hot(X, a), \\+ hot(X, b).
class(X, neg) :- \\+ class(X, pos).
"""
BOOL = torch.tensor(list(itertools.product([0.0, 1.0], repeat=2)))      # [4, 2]
TRUTH = (BOOL[:, 0] == 1) & (BOOL[:, 1] == 0)                            # class pos


@pytest.fixture(scope="module")
def kn(tmp_path_factory):
    p = tmp_path_factory.mktemp("kb") / "two.pl"
    p.write_text(RULE)
    return rules.load_knowledge(p, ["a", "b"], ["pos", "neg"])


def test_compiled_trees(kn):
    assert kn.order == ["class:pos", "class:neg"]
    assert kn.concepts["class:pos"] == [{"op": "and", "args": [
        {"op": "var", "feature": "a"}, {"op": "not", "args": [{"op": "var", "feature": "b"}]}]}]
    t = kn.truths(BOOL)
    assert torch.equal(t[:, 0] == 1, TRUTH) and torch.equal(t[:, 1] == 1, ~TRUTH)


def test_kbann_initial_network_computes_the_rule(kn):
    net = injectors.make("kbann", 2, 2, [], kn)
    params = net.init_params([1, 2, 3])                  # 3 members, default perturbation
    logits = net.forward(params, BOOL.expand(3, -1, -1))
    assert torch.equal(logits[..., 0] > 0, TRUTH.expand(3, -1))
    assert torch.equal(logits[..., 1] > 0, ~TRUTH.expand(3, -1))


def test_kins_module_reproduces_the_rule(kn):
    net = injectors.make("kins", 2, 2, [4, 3], kn)
    params = net.init_params([7])
    u = net.module_truths(params, BOOL.unsqueeze(0))[0]      # [4, 2] sigmoid truths
    assert torch.equal(u[:, 0] > 0.5, TRUTH) and torch.equal(u[:, 1] > 0.5, ~TRUTH)
    assert net.forward(params, BOOL.unsqueeze(0)).shape == (1, 4, 2)


def test_kill_penalty_zero_iff_rules_satisfied(kn):
    net = injectors.make("kill", 2, 2, [4], kn)
    truths = kn.truths(BOOL).unsqueeze(0)                     # [1, 4, 2]
    good = torch.where(truths > 0.5, 10.0, -10.0)            # logits that follow the rules
    assert torch.all(net.penalty(good, truths) < 1e-3)
    exact = torch.log(truths.clamp(min=1e-30))               # p == r exactly where r = 1
    assert torch.all(net.penalty(exact, truths) == 0)
    bad = -good
    assert torch.all(net.penalty(bad, truths) > 0.9)


def test_fuzzy_comparisons_orientation(tmp_path):
    p = tmp_path / "c.pl"
    p.write_text("class(X, hi) :- gt(X, v, 3).\nclass(X, lo) :- lt(X, v, 3).\n")
    kn = rules.load_knowledge(p, ["v"], ["hi", "lo"])
    t = kn.truths(torch.tensor([[2.0], [3.0], [4.0], [3.5]]))
    assert t[:, 0].tolist() == [0.0, 0.0, 1.0, 0.5]           # '>' rises with v
    assert t[:, 1].tolist() == [1.0, 0.0, 0.0, 0.0]           # '<' falls with v


@pytest.fixture(scope="module")
def bcw():
    return cells.dataset("bcw")


def test_kb_files_match_prolog_and_kbann(bcw):
    """The rules evaluated by Prolog, by the fuzzy evaluator and by KBANN's initial network
    agree on real BCW rows (integer data, where the fuzzy ramps are crisp)."""
    kn = cells.knowledge(bcw)
    X = torch.from_numpy(bcw.X[:40])
    t = kn.truths(X)
    prolog.use("prolog/ski/vocab.pl")
    mod = "ski_test_bcw"
    prolog.load_rules_file(mod, rules.KB_FILES["bcw"], ["ski_vocab"])
    for i in range(40):
        sample = {f: float(v) for f, v in zip(bcw.features, bcw.X[i])}
        for k, c in enumerate(bcw.classes):
            res = prolog.once(f"{mod}:class(S, {c})", S=sample)
            assert (res is not None) == bool(t[i, k] == 1), (i, c)
    net = injectors.make("kbann", 9, 2, [], kn, perturb=0.0, extra_units=0)
    logits = net.forward(net.init_params([0]), X.unsqueeze(0))[0]
    assert torch.equal(logits > 0, t == 1)


def test_splice_theory_kbann_initial_network_is_exact():
    ds = cells.dataset("splice")
    kn = cells.knowledge(ds)
    X = torch.from_numpy(ds.X)
    t = kn.truths(X)
    assert set(t.unique().tolist()) <= {0.0, 1.0}
    net = injectors.make("kbann", 240, 3, [], kn, perturb=0.0, extra_units=0)
    logits = net.forward(net.init_params([0]), X.unsqueeze(0))[0]
    assert torch.equal(logits > 0, t == 1)
    # the n rule: n exactly when neither ei nor ie
    assert torch.equal(t[:, 2] == 1, (t[:, 0] == 0) & (t[:, 1] == 0))


@pytest.mark.parametrize("text, msg", [
    ("class(X, pos) :- hot(X, a)\nclass(X, neg).", "syntax"),
    ("class(X, pos) :- shell('rm -rf /').", "unsafe"),
    ("class(X, pos) :- hot(X, zzz).", "lacks"),
    ("class(X, maybe) :- hot(X, a).", "not a class"),
    ("class(X, pos) :- p(X).\np(X) :- class(X, pos).", "recursive"),
    ("class(X, pos) :- frob(X, a, b).", "does not exist"),
    ("class(X, pos) :- 42.", "bad clause|not a literal|callable"),
])
def test_bad_rules(tmp_path, text, msg):
    p = tmp_path / "bad.pl"
    p.write_text(text)
    with pytest.raises(NesyError, match=msg):
        rules.load_knowledge(p, ["a", "b"], ["pos", "neg"])


def test_unknown_injector():
    with pytest.raises(NesyError, match="unknown injector"):
        injectors.make("sem-loss", 2, 2, [4])
    with pytest.raises(NesyError, match="unknown option"):
        injectors.make("uneducated", 2, 2, [4], colour="red")
