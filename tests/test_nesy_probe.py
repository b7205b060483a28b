"""Post-hoc concept probes and TCAV (`nesybench nesy probe`): the statistics against hand
computation, a probe recovering a concept planted linearly in synthetic activations, the
directional derivatives of a model whose label logit is linear in the probed layer, and the
command end to end on a trained plain NN."""
from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.nesy.learn import probe
from nesybench.nesy.learn.models import Output
from nesybench.shortcuts.task import load_task


@pytest.fixture(autouse=True)
def _env(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "nesy-cache"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# -- statistics by hand ----------------------------------------------------------------------
def test_tcav_score_counts_strictly_positive_derivatives():
    g = np.array([[1.0, 0.0], [-1.0, 2.0], [0.5, -1.0]])
    assert probe.tcav_score(g, np.array([1.0, 0.0])) == pytest.approx(2 / 3)   # 1, -1, 0.5
    assert probe.tcav_score(g, np.array([0.0, 1.0])) == pytest.approx(1 / 3)   # 0, 2, -1
    assert probe.tcav_score(g, np.array([-1.0, 0.0])) == pytest.approx(1 / 3)
    with pytest.raises(NesyError):
        probe.tcav_score(np.zeros((0, 2)), np.array([1.0, 0.0]))


def test_t_test_matches_the_pooled_variance_formula():
    a, b = [0.9, 1.0], [0.4, 0.6]
    # pooled variance ((0.005) + (0.02)) / 2, se = sqrt(sp2 (1/2 + 1/2)), df = 2
    sp2 = (np.var(a, ddof=1) + np.var(b, ddof=1)) / 2
    t = (np.mean(a) - np.mean(b)) / math.sqrt(sp2 * (1 / 2 + 1 / 2))
    p = 1 - t / math.sqrt(2 + t * t)          # two-sided p of Student's t with 2 d.o.f.
    got_t, got_p = probe.t_test(a, b)
    assert got_t == pytest.approx(t, rel=1e-9) and got_p == pytest.approx(p, rel=1e-9)
    assert probe.t_test([0.5, 0.5], [0.5, 0.5]) == (0.0, 1.0)
    assert probe.t_test([1.0, 1.0], [0.0, 0.0]) == (float("inf"), 0.0)


def test_cav_points_towards_the_concept_in_activation_space():
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(200, 3)) * [0.3, 1000.0, 0.3]    # a huge-variance nuisance column
    x = noise.copy()
    x[:100, 0] += 2.0
    v = probe.cav(x[:100], x[100:])
    assert np.linalg.norm(v) == pytest.approx(1.0)
    assert v[0] > 0.99                        # the concept direction, not the nuisance column


def test_probe_recovers_a_planted_linear_concept():
    rng = np.random.default_rng(1)
    k, d = 4, 30
    means = rng.normal(size=(k, d)) * 1.5
    y = rng.integers(0, k, size=400)
    x = rng.normal(size=(400, d)) + means[y]
    pr = probe.fit_probe(x[:300], y[:300], seed=0)
    assert pr.c in probe.CS and pr.cv_accuracy > 0.9
    assert np.mean(pr.predict(x[300:]) == y[300:]) > 0.95
    shuffled = rng.permutation(y)              # no concept in the activations: near chance
    ctrl = probe.fit_probe(x[:300], shuffled[:300], seed=0)
    assert np.mean(ctrl.predict(x[300:]) == shuffled[300:]) < 0.45
    const = probe.fit_probe(x[:10], np.full(10, 2))
    assert const.c is None and (const.predict(x[:3]) == 2).all()


def test_concept_metrics_by_hand(root):
    task = load_task(root / "curricula/rs/xor.yaml")            # maps: separate, bits 0/1
    true = np.array([[0, 0, 1], [0, 1, 1], [1, 0, 0], [1, 1, 0]])
    pred = np.array([[0, 1, 1], [1, 1, 1], [1, 1, 0], [1, 1, 0]])
    m = probe._concept_metrics(task, true, pred, [0, 1, 2], task.groups())
    # b(1): C = [[1, 1], [0, 2]] -> acc 3/4, F1 (2/3 + 4/5) / 2; hard collapse: column mass of
    # the row-normalised matrix (1/2, 3/2) -> 1 - H((1/4, 3/4)) / log 2
    f1 = (2 / 3 + 4 / 5) / 2
    h = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    b1 = m["per_concept"]["b(1)"]
    assert b1["accuracy"] == pytest.approx(0.75) and b1["macro_f1"] == pytest.approx(f1)
    assert b1["collapse_hard"] == pytest.approx(1 - h / math.log(2))
    # b(2): every prediction 1 -> acc 1/2, F1 (0 + 2/3) / 2, collapse 1; b(3): perfect
    assert m["per_concept"]["b(2)"]["accuracy"] == pytest.approx(0.5)
    assert m["per_concept"]["b(2)"]["collapse_hard"] == pytest.approx(1.0)
    assert m["concept_accuracy"] == pytest.approx((0.75 + 0.5 + 1.0) / 3)
    assert m["concept_macro_f1"] == pytest.approx((f1 + 1 / 3 + 1.0) / 3)


# -- gradients of a model whose label logit is linear in the layer ---------------------------
class _Linear(nn.Module):
    """x (B, 2) -> relu(lin(x)) (B, 3) -> head (linear) -> logits of one label with 2 values."""

    kind = "toy"

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(2, 3)
        self.relu = nn.ReLU()
        self.head = nn.Linear(3, 2)
        self.label_domains = [[0, 1]]

    def forward(self, x):
        z = self.head(self.relu(self.lin(x)))
        return Output([torch.log_softmax(z, dim=1)], None)


def test_collect_gives_the_gradient_of_each_examples_own_label_logit():
    model = _Linear()
    x = torch.randn(7, 2)
    labels = torch.tensor([[0], [1], [1], [0], [1], [0], [1]])
    data = SimpleNamespace(x=x, labels=labels, variable_names=["c"])
    got = probe.collect(model, data, ["relu", "head:input"], gradients=True, batch=3)
    with torch.no_grad():
        acts = model.relu(model.lin(x))
    w = model.head.weight.detach()
    for layer in ("relu", "head:input"):
        assert got.acts[layer].shape == (7, 1, 3)
        assert np.allclose(got.acts[layer][:, 0], acts.numpy(), atol=1e-6)
        # d logit_y / d a = W[y] for every example, y its own label (the head is linear)
        assert np.allclose(got.grads[layer][0][:, 0], w[labels[:, 0]].numpy(), atol=1e-6)
    # TCAV along W[1] for class-1 examples: every derivative is |W[1]|^2 > 0 -> score 1
    cls = (labels[:, 0] == 1).numpy()
    v = (w[1] / w[1].norm()).numpy()
    assert probe.tcav_score(got.grads["relu"][0][cls, 0], v) == 1.0
    assert probe.tcav_score(got.grads["relu"][0][cls, 0], -v) == 0.0
    assert probe.hidden_layers(model) == ["relu", "head:input"]
    with pytest.raises(NesyError, match="no layer"):
        probe.collect(model, data, ["nope"])


# -- the command end to end ------------------------------------------------------------------
@pytest.fixture(scope="module")
def nn_run(root, tmp_path_factory):
    from nesybench.shortcuts.generate import generate
    base = tmp_path_factory.mktemp("probe")
    data = base / "xor"
    generate(load_task(root / "curricula/rs/xor.yaml"), data, seed=0,
             samples={"train": 40, "val": 8, "test": 24, "ood": 0})
    run = base / "run"
    assert main(["nesy", "train", str(root / "curricula/rs/xor.yaml"), "--model", "nn",
                 "--data", str(data), "--epochs", "2", "--batch", "8", "--threads", "1",
                 "--out", str(run), "-q"]) == 0
    return run


def _data(run):
    """The run trained on a data set outside its folder: probe is told where (--data)."""
    return ["--data", str(run.parent / "xor")]


def test_probe_command(nn_run, tmp_path, capsys):
    capsys.readouterr()
    out = tmp_path / "p"
    assert main(["nesy", "probe", str(nn_run), *_data(nn_run),
                 "--layers", "head:input,head.net.1",
                 "--tcav-runs", "3", "--seed", "1", "--out", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert json.loads((out / "probe.json").read_text()) == rep
    assert [r["layer"] for r in rep["layers"]] == ["head:input", "head.net.1"]
    first = rep["layers"][0]
    assert first["dim"] == 3 * 16 and set(first["probes"]) == {"b(1)", "b(2)", "b(3)"}
    # the probe metrics are the per-variable probe accuracies, pooled as the task's maps
    accs = [first["probes"][v]["accuracy"] for v in ("b(1)", "b(2)", "b(3)")]
    assert first["metrics"]["concept_accuracy"] == pytest.approx(np.mean(accs))
    assert first["shortcut"]["verdict"] in ("identity", "shortcut", "not_optimal")
    for t in first["tcav"]:
        assert 0 <= t["score"] <= 1 and 0 <= t["p"] <= 1
        assert t["significant"] == (t["p"] < 0.05)
    # same seed, same report
    assert main(["nesy", "probe", str(nn_run), *_data(nn_run),
                 "--layers", "head:input", "--tcav-runs", "3",
                 "--seed", "1", "--out", str(tmp_path / "q"), "-q"]) == 0
    assert capsys.readouterr().out == ""          # -q: nothing but errors
    again = json.loads((tmp_path / "q" / "probe.json").read_text())
    assert again["layers"][0] == first


@pytest.mark.parametrize("extra, message", [
    (["--layers", "nope"], "no layer 'nope'"),
    (["--tcav-runs", "1"], "--tcav-runs"),
    (["--alpha", "2"], "--alpha"),
    (["--split", "ood"], "split 'ood'"),
])
def test_probe_bad_input(nn_run, tmp_path, capsys, extra, message):
    capsys.readouterr()
    out = tmp_path / "p"
    assert main(["nesy", "probe", str(nn_run), *_data(nn_run),
                 "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not out.exists()


def test_probe_not_a_run(tmp_path, capsys):
    assert main(["nesy", "probe", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err
