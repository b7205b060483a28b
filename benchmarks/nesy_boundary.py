"""Benchmark: where exact inference stops, and what sampling costs and misses below that line.

For each program and N (digits per number) it runs, each in a fresh process (so the memory
figure is that configuration's own):

* **exact**: ground + compile the program into an SDD under a budget (``--timeout``,
  ``--max-circuit-nodes``); prints ground nodes, compile seconds, SDD size, peak live SDD nodes
  and the process's peak RSS — or the budget error where it stops;
* **sample:S** (``nesybench.nesy.inference.approx``): ground only, then one batch of ``--batch``
  examples: seconds per forward + backward, and, where the exact circuit exists, the error of
  the sampled marginals (max |P̂ - P| over every label value and example, and that error in
  units of the standard error sqrt(P(1-P)/S)) and of P̂(y) for each example's true label.

Programs: ``carry`` (nesybench's MNIST-Addition program: the label is the N+1 sum digits, the
circuit linear in N) and ``textbook`` (DeepProbLog's ``multi_addition/3`` over ``number/3``:
one label, the sum, with up to 2·10^N - 1 values — grounding itself explodes) and ``sum`` (the
sum of all 2N digits, one label of 18N + 1 values: a small ground program whose circuit grows
fast — where compilation, not grounding, is the limit).
Concept distributions are random softmaxes (temperature ``--temperature``), seeded.

    python benchmarks/nesy_boundary.py --program carry --n 1 2 4 8 15 30
    python benchmarks/nesy_boundary.py --program textbook --n 1 2 3 --timeout 120
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

TEXTBOOK = """nn(digit_net, [X], Y, [0,1,2,3,4,5,6,7,8,9]) :: digit(X, Y).
number([], Acc, Acc).
number([H|T], Acc, N) :- digit(H, V), Acc1 is 10 * Acc + V, number(T, Acc1, N).
multi_addition(X, Y, Z) :- number(X, 0, A), number(Y, 0, B), Z is A + B.
"""


SUM = """nn(digit_net, [X], Y, [0,1,2,3,4,5,6,7,8,9]) :: digit(X, Y).
total([], 0).
total([H|T], S) :- total(T, S0), digit(H, D), S is S0 + D.
"""


def shape(program: str, n: int):
    """(text, queries, concept order)."""
    if program == "sum":            # one label: the sum of 2N digits (9·2N + 1 values)
        xs = [f"a{i}" for i in range(n)] + [f"b{i}" for i in range(n)]
        return SUM, [f"total([{','.join(xs)}], S)"], xs
    if program == "carry":
        from nesybench.nesy.learn.mnist_add import addition_program
        s = addition_program(n)
        return s.text, s.queries, s.concept_order
    a = [f"a{i}" for i in range(n)]
    b = [f"b{i}" for i in range(n)]
    q = f"multi_addition([{','.join(a)}], [{','.join(b)}], Z)"
    return TEXTBOOK, [q], a + b


def labels_for(program: str, prog, digits, n):
    """Label indices (B, n_labels) of the sums of the sampled digit pairs."""
    import torch
    if program == "carry":
        # digits: (B, 2n) least significant first (a_0..a_{n-1}, b_0..b_{n-1}); add digit by
        # digit (the sums of N > 18 digits do not fit an int64)
        carry, out = torch.zeros(len(digits), dtype=torch.long), []
        for i in range(n):
            t = digits[:, i] + digits[:, n + i] + carry
            out.append(t % 10)
            carry = t // 10
        out.append(carry)
        cols = []
        for j, dom in enumerate(prog.label_domains):
            lut = {int(v): k for k, v in enumerate(dom)}
            cols.append(torch.tensor([lut[int(v)] for v in out[j]]))
        return torch.stack(cols, 1)
    if program == "sum":
        dom = {int(v): i for i, v in enumerate(prog.label_domains[0])}
        return torch.tensor([[dom[int(v)]] for v in digits.sum(1)])
    # textbook: a0 is the most significant digit
    p10 = 10 ** torch.arange(n - 1, -1, -1)
    s = (digits[:, :n] * p10).sum(1) + (digits[:, n:] * p10).sum(1)
    dom = {int(v): i for i, v in enumerate(prog.label_domains[0])}
    return torch.tensor([[dom[int(v)]] for v in s])


def _timed_fwd_bwd(prog, logits, digits, spec: dict, out: dict):
    """One forward + backward of ``prog`` on the batch's concept distributions and labels;
    records ``fwd_bwd_ms_per_example`` in ``out``; returns (distributions, log-probabilities)."""
    import torch

    n, B = spec["n"], spec["batch"]
    lg = logits.clone().requires_grad_(True)
    ps = [torch.softmax(lg[:, i], -1) for i in range(2 * n)]
    y = labels_for(spec["program"], prog, digits, n)
    t0 = time.perf_counter()
    lp = prog(ps, y)
    lp.sum().backward()
    out["fwd_bwd_ms_per_example"] = round(1000 * (time.perf_counter() - t0) / B, 3)
    return ps, lp


def one(spec: dict) -> dict:
    """One configuration, in this process."""
    import torch
    from nesybench.errors import BudgetExceeded
    from nesybench.nesy.inference.approx import SampledProgram
    from nesybench.nesy.program.budget import Budget
    from nesybench.nesy.inference.circuit import CompiledProgram
    import problog.engine  # noqa: F401  - the libraries grounding and compiling load, so
    import pysdd.sdd  # noqa: F401        that the baseline below is the process before work

    torch.set_num_threads(1)
    rss_imports = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    text, queries, order = shape(spec["program"], spec["n"])
    budget = Budget(timeout=spec["timeout"], max_circuit_nodes=spec["max_circuit_nodes"])
    out = {"program": spec["program"], "n": spec["n"], "method": spec["method"],
           "rss_after_imports_mb": rss_imports}
    n, B = spec["n"], spec["batch"]
    g = torch.Generator().manual_seed(spec["seed"])
    logits = torch.randn(B, 2 * n, 10, generator=g, dtype=torch.float64) * spec["temperature"]
    digits = torch.multinomial(torch.softmax(logits, -1).reshape(-1, 10), 1,
                               generator=g).reshape(B, 2 * n)
    if spec["method"] == "exact":
        t0 = time.perf_counter()
        try:
            prog = CompiledProgram.from_program(text, queries, concept_order=order,
                                                use_cache=False, budget=budget)
        except BudgetExceeded as exc:
            out.update(stopped=exc.message.split(";")[0], seconds=round(time.perf_counter() - t0, 2))
            out["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
            return out
        st = prog.stats
        out.update(ground_s=st["ground_seconds"], compile_s=st["compile_seconds"],
                   ground_nodes=st["ground_nodes"], sdd_size=st["sdd_size"],
                   peak_live=st["peak_live_size"])
        ps, lp = _timed_fwd_bwd(prog, logits, digits, spec, out)
        with torch.no_grad():
            marg = prog.label_marginals([p.detach() for p in ps])
        out["_marginals"] = [m.tolist() for m in marg]
        out["_logp"] = lp.detach().tolist()
    else:
        S = spec["samples"]
        t0 = time.perf_counter()
        try:
            prog = SampledProgram.from_program(text, queries, concept_order=order, samples=S,
                                               seed=spec["seed"], budget=budget)
        except BudgetExceeded as exc:
            out.update(stopped=exc.message, seconds=round(time.perf_counter() - t0, 2))
            return out
        out.update(ground_s=round(time.perf_counter() - t0, 3),
                   ground_nodes=prog.stats["ground_nodes"], samples=S)
        ps, lp = _timed_fwd_bwd(prog, logits, digits, spec, out)
        if spec.get("compare"):
            with torch.no_grad():
                marg = prog.label_marginals([p.detach() for p in ps])
            out["_marginals"] = [m.tolist() for m in marg]
            out["_logp"] = lp.detach().tolist()
    out["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def run_child(spec: dict, timeout: float) -> dict:
    env = dict(os.environ)
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(here, "..", "python"),
                                         env.get("PYTHONPATH", "")])
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", json.dumps(spec)],
                           capture_output=True, text=True, timeout=timeout + 120, env=env)
    except subprocess.TimeoutExpired:
        return {**spec, "stopped": f"killed after {timeout + 120:.0f} s"}
    if r.returncode != 0:
        return {**spec, "stopped": (r.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def compare(ex: dict, sa: dict, S: int) -> dict:
    """Error of the sampled marginals and of P̂(true label) against exact."""
    worst = worst_tol = 0.0
    for me, ms in zip(ex["_marginals"], sa["_marginals"]):
        for re_, rs in zip(me, ms):
            for p, q in zip(re_, rs):
                d = abs(p - q)
                worst = max(worst, d)
                # the tolerance the tests use: 5 standard errors plus two hits (2/S)
                worst_tol = max(worst_tol, d / (5 * math.sqrt(max(p * (1 - p), 0) / S) + 2 / S))
    rel = [abs(math.exp(a) - math.exp(b)) / math.exp(a) for a, b in zip(ex["_logp"], sa["_logp"])]
    return {"max_abs_error": round(worst, 5), "max_error_over_tolerance": round(worst_tol, 3),
            "median_rel_error_P(y)": round(sorted(rel)[len(rel) // 2], 4),
            "median_P(y)": float(f"{sorted(math.exp(a) for a in ex['_logp'])[len(rel) // 2]:.3g}")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--program", choices=["carry", "textbook", "sum"], default="carry")
    ap.add_argument("--n", type=int, nargs="+", default=[1, 2, 4, 8, 15])
    ap.add_argument("--samples", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--temperature", type=float, default=2.0,
                    help="scale of the random concept logits (higher: more confident)")
    ap.add_argument("--timeout", type=float, default=120.0, help="exact budget, seconds")
    ap.add_argument("--max-circuit-nodes", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(json.loads(args.one))))
        return 0
    base = {"program": args.program, "batch": args.batch, "temperature": args.temperature,
            "timeout": args.timeout, "max_circuit_nodes": args.max_circuit_nodes,
            "seed": args.seed}
    if not args.json:
        print(f"program {args.program}; batch {args.batch}; exact budget {args.timeout:g} s, "
              f"{args.max_circuit_nodes:,} live SDD nodes; 1 thread; random concept "
              f"distributions (temperature {args.temperature:g}, seed {args.seed})")
    for n in args.n:
        ex = run_child({**base, "n": n, "method": "exact"}, args.timeout)
        if args.json:
            print(json.dumps({k: v for k, v in ex.items() if not k.startswith("_")}))
        elif "stopped" in ex:
            print(f"N={n:>2} exact   STOPPED after {ex.get('seconds', '?')} s: {ex['stopped']}"
                  f" (max RSS {ex.get('max_rss_mb', '?')} MB)", flush=True)
        else:
            print(f"N={n:>2} exact   ground {ex['ground_s']} s ({ex['ground_nodes']:,} nodes), "
                  f"compile {ex['compile_s']} s, SDD size {ex['sdd_size']:,} (peak live "
                  f"{ex['peak_live']:,}), max RSS {ex['max_rss_mb']} MB (after imports "
                  f"{ex['rss_after_imports_mb']} MB), fwd+bwd "
                  f"{ex['fwd_bwd_ms_per_example']} ms/example", flush=True)
        for S in args.samples:
            sa = run_child({**base, "n": n, "method": "sample", "samples": S,
                            "compare": "stopped" not in ex}, args.timeout)
            row = {k: v for k, v in sa.items() if not k.startswith("_")}
            if "stopped" not in ex and "_marginals" in sa:
                row.update(compare(ex, sa, S))
            if args.json:
                print(json.dumps(row))
            elif "stopped" in sa:
                print(f"       sample:{S} STOPPED: {sa['stopped']}")
            else:
                err = (f" | max |P̂-P| {row['max_abs_error']} ({row['max_error_over_tolerance']}"
                       f" of the tolerance 5·s.e. + 2/S), P(y): median {row['median_P(y)']}, median rel. error "
                       f"{row['median_rel_error_P(y)']}") if "max_abs_error" in row else ""
                print(f"       sample:{S:<6} ground {row['ground_s']} s, fwd+bwd "
                      f"{row['fwd_bwd_ms_per_example']} ms/example, max RSS "
                      f"{row['max_rss_mb']} MB{err}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
