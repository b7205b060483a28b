"""Pick a label semantics by name: the one place that knows both engines.

``worlds`` enumerates the task's worlds (:class:`~nesybench.nesy.inference.semantics.WorldEnumeration`);
``circuit`` compiles the task's ProbLog program
(:class:`~nesybench.nesy.inference.circuit.CompiledProgram`); an approximate ``inference`` grounds the
same program and samples it (``sample:S``, :class:`~nesybench.nesy.inference.approx.SampledProgram`) or
keeps its K most probable proofs (``topk:K``, :class:`~nesybench.nesy.inference.topk.TopKProgram`)
instead of compiling. All implement
:class:`~nesybench.nesy.inference.semantics.LabelSemantics`; keeping the choice here lets the engines
import only downwards (program → compile → circuit, semantics → circuit's base class).
"""
from __future__ import annotations

from ...errors import NesyError
from ..inference.approx import SampledProgram, parse_inference
from ..program.budget import Budget
from ..inference.circuit import CompiledProgram
from ..inference.semantics import LabelSemantics, WorldEnumeration
from ..inference.topk import TopKProgram

SEMANTICS = ("worlds", "circuit")


def build_semantics(kind: str, task, *, budget=None, inference: str = "exact",
                    seed: int | None = None, **kw) -> LabelSemantics:
    """The label semantics ``kind`` of ``task``; ``budget`` (a
    :class:`~nesybench.nesy.program.budget.Budget` or its fields as a dict) bounds the circuit's
    grounding and compilation; ``inference``: ``exact``, ``sample:S`` (Monte Carlo over the
    task's ProbLog program, whatever ``kind``: sampling needs the program, not the world
    table) or ``topk:K`` (the K most probable proofs of the same program); ``seed``: the
    sampler's seed (default: torch's global generator); ``kw`` go to
    :class:`WorldEnumeration`."""
    method, n = parse_inference(inference)
    if kind not in SEMANTICS:
        raise NesyError(f"unknown semantics {kind!r} ({', '.join(SEMANTICS)})", field="semantics")
    if isinstance(budget, dict):
        budget = Budget(**budget)
    if method == "sample":
        return SampledProgram.from_task(task, samples=n, seed=seed, budget=budget)
    if method == "topk":
        return TopKProgram.from_task(task, k=n, budget=budget)
    if kind == "worlds":
        return WorldEnumeration(task, **kw)
    if kind == "circuit":
        return CompiledProgram.from_task(task, budget=budget)
    raise NesyError(f"unknown semantics {kind!r} ({', '.join(SEMANTICS)})", field="semantics")
