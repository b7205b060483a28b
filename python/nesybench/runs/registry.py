"""Short names of the run functions that capabilities offer to sweeps.

A spec's ``function`` names a *registered* run function: one of the built-in names below,
or a name an installed package registers under the entry-point group ``nesybench.cells``::

    [project.entry-points."nesybench.cells"]
    mylab.train = "mylab.sweeps:train_cell"

A spec never names code itself: ``module:function`` is accepted only when it is the target
of a registered name (what older studies stored), so a spec or a study folder from someone
else cannot import a module or call an arbitrary callable. A run function may declare the
parameters it accepts as ``fn.params_schema = {"n": int, ...}`` (types: int, float, str,
bool, list, dict; a tuple of types for alternatives): the runner then rejects unknown
parameter names and values of the wrong type before anything runs.
"""
from __future__ import annotations

import importlib

from ..errors import NesyError

#: the entry-point group of run functions that installed packages add
ENTRY_POINT_GROUP = "nesybench.cells"

#: short name -> "module:function"
CELLS: dict[str, str] = {
    "demo.toy": "nesybench.runs.demo:toy_cell",
    "demo.sleep": "nesybench.runs.demo:sleep_cell",
    "demo.fault": "nesybench.runs.demo:fault_cell",
    "rs.count": "nesybench.runs.demo:rs_count_cell",
    "nesy.train": "nesybench.nesy.learn.cells:nesy_train_cell",
    "kandy.train": "nesybench.kandy.learn.cells:train_cell",
    "kandy.aleph": "nesybench.kandy.learn.cells:aleph_cell",
    "irt.population": "nesybench.irt.cells:population_cell",
    "irt.robustness": "nesybench.irt.cells:robustness_cell",
    "ski.cell": "nesybench.ski.cells:ski_cell",
    "rudas.learn": "nesybench.rudas.experiment:learn_cell",
}


def _entry_points() -> list:
    from importlib.metadata import entry_points  # noqa: PLC0415
    try:
        return list(entry_points(group=ENTRY_POINT_GROUP))
    except Exception:  # noqa: BLE001 - broken package metadata: no plug-in cells
        return []


def registered() -> dict[str, str]:
    """Every name a spec may give as ``function``: the built-ins and the installed entry
    points of ``nesybench.cells`` (name -> ``module:function``; a built-in name wins)."""
    out = dict(CELLS)
    for ep in _entry_points():
        out.setdefault(ep.name, ep.value)
    return out


def resolve_name(name: str) -> str:
    """The ``module:function`` path of a registered name. A path is accepted only when it
    is the target of a registered name; anything else is one :class:`NesyError`, and
    nothing is imported."""
    if not isinstance(name, str) or not name.strip():
        raise NesyError("must name a registered run function", field="function")
    if name in CELLS:
        return CELLS[name]
    if name in CELLS.values():
        return name
    known = registered()
    if name in known:
        return known[name]
    if name in known.values():
        return name
    shown = ", ".join(sorted(known))
    if ":" in name:
        raise NesyError(f"run function {name!r} is not registered: a spec names a registered "
                        f"run function ({shown}), or one an installed package registers under "
                        f"the entry-point group {ENTRY_POINT_GROUP}; it never imports a module "
                        "itself", field="function")
    raise NesyError(f"unknown run function {name!r}: not a registered name ({shown}); "
                    f"packages register more under the entry-point group {ENTRY_POINT_GROUP}",
                    field="function")


def resolve(name: str):
    """Import and return the registered run function ``name`` (a registered name, or the
    ``module:function`` target of one)."""
    path = resolve_name(name)
    module, _, attr = path.partition(":")
    try:
        mod = importlib.import_module(module.strip())
    except ImportError as exc:
        raise NesyError(f"run function {name!r}: cannot import {module} ({exc})",
                        field="function") from None
    fn = mod
    for part in attr.strip().split("."):
        fn = getattr(fn, part, None) if part else None
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
