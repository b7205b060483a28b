"""RuDaS benchmark: generation time and peak memory per size class, evaluation time.

    .venv/bin/python benchmarks/rudas_bench.py [--sizes xs,s,m,l,xl] [--n-facts xl=480000]
        [--category chain] [--depth 2] [--seed 0] [--eval-rules 10,100,1000]
        [--reference PATH [--reference-python PY] [--reference-cmd TEMPLATE]]

Each generation runs in a fresh subprocess (so peak RSS is per dataset). Targets: M < 2 s,
XL (<= 500k facts) < 60 s, memory < 4 GB on a 2-core machine. The reference RuDaS generator
was measured on this machine at up to 226 s (S) and 625 s (M). With
``--reference PATH`` (an IBM/RuDaS checkout) its generator ``src/generator.py`` is run on the
same size, category and depth (by default ``{python} generator.py --path {out}/ --size
{size_index} --category {category_index} --maxdepth {depth}`` in ``PATH/src``; it needs
numpy, so pass ``--reference-python`` for an interpreter that has it, or your own
``--reference-cmd`` template with the same placeholders plus ``{ref}`` and ``{size}``), and
the ratio is printed; without a checkout that part is skipped with a message.
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_MEASURED = {"s": 226.0, "m": 625.0}
#: the reference generator's --size and --category codes (its DatasetSize / DatasetCategory)
REF_SIZE_INDEX = {"xs": 0, "s": 1, "m": 2, "l": 3, "xl": 4}
REF_CATEGORY_INDEX = {"mixed": 0, "chain": 1, "rdg": 3, "drdg": 5}
REF_DEFAULT_CMD = ("{python} generator.py --path {out}/ --size {size_index} "
                   "--category {category_index} --maxdepth {depth}")

_GEN = """
import sys, json, time
from nesybench.rudas import RudasParams, generate
p = RudasParams(**json.loads(sys.argv[1]))
t = time.perf_counter(); r = generate(p, sys.argv[2]); dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "train": r.manifest["counts"]["train"],
                  "cw": r.manifest["counts"]["cw"], "rules": len(r.manifest["rule_graph"]["nodes"])}))
"""


def gen_once(params: dict, out: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _GEN, json.dumps(params), str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["?"]}
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["wall_with_startup"] = wall
    res["peak_rss_mb"] = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    return res


def learned_program(ds: Path, n: int, seed: int) -> str:
    """n random rules over the dataset's predicates (many bad, some dense joins)."""
    rng = random.Random(seed)
    preds = [l.strip() for l in (ds / "relations.txt").read_text().splitlines() if l.strip()]
    rules = (ds / "rules.txt").read_text().splitlines()
    out = list(rules[: max(1, n // 10)])
    vs = ["X", "Y", "Z", "W"]
    while len(out) < n:
        h = rng.choice(preds)
        body = []
        for _ in range(rng.randint(1, 3)):
            body.append(f"{rng.choice(preds)}({rng.choice(vs)},{rng.choice(vs)})")
        bvars = sorted({c for b in body for c in b if c in "XYZW"})
        out.append(f"{h}({rng.choice(bvars)},{rng.choice(bvars)}) :- {', '.join(body)}.")
    return "\n".join(out[:n]) + "\n"


def run_reference(args, ref: Path, tmp: Path, ours: dict) -> None:
    """Time the reference generator per size; print a clear reason when it cannot run."""
    default = args.reference_cmd == REF_DEFAULT_CMD
    if not ref.is_dir():
        print(f"# reference: skipped (no directory {ref})")
        return
    if default and not (ref / "src" / "generator.py").is_file():
        print(f"# reference: skipped ({ref}/src/generator.py not found: not an IBM/RuDaS checkout? "
              "give --reference-cmd for another layout)")
        return
    if args.category not in REF_CATEGORY_INDEX:
        print(f"# reference: skipped (no reference category for {args.category!r})")
        return
    cwd = ref / "src" if (ref / "src").is_dir() else ref
    for size in args.reference_sizes.split(","):
        out = tmp / f"ref-{size}"
        out.mkdir(parents=True, exist_ok=True)
        cmd = args.reference_cmd.format(
            python=shlex.quote(args.reference_python), ref=shlex.quote(str(ref)), size=size,
            size_index=REF_SIZE_INDEX[size], category=args.category,
            category_index=REF_CATEGORY_INDEX[args.category], depth=args.depth,
            out=shlex.quote(str(out)))
        t = time.perf_counter()
        try:
            proc = subprocess.run(shlex.split(cmd), capture_output=True, text=True, cwd=cwd,
                                  timeout=args.reference_timeout)
            rc, why = proc.returncode, (proc.stderr.strip().splitlines() or [""])[-1]
        except subprocess.TimeoutExpired:
            rc, why = "timeout", f"stopped after {args.reference_timeout:.0f} s"
        dt = time.perf_counter() - t
        if rc != 0:
            print(f"reference {size}: failed (rc {rc}) after {dt:.1f} s: {why}  [{cmd}]")
            continue
        ratio = f"{dt / ours[size]:.1f}x" if size in ours else "?"
        print(f"reference {size}: {dt:.1f} s, ours {ours.get(size, float('nan')):.2f} s, ratio {ratio}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="xs,s,m,l,xl")
    ap.add_argument("--n-facts", default="",
                    help="exact training-set sizes per class, e.g. xl=480000 (default: drawn "
                         "inside the class as the generator does)")
    ap.add_argument("--category", default="chain")
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-rules", default="10,100,1000")
    ap.add_argument("--eval-size", default="l")
    ap.add_argument("--max-derived", type=int, default=2_000_000)
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--reference", help="path to an IBM/RuDaS checkout (optional)")
    ap.add_argument("--reference-cmd", default=REF_DEFAULT_CMD,
                    help="command run per size in PATH/src (or PATH); placeholders {python} {ref} "
                         "{size} {size_index} {category} {category_index} {depth} {out} "
                         f"(default: {REF_DEFAULT_CMD!r})")
    ap.add_argument("--reference-python", default=sys.executable,
                    help="interpreter for the reference generator (needs numpy)")
    ap.add_argument("--reference-sizes", default="s,m")
    ap.add_argument("--reference-timeout", type=float, default=1800.0,
                    help="seconds per reference run (it took up to 625 s for M here)")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="rudas-bench-"))
    print(f"# RuDaS generation ({args.category}, depth {args.depth}, seed {args.seed})")
    print(f"{'size':5s} {'train':>8s} {'|D|':>8s} {'rules':>5s} {'gen s':>8s} {'+start s':>8s} {'peak MB':>8s}")
    ours = {}
    n_facts = dict(kv.split("=") for kv in args.n_facts.split(",") if kv)
    for size in args.sizes.split(","):
        p = {"category": args.category, "size": size, "depth": args.depth, "seed": args.seed}
        if size in n_facts:
            p["n_facts"] = int(n_facts[size])
        r = gen_once(p, tmp / f"gen-{size}")
        if "error" in r:
            print(f"{size:5s} error: {r['error']}")
            continue
        ours[size] = r["seconds"]
        print(f"{size:5s} {r['train']:8d} {r['cw']:8d} {r['rules']:5d} {r['seconds']:8.2f} "
              f"{r['wall_with_startup']:8.2f} {r['peak_rss_mb']:8.0f}")
    for size, ref_s in REFERENCE_MEASURED.items():
        if size in ours:
            print(f"reference RuDaS measured on this machine, {size.upper()}: up to {ref_s:.0f} s "
                  f"-> ratio {ref_s / max(ours[size], 1e-9):.0f}x")
    if args.reference:
        run_reference(args, Path(args.reference).resolve(), tmp, ours)
    if args.eval_rules:
        from nesybench.rudas import RudasParams, evaluate, generate  # noqa: PLC0415
        ds = tmp / f"eval-{args.eval_size}"
        generate(RudasParams(category="rdg", size=args.eval_size, depth=2, seed=args.seed), ds)
        ns = sum(1 for _ in open(ds / "eval-support.txt"))
        print(f"# evaluation on a {args.eval_size.upper()} RDG dataset (|S'| = {ns})")
        print(f"{'rules':>6s} {'seconds':>8s} {'derived':>12s} {'partial':>8s} {'h_score':>8s}")
        for n in map(int, args.eval_rules.split(",")):
            lf = tmp / f"learned-{n}.pl"
            lf.write_text(learned_program(ds, n, args.seed))
            t = time.perf_counter()
            m = evaluate(ds, lf, max_derived=args.max_derived, time_limit=args.time_limit)
            dt = time.perf_counter() - t
            print(f"{n:6d} {dt:8.2f} {m['n_learned']:12d} {str(m['partial']):>8s} {m['h_score']:8.4f}")
    print(f"# outputs under {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
