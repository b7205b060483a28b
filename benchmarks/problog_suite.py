"""ProbLog's own system-test programs through ``nesybench nesy infer``, under every grounder.

    .venv/bin/python benchmarks/problog_suite.py --reference PATH [--grounders auto,prolog,problog]
                                                 [--jobs 2] [--timeout 60] [--write-docs]

``PATH`` is a ProbLog source checkout that the user supplies (nothing of it is copied here).
Each ``PATH/test/*.pl`` program states its expected outcome in a comment block::

    %Expected outcome:
    % q(1) 0.3
    % q(2) 0.6

or ``% ERROR Name`` (ProbLog raises that exception), or ``query(q). % outcome: 0.3`` on the query
line. Stock ProbLog runs every program first (``problog`` of this environment, the SDD pipeline,
in a child process), which tells the programs ProbLog itself passes; those are the suite.

Each program then runs as ``nesybench nesy infer FILE --json -q --grounder G`` in a child
process (``--timeout`` seconds, killed past twice that) and lands in one of:

* **same**: exit 0 and ProbLog's answers (the same ground atoms, probabilities within 1e-6),
  or exit 2 where ProbLog's expected outcome is an error;
* **refused**: exit 2 with one line, where ProbLog answers (the line is the reason);
* **wrong**: exit 0 and other answers, or exit 0 where ProbLog raises an error;
* **traceback**: any other exit (a Python traceback, a signal, a hang).

The table is printed per grounder, then each program that is not *same*, with its line.
``--write-docs`` puts the table and the refusals between the markers of
``docs/limitations.md``. The exit code is 1 when any program is *wrong* or a *traceback*.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NESYBENCH = [sys.executable, "-m", "nesybench"]
MARK_BEGIN = "<!-- problog-suite:begin -->"
MARK_END = "<!-- problog-suite:end -->"

#: ProbLog's pipeline as its own system test runs it (the default parser with the extended
#: factory, the SDD evaluatable); prints ``{atom: p}`` or ``{"error": ExceptionName}`` as JSON
_REFERENCE = r"""
import json, sys
from problog import get_evaluatable
from problog.program import PrologFile, DefaultPrologParser, ExtendedPrologFactory
try:
    parser = DefaultPrologParser(ExtendedPrologFactory())
    kc = get_evaluatable(name="sdd").create_from(PrologFile(sys.argv[1], parser=parser))
    out = {str(k): float(v) for k, v in kc.evaluate().items()}
except Exception as exc:
    out = {"error": type(exc).__name__}
print(json.dumps(out))
"""


def expected_outcome(path: Path) -> dict | str | None:
    """The expected outcome stated in ``path``: ``{atom: probability}``, the name of the error
    ProbLog raises, or ``None`` when the program states none."""
    results: dict[str, float] = {}
    reading, stated = False, False
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if line.startswith("%Expected outcome:"):
            reading = stated = True
            continue
        if reading:
            if line.lower().startswith("% error"):
                return line[len("% error"):].strip()
            if line.startswith("% "):
                parts = line[2:].rsplit(None, 1)
                if len(parts) == 2:
                    try:
                        results[parts[0].strip()] = float(parts[1])
                        continue
                    except ValueError:
                        pass
            reading = False
        if line.startswith("query(") and "% outcome:" in line:
            stated = True
            pos = line.find("% outcome:")
            query = line[6:pos].strip().rstrip(".").rstrip()[:-1]
            results[query.strip()] = float(line[pos + 10:].strip())
    return results if stated else None


def _canon(atom: str) -> str:
    """An atom's text with the spaces ProbLog's printer puts after commas removed and its
    variables renamed in order of appearance (``f([X4,X5])`` and ``f([X1,X2])`` are one answer:
    the numbers are the engine's own)."""
    names: dict[str, str] = {}
    text = re.sub(r"\s+", "", atom)
    return re.sub(r"(?<![\w'])(_\w*|[A-Z]\w*)",
                  lambda m: names.setdefault(m.group(0), f"V{len(names)}"), text)


def run_reference(path: Path, timeout: float) -> dict:
    try:
        p = subprocess.run([sys.executable, "-c", _REFERENCE, str(path)], capture_output=True,
                           text=True, timeout=timeout)
        return json.loads(p.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    except (json.JSONDecodeError, IndexError):
        return {"error": "crash"}


def passes(expected, answers: dict) -> bool:
    """Whether ``answers`` (``{atom: p}`` or ``{"error": name}``) is the expected outcome."""
    if isinstance(expected, str):
        return answers.get("error") == expected
    if "error" in answers and len(answers) == 1:
        return False
    got = {_canon(k): v for k, v in answers.items()}
    want = {_canon(k): v for k, v in expected.items()}
    return set(got) == set(want) and all(abs(got[k] - want[k]) <= 1e-6 for k in want)


def run_ours(path: Path, grounder: str, timeout: float) -> tuple[str, str, dict]:
    """``(outcome, line, answers)`` of ``nesy infer`` on ``path``: outcome ``ok`` (exit 0),
    ``refused`` (exit 2, one line) or ``traceback`` (anything else)."""
    cmd = [*NESYBENCH, "nesy", "infer", str(path), "--json", "-q", "--grounder", grounder,
           "--timeout", str(timeout)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=2 * timeout + 30,
                           env=env)
    except subprocess.TimeoutExpired:
        return "traceback", f"no answer within {2 * timeout + 30:g} s", {}
    if p.returncode == 0:
        try:
            res = json.loads(p.stdout)
        except json.JSONDecodeError:
            return "traceback", "exit 0 without JSON", {}
        return "ok", "", {r["atom"]: r["p"] for r in res["results"]}
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    if p.returncode == 2 and len(lines) == 1:
        return "refused", lines[0], {}
    return "traceback", (lines[-1] if lines else f"exit {p.returncode}"), {}


def classify(expected, outcome: str, answers: dict) -> str:
    if outcome == "traceback":
        return "traceback"
    if outcome == "refused":
        return "same" if isinstance(expected, str) else "refused"
    if isinstance(expected, str):
        return "wrong"
    return "same" if passes(expected, answers) else "wrong"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", required=True, type=Path,
                    help="a ProbLog source checkout (its test/*.pl programs are read)")
    ap.add_argument("--grounders", default="auto,prolog,problog")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("-k", dest="only", default=None, help="only programs whose name contains this")
    ap.add_argument("--write-docs", action="store_true")
    args = ap.parse_args(argv)

    files = sorted((args.reference / "test").glob("*.pl"))
    if args.only:
        files = [f for f in files if args.only in f.name]
    if not files:
        print(f"no test/*.pl programs under {args.reference}", file=sys.stderr)
        return 2
    stated = {f: expected_outcome(f) for f in files}
    files = [f for f in files if stated[f] is not None]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        ref = dict(zip(files, pool.map(lambda f: run_reference(f, args.timeout), files)))
    suite = [f for f in files if passes(stated[f], ref[f])]
    print(f"ProbLog passes {len(suite)} of {len(files)} programs that state an outcome "
          f"({time.perf_counter() - t0:.0f} s)")

    grounders = [g.strip() for g in args.grounders.split(",") if g.strip()]
    rows, details = {}, {}
    for g in grounders:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.jobs) as pool:
            outs = list(pool.map(lambda f: run_ours(f, g, args.timeout), suite))
        counts = {"same": 0, "refused": 0, "wrong": 0, "traceback": 0}
        for f, (outcome, line, answers) in zip(suite, outs):
            c = classify(stated[f], outcome, answers)
            counts[c] += 1
            if c != "same":
                details.setdefault(g, []).append((f.name, c, line or json.dumps(answers)))
        rows[g] = counts
        print(f"{g}: {counts} ({time.perf_counter() - t0:.0f} s)")

    table = ["| grounder | same answer | refused in one line | wrong answer, exit 0 | traceback |",
             "|---|---:|---:|---:|---:|"]
    for g, c in rows.items():
        table.append(f"| `{g}` | {c['same']} | {c['refused']} | {c['wrong']} | "
                     f"{c['traceback']} |")
    print()
    print("\n".join(table))
    for g, items in details.items():
        print(f"\n{g}:")
        for name, c, line in items:
            print(f"  {c:9s} {name}: {line}")
    if args.write_docs:
        shown = [(n, c, line.replace(str(args.reference.resolve()), "PATH")
                  .replace(str(args.reference), "PATH")) for n, c, line in details.get("auto", [])]
        _write_docs(len(suite), len(files), table, shown)
    bad = any(c["wrong"] or c["traceback"] for c in rows.values())
    return 1 if bad else 0


def _write_docs(n_suite: int, n_files: int, table: list[str], auto_details: list) -> None:
    doc = ROOT / "docs" / "limitations.md"
    text = doc.read_text(encoding="utf-8")
    body = [MARK_BEGIN, "",
            f"ProbLog's system-test programs (`test/*.pl` of its source repository; stock ProbLog "
            f"answers {n_suite} of the {n_files} that state an outcome), through `nesybench nesy "
            "infer --json`, as `benchmarks/problog_suite.py --reference PATH` printed:", "",
            *table, ""]
    if auto_details:
        body += ["Not answered under `auto`, with the line nesybench prints:", ""]
        body += [f"- `{name}` ({c}): {line}" for name, c, line in auto_details]
        body.append("")
    body.append(MARK_END)
    if MARK_BEGIN in text:
        pre, rest = text.split(MARK_BEGIN, 1)
        post = rest.split(MARK_END, 1)[1]
        text = pre + "\n".join(body) + post
    else:                       # at the end of the engine's section
        anchor = "\n## SKI robustness"
        text = text.replace(anchor, "\n" + "\n".join(body) + "\n" + anchor, 1)
    doc.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
