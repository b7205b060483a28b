"""Ground + compile time of ProbLog programs written as DeepProbLog users write them, against
ProbLog's own pipeline on the same program, same machine, both in-process and warm.

Programs: the multi-digit addition written the textbook way (a number is read digit by digit
with an accumulator; N = 1, 2, 3 digits per operand), and, with ``--reference PATH`` to a
DeepProbLog checkout, every ``.pl`` model in its ``examples`` folder that our allow-list
accepts, each with the query shape given in :data:`EXAMPLE_QUERIES`.

Ours grounds in SWI-Prolog (``--grounder auto``, the default; ``--grounders prolog,problog``
adds rows grounded by ProbLog's engine inside nesybench, for comparison). Both sides get the
same program text; for ProbLog each neural predicate becomes a uniform
numeric annotated disjunction over its values (ProbLog cannot read ``nn/4``), and the query
atom is the same. ProbLog is timed in this process as its Python API is used
(``LogicFormula.create_from`` for grounding, ``SDD.create_from`` for compilation), after one
warm-up run of the same program, as ours is; its command (``python -m problog -k sdd``, start-up
and printing included) is a separate column and never enters a ratio. Ours: grounding and
compilation reported apart, no circuit cache. Rounds interleave the two; medians with min–max
spread; the ratios are ProbLog's median ground+compile over ours, and ProbLog's grounding
over ours.

``--reachability 30`` (the default) adds ``path(n0, X)`` over a 30-node probabilistic graph,
a non-ground query whose answers hold together. ``--large-api`` runs the ``--large`` programs
through the public ``CompiledProgram.from_program`` too.

``--large 3,4`` then grounds and compiles the textbook addition at those N once each, in a
child process under ``--large-timeout`` seconds (default 600) and ``--large-memory`` MiB
(default 8192), and prints grounding and compilation seconds, SDD size and the child's peak
resident memory (its VmHWM, read while it runs), or the limit it reached; ``--problog-large`` does the same for ProbLog's
pipeline (``LogicFormula.create_from`` + ``SDD.create_from``), killed at the same limits.

    python benchmarks/nesy_programs.py [--rounds 5] [--max-digits 2] [--reference PATH] \\
        [--strategies auto,minimise] [--grounders prolog] [--no-command] [--large 3,4] \\
        [--problog-large]
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

def reachability(nodes: int = 30, seed: int = 0) -> str:
    """A probabilistic graph of ``nodes`` nodes, two random out-edges each (probabilities
    0.1-0.9, a fixed seed), and reachability over it: ``path(n0, X)`` has an answer per
    reachable node, answers that hold together through shared edges and cycles."""
    import random
    rng = random.Random(seed)
    lines = []
    for a in range(nodes):
        for b in rng.sample([x for x in range(nodes) if x != a], 2):
            lines.append(f"{rng.choice(range(1, 10)) / 10}::edge(n{a}, n{b}).")
    lines += ["path(X, Y) :- edge(X, Y).", "path(X, Y) :- edge(X, Z), path(Z, Y)."]
    return "\n".join(lines) + "\n"


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


def time_ours(text: str, query: str, strategy: str = "auto", grounder: str = "auto"
              ) -> tuple[float, float, str]:
    """Ground and compile seconds, and ``"SDD size strategy"`` of the circuit."""
    from nesybench.nesy.inference.compile import compile_program
    from nesybench.nesy.program.program import ground
    t0 = time.perf_counter()
    gp = ground(text, [query], grounder=grounder)
    t1 = time.perf_counter()
    comp = compile_program(gp, strategy=strategy)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, f"{comp.sdd.size():,} {comp.strategy}"


def addition_query(n: int) -> str:
    a = ", ".join(f"a{i}" for i in range(n))
    b = ", ".join(f"b{i}" for i in range(n))
    return f"multi_addition([{a}], [{b}], Z)"


def run_large_child(n: int, which: str) -> None:
    """In the child: ground and compile textbook addition at ``n`` digits once (``which``:
    ``ours`` or ``problog``) and print one JSON line of seconds and sizes."""
    import json
    if which == "ours":
        from nesybench.nesy.program.budget import Budget
        from nesybench.nesy.inference.compile import compile_program
        from nesybench.nesy.program.program import ground
        budget = Budget(max_ground_nodes=None, max_circuit_nodes=None, timeout=None,
                        max_memory_mb=None)
        t0 = time.perf_counter()
        gp = ground(ADDITION, [addition_query(n)], budget=budget)
        t1 = time.perf_counter()
        print(json.dumps({"ground": t1 - t0, "nodes": len(gp.nodes)}), flush=True)
        comp = compile_program(gp, budget=budget)
        t2 = time.perf_counter()
        print(json.dumps({"ground": t1 - t0, "compile": t2 - t1, "sdd": comp.sdd.size(),
                          "strategy": comp.strategy, "nodes": len(gp.nodes) - 1}), flush=True)
    elif which == "api":
        from nesybench.nesy.program.budget import Budget
        from nesybench.nesy.inference.circuit import CompiledProgram
        budget = Budget(max_ground_nodes=None, max_circuit_nodes=None, timeout=None,
                        max_memory_mb=None)
        t0 = time.perf_counter()
        prog = CompiledProgram.from_program(ADDITION, [addition_query(n)], use_cache=False,
                                            budget=budget)
        print(json.dumps({"ground+compile": time.perf_counter() - t0,
                          "strategy": prog.stats.get("strategy", "")}), flush=True)
    else:
        tg, tc = time_problog(problog_text(ADDITION, addition_query(n)))
        print(json.dumps({"ground": tg, "compile": tc}), flush=True)


def run_large(n: int, which: str, timeout: float, memory_mb: float) -> str:
    """One line: the child's result, or the limit it reached, and its peak memory."""
    import json
    import resource
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import nesy_programs as b; "
            "b.run_large_child(int(sys.argv[2]), sys.argv[3])")

    def limit() -> None:
        cap = int(memory_mb * 2**20)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    import threading
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, str(Path(__file__).parent), str(n),
                             which], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=limit)
    peak_kb = [0]

    def watch() -> None:      # the child's own high-water mark (VmHWM), until it ends
        while proc.poll() is None:
            try:
                with open(f"/proc/{proc.pid}/status", encoding="ascii") as fh:
                    for line in fh:
                        if line.startswith("VmHWM:"):
                            peak_kb[0] = max(peak_kb[0], int(line.split()[1]))
            except (OSError, ValueError):
                pass
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        out, err = proc.communicate(timeout=timeout)
        status = None if proc.returncode == 0 else \
            (err.strip().splitlines() or ["failed"])[-1][:120]
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        status = f"killed at the {timeout:g} s limit"
    wall = time.perf_counter() - t0
    watcher.join()
    peak_txt = f"peak {peak_kb[0] / 1024:,.0f} MiB" if peak_kb[0] else "peak unknown"
    lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    last = lines[-1] if lines else {}
    parts = [f"{k} {last[k]:.2f} s" for k in ("ground", "compile", "ground+compile")
             if k in last]
    if "sdd" in last:
        parts.append(f"SDD size {last['sdd']:,} ({last['strategy']})")
    if "nodes" in last:
        parts.append(f"{last['nodes']:,} ground nodes")
    return (f"textbook addition N={n} ({which}): " + ", ".join(parts) +
            (f"; {status}" if status else "") + f"; wall {wall:.1f} s, {peak_txt}")


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
    ap.add_argument("--grounders", default="",
                    help="extra rows grounded by these grounders of nesybench "
                         "(comma-separated: prolog, problog); the default row is auto")
    ap.add_argument("--large", default="",
                    help="digits N (comma-separated) of textbook addition to run once each in "
                         "a child process, e.g. 3,4")
    ap.add_argument("--reachability", type=int, default=30,
                    help="nodes of the reachability program's graph (0: leave it out)")
    ap.add_argument("--large-api", action="store_true",
                    help="also run the --large programs through the public "
                         "CompiledProgram.from_program (unbounded budget)")
    ap.add_argument("--large-timeout", type=float, default=600.0)
    ap.add_argument("--large-memory", type=float, default=8192.0)
    ap.add_argument("--problog-large", action="store_true",
                    help="also run ProbLog's pipeline on the --large programs")
    args = ap.parse_args(argv)
    strategies = args.strategies.split(",")
    if any(st not in ("auto", "minimise") for st in strategies):
        ap.error("--strategies takes auto and/or minimise")

    grounders = ["auto", *[g for g in args.grounders.split(",") if g]]
    if any(g not in ("auto", "prolog", "problog") for g in grounders):
        ap.error("--grounders takes prolog and/or problog")
    cases = []
    for n in range(1, args.max_digits + 1):
        cases.append((f"textbook addition N={n}", ADDITION, addition_query(n)))
    if args.reachability:
        cases.append((f"reachability path(n0, X), {args.reachability} nodes",
                      reachability(args.reachability), "path(n0, X)"))
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
          f"ratio (ground)  {'problog command':>26s}  SDD size, strategy")
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
        for strategy, grounder in [(st, g) for g in grounders for st in strategies]:
            g, c, pg, pc, cmd, sdd = [], [], [], [], [], ""
            for _ in range(args.rounds):           # interleaved rounds
                tg, tc, sdd = time_ours(text, query, strategy, grounder)
                g.append(tg)
                c.append(tc)
                rg, rc = time_problog(ptext)
                pg.append(rg)
                pc.append(rc)
                if not args.no_command:
                    cmd.append(time_problog_command(ptext))
            ours = statistics.median([a + b for a, b in zip(g, c)])
            ref = statistics.median([a + b for a, b in zip(pg, pc)])
            label = name
            if len(strategies) > 1:
                label += f" ({strategy})"
            if grounder != "auto":
                label += f" [{grounder}]"
            print(f"{label:34s} {fmt(g)} {fmt(c)} {fmt(pg)} {fmt(pc)}  {ref / ours:8.2f}x"
                  f"{'':14s} {statistics.median(pg) / statistics.median(g):8.2f}x  "
                  f"{fmt(cmd) if cmd else '-':>26s}  {sdd}")
    for n in [int(x) for x in args.large.split(",") if x]:
        print(run_large(n, "ours", args.large_timeout, args.large_memory), flush=True)
        if args.large_api:
            print(run_large(n, "api", args.large_timeout, args.large_memory), flush=True)
        if args.problog_large:
            print(run_large(n, "problog", args.large_timeout, args.large_memory), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
