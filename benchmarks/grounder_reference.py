"""Every grounder against stock ProbLog on many generated first-order programs.

    .venv/bin/python benchmarks/grounder_reference.py                  # 10,000 programs
    .venv/bin/python benchmarks/grounder_reference.py --programs 500 --jobs 2
    make fuzz                                                          # runs this too

The programs come from tests/problog_reference.py (lists, every arithmetic function over
negative, zero, float and large operands, quoted, negative and float constants, ProbLog's
standard order, counting builtins, cycles, non-ground annotated-disjunction heads,
probabilistic rules, negation, findall, evidence on derived atoms, ground, non-ground and
anonymous queries), with seeds from --first-seed on (the test suite runs seeds 0-499). Each
program is evaluated by stock ProbLog (``get_evaluatable()``, in a child killed after 10 s)
and by nesybench's auto, prolog and problog grounders; a disagreement is any answer that
differs by more than 1e-9, or a program that one side refuses and the other answers (the
deliberate differences of the guide aside). Prints one summary line and each disagreement
(seed and the first three differences); exits 1 if there is any.
"""
from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
import multiprocessing as mp
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _check(seeds: list[int]) -> list[tuple[int, list[str], str]]:
    import problog_reference as reference
    out = []
    for seed in seeds:
        text = reference.program(seed)
        ref = reference.stock(text)
        kind = ("timeout" if isinstance(ref, reference.StockTimeout)
                else "rejected" if isinstance(ref, Exception) else "answered")
        out.append((seed, reference.compare(text, stock_answer=ref), kind))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=10_000, help="how many (default 10,000)")
    ap.add_argument("--first-seed", type=int, default=100_000,
                    help="seed of the first program (default 100,000)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    args = ap.parse_args(argv)
    if args.programs < 1 or args.jobs < 1:
        ap.error("--programs and --jobs must be >= 1")
    seeds = list(range(args.first_seed, args.first_seed + args.programs))
    chunks = [seeds[i:i + 50] for i in range(0, len(seeds), 50)]
    t0 = time.perf_counter()
    results = []
    # workers that may start children of their own (stock ProbLog runs in a killable child)
    with ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("spawn")) as pool:
        for k, part in enumerate(pool.map(_check, chunks), 1):
            results.extend(part)
            if k % 20 == 0 or k == len(chunks):
                print(f"  {len(results):,}/{len(seeds):,} programs, "
                      f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    bad = sorted((s, p) for s, p, _ in results if p)
    kinds = {k: sum(1 for *_, x in results if x == k) for k in ("answered", "rejected",
                                                               "timeout")}
    for seed, problems in bad:
        print(f"seed {seed}: " + " | ".join(problems[:3]))
    print(f"grounders against stock ProbLog: {len(results):,} programs (seeds "
          f"{seeds[0]}-{seeds[-1]}; stock answered {kinds['answered']:,}, rejected "
          f"{kinds['rejected']:,}, gave no answer in 10 s {kinds['timeout']:,}), "
          f"{len(bad)} disagreements, {time.perf_counter() - t0:.0f} s with {args.jobs} jobs")
    return int(bool(bad))


if __name__ == "__main__":
    sys.exit(main())
