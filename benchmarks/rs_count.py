"""Reasoning-shortcut counting figures: XOR, MNIST-Addition (n digits; two numbers of 4 digits)
and Kandinsky, per map class, with the seconds each count took.

    .venv/bin/python benchmarks/rs_count.py [--max-xor 12] [--big-xor 16,32,64]
        [--time-limit 120] [--reference PATH/TO/rsbench-code [--reference-python PY]
        [--reference-mode enumerate|amc|exact [--reference-counter CMD]]]

Checks: XOR against its closed forms (disentangled/separate 2^(n-1), perm n!·2^(n-1), joint
(2^(n-1))^(2^n)), Kandinsky against 36 (disentangled, all worlds) and 93,312 (perm, the
shipped 400 worlds); the other counts are exact and are checked against brute force on small
sizes in tests/test_shortcuts_scaling.py. Joint counts maps on the *support* only (its value
on unseen worlds is not counted), disentangled maps are functions on all values: the joint
count can therefore be smaller than the disentangled one when both are printed.

``--reference`` runs unitn-sml/rsbench-code's counter (``rsscount/gen-rss-count.py xor -n N``)
with ``--reference-python`` (an interpreter with pyeda, pyapproxmc and scikit-learn; default:
this one) in one of its modes: ``enumerate`` (``-E``, pyeda's exhaustive enumeration),
``amc`` (writes its DIMACS CNF, then ``rsscount/count-amc.py``: ApproxMC's (ε, δ)
approximation) or ``exact`` (its CNF counted by ``--reference-counter``, an exact #SAT
counter command that reads a DIMACS file given as its last argument and prints the count
last, e.g. ``sharpSAT`` or ``ganak``). It prints the reference's count (which counts
(permutation, map) pairs: ``--perm-count pairs`` here) and both times.
"""
from __future__ import annotations

import argparse
import math
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from nesybench.errors import NesyError  # noqa: E402
from nesybench.shortcuts.count import count_rs  # noqa: E402
from nesybench.shortcuts.task import load_task  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def xor(n):
    return load_task({"name": f"xor{n}", "knowledge": "kb/shortcuts/xor.lp", "maps": "separate",
                      "concepts": [{"name": "b", "count": n, "domain": [0, 1]}]})


def addition(n):
    return load_task({"name": f"add{n}", "knowledge": "kb/shortcuts/addition.lp",
                      "concepts": [{"name": "d", "count": n, "domain": {"range": [0, 9]},
                                    "map": "digit"}]})


def numbers(k=4):
    """MNIST-Addition with k digits per number: two numbers, label = their sum."""
    coef = {f"d({a * k + i + 1})": 10 ** (k - 1 - i) for a in range(2) for i in range(k)}
    return load_task({"name": f"add{k}x{k}", "knowledge": "kb/shortcuts/linear.lp",
                      "coef": {"sum": coef},
                      "concepts": [{"name": "d", "count": 2 * k, "domain": {"range": [0, 9]},
                                    "map": "digit"}]})


def shown(c: int) -> str:
    return str(c) if c < 10 ** 15 else f"~1e{len(str(c)) - 1}"


def run(label, cls, task, expect=None, note="", **kw):
    try:
        r = count_rs(task, map_class=cls, **kw)
    except NesyError as exc:
        print(f"{label:<12} {cls:<18} {'-':>22} {'-':>8}  {exc}")
        return None
    check = "" if expect is None else ("ok" if r.count == expect else "MISMATCH")
    name = cls + ("/" + kw["maps"] if kw.get("maps") else "")
    print(f"{label:<12} {name:<18} {shown(r.count):>22} {r.seconds:8.3f}  {check} {note}".rstrip())
    return r


def reference(args, n: int):
    """(count, seconds) of the reference counter on XOR n, or (None, reason)."""
    gen = args.reference / "rsscount" / "gen-rss-count.py"
    amc = args.reference / "rsscount" / "count-amc.py"
    if not gen.exists():
        return None, f"{gen} not found"
    py = args.reference_python or sys.executable
    out = Path(tempfile.mkdtemp(prefix=f"rs-ref-xor{n}-"))
    t0 = time.perf_counter()
    try:
        cmd = [py, str(gen), "xor", "-n", str(n)] + (["-E"] if args.reference_mode == "enumerate" else [])
        r = subprocess.run(cmd, cwd=out, capture_output=True, text=True, timeout=args.time_limit,
                           check=False)
        if r.returncode:
            return None, (r.stderr.strip().splitlines() or ["failed"])[-1]
        if args.reference_mode == "enumerate":
            m = re.search(r"(\d+) solutions", r.stdout)
            return (int(m.group(1)) if m else None), time.perf_counter() - t0
        m = re.search(r"writing formula to (\S+)", r.stdout)
        cnf = out / m.group(1) if m else None
        if cnf is None or not cnf.exists():
            return None, "no CNF written"
        if args.reference_mode == "amc":
            r = subprocess.run([py, str(amc), str(cnf)], cwd=out, capture_output=True, text=True,
                               timeout=args.time_limit, check=False)
            m = re.search(r"aka (\d+)", r.stdout)
        else:
            if not args.reference_counter:
                return None, "--reference-mode exact needs --reference-counter"
            r = subprocess.run([*shlex.split(args.reference_counter), str(cnf)], cwd=out,
                               capture_output=True, text=True, timeout=args.time_limit,
                               check=False)
            nums = re.findall(r"\d+", r.stdout)
            m = re.match(r"(\d+)", nums[-1]) if nums else None
        if not m:
            return None, (r.stderr.strip().splitlines() or ["no count printed"])[-1]
        return int(m.group(1)), time.perf_counter() - t0
    except (subprocess.TimeoutExpired, OSError) as exc:
        return None, str(exc).splitlines()[0]
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-xor", type=int, default=12)
    ap.add_argument("--big-xor", default="16,32,64", help="XOR sizes beyond --max-xor")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per count")
    ap.add_argument("--reference", type=Path, default=None)
    ap.add_argument("--reference-python", default=None)
    ap.add_argument("--reference-mode", choices=["enumerate", "amc", "exact"], default="enumerate")
    ap.add_argument("--reference-counter", default=None)
    ap.add_argument("--max-reference-xor", type=int, default=7)
    args = ap.parse_args()
    if args.reference and not args.reference.exists():
        print(f"# reference checkout {args.reference} not found: skipping its figures")
        args.reference = None
    tl = {"time_limit": args.time_limit}
    print("# joint = maps on the support worlds only; disentangled/perm = maps on all values "
          "(joint can be the smaller count)")
    print(f"{'task':<12} {'class':<18} {'count':>22} {'seconds':>8}  check")
    big = [int(x) for x in args.big_xor.split(",") if x.strip()]
    for n in [*range(3, args.max_xor + 1), *big]:
        t = xor(n)
        run(f"xor{n}", "disentangled", t, 2 ** (n - 1), **tl)
        run(f"xor{n}", "perm", t, math.factorial(n) * 2 ** (n - 1), **tl)
        if n <= args.max_xor:
            run(f"xor{n}", "joint", t, (2 ** (n - 1)) ** (2 ** n), **tl)
        if args.reference and n <= args.max_reference_xor:
            ours = count_rs(t, map_class="perm", perm_count="pairs")
            cnt, sec = reference(args, n)
            if cnt is None:
                print(f"# xor{n} reference ({args.reference_mode}) could not run: {sec}")
            else:
                print(f"# xor{n} reference ({args.reference_mode}) {cnt} in {sec:.2f}s vs ours "
                      f"{ours.count} (pairs) in {ours.seconds:.3f}s: ratio "
                      f"{sec / max(ours.seconds, 1e-6):.0f}x{'' if cnt == ours.count else ' (counts differ)'}")
    rng = random.Random(0)
    for n in range(1, 5):
        t = addition(n)
        worlds = list(t.all_worlds())
        for size in (10, 50):
            sup = sorted(rng.sample(worlds, min(size, len(worlds))))
            for cls, maps in (("disentangled", "shared"), ("disentangled", "separate"),
                              ("joint", None)):
                run(f"add{n}", cls, t, note=f"|S|={len(sup)}", support=sup,
                    **({"maps": maps} if maps else {}), **tl)
    t = numbers(4)
    run("add4x4", "disentangled", t, 1, note="|S|=all 10^8", maps="shared", **tl)
    run("add4x4", "disentangled", t, 1, note="|S|=all 10^8", maps="separate", **tl)
    for size in (10, 50, 200, 1000):
        sup = sorted({tuple(rng.randrange(10) for _ in range(8)) for _ in range(size)})
        for maps in ("shared", "separate"):
            run("add4x4", "disentangled", t, note=f"|S|={len(sup)}", support=sup, maps=maps, **tl)
    kand = load_task(ROOT / "curricula" / "rs" / "kandinsky.yaml")
    run("kandinsky", "disentangled", kand, note="|S|=400 (sample)", **tl)
    run("kandinsky", "joint", kand, note="|S|=400 (sample)", **tl)
    import yaml  # noqa: PLC0415
    d = yaml.safe_load((ROOT / "curricula" / "rs" / "kandinsky.yaml").read_text())
    d["support"] = "all"
    run("kandinsky", "disentangled", load_task(d), 36, note="|S|=all 531441", **tl)
    # perm: 2! figures x 3!^2 objects x (3! shapes x 3! colours)^2 per-figure value permutations
    run("kandinsky", "perm", kand, 93312, note="|S|=400 (sample), functions", **tl)
    run("kandinsky", "perm", kand, 93312, note="|S|=400 (sample), pairs", perm_count="pairs",
        **tl)
    for size in (3000, 30000):
        d["support"] = {"sample": size, "seed": 0}
        run("kandinsky", "perm", load_task(d), note=f"|S|={size} (sample)", **tl)


if __name__ == "__main__":
    main()
