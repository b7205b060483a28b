"""Budgets for grounding and compiling a program: size limits and a wall-clock limit.

A ProbLog program can ask for unbounded work (``nat(s(N)) :- nat(N).``, a textbook
multi-digit addition that enumerates every number): without a limit the process runs until
the machine runs out of memory. A :class:`Budget` bounds

* the **ground program** (nodes of ProbLog's ground formula: atoms, conjunctions, disjunctions),
* the **engine stack** of ProbLog's grounder (deep or infinite recursion grows it without
  producing nodes),
* the **circuit** (live SDD size while compiling), and
* the **time** of grounding plus compilation,

and :class:`Clock` checks the sizes where they grow (every ground node, every stack growth,
every SDD operation). Time and memory are watched by a thread beside the work
(:meth:`Clock.watch`), because ProbLog's engine can loop in its answer tables without passing any
of those points; it interrupts the working thread between two Python steps. A hit raises
:class:`~nesybench.errors.BudgetExceeded` naming the limit, its option and the size reached.
One SDD operation (a single ``apply`` inside the C library) cannot be interrupted: the limit is
seen when it returns.
"""
from __future__ import annotations

import ctypes
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

from ...errors import BudgetExceeded

#: defaults: ~1 GB of ProbLog's ground formula, ~1.5 GB of SDD nodes, ten minutes
DEFAULT_MAX_GROUND = 1_000_000
DEFAULT_MAX_STACK = 2_000_000
DEFAULT_MAX_CIRCUIT = 10_000_000
DEFAULT_TIMEOUT = 600.0
DEFAULT_MAX_MEMORY_MB = 4096
#: the grounders (see :func:`nesybench.nesy.program.program.ground`)
GROUNDERS = ("auto", "prolog", "problog")


@dataclass(frozen=True)
class Budget:
    """Limits for one ground-and-compile (``None``: unlimited).

    max_ground_nodes   nodes of the ground program (``--max-grounding-atoms``)
    max_stack          frames of ProbLog's grounding stack (recursion depth proxy)
    max_circuit_nodes  live SDD size during compilation (``--max-circuit-nodes``)
    timeout            seconds for grounding and compilation together (``--timeout``)
    max_memory_mb      growth of the process's resident memory during the work, in MiB
                       (``--max-memory``; ProbLog's answer tables can grow without adding
                       nodes or stack, e.g. ``nat(X)`` over ``nat(s(N)) :- nat(N)``)
    grounder           not a limit, but it travels with the limits to every ground-and-compile
                       (``--grounder``): ``auto`` (SWI-Prolog, ProbLog's engine for what it
                       does not handle), ``prolog`` or ``problog``
    """

    max_ground_nodes: int | None = DEFAULT_MAX_GROUND
    max_stack: int | None = DEFAULT_MAX_STACK
    max_circuit_nodes: int | None = DEFAULT_MAX_CIRCUIT
    timeout: float | None = DEFAULT_TIMEOUT
    max_memory_mb: float | None = DEFAULT_MAX_MEMORY_MB
    grounder: str = "auto"

    def __post_init__(self) -> None:
        if self.grounder not in GROUNDERS:
            raise BudgetExceeded(f"unknown grounder {self.grounder!r} (choose from "
                                 f"{', '.join(GROUNDERS)})", field="grounder")
        for name in ("max_ground_nodes", "max_stack", "max_circuit_nodes", "timeout",
                     "max_memory_mb"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise BudgetExceeded(f"budget {name} must be positive, not {v}", field=name)

    def to_json(self) -> dict:
        return {"max_ground_nodes": self.max_ground_nodes, "max_stack": self.max_stack,
                "max_circuit_nodes": self.max_circuit_nodes, "timeout": self.timeout,
                "max_memory_mb": self.max_memory_mb, "grounder": self.grounder}

    def start(self) -> "Clock":
        return Clock(self)


UNLIMITED = Budget(None, None, None, None, None)

#: CPython's way to raise an exception in another thread (looked up once, at import)
_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc


def resident_mb() -> float:
    """Resident memory of this process in MiB (Linux ``/proc``; 0 where unavailable)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    import os
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class Clock:
    """A running budget: call the ``check_*`` methods from the work loops."""

    def __init__(self, budget: Budget):
        self.budget = budget
        self.t0 = time.perf_counter()
        self.deadline = None if budget.timeout is None else self.t0 + budget.timeout
        self.rss0 = resident_mb() if budget.max_memory_mb is not None else 0.0

    def breach(self, stage: str) -> str | None:
        """The message of a time or memory limit that is exceeded now, else ``None``."""
        try:
            self.check_time(stage)
        except BudgetExceeded as exc:
            return exc.message
        return None

    @contextmanager
    def watch(self, stage: str):
        """Run the body under the time and memory limits, interrupting it from a watcher
        thread when one is exceeded (raises :class:`BudgetExceeded`)."""
        if self.deadline is None and self.budget.max_memory_mb is None:
            yield
            return
        tid = threading.get_ident()
        stop = threading.Event()
        lock = threading.Lock()
        state = {"active": True, "reason": None}

        def watcher() -> None:
            # inject again until the work has stopped: a broad ``except`` inside the work
            # could swallow one interruption (it is a BaseException, so ``except Exception``
            # cannot, but a bare ``except:`` could)
            while not stop.wait(0.05):
                reason = state["reason"] or self.breach(stage)
                if reason is None:
                    continue
                with lock:
                    if not state["active"]:
                        return
                    state["reason"] = reason
                    _set_async_exc(ctypes.c_ulong(tid), ctypes.py_object(_Interrupted))

        th = threading.Thread(target=watcher, name="nesybench-budget", daemon=True)
        th.start()
        try:
            try:
                yield
            finally:
                with lock:
                    state["active"] = False
                    _set_async_exc(ctypes.c_ulong(tid), None)
                stop.set()
        except _Interrupted:          # from the work, or landing in the cleanup just above
            raise BudgetExceeded(state["reason"] or f"{stage} stopped by its budget") from None

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def check_time(self, stage: str, size_note: str = "") -> None:
        """The time limit and the memory limit (both are cheap enough for a periodic call)."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise BudgetExceeded(f"{stage} stopped at the --timeout of {self.budget.timeout:g} s"
                                 + (f" ({size_note})" if size_note else ""))
        lim = self.budget.max_memory_mb
        if lim is not None:
            grown = resident_mb() - self.rss0
            if grown > lim:
                raise BudgetExceeded(f"{stage} stopped at --max-memory {lim:g} MiB: the process "
                                     f"grew by {grown:,.0f} MiB in {self.elapsed():.1f} s"
                                     + (f" ({size_note})" if size_note else ""))

    def check_ground(self, nodes: int) -> None:
        lim = self.budget.max_ground_nodes
        if lim is not None and nodes > lim:
            raise BudgetExceeded(f"grounding stopped at --max-grounding-atoms {lim:,}: the ground "
                                 f"program reached {nodes:,} nodes after {self.elapsed():.1f} s; "
                                 "raise it (textbook addition with 3 digits per number needs "
                                 "about 1,004,300) or use --inference sample:S")

    def check_stack(self, frames: int) -> None:
        lim = self.budget.max_stack
        if lim is not None and frames > lim:
            raise BudgetExceeded(f"grounding stopped: the engine stack reached {frames:,} frames "
                                 f"(limit {lim:,}) after {self.elapsed():.1f} s; is a recursion "
                                 "unbounded (e.g. nat(s(N)) :- nat(N))?")

    def check_circuit(self, live: int) -> None:
        lim = self.budget.max_circuit_nodes
        if lim is not None and live > lim:
            raise BudgetExceeded(f"compilation stopped at --max-circuit-nodes {lim:,}: the SDD "
                                 f"reached {live:,} live nodes after {self.elapsed():.1f} s")


class _Interrupted(BaseException):
    """Raised inside the working thread by :meth:`Clock.watch`. A ``BaseException``, so that
    ``except Exception`` in the engine's own code does not swallow it; :meth:`Clock.watch`
    turns it into :class:`BudgetExceeded`."""


def budgeted_grounding(clock: Clock):
    """``(engine, target)``: ProbLog's engine with only the allow-listed builtins
    (:func:`~nesybench.nesy.program.sandbox.safe_engine`) and a ground formula, both checking
    ``clock``."""
    from problog.engine_stack import StackBasedEngine
    from problog.errors import GroundingError
    from problog.formula import LogicFormula

    class Formula(LogicFormula):
        def add_name(self, name, key, label=None, keep_name=False):
            # a query proved by one fact alone would rename that fact's atom after the query
            # (nesybench's internal label atom): keep the fact's own name
            keep_name = keep_name or getattr(name, "functor", None) == "nesy__label"
            return super().add_name(name, key, label=label, keep_name=keep_name)

        def _add(self, node, key=None, reuse=True):
            out = super()._add(node, key=key, reuse=reuse)
            n = len(self)
            clock.check_ground(n)
            if n & 1023 == 0:
                clock.check_time("grounding", f"{n:,} ground nodes")
            return out

    class Engine(StackBasedEngine):
        # no per-step hook: time and memory are watched by Clock.watch's thread, which
        # interrupts the engine wherever it loops (a hook on every eval cost ~10 % of grounding)
        def eval_builtin(self, **kwdargs):
            # a builtin's error (arithmetic, type, instantiation) has no position of its own:
            # give it the calling goal's, so the one-line error names file:line:column
            try:
                return super().eval_builtin(**kwdargs)
            except GroundingError as exc:
                origin = kwdargs.get("call_origin")
                if getattr(exc, "location", None) is None and origin is not None:
                    exc.location = origin[1]      # (file index, character offset)
                raise

        def grow_stack(self):
            clock.check_stack(self.stack_size * 2)
            super().grow_stack()

    from .sandbox import safe_engine
    return safe_engine(Engine), Formula()
