"""Run the inference of a program from outside in a child process the operating system bounds.

A program someone hands us can ask for more than any check inside the work can stop: one SDD
``apply`` inside the C library runs until it returns (minutes, gigabytes), and when the C
library cannot allocate it prints ``calloc failed`` and ends the process. So ``nesy infer``
grounds and compiles (or samples, ``--inference sample:S``, or searches proofs,
``topk:K``) in a child process:

* the child starts, imports what it needs, starts SWI-Prolog, reads its own address-space
  size and then sets ``RLIMIT_AS`` to that size plus ``--max-memory``: every allocation past
  the budget fails in the allocator, whoever asks (Python, SWI-Prolog, the SDD library), and
  the child's resident growth cannot pass the budget;
* the parent waits at most ``--timeout`` (plus a second of start-up) and then kills the
  child: the time limit holds even inside one SDD operation;
* the answers come back as JSON on the child's standard output (data, never text to parse
  as a program); the child's own one-line error (file, line, column, field) comes back the
  same way and is raised again in the parent; a child that ends any other way (a C
  allocation failure, a signal) becomes one line naming the limit it reached.

``python -m nesybench.nesy.inference.isolate`` is the child: it reads one JSON request on standard
input and writes one JSON reply.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from ...errors import BudgetExceeded, NesyError

#: seconds the child may take to start (imports, SWI-Prolog) beyond the --timeout of the work
START_GRACE = 2.0
#: address space the child may add for its own start-up bookkeeping and thread stacks (MiB)
AS_SLACK_MB = 96


def marginals_bounded(path, queries, budget) -> "Marginals":
    """:func:`nesybench.nesy.inference.marginals.marginals` of the program file ``path`` in a child
    process under ``budget``'s ``max_memory_mb`` (``RLIMIT_AS``) and ``timeout`` (the parent
    kills the child past it). Raises what the child raised (:class:`NesyError`), or
    :class:`BudgetExceeded` when the child was stopped by a limit."""
    from .marginals import Answer, Marginals
    reply = _run_child(path, queries, budget, {"method": "exact"})
    return Marginals(answers=[Answer(a["query"], a["atom"], _value(a["value"]), a["p"])
                              for a in reply["answers"]],
                     evidence=reply["evidence"], stats=reply["stats"])


def approximate_bounded(path, queries, budget, *, inference: str, seed: int | None) -> dict:
    """:func:`nesybench.nesy.inference.approx.approximate_answers` (``sample:S`` or
    ``topk:K``) of the program file ``path`` in the same bounded child process as
    :func:`marginals_bounded`: ``{"rows", "evidence", "stats"}``."""
    reply = _run_child(path, queries, budget, {"method": "approximate",
                                               "inference": inference, "seed": seed})
    for r in reply["rows"]:
        r["value"] = _value(r["value"])
    return reply


def _run_child(path, queries, budget, what: dict) -> dict:
    """Run the child on ``path`` with ``what`` (the method and its options) and return its
    reply, or raise its error (or the limit that ended it) as one line."""
    from ..program.budget import Budget
    budget = budget or Budget()
    request = {"path": os.fspath(path), "queries": list(queries or []),
               "budget": budget.to_json(), **what}
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    limit = None if budget.timeout is None else budget.timeout + START_GRACE
    try:
        proc = subprocess.run([sys.executable, "-m", "nesybench.nesy.inference.isolate"],
                              input=json.dumps(request), capture_output=True, text=True,
                              timeout=limit, env=env)
    except subprocess.TimeoutExpired:
        raise BudgetExceeded(f"inference stopped at the --timeout of {budget.timeout:g} s "
                             "(the process grounding and compiling was ended)",
                             file=str(path)) from None
    sys.set_int_max_str_digits(0)   # the child's answers may hold large integers
    reply = _reply(proc.stdout)
    if reply is not None and "error" in reply:
        e = reply["error"]
        cls = BudgetExceeded if e.pop("budget", False) else NesyError
        raise cls(**e)
    if reply is not None:
        return reply
    raise _ended(proc, budget, path)


def _value(v):
    return tuple(v) if isinstance(v, list) else v


def _reply(stdout: str):
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return None
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        return None


def _ended(proc, budget, path) -> NesyError:
    """The one line for a child that ended without a reply."""
    err = proc.stderr.strip().splitlines()
    last = err[-1].strip() if err else ""
    memory = any(k in proc.stderr for k in ("calloc failed", "malloc failed", "MemoryError",
                                            "out of memory", "Cannot allocate",
                                            "std::bad_alloc", "Could not allocate"))
    if memory or proc.returncode in (-6, 134):
        lim = budget.max_memory_mb
        return BudgetExceeded(f"inference stopped at --max-memory {lim:g} MiB: the process "
                              "grounding and compiling could not allocate more"
                              + (f" ({last})" if last else ""), file=str(path))
    how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
    return NesyError(f"inference ended without an answer ({how})" + (f": {last}" if last
                                                                        else ""),
                     file=str(path))


def _plain(obj):
    """JSON for the NumPy scalars and tuples a reply's statistics may hold."""
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"not JSON: {type(obj).__name__}")


def _vm_size_bytes() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _child() -> int:
    """The child's side: read the request, bound the address space, answer in JSON."""
    import resource

    sys.set_int_max_str_digits(0)   # answers may be large integers (within arith's bound)
    request = json.loads(sys.stdin.read())
    from ..program.budget import Budget
    from .marginals import marginals
    from ...logic import prolog
    import pysdd.sdd  # noqa: F401 - loaded before the limit: its import is not the program's

    b = request["budget"]
    budget = Budget(**b)
    approximate = request.get("method") == "approximate"
    if approximate:
        from .approx import approximate_answers   # PyTorch imported before the limit
    prolog.use("prolog/problog_ground.pl")       # SWI-Prolog started before the limit
    if budget.max_memory_mb is not None:
        size = _vm_size_bytes()
        if size is not None:
            cap = size + int((budget.max_memory_mb + AS_SLACK_MB) * 2**20)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    try:
        if approximate:
            out = approximate_answers(request["path"], request["queries"] or None,
                                      inference=request["inference"], budget=budget,
                                      seed=request.get("seed"))
        else:
            res = marginals(request["path"], request["queries"] or None, budget=budget)
            out = {"answers": [a.to_json() for a in res.answers], "evidence": res.evidence,
                   "stats": res.stats}
    except NesyError as exc:
        out = {"error": {"message": exc.message, "file": exc.file, "task": exc.task,
                         "field": exc.field, "line": exc.line, "column": exc.column,
                         "budget": isinstance(exc, BudgetExceeded)}}
    except MemoryError:
        out = {"error": {"message": f"inference stopped at --max-memory "
                                    f"{budget.max_memory_mb:g} MiB (an allocation failed)",
                         "file": request["path"], "budget": True}}
    sys.stdout.write(json.dumps(out, default=_plain) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_child())
