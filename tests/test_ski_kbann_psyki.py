"""KBANN with ``construction="psyki"``: PSyKI's KBANN network built by nesybench, unit for
unit. Weights exactly ±ω on the rule edges and 0 elsewhere (and still 0 after training),
thresholds fixed, a forward pass and Keras's loss computed by hand on a tiny rule set, the
splice network's units counted; against PSyKI's own untrained outputs where its environment
exists (``NESYBENCH_PSYKI_PYTHON``, as ``tests/test_ski_psyki_reference.py``)."""
from __future__ import annotations

import importlib.util
import math
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from nesybench.errors import NesyError
from nesybench.ski import cells, injectors, rules
from nesybench.ski.ensemble import Members
from nesybench.ski.injectors.kbann import psyki_layers

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]
PSYKI_PYTHON = os.environ.get("NESYBENCH_PSYKI_PYTHON")

TINY = """
class(X, yes) :- hot(X, a), \\+ hot(X, b), p(X).
class(X, two) :- m_of_n(2, [hot(X, a), hot(X, b), \\+ hot(X, c)]).
class(X, no) :- \\+ class(X, yes), \\+ class(X, two).
p(X) :- hot(X, c).
p(X) :- hot(X, a) ; \\+ hot(X, b).
"""
FEATURES = ["a", "b", "c"]
CLASSES = ["yes", "two", "no"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("kb") / "tiny.pl"
    path.write_text(TINY)
    return rules.load_knowledge(path, FEATURES, CLASSES)


def _net(kn, omega=4.0, **opts):
    return injectors.make("kbann", len(kn.features), len(kn.classes), [], kn,
                          construction="psyki", omega=omega, engine="torch", **opts)


def _sig(z):
    return 1.0 / (1.0 + math.exp(-z))


def _by_hand(x, w):
    """PSyKI's Towell units of TINY on one row ``x`` = (a, b, c), weight ω = ``w``."""
    a, b, c = x
    # p: clause 1 is the input c itself; clause 2 a disjunction unit (θ ω/2 whatever the
    # signs); the concept an OR unit over both
    p2 = _sig(w * a - w * b - 0.5 * w)
    p = _sig(w * c + w * p2 - 0.5 * w)
    # yes: conjunction, two positive antecedents (a, p) and one negated (b): θ = 1.5ω
    yes = _sig(w * a - w * b + w * p - 1.5 * w)
    # two: m-of-n, θ = m − ω/2 (PSyKI's), the negated antecedent at −ω
    two = _sig(w * a + w * b - w * c - (2 - 0.5 * w))
    # no: conjunction of two negated class units: θ = −ω/2
    no = _sig(-w * yes - w * two + 0.5 * w)
    return [yes, two, no]


ROWS = torch.tensor([[float(v) for v in f"{i:03b}"] for i in range(8)])


def test_graph_is_psyki_s_units(tiny):
    g = tiny.psyki_graph(4.0)
    # p's disjunction, p's OR, the yes conjunction, the m-of-n, the no conjunction
    assert len(g.units) == 5
    thresholds = sorted(-u.bias for u in g.units)
    assert thresholds == sorted([2.0, 2.0, 6.0, 2 - 2.0, -2.0])
    for u in g.units:
        assert {abs(w) for _, w in u.inputs} == {4.0}
    no = g.units[g.class_units[2]]
    assert sorted(w for _, w in no.inputs) == [-4.0, -4.0]
    # the no unit reads the yes and two class units themselves (not copies)
    assert {s for s, _ in no.inputs} == {("u", g.class_units[0]), ("u", g.class_units[1])}


@pytest.mark.parametrize("omega", [1.0, 4.0, 6.5])
def test_forward_is_the_hand_computation(tiny, omega):
    net = _net(tiny, omega)
    params = net.init_params([0, 1])
    x = ROWS.unsqueeze(0).expand(2, -1, -1)
    u = net.outputs(params, x)
    want = torch.tensor([_by_hand(r.tolist(), omega) for r in ROWS])
    assert torch.allclose(u[0], want, atol=1e-6) and torch.equal(u[0], u[1])
    logits = net.forward(params, x)
    assert torch.allclose(logits[0], torch.log(want.clamp(1e-7, 1 - 1e-7)), atol=1e-6)


def test_loss_is_keras_s_on_the_sigmoid_outputs(tiny):
    """softmax(forward) is u / Σu, so the trainer's cross-entropy is −log(u_y / Σu)."""
    net = _net(tiny)
    params = net.init_params([0])
    u = net.outputs(params, ROWS.unsqueeze(0))[0]
    z = net.forward(params, ROWS.unsqueeze(0))[0]
    y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    ce = torch.nn.functional.cross_entropy(z, y, reduction="none")
    assert torch.allclose(ce, -torch.log(u[torch.arange(8), y] / u.sum(1)), atol=1e-6)


def test_weights_are_plus_minus_omega_on_edges_zero_elsewhere_and_stay_masked(tiny):
    net = _net(tiny, epochs=30, batch_size=4, lr=0.05)
    params, masks, bias, _ = psyki_layers(tiny.psyki_graph(4.0), 3)
    for p, m in zip(params, masks):
        assert set(p[m == 1].abs().unique().tolist()) == {4.0}
        assert torch.count_nonzero(p[m == 0]) == 0
    n_edges = sum(len(u.inputs) for u in tiny.psyki_graph(4.0).units)
    assert sum(int(m.sum()) for m in masks) == n_edges
    X = ROWS.repeat(4, 1)
    y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1] * 4)
    data = Members(X.unsqueeze(0), y.unsqueeze(0), [torch.arange(32), torch.arange(0, 32, 2)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)    # no native layout: torch trainer
        net.fit(data, [3, 4])
    assert len(net.params) == len(masks)           # no bias among the trained parameters
    moved = False
    for p, m, p0 in zip(net.params, masks, params):
        assert torch.count_nonzero(p[:, m == 0]) == 0
        moved |= not torch.equal(p[:, m == 1], p0[m == 1].expand(2, -1))
    assert moved                                    # the rule weights did train
    assert torch.equal(net._bias, bias)            # thresholds fixed


def test_native_engine_falls_back_to_torch(tiny):
    net = _net(tiny)
    net.configure(engine="native")
    assert "no native kernel" in net.native_unsupported()
    with pytest.raises(NesyError, match="engine torch"):
        net.plan()


def test_refuses_what_it_does_not_build(tmp_path):
    p = tmp_path / "cmp.pl"
    p.write_text("class(X, yes) :- gt(X, a, 2).\nclass(X, no) :- \\+ class(X, yes).\n")
    kn = rules.load_knowledge(p, ["a"], ["yes", "no"])
    with pytest.raises(NesyError, match="construction psyki"):
        kn.psyki_graph(4.0)
    p.write_text("class(X, yes) :- hot(X, a).\n")
    kn = rules.load_knowledge(p, ["a"], ["yes", "no"])
    with pytest.raises(NesyError, match="every class"):
        kn.psyki_graph(4.0)


def test_option_is_checked():
    with pytest.raises(NesyError, match="construction must be one of towell, psyki"):
        injectors.make("kbann", 3, 3, [], object(), construction="keras")


@pytest.fixture(scope="module")
def splice():
    ds = cells.dataset("splice")
    return ds, cells.knowledge(ds)


def test_splice_network(splice):
    """Towell's splice theory as PSyKI builds it from the worker's theory: 9 + 1 units for
    each stop-codon concept, 10 pyrimidine disjunctions and the m-of-n, the M and R
    disjunctions and the exon-intron conjunction, the Y disjunction and the intron-exon
    conjunction, the n conjunction: 37 units; 5 - 0.5·4 is the m-of-n threshold (6 − ω/2)."""
    ds, kn = splice
    g = kn.psyki_graph(4.0)
    assert len(g.units) == 37
    fan_in = sorted(len(u.inputs) for u in g.units)
    assert fan_in == [2] * 14 + [3] * 18 + [6] + [9] * 2 + [10] * 2
    # the m-of-n unit: ten positive pyrimidine disjunctions, threshold 6 − ω/2
    (mofn,) = [u for u in g.units if len(u.inputs) == 10 and all(w > 0 for _, w in u.inputs)]
    assert -mofn.bias == 6 - 2.0
    ei, ie, n = (g.units[g.class_units[k]] for k in range(3))
    assert len(ei.inputs) == 10 and -ei.bias == 8.5 * 4    # 9 positive, ¬ei_stop
    assert len(ie.inputs) == 6 and -ie.bias == 4.5 * 4     # 5 positive, ¬ie_stop
    assert sorted(w for _, w in n.inputs) == [-4.0, -4.0] and -n.bias == -2.0


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not PSYKI_PYTHON, reason="needs the PSyKI environment: build it with "
                    "scripts/psyki_env.sh and set NESYBENCH_PSYKI_PYTHON to the Python it prints")
@pytest.mark.parametrize("omega", [4.0, 10.0])
def test_untrained_outputs_are_psyki_s(splice, omega):
    """Our untrained network's outputs are PSyKI's own on every splice row (float32 sums)."""
    ds, kn = splice
    driver = _load("ski_psyki", ROOT / "benchmarks" / "ski_psyki.py")
    theirs = driver.untrained_outputs(PSYKI_PYTHON, ds, omega)
    net = injectors.make("kbann", ds.X.shape[1], 3, [], kn, construction="psyki", omega=omega)
    ours = net.outputs(net.init_params([0]), torch.from_numpy(ds.X).unsqueeze(0))[0].numpy()
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, atol=2e-6)
    assert (ours.argmax(1) == theirs.argmax(1)).all()


KERAS_LOSS = """
import os, sys
import numpy as np
sys.path.insert(0, {bench!r})
import ski_psyki_worker as W
import tensorflow as tf
job = sys.argv[1]
X = np.load(os.path.join(job, "X.npy")).astype("float32")
y = np.load(os.path.join(job, "y.npy"))
cols = [W.var(p, b) for p in W.POSITIONS for b in "acgt"]
th = W.psyki_theory(job, X, y, {{"omega": 4.0}}, cols)
model = W.build(th, X.shape[1], {{"omega": 4.0}})
print(float(tf.keras.losses.SparseCategoricalCrossentropy()(y, model.predict(X, verbose=0))))
"""


@pytest.mark.skipif(not PSYKI_PYTHON, reason="needs the PSyKI environment: build it with "
                    "scripts/psyki_env.sh and set NESYBENCH_PSYKI_PYTHON to the Python it prints")
def test_training_loss_is_keras_s_on_psyki_s_network(splice, tmp_path):
    """The loss our trainer takes (cross-entropy of the forward pass) equals Keras's sparse
    categorical cross-entropy of PSyKI's compiled network on the same rows."""
    import subprocess

    from nesybench.ski.ensemble import _cross_entropy

    ds, kn = splice
    driver = _load("ski_psyki", ROOT / "benchmarks" / "ski_psyki.py")
    X, _ = driver.splice_matrix(ds)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", ds.y)
    script = tmp_path / "keras_loss.py"
    script.write_text(KERAS_LOSS.format(bench=str(ROOT / "benchmarks")))
    keras = float(subprocess.run([PSYKI_PYTHON, str(script), str(tmp_path)], check=True,
                                 capture_output=True, text=True).stdout.split()[-1])
    net = injectors.make("kbann", ds.X.shape[1], 3, [], kn, construction="psyki", omega=4.0)
    z = net.forward(net.init_params([0]), torch.from_numpy(ds.X).unsqueeze(0))
    per, _ = _cross_entropy(z, torch.from_numpy(ds.y).unsqueeze(0))
    assert abs(float(per.mean()) - keras) < 1e-5
