"""The native SKI trainer (kernel.c) against the PyTorch trainer, and its determinism."""
import shutil

import pytest
import torch

from nesybench.errors import NesyError
from nesybench.io import derive_seed
from nesybench.ski import ensemble, injectors, native, rules
from nesybench.ski.ensemble import Members

torch.set_num_threads(1)

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

RULES = ("class(X, pos) :- hot(X, a), \\+ hot(X, b).\n"
         "class(X, mid) :- hot(X, c), gt(X, v, 0.5).\n"
         "class(X, neg) :- \\+ class(X, pos), \\+ class(X, mid).\n")
FEATURES = ["a", "b", "c", "d", "v"]


def _data(per_member_x=False, per_member_y=False, E=3, N=61, seed=0):
    """Binary features plus one real-valued one (zeros skipped by the kernel's sparse input
    layer), 3 classes, unequal training-set sizes (short last batches)."""
    g = torch.Generator().manual_seed(seed)
    S = E if per_member_x else 1
    X = (torch.rand(S, N, 5, generator=g) > 0.6).float()
    X[..., 4] = torch.rand(S, N, generator=g) * (torch.rand(S, N, generator=g) > 0.3)
    y = torch.randint(0, 3, (E if per_member_y else 1, N), generator=g)
    rows = [torch.randperm(N, generator=g)[: N - 7 * e] for e in range(E)]
    return Members(X, y, rows)


def _trained(name, data, engine, seeds, tmp_path, flags=native.FLAGS, batch_size=8, **opts):
    """The trained parameters, and the initial ones they started from."""
    p = tmp_path / "r.pl"
    p.write_text(RULES)
    kn = rules.load_knowledge(p, FEATURES, ["pos", "mid", "neg"])
    net = injectors.make(name, 5, 3, [6, 4], kn, epochs=3, batch_size=batch_size,
                         engine=engine, **opts)
    init = net.init_params(seeds)
    params = [t.clone() for t in init]
    trainer = (lambda *a: native.train(*a, flags=flags)) if engine == "native" \
        else ensemble.train
    trainer(net, params, data, net.train_cfg, [derive_seed("order", s) for s in seeds])
    return params, init


CASES = [("uneducated", {}), ("kill", {}), ("kbann", {}), ("kins", {}),
         ("kins", {"layer": 0}), ("kins", {"layer": 1}), ("kbann", {"extra_units": 0})]


@pytest.mark.parametrize("name,opts", CASES)
@pytest.mark.parametrize("xy", [(False, False), (True, False), (False, True)])
def test_native_equals_the_torch_trainer(tmp_path, name, opts, xy):
    """Same initial weights, shuffles and mini-batches: the two trainers differ only in float
    summation order (shared or per-member features and labels, as drop/noise/flip build)."""
    data = _data(*xy)
    seeds = [3, 4, 5]
    mine, _ = _trained(name, data, "native", seeds, tmp_path, **opts)
    ref, init = _trained(name, data, "torch", seeds, tmp_path, **opts)
    moved = max(float((a - b).abs().max()) for a, b in zip(ref, init))
    assert moved > 1e-3                       # training moved the weights
    for a, b in zip(mine, ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=2e-6)


@pytest.mark.parametrize("name", ["uneducated", "kbann", "kins"])
def test_batches_of_more_than_32_samples(tmp_path, name):
    """The kernel's samples run in blocks of 32 (its state rows hold the batch rounded up to
    32): batches of 40 use two blocks, the last one mostly empty."""
    data = _data(False, False, N=130)
    seeds = [3, 4, 5]
    mine, _ = _trained(name, data, "native", seeds, tmp_path, batch_size=40)
    ref, _ = _trained(name, data, "torch", seeds, tmp_path, batch_size=40)
    for a, b in zip(mine, ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=2e-6)


@pytest.mark.parametrize("name", ["uneducated", "kill", "kbann", "kins"])
def test_a_member_alone_gives_the_same_bits_as_in_the_ensemble(tmp_path, name):
    data = _data(True, True)
    seeds = [7, 8, 9]
    together, _ = _trained(name, data, "native", seeds, tmp_path)
    for e in range(3):
        alone, _ = _trained(name, data.select([e]), "native", [seeds[e]], tmp_path)
        for a, b in zip(together, alone):
            assert torch.equal(a[e], b[0])


def _cpu_flags() -> set[str]:
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return set()
    return {f for line in text.splitlines() if line.startswith("flags") for f in line.split()}


TARGETS = {
    # the compiler's default target (on x86-64: SSE2, 4-float registers, no FMA instruction:
    # the fused multiply-adds done by libm's fmaf)
    "default": (),
    # AVX2 + FMA: 8-float registers, a block of 16 is two of them
    "x86-64-v3": ("-march=x86-64-v3",),
}


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", ["kill", "kbann", "kins"])
def test_same_numbers_on_every_instruction_set(tmp_path, name, target):
    """Builds for other targets (other register widths, with or without an FMA instruction)
    train to the same bits as the -march=native build: the kernel's numbers do not depend
    on the machine's instruction set."""
    if target == "x86-64-v3" and not {"avx2", "fma"} <= _cpu_flags():
        pytest.skip("this CPU cannot run an AVX2 + FMA build")
    plain = tuple(f for f in native.FLAGS if not f.startswith("-march")) + TARGETS[target]
    data = _data(True, False)
    seeds = [1, 2, 3]
    fast, _ = _trained(name, data, "native", seeds, tmp_path)
    slow, _ = _trained(name, data, "native", seeds, tmp_path, flags=plain)
    for a, b in zip(fast, slow):
        assert torch.equal(a, b)


def test_kernel_target_from_the_environment(tmp_path, monkeypatch):
    """$NESYBENCH_KERNEL_TARGET sets the build's -march (``default``: none); a target the
    compiler does not know is one clear error naming it."""
    monkeypatch.setenv(native.TARGET_ENV, "x86-64-v3")
    assert "-march=x86-64-v3" in native.default_flags()
    assert sum(f.startswith("-march") for f in native.default_flags()) == 1
    monkeypatch.setenv(native.TARGET_ENV, "default")
    assert not any(f.startswith("-march") for f in native.default_flags())
    assert set(native.default_flags()) == set(native.FLAGS) - {"-march=native"}
    monkeypatch.delenv(native.TARGET_ENV)
    assert native.default_flags() == native.FLAGS
    monkeypatch.setenv(native.TARGET_ENV, "no-such-cpu")
    monkeypatch.setenv("NESYBENCH_KERNELS", str(tmp_path))
    with pytest.raises(NesyError, match="-march=no-such-cpu"):
        native.build()
    assert list(tmp_path.iterdir()) == []        # no half-built library left behind


@pytest.mark.parametrize("name", ["uneducated", "kill", "kbann", "kins"])
def test_plans_place_every_weight_once(tmp_path, name):
    """Every element of every parameter tensor has a place of its own in the kernel's
    vector, and packing then unpacking gives the tensors back."""
    p = tmp_path / "r.pl"
    p.write_text(RULES)
    kn = rules.load_knowledge(p, FEATURES, ["pos", "mid", "neg"])
    net = injectors.make(name, 5, 3, [6, 4], kn)
    params = net.init_params([0, 1])
    plan = net.plan()
    places = torch.cat([plan.places[k] for k in range(len(params))])
    assert len(places) == sum(t[0].numel() for t in params) == len(set(places.tolist()))
    assert int(places.max()) < plan.n_params
    flat = torch.zeros(2, plan.n_params)
    for k, t in enumerate(params):
        flat[:, plan.places[k]] = t.reshape(2, -1)
    for k, t in enumerate(params):
        assert torch.equal(flat[:, plan.places[k]].reshape(t.shape), t)


def test_no_compiler_is_one_clear_error(tmp_path, monkeypatch):
    """build() names the CLI flag that needs no compiler; `ski run` then falls back to it
    (tests/test_ski_data.py)."""
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("NESYBENCH_KERNELS", str(tmp_path / "kernels"))
    monkeypatch.setattr(native, "_LIBS", {})
    assert not native.available()
    with pytest.raises(NesyError, match="needs a C compiler.*--engine torch"):
        native.build()


def test_engine_option_is_checked():
    with pytest.raises(NesyError, match="engine must be one of native, torch"):
        injectors.make("uneducated", 3, 2, [4], engine="cuda")
