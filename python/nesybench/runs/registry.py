"""Short names of the run functions that capabilities offer to sweeps.

A spec's ``function`` is either one of these names or ``package.module:function``. A run
function may declare the parameters it accepts as ``fn.params_schema = {"n": int, ...}``
(types: int, float, str, bool, list, dict; a tuple of types for alternatives): the runner
then rejects unknown parameter names and values of the wrong type before anything runs.
"""
from __future__ import annotations

import importlib

from ..errors import NesyError

#: short name -> "module:function"
CELLS: dict[str, str] = {
    "demo.toy": "nesybench.runs.demo:toy_cell",
    "demo.sleep": "nesybench.runs.demo:sleep_cell",
    "demo.fault": "nesybench.runs.demo:fault_cell",
    "rs.count": "nesybench.runs.demo:rs_count_cell",
    "nesy.train": "nesybench.nesy.cells:nesy_train_cell",
    "kandy.train": "nesybench.kandy.learn.cells:train_cell",
    "kandy.aleph": "nesybench.kandy.learn.cells:aleph_cell",
    "irt.population": "nesybench.irt.cells:population_cell",
    "irt.robustness": "nesybench.irt.cells:robustness_cell",
    "ski.cell": "nesybench.ski.cells:ski_cell",
    "rudas.learn": "nesybench.rudas.experiment:learn_cell",
}


def resolve_name(name: str) -> str:
    """The ``module:function`` path of a registered name (or the path itself)."""
    path = CELLS.get(name, name)
    if ":" not in path:
        raise NesyError(f"unknown run function {name!r}: not a registered name "
                        f"({', '.join(sorted(CELLS))}) nor module:function", field="function")
    return path


def resolve(name: str):
    """Import and return the run function named by ``name``."""
    path = resolve_name(name)
    module, _, attr = path.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise NesyError(f"run function {name!r}: cannot import {module} ({exc})",
                        field="function") from None
    fn = getattr(mod, attr, None)
    if not callable(fn):
        raise NesyError(f"run function {name!r}: {module} has no function {attr!r}",
                        field="function")
    return fn


def check_params(fn, params: dict, *, source=None, cell=None) -> None:
    """Check a cell's parameters against ``fn.params_schema`` when the function has one."""
    schema = getattr(fn, "params_schema", None)
    if schema is None:
        return
    required = getattr(fn, "params_required", ())
    for name in required:
        if name not in params:
            raise NesyError(f"the run function needs parameter {name!r}", file=source,
                            field="params")
    for name, value in params.items():
        if name not in schema:
            raise NesyError(f"unknown parameter {name!r} (accepted: {', '.join(sorted(schema))})",
                            file=source, field=name, task=cell)
        want = schema[name]
        want = want if isinstance(want, tuple) else (want,)
        ok = any(_is_type(value, t) for t in want)
        if not ok:
            names = " or ".join(getattr(t, "__name__", str(t)) for t in want)
            raise NesyError(f"expected {names}, got {value!r}", file=source, field=name,
                            task=cell)


def _is_type(value, t) -> bool:
    if t is type(None):
        return value is None
    if t is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, t)
