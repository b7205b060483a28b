"""Time RuDaS d_R / R-score: branch and bound + Hungarian vs the brute force.

Prints, per learned body length n, the time of d_R between a random original rule (2-3 body
atoms, the size RuDaS generates) and a random learned rule with n body atoms, and between two
random n-atom rules (the hardest case: both sides long). The brute force (every renaming x
every permutation) is timed only up to ``--brute-max`` atoms (it is factorial).

    .venv/bin/python benchmarks/rudas_rscore.py [--lengths 3,5,7,9] [--pairs 5] [--brute-max 6]
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from nesybench.rudas import rule_distance  # noqa: E402


def rule(rng: random.Random, n_body: int, n_vars: int) -> str:
    vs = [f"V{i}" for i in range(n_vars)]
    preds = [f"p{i}" for i in range(1, 6)]
    body = [f"{rng.choice(preds)}({rng.choice(vs)},{rng.choice(vs)})" for _ in range(n_body)]
    return f"p0(V0,V1) :- {', '.join(body)}"


def timed(a: str, b: str, method: str) -> float:
    t0 = time.perf_counter()
    rule_distance(a, b, method=method)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="3,5,7,9", help="learned body lengths")
    ap.add_argument("--pairs", type=int, default=5, help="random pairs per length")
    ap.add_argument("--brute-max", type=int, default=6, help="largest n timed by brute force")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    rule_distance("p(X) :- q(X)", "p(X) :- q(X)")   # load Prolog once
    print(f"{'n':>3} {'orig(3) vs n: median s':>24} {'max s':>8} {'n vs n: median s':>18} "
          f"{'max s':>8} {'brute n vs n: median s':>24}")
    for n in (int(x) for x in args.lengths.split(",")):
        short, both, brute = [], [], []
        for _ in range(args.pairs):
            orig = rule(rng, rng.randint(2, 3), 4)
            short.append(timed(orig, rule(rng, n, n + 1), "fast"))
            a, b = rule(rng, n, n + 1), rule(rng, n, n + 1)
            both.append(timed(a, b, "fast"))
            if n <= args.brute_max:
                brute.append(timed(a, b, "brute"))
        bcol = f"{statistics.median(brute):24.3f}" if brute else f"{'-':>24}"
        print(f"{n:>3} {statistics.median(short):24.4f} {max(short):8.4f} "
              f"{statistics.median(both):18.4f} {max(both):8.4f} {bcol}")


if __name__ == "__main__":
    main()
