"""Non-ground queries against ProbLog: one marginal per answer, both in-process and warm.

    .venv/bin/python benchmarks/nesy_queries.py [--rounds 5] [--max-problog 5] [--write-docs]

Programs (fixed seeds, so every run times the same text):

* ``0.5::p(X) :- between(1, N, X). query(p(X)).`` for N = 8, 16, 24: N independent answers;
* reachability ``query(path(n0, X))`` over random probabilistic graphs (``0.d::edge(a, b).``,
  ``path/2`` as the textbook transitive closure) of 12 to 30 nodes, densest first within each
  size until stock ProbLog needs more than ``--max-problog`` seconds (default 5).

ProbLog is used as its documentation shows
(``get_evaluatable("sdd").create_from(PrologString(text)).evaluate()``); nesybench as
``nesybench.nesy.inference.marginals.marginals(text)`` (SWI-Prolog grounder, the same SDD library). Both
run in this process, after one warm-up each; rounds interleave the two; each row gives the
median with min–max, and the ratio ProbLog / nesybench of the medians (above 1: nesybench is
faster). Grounding and compilation are reported apart for nesybench (its ``stats``). The
``nesy infer`` column is the command's wall time (a child process bounded by ``RLIMIT_AS``
and ``--timeout``, start-up included), one run, never in a ratio. Every answer of nesybench
is checked against ProbLog's (largest difference printed).
"""
from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = ("<!-- nesy_queries.py:begin -->", "<!-- nesy_queries.py:end -->")


def between_program(n: int) -> str:
    return f"0.5::p(X) :- between(1, {n}, X).\nquery(p(X)).\n"


def graph_program(nodes: int, edges: int, seed: int) -> str:
    rng = random.Random(seed)
    es: set[tuple[int, int]] = set()
    while len(es) < edges:
        a, b = rng.sample(range(nodes), 2)
        es.add((a, b))
    lines = [f"0.{rng.randint(1, 9)}::edge(n{a},n{b})." for a, b in sorted(es)]
    lines += ["path(X,Y) :- edge(X,Y).", "path(X,Y) :- edge(X,Z), path(Z,Y).",
              "query(path(n0,X))."]
    return "\n".join(lines) + "\n"


def problog_run(text: str) -> tuple[float, dict]:
    from problog import get_evaluatable
    from problog.program import PrologString
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = get_evaluatable("sdd").create_from(PrologString(text)).evaluate()
    return time.perf_counter() - t0, {str(k).replace(" ", ""): float(v) for k, v in res.items()}


def problog_time_limited(text: str, limit: float) -> float | None:
    """ProbLog's seconds on ``text`` in a child process, ``None`` past ``limit``."""
    code = ("import sys, time, warnings; warnings.simplefilter('ignore');"
            "from problog import get_evaluatable; from problog.program import PrologString;"
            "t = time.perf_counter();"
            "get_evaluatable('sdd').create_from(PrologString(sys.stdin.read())).evaluate();"
            "print(time.perf_counter() - t)")
    try:
        out = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True,
                             text=True, timeout=limit + 5, check=True)
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
        return None
    t = float(out.stdout.strip().splitlines()[-1])
    return t if t <= limit else None


def ours_run(text: str) -> tuple[float, dict, dict]:
    from nesybench.nesy.inference.marginals import marginals
    t0 = time.perf_counter()
    res = marginals(text)
    return (time.perf_counter() - t0, {a.atom.replace(" ", ""): a.p for a in res.answers},
            res.stats)


def cli_wall(text: str) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".pl", delete=False) as fh:
        fh.write(text)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "nesybench", "nesy", "infer", fh.name, "-q"],
                   capture_output=True, check=True)
    wall = time.perf_counter() - t0
    Path(fh.name).unlink()
    return wall


def _fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}–{max(xs):.3f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-problog", type=float, default=5.0,
                    help="skip denser graphs once ProbLog needs more than this (seconds)")
    ap.add_argument("--write-docs", action="store_true")
    args = ap.parse_args(argv)

    cases = [(f"between(1, {n}, X)", None, between_program(n)) for n in (8, 16, 24)]
    for nodes in (12, 16, 20, 24, 30):
        for factor in (3.0, 2.5, 2.0, 1.5):
            cases.append((f"path(n0, X), {nodes} nodes, {int(nodes * factor)} edges", nodes,
                          graph_program(nodes, int(nodes * factor), seed=nodes)))
    rows, done_sizes = [], set()
    for name, size, text in cases:
        if size is not None and size in done_sizes:
            continue
        if problog_time_limited(text, args.max_problog) is None:   # the size check
            print(f"{name}: ProbLog needs more than {args.max_problog:g} s, skipped",
                  flush=True)
            continue
        problog_run(text)                               # warm-up
        if size is not None:
            done_sizes.add(size)                        # the densest that fits, per size
        ours_run(text)
        a, b, g, c = [], [], [], []
        for _ in range(args.rounds):
            t, ref = problog_run(text)
            a.append(t)
            t, got, stats = ours_run(text)
            b.append(t)
            g.append(stats["ground_seconds"])
            c.append(stats["compile_seconds"])
        diff = max((abs(ref[k] - got.get(k, float("nan"))) for k in ref), default=0.0)
        if set(ref) != set(got):
            diff = float("inf")
        wall = cli_wall(text)
        ratio = statistics.median(a) / statistics.median(b)
        rows.append((name, len(ref), _fmt(a), _fmt(b), _fmt(g), _fmt(c), f"{wall:.2f}",
                     f"{ratio:.1f}×", f"{diff:.1e}"))
        print(" | ".join(map(str, rows[-1])), flush=True)
    head = ["| program | answers | ProbLog s | nesybench s | grounding s | compilation s | "
            "`nesy infer` wall s | ProbLog / nesybench | largest difference |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    table = head + ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    print("\n".join(table))
    if args.write_docs:
        doc = ROOT / "docs" / "performance.md"
        text = doc.read_text(encoding="utf-8")
        body = "\n".join([MARK[0], "", f"`benchmarks/nesy_queries.py --rounds {args.rounds}` "
                          "(medians over interleaved rounds, min–max in brackets, seconds):",
                          "", *table, "", MARK[1]])
        if MARK[0] in text:
            pre, rest = text.split(MARK[0], 1)
            text = pre + body + rest.split(MARK[1], 1)[1]
        else:
            anchor = "### Exact and approximate inference"
            text = text.replace(anchor, "### Non-ground queries against ProbLog\n\n" + body +
                                "\n\n" + anchor, 1)
        doc.write_text(text, encoding="utf-8")
    bad = [r for r in rows if r[-1] != "0.0e+00" and float(r[-1]) > 1e-9]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
