"""Pick a label semantics by name: the one place that knows both engines.

``worlds`` enumerates the task's worlds (:class:`~nesybench.nesy.semantics.WorldEnumeration`);
``circuit`` compiles the task's ProbLog program
(:class:`~nesybench.nesy.circuit.CompiledProgram`). Both implement
:class:`~nesybench.nesy.semantics.LabelSemantics`; keeping the choice here lets the engines
import only downwards (program → compile → circuit, semantics → circuit's base class).
"""
from __future__ import annotations

from ..errors import NesyError
from .budget import Budget
from .circuit import CompiledProgram
from .semantics import LabelSemantics, WorldEnumeration

SEMANTICS = ("worlds", "circuit")


def build_semantics(kind: str, task, *, budget=None, **kw) -> LabelSemantics:
    """The label semantics ``kind`` of ``task``; ``budget`` (a
    :class:`~nesybench.nesy.budget.Budget` or its fields as a dict) bounds the circuit's
    grounding and compilation; ``kw`` go to :class:`WorldEnumeration`."""
    if kind == "worlds":
        return WorldEnumeration(task, **kw)
    if kind == "circuit":
        if isinstance(budget, dict):
            budget = Budget(**budget)
        return CompiledProgram.from_task(task, budget=budget)
    raise NesyError(f"unknown semantics {kind!r} ({', '.join(SEMANTICS)})", field="semantics")
