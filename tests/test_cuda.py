"""The CUDA paths: the compiled circuit, NeSy training steps and KANDY's trainers on a GPU
give what they give on the CPU.

Skipped where torch sees no CUDA device (CI). On a GPU machine without SWI-Prolog, point
``NESYBENCH_KANDY_DATA`` at a generated KANDY curriculum; otherwise a tiny one is generated.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _deterministic():
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    yield


# --------------------------------------------------------------------------- NeSy circuit
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_circuit_log_probabilities_and_gradients_match_cpu(dtype):
    from nesybench.nesy.learn.mnist_add import compile_addition, from_digits, sum_labels

    n = 2
    prog_cpu = compile_addition(n)
    prog_gpu = compile_addition(n).to("cuda")
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(64, 2 * n, 10, generator=g, dtype=dtype), -1)
    digits = torch.randint(0, 10, (64, 2 * n), generator=g)
    labels = sum_labels(from_digits(digits[:, :n]), from_digits(digits[:, n:]), n, prog_cpu)
    out = []
    for prog, dev in ((prog_cpu, "cpu"), (prog_gpu, "cuda")):
        p = probs.detach().to(dev).clone().requires_grad_(True)
        logp = prog([p[:, i] for i in range(2 * n)], labels.to(dev))
        logp.sum().backward()
        out.append((logp.detach().cpu(), p.grad.cpu()))
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert torch.isfinite(out[0][0]).all()
    torch.testing.assert_close(out[1][0], out[0][0], rtol=tol, atol=tol)
    torch.testing.assert_close(out[1][1], out[0][1], rtol=tol, atol=tol)


def test_training_steps_match_cpu():
    """Five Adam steps of LeNet through the N = 1 circuit: same losses on both devices."""
    from nesybench.nesy.learn.mnist_add import compile_addition, from_digits, sum_labels
    from nesybench.nesy.learn.nets import LeNet

    n = 1
    g = torch.Generator().manual_seed(1)
    x = torch.rand(5, 16, 2, 1, 28, 28, generator=g)
    digits = torch.randint(0, 10, (5, 16, 2), generator=g)
    losses = {}
    for dev in ("cpu", "cuda"):
        prog = compile_addition(n).to(dev)
        torch.manual_seed(0)
        net = torch.nn.Sequential(LeNet(10), torch.nn.Softmax(-1)).to(dev)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        seen = []
        for step in range(5):
            d = digits[step]
            lab = sum_labels(from_digits(d[:, :1]), from_digits(d[:, 1:]), n, prog).to(dev)
            probs = net(x[step].to(dev).view(-1, 1, 28, 28)).view(16, 2, 10)
            loss = -prog([probs[:, 0], probs[:, 1]], lab).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen.append(float(loss.detach()))
        losses[dev] = seen
    assert all(math.isfinite(v) for v in losses["cuda"])
    assert losses["cuda"] == pytest.approx(losses["cpu"], rel=1e-3)


# --------------------------------------------------------------------------- KANDY trainers
@pytest.fixture(scope="module")
def kandy_data(tmp_path_factory):
    from nesybench.kandy.learn.data import load_data

    given = os.environ.get("NESYBENCH_KANDY_DATA")
    if given:
        return load_data(given, size=48, tasks=[0, 1, 2])
    from nesybench.kandy.generate import generate

    out = tmp_path_factory.mktemp("kandy") / "tiny"
    generate(ROOT / "curricula/kandy/easy.yaml", out, tasks=[0, 1, 2], samples=24,
             render={"canvas": [48, 48]})
    return load_data(out, size=48)


def _cfg(model, setting, **kw):
    from nesybench.kandy.learn.settings import resolve_config

    base = dict(epochs=1, batch=8, lr=0.01, optim="adam")
    if setting in ("task_incremental", "continual_online"):
        base["buffer"] = 16
    base.update(kw)
    return resolve_config(model, setting, **base)


@pytest.mark.parametrize("model", ["mlp", "cnn", "resnet50", "vit"])
def test_kandy_joint_training_matches_cpu(kandy_data, model):
    from nesybench.kandy.learn.settings import train

    # no dropout (its masks come from each device's own generator) and a small step, so
    # that the two runs see the same arithmetic up to rounding
    res = {dev: train(kandy_data, _cfg(model, "joint", device=dev, dropout=0.0, lr=1e-4),
                      seed=0)
           for dev in ("cpu", "cuda")}
    cpu, gpu = res["cpu"].final_metrics(), res["cuda"].final_metrics()
    assert set(gpu) == set(cpu)
    assert all(math.isfinite(v) for v in gpu.values() if isinstance(v, float))
    # the first logged losses agree; later ones drift with each device's kernel rounding
    assert res["cuda"].losses[0] == pytest.approx(res["cpu"].losses[0], rel=1e-2)


@pytest.mark.parametrize("strategy", ["naive", "replay", "ewc", "lwf", "agem", "der", "derpp"])
def test_kandy_continual_strategies_run_on_cuda(kandy_data, strategy):
    from nesybench.kandy.learn.settings import train

    res = train(kandy_data, _cfg("mlp", "task_incremental", strategy=strategy, device="cuda"),
                seed=0)
    A = res.A
    assert A.shape == (3, 3)
    assert all(0.0 <= float(v) <= 1.0 for v in A.ravel() if not math.isnan(float(v)))
    assert all(math.isfinite(v) for v in res.final_metrics().values() if isinstance(v, float))
