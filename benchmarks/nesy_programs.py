"""Ground + compile time of ProbLog programs written as DeepProbLog users write them, against
ProbLog's own knowledge compiler (``problog -k sdd``) on the same program, same machine.

Programs: the multi-digit addition written the textbook way (a number is read digit by digit
with an accumulator; N = 1, 2, 3 digits per operand), and, with ``--reference PATH`` to a
DeepProbLog checkout, every ``.pl`` model in its ``examples`` folder that our allow-list
accepts (with a query given below or skipped with a note).

Both sides get the same program text; for ProbLog each neural predicate becomes a uniform
numeric annotated disjunction over its values (ProbLog cannot read ``nn/4``), and the query
atom is the same. ProbLog runs as a command, as its own documentation uses it; its time is the
whole command (start-up included, reported separately as the time of an empty program).
Ours: grounding and compilation reported apart, no circuit cache. Rounds interleave the two;
medians with min–max spread.

    python benchmarks/nesy_programs.py [--rounds 3] [--max-digits 2] [--reference PATH] \\
        [--strategies auto,minimise]
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ADDITION = """nn(digit_net, [X], Y, [0,1,2,3,4,5,6,7,8,9]) :: digit(X, Y).
number([], Acc, Acc).
number([D|Ds], Acc, N) :- digit(D, V), Acc1 is 10 * Acc + V, number(Ds, Acc1, N).
number(Ds, N) :- number(Ds, 0, N).
multi_addition(X, Y, Z) :- number(X, A), number(Y, B), Z is A + B.
"""

#: queries for the reference examples (file name relative to ``examples/``)
EXAMPLE_QUERIES = {
    "MNIST/models/addition.pl": "addition(a, b, Z)",
    "MNIST/models/noisy_addition.pl": "addition_noisy(a, b, Z)",
    "MNIST/models/all_digit_addition.pl": "addition(a, b, c)",
    "minimal/addition.pl": "addition(a, b, Z)",
    "Coins/model.pl": "game(x, O)",
    "Poker/model.pl": "game([c1, c2, c3, c4], O)",
    "HWF/model.pl": None,
    "Forth/Add/choose.pl": None,
    "Forth/Sort/compare.pl": None,
    "Forth/Sort/quicksort.pl": None,
}


def problog_text(text: str, query: str) -> str:
    """The program with ``nn(Net, In, Out, Values) :: head.`` as a uniform annotated
    disjunction and ``t(P)`` parameters as their initial values, plus ``query(...)``."""
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*nn\((\w+)\s*,\s*\[([^\]]*)\]\s*,\s*(\w+)\s*,\s*\[([^\]]*)\]\s*\)\s*::"
                     r"\s*(.*)\.\s*$", line)
        if m:
            out_var, values, head = m.group(3), [v.strip() for v in m.group(4).split(",")], \
                m.group(5)
            p = 1.0 / len(values)
            out.append("; ".join(f"{p!r}::" + re.sub(rf"\b{out_var}\b", v, head)
                                 for v in values) + ".")
            continue
        out.append(re.sub(r"\bt\(_\)", "0.5", re.sub(r"\bt\(([^)_][^)]*)\)", r"\1", line)))
    return "\n".join(out) + f"\nquery({query}).\n"


def time_problog(text: str) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".pl", delete=False) as fh:
        fh.write(text)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "problog", "-k", "sdd", fh.name],
                       capture_output=True, text=True)
    dt = time.perf_counter() - t0
    Path(fh.name).unlink()
    if r.returncode != 0 or "rror" in r.stdout or ":" not in r.stdout:
        msg = (r.stderr.strip() or r.stdout.strip() or "failed").splitlines()[-1]
        raise RuntimeError(msg)
    return dt


def time_ours(text: str, query: str, strategy: str = "auto") -> tuple[float, float, str]:
    """Ground and compile seconds, and ``"SDD size strategy"`` of the circuit."""
    from nesybench.nesy.compile import compile_program
    from nesybench.nesy.program import ground
    t0 = time.perf_counter()
    gp = ground(text, [query])
    t1 = time.perf_counter()
    comp = compile_program(gp, strategy=strategy)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, f"{comp.sdd.size():,} {comp.strategy}"


def fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):7.2f} s [{min(xs):.2f}–{max(xs):.2f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-digits", type=int, default=2)
    ap.add_argument("--reference", type=Path, help="a DeepProbLog checkout (its examples)")
    ap.add_argument("--strategies", default="auto",
                    help="compile strategies to time, comma-separated: auto (the engine's "
                         "choice) and/or minimise (vtree minimisation from the start)")
    args = ap.parse_args(argv)
    strategies = args.strategies.split(",")
    if any(st not in ("auto", "minimise") for st in strategies):
        ap.error("--strategies takes auto and/or minimise")

    cases = []
    for n in range(1, args.max_digits + 1):
        a = ", ".join(f"a{i}" for i in range(n))
        b = ", ".join(f"b{i}" for i in range(n))
        cases.append((f"textbook addition N={n}", ADDITION, f"multi_addition([{a}], [{b}], Z)"))
    if args.reference:
        root = args.reference / "src" / "deepproblog" / "examples"
        for rel, query in EXAMPLE_QUERIES.items():
            p = root / rel
            if p.is_file() and query:
                cases.append((rel, p.read_text(), query))
            elif p.is_file():
                print(f"{rel}: no query shape given here; skipped")
    empty = [time_problog("a.\nquery(a).\n") for _ in range(args.rounds)]
    print(f"problog -k sdd start-up (empty program): {fmt(empty)}")
    print(f"{'program':34s} {'ours ground':>24s} {'ours compile':>24s} {'ours total':>24s} "
          f"{'problog -k sdd':>24s}  ratio  SDD size, strategy")
    for name, text, query in cases:
        for strategy in strategies:
            g, c, tot, ref, sdd = [], [], [], [], ""
            for _ in range(args.rounds):           # interleaved rounds
                try:
                    tg, tc, sdd = time_ours(text, query, strategy)
                except Exception as exc:           # noqa: BLE001 - report, go on
                    print(f"{name}: ours failed: {exc}")
                    break
                g.append(tg)
                c.append(tc)
                tot.append(tg + tc)
                try:
                    ref.append(time_problog(problog_text(text, query)))
                except RuntimeError as exc:
                    print(f"{name}: problog failed: {exc}")
                    break
            if len(tot) == args.rounds and len(ref) == args.rounds:
                ratio = statistics.median(ref) / statistics.median(tot)
                label = name if len(strategies) == 1 else f"{name} ({strategy})"
                print(f"{label:34s} {fmt(g)} {fmt(c)} {fmt(tot)} {fmt(ref)}  {ratio:5.2f}x  "
                      f"{sdd}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
