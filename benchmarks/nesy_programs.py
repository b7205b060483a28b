"""Ground + compile time of ProbLog programs written as DeepProbLog users write them, against
ProbLog's own pipeline on the same program, same machine, both in-process and warm.

Programs: the multi-digit addition written the textbook way (a number is read digit by digit
with an accumulator; N = 1, 2, 3 digits per operand), and, with ``--reference PATH`` to a
DeepProbLog checkout, every ``.pl`` model in its ``examples`` folder that our allow-list
accepts, each with the query shape given in :data:`EXAMPLE_QUERIES`.

Both sides get the same program text; for ProbLog each neural predicate becomes a uniform
numeric annotated disjunction over its values (ProbLog cannot read ``nn/4``), and the query
atom is the same. ProbLog is timed in this process as its Python API is used
(``LogicFormula.create_from`` for grounding, ``SDD.create_from`` for compilation), after one
warm-up run of the same program, as ours is; its command (``python -m problog -k sdd``, start-up
and printing included) is a separate column and never enters a ratio. Ours: grounding and
compilation reported apart, no circuit cache. Rounds interleave the two; medians with min–max
spread; the ratio is ProbLog's median ground+compile over ours.

    python benchmarks/nesy_programs.py [--rounds 5] [--max-digits 2] [--reference PATH] \\
        [--strategies auto,minimise] [--no-command]
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
    "HWF/model.pl": "expression([i0, i1, i2], R)",
    "Forth/Add/choose.pl": "add([a0, a1], [b0, b1], 0, R)",
    "Forth/Sort/compare.pl": "forth_sort([x0, x1, x2], L)",
    "Forth/Sort/quicksort.pl": "forth_sort([x0, x1, x2], L)",
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


def time_problog(text: str) -> tuple[float, float]:
    """Seconds of ProbLog's grounding (``LogicFormula.create_from``) and compilation
    (``SDD.create_from``) of ``text``, in this process."""
    from problog.formula import LogicFormula
    from problog.program import PrologString
    from problog.sdd_formula import SDD
    t0 = time.perf_counter()
    lf = LogicFormula.create_from(PrologString(text))
    t1 = time.perf_counter()
    SDD.create_from(lf)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def time_problog_command(text: str) -> float:
    """Seconds of the whole ``python -m problog -k sdd`` command (start-up included)."""
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
    return f"{statistics.median(xs):7.3f} s [{min(xs):.3f}–{max(xs):.3f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-digits", type=int, default=2)
    ap.add_argument("--reference", type=Path, help="a DeepProbLog checkout (its examples)")
    ap.add_argument("--strategies", default="auto",
                    help="compile strategies to time, comma-separated: auto (the engine's "
                         "choice) and/or minimise (vtree minimisation from the start)")
    ap.add_argument("--no-command", action="store_true",
                    help="skip the column timing the whole `problog -k sdd` command")
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
            if p.is_file():
                cases.append((rel, p.read_text(), query))
    if not args.no_command:
        empty = [time_problog_command("a.\nquery(a).\n") for _ in range(args.rounds)]
        print(f"problog -k sdd command start-up (empty program): {fmt(empty)}")
    print(f"{'program':34s} {'ours ground':>26s} {'ours compile':>26s} "
          f"{'problog ground':>26s} {'problog compile':>26s}  ratio (ground+compile)  "
          f"{'problog command':>26s}  SDD size, strategy")
    for name, text, query in cases:
        ptext = problog_text(text, query)
        try:                                        # warm-up: imports, caches, allocators
            time_ours(text, query, strategies[0])
        except Exception as exc:                    # noqa: BLE001 - report, go on
            print(f"{name}: not accepted by nesybench: {str(exc).splitlines()[0]}")
            continue
        try:
            time_problog(ptext)
        except Exception as exc:                    # noqa: BLE001
            print(f"{name}: problog failed: {str(exc).splitlines()[0]}")
            continue
        for strategy in strategies:
            g, c, pg, pc, cmd, sdd = [], [], [], [], [], ""
            for _ in range(args.rounds):           # interleaved rounds
                tg, tc, sdd = time_ours(text, query, strategy)
                g.append(tg)
                c.append(tc)
                rg, rc = time_problog(ptext)
                pg.append(rg)
                pc.append(rc)
                if not args.no_command:
                    cmd.append(time_problog_command(ptext))
            ours = statistics.median([a + b for a, b in zip(g, c)])
            ref = statistics.median([a + b for a, b in zip(pg, pc)])
            label = name if len(strategies) == 1 else f"{name} ({strategy})"
            print(f"{label:34s} {fmt(g)} {fmt(c)} {fmt(pg)} {fmt(pc)}  {ref / ours:8.2f}x"
                  f"{'':14s} {fmt(cmd) if cmd else '-':>26s}  {sdd}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
