"""Batched ensembles equal one-at-a-time training; the sweep cell; CLI and data errors."""
import numpy as np
import pytest
import torch

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.runs import CellContext
from nesybench.ski import cells, injectors, rules
from nesybench.ski import data as ski_data
from nesybench.ski.ensemble import Members

import torch as _torch  # noqa: E402

_torch.set_num_threads(1)   # tiny tensors: threads only add overhead on a shared machine


def _members(E=4, N=70, D=2, K=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = (torch.rand(N, D, generator=g) > 0.5).float()
    y = torch.randint(0, K, (E, N), generator=g)               # per-member labels
    rows = [torch.randperm(N, generator=g)[: N - 9 * e] for e in range(E)]   # unequal sizes
    return Members(X.unsqueeze(0), y, rows)


@pytest.mark.parametrize("engine", ["native", "torch"])
@pytest.mark.parametrize("name", ["uneducated", "kill", "kbann", "kins"])
def test_batched_equals_one_at_a_time(tmp_path, name, engine):
    p = tmp_path / "r.pl"
    p.write_text("class(X, pos) :- hot(X, a), \\+ hot(X, b).\nclass(X, neg) :- \\+ class(X, pos).\n")
    kn = rules.load_knowledge(p, ["a", "b"], ["pos", "neg"])
    mem = _members()
    seeds = [11, 12, 13, 14]
    batched = injectors.make(name, 2, 2, [5, 3], kn, epochs=3, batch_size=8,
                             engine=engine).fit(mem, seeds)
    for e in range(mem.size):
        one = injectors.make(name, 2, 2, [5, 3], kn, epochs=3, batch_size=8, engine=engine)
        one.fit(mem.select([e]), [seeds[e]])
        for pb, po in zip(batched.params, one.params):
            torch.testing.assert_close(pb[e], po[0], rtol=1e-5, atol=1e-6)


def test_cell_through_cell_context(tmp_path):
    params = {"dataset": "bcw", "degradation": "flip", "injector": "kill", "reps": 2,
              "epochs": 1, "levels": [0.0, 0.48]}
    ctx = CellContext("c0", params, 5, tmp_path)
    out = cells.ski_cell(params, 5, ctx)
    assert out["members"] == 4.0 and 0.0 <= out["acc_mean"] <= 1.0
    names = {(n, s) for n, s, _ in ctx._curves}
    assert ("acc/1", 6) in names and ("psi/0", 0) in names     # 0.48 is level 6 of flip
    # the same cell is deterministic
    again = cells.ski_cell(params, 5, CellContext("c0", params, 5, tmp_path))
    assert again["acc_mean"] == out["acc_mean"]


def test_degraded_sets_do_not_depend_on_the_predictor():
    ds = cells.dataset("bcw")
    tr, _ = ski_data.stratified_split(ds.y, 0)
    m1, psi1 = cells.build_members(ds, tr, "noise", [0.3], 2)
    m2, psi2 = cells.build_members(ds, tr, "noise", [0.3], 2)
    assert torch.equal(m1.X, m2.X) and np.array_equal(psi1, psi2)


@pytest.mark.parametrize("args, msg", [
    (["--injectors", "semloss"], "unknown injector"),
    (["--degradations", "blur"], "unknown degradation"),
    (["--datasets", "iris"], "unknown dataset"),
    (["--kb", "bcw=/nonexistent.pl"], "not found"),
])
def test_cli_bad_input_exit_2(tmp_path, capsys, args, msg):
    out = tmp_path / "study"
    argv = ["ski", "run", *args, "--out", str(out)]
    if "--datasets" not in args:
        argv[2:2] = ["--datasets", "bcw"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert msg in capsys.readouterr().err and not out.exists()


def test_cli_bad_rule_file(tmp_path, capsys):
    bad = tmp_path / "bad.pl"
    bad.write_text("class(X, benign) :- gt(X, tumour_colour, 3).\n")
    with pytest.raises(SystemExit) as exc:
        main(["ski", "run", "--datasets", "bcw", "--kb", f"bcw={bad}",
              "--out", str(tmp_path / "s")])
    assert exc.value.code == 2
    assert "tumour_colour" in capsys.readouterr().err and not (tmp_path / "s").exists()


def test_corrupt_data_file(tmp_path, monkeypatch):
    (tmp_path / "ski").mkdir()
    (tmp_path / "ski" / "biopsy.pkl.xz").write_bytes(b"not the file")
    monkeypatch.setenv("NESYBENCH_DATA", str(tmp_path))
    with pytest.raises(NesyError, match="checksum"):
        ski_data.load("bcw")
    with pytest.raises(NesyError, match="not cached"):
        ski_data.load("splice")


def test_datasets_match_the_paper():
    assert ski_data.load("bcw").counts() == [458, 241]
    sp = ski_data.load("splice")
    assert sp.X.shape == (3190, 240) and sp.counts() == [767, 768, 1655]
    assert sp.X.sum(1).min() == 60 and sp.X.sum(1).max() > 60      # ambiguity codes


def test_uci_files_instead_of_the_cache(tmp_path):
    bcw = tmp_path / "breast-cancer-wisconsin.data"
    bcw.write_text("1000025,5,1,1,1,2,1,3,1,1,2\n1002945,5,4,4,5,7,?,3,2,1,4\n" * 5)
    d = ski_data.load("bcw", bcw)
    assert d.X.shape == (10, 9) and d.y.tolist() == [0, 1] * 5 and d.X[1, 5] == 0.0
    sp = tmp_path / "splice.data"
    sp.write_text(("EI,  ATRINS-DONOR-521,  " + "CCAGCTGCATCACAGGAGGCCAGCGAGCAGGTCTGTTCCAAGGGCCTTCGAGCCAGTCTG\n"
                   "N,  X,  " + "N" * 59 + "D\n") * 5)
    s = ski_data.load("splice", sp)
    assert s.y.tolist() == [0, 2] * 5 and s.X[1].sum() == 59 * 4 + 3
    (tmp_path / "bad.data").write_text("EI, x, ACGT\n")
    with pytest.raises(NesyError, match="60"):
        ski_data.load("splice", tmp_path / "bad.data")


def _textbook_training(params, loss_of, rows, seed, epochs, batch):
    """Replay the trainer's shuffles (its order seed for member seed ``seed``) with
    autograd and single-tensor torch.optim.Adam (Keras's eps 1e-7) on ``params``:
    ``loss_of(ib)`` is the mean loss of the mini-batch of row indices ``ib``."""
    from nesybench.io import derive_seed
    opt = torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-7, foreach=False)
    order = torch.Generator().manual_seed(derive_seed("order", seed) % (2**63))
    for _ in range(epochs):
        perm = rows[torch.randperm(len(rows), generator=order)]
        for s in range(0, len(perm), batch):
            opt.zero_grad()
            loss_of(perm[s:s + batch]).backward()
            opt.step()


@pytest.mark.parametrize("engine", ["native", "torch"])
def test_one_member_equals_a_plain_torch_mlp_with_adam(engine):
    """Both trainers (the kernel; the hand-written backward, member ordering and fused Adam)
    against the textbook: nn.Linear layers, autograd, torch.optim.Adam (eps 1e-7), same
    batches."""
    g = torch.Generator().manual_seed(3)
    N, D, K = 50, 6, 3
    X = torch.randn(N, D, generator=g)
    y = torch.randint(0, K, (N,), generator=g)
    rows = torch.randperm(N, generator=g)[:45]           # 45 rows: last batch of 13 is short
    net = injectors.make("uneducated", D, K, [7, 5], epochs=3, batch_size=16, engine=engine)
    net.fit(Members(X.unsqueeze(0), y.unsqueeze(0), [rows]), [21])
    # the reference starts from the same initial weights and replays the same shuffles
    init = net.init_params([21])
    ref = torch.nn.Sequential(torch.nn.Linear(D, 7), torch.nn.ReLU(), torch.nn.Linear(7, 5),
                              torch.nn.ReLU(), torch.nn.Linear(5, K))
    with torch.no_grad():
        for lin, (W, b) in zip(ref[::2], zip(init[::2], init[1::2])):
            lin.weight.copy_(W[0])
            lin.bias.copy_(b[0])
    _textbook_training(list(ref.parameters()),
                       lambda ib: torch.nn.functional.cross_entropy(ref(X[ib]), y[ib]),
                       rows, 21, epochs=3, batch=16)
    for lin, (W, b) in zip(ref[::2], zip(net.params[::2], net.params[1::2])):
        torch.testing.assert_close(W[0], lin.weight.detach(), rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(b[0], lin.bias.detach(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("engine", ["native", "torch"])
@pytest.mark.parametrize("name", ["uneducated", "kill", "kbann", "kins"])
def test_one_member_equals_autograd_and_torch_adam_for_every_injector(tmp_path, name, engine):
    """Every injector's trained weights against the textbook loop over its own forward:
    autograd on plain leaf tensors, torch.optim.Adam (single-tensor, stride-agnostic), the
    same batches. Catches any gradient that reaches the fused Adam kernel in another memory
    layout than its parameter (the kernel walks raw memory: a transposed gradient view
    would update the wrong weights)."""
    p = tmp_path / "r.pl"
    p.write_text("class(X, pos) :- hot(X, a), \\+ hot(X, b).\n"
                 "class(X, neg) :- \\+ class(X, pos).\n")
    kn = rules.load_knowledge(p, ["a", "b", "c"], ["pos", "neg"])
    g = torch.Generator().manual_seed(5)
    N, D, K = 40, 3, 2
    X = (torch.rand(N, D, generator=g) > 0.5).float()
    y = torch.randint(0, K, (N,), generator=g)
    rows = torch.randperm(N, generator=g)[:37]                 # last batch of 5 is short
    net = injectors.make(name, D, K, [5, 4], kn, epochs=3, batch_size=8, engine=engine)
    net.fit(Members(X.unsqueeze(0), y.unsqueeze(0), [rows]), [9])
    ref = [t.clone().requires_grad_(True) for t in net.init_params([9])]
    aux = net.aux(X.unsqueeze(0)) if hasattr(net, "aux") else None

    def loss_of(ib):
        logits = net.forward(ref, X[ib].unsqueeze(0))
        per = torch.nn.functional.cross_entropy(logits[0], y[ib], reduction="none")
        if aux is not None:
            per = per + net.penalty(logits, aux[:, ib])[0]
        return per.mean()

    _textbook_training(ref, loss_of, rows, 9, epochs=3, batch=8)
    for mine, theirs in zip(net.params, ref):
        torch.testing.assert_close(mine, theirs.detach(), rtol=1e-4, atol=1e-6)


def test_levels_per_cell_chunks_the_levels(tmp_path, capsys):
    """4 flip levels in chunks of 3: two cells per predictor, all 4 levels in the table,
    and the chunked cells log the same per-level curves a cell per level would."""
    out = tmp_path / "s"
    main(["ski", "run", "--datasets", "bcw", "--degradations", "flip", "--injectors",
          "uneducated,kill", "--reps", "2", "--epochs", "1", "--level-stride", "3",
          "--levels-per-cell", "3", "--executor", "inline", "--out", str(out), "--json"])
    import json
    summary = json.loads(capsys.readouterr().out)["studies"][0]
    assert summary["done"] == 4                     # 2 chunks × 2 predictors
    main(["ski", "table", str(out), "--json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    kill = [r for r in rows if r["injector"] == "kill"]
    assert kill and kill[0]["levels"] == 4 and kill[0]["reps"] == 2


@pytest.mark.parametrize("opt, msg", [
    ("kbann.mofn=tuprolog", "must be one of towell, psyki"),
    ("kill.weight=heavy", "must be a number"),
    ("kbann.colour=red", "unknown option 'colour'"),
    ("kins.omega=2", "not one of the injectors run"),
    ("kbann.omega=", "must be a number"),
    ("mofn=psyki", "INJECTOR.KEY=VALUE"),
])
def test_injector_option_errors_exit_2(tmp_path, capsys, opt, msg):
    out = tmp_path / "study"
    with pytest.raises(SystemExit) as exc:
        main(["ski", "run", "--datasets", "bcw", "--injectors", "uneducated,kbann,kill",
              "--injector-option", opt, "--out", str(out)])
    assert exc.value.code == 2
    assert msg in capsys.readouterr().err and not out.exists()


def test_injector_option_reaches_the_predictor():
    ds = cells.dataset("bcw")
    p = cells.make_predictor({"injector": "kbann", "options": {"kbann": {"mofn": "psyki"},
                                                             "kill": {"weight": 2.0}}}, ds)
    assert p.opts["mofn"] == "psyki"
    assert cells.make_predictor({"injector": "kill", "options": {"kill": {"weight": 2}}},
                                ds).opts["weight"] == 2.0
